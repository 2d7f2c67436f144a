"""Reference recognizer for GBNF, independent of ``localgcd.grammar.gbnf``.

Its own small GBNF reader (written from llama.cpp's grammars/README.md and
``llama-grammar.cpp``) turns the grammar into a plain character-level BNF:
terminals are sets of code points, repetitions become right-recursive helper
rules, nothing is merged or made into tokens.  An Earley recognizer over code
points answers, for a *byte* prefix:

* ``viable_bytes(prefix)``: the bytes ``b`` such that ``prefix + b`` is a
  prefix of the UTF-8 encoding of some sentence;
* ``complete(prefix)``: ``prefix`` is the UTF-8 encoding of a sentence.

The Earley recognizer is :mod:`reference.earley`'s.  Unproductive rules are
removed first, so every item the Earley chart predicts can be completed: a character that some item can scan next is
exactly a character that continues the prefix towards a sentence.  A byte
prefix that ends inside a multi-byte character is handled with the interval
of code points whose encoding starts with those bytes (UTF-8 is
order-preserving).  ``.`` and ``[^...]`` mean any code point except the
surrogates, which UTF-8 cannot encode.
"""

from __future__ import annotations

import functools

from reference.earley import EarleyRecognizer, nullable_nonterminals

SURROGATES = (0xD800, 0xDFFF)
MAX_CP = 0x10FFFF


