"""Integer and decimal ranges as regular languages over canonical JSON numbers."""

from __future__ import annotations

import math
from decimal import Decimal
from localgcd.grammar.json_schema.spec import NumberSpec

#: An exact bound: an integer, or the decimal a JSON number spells.
Bound = int | Decimal


# --------------------------------------------------------------------------

def _digit_class(a: int, b: int) -> str:
    return str(a) if a == b else f"[{a}-{b}]"


_GROUP_DIGITS = 32  # a long bound's alternatives are grouped every this many digits


def _digits_range(lo: str, hi: str) -> list[str]:
    """Regexes for equal-length digit strings between lo and hi inclusive (O(digits) of them:
    a full block of trailing digits is one class, never split).  Every ``_GROUP_DIGITS`` digits
    the alternatives below are one group, so a long bound's regex is linear in its digits, not
    quadratic (each alternative spelling the bound's prefix), and groups nest only digits / 32 deep."""
    if lo == hi:
        return [lo]
    n = len(lo) - 1

    def prefixed(digit: str, alts: list[str]) -> list[str]:
        if len(alts) > 1 and n % _GROUP_DIGITS == 0:
            return [f"{digit}(?:{'|'.join(alts)})"]
        return [digit + r for r in alts]

    if lo[0] == hi[0]:
        return prefixed(lo[0], _digits_range(lo[1:], hi[1:]))
    a, b = int(lo[0]), int(hi[0])
    head, tail = [], []
    if lo[1:] != "0" * n:
        head = prefixed(lo[0], _digits_range(lo[1:], "9" * n))
        a += 1
    if hi[1:] != "9" * n:
        tail = prefixed(hi[0], _digits_range("0" * n, hi[1:]))
        b -= 1
    block = _digit_class(a, b) + (f"[0-9]{{{n}}}" if n else "")  # any n digits after
    return head + ([block] if a <= b else []) + tail


def nat_range(lo: int, hi: int | None) -> str | None:
    """Decimal naturals (no leading zeros) in [lo, hi] (hi None: unbounded), lo >= 0.

    The lengths whose every number is inside are one alternative, ``[1-9][0-9]{a,b}``: only the
    first and the last length are spelled digit by digit (a bound like ``1e308`` has 309 digits:
    one alternative per length made a regex of 100,000 characters and a 40-second automaton)."""
    alts = []
    cur = lo
    while hi is None or cur <= hi:
        d = len(str(cur))
        if cur != 10 ** (d - 1):  # a partial first length (0 starts the one-digit length)
            top = 10 ** d - 1 if hi is None or hi > 10 ** d - 1 else hi
            alts += _digits_range(str(cur), str(top))
            cur = top + 1
            continue
        if hi is None:
            alts.append(r"[1-9][0-9]{%d,}" % (d - 1))
            break
        last_full = len(str(hi)) if str(hi + 1) == "1" + "0" * len(str(hi)) else len(str(hi)) - 1
        if last_full < d:  # the last length, partly inside
            alts += _digits_range(str(cur), str(hi))
            break
        alts.append("[1-9]" + _any_digits(d - 1, last_full - 1))
        cur = 10 ** last_full
    return "(?:" + "|".join(alts) + ")" if alts else None


def _naturals(lo: int, hi: int | None) -> str:
    """``nat_range`` of a range that is not empty (``lo <= hi``)."""
    found = nat_range(lo, hi)
    assert found is not None, (lo, hi)
    return found


def _any_digits(lo: int, hi: int) -> str:
    """From ``lo`` to ``hi`` digits, any."""
    if hi == 0:
        return ""
    return f"[0-9]{{{lo}}}" if lo == hi else f"[0-9]{{{lo},{hi}}}"


def int_range(lo: int | None, hi: int | None) -> str | None:
    """Canonical integers in [lo, hi] (None: unbounded)."""
    alts: list[str] = []
    if hi is None or hi >= 0:
        r = nat_range(max(lo, 0) if lo is not None else 0, hi)
        if r:
            alts.append(r)
    if lo is None or lo < 0:
        mlo = max(-hi, 1) if hi is not None else 1
        mhi = -lo if lo is not None else None
        if mhi is None or mlo <= mhi:
            alts.append("-" + _naturals(mlo, mhi))
    if not alts:
        return None
    return "(?:" + "|".join(alts) + ")"


