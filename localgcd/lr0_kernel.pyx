# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
# distutils: language = c++
"""Compiled kernel: the LR(0) automaton of :class:`localgcd.lalr_analysis._LR0Builder`, state for
state and number for number.

The Python builder shares a closure's moves between the states that expand the same nonterminals,
and numbers the kernels a state reaches in an order that follows from when each shared closure was
first made (its *pending* kernels: those not yet states then).  This kernel keeps the same shared
closures, made at the same moments, so the states, their numbers and each state's edges (in the
order of the Python builder's ``dict``) are the same; tests/test_kernels.py compares the two.

Interface: :class:`LR0Kernel` over the grammar as integer arrays; :meth:`LR0Kernel.grow` numbers
and expands states, at most ``limit`` at a time (the caller checks the compile budget between
calls); :meth:`LR0Kernel.arrays` gives the kernels and the edges as CSR arrays.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libcpp.algorithm cimport sort, unique
from libcpp.vector cimport vector

import numpy as np


cdef struct Closure:
    int64_t first, last  # its entries: [first, last) of the entry arrays
    int64_t order_first, order_last  # its pending order: [order_first, order_last) of pending_order


cdef class SequenceIndex:
    """Sequences of int32 (each a kernel, or a set of nonterminals) numbered in the order added,
    found by an open-addressing hash table."""

    cdef vector[int32_t] pool
    cdef vector[int64_t] offsets
    cdef vector[int32_t] slots
    cdef int64_t mask

    def __cinit__(self):
        self.offsets.push_back(0)
        self.slots.assign(1024, -1)
        self.mask = 1023

    cdef inline uint64_t hash_of(self, const int32_t* items, int64_t n) noexcept nogil:
        cdef uint64_t h = 1469598103934665603ULL
        cdef int64_t i
        for i in range(n):
            h = (h ^ <uint64_t>(<uint32_t>items[i])) * 1099511628211ULL
        return h ^ (h >> 29)

    cdef inline bint same(self, int32_t id, const int32_t* items, int64_t n) noexcept nogil:
        cdef int64_t lo = self.offsets[id], i
        if self.offsets[id + 1] - lo != n:
            return False
        for i in range(n):
            if self.pool[lo + i] != items[i]:
                return False
        return True

    cdef int32_t find(self, const int32_t* items, int64_t n) noexcept nogil:
        cdef uint64_t at = self.hash_of(items, n) & <uint64_t>self.mask
        cdef int32_t id
        while True:
            id = self.slots[at]
            if id < 0 or self.same(id, items, n):
                return id
            at = (at + 1) & <uint64_t>self.mask

    cdef int32_t add(self, const int32_t* items, int64_t n) noexcept nogil:
        """The number of ``items`` (added, with the next number, when new)."""
        cdef uint64_t at = self.hash_of(items, n) & <uint64_t>self.mask
        cdef int32_t id
        cdef int64_t i
        while True:
            id = self.slots[at]
            if id < 0:
                break
            if self.same(id, items, n):
                return id
            at = (at + 1) & <uint64_t>self.mask
        id = <int32_t>(self.offsets.size() - 1)
        for i in range(n):
            self.pool.push_back(items[i])
        self.offsets.push_back(<int64_t>self.pool.size())
        self.slots[at] = id
        if 2 * (<int64_t>self.offsets.size()) > self.mask:
            self.grow_table()
        return id

    cdef void grow_table(self) noexcept nogil:
        cdef int64_t size = 2 * (self.mask + 1), id, count = <int64_t>self.offsets.size() - 1
        cdef uint64_t at
        self.slots.assign(size, -1)
        self.mask = size - 1
        for id in range(count):
            at = self.hash_of(&self.pool[self.offsets[id]], self.offsets[id + 1] - self.offsets[id]) \
                & <uint64_t>self.mask
            while self.slots[at] >= 0:
                at = (at + 1) & <uint64_t>self.mask
            self.slots[at] = <int32_t>id

    cdef inline int64_t count(self) noexcept nogil:
        return <int64_t>self.offsets.size() - 1



cdef class LR0Kernel:
    """The LR(0) states of one grammar (see the module's docstring).

    ``next_of``: per item, the symbol after its dot (-1: complete); ``item_base``: per rule, its
    first item; ``rule_lhs``: per rule, its left side; ``n_terminals``: symbols below are
    terminals; ``n_symbols``: one past the largest symbol; ``root_rule``: the root rule (state 0's
    kernel is its first item).
    """

    cdef vector[int32_t] next_of, item_base, rule_lhs, rule_first
    cdef int32_t n_terminals, n_symbols
    cdef vector[int64_t] lhs_offsets  # nonterminal → its rules, in rule order
    cdef vector[int32_t] lhs_rules
    cdef vector[int32_t] first_count  # per nonterminal: how many distinct first symbols its rules have
    cdef SequenceIndex states, closure_keys
    cdef readonly int64_t processed
    cdef vector[int64_t] edge_offsets
    cdef vector[int32_t] edge_symbol, edge_target
    # moves_of(n): entries [moves_first[n], moves_last[n]) of (moves_symbol, items CSR)
    cdef vector[int64_t] moves_first, moves_last
    cdef vector[int32_t] moves_symbol
    cdef vector[int64_t] moves_item_offsets
    cdef vector[int32_t] moves_items
    # closures: an expansion (one nonterminal) or a set's closure; entries hold symbol, kernel, target
    cdef vector[Closure] closures
    cdef vector[int32_t] expansion_of  # nonterminal → its expansion's closure, or -1
    cdef vector[int32_t] multi_closure  # closure_keys id → closure
    cdef vector[int32_t] entry_symbol, entry_target
    cdef vector[char] entry_pending
    cdef vector[int64_t] entry_kernel_offsets
    cdef vector[int32_t] entry_kernels
    cdef vector[int32_t] pending_order  # entry numbers
    # scratch, one slot per symbol (-1 between uses)
    cdef vector[int64_t] own_position, closure_position, base_position, gathered_position
    cdef vector[int32_t] buffer, stamp

    def __init__(self, const int32_t[::1] next_of, const int32_t[::1] item_base, const int32_t[::1] rule_lhs,
                 int n_terminals, int n_symbols, int root_rule):
        cdef Py_ssize_t r, n_rules = item_base.shape[0], i
        cdef int32_t lhs, first
        self.n_terminals, self.n_symbols = n_terminals, n_symbols
        self.next_of.assign(&next_of[0], &next_of[0] + next_of.shape[0])
        self.item_base.assign(&item_base[0], &item_base[0] + n_rules)
        self.rule_lhs.assign(&rule_lhs[0], &rule_lhs[0] + n_rules)
        for r in range(n_rules):
            self.rule_first.push_back(next_of[item_base[r]])
        self.lhs_offsets.assign(n_symbols + 1, 0)
        for r in range(n_rules):
            self.lhs_offsets[rule_lhs[r] + 1] += 1
        for i in range(n_symbols):
            self.lhs_offsets[i + 1] += self.lhs_offsets[i]
        self.lhs_rules.assign(n_rules, 0)
        cdef vector[int64_t] fill = self.lhs_offsets
        for r in range(n_rules):
            self.lhs_rules[fill[rule_lhs[r]]] = <int32_t>r
            fill[rule_lhs[r]] += 1
        self.stamp.assign(n_symbols, -1)
        self.first_count.assign(n_symbols, 0)
        for lhs in range(n_terminals, n_symbols):
            for i in range(self.lhs_offsets[lhs], self.lhs_offsets[lhs + 1]):
                first = self.rule_first[self.lhs_rules[i]]
                if first >= 0 and self.stamp[first] != lhs:
                    self.stamp[first] = lhs
                    self.first_count[lhs] += 1
        self.stamp.assign(n_symbols, -1)
        self.states = SequenceIndex()
        self.closure_keys = SequenceIndex()
        self.moves_first.assign(n_symbols, -1)
        self.moves_last.assign(n_symbols, -1)
        self.moves_item_offsets.push_back(0)
        self.expansion_of.assign(n_symbols, -1)
        self.entry_kernel_offsets.push_back(0)
        self.own_position.assign(n_symbols, -1)
        self.closure_position.assign(n_symbols, -1)
        self.base_position.assign(n_symbols, -1)
        self.gathered_position.assign(n_symbols, -1)
        self.edge_offsets.push_back(0)
        cdef int32_t root_item = item_base[root_rule]
        self.states.add(&root_item, 1)

    @property
    def n_states(self) -> int:
        return self.states.count()

    def grow(self, Py_ssize_t limit) -> bool:
        """Expand up to ``limit`` more states (stopping after a multiple of ``limit`` states, as the
        Python builder checks its budget); True when every state is expanded."""
        cdef Py_ssize_t done = 0
        while self.processed < self.states.count() and done < limit:
            self.expand(self.processed)
            self.processed += 1
            done += 1
            if self.processed % limit == 0:
                break
        return self.processed == self.states.count()

    def arrays(self):
        """(kernel offsets, kernel items, edge offsets, edge symbols, edge targets): per state its
        kernel items (ascending) and its edges in the Python builder's order."""
        cdef int64_t n = self.states.count()
        kernel_offsets = np.asarray(<int64_t[:n + 1]> self.states.offsets.data()).copy()
        kernel_items = np.empty(self.states.pool.size(), dtype=np.int32)
        if self.states.pool.size():
            kernel_items[:] = np.asarray(<int32_t[:self.states.pool.size()]> self.states.pool.data())
        edge_offsets = np.asarray(<int64_t[:self.edge_offsets.size()]> self.edge_offsets.data()).copy()
        m = self.edge_symbol.size()
        edge_symbol = np.empty(m, dtype=np.int32)
        edge_target = np.empty(m, dtype=np.int32)
        if m:
            edge_symbol[:] = np.asarray(<int32_t[:m]> self.edge_symbol.data())
            edge_target[:] = np.asarray(<int32_t[:m]> self.edge_target.data())
        return kernel_offsets, kernel_items, edge_offsets, edge_symbol, edge_target

    # ---- the moves a nonterminal's closure brings in (moves_of)

    cdef void make_moves(self, int32_t nonterminal):
        """moves_of(nonterminal): the first moves of the nonterminals its closure reaches, the
        largest first, the others merged into it in reach order (new symbols after)."""
        cdef vector[int32_t] reached
        cdef int64_t k, i, j
        cdef int32_t x, s, rule
        reached.push_back(nonterminal)
        self.stamp[nonterminal] = nonterminal
        k = 0
        while k < <int64_t>reached.size():
            x = reached[k]
            k += 1
            for i in range(self.lhs_offsets[x], self.lhs_offsets[x + 1]):
                s = self.rule_first[self.lhs_rules[i]]
                if s >= self.n_terminals and self.lhs_offsets[s + 1] > self.lhs_offsets[s] \
                        and self.stamp[s] != nonterminal:
                    self.stamp[s] = nonterminal
                    reached.push_back(s)
        # sorted by the size of their first moves, largest first, stable
        cdef vector[int64_t] keyed
        for k in range(<int64_t>reached.size()):
            keyed.push_back(-(<int64_t>self.first_count[reached[k]]) * (<int64_t>reached.size()) + k)
        sort(keyed.begin(), keyed.end())
        for k in range(<int64_t>reached.size()):
            self.stamp[reached[k]] = -1
        cdef int64_t n_reached = <int64_t>reached.size()
        cdef vector[int32_t] order
        for k in range(n_reached):
            order.push_back(reached[((keyed[k] % n_reached) + n_reached) % n_reached])
        # entries in first-appearance order; (entry, item) pairs grouped after
        cdef vector[int32_t] symbols, pair_entry, pair_item
        cdef int64_t position
        for k in range(n_reached):
            x = order[k]
            for i in range(self.lhs_offsets[x], self.lhs_offsets[x + 1]):
                rule = self.lhs_rules[i]
                s = self.rule_first[rule]
                if s < 0:
                    continue
                position = self.gathered_position[s]
                if position < 0:
                    position = self.gathered_position[s] = <int64_t>symbols.size()
                    symbols.push_back(s)
                pair_entry.push_back(<int32_t>position)
                pair_item.push_back(self.item_base[rule] + 1)
        cdef int64_t base = <int64_t>self.moves_symbol.size()
        self.moves_first[nonterminal] = base
        self.moves_last[nonterminal] = base + <int64_t>symbols.size()
        cdef vector[int64_t] counts
        counts.assign(symbols.size() + 1, 0)
        for j in range(<int64_t>pair_entry.size()):
            counts[pair_entry[j] + 1] += 1
        for j in range(<int64_t>symbols.size()):
            counts[j + 1] += counts[j]
        cdef int64_t items_base = <int64_t>self.moves_items.size()
        self.moves_items.resize(items_base + pair_item.size())
        for j in range(<int64_t>symbols.size()):
            self.moves_symbol.push_back(symbols[j])
            self.moves_item_offsets.push_back(items_base + counts[j + 1])
            self.gathered_position[symbols[j]] = -1
        for j in range(<int64_t>pair_entry.size()):
            self.moves_items[items_base + counts[pair_entry[j]]] = pair_item[j]
            counts[pair_entry[j]] += 1

    cdef inline void moves_of(self, int32_t nonterminal):
        if self.moves_first[nonterminal] < 0:
            self.make_moves(nonterminal)

    cdef inline int64_t moves_size(self, int32_t nonterminal):
        self.moves_of(nonterminal)
        return self.moves_last[nonterminal] - self.moves_first[nonterminal]

    # ---- closures

    cdef int32_t add_entry(self, int32_t symbol, vector[int32_t]& items, int32_t target, char pending):
        """An entry of the closure being made: ``items`` sorted and made unique as its kernel;
        ``target`` < -1: looked up now."""
        sort(items.begin(), items.end())
        items.erase(unique(items.begin(), items.end()), items.end())
        if target < -1:
            target = self.states.find(items.data(), <int64_t>items.size())
            pending = target < 0
        self.entry_symbol.push_back(symbol)
        self.entry_target.push_back(target)
        self.entry_pending.push_back(pending)
        cdef int64_t i
        for i in range(<int64_t>items.size()):
            self.entry_kernels.push_back(items[i])
        self.entry_kernel_offsets.push_back(<int64_t>self.entry_kernels.size())
        return <int32_t>(self.entry_symbol.size() - 1)

    cdef int32_t expansion(self, int32_t nonterminal):
        """The closure of one nonterminal (its targets looked up now, when first asked for)."""
        cdef int32_t found = self.expansion_of[nonterminal]
        if found >= 0:
            return found
        self.moves_of(nonterminal)
        cdef Closure made
        cdef int64_t e, i
        cdef vector[int32_t] items
        made.first = <int64_t>self.entry_symbol.size()
        for e in range(self.moves_first[nonterminal], self.moves_last[nonterminal]):
            items.assign(&self.moves_items[0] + self.moves_item_offsets[e],
                         &self.moves_items[0] + self.moves_item_offsets[e + 1])
            self.add_entry(self.moves_symbol[e], items, -2, 0)
        made.last = <int64_t>self.entry_symbol.size()
        made.order_first = <int64_t>self.pending_order.size()
        for e in range(made.first, made.last):
            self.pending_order.push_back(<int32_t>e)
        made.order_last = <int64_t>self.pending_order.size()
        self.closures.push_back(made)
        found = self.expansion_of[nonterminal] = <int32_t>(self.closures.size() - 1)
        return found

    cdef int32_t closure_of(self, vector[int32_t]& nonterminals):
        """The closure of a set of nonterminals (ascending): the largest expansion's entries (their
        targets as they stand now), the other expansions' moves merged in; its pending order as the
        Python builder's ``base_pending | pending``."""
        if nonterminals.size() == 1:
            return self.expansion(nonterminals[0])
        cdef int32_t key = self.closure_keys.find(nonterminals.data(), <int64_t>nonterminals.size())
        if key >= 0:
            return self.multi_closure[key]
        cdef int64_t n = <int64_t>nonterminals.size(), k, e, i, position, g
        cdef vector[int64_t] keyed
        for k in range(n):
            keyed.push_back(-self.moves_size(nonterminals[k]) * n + k)
        sort(keyed.begin(), keyed.end())
        cdef vector[int32_t] ordered
        for k in range(n):
            ordered.push_back(nonterminals[((keyed[k] % n) + n) % n])
        cdef int32_t base_nonterminal = ordered[0]
        cdef Closure base = self.closures[self.expansion(base_nonterminal)]
        cdef int32_t s
        for e in range(base.first, base.last):
            self.base_position[self.entry_symbol[e]] = e
        # gathered: a symbol the smaller expansions move on, with all its items (the base's too)
        cdef vector[int32_t] gathered_symbols, pair_entry, pair_item
        for k in range(1, n):
            self.moves_of(ordered[k])
            for e in range(self.moves_first[ordered[k]], self.moves_last[ordered[k]]):
                s = self.moves_symbol[e]
                position = self.gathered_position[s]
                if position < 0:
                    position = self.gathered_position[s] = <int64_t>gathered_symbols.size()
                    gathered_symbols.push_back(s)
                    if self.base_position[s] >= 0:
                        g = self.base_position[s]
                        for i in range(self.entry_kernel_offsets[g], self.entry_kernel_offsets[g + 1]):
                            pair_entry.push_back(<int32_t>position)
                            pair_item.push_back(self.entry_kernels[i])
                for i in range(self.moves_item_offsets[e], self.moves_item_offsets[e + 1]):
                    pair_entry.push_back(<int32_t>position)
                    pair_item.push_back(self.moves_items[i])
        cdef int64_t n_gathered = <int64_t>gathered_symbols.size()
        cdef vector[vector[int32_t]] gathered_items
        gathered_items.resize(n_gathered)
        for i in range(<int64_t>pair_entry.size()):
            gathered_items[pair_entry[i]].push_back(pair_item[i])
        # the gathered entries first (looked up now), then the closure's entries in dict order
        cdef int64_t gathered_first = <int64_t>self.entry_symbol.size()
        for g in range(n_gathered):
            self.add_entry(gathered_symbols[g], gathered_items[g], -2, 0)
        cdef Closure made
        made.first = <int64_t>self.entry_symbol.size()
        cdef vector[int32_t] items
        for e in range(base.first, base.last):
            s = self.entry_symbol[e]
            g = self.gathered_position[s]
            if g >= 0:
                g += gathered_first
                self.copy_entry(g, self.entry_target[g], 0)
            else:
                self.copy_entry(e, self.entry_target[e], 0)
        for g in range(n_gathered):
            if self.base_position[gathered_symbols[g]] < 0:
                self.copy_entry(gathered_first + g, self.entry_target[gathered_first + g], 0)
        made.last = <int64_t>self.entry_symbol.size()
        # pending order: the base's pending entries (in base order), then the gathered pending ones
        made.order_first = <int64_t>self.pending_order.size()
        for e in range(base.first, base.last):
            if not self.entry_pending[e]:
                continue
            g = self.gathered_position[self.entry_symbol[e]]
            if g >= 0 and self.entry_target[gathered_first + g] >= 0:
                continue  # merged with the others' moves into a kernel that is a state already
            self.pending_order.push_back(<int32_t>(made.first + e - base.first))
            self.entry_pending[made.first + e - base.first] = 1
        position = made.first + (base.last - base.first)
        for g in range(n_gathered):
            s = gathered_symbols[g]
            i = self.base_position[s]
            if i >= 0:
                i = made.first + i - base.first  # its entry in the closure
            else:
                i = position
                position += 1
            if self.entry_target[gathered_first + g] < 0 and not (
                    self.base_position[s] >= 0 and self.entry_pending[self.base_position[s]]):
                self.pending_order.push_back(<int32_t>i)
                self.entry_pending[i] = 1
        made.order_last = <int64_t>self.pending_order.size()
        for e in range(base.first, base.last):
            self.base_position[self.entry_symbol[e]] = -1
        for g in range(n_gathered):
            self.gathered_position[gathered_symbols[g]] = -1
        self.closures.push_back(made)
        self.closure_keys.add(nonterminals.data(), n)
        self.multi_closure.push_back(<int32_t>(self.closures.size() - 1))
        return <int32_t>(self.closures.size() - 1)

    cdef void copy_entry(self, int64_t entry, int32_t target, char pending):
        cdef int64_t i
        self.entry_symbol.push_back(self.entry_symbol[entry])
        self.entry_target.push_back(target)
        self.entry_pending.push_back(pending)
        for i in range(self.entry_kernel_offsets[entry], self.entry_kernel_offsets[entry + 1]):
            self.entry_kernels.push_back(self.entry_kernels[i])
        self.entry_kernel_offsets.push_back(<int64_t>self.entry_kernels.size())

    # ---- one state

    cdef inline int32_t number(self, int64_t entry):
        return self.states.add(&self.entry_kernels[0] + self.entry_kernel_offsets[entry],
                               self.entry_kernel_offsets[entry + 1] - self.entry_kernel_offsets[entry])

    cdef void expand(self, int64_t state):
        """The edges of ``state`` (new kernels numbered on the way), as the Python builder's
        ``edges``: its own moves first, then the closure's pending kernels, in their order."""
        cdef int64_t lo = self.states.offsets[state], hi = self.states.offsets[state + 1], i, e, k
        cdef int32_t item, s, c = -1
        cdef vector[int32_t] own_symbols, own_targets, nonterminals, items
        cdef vector[int32_t] pair_entry, pair_item
        for i in range(lo, hi):
            item = self.states.pool[i]
            s = self.next_of[item]
            if s < 0:
                continue
            if self.own_position[s] < 0:
                self.own_position[s] = <int64_t>own_symbols.size()
                own_symbols.push_back(s)
                if s >= self.n_terminals:
                    nonterminals.push_back(s)
            pair_entry.push_back(<int32_t>self.own_position[s])
            pair_item.push_back(item + 1)
        cdef int64_t n_own = <int64_t>own_symbols.size()
        cdef vector[vector[int32_t]] advanced
        advanced.resize(n_own)
        for i in range(<int64_t>pair_entry.size()):
            advanced[pair_entry[i]].push_back(pair_item[i])
        cdef Closure closure
        if nonterminals.size():
            sort(nonterminals.begin(), nonterminals.end())
            c = self.closure_of(nonterminals)
            closure = self.closures[c]
            for e in range(closure.first, closure.last):
                self.closure_position[self.entry_symbol[e]] = e
        own_targets.resize(n_own)
        for k in range(n_own):
            items = advanced[k]
            if c >= 0 and self.closure_position[own_symbols[k]] >= 0:
                e = self.closure_position[own_symbols[k]]
                for i in range(self.entry_kernel_offsets[e], self.entry_kernel_offsets[e + 1]):
                    items.push_back(self.entry_kernels[i])
                sort(items.begin(), items.end())
                items.erase(unique(items.begin(), items.end()), items.end())
            elif items.size() > 1:
                sort(items.begin(), items.end())
                items.erase(unique(items.begin(), items.end()), items.end())
            own_targets[k] = self.states.add(items.data(), <int64_t>items.size())
        if c >= 0:
            for i in range(closure.order_first, closure.order_last):
                e = self.pending_order[i]
                if self.entry_pending[e] and self.own_position[self.entry_symbol[e]] < 0:
                    self.entry_target[e] = self.number(e)
                    self.entry_pending[e] = 0
            for e in range(closure.first, closure.last):
                s = self.entry_symbol[e]
                self.edge_symbol.push_back(s)
                if self.own_position[s] >= 0:
                    self.edge_target.push_back(own_targets[self.own_position[s]])
                    self.own_position[s] = -2 - self.own_position[s]  # emitted
                else:
                    if self.entry_target[e] < 0:  # (a stale pending kernel: a state by now)
                        self.entry_target[e] = self.number(e)
                    self.edge_target.push_back(self.entry_target[e])
                self.closure_position[s] = -1
        for k in range(n_own):
            s = own_symbols[k]
            if self.own_position[s] >= 0:
                self.edge_symbol.push_back(s)
                self.edge_target.push_back(own_targets[k])
            self.own_position[s] = -1
        self.edge_offsets.push_back(<int64_t>self.edge_symbol.size())
