"""A DFA → regex text, by state elimination.

The grammar front ends write a product automaton (a JSON Schema's two patterns intersected) back
as one regex.  The automaton is over character classes (:class:`localgcd.regex.nfa.CharClasses`),
so an edge's symbols are characters and the caller spells them (``class_text``); a byte automaton
would give a regex over bytes, which no dialect can say.
"""

from __future__ import annotations

from typing import Callable

from localgcd.regex.dfa import DFA


class RegexTooLong(ValueError):
    """The regex read off an automaton would pass its caller's length limit."""


def dfa_regex(dfa: DFA, class_text: Callable[[list[int]], str], max_length: int) -> str | None:
    """A regex for the language of a trim ``dfa`` (None when it accepts nothing); ``class_text``
    spells one character from a set of symbols.  Every piece is kept safe to concatenate (a
    group around each alternation).  States are eliminated farthest from the start first, so a
    chain of bounded repetitions nests instead of growing quadratically.  Raises
    :class:`RegexTooLong` when an edge's regex passes ``max_length`` characters."""
    accept = [q for q in range(dfa.n_states) if dfa.accept[q] >= 0]
    if not accept:
        return None
    n = dfa.n_states
    start, final = n, n + 1
    out: dict[int, dict[int, str]] = {q: {} for q in range(n + 2)}
    into: dict[int, dict[int, str]] = {q: {} for q in range(n + 2)}

    def add(p: int, q: int, regex: str) -> None:
        old = out[p].get(q)
        regex = regex if old is None else f"(?:{old}|{regex})"
        if len(regex) > max_length:
            raise RegexTooLong(f"regex over {max_length} characters")
        out[p][q] = into[q][p] = regex

    add(start, 0, "")
    for q in accept:
        add(q, final, "")
    rows = [dfa.edges(q) for q in range(n)]
    for q, row in enumerate(rows):
        by_target: dict[int, list[int]] = {}
        for symbol, target in row:
            by_target.setdefault(target, []).append(symbol)
        for target, symbols in by_target.items():
            add(q, target, class_text(symbols))
    distance, todo = {0: 0}, [0]
    for q in todo:  # breadth-first distances from the start
        for _symbol, target in rows[q]:
            if target not in distance:
                distance[target] = distance[q] + 1
                todo.append(target)
    for k in sorted(range(n), key=lambda q: (-distance.get(q, 0), len(out[q]) * len(into[q]))):
        loop = out[k].pop(k, None)
        into[k].pop(k, None)
        star = f"(?:{loop})*" if loop else ""
        ins, outs = list(into[k].items()), list(out[k].items())
        for p, _regex in ins:
            del out[p][k]
        for q, _regex in outs:
            del into[q][k]
        out[k], into[k] = {}, {}
        for p, regex_in in ins:
            for q, regex_out in outs:
                add(p, q, regex_in + star + regex_out)
    return out[start][final]
