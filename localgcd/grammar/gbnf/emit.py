"""The emit step: a :class:`TranslatedGrammar` → Lark text (a :class:`Translation`).

Kept apart on purpose: it is the one place that knows the stage after the
front end reads Lark text.
"""

from __future__ import annotations

from localgcd.grammar.gbnf.translated import TranslatedGrammar
from localgcd.grammar.translation import Translation


def emit_lark(translated: TranslatedGrammar, warnings: tuple[str, ...] = ()) -> Translation:
    """Lark text: the rules in their order (``start`` first), then the terminals as regexes."""
    lines = [f"{nt}: " + " | ".join(" ".join(name for _, name in alt) for alt in alternatives)
             for nt, alternatives in translated.rules.items()]
    lines += [f"{name}: /{regex}/" for name, regex in translated.terminals.items()]
    return Translation("\n".join(lines) + "\n", translated.origins, warnings=warnings)
