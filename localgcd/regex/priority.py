"""Terminals read as a backtracking matcher reads them: non-greedy quantifiers, look-around, anchors.

Lark's lexer takes, for a terminal at a position, what Python's ``re.match`` returns there.  For a
regex without lazy quantifiers, look-around or anchors localgcd keeps the terminal's whole regular
language (:mod:`localgcd.regex.terminal`); for one with them, this module builds the DFA of the
lexemes ``re.match`` can return, by a leftmost-first ("Perl/RE2") subset construction over the
Thompson NFA, whose ε-edges are in backtracking order (a lazy loop tries its exit first):

* a DFA state is an *ordered* list of NFA threads, highest priority first;
* a thread that reaches the end of the pattern (the lexeme may end here) drops every thread after
  it: ``re.match`` never returns a lower-priority match.  Threads before it live on: a longer match
  they may still make wins.  The DFA accepts where such a thread is in the list.

So ``".*?"`` accepts at the first closing quote and has no way out of it; the lexer's maximal munch
(one byte of lookahead, no backing up) then ends the lexeme exactly where ``re.match`` does, and
where ``re.match`` would back up further the lexer stops, as it does for any terminal.

Look-around and anchors are *watches*.  A look-ahead starts, where a thread passes it, a small
automaton over the bytes that follow; the thread carries it until it passes (the thread lives on)
or fails (the thread dies).  A thread at the pattern's end may carry a watch over the byte after the
lexeme, the byte the lexing transducer already reads: the state then accepts *before some bytes
only* (:attr:`PriorityDFA.forbidden`), or a watch that the next byte does not settle is an error.
A look-behind is a test of the bytes read so far, which every thread shares: the state carries, for
each look-behind, the state of an automaton of ``(any byte)* X``.  One that would look before the
lexeme's first character depends on the text before the lexeme: at the text's start there is none
(no look-behind finds its characters: :func:`at_text_start` marks a pattern read there), elsewhere
some character precedes the lexeme, which decides only "no character before" (``^`` without
``re.M``: lark's ``match(text, pos)`` meets it at position 0 alone, so elsewhere it fails); any
other is an error.  Anchors are rewritten into look-around first (``$`` is a look-ahead, ``\\b`` a
pair of them, ``^`` a look-behind of "no character").
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from localgcd.regex.charset import CharSet, category, utf8_sequences
from localgcd.regex.dfa import DEAD_STATE, DFA, determinize, minimize_mapped
from localgcd.regex.nfa import NFA, Encoding, ThompsonBuilder
from localgcd.regex.parse_memo import packed_backtracking
from localgcd.regex.python_syntax import REGEX_MODULE_PREFIX, packed_python_regex, parse_python_regex
from localgcd.regex.syntax import (Alt, Anchor, Chars, Concat, Look, Node, Repeat, UnsupportedRegex,
                                   has_backtracking_semantics, nodes_of)

_PASS, _FAIL = -2, -1  # a watch's verdicts, in its table beside its live states
_MAX_STATES = 20_000  # a priority construction past this many states is refused, not waited for


@dataclass(frozen=True)
class Bytes:
    """One byte in ``lo..hi`` (zero-width tests on the bytes after a lexeme look at bytes, not
    characters: ``\\Z`` is "no byte follows")."""

    lo: int
    hi: int


@dataclass(frozen=True)
class PriorityDFA:
    """A terminal's DFA (accept label 0 where ``re.match``'s lexeme may end) and, per state, the
    bytes before which it may not end there (a look-ahead over the byte after the lexeme)."""

    dfa: DFA
    forbidden: np.ndarray  # bool [n_states, 256]: accepting, but not before this byte
    backs_up: str | None = None  # where re.match backs up past the byte after a lexeme: how (else None)
    #: bool [n_states]: accepting before some bytes, but not at the end of the text (a look-ahead
    #: that fails there: ``\\$(?=[^{])``)
    end_refused: np.ndarray | None = None

    @property
    def conditional(self) -> bool:
        """Whether some accepting state forbids some byte or the text's end."""
        return bool(self.forbidden.any()) or (self.end_refused is not None and bool(self.end_refused.any()))


