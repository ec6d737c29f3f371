"""Named captures, found on demand by parsing the accepted text against the grammar IR.

    captures(compiled, data, complete) -> [(name, text), ...]

A capture is a rule attribute (Lark's `name[capture]`, GBNF's `name@capture`: `Grammar.captures`)
and never changes the language, so the compiled machine knows nothing of it and the matcher's
hot path records nothing for it but the bytes it accepted (only in grammars that have captures).
When asked, the IR is rebuilt (`CompiledGrammar.source_grammar`) and the bytes are parsed by an
Earley parser over it: every piece of the IR that reaches neither a captured rule nor a
recursive rule is one terminal, matched by its minimal DFA from the regular core, so the parser
walks only the few rules that matter. Each Earley item carries the captures of the one
derivation that reached it first (a tree of pairs, joined in O(1)); a captured rule adds its own
span when it completes, after the spans inside it (captures come in the order they close).

A text that may still grow (`complete` False: no EOS accepted, and more text allowed) is parsed
as a prefix where it is not yet a whole document: the rest of every item still open at the end is
taken as read. Either way, only captures that closed before its last byte are reported (one ending
there may still grow).

Where the grammar is ambiguous, one derivation is chosen (the first found, left to right).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strictgen.compile.special_tokens import STAND_IN, bind_special_tokens
from strictgen.grammar.automata import NFABuilder, shared_nodes
from strictgen.grammar.ir import (Alt, Difference, Expr, Grammar, Intersect, Lazy, Literal, Repeat, RuleRef, Seq, Spelled,
                                  children, lazy_body, recursive_rules, rule_references)

if TYPE_CHECKING:
    from strictgen.compile.compiled import CompiledGrammar

_REGULAR_ONLY = (Intersect, Difference, Spelled)  # regular by the IR's contract: always one terminal


class _Terminal:
    """A piece of the IR read as one token of the parse: a literal, or a DFA's language."""

    __slots__ = ("data", "dfa", "ends", "cut")

    def __init__(self, data: bytes | None, dfa=None):
        self.data, self.dfa = data, dfa
        self.ends: dict[int, list[int]] = {}  # start -> every end of a match (memoised per parse)
        self.cut: set[int] = set()  # starts from which the text ends inside a match that could go on

    def match(self, text: bytes, i: int) -> list[int]:
        got = self.ends.get(i)
        if got is None:
            if self.data is not None:
                got = [i + len(self.data)] if text.startswith(self.data, i) else []
                if i < len(text) < i + len(self.data) and self.data.startswith(text[i:]):
                    self.cut.add(i)
            else:
                got, state = [], 0
                if self.dfa.is_accepting(0):
                    got.append(i)
                for j in range(i, len(text)):
                    state = self.dfa.step(state, text[j:j + 1])
                    if state < 0:
                        break
                    if self.dfa.is_accepting(state):
                        got.append(j + 1)
                else:
                    if i < len(text):
                        self.cut.add(i)
            self.ends[i] = got
        return got

    def productive(self) -> bool:
        return self.data is not None or self.dfa.can_finish()


