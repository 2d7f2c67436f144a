"""``localgcd cache info|clear``: the table store of one :class:`~localgcd.Compiler`, as it counts."""

from __future__ import annotations

from pathlib import Path

import typer

from localgcd.cli import render
from localgcd.cli.console import print_json, user_errors
from localgcd.cli.usage import SUBCOMMAND_EPILOG, Command, Group
from localgcd.errors import LocalgcdError

cache_app = typer.Typer(
    cls=Group,
    help="Inspect or clear the cache of compiled grammar tables.",
    epilog=SUBCOMMAND_EPILOG,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def compiler(eager: bool = False, budget=None):  # noqa: ANN001
    """The one Compiler of this run (the default cache directory); ``eager``: every spanner row
    built before it returns (``localgcd compile --full``); ``budget``: its
    :class:`~localgcd.budget.CompileBudget` (default: the default one)."""
    from localgcd.budget import CompileBudget
    from localgcd.compiler.compiler import Compiler

    return Compiler(eager=eager, budget=budget if budget is not None else CompileBudget())



def _tree_size(root: Path, skip: Path | None = None) -> int:
    total = 0
    if root.is_dir():
        for p in root.rglob("*"):
            if skip is not None and (p == skip or skip in p.parents):
                continue
            if p.is_file():
                total += p.stat().st_size
    return total


def _why_unwritable(path: Path) -> str:
    """Why ``path`` cannot be written: an ancestor that is not a directory, or no permission."""
    probe = path
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        return f"cannot be created: {probe} is not a directory"
    return "not writable"


@cache_app.command("info", cls=Command, epilog=SUBCOMMAND_EPILOG,
                   short_help="Where the cache is and what it holds")
def cache_info(as_json: bool = typer.Option(False, "--json", help="Print the numbers as JSON.")) -> None:
    """Where the cache is, whether it is writable, and how many table files it holds."""
    with user_errors():
        comp = compiler()
        root, info = comp.cache_root, comp.store.info()
        other = _tree_size(root, skip=Path(str(info["path"])))
        writable = bool(info["writable"])
        if as_json:
            print_json({"path": str(root), "tables_path": info["path"], "exists": root.is_dir(),
                        "writable": writable, "files": info["files"], "grammar_entries": info["grammar_entries"],
                        "vocabulary_tries": info["vocabulary_tries"], "vocabularies": info["vocabularies"],
                        "partial_files": info["partial_files"],
                        "bytes": info["bytes"], "other_bytes": other})
            return
        state = "" if root.is_dir() and writable else \
            f" ({_why_unwritable(root)})" if not writable else " (does not exist yet)"
        print(f"cache: {root}{state}")
        parts = [render.plural(int(info["grammar_entries"]), "grammar table"),
                 render.plural(int(info["vocabulary_tries"]), "vocabulary trie")]
        if info["vocabularies"]:
            parts.append(render.plural(int(info["vocabularies"]), "model vocabulary", "model vocabularies"))
        if info["partial_files"]:
            parts.append(render.plural(int(info["partial_files"]), "unfinished write"))
        print(f"compiled tables: {render.plural(int(info['files']), 'file')} ({', '.join(parts)}), "
              f"{render.human_bytes(int(info['bytes']))}, in {info['path']}")
        if other:
            print(f"models and vocabularies: {render.human_bytes(other)} ('cache clear --all' deletes them too)")
        if not writable:
            print("compiled tables are kept in memory only; set LOCALGCD_CACHE to a writable directory")


@cache_app.command("clear", cls=Command, epilog=SUBCOMMAND_EPILOG, short_help="Delete the compiled tables")
def cache_clear(
    all_: bool = typer.Option(False, "--all", help="Also delete assembled models and extracted vocabularies "
                                                   "(everything under the cache directory)."),
) -> None:
    """Delete the compiled tables (they are rebuilt on next use)."""
    import shutil

    with user_errors():
        comp = compiler()
        root, before = comp.cache_root, comp.store.info()
        try:
            removed = comp.store.clear()
        except OSError as exc:
            raise LocalgcdError(f"cannot clear {before['path']}: {exc.strerror or exc}") from None
        msg = (f"removed {render.plural(removed, 'file')} ({render.human_bytes(int(before['bytes']))}) "
               f"from {before['path']}")
        if all_ and root.is_dir():
            freed = _tree_size(root)
            p = root
            try:
                for p in root.iterdir():
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p)
                    else:
                        p.unlink()
            except OSError as exc:
                raise LocalgcdError(f"cannot delete {p}: {exc.strerror or exc}") from None
            msg += f"; and everything else under {root} ({render.human_bytes(freed)})"
        print(msg)