@lru_cache(maxsize=4096)
def needs_priority(pattern: str) -> bool:
    """Whether ``pattern`` has a lazy quantifier, a look-around or an anchor (its lexeme is then
    what a backtracking matcher returns, not its longest match).  Memoized: each of a grammar's
    regex terminals asks it three times (the lexer's product, its automaton, whether it backs up),
    and it is read off the packed parse (no tree made: Go's operators each end in ``_SP``'s)."""
    return packed_backtracking(packed_python_regex(pattern))


def priority_dfa(pattern: str) -> PriorityDFA:
    """The DFA of the lexemes ``re.match(pattern, …)`` returns (see the module docstring), for a
    lexeme after the text's first character (or at the text's start, for a pattern marked by
    :func:`at_text_start`).  Raises :class:`UnsupportedRegex` naming what it cannot make exact;
    where ``re.match`` may back up further than the byte after a lexeme, ``backs_up`` says how (a
    lexer that does not back up refuses the terminal with it, :mod:`localgcd.lexer.pending` builds
    the lexer that does)."""
    found = lexemes_of(pattern)
    if found is None:
        raise UnsupportedRegex("the terminal matches nothing")
    return found


@lru_cache(maxsize=1024)
def lexemes_of(pattern: str) -> PriorityDFA | None:
    """:func:`priority_dfa`, None where the pattern matches nothing there (``^x`` after the text's
    first character)."""
    text_start = _TEXT_START in pattern[:len(REGEX_MODULE_PREFIX) + len(_TEXT_START)]
    return _Construction(_rewrite_anchors(parse_python_regex(pattern)), text_start=text_start).run()


#: a comment (``re`` reads it as nothing) that marks a pattern read at the text's start
_TEXT_START = "(?#localgcd: at the text's start)"


def at_text_start(pattern: str) -> str:
    """``pattern`` marked as read for a lexeme at the text's start (position 0: no character before
    it), which :func:`priority_dfa` tells from the pattern read elsewhere."""
    if pattern.startswith(REGEX_MODULE_PREFIX):
        return REGEX_MODULE_PREFIX + _TEXT_START + pattern[len(REGEX_MODULE_PREFIX):]
    return _TEXT_START + pattern


@lru_cache(maxsize=4096)
def reads_before_lexeme(pattern: str) -> bool:
    """Whether ``pattern`` has a look-behind or an anchor that may read before its lexeme (so its
    lexemes at the text's start may differ from those elsewhere)."""
    return any(isinstance(n, Look) and not n.ahead or isinstance(n, Anchor) and "start" in n.kind
               or isinstance(n, Anchor) and "word" in n.kind for n in nodes_of(parse_python_regex(pattern)))


def priority_symbol_dfa(node: Node, encoding: Encoding, n_symbols: int, look_behind: bool = False) -> DFA:
    """The DFA over an alphabet of ``n_symbols`` symbols (``encoding`` spells a character set in
    them: character classes) of the lexemes ``re.match`` returns for ``node``, a regex without
    look-ahead or anchors: alternation order and lazy quantifiers (see the module docstring).  Its
    longest match (the last accepting state before it dies, backing up as far as needed) is
    ``re.match``'s lexeme.  ``look_behind``: a look-behind is read too, as a test of the characters
    of the lexeme read so far (one symbol is one character), where every thread that meets it has
    read at least its width (``_.*(?<!\\\\)_``); one that may look before the lexeme's first
    character -- which sees the text before the lexeme -- is an :class:`UnsupportedRegex`, as is a
    look-ahead, an anchor, or a look-behind without ``look_behind``."""
    if any(isinstance(n, Anchor) or isinstance(n, Look) and (n.ahead or not look_behind) for n in nodes_of(node)):
        raise UnsupportedRegex("unsupported construct: look-around or anchor over character classes")
    if any(isinstance(n, Look) and has_backtracking_semantics(n.item) for n in nodes_of(node)):
        raise UnsupportedRegex("unsupported construct: look-around, anchor or lazy quantifier inside a look-around")
    found = _Construction(node, encoding, n_symbols).run()
    if found is None:
        raise UnsupportedRegex("the terminal matches nothing")
    return found.dfa


