"""JSON Schema `format` values as grammar IR: exact languages wherever a regular one exists.

Two layers:

* `format_value_expr(name)` is the language of the *decoded* string value (UTF-8 of the text a
  JSON parser returns), built from the format's RFC grammar.
* `format_expr(name, escapes=...)` is the language of the string *body as written inside the JSON
  quotes*: `json_escaped` rewrites every character of the value language into the JSON spellings
  the escape policy allows, so characters that JSON must escape (`"`, `\\`, controls) come out
  right (e-mail quoted local parts, JSON pointers). Wrap it with `json_value.json_string(...)`.

Escape policies (`escapes=`):

* ``"standard"`` (default): printable ASCII other than `"` and `\\` is written as itself; every other
  character may be written as itself (where JSON allows) or with any JSON escape (`\\n`, `\\u000a`,
  `\\uD83D\\uDE00`, hex digits in either case). This accepts what `json.dumps` writes with
  `ensure_ascii` true or false. Most formats are printable ASCII only, so for them it costs nothing.
* ``"all"``: every JSON spelling of every character (`\\u0032` for `2`, `\\/` for `/`): the body
  decodes to a valid value *if and only if* it is accepted. Bigger automata (time and date-time
  grow from about 12,500 to 69,000 DFA states, 3-4 s to compile); meant for validation.
* ``"required"``: characters are written as themselves wherever JSON allows, escapes only where
  JSON requires them (`"`, `\\`, U+0000..U+001F), in any of their spellings.

"Exact" below means: the value language is exactly the set of valid values (so, with a policy, the
accepted bodies are exactly the policy's spellings of valid values). Lone surrogates are never
accepted: they are not Unicode scalar values and have no UTF-8 form.

Formats and the reading of their specifications:

* date, time, date-time (RFC 3339 §5.6): `full-date` with the right number of days per month,
  29 February only in leap years (year divisible by 4 and not by 100, or by 400); years 0001..9999:
  RFC 3339's `4DIGIT` would also admit 0000, but Python's `datetime` (hence jsonschema, the
  project's judge of validity) has no year 0, so it is left out; `T`/`t` and `Z`/`z`; a
  fraction of any length; offsets `+HH:MM`/`-HH:MM` with HH ≤ 23 and MM ≤ 59. Second `60` (leap
  second) is allowed exactly when the time converted to UTC is 23:59:60 (`-00:00` counts as UTC),
  which is what the JSON-Schema-Test-Suite checks: a finite table of (hour, minute, offset), the
  bulk of the ~12,500 DFA states of time and date-time (every other format stays under ~5,000).
* duration (RFC 3339 Appendix A): the ABNF as written, so weeks stand alone, `P1Y2D` is invalid,
  components are integers with any number of digits; the designators are case-insensitive because
  ABNF quoted strings are (RFC 5234 §2.3), so `p1d` is accepted, like `t`/`z` in date-time.
* email (RFC 5321 `Mailbox`): dot-string or quoted-string local part (the quoted form contains `"`
  and possibly `\\`, escaped in JSON as the policy allows); domain = sub-domains of letters,
  digits and inner hyphens, or an address literal `[IPv4]` (Snum: 1-3 digits, 0..255) or
  `[IPv6:...]` (RFC 5321's IPv6 forms: `::` stands for at least two groups). The
  General-address-literal (`[tag:...]`) is not accepted: no tag other than IPv6 is registered.
  The §4.5.3.1 size limits (64-octet local part, 255-octet domain) are minimums that
  implementations must support, not syntax, and are not applied.
* hostname: see `INEXACT_FORMATS`.
* ipv4: dotted quad, each 0..255 without leading zeros. ipv6: RFC 4291 §2.2 text forms as written
  by RFC 3986's `IPv6address` (`::` for one or more groups, embedded dotted quad, 1-4 hex digits
  per group, no zone, no brackets).
* uuid (RFC 9562): 8-4-4-4-12 hex digits, either case, any version/variant nibble.
* uri, uri-reference (RFC 3986), iri, iri-reference (RFC 3987): the ABNF (an `IPv4address` host
  is also a `reg-name`, so `999.999.999.999` is a valid host; `v` of IPvFuture in either case).
* uri-template (RFC 6570, level 4 syntax): expressions `{op varspec,...}` with the reserved
  operators `= , ! @ |`, prefixes 1..9999, explode `*`; literals include `'` (verified RFC 6570
  erratum 6937, as the JSON-Schema-Test-Suite expects).
* json-pointer (RFC 6901), relative-json-pointer (draft-handrews-relative-json-pointer-01, the
  version draft 2020-12 cites: no index manipulation).

`format_value_expr`/`format_expr` return None for formats they do not know: idn-email and
idn-hostname (IDNA2008 tables and contextual rules), regex (ECMA-262 patterns nest, so they are not
a regular language), and unknown names. The caller reports "unsupported format".
"""

