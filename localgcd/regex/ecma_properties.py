"""Unicode properties as ECMA-262 names them (``\\p{…}`` in a ``u``-mode pattern) → :class:`CharSet`.

ECMA-262 accepts exactly the names of its tables, spelled exactly (no loose matching):
General_Category values (``Lu``, ``Uppercase_Letter``, ``L``, ``Letter``, ``punct`` …) alone or as
``General_Category=``/``gc=``; Script values (``Greek``, ``Grek``) only as ``Script=``/``sc=`` or
``Script_Extensions=``/``scx=``; and the binary properties of its table (``Alphabetic``, ``Alpha``,
``ASCII``, ``Emoji`` …).  Anything else — ``\\p{Print}``, ``\\p{Alnum}``, ``\\p{letter}`` — is an
error naming it.

The code points come from one source, the ``regex`` package's Unicode data (Unicode 18.0.0 with
regex ≥ 2026.11: its Script data equals Scripts-18.0.0.txt), so every property reads the same
Unicode version; Python's own ``unicodedata`` (14.0.0 on Python 3.11) is older and is not mixed in.
``Changes_When_NFKC_Casefolded`` is in ECMA's table but not in that data: refused, never guessed.
"""

from __future__ import annotations


from localgcd.regex.charset import CharSet
from localgcd.regex.unicode_properties import property_chars

# PropertyValueAliases.txt, gc: (short, long, other aliases…)
GENERAL_CATEGORIES: tuple[tuple[str, ...], ...] = (
    ("C", "Other"), ("Cc", "Control", "cntrl"), ("Cf", "Format"), ("Cn", "Unassigned"),
    ("Co", "Private_Use"), ("Cs", "Surrogate"), ("L", "Letter"), ("LC", "Cased_Letter"),
    ("Ll", "Lowercase_Letter"), ("Lm", "Modifier_Letter"), ("Lo", "Other_Letter"),
    ("Lt", "Titlecase_Letter"), ("Lu", "Uppercase_Letter"), ("M", "Mark", "Combining_Mark"),
    ("Mc", "Spacing_Mark"), ("Me", "Enclosing_Mark"), ("Mn", "Nonspacing_Mark"), ("N", "Number"),
    ("Nd", "Decimal_Number", "digit"), ("Nl", "Letter_Number"), ("No", "Other_Number"),
    ("P", "Punctuation", "punct"), ("Pc", "Connector_Punctuation"), ("Pd", "Dash_Punctuation"),
    ("Pe", "Close_Punctuation"), ("Pf", "Final_Punctuation"), ("Pi", "Initial_Punctuation"),
    ("Po", "Other_Punctuation"), ("Ps", "Open_Punctuation"), ("S", "Symbol"), ("Sc", "Currency_Symbol"),
    ("Sk", "Modifier_Symbol"), ("Sm", "Math_Symbol"), ("So", "Other_Symbol"), ("Z", "Separator"),
    ("Zl", "Line_Separator"), ("Zp", "Paragraph_Separator"), ("Zs", "Space_Separator"),
)

