"""The thresholds and switches of the pipeline: one frozen value a :class:`~localgcd.compiler.compiler.Compiler` owns.

A :class:`Tuning` is configuration, passed down explicitly from ``Compiler(tuning=Tuning(...))``
through the stages that read it (no stage reads a module global for these).  Two kinds of field:

* **speed settings** choose between two ways to the same result (a table listed whole or row by
  row, a walk node by node or level by level, a fixpoint by pairs or by groups, tracked lexer
  modes explored in one walk or one by one): the tables are identical whatever their values, so
  they are not part of a cache key;
* **table switches** turn a construction on or off (terminal classes in the LALR analysis,
  shared string rules, chunk counts left to right): the language is the same, the tables are
  not, so :meth:`Tuning.table_key` names those that differ from the defaults and the compiler's
  cache key includes it (tests/test_tuning.py checks both kinds).

What defines the language accepted (``MAX_ITEMS``, ``MAX_COUNT``, ``MAX_LENGTH_BOUND``) is the
schema's semantics or the compile budget (:mod:`localgcd.budget`), not tuning.

Bottom layer: imports nothing of localgcd.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Tuning:
    """Thresholds (same tables, other speed) and switches (other tables, same language).

    Speed thresholds:

    ``eager_list_cells``: a table of more cells is converted to Python lists a row at a time, on
    first read (parse tables in the PDA and the outcome checker; most rows of a big table are
    never read).  ``small_frontier``: (node, state) pairs at most for a level of the spanner's
    numpy walk done node by node.  ``eager_step_rows``: lexer states up to which every row of the
    spanner walk's step codes is made up front.  ``breadth_from``: a branch over this many trie
    positions is walked breadth first by the compiled walk kernel.  ``pair_rows_limit``,
    ``group_rows_min``, ``group_fan_out``: the stack-free analysis's fixpoint goes by groups of
    reduce pairs above ``pair_rows_limit`` rows, or from ``group_rows_min`` rows on where a group
    has ``group_fan_out`` rows or more on average; by pairs otherwise.  ``max_unit_steps``: cells
    of a tracked JSON Schema pattern's table of states after each character shape (bigger: steps
    byte by byte).  ``scalar_below``: the outcome checker goes on in plain Python with fewer live
    (stack, outcome) pairs.  ``tracked_modes``: the lexer's tracked modes with conditions and no
    plain strings (a JSON Schema's chunk modes) explored in one walk (False: each mode's own
    product; the same DFA).  ``general_stacks``, ``general_stack_steps``, ``general_mask_steps``: a
    general grammar's mask is made either stack by stack by the deterministic engine up to the
    conflict cells, or by checking every distinct outcome of the row on the graph-structured stack
    (the same mask), whichever would cost less: the outcome path costs about one general-parser step
    per distinct prefix of the row's outcomes (and per distinct place one ends: its ``steps``,
    counted once per row), the stack path ``general_mask_steps`` such steps per mask and
    ``general_stack_steps`` per live stack, so a frontier is read stack by stack when it spells at
    most ``(steps - general_mask_steps) // general_stack_steps`` stacks, never more than
    ``general_stacks`` (and no ε-loop; with lark's Indenter, whose outcome path feeds the layout too:
    stack by stack wherever it can, unpriced); ``general_stacks=0``: always outcome by outcome;
    ``general_stack_steps=0``: stack by stack up to ``general_stacks``.  (The prices: a step took
    1–40 µs, a stack's cold mask 0.3–1 ms and a mask's fixed part about 1 ms on the expression,
    palindrome and dynamic_complete grammars of bench/ambiguous_masks.py and bench/dynamic_lexer.py;
    chosen so each of them goes the way it measured cheaper.)  ``general_memo_nodes``: hash-consed
    stack nodes and frontiers the general parser keeps for sharing, and masks kept per set of live
    stacks, each; past it the table starts afresh (sharing lost, nothing else: the nodes a matcher
    holds stay whole).  ``copy_states``,
    ``copy_entries``: a lazy row's new branch entered in a lexer state whose closure (the states a
    lexeme reaches from it without ending) is a copy of the closure of a walked branch of the same
    first byte with ``copy_entries`` entries or more -- found by walking the two closures in pairs,
    up to ``copy_states`` pairs -- is that branch with its outcomes renamed, not walked (Go's
    operators each swallow the blanks after them in a copy of one automaton; 0: every branch
    walked).  ``run_share``: a lazy row's dense part is ranked from its branches' entries as runs
    (consecutive positions with one outcome, kept per branch) where each branch has at most one run
    per ``run_share`` entries (0: always from the entries).

    Table switches (the same language; other tables):

    ``class_grammar``: big terminal classes analyzed as one terminal each in the LALR analysis
    (when that meets no conflict).  ``class_min``: members of a class worth a terminal of its own.
    ``string_sets``: a JSON Schema's sets of string terminals share their literals' rules (False:
    one flat rule per set).  ``count_long_strings_left``: a long string's chunk count as a prefix
    counted left to right where it can be (False: links only).
    """

    eager_list_cells: int = 1 << 10
    small_frontier: int = 24
    eager_step_rows: int = 4096
    breadth_from: int = 256
    pair_rows_limit: int = 2_000_000
    group_rows_min: int = 10_000
    group_fan_out: int = 20
    max_unit_steps: int = 1 << 22
    scalar_below: int = 32
    tracked_modes: bool = True
    general_stacks: int = 1024
    general_stack_steps: int = 64
    general_mask_steps: int = 512
    general_memo_nodes: int = 1 << 18
    copy_states: int = 64
    copy_entries: int = 4096
    run_share: int = 4

    class_grammar: bool = True
    class_min: int = 16
    string_sets: bool = True
    count_long_strings_left: bool = True

    #: The fields that change the tables built (the rest change only how fast they are built).
    TABLE_FIELDS = ("class_grammar", "class_min", "string_sets", "count_long_strings_left")

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            expected = bool if field.type in ("bool", bool) else int
            if type(value) is not expected:
                raise TypeError(f"Tuning.{field.name} must be {expected.__name__}, not {value!r}")

    def table_key(self) -> str:
        """The switches that differ from the defaults, as text for a cache key ("" for the defaults,
        so an entry written before Tuning existed keeps its key)."""
        default = Tuning()
        changed = [f"{name}={getattr(self, name)!r}" for name in self.TABLE_FIELDS
                   if getattr(self, name) != getattr(default, name)]
        return f"tuning({', '.join(changed)})" if changed else ""
