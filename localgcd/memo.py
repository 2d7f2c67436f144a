"""A bounded memo of a pure function, shared by the process (bottom layer: imports nothing of localgcd).

Only a function whose value depends on its key alone (a regex's automaton depends on the regex,
not on the compile, its :class:`~localgcd.tuning.Tuning` or its budget: a caller checks the budget
against a value it finds) may keep its values here, process-wide.  A memo is bounded twice: by its
number of entries and by the cells its values hold (``size``: a DFA's table cells), the oldest
entry going first.  Several threads may compile at once: a lost race drops or recomputes an entry,
never returns a wrong one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedMemo(Generic[V]):
    """At most ``max_entries`` values and ``max_cells`` cells in all (``size(value)`` each); a value
    bigger than ``max_cells`` alone is not kept."""

    def __init__(self, max_entries: int, max_cells: int, size: Callable[[V], int] = lambda value: 1) -> None:
        self.max_entries, self.max_cells, self.size = max_entries, max_cells, size
        # the values alone (a value the collector untracks stays untracked here), their sizes beside
        self._values: OrderedDict[Hashable, V] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._cells = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._values)

    @property
    def cells(self) -> int:
        """The cells its values hold now."""
        return self._cells

    def get(self, key: Hashable) -> V | None:
        return self._values.get(key)

    def put(self, key: Hashable, value: V) -> V:
        """Keep ``value`` under ``key`` (dropping the oldest entries as the bounds need); returns it."""
        cells = self.size(value)
        if cells > self.max_cells:
            return value
        with self._lock:
            if self._values.pop(key, None) is not None:
                self._cells -= self._sizes.pop(key)
            while self._values and (len(self._values) >= self.max_entries or self._cells + cells > self.max_cells):
                dropped, _value = self._values.popitem(last=False)
                self._cells -= self._sizes.pop(dropped)
            self._values[key] = value
            self._sizes[key] = cells
            self._cells += cells
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._sizes.clear()
            self._cells = 0
