"""compile_grammar: grammar text + vocabulary → tables a Matcher runs on.

The pipeline flows one way: grammar → lexer automaton → lexing transducer →
token spanner (over the vocabulary trie) → parser tables → mask engine.
Everything up to the parser tables is plain numpy data, saved to and loaded
from the on-disk cache (:mod:`localgcd.cache`), with the Alg. 5 status table
for small grammars; the mask engine and the PDA's stack store are built at
load time and fill lazily while decoding.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from localgcd.errors import GrammarError
from localgcd.grammar import IndenterSpec, ParseTables, load_lark_grammar
from localgcd.lexer.terminals import Terminal, build_lexer_dfa
from localgcd.lexer.transducer import LexingTransducer
from localgcd.masks import Mask, MaskEngine
from localgcd.matcher import Matcher
from localgcd.pda import PushdownAutomaton
from localgcd.spanner import TokenSpanner, build_token_spanner
from localgcd.trie import VocabTrie, trie_from_arrays, trie_to_arrays
from localgcd.vocab import Vocabulary

TABLE_FORMAT_VERSION = 5
# Alg. 5 runs at compile time when parser states x outcomes is at most this (well
# under a second, a few MB of cache); bigger grammars classify lazily while decoding.
EAGER_STATUS_LIMIT = 2_000_000
FORMATS = ("lark",)


@dataclass
class CompiledGrammar:
    """Precomputed tables for one (grammar, vocabulary) pair."""

    terminals: tuple[Terminal, ...]
    lexer: LexingTransducer
    spanner: TokenSpanner
    tables: ParseTables
    token_bytes: tuple[bytes, ...]
    end_ids: np.ndarray  # int64
    source: str
    indenter: IndenterSpec | None = None
    statuses: np.ndarray | None = None  # Alg. 5 ahead of time (small grammars), see build()
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def lexer_accept(self) -> np.ndarray:
        return self.lexer.accept

    @property
    def producible(self) -> np.ndarray:
        return self.lexer.producible

    @property
    def n_tokens(self) -> int:
        return len(self.token_bytes)

    @cached_property
    def end_id_set(self) -> frozenset[int]:
        return frozenset(self.end_ids.tolist())

    @cached_property
    def engine(self) -> MaskEngine:
        ignored = np.asarray([t.ignored for t in self.terminals], dtype=bool)
        pda = PushdownAutomaton(self.tables, ignored)
        return MaskEngine(self.spanner, pda, self.lexer, self.token_bytes, self.end_ids, self.indenter,
                          self.statuses)

    @cached_property
    def terminated_mask(self) -> Mask:
        allowed = np.zeros(self.n_tokens, dtype=bool)
        allowed.flags.writeable = False
        return Mask(allowed, allowed, True, 0)

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the text."""
        return Matcher(self)

    @property
    def stats(self) -> dict[str, object]:
        """Sizes of the compiled tables (for `localgcd compile` and the bench)."""
        return {
            "terminals": len(self.terminals),
            "lexer_states": int(self.lexer_accept.size),
            "parser_states": self.tables.n_states,
            "rules": len(self.tables.rules),
            "outcomes": int(len(self.spanner.head)),
            "token_classes": self.spanner.n_classes,
            "vocab_size": self.n_tokens,
            "table_bytes": int(self.spanner.nbytes + self.tables.action.nbytes + self.tables.goto.nbytes
                               + self.lexer.next_state.nbytes + self.lexer.emitted.nbytes
                               + self.producible.nbytes
                               + (self.statuses.nbytes if self.statuses is not None else 0)),
        }


def compile_grammar(
    grammar: str,
    vocab: Vocabulary,
    fmt: str = "lark",
    source: str = "<grammar>",
    cache_dir: str | Path | None | bool = None,
) -> CompiledGrammar:
    """Compile ``grammar`` (text) for ``vocab``; cached on disk unless ``cache_dir=False``.

    ``cache_dir=None`` uses ``$LOCALGCD_CACHE`` or the platform user cache dir.
    Raises :class:`GrammarError` for invalid or unsupported grammars.
    """
    if fmt not in FORMATS:
        raise GrammarError(f"{source}: grammar format {fmt!r} is not supported (use one of {', '.join(FORMATS)})")
    from localgcd import cache

    key = cache_key(grammar, fmt, vocab)
    if cache_dir is not False:
        loaded = cache.load(key, vocab, source, cache_dir)
        if loaded is not None:
            return loaded
    compiled = build(grammar, vocab, source, cache_dir)
    if cache_dir is not False:
        cache.save(key, compiled, cache_dir)
    return compiled


def cache_key(grammar: str, fmt: str, vocab: Vocabulary) -> str:
    digest = hashlib.sha256()
    for part in (f"localgcd-tables-v{TABLE_FORMAT_VERSION}", fmt, grammar, vocab.fingerprint):
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def build(grammar: str, vocab: Vocabulary, source: str = "<grammar>",
          cache_dir: str | Path | None | bool = False) -> CompiledGrammar:
    """Run the whole pipeline (the vocabulary trie may come from the cache)."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    parsed = load_lark_grammar(grammar, source)
    t1 = time.perf_counter()
    dfa = build_lexer_dfa(list(parsed.terminals), source)
    lexer = LexingTransducer.from_dfa(dfa, len(parsed.terminals))
    t2 = time.perf_counter()
    trie = vocabulary_trie(vocab, cache_dir)
    t3 = time.perf_counter()
    spanner = build_token_spanner(lexer, trie, len(vocab))
    t4 = time.perf_counter()
    compiled = CompiledGrammar(
        terminals=parsed.terminals,
        lexer=lexer,
        spanner=spanner,
        tables=parsed.tables,
        token_bytes=vocab.token_bytes,
        end_ids=np.asarray(vocab.end_ids, dtype=np.int64),
        source=source,
        indenter=parsed.indenter,
        timings=timings,
    )
    if parsed.tables.n_states * len(spanner.head) <= EAGER_STATUS_LIMIT:
        compiled.statuses = compiled.engine.classify_all().copy()
    t5 = time.perf_counter()
    timings.update(grammar=t1 - t0, lexer=t2 - t1, trie=t3 - t2, spanner=t4 - t3, statuses=t5 - t4)
    return compiled


_TRIES: dict[str, VocabTrie] = {}
TRIE_FORMAT_VERSION = 1


def vocabulary_trie(vocab: Vocabulary, cache_dir: str | Path | None | bool = None) -> VocabTrie:
    """The byte trie of a vocabulary's text tokens: memoized per fingerprint, cached on disk.

    It depends on the vocabulary alone, so every grammar compiled for it shares one.
    """
    from localgcd import cache

    use_disk = cache_dir is not False
    path = cache.tables_dir(cache_dir or None) / f"trie-{vocab.fingerprint}.npz"
    trie = _TRIES.get(vocab.fingerprint)
    if trie is None and use_disk:
        entry = cache.read_entry(path, vocab.fingerprint, TRIE_FORMAT_VERSION)
        trie = trie_from_arrays(entry[1]) if entry is not None else None
    if trie is None:
        text = np.fromiter(
            (i for i, b in enumerate(vocab.token_bytes) if b and not vocab.is_special[i]), dtype=np.int64
        )
        trie = VocabTrie.build(vocab.token_bytes, text)
    if use_disk and not path.exists():
        cache.write_entry(path, vocab.fingerprint, TRIE_FORMAT_VERSION, {}, trie_to_arrays(trie))
    _TRIES[vocab.fingerprint] = trie
    return trie
