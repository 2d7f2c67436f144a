"""Writing what a lazily compiled grammar built back into its cache entry.

A grammar compiled lazily (the default) builds a lexer state's spanner row,
and the Alg. 5 statuses of its outcomes, on the state's first visit.  So
that a grammar seen before starts with the rows it needed before, a
:class:`LazyEntry` writes them into the grammar's cache entry -- never while
a mask waits: when the grammar and its matchers are released (its mask
engine garbage-collected; a grammar never used: the grammar), at interpreter
exit, or when asked (:meth:`CompiledGrammar.flush`).

A write reads the entry on disk, merges (:meth:`CompiledGrammar.merged_entry`:
the disk's outcome ids kept, ours renumbered into them) and writes the result
atomically (:class:`~localgcd.compiler.store.TableStore`: a temporary file
renamed into place).  Two processes flushing at once each write a whole,
verified entry; the later rename wins, and the rows only the other had are
built again on their next first visit -- a lost race costs time, never
exactness.  An entry an eager compile wrote already holds every row: it is
left as it is.  Rows are merged only into an entry whose terminals, lexer and
parse tables are ours array for array (the builds are deterministic; should
two ever differ, ours replaces the entry).  A corrupt entry is reported (a :class:`CacheWarning`, as on
any read) and replaced by ours.
"""

from __future__ import annotations

import copy
import warnings
import weakref

from localgcd.compiler.compiled import CompiledGrammar, Statuses
from localgcd.compiler.store import TableStore
from localgcd.errors import CacheWarning
from localgcd.runtime.checks import OutcomeChecker
from localgcd.runtime.masks import MaskEngine


class LazyEntry:
    """The cache entry of one lazily compiled grammar, written back with what it built."""

    def __init__(self, store: TableStore, key: str, version: int, grammar: CompiledGrammar, loaded: bool) -> None:
        """Registers the write-back at the grammar's release (and at exit); ``grammar`` must not
        have made its engine yet; ``loaded``: it was read from the entry (which holds it so far)."""
        self._store, self._key, self._version = store, key, version
        # The same tables in a second object: the finalizer must not keep the user's one alive.
        self._grammar = copy.copy(grammar)
        self._grammar.cache_entry = None
        self._checker: OutcomeChecker | None = None  # the engine's, once made: it holds the statuses
        self._written = self._stamp(grammar.known_statuses) if loaded else None  # (as built when last written)
        grammar.cache_entry = self
        weakref.finalize(grammar, self._grammar_released)

    def attach(self, engine: MaskEngine) -> None:
        """The grammar's mask engine, made on first use: its checker holds the statuses, and the
        write-back waits for its release -- matchers keep it, and may outlive the grammar
        (``compile(...).matcher()``)."""
        self._checker = engine.checker
        weakref.finalize(engine, self._flush_quietly)

    def _grammar_released(self) -> None:
        if self._checker is None:  # (else the engine's release writes, matchers done)
            self._flush_quietly()

    def flush(self) -> bool:
        """Merge what was built into the entry on disk; True if something was written."""
        grammar = self._grammar
        statuses = self._checker.known_statuses() if self._checker is not None else grammar.known_statuses
        stamp = self._stamp(statuses)
        if stamp == self._written:
            return False
        disk = self._store.read(self._key, self._key, self._version, CompiledGrammar.DEFERRED_ARRAYS)
        if disk is None or (CompiledGrammar.spans_lazily(disk[0]) and not grammar.tables_match(disk)):
            entry = grammar.to_arrays(statuses)  # (tables of another build: ours replace them, not merged)
        elif not CompiledGrammar.spans_lazily(disk[0]):
            self._written = stamp
            return False  # an eager build's entry: every row is there
        else:
            entry = CompiledGrammar.merged_entry(disk, grammar.spanner.built_rows(), statuses)
            if entry is None:
                self._written = stamp
                return False
        written = self._store.write(self._key, self._key, self._version, *entry) is not None
        if written:
            self._written = stamp
        return written

    def _stamp(self, statuses: Statuses | None) -> tuple[int, int, int]:
        """How much was built: (branches walked here, outcomes, statuses)."""
        spanner = self._grammar.spanner
        return spanner.n_walked, spanner.n_outcomes, statuses[0].size if statuses is not None else 0

    def _flush_quietly(self) -> None:
        """:meth:`flush` at release or exit, where an exception would only print a traceback."""
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - the cache is an optimization; say so and go on
            warnings.warn(f"could not write the rows built for {self._grammar.source} into the table cache "
                          f"({type(exc).__name__}: {exc})", CacheWarning, stacklevel=2)
