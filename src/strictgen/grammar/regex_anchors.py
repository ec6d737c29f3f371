"""Regex languages with anchors: a sub-pattern's matches split by the `^` / `$` they passed, and
their alternation, concatenation and repetition, translated exactly into anchor-free IR.

grammar/regex.py parses into these and reads the parts out for full matching or for search.
"""

from __future__ import annotations

from .ir import EMPTY, Alt, ByteSet, CharSet, Expr, Literal, Repeat, Seq, repeat, seq

__all__ = ["EPS", "END", "START", "AnchoredLang", "alt_exprs", "alt_langs", "concat_all", "repeat_lang", "tree_size"]



class AnchoredLang:
    """The matches of a sub-pattern, split by the anchors they rely on.

    `parts[i]` (or None) holds the strings `w` the sub-pattern can match where the match must start
    at the beginning of the whole input when `i & 2` (it passed a `^`) and must end at the end of
    the input when `i & 1` (it passed a `$`). A `^` inside a match also forces everything matched
    before it to be empty; that is applied when sequences are composed, so it is already reflected
    in the strings. `nullable[i]` says whether `parts[i]` contains the empty string.

    Full matching accepts the union of all parts (a full match starts and ends at the input's ends);
    unanchored search accepts `ANY* parts[0] ANY* | parts[2] ANY* | ANY* parts[1] | parts[3]`.
    """

    __slots__ = ("nullable", "parts")

    def __init__(self, parts, nullable):
        self.parts: list[Expr | None] = list(parts)
        self.nullable: list[bool] = list(nullable)

    @classmethod
    def plain(cls, expr: Expr, nullable: bool) -> AnchoredLang:
        """An anchor-free language; `nullable` says whether `expr` matches the empty string."""
        return cls([expr, None, None, None], [nullable, False, False, False])

    def is_plain(self) -> bool:
        """No anchors involved (a language with no parts at all is not plain)."""
        parts = self.parts
        return parts[0] is not None and parts[1] is None and parts[2] is None and parts[3] is None


START = AnchoredLang([None, None, EMPTY, None], [False, False, True, False])
END = AnchoredLang([None, EMPTY, None, None], [False, True, False, False])
EPS = AnchoredLang.plain(EMPTY, True)


_LEAVES = (Literal, ByteSet, CharSet)


def _shallow(expr: Expr) -> bool:
    if isinstance(expr, _LEAVES):
        return True
    if isinstance(expr, (Seq, Alt)):
        return all(isinstance(item, _LEAVES) for item in expr.items)
    return isinstance(expr, Repeat) and isinstance(expr.item, _LEAVES)


def alt_exprs(items: list[Expr]) -> Expr:
    """Like `ir.alt` (flattening, dropping duplicates) in linear time and without deep comparisons.

    Shallow expressions (leaves, and Seq/Alt/Repeat of leaves) are compared by value, deeper ones by
    identity, since comparing or hashing frozen dataclasses recurses through the whole (possibly
    deep) expression.
    """
    flat: list[Expr] = []
    seen: set[object] = set()
    for item in items:
        for sub in item.items if isinstance(item, Alt) else (item,):
            key = sub if _shallow(sub) else id(sub)
            if key not in seen:
                seen.add(key)
                flat.append(sub)
    return flat[0] if len(flat) == 1 else Alt(tuple(flat))


def _seq(items: list[Expr]) -> Expr:
    """`ir.seq`, joining runs of adjacent literals in one step (`seq` joins them pairwise)."""
    joined: list[Expr] = []
    run: list[bytes] = []
    for item in items:
        if isinstance(item, Literal):
            run.append(item.data)
            continue
        if run:
            joined.append(Literal(b"".join(run)))
            run = []
        joined.append(item)
    if run:
        joined.append(Literal(b"".join(run)))
    return seq(*joined)


def alt_langs(langs: list[AnchoredLang]) -> AnchoredLang:
    parts: list[Expr | None] = []
    nullable: list[bool] = []
    for i in range(4):
        items = [lang.parts[i] for lang in langs if lang.parts[i] is not None]
        parts.append(alt_exprs(items) if items else None)
        nullable.append(any(lang.nullable[i] for lang in langs if lang.parts[i] is not None))
    return AnchoredLang(parts, nullable)


