"""JSON Schema `format` languages: the official test suite, independent oracles, JSON spellings."""

from __future__ import annotations

import functools
import ipaddress
import json
import random
import re
import uuid
from collections import Counter
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictgen.compile.automaton import compile_automaton
from strictgen.compile.machine import DEAD, PushdownMachine
from strictgen.grammar.string_formats import (
    EXACT_FORMATS,
    INEXACT_FORMATS,
    SUPPORTED_FORMATS,
    format_expr,
    format_value_expr,
    json_escaped,
)
from strictgen.grammar.ir import Grammar, charset, repeat
from strictgen.grammar.json_value import json_string

SUITE = Path(__file__).resolve().parents[2] / "../shared/data/json-schema-test-suite/draft2020-12/optional/format"
UNSUPPORTED = {"idn-email", "idn-hostname", "regex", "unknown"}
FORMAT_CHECKER = Draft202012Validator.FORMAT_CHECKER
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- helpers ------------------------------------------------------------------------------------


class Compiled:
    def __init__(self, expr):
        self.automaton = compile_automaton(Grammar({"root": expr}))
        self.machine = PushdownMachine(self.automaton)

    def accepts(self, data: str | bytes) -> bool:
        if isinstance(data, str):
            data = data.encode("utf-8")
        m = self.machine
        state = m.step_bytes(m.start, data)
        return state != DEAD and m.accepting[state]


@functools.lru_cache(maxsize=None)
def compiled(name: str, escapes: str = "standard") -> Compiled:
    return Compiled(format_expr(name, escapes))


@functools.lru_cache(maxsize=None)
def compiled_value(name: str) -> Compiled:
    return Compiled(format_value_expr(name))


def bodies(value: str) -> list[bytes]:
    """What `json.dumps` writes between the quotes, with and without ensure_ascii."""
    return [json.dumps(value, ensure_ascii=a)[1:-1].encode("utf-8") for a in (True, False)]


def accepted(name: str, value: str) -> bool:
    """The value as a JSON string body (both json.dumps spellings agree) and as raw text."""
    results = {compiled(name).accepts(b) for b in bodies(value)}
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogate: no UTF-8 form, never valid
        raw = None
    results.add(compiled_value(name).accepts(raw) if raw is not None else False)
    assert len(results) == 1, f"layers disagree on {value!r}"
    return results.pop()


def mutate(text: str, data: st.DataObject, alphabet: str) -> str:
    """Replace, delete, insert or swap one character."""
    kind = data.draw(st.sampled_from(["replace", "delete", "insert", "swap"]))
    if not text:
        kind = "insert"
    i = data.draw(st.integers(0, max(len(text) - 1, 0)))
    c = data.draw(st.sampled_from(alphabet))
    if kind == "replace":
        return text[:i] + c + text[i + 1 :]
    if kind == "delete":
        return text[:i] + text[i + 1 :]
    if kind == "insert":
        return text[:i] + c + text[i:]
    j = data.draw(st.integers(0, len(text) - 1))
    chars = list(text)
    chars[i], chars[j] = chars[j], chars[i]
    return "".join(chars)


# ---- API --------------------------------------------------------------------------------------------


def test_api_and_unsupported_formats():
    assert EXACT_FORMATS | set(INEXACT_FORMATS) == SUPPORTED_FORMATS
    assert not EXACT_FORMATS & set(INEXACT_FORMATS)
    assert set(INEXACT_FORMATS) == {"hostname"}
    for name in UNSUPPORTED | {"color", ""}:
        assert format_expr(name) is None and format_value_expr(name) is None
    with pytest.raises(ValueError, match="escapes"):
        format_expr("date", "sometimes")


@pytest.mark.parametrize("name", sorted(SUPPORTED_FORMATS))
def test_every_format_compiles_fast_and_small(name):
    got = compiled(name)
    assert got.automaton.rules[0].num_states < 20_000
    assert len(got.automaton.rules) == 1  # no recursion: one DFA