from __future__ import annotations

import functools

from .ir import (
    EMPTY,
    MAX_CODEPOINT,
    Alt,
    Expr,
    Literal,
    Repeat,
    Seq,
    alt,
    charset,
    chars,
    disjoint_alt,
    lit,
    opt,
    repeat,
    seq,
)
from .json_escapes import ESCAPE_POLICIES, digit_class, json_escaped

__all__ = [
    "EXACT_FORMATS",
    "INEXACT_FORMATS",
    "SUPPORTED_FORMATS",
    "ESCAPE_POLICIES",
    "format_expr",
    "format_value_expr",
    "json_escaped",
]

# Formats whose expression differs from the specification, with what differs.
INEXACT_FORMATS: dict[str, str] = {
    "hostname": (
        "labels follow RFC 1123 exactly (1-63 letters, digits and hyphens, no hyphen at either end), "
        "but (1) the 253-character total length limit is not enforced (a length bound across labels "
        "has no compact regular expression), so over-long names are accepted; (2) every label with "
        "'--' in the 3rd and 4th positions is rejected: 'xn--' A-labels would need Punycode and "
        "IDNA2008 checks, other such labels are reserved (RFC 5890 R-LDH), so valid A-labels such "
        "as 'xn--9n2bp8q' are not accepted"
    ),
}

# ---- character classes ----------------------------------------------------------------------

_ALPHA_R = ((0x41, 0x5A), (0x61, 0x7A))
_DIGIT_R = ((0x30, 0x39),)
ALPHA = charset(_ALPHA_R)
DIGIT = charset(_DIGIT_R)
HEXDIG = chars("0123456789abcdefABCDEF")
ALNUM = charset(_ALPHA_R + _DIGIT_R)


def _ranges_of(text: str) -> tuple[tuple[int, int], ...]:
    return tuple((ord(c), ord(c)) for c in text)


def ci(text: str) -> Expr:
    """`text` with ASCII letters in either case (ABNF quoted strings are case-insensitive)."""
    return seq(*(chars(c.lower() + c.upper()) if c.isalpha() else lit(c) for c in text))


def _digit_class(lo: int, hi: int, base: int) -> Expr:
    return digit_class(range(lo, hi + 1), base)


def fixed_width_number(lo: int, hi: int, width: int, base: int = 10) -> Expr:
    """Numerals of exactly `width` digits (leading zeros included) whose value is in lo..hi."""
    if lo > hi:
        return Alt(())
    if width == 0:
        return EMPTY
    p = base ** (width - 1)
    lo_d, lo_r = divmod(lo, p)
    hi_d, hi_r = divmod(hi, p)
    if lo_d == hi_d:
        return seq(_digit_class(lo_d, lo_d, base), fixed_width_number(lo_r, hi_r, width - 1, base))
    parts = []
    first, last = lo_d, hi_d
    if lo_r != 0:
        parts.append(seq(_digit_class(lo_d, lo_d, base), fixed_width_number(lo_r, p - 1, width - 1, base)))
        first += 1
    tail = None
    if hi_r != p - 1:
        tail = seq(_digit_class(hi_d, hi_d, base), fixed_width_number(0, hi_r, width - 1, base))
        last -= 1
    if first <= last:
        parts.append(seq(_digit_class(first, last, base), fixed_width_number(0, p - 1, width - 1, base)))
    if tail is not None:
        parts.append(tail)
    return alt(*parts)