def backs_up(pattern: str) -> str | None:
    """How ``re.match(pattern, …)`` backs up further than the byte after its lexeme (None: never)."""
    return priority_dfa(pattern).backs_up if needs_priority(pattern) else None


# --------------------------------------------------------------------------
# Anchors → look-around


_WORD = {"": r"\w", "_ascii": r"(?a)\w"}
_ANY_BYTE = Bytes(0, 0xFF)
_NOT_NEWLINE = Alt((Bytes(0, 9), Bytes(11, 0xFF)))


def _rewrite_anchors(node: Node) -> Node:
    """``node`` with every anchor written as look-around (``^``: no character before, which only
    the text's first lexeme meets at its start)."""
    if isinstance(node, Anchor):
        return _anchor_as_looks(node.kind)
    if isinstance(node, Concat):
        return Concat(tuple(_rewrite_anchors(item) for item in node.items))
    if isinstance(node, Alt):
        return Alt(tuple(_rewrite_anchors(option) for option in node.options))
    if isinstance(node, Repeat):
        return Repeat(_rewrite_anchors(node.item), node.lo, node.hi, node.greedy)
    if isinstance(node, Look):
        if has_backtracking_semantics(node.item):
            raise UnsupportedRegex("unsupported construct: look-around, anchor or lazy quantifier "
                                   "inside a look-around")
        return node
    return node


def _anchor_as_looks(kind: str) -> Node:
    no_character_before = Look(Chars(CharSet.everything()), ahead=False, negate=True)
    if kind == "start":  # position 0 of the text alone (lark's match(text, pos))
        return no_character_before
    if kind == "line_start":  # after "\n", or at the text's start
        return Alt((Look(Chars(CharSet.of(10)), ahead=False, negate=False), no_character_before))
    if kind == "end":
        return Look(_ANY_BYTE, ahead=True, negate=True)
    if kind == "line_end":
        return Look(_NOT_NEWLINE, ahead=True, negate=True)
    if kind == "end_or_final_newline":  # no byte follows, or one "\n" and then none
        return Look(Alt((_NOT_NEWLINE, Concat((Chars(CharSet.of(10)), _ANY_BYTE)))), ahead=True, negate=True)
    word = Chars(category(_WORD["_ascii" if kind.endswith("_ascii") else ""]))
    behind, not_behind = Look(word, False, False), Look(word, False, True)
    ahead, not_ahead = Look(word, True, False), Look(word, True, True)
    if kind.startswith("word_boundary"):
        return Alt((Concat((behind, not_ahead)), Concat((not_behind, ahead))))
    if kind.startswith("not_word_boundary"):
        return Alt((Concat((behind, ahead)), Concat((not_behind, not_ahead))))
    raise UnsupportedRegex(f"unsupported construct: anchor {kind}")


# --------------------------------------------------------------------------
# The NFA with assertion states


class _PriorityBuilder(ThompsonBuilder):
    """The Thompson NFA with lazy loops (exit first) and an ε-state per look-around."""

    backtracking = True

    def __init__(self, nfa: NFA, encoding: Encoding = utf8_sequences) -> None:
        super().__init__(nfa, encoding)
        self.looks: dict[int, Look] = {}  # assertion state -> its look-around

    def node(self, node):  # type: ignore[override]
        if isinstance(node, Bytes):
            start, end = self.nfa.new_state(), self.nfa.new_state()
            self.nfa.edges[start].append((node.lo, node.hi, end))
            return start, end
        return super().node(node)

    def assertion(self, node: Look | Anchor) -> tuple[int, int]:
        assert isinstance(node, Look)  # anchors are rewritten first
        start, end = self.nfa.new_state(), self.nfa.new_state()
        self.nfa.eps[start].append(end)
        self.looks[start] = node
        return start, end