def _norm(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _minus_surrogates(ranges):
    out = []
    for lo, hi in ranges:
        if hi < SURROGATES[0] or lo > SURROGATES[1]:
            out.append((lo, hi))
            continue
        if lo < SURROGATES[0]:
            out.append((lo, SURROGATES[0] - 1))
        if hi > SURROGATES[1]:
            out.append((SURROGATES[1] + 1, hi))
    return _norm(out)


class GbnfSyntaxError(Exception):
    pass


class _Reader:
    """GBNF text → {rule: [alternative: [symbol]]}; a symbol is a rule name (str)
    or a tuple of code point intervals."""

    ESC = {"n": 10, "r": 13, "t": 9, "\\": 92, '"': 34, "[": 91, "]": 93, "-": 45}

    def __init__(self, text):
        self.s, self.k = text, 0
        self.rules = {}
        self.helpers = 0

    def ws(self, nl):
        while self.k < len(self.s):
            c = self.s[self.k]
            if c == "#":
                while self.k < len(self.s) and self.s[self.k] not in "\r\n":
                    self.k += 1
            elif c in " \t" or (nl and c in "\r\n"):
                self.k += 1
            else:
                return

    def at(self, off=0):
        return self.s[self.k + off] if self.k + off < len(self.s) else ""

    def word(self):
        j = self.k
        while self.at() and (self.at().isascii() and (self.at().isalnum() or self.at() == "-")):
            self.k += 1
        if j == self.k:
            raise GbnfSyntaxError(f"name expected at {self.k}")
        return self.s[j:self.k]

    def char(self):
        c = self.at()
        if c == "":
            raise GbnfSyntaxError("eof")
        if c != "\\":
            self.k += 1
            return ord(c)
        e = self.at(1)
        if e in self.ESC:
            self.k += 2
            return self.ESC[e]
        n = {"x": 2, "u": 4, "U": 8}.get(e)
        if n is None:
            raise GbnfSyntaxError(f"bad escape at {self.k}")
        h = self.s[self.k + 2:self.k + 2 + n]
        self.k += 2 + n
        return int(h, 16)

    def new_rule(self, alts):
        self.helpers += 1
        name = f" h{self.helpers}"
        self.rules[name] = alts
        return name

    def read(self):
        self.ws(True)
        while self.k < len(self.s):
            name = self.word()
            self.ws(False)
            if self.s[self.k:self.k + 3] != "::=":
                raise GbnfSyntaxError(f"::= expected at {self.k}")
            self.k += 3
            self.ws(True)
            self.rules[name] = self.alts(False)
            if self.at() in ("\n", "\r"):
                self.k += 1
            elif self.at():
                raise GbnfSyntaxError(f"newline expected at {self.k}")
            self.ws(True)
        return self.rules

    def alts(self, nested):
        out = [self.seq(nested)]
        while self.at() == "|":
            self.k += 1
            self.ws(True)
            out.append(self.seq(nested))
        return out

    def seq(self, nested):
        items = []  # each item: list of symbols
        while True:
            c = self.at()
            if c == '"':
                self.k += 1
                syms = []
                while self.at() != '"':
                    cp = self.char()
                    syms.append(((cp, cp),))
                self.k += 1
                items.append(syms)
            elif c == "[":
                self.k += 1
                neg = self.at() == "^"
                self.k += neg
                rs = []
                while self.at() != "]":
                    lo = self.char()
                    hi = lo
                    if self.at() == "-" and self.at(1) not in ("]", ""):
                        self.k += 1
                        hi = self.char()
                    rs.append((lo, hi))
                self.k += 1
                rs = _norm(rs)
                if neg:
                    comp, at = [], 0
                    for lo, hi in rs:
                        if lo > at:
                            comp.append((at, lo - 1))
                        at = hi + 1
                    if at <= MAX_CP:
                        comp.append((at, MAX_CP))
                    rs = comp
                items.append([_minus_surrogates(rs)])
            elif c == ".":
                self.k += 1
                items.append([_minus_surrogates([(0, MAX_CP)])])
            elif c == "(":
                self.k += 1
                self.ws(True)
                inner = self.alts(True)
                if self.at() != ")":
                    raise GbnfSyntaxError(") expected")
                self.k += 1
                items.append([self.new_rule(inner)])
            elif c and c.isascii() and (c.isalnum() or c == "-"):
                items.append([self.word()])
            elif c in ("*", "+", "?", "{"):
                self.k += 1
                if c == "{":
                    self.ws(nested)
                    j = self.k
                    while self.at().isdigit():
                        self.k += 1
                    lo = int(self.s[j:self.k])
                    self.ws(nested)
                    if self.at() == "}":
                        hi = lo
                    else:
                        assert self.at() == ","
                        self.k += 1
                        self.ws(nested)
                        j = self.k
                        while self.at().isdigit():
                            self.k += 1
                        hi = int(self.s[j:self.k]) if self.k > j else None
                        self.ws(nested)
                    assert self.at() == "}"
                    self.k += 1
                    if hi is not None and hi > 2000:
                        hi = None
                else:
                    lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                items[-1] = self.repeat(items[-1], lo, hi)
            elif c in ("<", "!"):
                raise GbnfSyntaxError("tokens")
            else:
                return [s for it in items for s in it]
            self.ws(nested)

    def repeat(self, syms, lo, hi):
        x = self.new_rule([list(syms)])
        out = [x] * lo
        if hi is None:
            star = self.new_rule([[]])
            self.rules[star].append([x, star])
            return out + [star]
        tail = None
        for _ in range(hi - lo):
            tail = self.new_rule([[], [x] + ([tail] if tail else [])])
        return out + ([tail] if tail else [])


def _utf8_interval(prefix: bytes):
    """Code points whose UTF-8 encoding starts with ``prefix`` (non-empty), as
    a list of intervals (empty when no valid encoding starts so)."""
    b0 = prefix[0]
    if b0 < 0x80:
        n, acc = 1, b0
    elif 0xC0 <= b0 < 0xE0:
        n, acc = 2, b0 & 0x1F
    elif 0xE0 <= b0 < 0xF0:
        n, acc = 3, b0 & 0x0F
    elif 0xF0 <= b0 < 0xF8:
        n, acc = 4, b0 & 0x07
    else:
        return []
    if len(prefix) > n or any(not 0x80 <= b < 0xC0 for b in prefix[1:]):
        return []
    for b in prefix[1:]:
        acc = (acc << 6) | (b & 0x3F)
    rest = 6 * (n - len(prefix))
    lo, hi = acc << rest, (acc << rest) | ((1 << rest) - 1)
    valid = {1: (0, 0x7F), 2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, MAX_CP)}[n]
    lo, hi = max(lo, valid[0]), min(hi, valid[1])
    return list(_minus_surrogates([(lo, hi)])) if lo <= hi else []