def _dec2(lo: int, hi: int) -> Expr:
    return fixed_width_number(lo, hi, 2)


# ---- date and time (RFC 3339) -------------------------------------------------------------------


@functools.lru_cache(maxsize=None)  # date and date-time share it: built once a process (see format_value_expr)
def _date() -> Expr:
    year = fixed_width_number(1, 9999, 4)  # no year 0000, as in Python's datetime and jsonschema
    # two-digit multiples of 4 other than "00"
    div4 = alt(seq(chars("2468"), chars("048")), seq(lit("0"), chars("48")), seq(chars("13579"), chars("26")))
    leap_year = alt(seq(DIGIT, DIGIT, div4), seq(div4, lit("00")))  # by 4 and not by 100, or by 400
    m31 = alt(*(lit(m) for m in ("01", "03", "05", "07", "08", "10", "12")))
    m30 = alt(*(lit(m) for m in ("04", "06", "09", "11")))
    month_day = alt(
        seq(m31, lit("-"), _dec2(1, 31)),
        seq(m30, lit("-"), _dec2(1, 30)),
        seq(lit("02-"), _dec2(1, 28)),
    )
    return alt(seq(year, lit("-"), month_day), seq(leap_year, lit("-02-29")))


@functools.lru_cache(maxsize=None)  # time and date-time share it: built once a process
def _time() -> Expr:
    hour, minute = _dec2(0, 23), _dec2(0, 59)
    secfrac = opt(seq(lit("."), repeat(DIGIT, 1)))
    offset = alt(chars("Zz"), seq(chars("+-"), hour, lit(":"), minute))
    normal = seq(hour, lit(":"), minute, lit(":"), _dec2(0, 59), secfrac, offset)
    return alt(normal, _leap_seconds(secfrac), seq(lit("23:59:60"), secfrac, chars("Zz")))