def _language_dfa(node: Node, prefix_any: bool = False, encoding: Encoding = utf8_sequences,
                  n_symbols: int = 256) -> DFA:
    """The minimal DFA of ``node``'s language (``prefix_any``: of ``(any symbol)* node``), over bytes
    or the ``n_symbols`` symbols of ``encoding``."""
    nfa = NFA()
    start, end = _PriorityBuilder(nfa, encoding).node(node)
    nfa.accept[end] = 0
    if prefix_any:
        loop = nfa.new_state()
        nfa.edges[loop].append((0, n_symbols - 1, loop))
        nfa.eps[loop].append(start)
        start = loop
    return determinize(nfa, [start], [0], n_symbols=n_symbols)


@dataclass(frozen=True)
class _Watch:
    """A look-ahead's automaton: ``table[s, b]`` the next state, ``_PASS`` or ``_FAIL``;
    ``at_end[s]`` the verdict when no byte follows; ``first`` the verdict or state at its start;
    ``after_lead[s, b]`` the verdict after the first byte ``b`` past a lexeme, from state ``s``,
    where valid UTF-8 text settles it (see :meth:`settled_after`), else ``table[s, b]``."""

    table: np.ndarray
    at_end: np.ndarray
    first: int
    after_lead: np.ndarray

    @classmethod
    def of(cls, look: Look) -> "_Watch":
        dfa = _language_dfa(look.item)
        found, missing = (_FAIL, _PASS) if look.negate else (_PASS, _FAIL)
        accepting = dfa.accept >= 0
        table = np.where(dfa.transitions == DEAD_STATE, missing, dfa.transitions).astype(np.int64)
        hit = (dfa.transitions >= 0) & accepting[np.maximum(dfa.transitions, 0)]
        table[hit] = found
        at_end = np.full(dfa.n_states, missing == _PASS)
        return cls(table, at_end, found if accepting[0] else 0, _settled_after_lead(table, at_end))


_VERDICT_BITS = {_PASS: 1, _FAIL: 2}  # a set of verdicts as bits


@lru_cache(maxsize=1)
def _utf8_text() -> DFA:
    """The minimal DFA of valid UTF-8 text (any code points but surrogates, as the lexer's
    terminals spell characters): state 0 is between characters, the others inside one."""
    return _language_dfa(Repeat(Chars(CharSet.everything()), 0, None))


