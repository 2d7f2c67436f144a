"""GBNF token elements at run time: a token taken whole by a parser terminal, beside the text path.

A token element (``<[12]>``, ``<think>``, ``!<[12]>``) is a parser terminal that no byte string
lexes (:class:`~localgcd.grammar.terminals.TokenElement`).  llama.cpp's grammar sampler
(``vendor/llama.cpp/src/llama-grammar.cpp``) takes one only at the start of a token, from a stack
whose top is that element, and only by the token's id (``llama_grammar_match_token``); a stack
that meets one inside a token's text dies (``llama_grammar_accept_chr``: "ignore if this turns into
a token").  So a token element is matched by exactly one whole token, never by text.

Here that is a *token move*: where the lexer stands at a lexeme boundary -- no lexeme begun, or a
whole one pending that no byte continues (GBNF's terminals are a prefix code, so every point
between characters where a llama.cpp stack can stand is one of these) -- the pending lexeme is
fed to the parser, then the element's column; where a stack takes it, the element's tokens are
allowed, and taking one leaves the lexer at the start of a lexeme.  A mask is the text path's
(the wrapped engine's, unchanged) plus the tokens of the moves allowed there; a grammar without
token elements never meets this module.  The compiler refuses grammars where a token could be
read both ways, or by two elements, in one parser state (:mod:`localgcd.compiler.token_elements`),
so a token takes at most one path.

UTF-8, as llama.cpp reads pieces (``decode_utf8``, and ``partial_utf8`` kept across tokens): a token
is offered to an element only where its piece yields a whole character (one incomplete character
alone, or a stray continuation byte, is refused); a piece that ends inside a character leaves it
begun (a :class:`Tail` on the stack), and the next token must start with the bytes that complete it,
whether an element takes it or the text path reads the begun character and then the token.

One place differs from llama.cpp's *mask*, not from its accept: where a character stack reaches an
element inside a token ("a" then ``!<[11]>``, token "at"), llama.cpp's mask compares the whole
token's id and lets it through (``llama_grammar_reject_candidates_for_stack``), but its accept
drops that stack and throws ("Unexpected empty grammar stack"); here the token is masked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from localgcd.lexer.transducer import NO_EMIT, LexingTransducer
from localgcd.parser.pda import DEAD_STACK
from localgcd.regex.dfa import DEAD_STATE
from localgcd.runtime.layout import NO_LAYOUT, Layout
from localgcd.runtime.masks import Mask, MaskMemo



@dataclass(frozen=True)
class TokenMoves:
    """A grammar's token elements resolved for one vocabulary: per element its parser column, the
    token it names (-1: one the vocabulary lacks) and whether it is negated (``!<...>``), and which
    tokens an element can match at all (``matchable``: llama.cpp offers a token to a grammar when it
    is no end-of-generation token and its piece, special tokens' text included, is not empty and
    does not start with a NUL byte)."""

    columns: np.ndarray  # int32 [k]
    token_ids: np.ndarray  # int64 [k]
    negated: np.ndarray  # bool [k]
    matchable: np.ndarray  # bool [n_tokens]
    #: llama.cpp's UTF-8 reading of each token's piece (``decode_utf8``): the continuation bytes it
    #: starts with (-1: a stray one later, never offered), and the incomplete character it ends
    #: with -- its bytes (``tail_bytes[t, :3 - ...]``) and how many it still needs (``tail_needs``, 0: none)
    leading_continuations: np.ndarray  # int8 [n_tokens]
    tail_bytes: np.ndarray  # uint8 [n_tokens, 3]
    tail_needs: np.ndarray  # int8 [n_tokens]

    def tail(self, token: int) -> bytes:
        """The incomplete character a token's piece ends with (b"": none)."""
        if not self.tail_needs[token]:
            return b""
        size = {0xC: 2, 0xD: 2, 0xE: 3, 0xF: 4}[int(self.tail_bytes[token, 0]) >> 4]
        return self.tail_bytes[token, :size - int(self.tail_needs[token])].tobytes()

    def offered(self, needs: int) -> np.ndarray:
        """bool [n_tokens]: the tokens llama.cpp offers to a token element where the character begun
        before still needs ``needs`` bytes (0: none begun): they start with exactly that many
        continuation bytes, and no stray one follows."""
        return self.matchable & (self.leading_continuations == needs)

    def tokens(self, k: int) -> np.ndarray:
        """bool [n_tokens]: the tokens element ``k`` matches (where no character is begun: see :meth:`offered`)."""
        token = int(self.token_ids[k])
        named = np.zeros(self.matchable.size, dtype=bool)
        if 0 <= token < named.size:
            named[token] = True
        return self.matchable & (~named if self.negated[k] else named)

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"columns": self.columns, "token_ids": self.token_ids, "negated": self.negated,
                "matchable": self.matchable, "leading_continuations": self.leading_continuations,
                "tail_bytes": self.tail_bytes, "tail_needs": self.tail_needs}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "TokenMoves":
        return cls(np.asarray(arrays["columns"], dtype=np.int32), np.asarray(arrays["token_ids"], dtype=np.int64),
                   np.asarray(arrays["negated"], dtype=bool), np.asarray(arrays["matchable"], dtype=bool),
                   np.asarray(arrays["leading_continuations"], dtype=np.int8),
                   np.asarray(arrays["tail_bytes"], dtype=np.uint8), np.asarray(arrays["tail_needs"], dtype=np.int8))