def _leap_seconds(secfrac: Expr) -> Expr:
    """Second 60 with an offset: only where the time in UTC is 23:59:60 ("-00:00", unknown
    offset, counts as UTC). A table of (local hour, local minute, offset), nested by the offset's
    characters from the right (minutes, then hour digits), so that the automaton merges every
    entry that shares the rest of the offset as soon as it has read the characters in front of it.

    Written with the IR's node classes, not seq/alt: 2,880 entries of distinct literals, where
    those constructors would only copy them (the same expression; their flattening and repeat
    checks were most of the ~20 ms this took)."""
    assert type(secfrac) is Repeat  # so an entry's Seq is (Literal, secfrac, Literal) as seq writes it
    signs = {"+": Literal(b"+"), "-": Literal(b"-")}
    table: dict[tuple[int, int, int], list[Expr]] = {}  # (offset minutes, hour digit 2, digit 1)
    for h in range(24):
        for m in range(60):
            local = 60 * h + m
            stamp = b"%02d:%02d:60" % (h, m)
            for sign in "+-":
                off = (local - 1439) % 1440 if sign == "+" else (1439 - local) % 1440  # UTC = local ∓ offset
                key = (off % 60, off // 60 % 10, off // 600)
                table.setdefault(key, []).append(Seq((Literal(stamp), secfrac, signs[sign])))
    then_d1: dict[tuple[int, int], list[Expr]] = {}
    for (om, d2, d1), entries in table.items():  # an offset has one entry per sign: never a repeat
        then_d1.setdefault((om, d2), []).append(Seq((Alt(tuple(entries)), Literal(b"%d" % d1))))
    then_d2: dict[int, list[Expr]] = {}
    for (om, d2), items in then_d1.items():
        then_d2.setdefault(om, []).append(Seq((disjoint_alt(*items), Literal(b"%d" % d2))))
    return Alt(tuple(Seq((disjoint_alt(*items), Literal(b":%02d" % om))) for om, items in then_d2.items()))


def _duration() -> Expr:
    def part(unit: str) -> Expr:
        return seq(repeat(DIGIT, 1), ci(unit))

    second = part("S")
    minute = seq(part("M"), opt(second))
    hour = seq(part("H"), opt(minute))
    time = seq(ci("T"), alt(hour, minute, second))
    day = part("D")
    month = seq(part("M"), opt(day))
    year = seq(part("Y"), opt(month))
    date = seq(alt(day, month, year), opt(time))
    return seq(ci("P"), alt(date, time, part("W")))


# ---- addresses ---------------------------------------------------------------------------------


def _dec_octet() -> Expr:
    """0..255 without leading zeros."""
    return alt(DIGIT, seq(charset([(0x31, 0x39)]), DIGIT), fixed_width_number(100, 255, 3))


def _ipv4() -> Expr:
    octet = _dec_octet()
    return seq(octet, repeat(seq(lit("."), octet), 3, 3))


def _ipv6() -> Expr:
    """RFC 3986 `IPv6address`."""
    h16 = repeat(HEXDIG, 1, 4)
    h16c = seq(h16, lit(":"))
    ls32 = alt(seq(h16, lit(":"), h16), _ipv4())

    def head(n: int) -> Expr:  # [ *n( h16 ":" ) h16 ]
        return opt(seq(repeat(h16c, 0, n), h16))

    return alt(
        seq(repeat(h16c, 6, 6), ls32),
        seq(lit("::"), repeat(h16c, 5, 5), ls32),
        seq(head(0), lit("::"), repeat(h16c, 4, 4), ls32),
        seq(head(1), lit("::"), repeat(h16c, 3, 3), ls32),
        seq(head(2), lit("::"), repeat(h16c, 2, 2), ls32),
        seq(head(3), lit("::"), h16c, ls32),
        seq(head(4), lit("::"), ls32),
        seq(head(5), lit("::"), h16),
        seq(head(6), lit("::")),
    )


def _uuid() -> Expr:
    def hexes(n: int) -> Expr:
        return repeat(HEXDIG, n, n)

    dash = lit("-")
    return seq(hexes(8), dash, hexes(4), dash, hexes(4), dash, hexes(4), dash, hexes(12))


def _hostname() -> Expr:
    ldh = charset(_ALPHA_R + _DIGIT_R + ((0x2D, 0x2D),))
    # 1..63 characters, letters/digits at both ends, never '-' in both the 3rd and 4th position
    label = alt(
        ALNUM,
        seq(ALNUM, ALNUM),
        seq(ALNUM, ldh, ALNUM),
        seq(ALNUM, ldh, ldh, ALNUM),
        seq(ALNUM, ldh, alt(seq(ALNUM, ldh), seq(lit("-"), ALNUM)), repeat(ldh, 0, 58), ALNUM),
    )
    return seq(label, repeat(seq(lit("."), label)))


def _email() -> Expr:
    """RFC 5321 `Mailbox` without the General-address-literal."""
    atext = charset(_ALPHA_R + _DIGIT_R + _ranges_of("!#$%&'*+-/=?^_`{|}~"))
    atom = repeat(atext, 1)
    dot_string = seq(atom, repeat(seq(lit("."), atom)))
    qtext = charset([(32, 33), (35, 91), (93, 126)])
    quoted_pair = seq(lit("\\"), charset([(32, 126)]))
    quoted_string = seq(lit('"'), repeat(alt(qtext, quoted_pair)), lit('"'))
    ldh = charset(_ALPHA_R + _DIGIT_R + ((0x2D, 0x2D),))
    sub_domain = seq(ALNUM, opt(seq(repeat(ldh), ALNUM)))
    domain = seq(sub_domain, repeat(seq(lit("."), sub_domain)))
    snum = alt(DIGIT, repeat(DIGIT, 2, 2), fixed_width_number(0, 255, 3))  # leading zeros allowed
    ipv4 = seq(snum, repeat(seq(lit("."), snum), 3, 3))
    hexg = repeat(HEXDIG, 1, 4)

    def groups(n: int) -> Expr:  # n groups joined by ":"
        return seq(hexg, repeat(seq(lit(":"), hexg), n - 1, n - 1)) if n else EMPTY

    full = groups(8)
    comp = alt(*(seq(groups(a), lit("::"), groups(b)) for a in range(7) for b in range(7 - a)))
    v4full = seq(groups(6), lit(":"), ipv4)
    v4comp = alt(
        *(seq(groups(a), lit("::"), seq(groups(b), lit(":")) if b else EMPTY, ipv4) for a in range(5) for b in range(5 - a))
    )
    address_literal = seq(lit("["), alt(ipv4, seq(ci("IPv6:"), alt(full, comp, v4full, v4comp))), lit("]"))
    return seq(alt(dot_string, quoted_string), lit("@"), alt(domain, address_literal))


# ---- URIs, IRIs, templates, pointers ------------------------------------------------------------

_UCSCHAR = (
    (0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF),
    (0x10000, 0x1FFFD), (0x20000, 0x2FFFD), (0x30000, 0x3FFFD), (0x40000, 0x4FFFD),
    (0x50000, 0x5FFFD), (0x60000, 0x6FFFD), (0x70000, 0x7FFFD), (0x80000, 0x8FFFD),
    (0x90000, 0x9FFFD), (0xA0000, 0xAFFFD), (0xB0000, 0xBFFFD), (0xC0000, 0xCFFFD),
    (0xD0000, 0xDFFFD), (0xE1000, 0xEFFFD),
)  # fmt: skip
_IPRIVATE = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))
_UNRESERVED = _ALPHA_R + _DIGIT_R + _ranges_of("-._~")
_SUB_DELIMS = _ranges_of("!$&'()*+,;=")


