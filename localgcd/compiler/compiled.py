"""CompiledGrammar: every table one (grammar, vocabulary) pair needs, as plain data.

The persisted part is what :meth:`CompiledGrammar.to_arrays` returns (a JSON
header and numpy arrays, each stage's data type contributing its own); the
format version lives here with it.  The mask engine and the PDA's stack
store are built on first use and fill lazily while decoding.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from localgcd.compile_warnings import CompileWarning
from localgcd.grammar.indenter import IndenterSpec
from localgcd.grammar.terminals import Terminal
from localgcd.lexer.transducer import LexingTransducer
from localgcd.parser.pda import PushdownAutomaton
from localgcd.parser.tables import ParseTables
from localgcd.runtime.masks import MaskEngine
from localgcd.runtime.matcher import Matcher
from localgcd.spanner.built import DEFERRED_ARRAYS, BuiltRows
from localgcd.spanner.lazy import LazyTokenSpanner
from localgcd.spanner.token_spanner import TokenSpanner
from localgcd.spanner.trie import VocabTrie
from localgcd.tuning import Tuning

if TYPE_CHECKING:  # (a general grammar's engine, GBNF's token elements: imported when one is parsed)
    from localgcd.runtime.glr import GeneralMaskEngine
    from localgcd.runtime.token_moves import TokenMoveEngine, TokenMoves

#: Bumped whenever what :meth:`CompiledGrammar.to_arrays` writes changes meaning, and whenever a
#: front end translates the same source differently (the cache key is the source text: a JSON
#: Schema's entry must not outlive the translation that made it).  8: terminals with conditions,
#: patterns and long literals tracked through long strings.  9: sparse gotos.  10: the parse
#: tables without their rules' descriptions (no reader; kb_149's were 26K strings).  11: an entry
#: may hold no spanner (a lexer too big to span ahead), to be built lazily on load.  12: a lazy
#: entry holds the rows built so far and their Alg. 5 statuses (merged in as grammars are used),
#: and says whether an eager compile made it.  13: a terminal may fork (lark's contextual lexer where
#: the parser's stack picks the mode after it), and contextual tables have no terminal classes.
#: 14: a lexer in which nothing backs up has no alias table (13 could store an empty one).
#: 15: a Lark grammar's terminals carry lark's pattern length and flags, and its lexer reads lark's
#: first match (lexer/first_match.py), not the longest.  16: a Lark grammar's lexer backs up into
#: another terminal where a covering terminal makes it exact, and holds lexemes in a window (alias
#: chains through holding states: lexer/pending.py): the same text compiles to other tables.  17: a
#: Lark grammar where lark's lexer backs up to another terminal and localgcd's does not is refused
#: unless compiled with ``lenient=True`` (its own key), so an entry 16 wrote for it under the default
#: key is not read.  18: an entry keeps the warnings its compile said (a lenient compile's, a resolved
#: conflict's), which a load says again; a 17 entry would load saying none.  19: covered back-ups also
#: in general-parser and Indenter grammars (a lenient compile of gdscript or vyper now carries some it
#: refused), so the same text compiles to other tables.
TABLE_FORMAT_VERSION = 19


@dataclass
class CompiledGrammar:
    """Precomputed tables for one (grammar, vocabulary) pair."""

    terminals: tuple[Terminal, ...]
    lexer: LexingTransducer
    spanner: TokenSpanner | LazyTokenSpanner  # lazy: rows built on first visit (the default)
    tables: ParseTables
    token_bytes: tuple[bytes, ...]
    end_ids: np.ndarray  # int64
    source: str
    indenter: IndenterSpec | None = None
    statuses: np.ndarray | None = None  # Alg. 5 ahead of time (small grammars)
    conflicts: tuple[str, ...] = ()  # LALR conflicts resolved as lark resolves them, described
    timings: dict[str, float] = field(default_factory=dict)
    token_mask_budget: int = 64 << 20
    built_ahead: bool = False  # by an eager compile: every row (and Alg. 5 for small grammars) before use
    known_statuses: Statuses | None = None  # a lazy entry's Alg. 5 statuses, for the engine to start with
    cache_entry: object | None = None  # a lazy grammar's write-back (compiler.writeback.LazyEntry), if cached
    tuning: Tuning = Tuning()  # the compiler's thresholds, for the tables built from here on (not stored)
    #: the lexer the grammar was read with: "basic", "contextual" (lark's, where every parser state may
    #: lex alike: then one mode, the basic tables), "dynamic" or "dynamic_complete"
    lexer_kind: str = "basic"
    token_moves: TokenMoves | None = None  # GBNF's token elements, resolved for the vocabulary (None: none)
    #: the warnings the compile said (localgcd.compile_warnings), in order; a load from the cache says them again
    warnings: tuple[CompileWarning, ...] = ()

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
        pda = PushdownAutomaton(self.tables, ignored, self.tuning)
        forks = {i: {q: int(self.lexer.restart[copy]) for q, copy in t.fork}
                 for i, t in enumerate(self.terminals) if t.fork is not None}
        if forks:  # (lark's contextual lexer where the stack picks the mode: imported when a grammar has forks)
            from localgcd.runtime.forks import ForkingMaskEngine

            engine = ForkingMaskEngine(self.spanner, pda, self.lexer, self.token_bytes, self.end_ids, self.indenter,
                                       self.statuses, self.token_mask_budget, forks=forks)
        else:
            engine = MaskEngine(self.spanner, pda, self.lexer, self.token_bytes, self.end_ids, self.indenter,
                                self.statuses, self.token_mask_budget)
        if self.known_statuses is not None:
            engine.checker.restore_statuses(*self.known_statuses)
        if self.cache_entry is not None:
            self.cache_entry.attach(engine)
        return engine

    def flush(self) -> bool:
        """Write what this grammar built since it was compiled or loaded (spanner rows, Alg. 5
        statuses) into its cache entry, merged with the entry's: True if something was written.

        It happens by itself when the grammar and its matchers are released, and at exit; a
        long-lived process that keeps a grammar may call it now and then (between masks, not
        during one)."""
        return self.cache_entry.flush() if self.cache_entry is not None else False

    @cached_property
    def general_engine(self) -> GeneralMaskEngine:
        """A general grammar's mask engine (every live parse; its spanner rows are :attr:`engine`'s,
        so a lazy grammar's cache entry gets them as a deterministic one's does)."""
        from localgcd.runtime.glr_layout import general_engine

        ignored = np.asarray([t.ignored for t in self.terminals], dtype=bool)
        return general_engine(self.tables, self.spanner, self.engine.rows, self.lexer, ignored, self.token_bytes,
                              self.end_ids, self.indenter, self.tuning)

    @property
    def parser_mode(self) -> str:
        """``"lalr"`` (one stack: deterministic tables) or ``"general"`` (every live parse)."""
        return "general" if self.tables.is_general else "lalr"

    @property
    def lexer_modes(self) -> int:
        """How many modes the lexer has (1: one longest-match lexer over every terminal)."""
        return 1 + max((m for t in self.terminals for m in t.lexed_in), default=0)

    @property
    def contextual_lexer(self) -> bool:
        """Whether the terminals are lexed as lark's contextual lexer lexes them, in modes by parser state."""
        return any(t.modes is not None for t in self.terminals)

    @property
    def fork_terminals(self) -> int:
        """How many lexer terminals fork (lark's contextual lexer where the parser's state after them picks
        the mode)."""
        return sum(t.fork is not None for t in self.terminals)

    @cached_property
    def token_move_engine(self) -> TokenMoveEngine | None:
        """The engine with GBNF's token elements' moves added (None: the grammar has none)."""
        if self.token_moves is None:
            return None
        from localgcd.runtime.token_moves import TokenMoveEngine, deterministic_step

        if self.tables.is_general:
            inner: object = self.general_engine
            step = self.general_engine.parser.step
        else:
            inner, step = self.engine, deterministic_step(self.engine.pda)
        return TokenMoveEngine(inner, self.token_moves, self.lexer, step, self.token_mask_budget)

    def matcher(self) -> Matcher:
        """A fresh matcher at the start of the text."""
        if self.token_moves is not None:
            return Matcher(self.token_move_engine)
        return Matcher(self.general_engine if self.tables.is_general else self.engine)

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
            "conflicts_resolved": 0 if self.tables.is_general else len(self.conflicts),
            "parser_mode": self.parser_mode,
            "lexer_modes": self.lexer_modes,
            "conflict_cells": len(self.tables.conflicts) if self.tables.conflicts is not None else 0,
            "table_bytes": int(self.spanner.nbytes + self.tables.nbytes + self.lexer.nbytes
                               + (self.statuses.nbytes if self.statuses is not None else 0)),
        }

    # -- persistence ---------------------------------------------------------------

    def to_arrays(self, statuses: Statuses | None = None) -> tuple[dict, dict[str, np.ndarray]]:
        """(JSON header, arrays): everything but the vocabulary, which the cache key pins.

        A lazy spanner is saved as the rows it has built so far (:class:`BuiltRows`) and the Alg. 5
        statuses decided so far, sparse: ``statuses`` if given, else its engine's if made, else the
        ones it was loaded with.
        """
        table_header, table_arrays = self.tables.to_arrays()
        if isinstance(self.spanner, LazyTokenSpanner):
            built_header, built_arrays = self.spanner.built_rows().to_arrays()
            spanner_header, spanner_arrays = {"lazy": True, **built_header}, {}
            if statuses is None:
                engine = self.__dict__.get("engine")  # (made or not: a cached_property)
                statuses = engine.checker.known_statuses() if engine is not None else self.known_statuses
        else:
            spanner_header, spanner_arrays = self.spanner.to_arrays()
            built_arrays, statuses = {}, None
        header = {
            "terminals": [t.to_json() for t in self.terminals],
            "tables": table_header,
            "spanner": spanner_header,
            "indenter": self.indenter.to_json() if self.indenter else None,
            "conflicts": list(self.conflicts),
            "built_ahead": self.built_ahead,
            "lexer_kind": self.lexer_kind,
            "warnings": [w.to_json() for w in self.warnings],
        }
        arrays = {f"lexer_{n}": a for n, a in self.lexer.to_arrays().items()}
        arrays.update({f"spanner_{n}": a for n, a in spanner_arrays.items()})
        arrays.update({f"built_{n}": a for n, a in built_arrays.items()})
        arrays.update({f"tables_{n}": a for n, a in table_arrays.items()})
        if self.statuses is not None:
            arrays["statuses"] = self.statuses
        if self.token_moves is not None:
            arrays.update({f"token_moves_{n}": a for n, a in self.token_moves.to_arrays().items()})
        if statuses is not None:
            arrays.update(zip(_STATUS_ARRAYS, statuses))
        return header, arrays

    #: Arrays an entry's reader does not check at load (``TableStore.read``'s ``deferred``): a lazy
    #: entry's rows, each checked when first used.
    DEFERRED_ARRAYS = tuple(f"built_{name}" for name in DEFERRED_ARRAYS)

    @staticmethod
    def spans_lazily(header: dict) -> bool:
        """Whether an entry (its :meth:`to_arrays` header) holds a lazy spanner's rows: loading it
        needs the vocabulary's trie."""
        return bool(header["spanner"].get("lazy"))

    @staticmethod
    def is_built_ahead(header: dict) -> bool:
        """Whether an eager compile made the entry (an eager compile has nothing to add to it)."""
        return bool(header.get("built_ahead"))

    def tables_match(self, entry: tuple[dict, dict[str, np.ndarray]]) -> bool:
        """Whether an entry's terminals, lexer and parse tables are this grammar's, array for array
        (so its outcome ids, lexer states and parser states mean what this grammar's do)."""
        header, arrays = entry
        as_read = json.loads(json.dumps({"terminals": [t.to_json() for t in self.terminals],
                                         "tables": self.tables.to_arrays()[0]}))  # (tuples read back as lists)
        if header.get("terminals") != as_read["terminals"] or header.get("tables") != as_read["tables"]:
            return False
        ours = {**{f"lexer_{n}": a for n, a in self.lexer.to_arrays().items()},
                **{f"tables_{n}": a for n, a in self.tables.to_arrays()[1].items()}}
        theirs = {n: a for n, a in arrays.items() if n.startswith(("lexer_", "tables_"))}
        return ours.keys() == theirs.keys() and all(
            ours[n].dtype == theirs[n].dtype and np.array_equal(ours[n], theirs[n]) for n in ours)

    @staticmethod
    def merged_entry(disk: tuple[dict, dict[str, np.ndarray]], built: BuiltRows,
                     statuses: Statuses | None) -> tuple[dict, dict[str, np.ndarray]] | None:
        """A lazy entry with the rows and statuses of a grammar of its key added: the disk's outcome
        ids kept (ours renumbered into them); None when ours adds nothing."""
        disk_header, disk_arrays = disk
        on_disk = BuiltRows.from_arrays(disk_header["spanner"], _part(disk_arrays, "built_"))
        merged, renumber = on_disk.merged(built)
        disk_statuses = tuple(disk_arrays.get(n, _NO_STATUS[n]) for n in _STATUS_ARRAYS)
        ours = statuses if statuses is not None else tuple(_NO_STATUS.values())
        rows, outcomes, values = (np.concatenate([a, b]) for a, b in zip(disk_statuses, ours))
        outcomes[disk_statuses[0].size:] = renumber[outcomes[disk_statuses[0].size:]]
        width = np.int64(merged.n_outcomes)
        _, first = np.unique(rows.astype(np.int64) * width + outcomes, return_index=True)  # the disk's first
        if merged is on_disk and first.size == disk_statuses[0].size:
            return None
        header = {**disk_header, "spanner": {"lazy": True, **merged.to_arrays()[0]}}
        arrays = {n: a for n, a in disk_arrays.items() if not n.startswith("built_") and n not in _STATUS_ARRAYS}
        arrays.update({f"built_{n}": a for n, a in merged.to_arrays()[1].items()})
        arrays.update(zip(_STATUS_ARRAYS, (rows[first], outcomes[first], values[first])))
        return header, arrays

    @classmethod
    def from_arrays(cls, header: dict, arrays: dict[str, np.ndarray], token_bytes: tuple[bytes, ...],
                    end_ids: np.ndarray, source: str, trie: VocabTrie | None = None,
                    tuning: Tuning = Tuning()) -> "CompiledGrammar":
        """Inverse of :meth:`to_arrays`, for the vocabulary the entry was compiled for (``trie``:
        that vocabulary's, for an entry that :meth:`spans_lazily`)."""
        lexer = LexingTransducer.from_arrays(_part(arrays, "lexer_"))
        known_statuses = None
        if cls.spans_lazily(header):
            if trie is None:
                raise ValueError("this entry's spanner is built on load: pass the vocabulary's trie")
            built = BuiltRows.from_arrays(header["spanner"], _part(arrays, "built_"))
            spanner: TokenSpanner | LazyTokenSpanner = LazyTokenSpanner(lexer, trie, len(token_bytes), built,
                                                                                tuning=tuning)
            if _STATUS_ARRAYS[0] in arrays:
                known_statuses = tuple(arrays[n] for n in _STATUS_ARRAYS)
        else:
            spanner = TokenSpanner.from_arrays(header["spanner"], _part(arrays, "spanner_"))
        return cls(
            terminals=tuple(Terminal.from_json(t) for t in header["terminals"]),
            lexer=lexer,
            spanner=spanner,
            tables=ParseTables.from_arrays(header["tables"], _part(arrays, "tables_")),
            token_bytes=token_bytes,
            end_ids=end_ids,
            source=source,
            indenter=IndenterSpec.from_json(header["indenter"]) if header.get("indenter") else None,
            statuses=arrays.get("statuses"),
            conflicts=tuple(header.get("conflicts", ())),
            built_ahead=cls.is_built_ahead(header),
            known_statuses=known_statuses,
            tuning=tuning,
            # (an entry written before the kind was kept: contextual where it has modes by parser state)
            lexer_kind=header.get("lexer_kind", "contextual" if any(t.get("modes") is not None
                                                                     for t in header["terminals"]) else "basic"),
            token_moves=_token_moves(arrays),
            warnings=tuple(CompileWarning.from_json(w) for w in header.get("warnings", ())),
        )


Statuses = tuple[np.ndarray, np.ndarray, np.ndarray]  # (status rows, outcome ids, statuses): Alg. 5, sparse
_STATUS_ARRAYS = ("status_rows", "status_outcomes", "status_values")
_NO_STATUS = {"status_rows": np.empty(0, np.int32), "status_outcomes": np.empty(0, np.int32),
              "status_values": np.empty(0, np.int8)}


def _token_moves(arrays: dict[str, np.ndarray]) -> TokenMoves | None:
    if "token_moves_columns" not in arrays:
        return None
    from localgcd.runtime.token_moves import TokenMoves

    return TokenMoves.from_arrays(_part(arrays, "token_moves_"))


def _part(arrays: dict[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {n[len(prefix):]: a for n, a in arrays.items() if n.startswith(prefix)}
