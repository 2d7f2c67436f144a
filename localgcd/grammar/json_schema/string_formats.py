"""The ``format`` values the JSON Schema front end enforces, as regexes (ASCII only: their canonical
JSON spelling needs no escapes); deliberately strict subsets of the RFCs' syntax."""

from __future__ import annotations


_D2 = r"[0-9]{2}"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
# a calendar date: days per month, 29 February only in leap years (RFC 3339 full-date)
_DATE = (r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
         r"|02-(?:0[1-9]|1[0-9]|2[0-8]))|" + _LEAP_YEAR + r"-02-29)")
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?(?:[zZ]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_DUR = r"P(?:(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)|[0-9]+W)"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST = _LABEL + r"(?:\." + _LABEL + r")*"
_O = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = _O + r"(?:\." + _O + r"){3}"
_H = r"[0-9a-fA-F]{1,4}"
_IPV6 = ("(?:" + "|".join([
    rf"(?:{_H}:){{7}}{_H}",
    rf"(?:{_H}:){{1,7}}:",
    rf"(?:{_H}:){{1,6}}:{_H}",
    rf"(?:{_H}:){{1,5}}(?::{_H}){{1,2}}",
    rf"(?:{_H}:){{1,4}}(?::{_H}){{1,3}}",
    rf"(?:{_H}:){{1,3}}(?::{_H}){{1,4}}",
    rf"(?:{_H}:){{1,2}}(?::{_H}){{1,5}}",
    rf"{_H}:(?::{_H}){{1,6}}",
    rf":(?:(?::{_H}){{1,7}}|:)",
]) + ")")
_EMAIL = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@" + _HOST
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_URI = r"[A-Za-z][A-Za-z0-9+.-]*:[^\x00-\x20\"\\<>^`{|}]*"
# Format regexes (ASCII only: no escapes needed); deliberately strict subsets of the RFCs' syntax:
FORMATS = {
    "date": _DATE, "time": _TIME, "date-time": _DATE + "[Tt]" + _TIME, "duration": _DUR,
    "email": _EMAIL, "hostname": _HOST, "ipv4": _IPV4, "ipv6": _IPV6, "uuid": _UUID, "uri": _URI,
}


# --------------------------------------------------------------------------