def _uri(iri: bool, reference: bool) -> Expr:
    """RFC 3986 URI / URI-reference, or RFC 3987 IRI / IRI-reference."""
    unreserved = _UNRESERVED + (_UCSCHAR if iri else ())
    pct = seq(lit("%"), HEXDIG, HEXDIG)

    def star(ranges, lo=0):
        return repeat(alt(charset(ranges), pct), lo)

    pchar_r = unreserved + _SUB_DELIMS + _ranges_of(":@")
    scheme = seq(ALPHA, repeat(charset(_ALPHA_R + _DIGIT_R + _ranges_of("+-."))))
    userinfo = star(unreserved + _SUB_DELIMS + _ranges_of(":"))
    ipvfuture = seq(chars("vV"), repeat(HEXDIG, 1), lit("."), repeat(charset(_UNRESERVED + _SUB_DELIMS + _ranges_of(":")), 1))
    host = alt(seq(lit("["), alt(_ipv6(), ipvfuture), lit("]")), star(unreserved + _SUB_DELIMS))  # IPv4address ⊂ reg-name
    authority = seq(opt(seq(userinfo, lit("@"))), host, opt(seq(lit(":"), repeat(DIGIT))))
    segment = star(pchar_r)
    segments = repeat(seq(lit("/"), segment))
    path_abempty = segments
    path_absolute = seq(lit("/"), opt(seq(star(pchar_r, 1), segments)))
    path_rootless = seq(star(pchar_r, 1), segments)
    path_noscheme = seq(star(unreserved + _SUB_DELIMS + _ranges_of("@"), 1), segments)
    query = star(pchar_r + _ranges_of("/?") + (_IPRIVATE if iri else ()))
    fragment = star(pchar_r + _ranges_of("/?"))
    tail = seq(opt(seq(lit("?"), query)), opt(seq(lit("#"), fragment)))
    net = seq(lit("//"), authority, path_abempty)
    absolute = seq(scheme, lit(":"), alt(net, path_absolute, path_rootless, EMPTY), tail)
    if not reference:
        return absolute
    relative = seq(alt(net, path_absolute, path_noscheme, EMPTY), tail)
    return alt(absolute, relative)


