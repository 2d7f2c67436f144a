"""A vocabulary's tokens grouped by token class, laid out for the mask kernels' passes.

A spanner's classes (an eager one's: tokens that behave alike; a lazy one's: trie positions) are
what a mask's verdicts are per; the kernels in :mod:`localgcd.runtime.assembly` write a mask by
reading those verdicts class by class and setting the members' bits.  The layout depends on the
classes alone, so a lazy spanner's is made once per trie and shared by every grammar's engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TokenClasses:
    """A vocabulary's tokens by class in the order the kernels write masks in: each class's first
    token (where every class has one: a lazy spanner's classes are the trie's positions), the
    other members as (class, token) pairs in class order, and the tokens of no class (-1, not
    text).  A kernel reads the classes' verdicts in order and sets the members' bits in the
    packed words (a few KB, in the L1 cache): a gather by token reads an int64 class per token
    and the verdicts of 128K classes at random."""

    class_token: np.ndarray  # int32 [n_classes], or empty: every member in the pairs
    extra_class: np.ndarray  # int32, ascending
    extra_token: np.ndarray  # int32
    classless: np.ndarray  # int32: the tokens of class -1
    n_classes: int
    n_tokens: int

    @classmethod
    def of(cls, token_class: np.ndarray, n_classes: int,
           class_members: tuple[np.ndarray, np.ndarray] | None = None) -> "TokenClasses":
        """From each token's class (``-1``: none, classes below ``n_classes``), with the
        spanner's ``class_members`` (token ids grouped by class, offsets) where it has them made."""
        token_class = np.asarray(token_class)
        if token_class.size and (token_class.min() < -1 or token_class.max() >= n_classes):
            raise ValueError("a token's class past the classes")
        if class_members is None:
            tokens = np.flatnonzero(token_class >= 0)
            tokens = tokens[np.argsort(token_class[tokens], kind="stable")]
            offsets = np.concatenate(([0], np.cumsum(np.bincount(token_class[tokens], minlength=n_classes))))
        else:
            tokens, offsets = class_members
            if offsets.size != n_classes + 1 or offsets[0] != 0 or offsets[-1] != tokens.size \
                    or (np.diff(offsets) < 0).any():
                raise ValueError("class members of another number of classes")
        if tokens.size and (tokens.min() < 0 or tokens.max() >= token_class.size):
            raise ValueError("a class member past the tokens")
        tokens = tokens.astype(np.int32)
        classless = np.flatnonzero(token_class < 0).astype(np.int32)
        if tokens.size + classless.size != token_class.size:
            raise ValueError("class members that are not the tokens of a class")
        counts = np.diff(offsets)
        if n_classes and counts.min() >= 1:  # each class's first token apart, the others paired
            class_token = tokens[offsets[:-1]]
            others = np.ones(tokens.size, dtype=bool)
            others[offsets[:-1]] = False
            extra_class = np.repeat(np.arange(n_classes, dtype=np.int32), counts - 1)
            extra_token = tokens[others]
        else:
            class_token = np.empty(0, dtype=np.int32)
            extra_class, extra_token = np.repeat(np.arange(n_classes, dtype=np.int32), counts), tokens
        for array in (class_token, extra_class, extra_token, classless):
            array.flags.writeable = False
        return cls(class_token, extra_class, extra_token, classless, int(n_classes), int(token_class.size))

    def kernel_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        return self.class_token, self.extra_class, self.extra_token, self.classless, self.n_tokens
