"""String terminals named through shared rules: each position's set of string terminals over atoms
gathered in blocks, and a large set of literals used once made one terminal."""

from __future__ import annotations

import math
import re

from localgcd.grammar.json_schema.context import Context, PatternTerminal
from localgcd.grammar.json_schema.encoding import encode_string


STRING_GROUP_MIN = 4  # a position with at least this many string terminals names them through shared rules
ATOM_RULE_MIN = 4  # string terminals held by the same sets get a rule of their own when at least this many


def share_string_terminals(ctx: Context, string_terms: set[str]) -> None:
    """Each position names its string terminals through shared rules (a schema with many literals
    would otherwise repeat all of them at every string position and every additional-member key:
    50 000 alternatives, minutes of LALR construction); see string_sets.  A member rule names its
    key's rule, except members of merged anyOf objects (``ctx.inline_members``): there two
    branches' keys may share a terminal in one parser state, and one-terminal reductions of two
    key rules would conflict, so their key terminals are inlined."""
    sets = {}
    for name in ctx.positions:
        strs = tuple(a for a in ctx.rules[name] if a in string_terms)
        if len(strs) >= STRING_GROUP_MIN:
            sets[name] = strs
    share = string_sets if ctx.tuning.string_sets else flat_string_sets
    covers = share(ctx, set(sets.values()))
    keys = {}
    for name, strs in sets.items():
        keys[name] = (covers[strs], ctx.rules[name])
        ctx.rules[name] = [a for a in ctx.rules[name] if a not in string_terms] + [covers[strs]]
    for name, alts in list(ctx.rules.items()):
        out = []
        for a in alts:
            m = _KEY_MEMBER.match(a) if a.startswith("@") else None
            if not m:
                out.append(a)
            elif m.group(1) in keys and name not in ctx.inline_members:
                # the key's own rule when it has more than its shared string group (a chunked long
                # string, a pattern's length piece); the group alone would drop those keys
                others = [k for k in keys[m.group(1)][1] if k not in string_terms]
                out.append(f"{m.group(1) if others else keys[m.group(1)][0]} {m.group(2)}")
            else:
                terms = keys[m.group(1)][1] if m.group(1) in keys else ctx.rules[m.group(1)]
                out += [f"{k} {m.group(2)}" for k in terms]
        ctx.rules[name] = out


_KEY_MEMBER = re.compile(r"@(\w+)@ (.*)")  # a member alternative naming its key's position: "@rule@ rest"

LITERAL_SET_MIN = 64  # a rule of this many literal string terminals (used nowhere else) is one terminal


def merge_literal_sets(ctx: Context, literal_of: dict[str, str]) -> None:
    """A rule whose alternatives are literal string terminals, each used by this rule alone (an
    enum's strings, gathered by string_sets), becomes one terminal matching all of them, with
    their priority: the same language and the same lexing (no other terminal tells them apart),
    but a lexer and a parser with one terminal instead of 100,000 (the lexer reads the set as a
    trie, see ``literal_set_dfa``)."""
    uses: dict[str, int] = {}
    for alts in ctx.rules.values():
        for alt in alts:
            for symbol in alt.split():
                uses[symbol] = uses.get(symbol, 0) + 1
    for rule, alts in ctx.rules.items():
        if len(alts) < LITERAL_SET_MIN or not all(
                a in literal_of and uses[a] == 1 and a not in ctx.modes and a not in ctx.also for a in alts):
            continue
        name = f"SSET{len([t for t in ctx.terms if t.startswith('SSET')])}"
        priority = ctx.terms[alts[0]].priority
        body = "(?:" + "|".join(re.escape(encode_string(literal_of[a])) for a in alts) + ")"
        ctx.terms[name] = PatternTerminal(body, priority)
        for a in alts:
            del ctx.terms[a]
        ctx.rules[rule] = [name]


def flat_string_sets(ctx: Context, sets: set[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """One flat rule per set of string terminals (``Tuning(string_sets=False)``: what
    :func:`string_sets` saves parser states against)."""
    return {strs: ctx.add_rule(ctx.name("strs"), list(strs)) for strs in sorted(sets)}


def string_sets(ctx: Context, sets: set[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """One rule per set of string terminals, over *atoms* gathered in blocks.  Returns
    {set: rule name}.

    An atom is the terminals held by exactly the same sets (one rule each when not tiny): every
    set is a union of atoms.  The atoms, ordered by the sets holding them, are cut into blocks
    of about sqrt(atoms), a rule each, and a set names the blocks it holds whole and the atoms of
    the others it holds.

    A schema's sets are mostly "every key literal but an object's own keys" (the keys of its
    additional members).  With one flat rule per set, each (set, literal) shift is a parser state
    of its own: 83 sets x 275 literals made 23K of Kubernetes---kb_149's 28K LR states.  Over
    atoms a literal is shifted once, whichever set reads it; over blocks a set that misses one
    atom names some 2 sqrt(atoms) symbols, not all the atoms.  (A deeper tree names fewer still,
    but each of its nodes is a nonterminal edge of every state expecting a string, and LALR's
    lookaheads then cost more than the states saved.)  Two sets holding a literal hold its whole
    atom, so no two rules of a parser state reduce one literal where flat rules did not."""
    ordered = sorted(sets)
    holding: dict[str, list[int]] = {}  # terminal -> the sets holding it
    for i, strs in enumerate(ordered):
        for term in strs:
            holding.setdefault(term, []).append(i)
    atoms: dict[tuple[int, ...], list[str]] = {}
    for term, held in holding.items():
        atoms.setdefault(tuple(held), []).append(term)
    leaves = sorted(atoms)  # by the sets holding them, so a set's atoms tend to run together
    # an atom's alternatives: its rule, or its few terminals themselves
    leaf_alts = [[ctx.add_rule(ctx.name("lits"), terms)] if len(terms) >= ATOM_RULE_MIN else list(terms)
                 for terms in map(atoms.__getitem__, leaves)]
    size = max(2, math.isqrt(len(leaves)))
    blocks = [range(lo, min(lo + size, len(leaves))) for lo in range(0, len(leaves), size)]
    block_rules: dict[int, str] = {}

    def block_rule(b: int) -> str:
        if b not in block_rules:
            block_rules[b] = ctx.add_rule(ctx.name("lits"), [a for leaf in blocks[b] for a in leaf_alts[leaf]])
        return block_rules[b]

    leaf_holders = [frozenset(leaf) for leaf in leaves]
    rules: dict[tuple[str, ...], str] = {}
    for i, strs in enumerate(ordered):
        alts: list[str] = []
        for b, block in enumerate(blocks):
            in_set = [leaf for leaf in block if i in leaf_holders[leaf]]
            if len(in_set) == len(block) > 1:
                alts.append(block_rule(b))
            else:
                alts += [a for leaf in in_set for a in leaf_alts[leaf]]
        rules[strs] = alts[0] if len(alts) == 1 and alts[0] in ctx.rules else ctx.add_rule(ctx.name("strs"), alts)
    return rules