def _settled_after_lead(table: np.ndarray, at_end: np.ndarray) -> np.ndarray:
    """``table`` with each live next state replaced by the watch's verdict where every valid UTF-8
    text after that byte gives the same one (the lexeme ends between characters, so the byte after
    it is a character's first: the rest of that character and all text after it is any valid UTF-8).

    The rule: a look-ahead is settled by the first byte ``b`` past the lexeme iff the verdicts it
    can still reach, over the texts that valid UTF-8 lets follow ``b``, are one.  For a look-ahead
    of one character class ``C`` (``(?=C)``, ``(?!C)``), that is: the code points whose UTF-8 form
    starts with ``b`` all lie in ``C`` or all outside it.  Every lead byte of a multi-byte form
    covers only non-ASCII code points, so a class whose non-ASCII part is all or nothing of each
    lead byte's range (``[^{]``, ``[^>]``, ``[a-z]``, ``\\W`` with ``re.ASCII``...) is settled at one byte.
    Computed as the least fixed point of ``reach[s, u]`` (the verdicts watch state ``s`` can reach
    with the UTF-8 automaton in state ``u``) over their product."""
    utf8 = _utf8_text()
    n_watch, n_utf8 = table.shape[0], utf8.n_states
    live_byte = utf8.transitions >= 0  # [u, b]
    reach = np.zeros((n_watch, n_utf8), dtype=np.int8)
    reach[:, 0] = np.where(at_end, _VERDICT_BITS[_PASS], _VERDICT_BITS[_FAIL])  # the text may end between characters
    direct = np.zeros((n_watch, 256), dtype=np.int8)
    for verdict, bit in _VERDICT_BITS.items():
        direct[table == verdict] = bit
    nxt_watch = np.maximum(table, 0)
    nxt_utf8 = np.maximum(utf8.transitions, 0)
    while True:
        grown = reach.copy()
        for u in range(n_utf8):
            bytes_ = np.flatnonzero(live_byte[u])
            via = np.where(table[:, bytes_] >= 0, reach[nxt_watch[:, bytes_], nxt_utf8[u, bytes_]], direct[:, bytes_])
            grown[:, u] |= np.bitwise_or.reduce(via, axis=1) if bytes_.size else 0
        if (grown == reach).all():
            break
        reach = grown
    settled = table.copy()
    first_utf8 = nxt_utf8[0]  # the UTF-8 state after a character's first byte
    after = np.where(table >= 0, reach[nxt_watch, first_utf8[None, :]], 0)
    settled[(table >= 0) & (after == _VERDICT_BITS[_PASS])] = _PASS
    settled[(table >= 0) & (after == _VERDICT_BITS[_FAIL])] = _FAIL
    # a byte that starts no character (a continuation byte, 0xC0, 0xF5...) never follows a lexeme in
    # valid text, and no terminal reads on with it: passed (the lexeme is not refused before it)
    settled[:, ~live_byte[0]] = _PASS
    return settled


@dataclass(frozen=True)
class _Behind:
    """A look-behind: the automaton of ``(any byte)* X`` over the bytes read, and X's width."""

    dfa: DFA
    width: int
    negate: bool
    any_character: bool  # X is any one character (``^``: "no character before")

    @classmethod
    def of(cls, look: Look, encoding: Encoding = utf8_sequences, n_symbols: int = 256) -> "_Behind":
        """``look`` over bytes, or over the ``n_symbols`` symbols of ``encoding`` (characters)."""
        width = _fixed_width(look.item)
        if width is None:  # pragma: no cover - Python's re refuses it first
            raise UnsupportedRegex("unsupported construct: look-behind of variable width")
        any_character = isinstance(look.item, Chars) and look.item.chars == CharSet.everything()
        return cls(_language_dfa(look.item, True, encoding, n_symbols), width, look.negate, any_character)


def _fixed_width(node: Node) -> int | None:
    """The number of characters every string of ``node`` has (None: not one number)."""
    if isinstance(node, (Chars, Bytes)):
        return 1
    if isinstance(node, Concat):
        widths = [_fixed_width(item) for item in node.items]
        return None if None in widths else sum(widths)  # type: ignore[arg-type]
    if isinstance(node, Alt):
        widths = {_fixed_width(option) for option in node.options}
        return widths.pop() if len(widths) == 1 else None
    if isinstance(node, Repeat) and node.lo == node.hi:
        width = _fixed_width(node.item)
        return None if width is None else width * node.lo
    if isinstance(node, Look):
        return 0
    return None


# --------------------------------------------------------------------------
# The construction

Thread = tuple[int, tuple[tuple[int, int], ...]]  # (NFA state, pending watches (watch, state))
State = tuple[tuple[int, ...], int, tuple[Thread, ...]]  # (look-behind states, characters read, threads)


