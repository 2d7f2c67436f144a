"""GBNF token elements for one vocabulary: which token each names, and where a token move is exact.

llama.cpp (``vendor/llama.cpp/src/llama-grammar.cpp``, ``parse_token``) reads ``<[id]>`` as that id
(any id below 2**32; one the vocabulary lacks matches nothing) and ``<text>`` by tokenizing the text,
brackets included, with special tokens parsed: it must give exactly one token, else the grammar is
refused ("invalid token").  Here ``<text>`` names the one token whose piece is that text -- a special
token's own text (``Vocabulary.special_pieces``) or a text token's bytes -- and is a
:class:`GrammarError` at the element where there is none or more than one.

The run-time token moves (:mod:`localgcd.runtime.token_moves`) keep one lexer state and one stack
set, so a token must take one path; the grammar is refused, naming the element, where one parser
state allows

* a token element and text that a token the element matches also starts (llama.cpp would read that
  token both ways and keep both parses);
* two token elements that match a common token;
* a token element matching a token that starts inside a UTF-8 character, beside text that can
  begin a multi-byte character (after a token that ends inside a character llama.cpp still offers
  such a token to the element; here the lexer stands inside the character, at no boundary).
"""

from __future__ import annotations

import numpy as np

from localgcd.errors import GrammarError
from localgcd.grammar.ir import GrammarIR, source_line
from localgcd.grammar.terminals import TokenElement
from localgcd.lexer.transducer import LexingTransducer
from localgcd.parser.tables import NO_ACTION, ParseTables
from localgcd.regex.dfa import DEAD_STATE
from localgcd.runtime.token_moves import TokenMoves
from localgcd.vocab import Vocabulary


def token_moves(grammar: GrammarIR, tables: ParseTables, lexer: LexingTransducer,
                vocab: Vocabulary) -> TokenMoves | None:
    """The grammar's token elements resolved for ``vocab`` and checked (see the module doc); None
    for a grammar without any."""
    if not grammar.token_elements:
        return None
    pieces = [special or text for text, special in
              zip(vocab.token_bytes, vocab.special_pieces or (b"",) * len(vocab))]
    matchable = np.fromiter((bool(p) and p[0] != 0 for p in pieces), dtype=bool, count=len(pieces))
    matchable[list(vocab.end_ids)] = False
    ids = np.asarray([_token_id(grammar, e, pieces, vocab.name) for e in grammar.token_elements], dtype=np.int64)
    moves = TokenMoves(np.asarray([grammar.parser_terminals[e.name] for e in grammar.token_elements], dtype=np.int32),
                       ids, np.asarray([e.negated for e in grammar.token_elements], dtype=bool), matchable,
                       *_utf8_readings(pieces))
    _check_one_path(grammar, tables, lexer, vocab, moves)
    return moves


def _utf8_readings(pieces: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How llama.cpp's ``decode_utf8`` reads each piece (up to a NUL byte, a C string's end): the
    continuation bytes it starts with (that a character begun by the token before completes; -1
    where the rest has a stray continuation byte as a lead, which aborts the decode, or where the
    piece is one incomplete character, no code point: the token is never offered to an element), and the incomplete character it ends with (its bytes, and how many more it
    needs).  A lead byte's length by its high bits, continuation bytes not checked, as llama.cpp."""
    n = len(pieces)
    starts, tails, needs = np.zeros(n, dtype=np.int8), np.zeros((n, 3), dtype=np.uint8), np.zeros(n, dtype=np.int8)
    length_of = (1,) * 8 + (0,) * 4 + (2, 2, 3, 4)
    for t, piece in enumerate(pieces):
        piece = piece.split(b"\0", 1)[0]
        i = 0
        while i < len(piece) and piece[i] >> 6 == 2:
            i += 1
        starts[t] = i
        while i < len(piece):
            size = length_of[piece[i] >> 4]
            if size == 0:
                starts[t] = -1
                break
            if i + size > len(piece):
                if i == 0:  # no whole character: llama.cpp refuses it at a token element
                    starts[t] = -1
                    break
                tail = piece[i:]
                tails[t, :len(tail)] = np.frombuffer(tail, dtype=np.uint8)
                needs[t] = size - len(tail)
                break
            i += size
    return starts, tails, needs


