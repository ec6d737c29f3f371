"""The grammar IR written back as text other runtimes read: GBNF (llama.cpp, Ollama) or Lark
(llguidance-backed servers, xgrammar's from_lark).

    export_grammar(grammar, "gbnf" | "lark") -> Exported(text, inexact)

Most of the IR maps one to one (literals, character classes, sequences, alternatives, counted
repeats, rule references, special tokens). The regular operations the targets lack
(intersection, difference, the JSON spellings of a string language) are written as their
minimal DFA, one right-linear rule per state over whole characters. Lazily built rule families
(the key sets of `any_order` objects) are written out member by member up to MAX_LAZY_MEMBERS.

What cannot be written exactly is listed in `inexact` and marked by a comment in the text: a rule
family past its limit (dropped: a false reject), a uniqueItems array (written without it: a false
accept), a byte set or literal that is not whole UTF-8 characters (the targets read characters).
Read back by our own GBNF or Lark front end, an export with nothing inexact accepts exactly what
the grammar does.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .automata import NFABuilder, shared_nodes
from .ir import EMPTY, NOTHING, Alt, ByteSet, CharSet, Difference, Expr, Grammar, Intersect, Lazy, Literal, Repeat
from .ir import RuleRef, Seq, SpecialToken, Spelled, children, cyclic_rules, lazy_body

__all__ = ["Exported", "export_grammar", "MAX_LAZY_MEMBERS"]

MAX_LAZY_MEMBERS = 4096
"""Members of a lazily built rule family written out before the export gives up on it."""

UNIQUE_MARK = "~unique:"  # schema/unique.py's mark in the names of uniqueItems array rules
DISTINCT_MARK = "~distinct"  # schema/emit_objects.py's mark in the names of objects whose names must differ
_GBNF_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"'}


@dataclass
class Exported:
    text: str
    inexact: list[str] = field(default_factory=list)  # what the text cannot state exactly


def export_grammar(grammar: Grammar, target: str, max_lazy_members: int = MAX_LAZY_MEMBERS) -> Exported:
    if target not in ("gbnf", "lark"):
        raise ValueError(f"export target must be 'gbnf' or 'lark', not {target!r}")
    return _Writer(grammar, target, max_lazy_members).run()


def _utf8_ranges(table: np.ndarray, state: int, depth: int, memo: dict) -> list[tuple[int, int, int]]:
    """(low, high, target) runs of the values of `depth` continuation bytes read from `state`."""
    key = (state, depth)
    got = memo.get(key)
    if got is not None:
        return got
    out: list[tuple[int, int, int]] = []
    for c in range(0x80, 0xC0):
        nxt = int(table[state, c])
        if nxt < 0:
            continue
        if depth == 1:
            runs = [(0, 0, nxt)]
        else:
            runs = _utf8_ranges(table, nxt, depth - 1, memo)
        shift = 6 * (depth - 1)
        for lo, hi, t in runs:
            _add_run(out, ((c & 0x3F) << shift) | lo, ((c & 0x3F) << shift) | hi, t)
    memo[key] = out
    return out


def _add_run(out: list, lo: int, hi: int, target: int) -> None:
    if out and out[-1][2] == target and out[-1][1] + 1 == lo:
        out[-1] = (out[-1][0], hi, target)
    else:
        out.append((lo, hi, target))


_LEADS = [(0x00, 0x7F, 0, 0, 0), (0xC2, 0xDF, 1, 0x1F, 0x80), (0xE0, 0xEF, 2, 0x0F, 0x800), (0xF0, 0xF4, 3, 0x07, 0x10000)]


def char_transitions(table: np.ndarray, state: int, memo: dict) -> dict[int, list[tuple[int, int]]]:
    """Target state -> code point ranges of the whole UTF-8 characters leading there from `state`
    (overlong forms, surrogates and values past U+10FFFF excluded)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for first, last, depth, bits, minimum in _LEADS:
        for b in range(first, last + 1):
            nxt = int(table[state, b])
            if nxt < 0:
                continue
            runs = [(0, 0, nxt)] if depth == 0 else _utf8_ranges(table, nxt, depth, memo)
            base = (b & bits) << (6 * depth) if depth else b
            for lo, hi, t in runs:
                lo, hi = max(base | lo, minimum), min(base | hi, 0x10FFFF)
                for a, z in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
                    if a <= z:
                        ranges = out.setdefault(t, [])
                        if ranges and ranges[-1][1] + 1 == a:
                            ranges[-1] = (ranges[-1][0], z)
                        else:
                            ranges.append((a, z))
    return out


