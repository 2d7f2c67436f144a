"""Cold masks of small ambiguous grammars whose frontiers spell many stacks (issue 37).

    python bench/ambiguous_masks.py [--vocab llama-bpe] [--general-stacks N ...]

An ambiguous expression grammar (``e: e "+" e | e "*" e | ...``, every binary tree of the text a
parse: the stacks grow as Catalan numbers) and a palindrome grammar, ``parser="earley",
lexer="basic"``, forced one character at a time (the vocabulary's one-byte tokens) along a text;
every position's mask is cold (a fresh compile per setting).  CPU time per mask: p50, max and the
sum.  ``--general-stacks``: one row per ``Tuning.general_stacks`` given (the default's, else).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: name -> (grammar, text)
GRAMMARS = {
    "expressions": ('start: e\ne: e "+" e | e "*" e | e "-" e | "(" e ")" | NUM\nNUM: /[0-9]+/\n%ignore " "\n',
                    "1+2*3-4+5*6-7+8*9-10+11*12-13+14*15-16+17*(18+19)*20-21"),
    "palindromes": ('start: p\np: "a" p "a" | "b" p "b" | "a" | "b" | "a" "a" | "b" "b"\n',
                    "abbaabbaabbaabbaabbaabba"),
}


def masks_ms(grammar: str, text: str, vocab, one_byte: dict[bytes, int], tuning) -> np.ndarray:
    import localgcd

    compiled = localgcd.compile_grammar(grammar, vocab, parser="earley", lexer="basic", use_cache=False,
                                        **({"tuning": tuning} if tuning is not None else {}))
    matcher, bitmask, ms = compiled.matcher(), localgcd.allocate_token_bitmask(1, len(vocab)), []
    data = text.encode()
    for i in range(len(data)):
        t0 = time.process_time()
        localgcd.fill_next_token_bitmask([matcher], bitmask)
        ms.append((time.process_time() - t0) * 1e3)
        assert matcher.advance(one_byte[data[i:i + 1]]), matcher.error
    assert matcher.is_accepting()
    return np.array(ms)


def main() -> None:
    from localgcd.llama.vocab_sources import vocab_path
    from localgcd.llama.vocabulary import load_vocabulary
    from localgcd.tuning import Tuning

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="llama-bpe")
    ap.add_argument("--general-stacks", type=int, nargs="*", default=None)
    args = ap.parse_args()
    vocab = load_vocabulary(vocab_path(args.vocab))
    one_byte: dict[bytes, int] = {}
    for token, piece in enumerate(vocab.token_bytes):
        if len(piece) == 1:
            one_byte.setdefault(piece, token)
    settings = [None] if not args.general_stacks else [Tuning(general_stacks=n) for n in args.general_stacks]
    print(f"parser='earley', lexer='basic' × {args.vocab}, one character per token, cold masks: CPU ms\n")
    print("| grammar | general_stacks | masks | p50 | max | sum |")
    print("|---|---|---|---|---|---|")
    for name, (grammar, text) in GRAMMARS.items():
        for tuning in settings:
            ms = masks_ms(grammar, text, vocab, one_byte, tuning)
            stacks = (tuning or Tuning()).general_stacks
            print(f"| {name} | {stacks} | {ms.size} | {np.median(ms):.2f} | {ms.max():.1f} | {ms.sum():.0f} |")


if __name__ == "__main__":
    main()
