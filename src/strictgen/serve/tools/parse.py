"""Model output → reasoning, content and tool calls, in the model's own call format.

`parse_output(text, final=False)` works on any prefix of the output and reports only what no
continuation can change: a partial marker, a name not yet followed by its closing text, or
trailing whitespace is held back; arguments grow as raw JSON text. Every field of the prefix's
view is a prefix of the final view's, so the streamed deltas add up to the non-streamed answer
for every chunking (the property tests check it per family).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from . import gemma
from .families import CallFormat
from .reasoning import Reasoning, hold_partial, split_reasoning


@dataclass
class ParsedCall:
    name: str | None = None  # None until the whole name has been generated
    arguments: str = ""  # JSON text of the arguments, as far as it goes
    complete: bool = False


@dataclass
class ParsedOutput:
    reasoning: str = ""
    content: str = ""
    calls: list[ParsedCall] = field(default_factory=list)


class _Stop(Exception):
    """The text ends (or stops matching the format) inside the call being read."""


_DECODER = json.JSONDecoder()


class _Reader:
    def __init__(self, text: str, final: bool, tools: dict[str, dict]):
        self.text, self.final, self.tools, self.pos = text, final, tools, 0
        self.names = sorted(tools or (), key=len, reverse=True)
        self.tools = tools or {}

    def literal(self, lit: str) -> None:
        if self.text.startswith(lit, self.pos):
            self.pos += len(lit)
            return
        raise _Stop

    def at(self, lit: str) -> bool:
        return self.text.startswith(lit, self.pos)

    def name(self, following: str) -> str:
        """A tool name, known once the literal after it has begun (names may prefix each other)."""
        for n in self.names:
            if self.text.startswith(n, self.pos):
                after = self.text[self.pos + len(n) :]
                if (following and after.startswith(following)) or (not following and (after or self.final)):
                    self.pos += len(n)
                    return n
        if not self.names and following:  # no tool list (the unconstrained parse): any plain name
            end = self.text.find(following, self.pos)
            got = self.text[self.pos : end]
            if end > self.pos and not any(c.isspace() or c in "\"<>{}[]" for c in got):
                self.pos = end
                return got
        raise _Stop

    def digits(self, following: str) -> str:
        end = self.pos
        while end < len(self.text) and self.text[end].isalnum():
            end += 1
        if end == self.pos or not self.text.startswith(following, end):
            raise _Stop
        got, self.pos = self.text[self.pos : end], end
        return got

    def json_args(self, call: ParsedCall) -> None:
        """Arguments as JSON text: complete once an object or array closes, else what there is."""
        rest = self.text[self.pos :]
        try:
            value, end = _DECODER.raw_decode(self.text, self.pos)
        except json.JSONDecodeError:
            value, end = None, -1
        if end >= 0 and isinstance(value, (dict, list)):
            call.arguments = self.text[self.pos : end]
            self.pos = end
            return
        call.arguments = rest.rstrip() if not self.final else rest
        raise _Stop

    def gemma_args(self, call: ParsedCall) -> None:
        """Gemma 4 `key:value` pairs (up to the closing brace), as JSON once all of them are there."""
        try:
            value, end = gemma.read_pairs(self.text, self.pos, "}")
        except gemma.Incomplete:
            raise _Stop from None
        call.arguments = json.dumps(value, ensure_ascii=False)
        self.pos = end - 1  # the brace belongs to the pattern's literal

    def kv_args(self, call: ParsedCall, tool: str, fmt: CallFormat, following: str) -> None:
        """Per-parameter blocks (`fmt.kv`) up to `following`, as JSON text built from whole parameters."""
        open_, mid, close = fmt.kv
        props = (self.tools.get(tool) or {}).get("properties") or {}
        parts: list[str] = []
        call.arguments = "{"
        while not (following and self.at(following) and not (open_ and self.at(open_))):
            rest = self.text[self.pos :]
            if not self.at(open_) or not rest or (not open_ and following.startswith(rest)):
                raise _Stop  # the text ends, or may still become what follows the blocks
            key_at = self.pos + len(open_)
            key_end = self.text.find(mid, key_at)
            val_end = self.text.find(close, key_end + len(mid)) if key_end >= 0 else -1
            if val_end < 0:
                raise _Stop
            key, raw = self.text[key_at:key_end], self.text[key_end + len(mid) : val_end]
            parts.append(json.dumps(key, ensure_ascii=False) + ": " + (_raw_json(raw, props.get(key)) if fmt.kv_raw else raw))
            call.arguments = "{" + ", ".join(parts)
            self.pos = val_end + len(close)
            if not following and self.pos == len(self.text):
                if not self.final:
                    raise _Stop
                break
        call.arguments += "}"


def _raw_json(raw: str, schema) -> str:
    """A raw parameter value as JSON: strings stay strings, other types are read as JSON."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind != "string":
        try:
            return json.dumps(json.loads(raw), ensure_ascii=False)
        except json.JSONDecodeError:
            pass
    return json.dumps(raw, ensure_ascii=False)


