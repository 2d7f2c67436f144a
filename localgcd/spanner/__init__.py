"""Stage 3: the token spanner — every token's outcome from every lexer state, over a vocabulary trie."""
