"""A grammar's terminals → one minimal byte DFA (the lexer automaton).

Terminals come ranked (see :mod:`localgcd.grammar.terminal_rank`).

Tie rule (documented in README): the lexer takes the longest lexeme (maximal
munch).  When several terminals match that very lexeme, the winner is the one
with the highest priority; then a string literal (``"if"``) beats a regexp
(``NAME``); then lark's own order (longer maximum width, longer pattern source,
then name).  Within one priority this is what Lark's basic lexer does for
keywords; across priorities it is what priority means.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from localgcd.arrays import sorted_unique
from localgcd.budget import BudgetMeter, unbounded
from localgcd.compile_warnings import grammar_warning
from localgcd.errors import CompileBudgetError, GrammarError
from localgcd.lexer.scan_order import lark_scan_order, read_in_lark_order
from localgcd.grammar.terminals import Terminal
from localgcd.regex.dfa import DFA, relation, trim
from localgcd.regex.nfa import UnsupportedRegex, literal_bytes
from localgcd.lexer.adjacency import LAYOUT_BLANKS, Adjacency
from localgcd.lexer.fallbacks import Fallback, TooManyFallbackStates, fallback_terminals, fallback_witnesses
from localgcd.lexer.first_match import first_match_backing
from localgcd.lexer.pending import (BackUpRules, IndenterScreen, PendingRefused, ShortestTexts, backing_terminals,
                                    backing_up_lexer, backing_up_tables, refusal)
from localgcd.lexer.product import TerminalUnsupported, product_dfa
from localgcd.lexer.text_start import lexer_modes, only_at_text_start
from localgcd.lexer.transducer import LexingTransducer
from localgcd.regex.priority import at_text_start, backs_up
from localgcd.regex.terminal import terminal_dfa
from localgcd.tuning import Tuning


def build_lexer(terminals: list[Terminal], source: str = "<grammar>", text: str = "",
                meter: BudgetMeter | None = None, tuning: Tuning = Tuning(), *,
                unproduced_hint: str = "", follows: Adjacency | None = None,
                lenient: bool = False) -> LexingTransducer:
    """The lexing transducer of ``terminals``: :func:`build_lexer_dfa`'s automaton read with one
    byte of lookahead, and where a terminal's ``re.match`` backs up further (SynCode's Python
    ``_NL``), the tables of :mod:`localgcd.lexer.pending` that back up as it does.

    ``follows`` (a Lark grammar's: what the parser may take after a terminal, an
    over-approximation): where lark's lexer backs up to a terminal that
    these tables do not back up for, and the parser could take what lark lexes then, the grammar
    is refused naming that terminal (:mod:`localgcd.lexer.fallbacks`); None: not checked (the
    longest-match lexers of GBNF, JSON Schema and regex mean one byte past a lexeme).  ``lenient``: such
    a terminal (or a fallback check too big to decide) is a :class:`GrammarWarning` instead, and the
    lexer refuses the texts where lark backs up there."""
    meter = meter if meter is not None else unbounded()
    dfa = build_lexer_dfa(terminals, source, text, meter, tuning, backing_up=True, unproduced_hint=unproduced_hint)
    # the transducer's tables: next state and emitted terminal per byte, producible terminals
    meter.table(dfa.n_states, 6 * 256 + len(terminals), 1, "the lexing transducer")
    emit_forbidden = dfa.emit_forbidden
    modes = lexer_modes(terminals)  # (memoized automata: the modes build_lexer_dfa read)
    lexer = LexingTransducer.from_dfa(dfa, len(terminals), modes.next_modes, take_table=True)
    first_match = read_in_lark_order(terminals)
    backing = backing_terminals(modes.regexes)
    # (a greedy pattern whose re.match words back up, read so by lark's first match alone: where
    # backing up as it does is not exact, the lexer does not back up there, as between terminals —
    # a text that needs it is refused, README "Lexing semantics" — rather than the grammar)
    greedy = first_match_backing(modes.regexes) - backing if first_match else set()
    backing |= greedy
    plain = lexer
    refused: dict[int, GrammarError] = {}  # a backing terminal whose pending states are not exact: why
    while backing:
        try:
            lexer = backing_up_lexer(lexer, backing, emit_forbidden)
            break
        except PendingRefused as exc:
            terminal = terminals[exc.terminal]
            error = _error(terminal, f"{terminal.describe()}: {backs_up(modes.regexes[exc.terminal])}, and backing up "
                           f"as it does is not exact here: {exc}", source, text)
            # (a Lark grammar's: refused below only where the parser could take what it backs up to)
            if exc.terminal in greedy or (follows is not None and first_match):
                backing = backing - {exc.terminal}
                if exc.terminal not in greedy:
                    refused[exc.terminal] = error
                continue
            raise error from None
    if follows is not None and first_match:
        try:
            unmet = fallback_terminals(plain, backing, follows, emit_forbidden)
        except TooManyFallbackStates as exc:
            if refused:
                raise next(iter(refused.values())) from None
            _not_decided(exc, source, lenient)
            unmet = set()
        lexer, backing = _back_up_where_covered(plain, lexer, backing, emit_forbidden, follows, terminals, unmet)
        _refuse_unmet_fallbacks(plain, unmet - backing, emit_forbidden, follows, terminals, source, text, refused,
                                lenient)
    if emit_forbidden is not None and any(t.fork is not None for t in terminals):  # (the forking engine reads
        kept = np.zeros((lexer.n_states, 256), dtype=bool)  # it; pending states, after the plain ones: none)
        kept[:emit_forbidden.shape[0]] = emit_forbidden
        lexer = dataclasses.replace(lexer, emit_forbidden=kept)
    return lexer


def _back_up_where_covered(plain: LexingTransducer, lexer: LexingTransducer, backing: set[int],
                           emit_forbidden: np.ndarray | None, follows: Adjacency, terminals: list[Terminal],
                           unmet: set[int]) -> tuple[LexingTransducer, set[int]]:
    """``lexer`` backing up, as lark's lexer does, also to the terminals lark falls back to where the
    parser could take what it lexes then, wherever the pending states are exact for them (the longer
    attempt can still become a terminal that covers the one backed up to: :meth:`Adjacency.covers`);
    (the lexer, the terminals it backs up for).  A terminal whose pending states are not exact, or
    too many, is left out (the fallback check then names it); so is one lexed before a fork (the
    parser's state picks the mode after it, and aliases are not read there), and, with lark's
    Indenter, one of the terminals it reads or whose window reads what it reads (:class:`IndenterScreen`)."""
    wanted = unmet - {i for i, t in enumerate(terminals) if t.fork is not None}
    if follows.layout is not None:
        wanted -= set(np.flatnonzero(follows.layout).tolist())
    if follows.moves is None or not wanted:
        return lexer, backing
    rules = BackUpRules.of(plain, backing, emit_forbidden, follows, covering=wanted)
    if follows.layout is not None:
        blanks = np.zeros(256, dtype=bool)
        blanks[list(LAYOUT_BLANKS)] = True
        rules = dataclasses.replace(rules, screen=IndenterScreen(frozenset(wanted), blanks, follows.layout))
    texts = ShortestTexts(plain)  # (each alone first, explored without writing tables: a refusal names its terminal)
    taken = {term for term in sorted(wanted)
             if refusal(plain, dataclasses.replace(rules, backing=backing | {term}), _COVERED_PENDING, texts) is None}
    if not taken:
        return lexer, backing
    try:
        made = backing_up_tables(plain, dataclasses.replace(rules, backing=backing | taken),
                                 limit=len(taken) * _COVERED_PENDING)
    except PendingRefused:
        return lexer, backing
    if made.alias_of is not None and any(terminals[t].fork is not None for t in made.alias_of.tolist()):
        return lexer, backing  # (a fork terminal's lexeme ends inside a window: aliases are not read there)
    return made, backing | taken


#: pending states explored for the terminals lark falls back to (a window over a string's body, where
#: the restart lexing would hold its words, is refused long before)
_COVERED_PENDING = 5_000


def _refuse_unmet_fallbacks(plain: LexingTransducer, unmet: set[int], emit_forbidden: np.ndarray | None,
                            follows: Adjacency, terminals: list[Terminal], source: str, text: str,
                            refused: dict[int, GrammarError], lenient: bool = False) -> None:
    """A :class:`GrammarError` at the first terminal of ``unmet`` — lark's lexer backs up to it
    where the pending states do not, and the parser could take what lark lexes then (a quietly
    different language otherwise: README, "Lexing semantics") —, naming the others and the shortest
    text where lark backs up; with ``lenient``, the same words as a :class:`GrammarWarning`, and the
    lexer refuses those texts.  The error of ``refused`` (a terminal whose own ``re.match`` backs up,
    and whose pending states are not exact) where its own fallback is one of them, lenient or not."""
    for term in sorted(unmet):
        if term in refused:
            raise refused[term] from None
    if not unmet:
        return
    try:
        found = fallback_witnesses(plain, unmet, follows, emit_forbidden)
    except TooManyFallbackStates as exc:
        _not_decided(exc, source, lenient)
        return
    found = sorted(found, key=lambda f: (len(f.witness), f.terminal))
    names = [terminals[f.terminal].name for f in found]
    found = [f for i, f in enumerate(found) if names[i] not in names[:i]]  # (a terminal's copies: once)

    def said(fallback: Fallback) -> str:
        tried = ", ".join(dict.fromkeys(terminals[t].name for t in fallback.tried)) or "a longer lexeme"
        return f"from the longer attempt of {tried} on {ascii(fallback.witness.decode('utf-8', 'backslashreplace'))}"

    first = found[0]
    terminal = terminals[first.terminal]
    more = "".join(f"; and to {terminals[f.terminal].name} {said(f)}" for f in found[1:4]) + \
        (f" (and {len(found) - 4} more)" if len(found) > 4 else "")
    said_all = (f"{terminal.describe()}: lark backs up to it {said(first)} and then lexes "
                f"{terminals[first.follower].name}, which localgcd's lexer does not do (it looks one byte past a "
                f"lexeme){more}")
    if not lenient:  # (the project's rule: never a quietly different language; lenient=True asks for one, said)
        raise _error(terminal, f"{said_all}, so localgcd would refuse texts lark accepts there: write the terminals "
                     "so that re.match cannot fall back, or compile with lenient=True (--lenient) to accept the "
                     "grammar with those texts refused", source, text)
    grammar_warning(f"{said_all}, so localgcd refuses texts lark accepts there: write the terminals so that "
                    "re.match cannot fall back", source, terminal.line or None, terminal.column)


def _not_decided(exc: TooManyFallbackStates, source: str, lenient: bool) -> None:
    """Where lark's fallbacks are too many to explore: whether localgcd reads the grammar as lark does
    is not decided — a :class:`GrammarError`, or with ``lenient`` a :class:`GrammarWarning`."""
    said = f"lark's lexer may back up to another terminal, and {exc}: not decided"
    if not lenient:
        raise GrammarError(f"{said} whether localgcd lexes this grammar as lark does; compile with lenient=True "
                           "(--lenient) to take it with a warning", source)
    grammar_warning(f"{said} (lenient: taken as it is)", source)


def _error(terminal: Terminal, message: str, source: str, text: str,
           kind: type[GrammarError] = GrammarError) -> GrammarError:
    lines = text.splitlines()
    context = lines[terminal.line - 1] if terminal.line and terminal.line <= len(lines) else None
    return kind(message, source, terminal.line, terminal.column, context)


def _ignored_supersets(terminal: Terminal, terminals: list[Terminal], meter: BudgetMeter | None) -> list[str]:
    """The %ignore'd terminals whose lexemes include every lexeme of ``terminal``."""
    own = trim(terminal_dfa(terminal.regex, meter, backing_up=True))
    if own is None:
        return []
    found = []
    for other in terminals:
        if other.ignored and other is not terminal:
            theirs = trim(terminal_dfa(other.regex, meter, backing_up=True))
            if theirs is not None and relation(own, theirs)[1]:
                found.append(other.name)
    return found


def build_lexer_dfa(terminals: list[Terminal], source: str = "<grammar>", text: str = "",
                    meter: BudgetMeter | None = None, tuning: Tuning = Tuning(), *,
                    backing_up: bool = False, unproduced_hint: str = "") -> DFA:
    """The combined lexer DFA; its accept labels are indices into ``terminals``, and it has a start
    state per lexer mode (``Terminal.lexed_in``; a grammar without modes has one, state 0).

    ``text`` (the grammar's source) only serves to show the offending line in errors.
    ``meter``: the compile budget (a terminal that outgrows it is named, at its line).  ``tuning``:
    as :func:`~localgcd.lexer.product.product_dfa` takes it.  ``backing_up``: keep a terminal whose
    ``re.match`` backs up further than the byte after its lexeme (for :func:`build_lexer`), instead
    of refusing it.  ``unproduced_hint``: said after the error for a terminal that can never be
    produced (the compile's mode, when it bears on why).
    """

    def error(terminal: Terminal, message: str, kind: type[GrammarError] = GrammarError) -> GrammarError:
        return _error(terminal, message, source, text, kind)

    for terminal in terminals:  # each terminal's own automaton first: an error names its terminal
        try:
            regex = at_text_start(terminal.regex) if only_at_text_start(terminal) else terminal.regex
            if literal_bytes(regex) is None:
                terminal_dfa(regex, meter, "its automaton", backing_up=backing_up)
            for condition in terminal.also:
                states = terminal_dfa(condition.regex, meter).n_states
                if not (0 <= condition.start < states and all(-1 <= end < states for end in condition.ends or ())):
                    raise UnsupportedRegex(f"a condition names a state outside the {states} states of "
                                           f"/{condition.regex}/")
        except UnsupportedRegex as exc:
            raise error(terminal, f"{terminal.describe()}: {exc}") from None
        except CompileBudgetError as exc:
            raise error(terminal, f"{terminal.describe()}: {exc.message}", CompileBudgetError) from None
    modes = lexer_modes(terminals)  # (the text's start read as the loop above read it)
    first_match = lark_scan_order(terminals)
    try:
        dfa = product_dfa(modes.regexes, modes.lexed_in, [terminal.also for terminal in terminals], meter, tuning,
                          n_modes=max(max(modes.next_modes, default=0) + 1, modes.n_modes),
                          first_match=first_match)
    except TerminalUnsupported as exc:
        terminal = terminals[exc.terminal]
        raise error(terminal, f"{terminal.describe()}: {exc}") from None
    except CompileBudgetError as exc:
        raise CompileBudgetError(exc.message, source) from None
    for start in dfa.mode_starts:
        if dfa.accept[start] >= 0:
            terminal = terminals[int(dfa.accept[start])]
            raise error(terminal, f"{terminal.describe()} matches the empty string")
    produced = set(sorted_unique(dfa.accept).tolist())
    missing = set(range(len(terminals))) - produced
    produced_names = {terminals[i].name for i in produced if 0 <= i < len(terminals)}
    for index in sorted(missing):
        terminal = terminals[index]
        if terminal.ignored or not modes.lexed_in[index]:  # (no mode lexes it: no parser state takes it)
            continue
        if terminal.modes is not None and terminal.name in produced_names:
            continue  # (lark's contextual lexer: a copy in modes where another terminal wins; produced elsewhere)
        message = f"{terminal.describe()} can never be produced: " + (
            "lark's lexer tries another terminal first wherever it matches (lark's order: priority, longer "
            "maximum width, longer definition, name)" if first_match else
            "every lexeme it matches is won by a higher-ranked terminal (longest match, then priority)")
        hinted = f"{message} ({unproduced_hint})" if unproduced_hint else message
        ignored_over = _ignored_supersets(terminal, terminals, meter)
        if not ignored_over:
            raise error(terminal, hinted)
        # every lexeme of it is one of an %ignore'd terminal's, which outranks it: whichever lexer
        # lark runs (basic, or contextual, which keeps ignored terminals in every state), it never
        # produces it (SynCode's Python: LONG_STRING inside the ignored COMMENT)
        grammar_warning(f"{message}: each is a lexeme of %ignore'd {', '.join(ignored_over)} too, so it "
                        "matches nothing here, as in lark", source, terminal.line or None, terminal.column)
    return dfa