class _Construction:
    """The subset construction over bytes (``encoding``: UTF-8) or over another alphabet of
    ``n_symbols`` symbols (character classes: a regex without look-ahead or anchors,
    :func:`priority_symbol_dfa`)."""

    def __init__(self, root: Node, encoding: Encoding = utf8_sequences, n_symbols: int = 256,
                 text_start: bool = False) -> None:
        self.text_start = text_start  # the lexeme is at the text's start: nothing before it
        self.over_bytes = encoding is utf8_sequences  # (else each symbol is a class of characters)
        self.nfa = NFA()
        self.n_symbols = n_symbols
        builder = _PriorityBuilder(self.nfa, encoding)
        self.start, self.final = builder.node(root)
        self.watches: list[_Watch] = []
        self.behinds: list[_Behind] = []
        self.look_index: dict[int, int] = {}  # assertion state -> index into watches / behinds
        for state, look in builder.looks.items():
            kinds = self.watches if look.ahead else self.behinds
            self.look_index[state] = len(kinds)
            kinds.append(_Watch.of(look) if look.ahead else _Behind.of(look, encoding, n_symbols))
        self.looks = builder.looks
        self.max_width = max((b.width for b in self.behinds), default=0)

    # -- threads ---------------------------------------------------------------

    def closure(self, seeds: list[Thread], behind: tuple[int, ...], read: int) -> tuple[Thread, ...]:
        """The ordered threads ``seeds`` lead to by ε-edges: each a thread that reads a byte next or
        is at the pattern's end.  An end reached with no watch pending cuts every later thread."""
        out: list[Thread] = []
        seen: set[Thread] = set()
        stack = list(reversed(seeds))
        nfa = self.nfa
        while stack:
            thread = stack.pop()
            if thread in seen:
                continue
            seen.add(thread)
            state, pending = thread
            look = self.looks.get(state)
            if look is not None:
                index = self.look_index[state]
                if look.ahead:
                    first = self.watches[index].first
                    if first == _FAIL:
                        continue
                    if first != _PASS:
                        pending = tuple(sorted(set(pending) | {(index, first)}))
                else:
                    test = self.behinds[index]
                    if read < test.width and not self.text_start and not test.any_character:
                        raise UnsupportedRegex("unsupported construct: look-behind (or (?m)^, \\b) that looks "
                                               "before the lexeme's first character (the character before the "
                                               "lexeme decides, which the lexer does not carry)")
                    if read < test.width:  # at the text's start none is there; elsewhere some character is
                        found = not self.text_start
                    else:
                        found = bool(test.dfa.accept[behind[index]] >= 0) if behind[index] >= 0 else False
                    if found == test.negate:
                        continue
            elif state == self.final:
                out.append((state, pending))
                if not pending:
                    break  # re.match takes this lexeme before any lower-priority one
                continue
            elif nfa.edges[state]:
                out.append((state, pending))
            stack.extend((target, pending) for target in reversed(nfa.eps[state]))
        return tuple(out)

    def advance_watches(self, pending: tuple[tuple[int, int], ...], byte: int, past_lexeme: bool = False
                        ) -> tuple[tuple[int, int], ...] | None:
        """The watches after ``byte`` (None: one failed); ``past_lexeme``: ``byte`` is the first
        past the lexeme, where valid UTF-8 text may settle a watch (:func:`_settled_after_lead`)."""
        kept = []
        for index, state in pending:
            watch = self.watches[index]
            nxt = int((watch.after_lead if past_lexeme else watch.table)[state, byte])
            if nxt == _FAIL:
                return None
            if nxt != _PASS:
                kept.append((index, nxt))
        return tuple(kept)

    def ends_before(self, threads: tuple[Thread, ...], byte: int) -> tuple[bool, list[Thread]]:
        """Whether the lexeme may end before ``byte``, and the threads that read ``byte`` on (every
        one before the first end whose watches ``byte`` passes), each with its watches advanced."""
        going: list[Thread] = []
        for state, pending in threads:
            if state == self.final:
                advanced = self.advance_watches(pending, byte, past_lexeme=self.over_bytes)
                if advanced is None:
                    continue
                if advanced:
                    raise UnsupportedRegex("unsupported construct: look-ahead (or $, \\b) reaching more "
                                           "than one byte past the lexeme")
                return True, going
            advanced = self.advance_watches(pending, byte)
            if advanced is None:
                continue
            going.append((state, advanced))
        return False, going

    def ends_at_text_end(self, threads: tuple[Thread, ...]) -> bool:
        return any(state == self.final and all(self.watches[i].at_end[s] for i, s in pending)
                   for state, pending in threads)

    # -- subset construction ---------------------------------------------------

    def byte_classes(self) -> np.ndarray:
        cuts = np.zeros(self.n_symbols + 1, dtype=bool)
        # character starts (look-behind widths count characters)
        cuts[[0, 0x80, 0xC0] if self.over_bytes else [0]] = True
        for edges in self.nfa.edges:
            for lo, hi, _ in edges:
                cuts[lo] = cuts[hi + 1] = True
        tables = [w.table for w in self.watches] + [w.after_lead for w in self.watches] + \
            [b.dfa.transitions for b in self.behinds]
        for table in tables:
            cuts[1:table.shape[1]] |= (table[:, 1:] != table[:, :-1]).any(axis=0)
        return (np.cumsum(cuts[:self.n_symbols]) - 1).astype(np.int32)

    def run(self) -> PriorityDFA | None:
        class_of = self.byte_classes()
        n_classes = int(class_of[-1]) + 1
        representatives = np.searchsorted(class_of, np.arange(n_classes))
        behind0 = tuple(0 for _ in self.behinds)
        start: State = (behind0, 0, self.closure([(self.start, ())], behind0, 0))
        index = {start: 0}
        states = [start]
        rows: list[list[int]] = []
        accepting: list[bool] = []
        end_refused: list[bool] = []
        forbidden: list[list[bool]] = []
        for behind, read, threads in states:  # grows while iterating
            if len(states) > _MAX_STATES:
                raise UnsupportedRegex(f"the terminal's priority automaton passes {_MAX_STATES} states")
            row, allowed = [DEAD_STATE] * n_classes, []
            has_end = any(state == self.final for state, _ in threads)
            for c, byte in enumerate(representatives.tolist()):
                ends, going = self.ends_before(threads, byte)
                allowed.append(ends)
                seeds = [(target, pending) for state, pending in going
                         for lo, hi, target in self.nfa.edges[state] if lo <= byte <= hi]
                if not seeds:
                    continue
                new_behind = tuple(int(b.dfa.transitions[s, byte]) if s >= 0 else DEAD_STATE
                                   for b, s in zip(self.behinds, behind))
                starts_character = not self.over_bytes or not 0x80 <= byte < 0xC0  # (a symbol: a character)
                new_read = min(read + starts_character, self.max_width)
                nxt_threads = self.closure(seeds, new_behind, new_read)
                if not nxt_threads:
                    continue
                nxt = (new_behind, new_read, nxt_threads)
                if nxt not in index:
                    index[nxt] = len(states)
                    states.append(nxt)
                row[c] = index[nxt]
            rows.append(row)
            at_end = self.ends_at_text_end(threads)
            ends = at_end or (has_end and any(allowed))  # the lexeme may end here (before some byte)
            accepting.append(ends)
            end_refused.append(ends and not at_end)
            forbidden.append([ends and not ok for ok in allowed])
        table = np.asarray(rows, dtype=np.int32).reshape(len(states), n_classes)
        forbid = np.asarray(forbidden, dtype=bool).reshape(len(states), n_classes)
        return _finish(table, np.asarray(accepting, dtype=bool), forbid, class_of, self.over_bytes,
                       np.asarray(end_refused, dtype=bool))