class GbnfReference:
    """The language of a GBNF grammar over code points (and their UTF-8 bytes), recognized by
    :class:`reference.earley.EarleyRecognizer`.

    llama.cpp refuses a grammar with a left-recursive rule (``llama_grammar_init_impl``: "unsupported
    grammar, left recursion detected"); :meth:`left_recursive_rules` names them, and the reference
    still recognizes such a grammar's context-free language (it is what the rules mean)."""

    def __init__(self, text: str, start: str = "root"):
        rules = _Reader(text).read()
        self.source_rules = rules
        # a character class with no code point matches nothing: its alternative is dropped
        usable = {r: [a for a in alts if all(not isinstance(s, tuple) or s for s in a)] for r, alts in rules.items()}
        self.earley = EarleyRecognizer(usable, start)
        assert self.earley.initial() is not None, "root is unproductive"
        self.rules = self.earley.rules
        self.nullable = self.earley.nullable
        self.start = start
        self._chart = {}

    def left_recursive_rules(self) -> list[str]:
        """The rules that derive a string starting with themselves, looking past nullable symbols.
        llama.cpp refuses a grammar with one ("left recursion detected") when every nullable
        symbol it looks past is a rule with an empty alternative of its own
        (``llama_grammar_detect_left_recursion`` looks no deeper); behind a rule that is nullable
        only through another one (``y ::= "c"*``) it misses the recursion and then recurses without
        end in its first stack expansion (the process aborts).  Either way llama.cpp runs no such
        grammar.  Groups and repetitions are helper rules, named ``" hN"``."""
        rules = self.source_rules
        nullable = nullable_nonterminals(rules)
        first: dict[str, set[str]] = {r: set() for r in rules}
        for r, alts in rules.items():
            for alt in alts:
                for s in alt:
                    if isinstance(s, tuple):
                        break
                    first[r].add(s)
                    if s not in nullable:
                        break
        out = []
        for r in rules:
            seen, todo = set(), list(first[r])
            while todo:
                x = todo.pop()
                if x in seen or x not in first:
                    continue
                seen.add(x)
                todo.extend(first[x])
            if r in seen:
                out.append(r)
        return out

    # -- Earley over code points ------------------------------------------
    def _sets(self, text: str):
        """The Earley chart after the code points of text, or None once dead (cached by prefix)."""
        if text in self._chart:
            return self._chart[text]
        known = len(text)
        while known > 0 and text[:known] not in self._chart:
            known -= 1
        if known == 0 and "" not in self._chart:
            self._chart[""] = self.earley.initial()
        result = self._chart[text[:known]]
        for k in range(known, len(text)):
            if result is not None:
                cp = ord(text[k])
                result = self.earley.scan(result, lambda ranges: any(lo <= cp <= hi for lo, hi in ranges))
            if len(self._chart) > 20000:
                self._chart.clear()
            self._chart[text[:k + 1]] = result
        return result

    def next_chars(self, text: str):
        """Code point intervals that can follow ``text`` (None if text is dead)."""
        chart = self._sets(text)
        if chart is None:
            return None
        return _norm([r for ranges in self.earley.expected(chart) for r in ranges])

    def accepts_text(self, text: str) -> bool:
        chart = self._sets(text)
        return chart is not None and self.earley.accepts(chart)

    # -- bytes ---------------------------------------------------------------
    @staticmethod
    def _split(prefix: bytes):
        """(complete text, incomplete tail bytes) or None if prefix is not a UTF-8 prefix."""
        for cut in range(len(prefix), max(len(prefix) - 4, -1), -1):
            try:
                text = prefix[:cut].decode("utf-8")
            except UnicodeDecodeError:
                continue
            tail = prefix[cut:]
            if not tail or _utf8_interval(tail) and len(tail) < _expected_len(tail[0]):
                return text, tail
            return None
        return None

    def viable_bytes(self, prefix: bytes) -> set[int]:
        split = self._split(prefix)
        if split is None:
            return set()
        text, tail = split
        allowed = self.next_chars(text)
        if not allowed:
            return set()
        out = set()
        for b in range(256):
            for lo, hi in _utf8_interval(tail + bytes([b])):
                if any(a <= hi and lo <= z for a, z in allowed):
                    out.add(b)
                    break
        return out

    def complete(self, prefix: bytes) -> bool:
        try:
            text = prefix.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return self.accepts_text(text)


@functools.lru_cache(maxsize=None)
def _expected_len(b0: int) -> int:
    return 1 if b0 < 0x80 else 2 if b0 < 0xE0 else 3 if b0 < 0xF0 else 4
