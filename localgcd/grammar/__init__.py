"""Stage 1: grammar front ends → the one internal grammar (terminals + rules)."""
