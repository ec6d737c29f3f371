"""What the IR → NFA builders of one compile share (grammar/automata.py's NFABuilder): pieces
built once, by node id, for every rule of the compile, deferred ones included."""

from __future__ import annotations

from strictgen import regular

from . import _ir_walks
from .ir import Expr
from .ir_keys import WALKED_KINDS, ContentKey
from .lowering import LoweringMemo

__all__ = ["BuildMemo", "PieceKeys"]


class PieceKeys:
    """ir_keys.ContentKeys with the hashing walked in C (`_ir_walks.content_hash`: the same hash
    values, tested): in Python a node cost ~1.5 us, and a date-time format's spelled string
    (~15,000 nodes) ~23 ms to key, as much as keying spelled strings by value saved. Each node
    hashed once (by id: the nodes must stay alive while this object is used, as a compile's do)."""

    def __init__(self) -> None:
        self._hashes: dict[int, int] = {}

    def key(self, expr: Expr) -> ContentKey:
        return ContentKey(expr, _ir_walks.content_hash(expr, self._hashes, WALKED_KINDS))


class BuildMemo:
    """What the builders of one compile share, by node id: minimal DFAs (of intersections,
    differences and spelled strings), the DFAs of call-free pieces that are embedded rather than
    built again (determinised, not minimised), the pieces whose DFA would outgrow their NFA,
    templates and call-freedom (these two hold for one `called` map: builders of sub-automata,
    which call nothing, get `sub`), and the UTF-8 tries of character classes (as lowering ops), by
    their ranges."""

    def __init__(self, dfas: dict[int, regular.DFA] | None = None, too_big: set[int] | None = None, charsets: dict[tuple, list] | None = None,
                 rule_free: dict[int, bool] | None = None, keys: PieceKeys | None = None, embedded: dict[int, regular.DFA] | None = None):
        self.dfas: dict[int, regular.DFA] = {} if dfas is None else dfas
        self.embedded: dict[int, regular.DFA] = {} if embedded is None else embedded  # pieces' DFAs as embedded: not minimised
        self.too_big: set[int] = set() if too_big is None else too_big
        # pieces built rather than embedded, as this `called` map makes them: those that call a
        # rule (a composite piece's embedding is asked by every program that meets it)
        self.built: set[int] = set()
        self.templates: dict[tuple, tuple[regular.NFA, int, int] | None] = {}
        self.call_free: dict[int, bool] = {}
        self.rule_free: dict[int, bool] = {} if rule_free is None else rule_free  # see NFABuilder._rule_free
        self.keys = PieceKeys() if keys is None else keys  # content keys of rule-free pieces (the shared cache's)
        self.charsets: dict[tuple, list] = {} if charsets is None else charsets  # a CharSet's ranges -> its EDGES op
        self.embedding: set[int] = set()  # pieces whose DFA is being made (a rule met inside itself)
        self.lowering = LoweringMemo()  # what the C lowering's programs share (they share `called`)
        # what the C writer reads instead of asking the builder where it settles the answer (_known_answers.h), in its order
        self.answers = (self.dfas, self.embedded, self.built, self.too_big, self.embedding, self.call_free, self.templates, self.charsets)
        self._sub: BuildMemo | None = None
        self._is_sub = False

    @property
    def sub(self) -> BuildMemo:
        """The memo of builders that call nothing (its own `sub`; no reference cycle, so a
        compile's memos are freed by reference counting, not by the cyclic collector)."""
        if self._is_sub:
            return self
        if self._sub is None:
            self._sub = BuildMemo(self.dfas, self.too_big, self.charsets, self.rule_free, self.keys, self.embedded)
            self._sub._is_sub = True
        return self._sub