def _uri_template() -> Expr:
    """RFC 6570 `URI-Template` (with the apostrophe allowed in literals, erratum 6937)."""
    pct = seq(lit("%"), HEXDIG, HEXDIG)
    literal_r = (
        (0x21, 0x21), (0x23, 0x24), (0x26, 0x3B), (0x3D, 0x3D), (0x3F, 0x5B), (0x5D, 0x5D),
        (0x5F, 0x5F), (0x61, 0x7A), (0x7E, 0x7E),
    ) + _UCSCHAR + _IPRIVATE  # fmt: skip
    varchar = alt(charset(_ALPHA_R + _DIGIT_R + _ranges_of("_")), pct)
    varname = seq(varchar, repeat(seq(opt(lit(".")), varchar)))
    max_length = seq(charset([(0x31, 0x39)]), repeat(DIGIT, 0, 3))
    varspec = seq(varname, opt(alt(seq(lit(":"), max_length), lit("*"))))
    expression = seq(lit("{"), opt(chars("+#./;?&=,!@|")), varspec, repeat(seq(lit(","), varspec)), lit("}"))
    return repeat(alt(charset(literal_r), pct, expression))


def _json_pointer() -> Expr:
    unescaped = charset([(0x00, 0x2E), (0x30, 0x7D), (0x7F, MAX_CODEPOINT)])
    token = repeat(alt(unescaped, seq(lit("~"), chars("01"))))
    return repeat(seq(lit("/"), token))


def _relative_json_pointer() -> Expr:
    integer = alt(lit("0"), seq(charset([(0x31, 0x39)]), repeat(DIGIT)))
    return seq(integer, alt(lit("#"), _json_pointer()))


_BUILDERS = {
    "date": _date,
    "time": _time,
    "date-time": lambda: seq(_date(), chars("Tt"), _time()),
    "duration": _duration,
    "email": _email,
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "uuid": _uuid,
    "uri": lambda: _uri(iri=False, reference=False),
    "uri-reference": lambda: _uri(iri=False, reference=True),
    "iri": lambda: _uri(iri=True, reference=False),
    "iri-reference": lambda: _uri(iri=True, reference=True),
    "uri-template": _uri_template,
    "json-pointer": _json_pointer,
    "relative-json-pointer": _relative_json_pointer,
}

SUPPORTED_FORMATS: frozenset[str] = frozenset(_BUILDERS)
EXACT_FORMATS: frozenset[str] = frozenset(set(_BUILDERS) - set(INEXACT_FORMATS))


@functools.lru_cache(maxsize=None)
def format_value_expr(name: str) -> Expr | None:
    """The language of decoded string values valid for format `name`; None if unsupported.

    Formats are the library's constants (their IR depends on neither the schema nor the
    vocabulary), so each is built once a process, at first use (a bounded set: the supported
    names), and is the same object in every grammar: the automata cached by expression
    (grammar.automata) are then found again, not rebuilt."""
    build = _BUILDERS.get(name)
    return build() if build is not None else None


@functools.lru_cache(maxsize=None)
def format_expr(name: str, escapes: str = "standard") -> Expr | None:
    """The language of JSON string bodies (between the quotes) whose value is valid for format
    `name`, spelled as the escape policy allows; None if the format is unsupported."""
    if escapes not in ESCAPE_POLICIES:
        raise ValueError(f"escapes must be one of {ESCAPE_POLICIES}, not {escapes!r}")
    value = format_value_expr(name)
    return json_escaped(value, escapes) if value is not None else None
