"""Strings longer than ``CHUNK`` characters, lexed in chunks in lexer modes of their own, and the
rules of a length class over the chunks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from localgcd.grammar.json_schema.automata import byte_dfa
from localgcd.grammar.json_schema.context import Context, PatternTerminal
from localgcd.grammar.json_schema.encoding import UNIT
from localgcd.grammar.json_schema.tracking import CHUNK, MAX_TRACKED_LINKS, Signature, track
from localgcd.regex.conditions import Also


class LongStrings:
    """Strings longer than CHUNK characters, lexed in chunks in lexer modes of their own.

    ``LOPEN`` (the quote and CHUNK characters) enters a chunk mode, ``LMID`` (CHUNK characters)
    stays in one, a ``LTAIL`` piece (1 to CHUNK characters and the closing quote) leaves it.
    Maximal munch makes the split unique: a string of L > CHUNK characters is LOPEN, m LMIDs and
    a tail of t characters with L = CHUNK * (1 + m) + t, 1 <= t <= CHUNK (exactly CHUNK
    characters are one closed string terminal; a quote after a full chunk extends the tail).  The
    tail pieces are cut where some class bound falls, so each length class is a chain of rules
    over m, exact for any bound up to MAX_LENGTH_BOUND, without a counter of its size in the lexer.

    Patterns whose strings may be that long are *tracked*: the chunks carry the state their
    automata (the product of all of them, a vector) reach, one lexer mode per vector, with the
    ``Also`` conditions that say so; a tail terminal then says which of the patterns
    the whole string matches (its signature), and a position's long strings are the tails of
    the signatures it allows.  Untracked, there is one chunk mode and one terminal of each kind.
    """

    #: A chain of every signature where no other long string rule is expected is counted left to
    #: right (``lpre_c_k``: the opening and k middle chunks, reduced as each chunk comes), not as
    #: links waiting on the rest of the string: a reduction then exposes the string's own position
    #: at once, where a thousand links' reductions would unwind one by one (the LALR analysis and
    #: the stack-free moves followed them link by link: ``Github_hard---o82339``'s parse tables
    #: 331 -> 123 ms, with its 255K reduce cells written as arrays).  Two such rules at one
    #: position would both reduce the opening: there, the links stay.  ``Tuning(count_long_strings_left=False)``
    #: switches it off (tests check the links too).

    def __init__(self, ctx: Context, terms: dict[str, PatternTerminal], classes: list[tuple[int, int | None]],
                 tracked: list[str], ptr_of: dict[str, str]) -> None:
        self.ctx, self.terms, self.classes = ctx, terms, classes
        self.tracked: list[str] = []  # the pattern bodies really tracked (none: lenient fallback)
        self.signatures: list[Signature] = [()]
        self.rules: dict[tuple[int, int | None, frozenset[Signature], bool], str] = {}
        self.tail_groups: dict[tuple[int, frozenset[Signature]], list[str]] = {}  # -> what a chain names for it
        self.n_tail_rules = 0
        if not classes:
            return
        bounds = {1}
        for lo, hi in classes:
            bounds.add(self.split(lo)[1])
            if hi is not None:
                bounds.add(self.split(hi + 1)[1])
        cuts = sorted(c for c in bounds if 1 <= c <= CHUNK)
        self.tails = [(a, cuts[i + 1] - 1 if i + 1 < len(cuts) else CHUNK) for i, a in enumerate(cuts)]
        tracking = track(tracked, self.tails, ptr_of, ctx)
        self.vectors, self.steps, self.signatures, self.tracked = (tracking.vectors, tracking.steps,
                                                                   tracking.signatures, tracking.tracked)
        self.modes: dict[str, tuple[int, int]] = {}
        self.also: dict[str, list[Also]] = {}
        quoted = ['"' + body + '"' for body in self.tracked]
        plain = not self.tracked
        # the chunk terminals by vector: (i), (i, j), (tail, i, signature)
        self.open_of: dict[int, str] = {}
        self.mid_of: dict[tuple[int, int], str] = {}
        self.tail_of: dict[tuple[int, int, Signature], str] = {}
        for i, v in enumerate(self.vectors):
            if i in self.steps.opens:
                name = "LOPEN" if plain else f"LOPEN_{i}"
                terms[name] = PatternTerminal(chr(34) + UNIT + "{%d}" % CHUNK)
                self.modes[name] = (0, 1 + i)
                self.also[name] = [Also(rx, 0, (v[p],)) for p, rx in enumerate(quoted)]
                self.open_of[i] = name
            for j in self.steps.mids[i]:
                name = "LMID" if plain else f"LMID_{i}_{j}"
                terms[name] = PatternTerminal(UNIT + "{%d}" % CHUNK)
                self.modes[name] = (1 + i, 1 + j)
                self.also[name] = [Also(rx, v[p], (self.vectors[j][p],))
                                   for p, rx in enumerate(quoted) if v[p] >= 0]
                self.mid_of[i, j] = name
            for x, (a, b) in enumerate(self.tails):
                for sig in self.steps.tails[i, x]:
                    name = f"LTAIL{x}" if plain else f"LTAIL{x}_{i}_{self.signatures.index(sig)}"
                    terms[name] = PatternTerminal(UNIT + "{%d,%d}" % (a, b) + chr(34))
                    self.modes[name] = (1 + i, 0)
                    self.also[name] = [Also(rx, v[p], self._ends(p, sig[p]))
                                       for p, rx in enumerate(quoted) if v[p] >= 0]
                    self.tail_of[x, i, sig] = name
        if plain:
            self.lopen, self.lmid = "LOPEN", "LMID"
        else:
            self.lopen = ctx.add_rule("lopen", list(self.open_of.values()))
            self.lmid = ctx.add_rule("lmid", list(self.mid_of.values()))
        ctx.modes = self.modes
        for name, conditions in self.also.items():
            if conditions:
                ctx.also[name] = conditions

    def _ends(self, p: int, accepting: bool) -> tuple[int, ...]:
        dfa = byte_dfa('"' + self.tracked[p] + '"')
        states = np.flatnonzero((dfa.accept >= 0) == accepting).tolist()
        return tuple(states) if accepting else tuple(states) + (-1,)

    @staticmethod
    def split(length: int) -> tuple[int, int]:
        """(m, t): a string of ``length`` characters is the opening chunk, m middle ones and a tail of t."""
        m = (length - 1) // CHUNK - 1
        return m, length - CHUNK * (1 + m)

    def all_signatures(self) -> frozenset[Signature]:
        return frozenset(self.signatures)

    def tail_group(self, x: int, allowed: frozenset[Signature]) -> list[str]:
        """The tail terminals of piece ``x`` with a signature in ``allowed``, named once through a
        shared rule when there are several (a chain of a long class names it at every link)."""
        key = (x, allowed)
        found = self.tail_groups.get(key)
        if found is None:  # (asked once per link of a chain: a thousand times for maxLength 65535)
            found = [self.tail_of[x, i, sig] for sig in sorted(allowed) for i in range(len(self.vectors))
                     if (x, i, sig) in self.tail_of]
            if len(found) > 1:
                found = [self.ctx.add_rule(f"ltail_{x}_{self.n_tail_rules}", found)]
                self.n_tail_rules += 1
            self.tail_groups[key] = found
        return found

    def rule(self, lo: int, hi: int | None, allowed: frozenset[Signature], ptr: str = "/",
             alone: bool = False) -> str | None:
        """The rule of the strings of ``lo`` to ``hi`` characters (beyond CHUNK; None: no most)
        whose signature is in ``allowed`` (``ptr``: where, for an error).  ``alone``: no other
        long string rule is expected where this one is."""
        allowed = allowed & self.all_signatures()
        if not allowed:
            return None
        alone = alone and self.ctx.tuning.count_long_strings_left
        key = (lo, hi, allowed, alone)
        if key in self.rules:
            return self.rules[key]
        chain = LengthChain.of(len(self.rules), lo, hi, self.tails)
        if allowed == self.all_signatures() and alone:
            rule: str | None = self._counted_chain(chain, allowed)
        elif allowed == self.all_signatures():
            rule = self._linked_chain(chain, allowed)
        else:
            rule = self._tracked_chain(chain, allowed, ptr)
        if rule is not None:
            self.rules[key] = rule
        return rule

    def _counted_chain(self, chain: LengthChain, allowed: frozenset[Signature]) -> str:
        """Every string of the chain's lengths, whatever the chunks, counted left to right: a prefix
        of k middle chunks is one nonterminal, reduced as each chunk comes."""
        c, last = chain.number, chain.last
        prefix = [f"lpre_{c}_{k}" for k in range(last + 1)]
        self.ctx.rules[prefix[0]] = [self.lopen]
        for k in range(1, last + 1):
            self.ctx.rules[prefix[k]] = [f"{prefix[k - 1]} {self.lmid}"] + \
                ([f"{prefix[k]} {self.lmid}"] if k == last and chain.goes_on(k) else [])
        rule = f"lstr_{c}"
        self.ctx.rules[rule] = [f"{prefix[k]} {group}" for k in range(last + 1)
                                for x in chain.tail_pieces(k) for group in self.tail_group(x, allowed)]
        return rule

    def _linked_chain(self, chain: LengthChain, allowed: frozenset[Signature]) -> str:
        """Every string of the chain's lengths, whatever the chunks: links waiting on the rest."""
        c, last = chain.number, chain.last
        names = [f"lstr_{c}_{k}" for k in range(last + 1)]
        for k in range(last + 1):
            alts = [group for x in chain.tail_pieces(k) for group in self.tail_group(x, allowed)]
            if chain.goes_on(k):
                alts.append(f"{self.lmid} {names[min(k + 1, last)]}")
            self.ctx.rules[names[k]] = alts
        rule = f"lstr_{c}"
        self.ctx.rules[rule] = [f"{self.lopen} {names[0]}"]
        return rule

    def _tracked_chain(self, chain: LengthChain, allowed: frozenset[Signature], ptr: str) -> str | None:
        """Some signatures only: the rules follow the vector, so that a chunk is taken only when a
        string with an allowed signature can still come of it (the mask is sound at every chunk)."""
        c, last = chain.number, chain.last
        n = len(self.vectors)
        if (last + 1) * n > MAX_TRACKED_LINKS:
            self.ctx.unsupported(ptr, "maxLength", f"together with a pattern/format whose strings are longer "
                                 f"than {CHUNK} characters ({(last + 1) * n} tracked chain links)")
            return None
        tails = {(k, i): [self.tail_of[x, i, g] for x in chain.tail_pieces(k) for g in sorted(allowed)
                          if (x, i, g) in self.tail_of] for k in range(last + 1) for i in range(n)}
        viable = {key_: bool(names_) for key_, names_ in tails.items()}
        changed = True
        while changed:  # a link is viable when a tail, or a chunk into a viable link, follows
            changed = False
            for (k, i), ok in viable.items():
                if not ok and chain.goes_on(k) and any(viable[min(k + 1, last), j] for j in self.steps.mids[i]):
                    viable[k, i] = changed = True
        roots = [i for i in sorted(self.steps.opens) if viable[0, i]]
        if not roots:
            return None

        def name(k: int, i: int) -> str:
            return f"lstr_{c}_{k}_{i}"

        for (k, i), ok in viable.items():
            if ok:
                alts = list(tails[k, i])
                if chain.goes_on(k):
                    alts += [f"{self.mid_of[i, j]} {name(min(k + 1, last), j)}" for j in self.steps.mids[i]
                             if viable[min(k + 1, last), j]]
                self.ctx.rules[name(k, i)] = alts
        rule = f"lstr_{c}"
        self.ctx.rules[rule] = [f"{self.open_of[i]} {name(0, i)}" for i in roots]
        return rule