def test_inside_a_json_string():
    c = Compiled(json_string(format_expr("date")))
    assert c.accepts(b'"2020-02-29"') and not c.accepts(b'"2021-02-29"') and not c.accepts(b"2020-02-29")
    c = Compiled(json_string(format_expr("email")))
    assert c.accepts(json.dumps('"joe bloggs"@example.com').encode())
    assert not c.accepts(b'"joe bloggs"@example.com')


# ---- the official JSON-Schema-Test-Suite -----------------------------------------------------------


def _suite_cases() -> dict[str, list[tuple[str, bool, str]]]:
    cases: dict[str, list] = {}
    for path in sorted(SUITE.glob("*.json")):
        for group in json.loads(path.read_text(encoding="utf-8")):
            fmt = group["schema"]["format"]
            for test in group["tests"]:
                if isinstance(test["data"], str):
                    cases.setdefault(fmt, []).append((test["data"], test["valid"], test["description"]))
    return cases


def _hostname_gap(value: str, valid: bool) -> bool:
    """The documented differences of the inexact hostname language."""
    labels = value.split(".")
    if valid:
        return any(label.lower().startswith("xn--") for label in labels)
    return len(value) > 253 and all(_hostname_label_ok(label) for label in labels)


GAPS = {"hostname": _hostname_gap}


@pytest.fixture(scope="module")
def suite():
    if not SUITE.is_dir():
        pytest.skip(f"JSON-Schema-Test-Suite not found at {SUITE}")
    return _suite_cases()


def test_official_suite(suite):
    counts: dict[str, Counter] = {}
    for fmt, cases in sorted(suite.items()):
        if format_expr(fmt) is None:
            assert fmt in UNSUPPORTED, f"format {fmt!r} of the suite is not supported"
            continue
        count = counts[fmt] = Counter()
        for value, valid, description in cases:
            ok = accepted(fmt, value) == valid
            if ok:
                count["pass"] += 1
            elif fmt in INEXACT_FORMATS and GAPS[fmt](value, valid):
                count["documented gap"] += 1
            else:
                pytest.fail(f"{fmt}: {description!r} {value!r} valid={valid} but accepted={not valid}")
        if fmt in EXACT_FORMATS:
            assert count["documented gap"] == 0
    # every supported format has official tests, and the exact ones pass all of them
    assert set(counts) == SUPPORTED_FORMATS
    exact_total = sum(len(suite[f]) for f in EXACT_FORMATS)
    assert sum(c["pass"] for f, c in counts.items() if f in EXACT_FORMATS) == exact_total > 400
    assert counts["hostname"]["documented gap"] == 16  # 15 valid A-labels, one name over 253


# ---- date and time -----------------------------------------------------------------------------------


def _days_in_month(year: int, month: int) -> int:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]


def oracle_date(s: str) -> bool:
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", s)
    if not m:
        return False
    y, mo, d = map(int, m.groups())
    return y >= 1 and 1 <= mo <= 12 and 1 <= d <= _days_in_month(y, mo)


def oracle_time(s: str) -> bool:
    m = re.fullmatch(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|([+-])([0-9]{2}):([0-9]{2}))", s)
    if not m:
        return False
    h, mi, sec = int(m[1]), int(m[2]), int(m[3])
    off = 0
    if m[6]:
        oh, om = int(m[7]), int(m[8])
        if oh > 23 or om > 59:
            return False
        off = (oh * 60 + om) * (1 if m[6] == "+" else -1)
    if h > 23 or mi > 59 or sec > 60:
        return False
    return sec < 60 or (h * 60 + mi - off) % 1440 == 23 * 60 + 59


def oracle_date_time(s: str) -> bool:
    return len(s) > 11 and s[10] in "Tt" and oracle_date(s[:10]) and oracle_time(s[11:])


@SETTINGS
@given(st.dates())
def test_date_from_datetime_accepted(d):
    assert accepted("date", d.isoformat())


@SETTINGS
@given(st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32))
def test_date_fields_match_calendar(y, m, d):
    s = f"{y:04d}-{m:02d}-{d:02d}"
    assert accepted("date", s) == oracle_date(s)


