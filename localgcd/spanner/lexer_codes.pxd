# The lexing transducer's codes as the spanner's kernels read them (see lexer/transducer.py): a
# step's next state, DEAD where the byte ends every lexeme; its emission, NO_EMIT where none ends.
from libc.stdint cimport int16_t, int32_t

ctypedef fused emit_t:  # a transducer's emitted-terminal table: int16 up to 32,767 terminals
    int16_t
    int32_t

cdef enum:
    DEAD = -1
    NO_EMIT = -1
