"""Terminal resolution, once the whole schema is seen: every string lexeme gets exactly one terminal
(literals win ties; length classes partition the rest; pattern terminals are pairwise disjoint or
nested, a partial overlap getting its intersection), integers are partitioned by every bound, and
each scalar position takes exactly the terminals inside what it allows."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from localgcd.errors import CompileBudgetError
from localgcd.grammar.json_schema.automata import byte_dfa, length_piece_dfa, unit_length_range
from localgcd.grammar.json_schema.context import Context, PatternTerminal, fail
from localgcd.grammar.json_schema.encoding import UNIT, Unsupported, encode_string
from localgcd.grammar.json_schema.long_strings import LongStrings
from localgcd.grammar.json_schema.numbers import EXP_NUMBER, Bound, dec_open, dec_point, int_bounds, int_range
from localgcd.grammar.json_schema.patterns import intersection_regex
from localgcd.grammar.json_schema.spec import NumberSpec, ScalarPosition, StringSpec, literals_matching_spec
from localgcd.grammar.json_schema.tracking import CHUNK, Signature
from localgcd.regex.conditions import Also
from localgcd.regex.dfa import DFA, relation, relations

MAX_PATTERNS = 48  # pattern terminals, intersections included
WORDS = {"true": "TRUE", "false": "FALSE", "null": "NULL"}  # the terminal of each JSON word
NEVER = "NOTHING"  # the terminal of a position that allows no scalar (its regex matches nothing)
MAX_PIECE_STATES = 20_000  # a pattern within a length class: an automaton the lexer builds, not a regex


@dataclass
class SchemaBounds:
    """What the scalar positions of the whole schema hold: the literals, the patterns (each with
    the pointer of its first use), and every bound that cuts the string lengths and numbers."""

    str_lits: set[str] = field(default_factory=set)
    num_lits: set[str] = field(default_factory=set)
    patterns: dict[str, str] = field(default_factory=dict)  # pattern body -> pointer
    len_cuts: set[int] = field(default_factory=lambda: {0})  # every string length bound (lo, hi + 1)
    free_len_cuts: set[int] = field(default_factory=lambda: {0})  # those of strings without a pattern
    int_cuts: set[int] = field(default_factory=set)
    dec_cuts: set[Bound] = field(default_factory=set)
    any_num: bool = False

    @classmethod
    def of(cls, positions: dict[str, ScalarPosition]) -> SchemaBounds:
        bounds = cls()
        for pos in positions.values():
            bounds.str_lits |= pos.str_lits
            bounds.num_lits |= pos.num_lits
            for sp in pos.strs:
                if sp.pattern is not None:
                    bounds.patterns.setdefault(sp.pattern, sp.ptr)
                for f in sp.forbid:
                    bounds.patterns.setdefault(f, sp.ptr)
                bounds.str_lits |= sp.exclude
                spec_cuts = {sp.lo} | ({sp.hi + 1} if sp.hi is not None else set())
                bounds.len_cuts |= spec_cuts
                if sp.pattern is None:
                    bounds.free_len_cuts |= spec_cuts
            for ns in pos.nums:
                bounds.any_num = True
                for b in (ns.lo, ns.hi):
                    if b is not None and not ns.integer:
                        bounds.dec_cuts.add(b)
                ilo, ihi = int_bounds(ns)
                if ilo is not None:
                    bounds.int_cuts.add(ilo)
                if ihi is not None:
                    bounds.int_cuts.add(ihi + 1)
        return bounds


class Resolver:
    """The terminals of one translation (into ``ctx.terms``) and the alternatives of its scalar
    positions (into ``ctx.rules``)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.terms: dict[str, PatternTerminal] = ctx.terms

    def run(self) -> None:
        """Every terminal, in the order the grammar text lists them, then every position's alternatives."""
        bounds = SchemaBounds.of(self.ctx.positions)
        self.len_cuts = bounds.len_cuts
        self.chunked = any(c > CHUNK + 1 for c in self.len_cuts)
        self.literal_terminals(bounds)
        long_classes = self.length_atoms(bounds)
        plist = self.pattern_terminals(bounds.patterns)
        depth = {b: self._depth(b, set()) for b in plist}
        self.pattern_pieces(plist, bounds.patterns, depth)
        self.long_strings(plist, bounds.patterns, long_classes)
        lit_prio = max([9] + [3 + d for d in depth.values()])  # literals win over every pattern
        for s, name in self.lit_name.items():
            self.terms[name] = PatternTerminal(re.escape(self._lit_encoded[s]), lit_prio)
        self.number_terminals(bounds)
        for rule, pos in self.ctx.positions.items():
            self.ctx.rules[rule] = self.resolve(pos) or [NEVER]

    def literal_terminals(self, bounds: SchemaBounds) -> None:
        """A terminal per string literal up to a chunk long (they win every tie); longer ones are
        tracked through the chunks (as a pattern would be): a terminal of their own would read on
        past LOPEN and have to back up when they fail."""
        self.long_lits = sorted(x for x in bounds.str_lits if len(x) > CHUNK) if self.chunked else []
        self.lit_name: dict[str, str] = {}
        self._lit_encoded: dict[str, str] = {}  # (in lit_name's order)
        self._literals_by_spec: dict[StringSpec, tuple[str, ...]] = {}
        for i, s in enumerate(sorted(bounds.str_lits - set(self.long_lits))):
            name = f"S{i}"
            self.lit_name[s] = name
            self._lit_encoded[s] = encode_string(s)
            self.terms[name] = PatternTerminal(re.escape(self._lit_encoded[s]), 9)

    def length_atoms(self, bounds: SchemaBounds) -> list[tuple[int, int | None]]:
        """One terminal per length class up to CHUNK characters; returns the longer classes (one
        chunked rule each) when some bound lies beyond CHUNK + 1 (else the last class is one terminal)."""
        bounds_len = set(bounds.free_len_cuts)
        if self.chunked:  # long classes are cut at every bound, a pattern's too
            bounds_len |= {CHUNK + 1} | {c for c in self.len_cuts if c > CHUNK + 1}
        cuts = sorted(bounds_len)
        self.len_atoms: list[tuple[int, int | None, str]] = []
        long_classes: list[tuple[int, int | None]] = []
        for i, lo in enumerate(cuts):
            hi = cuts[i + 1] - 1 if i + 1 < len(cuts) else None
            if lo > CHUNK and self.chunked:
                long_classes.append((lo, hi))
                continue
            name = f"STR{i}"
            rep = "{%d,%s}" % (lo, "" if hi is None else hi)
            if hi is not None and lo == hi:
                rep = "{%d}" % lo
            self.terms[name] = PatternTerminal(chr(34) + UNIT + rep + chr(34))
            self.len_atoms.append((lo, hi, name))
        return long_classes

    def pattern_terminals(self, patterns: dict[str, str]) -> list[str]:
        """The pattern bodies with a terminal, pairwise disjoint or nested: two that overlap
        partially get their intersection as one more pattern nested in both (it wins their common
        strings).  ``patterns`` gains the intersections."""
        ctx = self.ctx
        self.pat_dfa: dict[str, DFA] = {}
        self.inside: dict[str, set[str]] = {}
        self.alias: dict[str, str] = {}
        plist: list[str] = []
        for body in sorted(patterns):
            self.add_pattern(body, patterns[body], plist)
        pairs = [(a, b) for i, a in enumerate(plist) for b in plist[i + 1:]]
        # (a, b) -> relation(a, b), found for the pairs waiting all at once
        known: dict[tuple[str, str], tuple[bool, bool]] = {}
        while pairs:
            a, b = pairs.pop()
            if (a, b) not in known:
                both_ways = [(x, y) for x, y in pairs + [(a, b)] if (x, y) not in known]
                both_ways += [(y, x) for x, y in both_ways]
                known.update(zip(both_ways, relations([(self.pat_dfa[x], self.pat_dfa[y]) for x, y in both_ways])))
            if self.relate(a, b, known[a, b], known[b, a]):
                continue
            try:
                meet = intersection_regex(a, b, ctx.meter)  # not None: they intersect
            except CompileBudgetError as exc:
                raise CompileBudgetError(f"{patterns[a] or '/'}: keyword 'pattern': {exc.message}",
                                         ctx.source) from None
            except Unsupported as exc:
                ctx.unsupported(patterns[a], "pattern",
                                f"overlapping partially with the pattern at {patterns[b]} ({exc})")
                continue
            assert meet is not None
            if meet not in self.pat_dfa and meet not in self.alias:
                if len(plist) >= MAX_PATTERNS:
                    ctx.unsupported(patterns[a], "pattern", f"with more than {MAX_PATTERNS} pattern intersections")
                    break
                others, patterns[meet] = list(plist), patterns[a]
                if self.add_pattern(meet, patterns[a], plist):
                    pairs += [(meet, c) for c in others]
        self.pat_name = {b: f"PAT{i}" for i, b in enumerate(plist)}
        return plist

    def pattern_pieces(self, plist: list[str], patterns: dict[str, str], depth: dict[str, int]) -> None:
        """Each pattern's terminals, one per length piece (inner patterns win ties), and the length
        atoms no string is left to."""
        self.pat_units: dict[str, tuple[int, int | None]] = {}
        self.pieces: dict[str, tuple[list[str], list[tuple[int, int | None, str]]]] = {}
        self.long_patterns: set[str] = set()
        for b in plist:
            self.pieces[b] = self.length_pieces(b, patterns[b])
        for b in plist:
            self.drop_covered_pieces(b)
            for lengths, (_lo, _hi, piece) in zip(*self.pieces[b]):
                self.terms[piece] = PatternTerminal(chr(34) + b + chr(34), 2 + depth[b])
                if lengths:
                    self.ctx.also[piece] = [Also(lengths)]
        self.drop_shadowed_atoms()

    def long_strings(self, plist: list[str], patterns: dict[str, str],
                     long_classes: list[tuple[int, int | None]]) -> None:
        """The chunked long strings, tracking the patterns some position names whose strings may be
        that long, and the long literals."""
        referenced: set[str] = set()
        for pos in self.ctx.positions.values():
            for sp in pos.strs:
                referenced |= {self.alias.get(b, b) for b in ([sp.pattern] if sp.pattern else []) + list(sp.forbid)}
        self.tracked = [b for b in plist if b in self.long_patterns and b in referenced]
        lit_bodies = {x: re.escape(encode_string(x)[1:-1]) for x in self.long_lits}
        self.tracked += list(lit_bodies.values())
        self.long = LongStrings(self.ctx, self.terms, long_classes, self.tracked, patterns)
        self.track_index = {b: p for p, b in enumerate(self.long.tracked)}  # none when not tracked (lenient)
        self.lit_track = {x: self.track_index[b] for x, b in lit_bodies.items() if b in self.track_index}

    def number_terminals(self, bounds: SchemaBounds) -> None:
        """Integers partitioned into ranges by every bound, non-integers into value intervals and
        points; a terminal per non-integer literal."""
        self.int_atoms: list[tuple[int | None, int | None, str]] = []
        self.dec_atoms: list[tuple[str, Bound | None, Bound | None, str]] = []
        if bounds.any_num:
            cuts = sorted(bounds.int_cuts)
            edges: list[int | None] = [None, *cuts]
            for i, lo in enumerate(edges):
                hi = (cuts[i] - 1) if i < len(cuts) else None
                if lo is not None and hi is not None and lo > hi:
                    continue
                rx = int_range(lo, hi)
                if rx is None:
                    continue
                name = f"INT{len(self.int_atoms)}"
                self.terms[name] = PatternTerminal(rx, 5)
                self.int_atoms.append((lo, hi, name))
            dcuts = sorted(bounds.dec_cuts)
            pts: list[int | Decimal | None] = [None, *dcuts, None]
            for i in range(len(pts) - 1):
                a, b = pts[i], pts[i + 1]
                rx = dec_open(a, b)
                if rx is not None:
                    name = f"DEC{len(self.dec_atoms)}"
                    self.terms[name] = PatternTerminal(rx, 4)
                    self.dec_atoms.append(("open", a, b, name))
                if b is not None:
                    name = f"DEC{len(self.dec_atoms)}"
                    self.terms[name] = PatternTerminal(dec_point(b), 4)
                    self.dec_atoms.append(("point", b, b, name))
            self.terms["EXPNUM"] = PatternTerminal(EXP_NUMBER, 4)
        self.num_lit_name: dict[str, str] = {}
        for i, v in enumerate(sorted(bounds.num_lits)):
            name = f"NL{i}"
            self.num_lit_name[v] = name
            self.terms[name] = PatternTerminal(re.escape(v), 9)

    def add_pattern(self, body: str, ptr: str, plist: list[str]) -> bool:
        """Add a pattern terminal; False when one with the same language exists (``body`` is
        then an alias of it: two terminals for one language, one of them never produced)."""
        try:
            dfa = byte_dfa('"' + body + '"', self.ctx.meter)
        except CompileBudgetError as exc:
            raise CompileBudgetError(f"{ptr or '/'}: keyword 'pattern': {exc.message}", self.ctx.source) from None
        except Exception as exc:  # noqa: BLE001
            fail(self.ctx, ptr, f"keyword 'pattern' cannot be compiled: {exc}")
        inside = [c for c, (_shared, a_in_b) in zip(plist, relations([(dfa, self.pat_dfa[c]) for c in plist]))
                  if a_in_b]
        for c, (_shared, c_in_body) in zip(inside, relations([(self.pat_dfa[c], dfa) for c in inside])):
            if c_in_body:
                self.alias[body] = c
                return False
        self.pat_dfa[body], self.inside[body] = dfa, set()
        plist.append(body)
        return True

    def relate(self, a: str, b: str, a_to_b: tuple[bool, bool], b_to_a: tuple[bool, bool]) -> bool:
        """Record whether one pattern is nested in the other (both ways: the same language), from
        ``relation(a, b)`` and ``relation(b, a)``; False when they overlap partially."""
        inter, a_in_b = a_to_b
        if not inter:
            return True
        b_in_a = b_to_a[1]
        if a_in_b:
            self.inside[b].add(a)
        if b_in_a:
            self.inside[a].add(b)
        return a_in_b or b_in_a

    def string_terms(self) -> set[str]:
        """The names of the string terminals (literals, length classes, patterns)."""
        return set(self.lit_name.values()) | {name for _lo, _hi, name in self.len_atoms} | set(self.pat_name.values())

    def _depth(self, b: str, stack: set[str]) -> int:
        """Longest chain of patterns containing ``b``: inner patterns must win ties."""
        outer = [c for c, ins in self.inside.items() if b in ins and c not in stack and c != b]
        return 0 if not outer else 1 + max(self._depth(c, stack | {b}) for c in outer)

    def units(self, body: str) -> tuple[int, int | None]:
        """(fewest, most or None) characters of the pattern's strings."""
        if body not in self.pat_units:
            self.pat_units[body] = unit_length_range(self.pat_dfa[body])
        return self.pat_units[body]

    def length_pieces(self, body: str, ptr: str) -> tuple[list[str], list[tuple[int, int | None, str]]]:
        """([length regex or ""], [(fewest, most, terminal)]): the pattern split at every length
        bound of the schema that its strings straddle, so that a bounded position takes exactly the
        pieces inside its bounds.  A piece is the pattern's terminal with a second regex, its length
        class, that the lexer intersects with it (an ``Also`` on the terminal): the product of the two
        automata, never written back as a regex.  When long strings are chunked, pieces stop at
        CHUNK characters; the pattern's longer strings are tracked through the chunks."""
        name = self.pat_name[body]
        mn, mx = self.units(body) if self.len_cuts != {0} else (0, None)
        top = mx
        if self.chunked and (mx is None or mx > CHUNK):
            self.long_patterns.add(body)
            top = CHUNK
            if mn > CHUNK:
                return [], []
        cuts = sorted(c for c in self.len_cuts if mn < c and (top is None or c <= top))
        if not cuts and top == mx:
            return [""], [(mn, mx, name)]
        lows: list[int] = [mn] + cuts
        highs: list[int | None] = [*cuts, None if top is None else top + 1]
        lengths: list[str] = []
        pieces: list[tuple[int, int | None, str]] = []
        for i, (a, z) in enumerate(zip(lows, highs)):
            rep = "{%d,%s}" % (a, "" if z is None else z - 1)
            piece_lengths = '"' + UNIT + rep + '"'
            dfa = self.piece_dfa(body, piece_lengths)
            if dfa.n_states > MAX_PIECE_STATES:
                self.ctx.unsupported(ptr, "maxLength", "together with a pattern/format whose strings straddle "
                                     f"the bound (intersection automaton above {MAX_PIECE_STATES} states)")
            if dfa.accept.max() >= 0:
                lengths.append(piece_lengths)
                pieces.append((a, None if z is None else z - 1, f"{name}_{i}"))
        return lengths, pieces

    def piece_dfa(self, body: str, lengths: str) -> DFA:
        """The byte DFA of the pattern's strings (quoted) within a length class ("": all of them)."""
        if not lengths:
            return byte_dfa('"' + body + '"', self.ctx.meter)
        return length_piece_dfa(body, lengths, self.ctx.meter)

    def drop_shadowed_atoms(self) -> None:
        """Drop a length atom whose every string one pattern piece of its lengths matches (the
        piece wins them all, and every position that takes the atom takes the piece or forbids
        its pattern: a terminal never produced is an error)."""
        keep = []
        for lo, hi, name in self.len_atoms:
            rep = "{%d,%s}" % (lo, "" if hi is None else hi)
            atom = byte_dfa('"' + UNIT + rep + '"')
            shadowed = any(plo == lo and phi == hi and relation(atom, self.piece_dfa(b, lengths))[1]
                           for b in self.pieces for lengths, (plo, phi, _n) in zip(*self.pieces[b]))
            if shadowed:
                del self.terms[name]
            else:
                keep.append((lo, hi, name))
        self.len_atoms = keep

    def drop_covered_pieces(self, body: str) -> None:
        """Drop the length pieces of ``body`` inside one piece of a pattern nested in it (that one
        wins every such string: a terminal never produced is an error)."""
        lengths, pieces = self.pieces[body]
        if len(pieces) < 2:
            return
        keep = []
        for piece_lengths, (lo, hi, name) in zip(lengths, pieces):
            dfa = self.piece_dfa(body, piece_lengths)
            covered = any(alo <= lo and (ahi is None or (hi is not None and hi <= ahi))
                          and relation(dfa, self.piece_dfa(a, alen))[1]
                          for a in self._all_inside(body) for alen, (alo, ahi, _n) in zip(*self.pieces[a]))
            if not covered:
                keep.append((piece_lengths, (lo, hi, name)))
        self.pieces[body] = ([x for x, _p in keep], [p for _x, p in keep])

    def pieces_within(self, body: str, lo: int, hi: int | None, ptr: str) -> list[str]:
        """The terminals of the pattern's pieces whose lengths lie in [lo, hi] (a piece that
        straddles the bounds: an error)."""
        out = []
        for mn, mx, name in self.pieces[body][1]:
            if mn >= lo and (hi is None or (mx is not None and mx <= hi)):
                out.append(name)
            elif not ((hi is not None and mn > hi) or (mx is not None and mx < lo)):
                self.ctx.unsupported(ptr, "maxLength" if hi is not None else "minLength",
                                     "together with a pattern/format whose strings straddle the bound")
                out.append(name)
        return out

    def long_signatures(self, pattern: str | None, forbid: frozenset[str],
                        exclude: frozenset[str] = frozenset()) -> set[Signature]:
        """The signatures (which tracked patterns a long string matches) of the long strings of a
        string spec: all of them, or its pattern's; none of a forbidden pattern's or excluded literal's."""
        index = self.track_index
        if pattern is not None and pattern not in index:
            return set()  # a pattern whose strings are never that long
        banned = [index[f] for f in forbid if f in index] + [self.lit_track[x] for x in exclude if x in self.lit_track]
        return {sig for sig in self.long.signatures
                if (pattern is None or sig[index[pattern]]) and not any(sig[p] for p in banned)}

    def resolve(self, pos: ScalarPosition) -> list[str]:
        """The terminals (and long string rules) of a scalar position: exactly what it allows."""
        out = [WORDS[w] for w in sorted(pos.words)]
        lits, long_allowed = self.strings_within(pos, out)
        out += self.long_rules(pos, long_allowed)
        out += [self.lit_name[s] for s in sorted(lits) if s in self.lit_name]
        for ns in pos.nums:
            out += self.numbers_within(ns)
        for v in pos.num_lits:
            out.append(self.num_lit_name[v])
        return list(dict.fromkeys(out))

    def strings_within(self, pos: ScalarPosition, out: list[str]) -> tuple[set[str], dict[int, set[Signature]]]:
        """The string literals a position allows and the signatures it allows per long class;
        the length atoms and pattern pieces it allows go into ``out``."""
        long_allowed: dict[int, set[Signature]] = {}
        lits = set(pos.str_lits)
        for sp in pos.strs:
            lits.update(self.literals_within(sp))
            forbid = {self.alias.get(f, f) for f in sp.forbid}
            forbid |= set[str]().union(*(self._all_inside(f) for f in forbid))  # nested strings match too
            pattern = None
            if sp.pattern is not None:
                pattern = self.alias.get(sp.pattern, sp.pattern)
                allowed = {pattern} | self._all_inside(pattern)
            else:
                for lo, hi, name in self.len_atoms:
                    if lo >= sp.lo and (sp.hi is None or (hi is not None and hi <= sp.hi)):
                        out.append(name)
                allowed = set(self.pat_name)
            for b in sorted(allowed - forbid):
                out += self.pieces_within(b, sp.lo, sp.hi, sp.ptr)
            inside = [c for c, (lo, hi) in enumerate(self.long.classes)
                      if lo >= sp.lo and (sp.hi is None or (hi is not None and hi <= sp.hi))]
            signatures = self.long_signatures(pattern, frozenset(forbid), sp.exclude) if inside else set()
            for c in inside:
                long_allowed.setdefault(c, set()).update(signatures)
        for x in sorted(lits & set(self.lit_track)):  # a long literal: its class, its signatures
            c = next(c for c, (lo, hi) in enumerate(self.long.classes) if lo <= len(x) and (hi is None or len(x) <= hi))
            long_allowed.setdefault(c, set()).update(sig for sig in self.long.signatures if sig[self.lit_track[x]])
        return lits, long_allowed

    def literals_within(self, sp: StringSpec) -> tuple[str, ...]:
        """The schema's string literals (those with a terminal) that ``sp`` allows, once per distinct
        spec (positions repeat specs: every free string of a big schema is one)."""
        found = self._literals_by_spec.get(sp)
        if found is None:
            found = self._literals_by_spec[sp] = tuple(literals_matching_spec(list(self.lit_name), sp,
                                                                              list(self._lit_encoded.values())))
        return found

    def long_rules(self, pos: ScalarPosition, long_allowed: dict[int, set[Signature]]) -> list[str]:
        """The long string rules of a position: consecutive classes allowing the same signatures
        are one range, one chain (a lone range is counted left to right, see LongStrings.rule)."""
        ranges: list[tuple[int, int | None, frozenset[Signature]]] = []
        for c in sorted(long_allowed):
            lo, hi = self.long.classes[c]
            allowed = frozenset(long_allowed[c])
            last = ranges[-1][1] if ranges else None
            if ranges and ranges[-1][2] == allowed and last is not None and last + 1 == lo:
                ranges[-1] = (ranges[-1][0], hi, allowed)
            else:
                ranges.append((lo, hi, allowed))
        rules = [self.long.rule(lo, hi, allowed, pos.strs[0].ptr if pos.strs else "/", len(ranges) == 1)
                 for lo, hi, allowed in ranges]
        return [rule for rule in rules if rule is not None]

    def numbers_within(self, ns: NumberSpec) -> list[str]:
        """The number terminals inside ``ns``'s bounds."""
        out: list[str] = []
        ilo, ihi = int_bounds(ns)
        for lo, hi, name in self.int_atoms:
            if ilo is not None and ihi is not None and ilo > ihi:
                break
            if (ilo is None or (lo is not None and lo >= ilo)) and \
                    (ihi is None or (hi is not None and hi <= ihi)):
                out.append(name)
        if not ns.integer:
            for kind, a, b, name in self.dec_atoms:
                if kind == "point":
                    inside = _within(a, ns)
                else:
                    inside = (ns.lo is None or (a is not None and a >= ns.lo)) and \
                             (ns.hi is None or (b is not None and b <= ns.hi))
                if inside:
                    out.append(name)
            if ns.lo is None and ns.hi is None:
                out.append("EXPNUM")
        for v, name in self.num_lit_name.items():
            x = float(v)
            if ns.integer and not x.is_integer():
                continue
            if _within(x, ns):
                out.append(name)
        return out

    def _all_inside(self, b: str) -> set[str]:
        """The patterns nested in ``b``, however deep."""
        res: set[str] = set()
        todo = [b]
        while todo:
            x = todo.pop()
            for y in self.inside.get(x, ()):
                if y not in res and y != b:
                    res.add(y)
                    todo.append(y)
        return res


def _within(x: Any, ns: NumberSpec) -> bool:
    """Is the number ``x`` (a bound, or a float compared exactly with the decimal bounds) inside ``ns``?"""
    return bool((ns.lo is None or x > ns.lo or (x == ns.lo and not ns.lo_open)) and
                (ns.hi is None or x < ns.hi or (x == ns.hi and not ns.hi_open)))