def _finish(table: np.ndarray, accepting: np.ndarray, forbidden: np.ndarray, class_of: np.ndarray,
            over_bytes: bool, end_refused: np.ndarray) -> PriorityDFA | None:
    """Trim (states that reach no accepting one go), minimize (told apart by their forbidden bytes
    and the text's end too) and write out over bytes (or the symbols of ``class_of``; where re.match
    backs up is then not asked: the caller backs up as far as it needs)."""
    live = accepting.copy()
    while True:
        grown = live | (np.where(table >= 0, live[np.maximum(table, 0)], False)).any(axis=1)
        if (grown == live).all():
            break
        live = grown
    if not live[0]:
        return None
    keep = np.flatnonzero(live)
    new_id = np.full(table.shape[0] + 1, DEAD_STATE, dtype=np.int64)
    new_id[keep] = np.arange(keep.size)
    table = new_id[table[keep]].astype(np.int32)  # index -1 (dead) reads new_id[-1] = dead
    accepting, forbidden, end_refused = accepting[keep], forbidden[keep], end_refused[keep]
    _, label = np.unique(np.concatenate([accepting[:, None], end_refused[:, None], forbidden], axis=1), axis=0,
                         return_inverse=True)
    label = label.reshape(-1).astype(np.int32)
    label[~accepting] = -1
    table, _label, block = minimize_mapped(table, label)
    first = np.zeros(int(block.max()) + 1, dtype=np.int64)
    first[block[::-1]] = np.arange(block.size)[::-1]
    accept = np.where(accepting[first], 0, -1).astype(np.int32)
    dfa = DFA(transitions=np.ascontiguousarray(table[:, class_of]), accept=accept)
    forbidden = np.ascontiguousarray(forbidden[first][:, class_of])
    end_refused = end_refused[first]
    if not over_bytes and end_refused.any():  # (a look-ahead: refused over character classes first)
        raise UnsupportedRegex("unsupported construct: a look-ahead past the lexeme over character classes")
    return PriorityDFA(dfa, forbidden, _backing_up(dfa, forbidden, end_refused) if over_bytes else None,
                       end_refused if end_refused.any() else None)