class _Rules:
    """The IR as numbered nonterminals and productions, made as the parse first needs them."""

    def __init__(self, grammar: Grammar):
        self.grammar = grammar
        refs = {name: rule_references(body) for name, body in grammar.rules.items()}
        deep = set(grammar.captures) | recursive_rules(grammar)
        changed = True
        while changed:  # a rule reaching a captured or recursive rule is parsed, not lexed
            changed = False
            for name, used in refs.items():
                if name not in deep and used & deep:
                    deep.add(name)
                    changed = True
        self.deep = deep
        self.symbols: dict[object, object] = {}  # key -> nonterminal id or _Terminal
        self.productions: list[list[tuple]] = []  # nonterminal -> its productions (tuples of symbols); None until made
        self.makers: list = []  # nonterminal -> how to make its productions
        self.captured: dict[int, str] = {}  # nonterminal -> capture name
        self.kept: list = []  # lazy bodies made here (ids stay theirs)
        self._plain: dict[int, bool] = {}
        self._productive: dict[int, bool] = {}
        self._builder = NFABuilder(grammar.rules, {}, shared_nodes(list(grammar.rules.values())))

    # ---- symbols ----

    def symbol(self, e: Expr):
        key = ("rule", e.name) if isinstance(e, RuleRef) else id(e)
        got = self.symbols.get(key)
        if got is None:
            got = self.symbols[key] = self._make(e)
        return got

    def _nonterminal(self, maker) -> int:
        self.productions.append(None)
        self.makers.append(maker)
        return len(self.makers) - 1

    def _make(self, e: Expr):
        if isinstance(e, Literal):
            return _Terminal(e.data)
        if isinstance(e, RuleRef):
            if e.name not in self.deep:
                return _Terminal(None, self._builder.regular_dfa(e))
            nt = self._nonterminal(lambda: [(self.symbol(self.grammar.rules[e.name]),)])
            if e.name in self.grammar.captures:
                self.captured[nt] = self.grammar.captures[e.name]
            return nt
        if isinstance(e, _REGULAR_ONLY) or self.plain(e):
            return _Terminal(None, self._builder.regular_dfa(e))
        if isinstance(e, Seq):
            return self._nonterminal(lambda: [tuple(self.symbol(x) for x in e.items)])
        if isinstance(e, Alt):
            return self._nonterminal(lambda: [(self.symbol(x),) for x in e.items])
        if isinstance(e, Repeat):
            return self._nonterminal(lambda: [(self.symbol(e.item),) * e.min + (self._rest(e, None if e.max is None else e.max - e.min),)])
        if isinstance(e, Lazy):
            body = lazy_body(e)
            self.kept.append(body)
            return self._nonterminal(lambda: [(self.symbol(body),)])
        raise TypeError(f"no capture parse for {type(e).__name__}")

    def _rest(self, e: Repeat, most: int | None) -> int:
        """Up to `most` more items (None: any number; left-recursive, which Earley reads in linear time)."""
        key = ("rest", id(e), most)
        got = self.symbols.get(key)
        if got is None:
            if most is None:
                got = self._nonterminal(lambda: [(), (got, self.symbol(e.item))])
            elif most == 0:
                got = self._nonterminal(lambda: [()])
            else:
                got = self._nonterminal(lambda: [(), (self.symbol(e.item), self._rest(e, most - 1))])
            self.symbols[key] = got
        return got

    def plain(self, e: Expr) -> bool:
        """Whether `e` reaches no captured or recursive rule and no run-time call (one terminal)."""
        known = self._plain
        stack = [e]
        while stack:  # post-order without recursion: a node is settled after its children
            x = stack[-1]
            if id(x) in known:
                stack.pop()
            elif isinstance(x, RuleRef):
                known[id(x)] = x.name not in self.deep
            elif isinstance(x, Lazy):
                known[id(x)] = False
            else:
                open_parts = [c for c in children(x) if id(c) not in known]
                if open_parts:
                    stack.extend(open_parts)
                else:
                    known[id(x)] = all(known[id(c)] for c in children(x))
        return known[id(e)]

    def of(self, nt: int) -> list[tuple]:
        got = self.productions[nt]
        if got is None:
            got = self.productions[nt] = self.makers[nt]()
        return got

    # ---- productivity (for the rest of a prefix) ----

    def productive(self, sym) -> bool:
        """Whether `sym` derives some string: a fixpoint over the nonterminals it reaches (without
        recursion), not looking past one that has a production of productive terminals alone."""
        if isinstance(sym, _Terminal):
            return sym.productive()
        known = self._productive
        if sym in known:
            return known[sym]
        reached, stack = [], [sym]
        seen = {sym}
        while stack:
            nt = stack.pop()
            reached.append(nt)
            prods = self.of(nt)
            if any(all(isinstance(x, _Terminal) and x.productive() for x in p) for p in prods):
                known[nt] = True
                continue
            for p in prods:
                for x in p:
                    if not isinstance(x, _Terminal) and x not in seen and x not in known:
                        seen.add(x)
                        stack.append(x)
        changed = True
        while changed:
            changed = False
            for nt in reached:
                if nt not in known and any(all(x.productive() if isinstance(x, _Terminal) else known.get(x, False) for x in p)
                                           for p in self.of(nt)):
                    known[nt] = changed = True
        for nt in reached:
            known.setdefault(nt, False)
        return known[sym]


def _join(a, b):
    return b if a is None else a if b is None else (a, b)


def _flatten(tree) -> list[tuple[str, int, int]]:
    out, stack = [], [tree]
    while stack:
        t = stack.pop()
        if t is None:
            continue
        if isinstance(t[0], str):
            out.append(t)
        else:
            stack.append(t[1])
            stack.append(t[0])
    return out


