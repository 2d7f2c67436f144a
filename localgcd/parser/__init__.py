"""Stage 4: LALR(1) tables, their stack-free analysis, and the pushdown automaton over them."""