# PropertyValueAliases.txt, sc (Unicode 18.0.0): (short, long); Qaac and Qaai are further aliases.
SCRIPTS: tuple[tuple[str, ...], ...] = (
    ("Adlm", "Adlam"), ("Aghb", "Caucasian_Albanian"), ("Ahom", "Ahom"), ("Arab", "Arabic"),
    ("Armi", "Imperial_Aramaic"), ("Armn", "Armenian"), ("Avst", "Avestan"), ("Bali", "Balinese"),
    ("Bamu", "Bamum"), ("Bass", "Bassa_Vah"), ("Batk", "Batak"), ("Beng", "Bengali"), ("Berf", "Beria_Erfe"),
    ("Bhks", "Bhaiksuki"), ("Bopo", "Bopomofo"), ("Brah", "Brahmi"), ("Brai", "Braille"), ("Bugi", "Buginese"),
    ("Buhd", "Buhid"), ("Cakm", "Chakma"), ("Cans", "Canadian_Aboriginal"), ("Cari", "Carian"),
    ("Cham", "Cham"), ("Cher", "Cherokee"), ("Chrs", "Chorasmian"), ("Copt", "Coptic"),
    ("Cpmn", "Cypro_Minoan"), ("Cprt", "Cypriot"), ("Cyrl", "Cyrillic"), ("Deva", "Devanagari"),
    ("Diak", "Dives_Akuru"), ("Dogr", "Dogra"), ("Dsrt", "Deseret"), ("Dupl", "Duployan"),
    ("Egyp", "Egyptian_Hieroglyphs"), ("Elba", "Elbasan"), ("Elym", "Elymaic"), ("Ethi", "Ethiopic"),
    ("Gara", "Garay"), ("Geor", "Georgian"), ("Glag", "Glagolitic"), ("Gong", "Gunjala_Gondi"),
    ("Gonm", "Masaram_Gondi"), ("Goth", "Gothic"), ("Gran", "Grantha"), ("Grek", "Greek"),
    ("Gujr", "Gujarati"), ("Gukh", "Gurung_Khema"), ("Guru", "Gurmukhi"), ("Hang", "Hangul"), ("Hani", "Han"),
    ("Hano", "Hanunoo"), ("Hatr", "Hatran"), ("Hebr", "Hebrew"), ("Hira", "Hiragana"),
    ("Hluw", "Anatolian_Hieroglyphs"), ("Hmng", "Pahawh_Hmong"), ("Hmnp", "Nyiakeng_Puachue_Hmong"),
    ("Hrkt", "Katakana_Or_Hiragana"), ("Hung", "Old_Hungarian"), ("Ital", "Old_Italic"), ("Java", "Javanese"),
    ("Jurc", "Jurchen"), ("Kali", "Kayah_Li"), ("Kana", "Katakana"), ("Kawi", "Kawi"), ("Khar", "Kharoshthi"),
    ("Khmr", "Khmer"), ("Khoj", "Khojki"), ("Kits", "Khitan_Small_Script"), ("Knda", "Kannada"),
    ("Krai", "Kirat_Rai"), ("Kthi", "Kaithi"), ("Lana", "Tai_Tham"), ("Laoo", "Lao"), ("Latn", "Latin"),
    ("Lepc", "Lepcha"), ("Limb", "Limbu"), ("Lina", "Linear_A"), ("Linb", "Linear_B"), ("Lisu", "Lisu"),
    ("Lyci", "Lycian"), ("Lydi", "Lydian"), ("Mahj", "Mahajani"), ("Maka", "Makasar"), ("Mand", "Mandaic"),
    ("Mani", "Manichaean"), ("Marc", "Marchen"), ("Medf", "Medefaidrin"), ("Mend", "Mende_Kikakui"),
    ("Merc", "Meroitic_Cursive"), ("Mero", "Meroitic_Hieroglyphs"), ("Mlym", "Malayalam"), ("Modi", "Modi"),
    ("Mong", "Mongolian"), ("Mroo", "Mro"), ("Mtei", "Meetei_Mayek"), ("Mult", "Multani"), ("Mymr", "Myanmar"),
    ("Nagm", "Nag_Mundari"), ("Nand", "Nandinagari"), ("Narb", "Old_North_Arabian"), ("Nbat", "Nabataean"),
    ("Newa", "Newa"), ("Nkoo", "Nko"), ("Nshu", "Nushu"), ("Ogam", "Ogham"), ("Olck", "Ol_Chiki"),
    ("Onao", "Ol_Onal"), ("Orkh", "Old_Turkic"), ("Orya", "Oriya"), ("Osge", "Osage"), ("Osma", "Osmanya"),
    ("Ougr", "Old_Uyghur"), ("Palm", "Palmyrene"), ("Pauc", "Pau_Cin_Hau"), ("Pcun", "Proto_Cuneiform"),
    ("Perm", "Old_Permic"), ("Phag", "Phags_Pa"), ("Phli", "Inscriptional_Pahlavi"),
    ("Phlp", "Psalter_Pahlavi"), ("Phnx", "Phoenician"), ("Plrd", "Miao"), ("Prti", "Inscriptional_Parthian"),
    ("Rjng", "Rejang"), ("Rohg", "Hanifi_Rohingya"), ("Runr", "Runic"), ("Samr", "Samaritan"),
    ("Sarb", "Old_South_Arabian"), ("Saur", "Saurashtra"), ("Seal", "Seal"), ("Sgnw", "SignWriting"),
    ("Shaw", "Shavian"), ("Shrd", "Sharada"), ("Sidd", "Siddham"), ("Sidt", "Sidetic"), ("Sind", "Khudawadi"),
    ("Sinh", "Sinhala"), ("Sogd", "Sogdian"), ("Sogo", "Old_Sogdian"), ("Sora", "Sora_Sompeng"),
    ("Soyo", "Soyombo"), ("Sund", "Sundanese"), ("Sunu", "Sunuwar"), ("Sylo", "Syloti_Nagri"),
    ("Syrc", "Syriac"), ("Tagb", "Tagbanwa"), ("Takr", "Takri"), ("Tale", "Tai_Le"), ("Talu", "New_Tai_Lue"),
    ("Taml", "Tamil"), ("Tang", "Tangut"), ("Tavt", "Tai_Viet"), ("Tayo", "Tai_Yo"), ("Telu", "Telugu"),
    ("Tfng", "Tifinagh"), ("Tglg", "Tagalog"), ("Thaa", "Thaana"), ("Thai", "Thai"), ("Tibt", "Tibetan"),
    ("Tirh", "Tirhuta"), ("Tnsa", "Tangsa"), ("Todr", "Todhri"), ("Tols", "Tolong_Siki"), ("Toto", "Toto"),
    ("Tutg", "Tulu_Tigalari"), ("Ugar", "Ugaritic"), ("Vaii", "Vai"), ("Vith", "Vithkuqi"),
    ("Wara", "Warang_Citi"), ("Wcho", "Wancho"), ("Xpeo", "Old_Persian"), ("Xsux", "Cuneiform"),
    ("Yezi", "Yezidi"), ("Yiii", "Yi"), ("Zanb", "Zanabazar_Square"), ("Zinh", "Inherited"),
    ("Zyyy", "Common"), ("Zzzz", "Unknown"),
)
_EXTRA_SCRIPT_ALIASES = {"Qaac": "Copt", "Qaai": "Zinh"}

