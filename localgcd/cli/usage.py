"""How ``--help`` reads: usage lines, argument names, the top-level epilog.

typer writes a required argument as ``{PROMPT}`` in the usage line and as
``PROMPT <str>`` in the argument list; these classes write ``PROMPT`` (and
``[PROMPT]`` when optional), as git and uv do.  Exit status and environment
are described once, in ``localgcd --help``.
"""

from __future__ import annotations

from typer.core import TyperCommand, TyperGroup

EPILOG = """\
\b
Exit status:
  0    success
  1    generate: cut off before the text was a complete sentence;
       check: the text is not in the language
  2    usage or user error (bad option, unknown model or grammar, unreadable
       file, grammar error, prompt longer than the context)
  3    generate: --max-tokens or the context cut the text off, though it is
       a complete sentence
  130  interrupted (Ctrl-C)

\b
Environment:
  LOCALGCD_CACHE   cache directory (default ~/.cache/localgcd)
  LOCALGCD_VOCABS  fetched vocabularies and Gemma 3 (default <cache>/vocabs)
  LOCALGCD_MODELS  your models.toml (default ~/.config/localgcd/models.toml)

Run 'localgcd COMMAND --help' for a command's options."""

SUBCOMMAND_EPILOG = "Exit status and environment: see 'localgcd --help'."


def _argument_name(param) -> str:  # noqa: ANN001
    return param.metavar or (param.name or "").upper()


class Command(TyperCommand):
    """A command whose usage line and argument list show plain argument names."""

    def collect_usage_pieces(self, ctx) -> list[str]:  # noqa: ANN001
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx, formatter) -> None:  # noqa: ANN001
        args, opts = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((_argument_name(param), param.help or ""))
            else:
                opts.append(record)
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)


class Group(TyperGroup):
    """The top-level command (and ``cache``): ``COMMAND`` rather than ``COMMAND [ARGS]...``."""

    def collect_usage_pieces(self, ctx) -> list[str]:  # noqa: ANN001
        pieces = [self.options_metavar] if self.options_metavar else []
        return pieces + ["COMMAND"]
