"""Regular runs → terminals: coarse multi-character terminals where the prefix code allows, else
character-level DFAs written as right-linear rules over one-character atom terminals.

A run is a maximal sequence of regular items in a rule (references to regular
rules inlined).  Its pieces are planned (:meth:`RunPlanner.settle`) so that the
terminals in use form a prefix code: a slice whose language is prefix-free
with words of two or more characters becomes one coarse terminal unless an
atom in use starts one of its words or another coarse terminal shares a word
prefix with it (then it is banned and the plans are made again); the rest is
character pieces, cut after each prefix-free head when ``split`` (the tail's
DFA is then shared, and so are its LALR states).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import cached_property

from localgcd.budget import BudgetMeter
from localgcd.errors import CompileBudgetError
from localgcd.grammar.gbnf.atoms import atom_dfa, atoms_used, class_regex, regex_text
from localgcd.grammar.gbnf.syntax import Expr, Position, Ref, Seq
from localgcd.grammar.gbnf.translated import NEVER, TERMINAL, NONTERMINAL, RuleBuilder, Symbol, run_symbol, sanitize
from localgcd.regex.dfa import DFA, prefix_overlap
from localgcd.regex.nfa import CharClasses

_LONGEST_COARSE = 40  # items a coarse terminal spans at most
_MAX_BAN_ROUNDS = 300  # then coarse terminals are given up rather than loop for long

SliceDFAs = dict[tuple[int, ...], "DFA | None"]  # a slice's items (their ids) → its DFA over atoms


@dataclass(frozen=True)
class Run:
    """A regular run: its items flattened, the GBNF rule it is in and where it starts."""

    items: tuple[Expr, ...]
    owner: str
    pos: Position

    @cached_property
    def ids(self) -> tuple[int, ...]:
        """The items' ids (a slice's key is a slice of them)."""
        return tuple(id(x) for x in self.items)


@dataclass(frozen=True)
class Piece:
    """Items ``[start, stop)`` of a run: one coarse terminal (its DFA), or character level."""

    start: int
    stop: int
    coarse: DFA | None = None


class RunPlanner:
    """The runs of one translation, planned into pieces and written as terminals and rules."""

    def __init__(self, rules: dict[str, Expr], atoms: CharClasses, meter: BudgetMeter, source: str,
                 line_text: Callable[[int], str | None], split: bool, dfas: SliceDFAs | None = None) -> None:
        """``dfas``: the slices' DFAs found so far, shared by the attempts of one translation (a
        slice is keyed by its items, nodes of ``rules``; the atoms are the same in every attempt)."""
        self.rules, self.atoms, self.meter, self.source, self.line_text = rules, atoms, meter, source, line_text
        self.split = split
        self.runs: list[Run] = []
        self._index: dict[tuple[int, ...], int] = {}  # the items' ids → run index
        self._dfas: SliceDFAs = {} if dfas is None else dfas
        self.terminals: dict[str, str] = {}  # name → regex, in the order made
        self.atom_ranges: dict[str, tuple[tuple[int, int], ...]] = {}
        self._first_atoms: dict[Hashable, frozenset[int]] = {}
        self._atoms_read: dict[Hashable, list[int]] = {}

    def flatten(self, items: Sequence[Expr]) -> list[Expr]:
        out: list[Expr] = []
        for x in items:
            if isinstance(x, Seq):
                out.extend(self.flatten(x.items))
            elif isinstance(x, Ref):
                out.extend(self.flatten([self.rules[x.name]]))
            else:
                out.append(x)
        return out

    def run(self, items: Sequence[Expr], owner: str) -> Symbol:
        """The symbol that stands for the run of ``items`` (regular) in GBNF rule ``owner``."""
        flat = self.flatten(items)
        key = tuple(id(x) for x in flat)
        if key not in self._index:
            self._index[key] = len(self.runs)
            self.runs.append(Run(tuple(flat), owner, items[0].pos))
        return run_symbol(self._index[key])

    def slice_dfa(self, run: Run, i: int, j: int) -> DFA | None:
        key = run.ids[i:j]
        if key not in self._dfas:
            try:
                self._dfas[key] = atom_dfa(run.items[i:j], self.rules, self.atoms, self.meter)
            except CompileBudgetError as exc:  # named by the rule the run is in, at its position
                message = exc.message.replace("its automaton", f"the automaton of rule '{run.owner}'")
                raise CompileBudgetError(message, self.source, *run.pos, self.line_text(run.pos[0])) from None
        return self._dfas[key]

    def segment(self, run: Run, banned: set[Hashable]) -> list[Piece]:
        """The pieces of ``run``: coarse where allowed (shortest first), else character level."""
        pieces: list[Piece] = []
        flat = run.items
        i = 0
        while i < len(flat):
            found = None
            head = self.slice_dfa(run, i, i + 1)
            starts_nullable = head is None or head.accept[0] >= 0
            for j in ([] if starts_nullable else range(i + 1, min(len(flat), i + _LONGEST_COARSE) + 1)):
                d = self.slice_dfa(run, i, j)
                if (d is not None and d.prefix_free and d.accept[0] < 0 and d.key not in banned
                        and any(d.accept[t] < 0 for _, t in d.edges(0))):
                    found = Piece(i, j, d)
                    break
            if found:
                pieces.append(found)
                i = found.stop
            else:
                if pieces and pieces[-1].coarse is None:
                    pieces[-1] = Piece(pieces[-1].start, i + 1)
                else:
                    pieces.append(Piece(i, i + 1))
                i += 1
        if not self.split:
            return pieces
        # Cut character pieces after each prefix-free head: the cut needs no LR
        # decision, and the tail (e.g. `ws`) becomes a DFA shared by every run
        # that ends with it, so LALR states are shared too (fewer states, cheaper masks).
        cut: list[Piece] = []
        for piece in pieces:
            if piece.coarse is not None:
                cut.append(piece)
                continue
            start = piece.start
            for k in range(start + 1, piece.stop):
                d = self.slice_dfa(run, start, k)
                if d is not None and d.prefix_free and d.accept[0] < 0:
                    cut.append(Piece(start, k))
                    start = k
            cut.append(Piece(start, piece.stop))
        return cut

    def first_atoms(self, d: DFA) -> frozenset[int]:
        """The atoms that start a word of ``d``."""
        found = self._first_atoms.get(d.key)
        if found is None:
            found = self._first_atoms[d.key] = frozenset(a for a, _ in d.edges(0))
        return found

    def settle(self) -> list[list[Piece]]:
        """Every run's pieces, once the terminals in use form a prefix code.

        Each round bans the offenders it finds, and only the runs that used one are planned again:
        coarse terminals sharing a word prefix with another (of each such pair the less used: fewest
        uses, then most items, go first, and one is banned only while a partner it overlaps is still
        allowed), else those whose first atom some character piece reads (:meth:`_atom_offenders`:
        one per reshaped run, as a ban can take the reading piece away).  A ban only removes coarse
        terminals, so the rounds end, and the last round finds no offender, so the result is a prefix
        code whatever was banned on the way (the rounds once banned one terminal each and compared
        every pair again: quadratic).  A pair's verdict is found once."""
        banned: set[Hashable] = set()
        rounds = 0
        plans = [self.segment(run, banned) for run in self.runs]
        overlaps: dict[tuple[Hashable, Hashable], bool] = {}  # a pair of coarse terminals → sharing a word prefix?
        while True:
            readers: dict[int, set[int]] = {}  # atom → the runs whose character pieces read it
            coarse: dict[Hashable, DFA] = {}
            uses: dict[Hashable, int] = {}
            sizes: dict[Hashable, int] = {}
            for r, (run, plan) in enumerate(zip(self.runs, plans)):
                for piece in plan:
                    if piece.coarse is not None:
                        key = piece.coarse.key
                        coarse[key] = piece.coarse
                        uses[key] = uses.get(key, 0) + 1
                        sizes[key] = piece.stop - piece.start
                    else:
                        d = self.slice_dfa(run, piece.start, piece.stop)
                        if d is not None:
                            for a in self.atoms_read(d):
                                readers.setdefault(a, set()).add(r)
            partners: dict[Hashable, list[Hashable]] = {}
            keys = list(coarse)
            for x, kx in enumerate(keys):
                for ky in keys[x + 1:]:
                    verdict = overlaps.get((kx, ky))
                    if verdict is None:
                        verdict = overlaps[kx, ky] = overlaps[ky, kx] = prefix_overlap(coarse[kx], coarse[ky])
                    if verdict:
                        partners.setdefault(kx, []).append(ky)
                        partners.setdefault(ky, []).append(kx)
            newly: set[Hashable] = set()
            for k in sorted(partners, key=lambda k: (uses[k], -sizes[k])):
                if any(other not in newly for other in partners[k]):
                    newly.add(k)
            if not newly:
                newly = self._atom_offenders(coarse, uses, sizes, readers, plans)
            if not newly:
                return plans
            rounds += 1
            if rounds > _MAX_BAN_ROUNDS:
                newly = set(coarse)
            banned |= newly
            # a ban changes the plan of a run that uses a banned terminal only (elsewhere the same
            # first allowed slice is found at every place): only those are planned again
            plans = [self.segment(run, banned) if any(p.coarse is not None and p.coarse.key in newly for p in plan)
                     else plan for run, plan in zip(self.runs, plans)]

    def _atom_offenders(self, coarse: dict[Hashable, DFA], uses: dict[Hashable, int], sizes: dict[Hashable, int],
                        readers: dict[int, set[int]], plans: list[list[Piece]]) -> set[Hashable]:
        """The coarse terminals to ban for a first atom that a character piece reads: fewest uses,
        then most items, first; a later one only while it stays an offender once the runs the
        earlier ones are in are planned again (a reader of its first atom is in another run)."""
        runs_of: dict[Hashable, set[int]] = {}
        for r, plan in enumerate(plans):
            for piece in plan:
                if piece.coarse is not None:
                    runs_of.setdefault(piece.coarse.key, set()).add(r)
        newly: set[Hashable] = set()
        replanned: set[int] = set()
        for k in sorted(coarse, key=lambda k: (uses[k], -sizes[k])):
            if any(readers.get(a, set()) - replanned for a in self.first_atoms(coarse[k])):
                newly.add(k)
                replanned |= runs_of[k]
        return newly

    def atoms_read(self, d: DFA) -> list[int]:
        """:func:`atoms_used` of ``d``, found once."""
        found = self._atoms_read.get(d.key)
        if found is None:
            found = self._atoms_read[d.key] = atoms_used(d)
        return found

    def write(self, plans: list[list[Piece]], builder: RuleBuilder) -> dict[str, list[Symbol]]:
        """Each run's symbols (by its run symbol's name), its terminals made (:attr:`terminals`) and
        its character DFAs written into ``builder`` as right-linear rules."""
        atom_names: dict[int, str] = {}
        coarse_names: dict[Hashable, str] = {}
        dfa_names: dict[Hashable, str] = {}
        out: dict[str, list[Symbol]] = {}

        def atom(a: int) -> Symbol:
            if a not in atom_names:
                atom_names[a] = f"C{len(atom_names)}"
                self.atom_ranges[atom_names[a]] = tuple(self.atoms.classes[a].intervals)
                self.terminals[atom_names[a]] = class_regex(self.atoms.classes[a].intervals)
            return (TERMINAL, atom_names[a])

        for rid, (run, plan) in enumerate(zip(self.runs, plans)):
            flat, owner = run.items, run.owner
            syms: list[Symbol] = []
            for piece in plan:
                if piece.coarse is not None:
                    d = piece.coarse
                    if d.key not in coarse_names:
                        name = f"T{len(coarse_names)}_{sanitize(owner).upper()}"
                        coarse_names[d.key] = name
                        self.terminals[name] = regex_text(Seq(tuple(flat[piece.start:piece.stop])), self.rules)
                        builder.origins[name] = flat[piece.start].pos
                        builder.owner[name] = owner
                    syms.append((TERMINAL, coarse_names[d.key]))
                    continue
                found = self.slice_dfa(run, piece.start, piece.stop)
                if found is None:
                    syms = [(NEVER, "")]
                    break
                d = found
                if not d.edges(0):
                    continue  # only the empty string
                if d.key not in dfa_names:
                    base = builder.fresh("d_" + sanitize(owner), owner, flat[piece.start].pos)
                    dfa_names[d.key] = base
                    rows = [d.edges(q) for q in range(d.n_states)]
                    sink = {q for q, row in enumerate(rows) if d.accept[q] >= 0 and not row}
                    for q, row in enumerate(rows):
                        if q in sink:
                            continue
                        nt = f"{base}_{q}"
                        builder.names.add(nt)
                        builder.origins[nt] = builder.origins[base]
                        builder.owner[nt] = owner
                        alts = [[atom(a)] + ([] if t in sink else [(NONTERMINAL, f"{base}_{t}")]) for a, t in row]
                        if d.accept[q] >= 0:
                            alts.append([])
                        builder.cfg[nt] = alts
                syms.append((NONTERMINAL, f"{dfa_names[d.key]}_0"))
            out[run_symbol(rid)[1]] = syms
        return out