def _concat(a: AnchoredLang, b: AnchoredLang) -> AnchoredLang:
    if a.is_plain() and b.is_plain():
        return AnchoredLang.plain(seq(a.parts[0], b.parts[0]), a.nullable[0] and b.nullable[0])
    terms: list[list[Expr]] = [[], [], [], []]
    nullable = [False] * 4
    present = [False] * 4
    for ia in range(4):
        ea = a.parts[ia]
        if ea is None:
            continue
        for ib in range(4):
            eb = b.parts[ib]
            if eb is None:
                continue
            left, right = ea, eb
            if ib & 2:  # b passed a `^`: everything before it must be empty
                if not a.nullable[ia]:
                    continue
                left = EMPTY
            if ia & 1:  # a passed a `$`: everything after it must be empty
                if not b.nullable[ib]:
                    continue
                right = EMPTY
            idx = ia | ib
            present[idx] = True
            terms[idx].append(seq(left, right))
            nullable[idx] = nullable[idx] or (a.nullable[ia] and b.nullable[ib])
    parts = [alt_exprs(terms[i]) if present[i] else None for i in range(4)]
    return AnchoredLang(parts, nullable)


def concat_all(langs: list[AnchoredLang]) -> AnchoredLang:
    """Concatenate, joining runs of anchor-free items with one `seq` call."""
    result: AnchoredLang | None = None
    run: list[Expr] = []
    run_nullable = True
    for lang in langs:
        if lang.is_plain():
            run.append(lang.parts[0])
            run_nullable = run_nullable and lang.nullable[0]
            continue
        if run:
            chunk = AnchoredLang.plain(_seq(run), run_nullable)
            result = chunk if result is None else _concat(result, chunk)
            run, run_nullable = [], True
        result = lang if result is None else _concat(result, lang)
    if run:
        chunk = AnchoredLang.plain(_seq(run), run_nullable)
        result = chunk if result is None else _concat(result, chunk)
    return EPS if result is None else result


def _power(a: AnchoredLang, n: int) -> AnchoredLang:
    """`a` exactly n times (n >= 1), by repeated squaring of the (associative) concatenation."""
    result: AnchoredLang | None = None
    base = a
    while True:
        if n & 1:
            result = base if result is None else _concat(result, base)
        n >>= 1
        if not n:
            return result  # type: ignore[return-value]
        base = _concat(base, base)


def repeat_lang(a: AnchoredLang, lo: int, hi: int | None) -> AnchoredLang:
    if a.is_plain():
        expr = repeat(a.parts[0], lo, hi)
        return AnchoredLang.plain(expr, lo == 0 or a.nullable[0])
    # Anchors inside a repeated group. In any successful match, every iteration that passed a `^`
    # precedes all non-empty iterations (only one non-empty one can: the first) and every one that
    # passed a `$` follows them (only the last non-empty one can). So between at most one leading and
    # one trailing unrestricted iteration, only anchor-free iterations remain:
    #   a{0,j} = a? . F{0,j-2} . a?   (j >= 2),   a{0,} = a? . F* . a?   where F = parts[0].
    # The `lo` required iterations are concatenated exactly (`_power`).
    optional = alt_langs([a, EPS])
    free = a.parts[0]
    j = None if hi is None else hi - lo
    if j == 0:
        tail = EPS
    elif j == 1:
        tail = optional
    else:
        middle_max = None if j is None else j - 2
        if free is None:
            middle = EPS
        else:
            middle = AnchoredLang.plain(repeat(free, 0, middle_max), True)
        tail = _concat(_concat(optional, middle), optional)
    if lo == 0:
        return tail
    return _concat(_power(a, lo), tail)


def tree_size(expr: Expr, limit: int) -> int:
    """Tree size of `expr` (shared sub-expressions counted once per use), capped just above `limit`."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        key = id(node)
        if key in sizes:
            continue
        children: tuple[Expr, ...]
        if isinstance(node, (Seq, Alt)):
            children = node.items
        elif isinstance(node, Repeat):
            children = (node.item,)
        else:
            children = ()
        if children and not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
            continue
        sizes[key] = min(limit + 1, 1 + sum(sizes[id(child)] for child in children))
    return sizes[id(expr)]
