"""Stage 5: online masks — Alg. 5 checks, Alg. 6 masks, the Indenter's layout, the Matcher."""
