"""Random regular expressions and GBNF grammars for the differential fuzz campaign, built as a small
syntax tree of our own so that each can be written in both dialects and judged independently.

A node is a JSON-able list (cases are stored, minimised and replayed as JSON):

    ["lit", text]                 the characters of `text`
    ["cls", negated, [[lo, hi]]]  a class of code-point ranges ([^...] when negated)
    ["any"]                       `.`: ECMA's any code point but \\n \\r \\u2028 \\u2029 (regex);
                                  any code point (GBNF)
    ["digit"] / ["word"]          \\d = [0-9], \\w = [A-Za-z0-9_] (regex only)
    ["seq", [node, ...]]          concatenation
    ["alt", [node, ...]]          alternation
    ["rep", node, lo, hi]         lo..hi copies (hi None: unbounded)
    ["ref", name]                 a rule (GBNF only)

The judges never read strictgen's parsers: a regex is written once for strictgen (ECMA) and once for
Python's `re` (where `.` differs), and a grammar tree becomes grammar IR here, by a direct
translation, for the Earley recogniser of tests/reference.py.
"""

from __future__ import annotations

import random

from strictgen.grammar.ir import Alt, CharSet, Expr, Grammar, Literal, Repeat, RuleRef, Seq

MAX_CODEPOINT = 0x10FFFF
# characters literals and classes draw from: ASCII (metacharacters included), blanks, and a few
# multi-byte ones (2, 3 and 4 bytes of UTF-8)
CHAR_POOL = "abcxyzABZ019_-.^$|?*+()[]{}\\/\"' \n\téß你好😀€"
LINE_TERMINATORS = "\n\r\u2028\u2029"
REGEX_META = set("\\^$.|?*+()[]{}/")
CLASS_META = set("\\]^-[")


# ---- generation --------------------------------------------------------------------------------


def random_ranges(rnd: random.Random) -> list[list[int]]:
    out = []
    for _ in range(rnd.randint(1, 3)):
        a = ord(rnd.choice(CHAR_POOL))
        if rnd.random() < 0.5:
            b = a
        else:
            b = ord(rnd.choice(CHAR_POOL))
            a, b = min(a, b), max(a, b)
            if 0xD800 <= b and a <= 0xDFFF:  # never straddle the surrogates: both dialects differ there
                b = 0xD7FF
        out.append([a, b])
    return out


def random_node(rnd: random.Random, depth: int, regex: bool, rules: list[str] = ()) -> list:
    """A random node; `rules` are the names a GBNF node may refer to."""
    r = rnd.random()
    if depth <= 0 or r < 0.3:
        k = rnd.random()
        if rules and k < 0.25:
            return ["ref", rnd.choice(rules)]
        if k < 0.55:
            return ["lit", "".join(rnd.choice(CHAR_POOL) for _ in range(rnd.randint(1, 3)))]
        if k < 0.85:
            return ["cls", rnd.random() < 0.25, random_ranges(rnd)]
        if regex and k < 0.95:
            return [rnd.choice(["digit", "word"])]
        return ["any"]
    if r < 0.55:
        return ["seq", [random_node(rnd, depth - 1, regex, rules) for _ in range(rnd.randint(2, 3))]]
    if r < 0.75:
        return ["alt", [random_node(rnd, depth - 1, regex, rules) for _ in range(rnd.randint(2, 3))]]
    lo, hi = rnd.choice([(0, None), (1, None), (0, 1), (2, 2), (1, 3), (0, 2), (2, None), (3, 5)])
    return ["rep", random_node(rnd, depth - 1, regex, rules), lo, hi]


def random_regex(rnd: random.Random) -> list:
    return random_node(rnd, rnd.randint(1, 4), regex=True)