@dataclass(frozen=True)
class LengthChain:
    """The strings of ``lo`` to ``hi`` characters (None: no most) as chunks: the opening one, m
    middle ones (``m_lo`` up to ``last``; unbounded: chunk ``last`` repeats) and a tail piece."""

    number: int  # the chain's rules are named after it
    m_lo: int
    t_lo: int
    m_hi: int  # (read only where hi is not None)
    t_hi: int
    hi: int | None
    last: int
    tails: list[tuple[int, int]]

    @classmethod
    def of(cls, number: int, lo: int, hi: int | None, tails: list[tuple[int, int]]) -> LengthChain:
        m_lo, t_lo = LongStrings.split(lo)
        m_hi, t_hi = LongStrings.split(hi) if hi is not None else (0, 0)
        last = m_hi if hi is not None else m_lo + 1  # unbounded: chunk m_lo + 1 on repeats
        return cls(number, m_lo, t_lo, m_hi, t_hi, hi, last, tails)

    def tail_pieces(self, k: int) -> list[int]:
        """The tail pieces that end a string after ``k`` middle chunks."""
        if k < self.m_lo:
            return []
        return [x for x, (a, b) in enumerate(self.tails)
                if (k > self.m_lo or a >= self.t_lo) and (self.hi is None or k < self.m_hi or b <= self.t_hi)]

    def goes_on(self, k: int) -> bool:
        """May a middle chunk follow ``k`` of them?"""
        return self.hi is None or k < self.m_hi