def test_leap_years():
    for y in (4, 400, 1600, 2000, 2024, 9996):
        assert accepted("date", f"{y:04d}-02-29")
    for y in (1, 100, 1900, 2100, 2023, 9999):
        assert not accepted("date", f"{y:04d}-02-29")
    assert not accepted("date", "0000-01-01") and accepted("date", "0001-01-01")  # Python has no year 0


@SETTINGS
@given(st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32))
def test_date_agrees_with_jsonschema(y, m, d):
    s = f"{y:04d}-{m:02d}-{d:02d}"
    assert accepted("date", s) == FORMAT_CHECKER.conforms(s, "date")


@SETTINGS
@given(st.dates(), st.data())
def test_date_mutations(d, data):
    s = mutate(d.isoformat(), data, "0123456789-:T/ \u0661")
    assert accepted("date", s) == oracle_date(s)


def _time_text(h, m, s, frac, offset):
    return f"{h:02d}:{m:02d}:{s:02d}{frac}{offset}"


offsets = st.one_of(
    st.sampled_from(["Z", "z"]),
    st.builds(lambda sign, h, m: f"{sign}{h:02d}:{m:02d}", st.sampled_from("+-"), st.integers(0, 24), st.integers(0, 60)),
)
fractions = st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=12).map(lambda t: "." + t))


@SETTINGS
@given(st.integers(0, 24), st.integers(0, 60), st.integers(0, 61), fractions, offsets)
def test_time_fields(h, m, s, frac, offset):
    text = _time_text(h, m, s, frac, offset)
    assert accepted("time", text) == oracle_time(text)


