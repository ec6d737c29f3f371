"""Which tool-call format a chat template speaks, read off what the template renders.

The model writes what its template renders, so the template is asked: a probe conversation with
an assistant message carrying one (then two) `tool_calls` is rendered, and each known format is
matched against the text, with the probe's name and arguments in its slots. A template of an unseen
model whose calls look like a known kind is therefore handled without a per-model entry.

An unknown template (its rendering holds no known call syntax, or it ignores `tool_calls`) gets
the documented fallback: the Hermes format, with the tools and the format's instructions in a
system message and past calls and results rendered as Hermes text (`native=False`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from dataclasses import dataclass

from strictgen.engine.model import ChatTemplate

from .families import FAMILIES, HERMES, CallFormat
from .reasoning import Reasoning, detect_reasoning
from .render import TemplateError, openai_tool, render_chat

PROBE_NAME = "sg_probe_lookup"
PROBE_ARGS = ({"sg_query": "probe text", "sg_limit": 3}, {"sg_query": "second probe", "sg_limit": 7})
_PROBE_TOOL = openai_tool(PROBE_NAME, {"type": "object", "properties": {"sg_query": {"type": "string"}, "sg_limit": {"type": "integer"}}})
# a turn-ending marker: a special-token-like piece right after an assistant message's text
_END_MARK = re.compile(r"^(<[|｜][^<>\s]{1,40}?[|｜]>|<[a-z_]{2,20}\|>|<end_of_turn>|</s>)")


@dataclass(frozen=True)
class ChatFormat:
    """What a template implies for tool calling: the call format, how it was found ("detected"
    family, or "fallback"), whether the template renders tools itself, reasoning markers, stops."""

    tools: CallFormat
    detected: str
    native: bool
    reasoning: Reasoning | None
    stops: tuple[str, ...] = ()


def _probe(calls: int) -> list[dict]:
    tool_calls = [
        {"id": f"call{i}probe", "type": "function", "function": {"name": PROBE_NAME, "arguments": json.dumps(PROBE_ARGS[i])}} for i in range(calls)
    ]
    return [
        {"role": "user", "content": "sg probe question"},
        {"role": "assistant", "content": None, "tool_calls": tool_calls},
        *({"role": "tool", "tool_call_id": f"call{i}probe", "name": PROBE_NAME, "content": "sg probe result"} for i in range(calls)),
        {"role": "assistant", "content": "sg probe answer"},
        {"role": "user", "content": "sg probe follow-up"},
    ]


def _pattern(fmt: CallFormat, calls: int) -> re.Pattern:
    """A regex of `fmt`'s rendering of the probe calls (ids and indices as any digits/letters)."""
    text = re.escape(fmt.render([(PROBE_NAME, PROBE_ARGS[i]) for i in range(calls)], ["SGPROBEID"] * calls, index="SGPROBEINDEX"))
    return re.compile(text.replace("SGPROBEID", "[A-Za-z0-9]+").replace("SGPROBEINDEX", "[0-9]+"))


def _render(template: ChatTemplate, messages: list[dict], tools: bool, add_generation_prompt: bool = False) -> str | None:
    try:
        return render_chat(template, messages, [_PROBE_TOOL] if tools else None, add_generation_prompt=add_generation_prompt)
    except TemplateError:
        return None


def _stops(template: ChatTemplate, markers: set[str]) -> tuple[str, ...]:
    """The marker that ends an assistant turn in this template (a stop string for free text)."""
    text = _render(template, [{"role": "user", "content": "sg q"}, {"role": "assistant", "content": "sg probe reply"}, {"role": "user", "content": "sg q2"}], False)
    if not text or "sg probe reply" not in text:
        return ()
    m = _END_MARK.match(text.split("sg probe reply", 1)[1].lstrip(" "))
    stop = m.group(1) if m else ""
    return (stop,) if stop and not any(stop in mk for mk in markers) else ()


def _detect(template: ChatTemplate) -> ChatFormat:
    source = template.source or ""
    prompt = _render(template, [{"role": "user", "content": "sg q"}], False, add_generation_prompt=True) or ""
    reasoning = detect_reasoning(source, prompt) if source else None
    one = _render(template, _probe(1), True) if source else None
    fmt, name, native = HERMES, "fallback", False
    if one and PROBE_NAME in one:
        for family in FAMILIES:
            if _pattern(family, 1).search(one):
                fmt, name, native = family, family.name, True
                break
    if native and fmt.parallel:
        two = _render(template, _probe(2), True)
        if not (two and _pattern(fmt, 2).search(two)):
            fmt = dataclasses.replace(fmt, parallel=False)
    if native and prompt.endswith(fmt.trigger):
        fmt = dataclasses.replace(fmt, prompt_tail=fmt.trigger)
    markers = {fmt.trigger, fmt.section_close, *fmt.pieces()} | ({reasoning.open, reasoning.close} if reasoning else set())
    return ChatFormat(fmt, name, native, reasoning, _stops(template, {m for m in markers if m}) if source else ())


_CACHE: dict[tuple[str, str, str], ChatFormat] = {}
_LOCK = threading.Lock()


def chat_format(template: ChatTemplate) -> ChatFormat:
    """The tool-call format, reasoning markers and stops of `template` (cached per template)."""
    key = (template.source or "", template.bos_token, template.eos_token)
    with _LOCK:
        got = _CACHE.get(key)
    if got is None:
        got = _detect(template)
        with _LOCK:
            _CACHE[key] = got
    return got