def _backing_up(dfa: DFA, forbidden: np.ndarray, end_refused: np.ndarray) -> str | None:
    """Where ``re.match`` may end a lexeme and then read on into text where it backs up to it (the
    longer match fails: a state that does not accept, refuses to end before a byte it cannot read
    on with, or refuses the text's end): more than the one byte the lexing transducer looks at.  A
    shortest witness, or None."""
    accepting = dfa.accept >= 0
    live = dfa.transitions >= 0
    bad = ~accepting | (forbidden & ~live).any(axis=1) | end_refused
    may_end = accepting[:, None] & ~forbidden & live
    # states that reach a bad one (backwards over every transition)
    reaches_bad = bad.copy()
    while True:
        grown = reaches_bad | (live & reaches_bad[np.maximum(dfa.transitions, 0)]).any(axis=1)
        if (grown == reaches_bad).all():
            break
        reaches_bad = grown
    backs_up = may_end & reaches_bad[np.maximum(dfa.transitions, 0)]
    if not backs_up.any():
        return None
    path: dict[int, bytes] = {0: b""}  # a shortest witness: the bytes to such a state, the byte after
    order = [0]
    for state in order:  # grows while iterating
        if backs_up[state].any():
            direct = backs_up[state] & bad[np.maximum(dfa.transitions[state], 0)]
            byte = int(np.flatnonzero(direct if direct.any() else backs_up[state])[0])
            return (f"re.match may end a lexeme at {_shown(path[state])} and read on past {_shown(bytes([byte]))} "
                    "into text where it backs up to it: more than the one byte the lexer looks at")
        for byte in range(256):
            nxt = int(dfa.transitions[state, byte])
            if nxt >= 0 and nxt not in path:
                path[nxt] = path[state] + bytes([byte])
                order.append(nxt)
    return None  # (not reached: a state that backs up is reachable)


def _shown(data: bytes) -> str:
    """Bytes as an escaped Python literal (one line)."""
    return ascii(data.decode("utf-8", "backslashreplace"))