def random_gbnf(rnd: random.Random) -> dict[str, list]:
    """Rules root, r1, r2, ...: a rule refers to later rules, and sometimes back to itself or an
    earlier rule after a literal (recursion that is not left recursion), or rarely at its start
    (left recursion, which strictgen refuses: a refusal, not a finding)."""
    n = rnd.randint(1, 4)
    names = ["root"] + [f"r{i}" for i in range(1, n)]
    rules: dict[str, list] = {}
    for i, name in enumerate(names):
        body = random_node(rnd, rnd.randint(1, 3), regex=False, rules=names[i + 1 :])
        if rnd.random() < 0.25:  # recursion guarded by a literal: name ::= body | "(" name ")"
            back = rnd.choice(names[: i + 1])
            body = ["alt", [body, ["seq", [["lit", rnd.choice("([{<")], ["ref", back], ["lit", rnd.choice(")]}>")]]]]]
        elif rnd.random() < 0.03:
            body = ["alt", [body, ["seq", [["ref", name], ["lit", "x"]]]]]
        rules[name] = body
    return rules


# ---- writing ----------------------------------------------------------------------------------


def _char_escape(c: str, meta: set) -> str:
    if c == "\n":
        return "\\n"
    if c == "\t":
        return "\\t"
    if c == "\r":
        return "\\r"
    return "\\" + c if c in meta else c


def _class_text(negated: bool, ranges) -> str:
    body = "".join(_char_escape(chr(a), CLASS_META) + ("" if a == b else "-" + _char_escape(chr(b), CLASS_META)) for a, b in ranges)
    return "[" + ("^" if negated else "") + body + "]"


def regex_text(node: list, python: bool) -> str:
    """The pattern for strictgen (ECMA) or for Python's `re` (with re.ASCII for \\d and \\w)."""
    kind = node[0]
    if kind == "lit":
        return "".join(_char_escape(c, REGEX_META) for c in node[1])
    if kind == "cls":
        return _class_text(node[1], node[2])
    if kind == "any":
        return "[^\\n\\r\\u2028\\u2029]" if python else "."
    if kind == "digit":
        return "\\d"
    if kind == "word":
        return "\\w"
    if kind == "seq":
        return "".join(_group(n, python, for_seq=True) for n in node[1])
    if kind == "alt":
        return "|".join(regex_text(n, python) for n in node[1])
    if kind == "rep":
        return _group(node[1], python) + _quantifier(node[2], node[3])
    raise ValueError(kind)


def _group(node: list, python: bool, for_seq: bool = False) -> str:
    text = regex_text(node, python)
    atomic = node[0] in ("cls", "any", "digit", "word") or (node[0] == "lit" and len(node[1]) == 1)
    if for_seq and node[0] != "alt":
        return text
    return text if atomic else "(?:" + text + ")"


def _quantifier(lo: int, hi: int | None) -> str:
    if (lo, hi) == (0, None):
        return "*"
    if (lo, hi) == (1, None):
        return "+"
    if (lo, hi) == (0, 1):
        return "?"
    if hi is None:
        return "{%d,}" % lo
    return "{%d}" % lo if lo == hi else "{%d,%d}" % (lo, hi)


def gbnf_text(rules: dict[str, list]) -> str:
    return "\n".join(f"{name} ::= {_gbnf(body)}" for name, body in rules.items()) + "\n"


def _gbnf(node: list) -> str:
    kind = node[0]
    if kind == "lit":
        return '"' + "".join(_char_escape(c, {"\\", '"'}) for c in node[1]) + '"'
    if kind == "cls":
        return _class_text(node[1], node[2])
    if kind == "any":
        return "."
    if kind == "ref":
        return node[1]
    if kind == "seq":
        return " ".join(_gbnf_atom(n) if n[0] == "alt" else _gbnf(n) for n in node[1]) or '""'
    if kind == "alt":
        return " | ".join(_gbnf(n) for n in node[1])
    if kind == "rep":
        return _gbnf_atom(node[1]) + _quantifier(node[2], node[3])
    raise ValueError(kind)


def _gbnf_atom(node: list) -> str:
    return _gbnf(node) if node[0] in ("lit", "cls", "any", "ref") else "(" + _gbnf(node) + ")"


# ---- the judges' IR (a direct translation, no strictgen parser) -------------------------------------


def _complement(ranges) -> tuple[tuple[int, int], ...]:
    out, nxt = [], 0
    for a, b in sorted((a, b) for a, b in ranges):
        if a > nxt:
            out.append((nxt, a - 1))
        nxt = max(nxt, b + 1)
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return tuple(out)