def capture_spans(grammar: Grammar, data: bytes, complete: bool) -> list[tuple[str, int, int]]:
    """(name, start, end) byte spans of the captures of one derivation of `data` (see above)."""
    if not grammar.captures:
        return []
    rules = _Rules(grammar)
    top = rules._nonterminal(lambda: [(rules.symbol(RuleRef(grammar.root)),)])
    n = len(data)
    sets: list[dict] = [{} for _ in range(n + 1)]  # per position: (production id, dot, origin) -> item
    waiting: dict[tuple[int, int], list] = {}  # (position, nonterminal) -> items whose next symbol it is
    empty_done: list[dict] = [{} for _ in range(n + 1)]  # per position: nonterminal -> tree, completed empty there
    predicted: list[set] = [set() for _ in range(n + 1)]
    cut: list = []  # items whose next terminal the text ends inside of

    def add(pos: int, item) -> None:
        key = (id(item[0]), item[1], item[2], item[4])  # the empty production () is one object
        if key not in sets[pos]:
            sets[pos][key] = item

    for prod in rules.of(top):
        add(0, (prod, 0, 0, None, top))
    for i in range(n + 1):
        items = sets[i]
        done = 0
        while done < len(items):
            batch = list(items.values())[done:]
            done += len(batch)
            for prod, dot, origin, tree, lhs in batch:
                if dot == len(prod):
                    cap = rules.captured.get(lhs)
                    own = tree if cap is None else _join(tree, (cap, origin, i))
                    if origin == i:
                        empty_done[i].setdefault(lhs, own)
                    for w in list(waiting.get((origin, lhs), ())):
                        add(i, (w[0], w[1] + 1, w[2], _join(w[3], own), w[4]))
                    continue
                sym = prod[dot]
                if isinstance(sym, _Terminal):
                    for j in sym.match(data, i):
                        add(j, (prod, dot + 1, origin, tree, lhs))
                    if i in sym.cut:
                        cut.append((prod, dot, origin, tree, lhs))
                    continue
                waiting.setdefault((i, sym), []).append((prod, dot, origin, tree, lhs))
                if sym not in predicted[i]:
                    predicted[i].add(sym)
                    for p in rules.of(sym):
                        add(i, (p, 0, i, None, sym))
                if sym in empty_done[i]:
                    add(i, (prod, dot + 1, origin, _join(tree, empty_done[i][sym]), lhs))
    spans = None
    for prod, dot, origin, tree, lhs in sets[n].values():
        if lhs == top and dot == len(prod):
            spans = _flatten(tree)
            break
    if complete:
        return spans or []  # None cannot happen for text the matcher accepted up to EOS
    if spans is None:
        spans = _prefix_spans(rules, [*sets[n].values(), *cut], waiting, top)
    return [c for c in spans if c[2] < n]


def _prefix_spans(rules: _Rules, last: list, waiting: dict, top: int) -> list[tuple[str, int, int]]:
    """The captures of a derivation of a prefix: every item open at the end (or inside a terminal
    the text ends in) has the rest of its production taken as read (where the rest derives
    something), and completes without a span of its own (it has not closed)."""
    seen: dict = {}
    work = list(last)
    k = 0
    while k < len(work):
        prod, dot, origin, tree, lhs = work[k]
        k += 1
        key = (id(prod), dot, origin, lhs)
        if key in seen:
            continue
        seen[key] = True
        if all(rules.productive(s) for s in prod[dot:]):
            if lhs == top:
                return _flatten(tree)
            for w in waiting.get((origin, lhs), ()):
                work.append((w[0], w[1] + 1, w[2], _join(w[3], tree), w[4]))
    return []


def readable(data: bytes, compiled: "CompiledGrammar") -> str:
    """Captured bytes as text: a special token's stand-in becomes the token's own text."""
    if compiled.has_special_tokens and STAND_IN in data:
        info = compiled.tokenizer_info
        parts, i = [], 0
        while True:
            j = data.find(bytes((STAND_IN,)), i)
            if j < 0 or j + 4 > len(data):
                parts.append(data[i:])
                break
            parts.append(data[i:j])
            parts.append(info.token_bytes(int.from_bytes(data[j + 1:j + 4], "big")))
            i = j + 4
        data = b"".join(parts)
    return data.decode("utf-8", "replace")


def captures(compiled: "CompiledGrammar", data: bytes, complete: bool) -> list[tuple[str, str]]:
    """(name, text) of each capture of `data`, the text a matcher of `compiled` accepted."""
    if not compiled.has_captures or compiled.source_grammar is None:
        return []
    grammar = compiled.source_grammar()
    bound, _ = bind_special_tokens(Grammar({**grammar.rules, **grammar.written}, grammar.root, grammar.markers, grammar.special_tokens),
                                   compiled.tokenizer_info)
    bound.captures = grammar.captures
    return [(name, readable(data[s:e], compiled)) for name, s, e in capture_spans(bound, data, complete)]