def _token_id(grammar: GrammarIR, element: TokenElement, pieces: list[bytes], vocab_name: str) -> int:
    if element.token_id is not None:
        return element.token_id
    text = str(element.text).encode("utf-8")
    found = [i for i, piece in enumerate(pieces) if piece == text]
    if len(found) != 1:
        why = "no token" if not found else f"{len(found)} tokens ({', '.join(map(str, found[:4]))})"
        raise _error(grammar, element, f"token element {element.written}: {why} of vocabulary {vocab_name!r} has the text "
                     f"{element.text!r} (llama.cpp: it must be exactly one token)")
    return found[0]


def _check_one_path(grammar: GrammarIR, tables: ParseTables, lexer: LexingTransducer, vocab: Vocabulary,
                    moves: TokenMoves) -> None:
    """Refuse a grammar where a parser state lets one token be read two ways (module doc)."""
    n_lexed = lexer.producible.shape[1]
    width = tables.action.shape[1]
    has_action = tables.action != NO_ACTION
    if tables.conflicts is not None:
        cells = np.asarray(tables.conflicts.cells, dtype=np.int64)
        has_action[cells // width, cells % width] = True
    columns = moves.columns.tolist()
    element_rows = has_action[:, columns]  # [S, k]
    # per first byte: the lexer terminals a lexeme begun with it can become
    after_first = lexer.next_state[0].astype(np.int64)
    first_byte_terminals = np.zeros((256, n_lexed), dtype=bool)
    live = after_first != DEAD_STATE
    first_byte_terminals[live] = lexer.producible[after_first[live]]
    text_first = np.full(len(vocab), -1, dtype=np.int64)
    for i, piece in enumerate(vocab.token_bytes):
        if piece:
            text_first[i] = piece[0]
    matched = [moves.tokens(k) for k in range(len(columns))]
    starts_inside = np.zeros(256, dtype=bool)
    starts_inside[0x80:0xC0] = True
    lead_bytes = np.zeros(256, dtype=bool)
    lead_bytes[0xC2:0xF5] = True
    for state in np.flatnonzero(element_rows.any(axis=1)).tolist():
        here = np.flatnonzero(element_rows[state]).tolist()
        text_here = has_action[state, :n_lexed]
        for a in here:
            for b in here:
                if a < b and (matched[a] & matched[b]).any():
                    token = int(np.flatnonzero(matched[a] & matched[b])[0])
                    first, second = grammar.token_elements[a], grammar.token_elements[b]
                    raise _error(grammar, first, f"token elements {first.written} and {second.written} can both "
                                 f"come next and both match token {token} ({_shown(vocab, token)}): which parse "
                                 "it continues is not one; not supported")
        if not text_here.any():
            continue
        bytes_to_text = first_byte_terminals[:, text_here].any(axis=1)  # [256]
        for k in here:
            tokens = np.flatnonzero(matched[k] & (text_first >= 0))
            both = tokens[bytes_to_text[text_first[tokens]]]
            element = grammar.token_elements[k]
            if both.size:
                token = int(both[0])
                raise _error(grammar, element, f"token element {element.written} and text can both come next, and "
                             f"token {token} ({_shown(vocab, token)}) is both: llama.cpp reads it both ways; "
                             "not supported")
            if (bytes_to_text & lead_bytes).any() and starts_inside[text_first[tokens]].any():
                token = int(tokens[starts_inside[text_first[tokens]]][0])
                raise _error(grammar, element, f"token element {element.written} matches token {token} "
                             f"({_shown(vocab, token)}), which starts inside a UTF-8 character, where text can "
                             "begin a multi-byte character: after a token that ends inside one, llama.cpp "
                             "offers it; not supported")


def _shown(vocab: Vocabulary, token: int) -> str:
    piece = vocab.token_bytes[token] or (vocab.special_pieces[token] if vocab.special_pieces else b"")
    return repr(piece)


def _error(grammar: GrammarIR, element: TokenElement, message: str) -> GrammarError:
    return GrammarError(message, grammar.source, element.line, element.column,
                        source_line(grammar.text, element.line))