# ECMA-262 table "Binary Unicode property aliases and their canonical property names".
BINARY_PROPERTIES: tuple[tuple[str, ...], ...] = (
    ("ASCII",), ("ASCII_Hex_Digit", "AHex"), ("Alphabetic", "Alpha"), ("Any",), ("Assigned",),
    ("Bidi_Control", "Bidi_C"), ("Bidi_Mirrored", "Bidi_M"), ("Case_Ignorable", "CI"), ("Cased",),
    ("Changes_When_Casefolded", "CWCF"), ("Changes_When_Casemapped", "CWCM"),
    ("Changes_When_Lowercased", "CWL"), ("Changes_When_NFKC_Casefolded", "CWKCF"),
    ("Changes_When_Titlecased", "CWT"), ("Changes_When_Uppercased", "CWU"), ("Dash",),
    ("Default_Ignorable_Code_Point", "DI"), ("Deprecated", "Dep"), ("Diacritic", "Dia"), ("Emoji",),
    ("Emoji_Component", "EComp"), ("Emoji_Modifier", "EMod"), ("Emoji_Modifier_Base", "EBase"),
    ("Emoji_Presentation", "EPres"), ("Extended_Pictographic", "ExtPict"), ("Extender", "Ext"),
    ("Grapheme_Base", "Gr_Base"), ("Grapheme_Extend", "Gr_Ext"), ("Hex_Digit", "Hex"),
    ("IDS_Binary_Operator", "IDSB"), ("IDS_Trinary_Operator", "IDST"), ("ID_Continue", "IDC"),
    ("ID_Start", "IDS"), ("Ideographic", "Ideo"), ("Join_Control", "Join_C"),
    ("Logical_Order_Exception", "LOE"), ("Lowercase", "Lower"), ("Math",),
    ("Noncharacter_Code_Point", "NChar"), ("Pattern_Syntax", "Pat_Syn"), ("Pattern_White_Space", "Pat_WS"),
    ("Quotation_Mark", "QMark"), ("Radical",), ("Regional_Indicator", "RI"), ("Sentence_Terminal", "STerm"),
    ("Soft_Dotted", "SD"), ("Terminal_Punctuation", "Term"), ("Unified_Ideograph", "UIdeo"),
    ("Uppercase", "Upper"), ("Variation_Selector", "VS"), ("White_Space", "space"),
    ("XID_Continue", "XIDC"), ("XID_Start", "XIDS"),
)