def _read_call(r: _Reader, fmt: CallFormat, calls: list[ParsedCall]) -> None:
    """Read one call into `calls` (added as soon as its name is known); _Stop where the text ends."""
    call = ParsedCall()
    pieces = fmt.pieces()
    for i, p in enumerate(pieces):
        following = pieces[i + 1] if i + 1 < len(pieces) else ""
        if p == "@NAME@":
            call.name = r.name(following)
            calls.append(call)
        elif p in ("@INDEX@", "@ID@"):
            r.digits(following)
        elif p == "@ARGS@":
            r.json_args(call)
        elif p == "@KV@":
            r.kv_args(call, call.name or "", fmt, following)
        elif p == "@GEMMA@":
            r.gemma_args(call)
        else:
            r.literal(p)
    call.complete = True


def parse_output(text: str, fmt: CallFormat | None, tools: dict[str, dict] | None, reasoning: Reasoning | None, *, final: bool) -> ParsedOutput:
    """What `text` (a prefix of the output, or all of it when `final`) says for sure. `fmt` None:
    no tool calls are read (tool_choice "none"); `tools` maps each name to its parameters schema
    (None: names are not checked)."""
    out = ParsedOutput()
    out.reasoning, rest = split_reasoning(text, reasoning, final)
    if rest is None:
        return out
    calls_first = False  # the calls open with the name itself (Functionary v3.2: content after `all\n`, else calls)
    if fmt is not None and fmt.content_prefix:
        if rest.startswith(fmt.content_prefix):
            rest = rest[len(fmt.content_prefix) :]
        elif not final and fmt.content_prefix.startswith(rest):
            return out
        else:
            calls_first = not (fmt.section_open or fmt.pieces()[0])
    if fmt is None or tools == {}:
        out.content = rest
        return out
    trigger = fmt.trigger
    bare = trigger.lstrip()
    after_block = reasoning is not None and (reasoning.starts_inside or text.startswith(reasoning.open))
    if after_block and bare != trigger and rest and (rest.startswith(bare) or bare.startswith(rest)):
        rest = trigger[: len(trigger) - len(bare)] + rest  # the layout strip after reasoning took the format's own space (harmony's " to=")
    start = 0 if calls_first or not trigger else rest.find(trigger)
    if start < 0:
        out.content = rest if final else hold_partial(rest, trigger).rstrip()
        return out
    out.content = rest[:start].rstrip()
    r = _Reader(rest, final, tools)
    r.pos = start
    try:
        r.literal(fmt.section_open)
        while True:
            _read_call(r, fmt, out.calls)
            if not fmt.parallel or not r.at(fmt.sep + fmt.pieces()[0]):
                break
            r.literal(fmt.sep)
    except _Stop:
        pass
    if calls_first and final and not out.calls:
        out.content = rest
    return out