def to_ir(node: list, regex: bool) -> Expr:
    kind = node[0]
    if kind == "lit":
        return Literal(node[1].encode("utf-8"))
    if kind == "cls":
        ranges = tuple((a, b) for a, b in node[2])
        return CharSet(_complement(ranges) if node[1] else tuple(sorted(ranges)))
    if kind == "any":
        return CharSet(_complement([(ord(c), ord(c)) for c in LINE_TERMINATORS]) if regex else ((0, MAX_CODEPOINT),))
    if kind == "digit":
        return CharSet(((48, 57),))
    if kind == "word":
        return CharSet(((48, 57), (65, 90), (95, 95), (97, 122)))
    if kind == "seq":
        return Seq(tuple(to_ir(n, regex) for n in node[1]))
    if kind == "alt":
        return Alt(tuple(to_ir(n, regex) for n in node[1]))
    if kind == "rep":
        return Repeat(to_ir(node[1], regex), node[2], node[3])
    if kind == "ref":
        return RuleRef(node[1])
    raise ValueError(kind)


def regex_grammar(node: list) -> Grammar:
    return Grammar({"root": to_ir(node, regex=True)})


def gbnf_grammar(rules: dict[str, list]) -> Grammar:
    return Grammar({name: to_ir(body, regex=False) for name, body in rules.items()})


# ---- documents ----------------------------------------------------------------------------------


def _random_char(rnd: random.Random, node: list) -> str | None:
    kind = node[0]
    if kind == "digit":
        return rnd.choice("0123456789")
    if kind == "word":
        return rnd.choice("azAZ09_")
    if kind == "any":
        return rnd.choice([c for c in CHAR_POOL if c not in LINE_TERMINATORS])
    negated, ranges = node[1], node[2]
    if negated:
        pool = [c for c in CHAR_POOL + "kQ#%~\u00a0\u4e00" if not any(a <= ord(c) <= b for a, b in ranges)]
        return rnd.choice(pool) if pool else None
    a, b = rnd.choice(ranges)
    return chr(rnd.randint(a, b))


def random_member(rnd: random.Random, node: list, rules: dict[str, list] | None = None, budget: list | None = None) -> str | None:
    """A random string of the node's language (None when the walk ran out of budget or hit an
    empty class)."""
    budget = budget if budget is not None else [60]
    budget[0] -= 1
    if budget[0] < 0:
        return None
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind in ("cls", "any", "digit", "word"):
        return _random_char(rnd, node)
    if kind == "ref":
        return random_member(rnd, rules[node[1]], rules, budget)
    if kind == "seq":
        parts = [random_member(rnd, n, rules, budget) for n in node[1]]
        return None if any(p is None for p in parts) else "".join(parts)
    if kind == "alt":
        options = list(node[1])
        rnd.shuffle(options)
        for n in options:  # first try the alternatives in random order; a dead one falls through
            got = random_member(rnd, n, rules, budget)
            if got is not None:
                return got
        return None
    if kind == "rep":
        hi = node[3] if node[3] is not None else node[2] + 3
        count = rnd.randint(node[2], hi)
        parts = [random_member(rnd, node[1], rules, budget) for _ in range(count)]
        return None if any(p is None for p in parts) else "".join(parts)
    raise ValueError(kind)


def mutate_text(rnd: random.Random, text: str) -> str:
    """One small edit: delete, insert, replace or duplicate a piece of `text`."""
    k = rnd.random()
    i = rnd.randint(0, len(text))
    if k < 0.3 and text:
        i = min(i, len(text) - 1)
        return text[:i] + text[i + 1 :]
    if k < 0.6:
        return text[:i] + rnd.choice(CHAR_POOL) + text[i:]
    if k < 0.8 and text:
        i = min(i, len(text) - 1)
        return text[:i] + rnd.choice(CHAR_POOL) + text[i + 1 :]
    j = rnd.randint(i, len(text))
    return text[:j] + text[i:j] + text[j:]


def documents(rnd: random.Random, node: list, rules: dict[str, list] | None = None, n: int = 6) -> list[str]:
    """Up to `n` members and as many mutations of them (deduplicated, in order)."""
    members = [m for m in (random_member(rnd, node, rules) for _ in range(n)) if m is not None]
    out = list(members) + [mutate_text(rnd, rnd.choice(members)) for _ in range(n) if members]
    out.append("")
    return list(dict.fromkeys(out))