def _split(x: Bound) -> tuple[int, str]:
    """(integer part, fraction digits without trailing zeros) of a decimal x >= 0."""
    whole, _, frac = format(Decimal(x), "f").partition(".")  # (an int bound as a Decimal: no float overflow)
    return int(whole), frac.rstrip("0")


def _frac_above(lo: str) -> list[str]:
    """Fraction digit strings F (non-empty) with 0.F > 0.lo."""
    alts = [lo[:i] + _digit_class(int(d) + 1, 9) + "[0-9]*" for i, d in enumerate(lo) if d != "9"]
    return alts + [lo + "[0-9]*[1-9][0-9]*"]


def _frac_open(lo: str, hi: str) -> list[str]:
    """Fraction digit strings F (non-empty) with 0.lo < 0.F < 0.hi (``hi`` non-empty)."""
    a, b = int(lo[0]) if lo else 0, int(hi[0])
    if a == b:
        return [f"{a}{r}" for r in _frac_open(lo[1:], hi[1:])] if hi[1:] else []
    alts = [f"{a}{r}" for r in _frac_above(lo[1:])]
    if b - a > 1:
        alts.append(_digit_class(a + 1, b - 1) + "[0-9]*")
    if hi[1:]:  # first digit b, then 0.rest < 0.hi[1:]
        alts.append(f"{b}(?:" + "|".join(["0*"] + _frac_open("", hi[1:])) + ")")
    return alts


def _mag_open(p: Bound, q: Bound | None) -> str | None:
    """Plain decimals (with a '.') whose magnitude lies in the open interval (p, q), 0 <= p < q."""
    pi, pf = _split(p)
    qi, qf = _split(q) if q is not None else (None, "")
    if qi == pi:
        fracs = _frac_open(pf, qf)
        return _naturals(pi, pi) + r"\.(?:" + "|".join(fracs) + ")" if fracs else None
    alts = [_naturals(pi, pi) + r"\.(?:" + "|".join(_frac_above(pf)) + ")"]
    if qi is None or pi + 1 <= qi - 1:
        alts.append(_naturals(pi + 1, None if qi is None else qi - 1) + r"\.[0-9]+")
    if qf:
        assert qi is not None
        alts.append(_naturals(qi, qi) + r"\.(?:0+|" + "|".join(_frac_open("", qf)) + ")")
    return "(?:" + "|".join(alts) + ")"


def dec_point(b: Bound) -> str:
    """Plain decimals (with a '.') equal to ``b``."""
    whole, frac = _split(-b if b < 0 else b)
    m = _naturals(whole, whole) + r"\." + (frac + "0*" if frac else "0+")
    if b == 0:
        return "-?" + m
    return ("-" if b < 0 else "") + m


def dec_open(a: Bound | None, b: Bound | None) -> str | None:
    """Plain decimals with value in the open interval (a, b) (None: infinite)."""
    alts: list[str | None] = []
    if b is None or b > 0:
        alts.append(_mag_open((a if a >= 0 else 0) if a is not None else Decimal(0), b))
    if a is None or a < 0:
        lo = (-b if -b >= 0 else 0) if b is not None else Decimal(0)
        neg = _mag_open(lo, None if a is None else -a)
        alts.append(None if neg is None else "-" + neg)
    if (a is None or a < 0) and (b is None or b > 0):
        alts.append(r"-?0\.0+")
    found = [x for x in alts if x is not None]
    return "(?:" + "|".join(found) + ")" if found else None


EXP_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?[eE][+-]?[0-9]+"

def is_num(v: object) -> bool:
    """Is ``v`` a JSON number (not a boolean)?"""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def exact(v: int | float) -> Bound:
    """A bound as an exact number: an integer, or the decimal a float is written as (its repr,
    the value a JSON text spells)."""
    if isinstance(v, int) or v.is_integer():
        return int(v)
    return Decimal(repr(v))


def integral(v: int | float) -> bool:
    """Is the JSON number ``v`` an integer (without turning a big ``int`` into a float, which overflows)?"""
    return isinstance(v, int) or v.is_integer()


def int_bounds(ns: NumberSpec) -> tuple[int | None, int | None]:
    """The least and greatest integers inside the bounds of ``ns`` (None: unbounded)."""
    lo = None if ns.lo is None else math.floor(ns.lo) + 1 if ns.lo_open or ns.lo % 1 else int(ns.lo)
    hi = None if ns.hi is None else math.ceil(ns.hi) - 1 if ns.hi_open or ns.hi % 1 else int(ns.hi)
    return lo, hi