def boundary_states(lexer: LexingTransducer) -> np.ndarray:
    """bool [Q]: lexer states at a lexeme boundary -- a mode's start (nothing pending), or a whole
    lexeme pending that every byte ends (no byte continues it)."""
    starts = np.zeros(lexer.n_states, dtype=bool)
    starts[0] = True
    starts[lexer.restart[lexer.restart >= 0]] = True
    ends_here = ((lexer.emitted != NO_EMIT) | (lexer.next_state == DEAD_STATE)).all(axis=1) & (lexer.accept >= 0)
    return starts | ends_here


@dataclass(frozen=True)
class Tail:
    """The stack after a token move whose token ends inside a UTF-8 character: llama.cpp keeps the
    character's bytes (``grammar.partial_utf8``), which the next token must complete -- its first
    bytes continue it -- whichever path it takes."""

    node: Any  # the wrapped engine's stack
    tail: bytes  # the character's bytes so far
    needs: int  # the bytes it still needs


class TokenMoveEngine:
    """A mask engine (deterministic or general) with the token moves of a grammar's token elements
    added; the Matcher's engine interface, the rest asked of the wrapped engine.  A stack is the
    wrapped engine's, or a :class:`Tail` after a token move that ended inside a character."""

    def __init__(self, inner: Any, moves: TokenMoves, lexer: LexingTransducer,
                 step: Callable[[Any, int], Any], token_mask_budget: int = 64 << 20) -> None:
        """``step(stack, column)``: the stack after a parser terminal, or None where no stack takes it;
        ``token_mask_budget``: bytes of masks kept."""
        self.inner, self.moves = inner, moves
        self._step = step
        self._boundary = boundary_states(lexer).tolist()
        # a start state: nothing pending (the wrapped engine's ``at_start``: after a token move, the lexer
        # rests there; after text it never does, lexing restarts inside the byte that ended a lexeme)
        self._start = [b and a < 0 for b, a in zip(self._boundary, lexer.accept.tolist())]
        self._accept, self._restart = lexer.accept.tolist(), lexer.restart.tolist()
        self._tokens = [moves.tokens(k) for k in range(moves.columns.size)]
        self._packed: dict[tuple[int, int], np.ndarray] = {}  # (element, bytes needed) -> packed tokens
        self._columns = moves.columns.tolist()
        self._masks = MaskMemo(token_mask_budget)  # by (lexer state, stack, at start)
        self.n_tokens, self.token_bytes = inner.n_tokens, inner.token_bytes
        self.end_ids, self.end_id_set = inner.end_ids, inner.end_id_set
        self._ends = np.asarray(self.end_ids, dtype=np.int64)
        self.terminated_mask = inner.terminated_mask

    @property
    def start_stack(self) -> Any:
        return self.inner.start_stack

    # -- the Matcher's questions ------------------------------------------------------

    def mask(self, q: int, node: Any, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask:
        key = (q, node, at_start)
        found = self._masks.get(key)
        if found is not None:
            return found
        moves = self._moves(q, node)
        if not moves and not isinstance(node, Tail):
            return self.inner.mask(q, node, at_start or self._start[q], layout)
        text = self._text_state(q, node, layout)
        if text is None:
            packed = np.zeros((self.n_tokens + 31) // 32, dtype=np.uint32)
        else:
            packed = self.inner.mask(*text, False, layout).packed.copy()
            if self._ends.size:  # (set again below where the text is complete)
                np.bitwise_and.at(packed, self._ends // 32,
                                  ~np.left_shift(np.uint32(1), (self._ends % 32).astype(np.uint32)))
        needs = node.needs if isinstance(node, Tail) else 0
        for k, _ in moves:
            packed |= self._offered(k, needs)
        count = int(np.unpackbits(packed.view(np.uint8)).sum())
        mask = Mask.of_packed(packed, self.n_tokens, count, self.is_accepting(q, node, at_start, layout)[0],
                              self._ends)
        self._masks.put(key, mask)
        return mask

    def cached_mask(self, q: int, node: Any, at_start: bool, layout: Layout = NO_LAYOUT) -> Mask | None:
        found = self._masks.get((q, node, at_start))
        if found is not None or isinstance(node, Tail):
            return found
        if self._boundary[q] and self._moves(q, node):
            return None
        return self.inner.cached_mask(q, node, at_start or self._start[q], layout)

    def advance(self, q: int, node: Any, token: int, layout: Layout = NO_LAYOUT) -> tuple[int, Any, Layout]:
        """(lexer state, stack, layout) after ``token``: by a token move where one takes it (the
        lexer then at the start of a lexeme), else by its text."""
        needs = node.needs if isinstance(node, Tail) else 0
        for k, after in self._moves(q, node):
            if self._tokens[k][token] and self.moves.leading_continuations[token] == needs:
                tail = self.moves.tail(token)
                if tail:
                    after = Tail(after, tail, int(self.moves.tail_needs[token]))
                return (q if self._start[q] else self._restart[self._accept[q]]), after, layout
        text = self._text_state(q, node, layout)
        if text is None:
            return DEAD_STACK, DEAD_STACK, layout
        return self.inner.advance(*text, token, layout)

    def advance_bytes(self, q: int, node: Any, data: bytes, layout: Layout = NO_LAYOUT) -> tuple[int, Any, Layout]:
        if isinstance(node, Tail):  # (text never matches a token element)
            return self.inner.advance_bytes(q, node.node, node.tail + data, layout)
        return self.inner.advance_bytes(q, node, data, layout)

    def is_accepting(self, q: int, node: Any, at_start: bool, layout: Layout = NO_LAYOUT) -> tuple[bool, int]:
        """As the wrapped engine says (llama.cpp lets an end token through where a stack is empty,
        whatever character a token move left begun)."""
        inner = node.node if isinstance(node, Tail) else node
        return self.inner.is_accepting(q, inner, at_start or self._start[q], layout)

    def only_ignored_can_follow(self, q: int, node: Any, at_start: bool, layout: Layout = NO_LAYOUT) -> bool:
        if isinstance(node, Tail):
            return False
        return (self.inner.only_ignored_can_follow(q, node, at_start or self._start[q], layout)
                and not self._moves(q, node))

    # -- internals --------------------------------------------------------------------

    def _moves(self, q: int, node: Any) -> list[tuple[int, Any]]:
        """(element, stack after it) for each token element some stack takes here."""
        if isinstance(node, Tail):
            node = node.node
        if not self._boundary[q]:
            return []
        if not self._start[q]:
            node = self._step(node, self._accept[q])
            if node is None:
                return []
        moves = []
        for k, column in enumerate(self._columns):
            after = self._step(node, column)
            if after is not None:
                moves.append((k, after))
        return moves

    def _text_state(self, q: int, node: Any, layout: Layout) -> tuple[int, Any] | None:
        """Where the text path reads the next token: after a :class:`Tail`, its bytes read first
        (llama.cpp's character stacks read the character they begin); None where they are refused."""
        if not isinstance(node, Tail):
            return q, node
        q, inner, _ = self.inner.advance_bytes(q, node.node, node.tail, layout)
        return None if isinstance(inner, int) and inner == DEAD_STACK else (q, inner)

    def _offered(self, k: int, needs: int) -> np.ndarray:
        packed = self._packed.get((k, needs))
        if packed is None:
            no_end = np.zeros(0, dtype=np.int64)
            packed = self._packed[k, needs] = Mask.of(self._tokens[k] & self.moves.offered(needs), False,
                                                     no_end).packed
        return packed


def deterministic_step(pda: Any) -> Callable[[int, int], int | None]:
    """``step`` over the PDA's hash-consed stacks (None for a dead one)."""
    def step(node: int, column: int) -> int | None:
        after = pda.step(node, column)[0]
        return None if after == DEAD_STACK else after
    return step