_GC_NAMES = {"General_Category", "gc"}
_SCRIPT_NAMES = {"Script": False, "sc": False, "Script_Extensions": True, "scx": True}


def _by_alias(table: tuple[tuple[str, ...], ...]) -> dict[str, str]:
    """Every alias → the first name of its row."""
    return {alias: row[0] for row in table for alias in row}


_GC = _by_alias(GENERAL_CATEGORIES)
_SC = {**_by_alias(SCRIPTS), **_EXTRA_SCRIPT_ALIASES}
_SC_LONG = {row[0]: row[1] for row in SCRIPTS}
_BINARY = _by_alias(BINARY_PROPERTIES)


class UnknownProperty(ValueError):
    """A ``\\p{…}`` that ECMA-262 does not define, or whose data localgcd does not have."""


def ecma_property(text: str) -> CharSet:
    """The code points of ``\\p{text}`` (``text`` is what stands between the braces)."""
    name, eq, value = text.partition("=")
    if eq:
        if name in _GC_NAMES:
            if value not in _GC:
                raise UnknownProperty(f"unknown General_Category value {value!r} in \\p{{{text}}}")
            return _regex_property(f"gc={_GC[value]}")
        if name in _SCRIPT_NAMES:
            if value not in _SC:
                raise UnknownProperty(f"unknown Script value {value!r} in \\p{{{text}}}")
            key = "scx" if _SCRIPT_NAMES[name] else "sc"
            return _regex_property(f"{key}={_SC_LONG[_SC[value]]}")
        raise UnknownProperty(f"unknown property {name!r} in \\p{{{text}}} (ECMA-262 knows "
                              "General_Category, Script and Script_Extensions)")
    if text in _GC:
        return _regex_property(f"gc={_GC[text]}")
    if text in _BINARY:
        return _binary_property(_BINARY[text])
    raise UnknownProperty(f"\\p{{{text}}} is not an ECMA-262 property (a General_Category value or one of "
                          "its binary properties, spelled exactly)")


def _binary_property(name: str) -> CharSet:
    if name == "ASCII":
        return CharSet([(0, 0x7F)])
    if name == "Any":
        return CharSet.everything()
    if name == "Assigned":
        return _regex_property("gc=Cn").complement()
    if name == "Changes_When_NFKC_Casefolded":
        raise UnknownProperty(f"\\p{{{name}}}: no exact Unicode data for it in localgcd")
    return _regex_property(f"{name}=Yes")


def _regex_property(spec: str) -> CharSet:
    """``\\p{spec}`` as the ``regex`` package's Unicode data has it, over every code point."""
    return property_chars(spec)


__all__ = ["BINARY_PROPERTIES", "GENERAL_CATEGORIES", "SCRIPTS", "UnknownProperty", "ecma_property"]
