"""CompiledGrammar: every table one (grammar, vocabulary) pair needs, as plain data.

The persisted part is what :meth:`CompiledGrammar.to_arrays` returns (a JSON
header and numpy arrays, each stage's data type contributing its own); the
format version lives here with it.  The mask engine and the PDA's stack
store are built on first use and fill lazily while decoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from localgcd.grammar.indenter import IndenterSpec
from localgcd.grammar.terminals import Terminal
from localgcd.lexer.transducer import LexingTransducer
from localgcd.parser.pda import PushdownAutomaton
from localgcd.parser.tables import ParseTables
from localgcd.runtime.masks import MaskEngine
from localgcd.runtime.matcher import Matcher
from localgcd.spanner.lazy import LazyTokenSpanner
from localgcd.spanner.token_spanner import TokenSpanner
from localgcd.spanner.trie import VocabTrie

#: Bumped whenever what :meth:`CompiledGrammar.to_arrays` writes changes meaning, and whenever a
#: front end translates the same source differently (the cache key is the source text: a JSON
#: Schema's entry must not outlive the translation that made it).  8: terminals with conditions,
#: patterns and long literals tracked through long strings.  9: sparse gotos.  10: the parse
#: tables without their rules' descriptions (no reader; kb_149's were 26K strings).  11: an entry
#: may hold no spanner (a lexer too big to span ahead), to be built lazily on load.
TABLE_FORMAT_VERSION = 11


@dataclass
class CompiledGrammar:
    """Precomputed tables for one (grammar, vocabulary) pair."""

    terminals: tuple[Terminal, ...]
    lexer: LexingTransducer
    spanner: TokenSpanner | LazyTokenSpanner  # lazy: rows built on first visit (memory-only compiles)
    tables: ParseTables
    token_bytes: tuple[bytes, ...]
    end_ids: np.ndarray  # int64
    source: str
    indenter: IndenterSpec | None = None
    statuses: np.ndarray | None = None  # Alg. 5 ahead of time (small grammars)
    conflicts: tuple[str, ...] = ()  # LALR conflicts resolved as lark resolves them, described
    timings: dict[str, float] = field(default_factory=dict)
    token_mask_budget: int = 64 << 20

    def __repr__(self) -> str:
        stats = self.stats
        return (f"CompiledGrammar(source={self.source!r}, terminals={stats['terminals']}, "
                f"parser_states={stats['parser_states']}, vocab_size={stats['vocab_size']})")

    @property
    def n_tokens(self) -> int:
        return len(self.token_bytes)

    @cached_property
    def engine(self) -> MaskEngine:
        """The mask engine shared by every matcher of this grammar."""
        ignored = np.asarray([t.ignored for t in self.terminals], dtype=bool)
        pda = PushdownAutomaton(self.tables, ignored)
        return MaskEngine(self.spanner, pda, self.lexer, self.token_bytes, self.end_ids, self.indenter,
                          self.statuses, self.token_mask_budget)

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the text."""
        return Matcher(self.engine)

    @property
    def stats(self) -> dict[str, object]:
        """Sizes of the compiled tables (for `localgcd compile` and the bench)."""
        return {
            "terminals": len(self.terminals),
            "lexer_states": int(self.lexer.accept.size),
            "parser_states": self.tables.n_states,
            "rules": self.tables.n_rules,
            "outcomes": int(len(self.spanner.head)),
            "token_classes": self.spanner.n_classes,
            "vocab_size": self.n_tokens,
            "conflicts_resolved": len(self.conflicts),
            "table_bytes": int(self.spanner.nbytes + self.tables.nbytes + self.lexer.nbytes
                               + (self.statuses.nbytes if self.statuses is not None else 0)),
        }

    # -- persistence ---------------------------------------------------------------

    def to_arrays(self) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON header, arrays): everything but the vocabulary, which the cache key pins.

        A lazy spanner (a lexer too big to span ahead) is left out: :meth:`from_arrays` builds a
        lazy one again.
        """
        table_header, table_arrays = self.tables.to_arrays()
        if isinstance(self.spanner, LazyTokenSpanner):
            spanner_header, spanner_arrays = {"lazy": True}, {}
        else:
            spanner_header, spanner_arrays = self.spanner.to_arrays()
        header = {
            "terminals": [t.to_json() for t in self.terminals],
            "tables": table_header,
            "spanner": spanner_header,
            "indenter": self.indenter.to_json() if self.indenter else None,
            "conflicts": list(self.conflicts),
        }
        arrays = {f"lexer_{n}": a for n, a in self.lexer.to_arrays().items()}
        arrays.update({f"spanner_{n}": a for n, a in spanner_arrays.items()})
        arrays.update({f"tables_{n}": a for n, a in table_arrays.items()})
        if self.statuses is not None:
            arrays["statuses"] = self.statuses
        return header, arrays

    @staticmethod
    def spans_lazily(header: dict) -> bool:
        """Whether an entry (its :meth:`to_arrays` header) holds no spanner: loading it needs the
        vocabulary's trie."""
        return bool(header["spanner"].get("lazy"))

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray], token_bytes: tuple[bytes, ...],
                    end_ids: np.ndarray, source: str, trie: VocabTrie | None = None) -> "CompiledGrammar":
        """Inverse of :meth:`to_arrays`, for the vocabulary the entry was compiled for (``trie``:
        that vocabulary's, for an entry that :meth:`spans_lazily`)."""

        def part(prefix: str) -> dict[str, np.ndarray]:
            return {n[len(prefix):]: a for n, a in arrays.items() if n.startswith(prefix)}

        lexer = LexingTransducer.from_arrays(part("lexer_"))
        if cls.spans_lazily(header):
            if trie is None:
                raise ValueError("this entry's spanner is built on load: pass the vocabulary's trie")
            spanner: TokenSpanner | LazyTokenSpanner = LazyTokenSpanner(lexer, trie, len(token_bytes))
        else:
            spanner = TokenSpanner.from_arrays(header["spanner"], part("spanner_"))
        return cls(
            terminals=tuple(Terminal.from_json(t) for t in header["terminals"]),
            lexer=lexer,
            spanner=spanner,
            tables=ParseTables.from_arrays(header["tables"], part("tables_")),
            token_bytes=token_bytes,
            end_ids=end_ids,
            source=source,
            indenter=IndenterSpec.from_json(header["indenter"]) if header.get("indenter") else None,
            statuses=arrays.get("statuses"),
            conflicts=tuple(header.get("conflicts", ())),
        )