class _Writer:
    def __init__(self, grammar: Grammar, target: str, max_lazy_members: int) -> None:
        self.g = grammar
        self.max_lazy_members = max_lazy_members
        self.gbnf = target == "gbnf"
        self.names: dict[str, str] = {}
        self.taken: set[str] = set()
        self.lines: list[str] = []
        self.inexact: list[str] = []
        self.pending: list[tuple[str, Expr]] = []  # rules to write: (our name, body)
        self.made: dict[object, str] = {}  # lazy members and DFAs already given a rule, by key
        self.members = 0  # lazy family members written
        self.shared: set[int] = set()  # ids of the composite parts used in more than one place
        self.defining: Expr | None = None  # the body being written
        self.never: str | None = None  # the name of the rule that matches nothing (kept_called)

    # ---- names -----------------------------------------------------------------------------

    def name(self, ir_name: str) -> str:
        got = self.names.get(ir_name)
        if got is None:
            if ir_name == self.g.root:
                base = "root" if self.gbnf else "start"
            elif self.gbnf:
                base = re.sub(r"[^a-zA-Z0-9]+", "-", ir_name).strip("-") or "r"
            else:
                base = "r_" + re.sub(r"[^a-z0-9]+", "_", ir_name.lower()).strip("_")
            got, n = base, 1
            while got in self.taken:
                n += 1
                got = f"{base}{'-' if self.gbnf else '_'}{n}"
            self.taken.add(got)
            self.names[ir_name] = got
        return got

    def new_rule(self, key, hint: str, body: Expr) -> str:
        got = self.made.get(key)
        if got is None:
            ir_name = f"\0{hint}{len(self.made)}"
            got = self.made[key] = self.name(ir_name)
            self.pending.append((ir_name, body))
        return got

    def note(self, what: str) -> None:
        if what not in self.inexact:
            self.inexact.append(what)
            self.lines.append(("# " if self.gbnf else "// ") + "INEXACT: " + what)

    # ---- rules -----------------------------------------------------------------------------

    def run(self) -> Exported:
        order = [self.g.root] + [n for n in self.g.rules if n != self.g.root]
        self.pending = [(n, self.g.rules[n]) for n in order]
        self.shared = shared_nodes(self.g.rules.values())
        for n in order:
            self.name(n)
        body_lines: list[str] = []
        while self.pending:
            ir_name, body = self.pending.pop(0)
            if UNIQUE_MARK in ir_name:
                self.note(f"rule {self.name(ir_name)}: uniqueItems is not enforced (duplicates are accepted)")
            if DISTINCT_MARK in ir_name:
                self.note(f"rule {self.name(ir_name)}: a repeated member name is accepted and counted toward minProperties")
            self.defining = body
            text = self.expr(body, top=True)
            if ir_name.startswith("\0part"):  # a shared part: kept a call by our compiler (see kept_called)
                text = f"{text or self.optional(NOTHING)} | {self.kept_called(ir_name)}"
            sep = " ::= " if self.gbnf else ": "
            body_lines.append(f"{self.name(ir_name)}{sep}{text}".rstrip())
        return Exported("\n".join(self.lines + body_lines) + "\n", self.inexact)

    # ---- expressions -----------------------------------------------------------------------

    def expr(self, e: Expr, top: bool = False) -> str:
        """`e` as text; `top`: a rule's whole body (alternatives need no parentheses). A part the
        IR shares (a DAG: JSON Schema's optional properties share their tails) is a rule of its
        own, or the text would grow exponentially."""
        if id(e) in self.shared and children(e) and e is not self.defining:
            return self.new_rule(("shared", id(e)), "part", e)
        if isinstance(e, Literal):
            return self.literal(e.data)
        if isinstance(e, (ByteSet, CharSet)):
            return self.char_class(e)
        if isinstance(e, RuleRef):
            return self.name(e.name)
        if isinstance(e, SpecialToken):
            return e.name or "<[" + ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in e.ids) + "]>"
        if isinstance(e, Seq):
            if not e.items:
                return '""' if self.gbnf else ("" if top else self.optional(NOTHING))
            return " ".join(self.atomic(x) if isinstance(x, Alt) else self.expr(x) for x in e.items)
        if isinstance(e, Alt):
            if not e.items:
                return self.nothing()
            rest = [x for x in e.items if x != EMPTY]
            if len(rest) < len(e.items) and not self.gbnf:
                return self.optional(Alt(tuple(rest)) if len(rest) > 1 else rest[0])
            text = " | ".join(self.expr(x) for x in e.items)
            return text if top else f"({text})"
        if isinstance(e, Repeat):
            return self.repeat(e)
        if isinstance(e, Lazy):
            return self.lazy(e)
        if isinstance(e, (Intersect, Difference, Spelled)):
            return self.dfa_rules(e)
        raise TypeError(f"cannot export {type(e).__name__}")

    def atomic(self, e: Expr) -> str:
        text = self.expr(e)
        simple = isinstance(e, (Literal, ByteSet, CharSet, RuleRef, SpecialToken, Alt, Lazy, Intersect, Difference, Spelled))
        return text if simple else f"({text})"

    def kept_called(self, name: str, named: bool = False) -> str:
        """An alternative that puts rule `name` on a reference cycle without changing its language:
        a call of a rule that matches nothing (ir.called_body's trick, written so that no parser
        folds it away), then the rule itself. Our compiler copies a rule that is on no cycle into
        every place that uses it; a rule of a shared part, copied so, grows exponentially."""
        if self.never is None:
            self.never = self.name("\0never")
            self.lines.append(f"{self.never}{' ::= ' if self.gbnf else ': '}{self.nothing()}")
        return f"{self.never} {name if named else self.name(name)}"

    def optional(self, e: Expr) -> str:
        return f"[{self.expr(e, top=True)}]" if not self.gbnf else f"({self.expr(e, top=True)})?"

    def nothing(self) -> str:
        return "[^\\x00-\\U0010FFFF]" if self.gbnf else "/[^\\s\\S]/"

    def repeat(self, e: Repeat) -> str:
        item = self.atomic(e.item)
        lo, hi = e.min, e.max
        if (lo, hi) == (0, None):
            return item + "*"
        if (lo, hi) == (1, None):
            return item + "+"
        if (lo, hi) == (0, 1):
            return item + "?"
        if self.gbnf:
            return f"{item}{{{lo},{'' if hi is None else hi}}}" if hi != lo else f"{item}{{{lo}}}"
        if hi is None:
            return f"{item} ~ {lo} {item}*"
        return f"{item} ~ {lo}..{hi}" if hi != lo else f"{item} ~ {lo}"

    # ---- leaves ----------------------------------------------------------------------------

    def literal(self, data: bytes) -> str:
        if not data:
            return '""' if self.gbnf else self.optional(NOTHING)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self.note(f"the bytes {data!r} are not whole UTF-8 characters; written as what they decode to")
            text = data.decode("utf-8", "replace")
        out = []
        for ch in text:
            cp = ord(ch)
            if ch in _GBNF_ESCAPES:
                out.append(_GBNF_ESCAPES[ch])
            elif cp < 0x20 or 0x7F <= cp < 0xA0:
                out.append(f"\\x{cp:02x}" if self.gbnf or cp < 0x100 else f"\\u{cp:04x}")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    def char_class(self, e: ByteSet | CharSet) -> str:
        ranges = e.ranges
        if isinstance(e, ByteSet) and ranges and ranges[-1][1] >= 0x80:
            self.note("a set of raw bytes past ASCII (not whole characters) is written as the characters of those values")
        body = "".join(self.class_char(a) if a == b else f"{self.class_char(a)}-{self.class_char(b)}" for a, b in ranges)
        return f"[{body}]" if self.gbnf else f"/[{body}]/"

    def class_char(self, cp: int) -> str:
        ch = chr(cp)
        if ch.isascii() and ch.isalnum():
            return ch
        if self.gbnf:
            return f"\\x{cp:02X}" if cp < 0x100 else (f"\\u{cp:04X}" if cp < 0x10000 else f"\\U{cp:08X}")
        if ch in "\\]^-[/":
            return "\\" + ch
        if cp < 0x100:
            return f"\\x{cp:02x}"
        return f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"

    # ---- what the targets lack -------------------------------------------------------------

    def lazy(self, e: Lazy) -> str:
        key = (id(e.family), e.key, e.uses)
        if key not in self.made:
            if self.members >= self.max_lazy_members:
                self.note(f"a lazily built rule family has more than {self.max_lazy_members} members; the rest are left out")
                return self.nothing()
            self.members += 1
        return self.new_rule(key, "member", lazy_body(e))

    def dfa_rules(self, e: Expr) -> str:
        """A regular expression the targets cannot write directly, as its minimal DFA: one rule a
        state, each a choice of (characters, next state), plus "" where the state accepts."""
        got = self.made.get(id(e))
        if got is not None:
            return got
        dfa = NFABuilder(self.g.rules, {}, shared_nodes([e])).regular_dfa(e)
        if not dfa.can_finish():
            return self.nothing()
        n = dfa.num_states
        table = np.frombuffer(dfa.table256(), dtype=np.int32).reshape(n, 256)
        accepting = dfa.accepting()
        memo: dict = {}
        moves = {0: char_transitions(table, 0, memo)}  # the states reachable from the start
        work = [0]
        while work:
            for t in moves[work.pop()]:
                if t not in moves:
                    moves[t] = char_transitions(table, t, memo)
                    work.append(t)
        names = {s: self.name(f"\0dfa{len(self.made)}-{s}") for s in sorted(moves)}
        self.made[id(e)] = names[0]  # the grammar holds e while the export runs: its id stays its own
        # a state entered from several others and on no cycle is a rule our own compiler would copy
        # into each caller (and theirs into theirs: exponential): kept a call
        entered = Counter(t for s in moves for t in moves[s])
        looped = cyclic_rules({s: set(moves[s]) for s in moves})
        for s in sorted(moves):
            options = [self.kept_called(names[s], named=True)] if entered[s] > 1 and s not in looped else []
            for t, ranges in moves[s].items():
                cls = "".join(self.class_char(a) if a == b else f"{self.class_char(a)}-{self.class_char(b)}" for a, b in ranges)
                options.append(f"{'[' if self.gbnf else '/['}{cls}{']' if self.gbnf else ']/'} {names[t]}")
            body = " | ".join(options) if options else ("" if accepting[s] else self.nothing())
            if accepting[s] and options:
                body = f"{body} | \"\"" if self.gbnf else f"[{body}]"
            elif accepting[s] and self.gbnf:
                body = '""'
            self.lines.append(f"{names[s]}{' ::= ' if self.gbnf else ': '}{body}".rstrip())
        return names[0]
