"""Immutable records of the schema IR (schema.ir's constraints and conjuncts): frozen dataclasses
made cheaper to construct, since the normaliser and the emitter make thousands per compile."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any

__all__ = ["record"]


def record(cls=None, /, **options):
    """`@dataclass(frozen=True, **options)` with a cheaper `__init__`. A frozen dataclass's own
    `__init__` looks up `object.__setattr__` afresh for every field it sets (~1 us for a Conjunct
    or a KeyRule; the bench's schemas make thousands per compile); this one holds it in a closure
    (~0.7 us). It still sets the fields through `object.__setattr__`, so the instance keeps its
    attribute values inline (writing `self.__dict__` would make every instance a real dict, and
    reading a field ~4x slower). Equality, hashing, `replace`, `repr` and the refusal of
    assignment stay the dataclass's."""

    def wrap(c):
        c = dataclass(frozen=True, **options)(c)
        c.__init__ = _closure_init(c)
        return c

    return wrap if cls is None else wrap(cls)


def _closure_init(cls) -> Any:
    """The `__init__` of frozen dataclass `cls` (plain defaults only), generated once as the
    dataclass generates its own: the same parameters in the same order, each set through
    `object.__setattr__` held in the closure."""
    defaults: dict[str, Any] = {}
    params, body = [], []
    for f in fields(cls):
        if f.default_factory is not MISSING:
            raise TypeError(f"record {cls.__name__}.{f.name}: a default_factory is not supported")
        if f.default is MISSING:
            params.append(f.name)
        else:
            defaults[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        body.append(f"        set_(self, {f.name!r}, {f.name})")
    text = (
        f"def make(set_, {', '.join(defaults)}):\n"
        f"    def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
        "    return __init__\n"
    )
    namespace: dict[str, Any] = {}
    exec(text, namespace)  # noqa: S102 (the text is made of the class's own field names)
    init = namespace["make"](object.__setattr__, **defaults)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init