@SETTINGS
@given(st.sampled_from("+-"), st.integers(0, 1439), fractions, st.integers(-2, 2))
def test_leap_second_exactly_at_utc_23_59(sign, off, frac, shift):
    # local time = UTC 23:59 shifted by the offset, then moved by `shift` minutes
    local = (23 * 60 + 59 + (off if sign == "+" else -off) + shift) % 1440
    text = _time_text(local // 60, local % 60, 60, frac, f"{sign}{off // 60:02d}:{off % 60:02d}")
    assert accepted("time", text) == (shift == 0) == oracle_time(text)


@SETTINGS
@given(st.datetimes(), st.data())
def test_date_time_mutations(dt, data):
    text = dt.isoformat(timespec=data.draw(st.sampled_from(["seconds", "milliseconds", "microseconds"]))) + "Z"
    assert accepted("date-time", text)
    text = mutate(text, data, "0123456789-:T.Zz+ t")
    assert accepted("date-time", text) == oracle_date_time(text)


# ---- duration -------------------------------------------------------------------------------------------


def oracle_duration(s: str) -> bool:
    """Semantic reading of RFC 3339 appendix A: consecutive runs of Y M D and of H M S, or weeks alone."""
    m = re.fullmatch(r"[Pp]((?:[0-9]+[A-Za-z])*)(?:([Tt])((?:[0-9]+[A-Za-z])*))?", s)
    if not m:
        return False
    date = [u.upper() for u in re.findall(r"[0-9]+([A-Za-z])", m[1])]
    tim = [u.upper() for u in re.findall(r"[0-9]+([A-Za-z])", m[3] or "")]
    if m[2] and not tim:
        return False
    if date == ["W"]:
        return not m[2]

    def consecutive(units, order):
        if not units:
            return True
        if any(u not in order for u in units):
            return False
        i = order.index(units[0])
        return units == list(order[i : i + len(units)])

    return bool(date or tim) and consecutive(date, "YMD") and consecutive(tim, "HMS")


durations = st.builds(
    lambda p, parts, t, tparts: p + "".join(parts) + (t + "".join(tparts) if t else ""),
    st.sampled_from(["P", "P", "p"]),
    st.lists(st.builds(lambda n, u: f"{n}{u}", st.integers(0, 10**6), st.sampled_from("YMDWymd")), max_size=4),
    st.sampled_from(["", "T", "t"]),
    st.lists(st.builds(lambda n, u: f"{n}{u}", st.integers(0, 999), st.sampled_from("HMSDhms")), max_size=4),
)


@SETTINGS
@given(durations)
def test_duration_matches_semantic_oracle(s):
    assert accepted("duration", s) == oracle_duration(s)


@SETTINGS
@given(durations, st.data())
def test_duration_mutations(s, data):
    s = mutate(s, data, "0123456789PYMWDTHS.,-")
    assert accepted("duration", s) == oracle_duration(s)


# ---- addresses ----------------------------------------------------------------------------------------------


def oracle_ipv4(s: str) -> bool:
    if not s.isascii():
        return False
    try:
        ipaddress.IPv4Address(s)
    except ValueError:
        return False
    return True


def oracle_ipv6(s: str) -> bool:
    if not s.isascii() or "%" in s:  # zone ids are not part of the format
        return False
    try:
        ipaddress.IPv6Address(s)
    except ValueError:
        return False
    return True


@SETTINGS
@given(st.ip_addresses(v=4))
def test_ipv4_accepted(ip):
    assert accepted("ipv4", str(ip))


@SETTINGS
@given(st.lists(st.integers(0, 300), min_size=1, max_size=5), st.lists(st.booleans(), min_size=5, max_size=5), st.data())
def test_ipv4_against_ipaddress(parts, zeros, data):
    s = ".".join(("0" if z else "") + str(p) for p, z in zip(parts, zeros))
    assert accepted("ipv4", s) == oracle_ipv4(s)
    s = mutate(s, data, "0123456789.x: ")
    assert accepted("ipv4", s) == oracle_ipv4(s) == FORMAT_CHECKER.conforms(s, "ipv4")


@st.composite
def ipv6_texts(draw):
    """Random valid spellings: any case, leading zeros, an optional dotted quad, optional '::'."""
    groups = draw(st.lists(st.one_of(st.just(0), st.integers(0, 0xFFFF)), min_size=8, max_size=8))
    texts = []
    for g in groups:
        t = f"{g:x}".zfill(draw(st.integers(1, 4)))
        texts.append("".join(c.upper() if draw(st.booleans()) else c for c in t))
    if draw(st.booleans()):
        quad = draw(st.ip_addresses(v=4))
        texts[6:] = [str(quad)]
    n = len(texts)
    if draw(st.booleans()):
        i = draw(st.integers(0, n - 1))
        j = draw(st.integers(i + 1, n))
        if texts[-1].count(".") and j == n:  # keep the quad
            j = n - 1
        if i < j:
            return ":".join(texts[:i]) + "::" + ":".join(texts[j:])
    return ":".join(texts)


@SETTINGS
@given(st.ip_addresses(v=6))
def test_ipv6_standard_spellings_accepted(ip):
    assert accepted("ipv6", ip.compressed) and accepted("ipv6", ip.exploded)


@SETTINGS
@given(ipv6_texts(), st.data())
def test_ipv6_against_ipaddress(s, data):
    assert oracle_ipv6(s)
    assert accepted("ipv6", s)
    s = mutate(s, data, "0123456789abcdefABCDEFg:.:%/ ")
    assert accepted("ipv6", s) == oracle_ipv6(s) == FORMAT_CHECKER.conforms(s, "ipv6")


UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@SETTINGS
@given(st.uuids(), st.booleans(), st.data())
def test_uuid(u, upper, data):
    s = str(u).upper() if upper else str(u)
    assert accepted("uuid", s)
    s = mutate(s, data, "0123456789abcdefABCDEFg-{}")
    expected = bool(UUID_RE.fullmatch(s))
    if expected:
        uuid.UUID(s)
    assert accepted("uuid", s) == expected
    if expected:  # jsonschema is looser (UUID() drops extra hyphens), never stricter
        assert FORMAT_CHECKER.conforms(s, "uuid")


def _hostname_label_ok(label: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", label))


def oracle_hostname_modulo_gap(s: str) -> bool:
    """RFC 1123 labels; labels with '--' in positions 3-4 rejected; total length not checked."""
    return all(_hostname_label_ok(label) and label[2:4] != "--" for label in s.split("."))


@SETTINGS
@given(st.lists(st.text("abcXYZ019-", min_size=0, max_size=70), min_size=1, max_size=5), st.data())
def test_hostname(labels, data):
    s = ".".join(labels)
    assert accepted("hostname", s) == oracle_hostname_modulo_gap(s)
    s = mutate(s, data, "ab9-._ ")
    assert accepted("hostname", s) == oracle_hostname_modulo_gap(s)


def test_hostname_documented_gaps():
    assert accepted("hostname", ".".join(["a" * 63] * 5))  # 319 characters: over the limit, accepted
    assert not accepted("hostname", "xn--9n2bp8q")  # a valid A-label, rejected
    assert not accepted("hostname", "ab--cd") and accepted("hostname", "a--b") and accepted("hostname", "abc--d")


# ---- email -------------------------------------------------------------------------------------------------

ATEXT = "abcXYZ09!#$%&'*+-/=?^_`{|}~"


@st.composite
def emails(draw):
    if draw(st.booleans()):
        local = ".".join(draw(st.lists(st.text(ATEXT, min_size=1, max_size=6), min_size=1, max_size=3)))
    else:
        pieces = draw(st.lists(st.one_of(st.sampled_from(list(' !#az@.(),:;<>[]~')), st.sampled_from(['\\"', "\\\\", "\\a", "\\ "])), max_size=6))
        local = '"' + "".join(pieces) + '"'
    kind = draw(st.sampled_from(["domain", "ipv4", "ipv6"]))
    if kind == "domain":
        labels = draw(st.lists(st.from_regex(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?", fullmatch=True), min_size=1, max_size=3))
        domain = ".".join(labels)
    elif kind == "ipv4":
        domain = f"[{draw(st.ip_addresses(v=4))}]"
    else:
        ip = draw(st.ip_addresses(v=6))
        domain = f"[{draw(st.sampled_from(['IPv6', 'ipv6']))}:{draw(st.sampled_from([ip.compressed, ip.exploded]))}]"
    return f"{local}@{domain}"


@SETTINGS
@given(emails())
def test_email_valid_accepted(s):
    assert accepted("email", s)


def test_email_cases():
    good = ['"\\\\"@x', '""@x', "a@[001.2.3.255]", "a@[IPv6:1:2:3:4:5:6:1.2.3.4]", "a@[IPv6:1::1.2.3.4]", "a@b-c.d"]
    bad = [
        "a@b_c", "a@-b", "a@b-", "a@b..c", "a@[1.2.3]", "a@[256.1.1.1]", "a@[IPv6:1::2:3:4:5:6:7]",  # '::' < 2 groups
        "a@[IPv6:1:2:3:4:5:6:7:8:9]", "a@[tag:foo]", '"a"b@x', '"a\\"@x', "a b@x", "a@@b", "a@b@c", "a.@b", '"\u00e9"@x',
    ]  # fmt: skip
    for s in good:
        assert accepted("email", s), s
    for s in bad:
        assert not accepted("email", s), s


# ---- URIs, IRIs, templates ------------------------------------------------------------------------------------

RFC3986_REFERENCES = [  # RFC 3986 section 5.4 (all valid relative references) and section 1.1.2
    "g:h", "g", "./g", "g/", "/g", "//g", "?y", "g?y", "#s", "g#s", "g?y#s", ";x", "g;x", "g;x?y#s", "", ".",
    "./", "..", "../", "../g", "../..", "../../", "../../g", "g.", ".g", "g..", "..g", "./../g", "g;x=1/../y",
    "ftp://ftp.is.co.za/rfc/rfc1808.txt", "http://www.ietf.org/rfc/rfc2396.txt", "ldap://[2001:db8::7]/c=GB?objectClass?one",
    "mailto:John.Doe@example.com", "news:comp.infosystems.www.servers.unix", "tel:+1-816-555-1212", "telnet://192.0.2.16:80/",
    "urn:oasis:names:specification:docbook:dtd:xml:4.1.2", "http://[v7.:a]/", "http://u:p@h:/", "s://@/", "a:",
]  # fmt: skip
FORBIDDEN_IN_URIS = ' "<>\\^`{|}\x7f\n'


def test_uri_reference_examples():
    for s in RFC3986_REFERENCES:
        assert accepted("uri-reference", s), s
        assert accepted("iri-reference", s), s
        assert accepted("uri", s) == bool(re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", s)), s
    for s in ["1:b", "//[::1", "//[v.x]/", "//[vg.x]/", "//h:8a/", "/%", "/%a", "/%ag", "a:b#c#d", "//[1:2:3:4:5:6:7:8:9]"]:
        assert not accepted("uri-reference", s), s


@SETTINGS
@given(st.sampled_from(RFC3986_REFERENCES), st.sampled_from(FORBIDDEN_IN_URIS), st.data())
def test_uri_forbidden_characters_anywhere(base, bad, data):
    i = data.draw(st.integers(0, len(base)))
    s = base[:i] + bad + base[i:]
    for name in ("uri", "uri-reference", "iri", "iri-reference"):
        assert not accepted(name, s)


UCSCHAR = [(0xA0, 0xD7FF), (0xF900, 0xFDCF), (0xFDF0, 0xFFEF), (0xE1000, 0xEFFFD)]  # RFC 3987
UCSCHAR += [(plane << 16, (plane << 16) + 0xFFFD) for plane in range(1, 14)]


@SETTINGS
@given(st.text(st.characters(min_codepoint=0xA0, max_codepoint=0x10FFFF, exclude_categories=["Cs"]), min_size=1, max_size=4))
def test_iri_unicode(text):
    in_ucs = all(any(lo <= ord(c) <= hi for lo, hi in UCSCHAR) for c in text)
    iprivate = [(0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD)]
    in_query = all(any(lo <= ord(c) <= hi for lo, hi in UCSCHAR + iprivate) for c in text)
    assert accepted("iri", f"http://h/{text}") == in_ucs
    assert accepted("iri", f"http://h/?{text}") == in_query
    assert accepted("iri-reference", f"{text}#{text}") == in_ucs
    assert not accepted("uri", f"http://h/{text}")


def test_uri_template_examples():
    good = [  # RFC 6570 section 1.2 and 3.2
        "{var}", "{+path}/here", "{#x,hello,y}", "X{.list*}", "{/var:1,var}", "{;keys*}", "{?x,y}", "{&x}", "{=x}",
        "map?{x,y}", "{var:3}", "{+path:6}/here", "http://www.example.com/foo{?query,number}", "%7E{x_1.y}", "\u00e9{\u0041}",
    ]  # fmt: skip
    bad = ["{", "}", "{var", "{x y}", "{.}", "{x.}", "{..x}", "{x:}", "{x:a}", "{x**}", "{$x}", "a<b", "%zz", "{x}}"]
    for s in good:
        assert accepted("uri-template", s), s
    for s in bad:
        assert not accepted("uri-template", s), s


# ---- JSON pointers ------------------------------------------------------------------------------------------


def oracle_json_pointer(s: str) -> bool:
    return bool(re.fullmatch(r"(/([^/~]|~[01])*)*", s, re.S))


def oracle_relative_json_pointer(s: str) -> bool:
    m = re.fullmatch(r"(0|[1-9][0-9]*)(.*)", s, re.S | re.A)
    return bool(m) and (m[2] == "#" or oracle_json_pointer(m[2]))


pointer_text = st.text(st.one_of(st.sampled_from(list("/~01a#\"\\\n\x00\x7f")), st.characters(exclude_categories=["Cs"])), max_size=12)


@SETTINGS
@given(pointer_text)
def test_json_pointer(s):
    assert accepted("json-pointer", s) == oracle_json_pointer(s)
    assert accepted("json-pointer", "/" + s) == oracle_json_pointer("/" + s)


@SETTINGS
@given(st.sampled_from(["0", "1", "01", "10", "-1", "", "7"]), pointer_text)
def test_relative_json_pointer(prefix, s):
    for text in (prefix + s, prefix + "/" + s, prefix + "#"):
        assert accepted("relative-json-pointer", text) == oracle_relative_json_pointer(text)


# ---- JSON spellings (escape policies) ------------------------------------------------------------------------


def spell(value: str, rng: random.Random, escape_rate: float) -> str:
    """A random JSON spelling of `value`: each character literal (where JSON allows) or escaped."""
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for c in value:
        must = c in '"\\' or ord(c) < 0x20
        if not must and rng.random() >= escape_rate:
            out.append(c)
        elif c in short and rng.random() < 0.5:
            out.append(short[c])
        else:
            units = [ord(c)] if ord(c) < 0x10000 else [0xD800 + ((ord(c) - 0x10000) >> 10), 0xDC00 + ((ord(c) - 0x10000) & 0x3FF)]
            for u in units:
                h = f"{u:04x}"
                out.append("\\u" + "".join(x.upper() if rng.random() < 0.5 else x for x in h))
    return "".join(out)


@SETTINGS
@given(pointer_text, st.randoms(use_true_random=False))
def test_any_spelling_accepted_exactly_under_all(s, rng):
    text = spell("/" + s, rng, 0.5)
    assert json.loads('"' + text + '"') == "/" + s
    assert compiled("json-pointer", "all").accepts(text) == oracle_json_pointer("/" + s)


@SETTINGS
@given(st.dates(), st.randoms(use_true_random=False))
def test_escaped_digits_only_under_all(d, rng):
    text = spell(d.isoformat(), rng, 0.3)
    assert compiled("date", "all").accepts(text)
    assert compiled("date", "standard").accepts(text) == (text == d.isoformat())


def test_policies_for_non_ascii_and_required_escapes():
    iri = "http://h/\u00e9\U0001F600"
    assert compiled("iri", "standard").accepts(json.dumps(iri)[1:-1]) and compiled("iri", "standard").accepts(iri)
    assert compiled("iri", "required").accepts(iri) and not compiled("iri", "required").accepts(json.dumps(iri)[1:-1])
    assert compiled("iri", "standard").accepts("http://h/\\u00E9\\uD83D\\uDE00")
    assert not compiled("iri", "standard").accepts("http://h/\\uD83D")  # a lone surrogate
    assert not compiled("iri", "standard").accepts("http://h/\\u0041")  # printable ASCII stays literal
    assert compiled("iri", "all").accepts("http:\\/\\/h\\/\\u0041")
    for policy in ("standard", "required", "all"):
        c = compiled("json-pointer", policy)
        assert c.accepts('/a\\"b\\\\c\\n\\u0000') and c.accepts("/\\u0022\\u005C\\u000A")
        assert not c.accepts('/a"b') and not c.accepts("/a\\b\\") and not c.accepts("/\x01")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 0x3000)), min_size=1, max_size=4), st.integers(0, 0x10FFFF))
def test_u_escapes_of_arbitrary_classes(spans, probe):
    ranges = [(lo, min(lo + n, 0x10FFFF)) for lo, n in spans]
    if all(0xD800 <= lo and hi <= 0xDFFF for lo, hi in ranges):  # surrogates alone: no character at all
        from strictgen.compile.automaton import EmptyLanguageError

        with pytest.raises(EmptyLanguageError):
            Compiled(json_escaped(charset(ranges), "all"))
        return
    c = Compiled(json_escaped(charset(ranges), "all"))
    for cp in {probe, ranges[0][0], ranges[0][1], ranges[0][1] + 1, 0xFFFF, 0x10000}:
        if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
            continue
        inside = any(lo <= cp <= hi for lo, hi in ranges)
        assert c.accepts(spell(chr(cp), random.Random(cp), 1.0)) == inside
        if cp >= 0x20 and chr(cp) not in '"\\':
            assert c.accepts(chr(cp)) == inside


def test_json_escaped_refuses_what_it_cannot_spell():
    from strictgen.grammar.ir import ByteSet, RuleRef

    with pytest.raises(ValueError):
        json_escaped(ByteSet(((0x80, 0xFF),)))
    with pytest.raises(ValueError):
        json_escaped(repeat(RuleRef("x")))
