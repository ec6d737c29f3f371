"""What a chat template implies for tool calling: the call format (inferred from the template's own
renderings, tools/infer.py), whether the template shows the tools to the model, reasoning markers
and the end-of-turn stop.

A template that renders the tools gets its own rendering as the prompt, always. One that cannot
render them gets the documented fallback (tools/chat.py): the tools in a system message of ours,
in the template's call syntax where that was inferred from its rendering of past calls (DeepSeek's
templates render calls but not tools), else in the Hermes format.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from strictgen.engine.model import ChatTemplate
from strictgen.lru import BoundedLRU

from .families import HERMES, CallFormat
from .infer import describe, infer, infer_reasoning
from .reasoning import Reasoning, detect_reasoning, judge
from .render import TEMPLATES_KEPT, TemplateError, render_chat

logger = logging.getLogger("strictgen.serve.tools")
# a turn-ending marker: a special-token-like piece right after an assistant message's text
_END_MARK = re.compile(r"^(<[|｜][^<>\s]{1,40}?[|｜]>|<[a-z_]{2,20}\|>|<end_of_turn>|</s>)")


@dataclass(frozen=True)
class ChatFormat:
    """What a template implies for tool calling. `tools`: the call format (None where the template
    renders tools but its call syntax was not found: `missing` says what); `native`: the template
    renders the tools itself (else the prompt is the fallback's); `detected`: "inferred",
    "fallback" (Hermes, for a template that renders neither tools nor calls) or "unknown"."""

    tools: CallFormat | None
    detected: str
    native: bool
    reasoning: Reasoning | None
    stops: tuple[str, ...] = ()
    missing: str = ""
    template: str = ""  # the template's name, for messages


def template_name(template: ChatTemplate) -> str:
    return template.name or "(the model's own)"


def _render(template: ChatTemplate, messages: list[dict], add_generation_prompt: bool = False) -> str | None:
    try:
        return render_chat(template, messages, None, add_generation_prompt=add_generation_prompt)
    except TemplateError:
        return None


def _stops(template: ChatTemplate, markers: set[str]) -> tuple[str, ...]:
    """The marker that ends an assistant turn in this template (a stop string for free text)."""
    text = _render(template, [{"role": "user", "content": "sg q"}, {"role": "assistant", "content": "sg probe reply"}, {"role": "user", "content": "sg q2"}])
    if not text or "sg probe reply" not in text:
        return ()
    m = _END_MARK.match(text.split("sg probe reply", 1)[1].lstrip(" "))
    stop = m.group(1) if m else ""
    return (stop,) if stop and not any(stop in mk for mk in markers) else ()


def _detect(template: ChatTemplate) -> ChatFormat:
    name = template_name(template)
    if not template.source:
        return ChatFormat(HERMES, "fallback", False, None, template=name)
    prompt = _render(template, [{"role": "user", "content": "sg q"}], add_generation_prompt=True) or ""
    markers = infer_reasoning(template)  # read off its rendering of reasoning_content, else the known ones its source uses
    reasoning = judge(*markers, prompt) if markers else detect_reasoning(template.source, prompt)
    found = infer(template, reasoning)
    fmt, detected = found.fmt, "inferred"
    if fmt is None:
        fmt, detected = (None, "unknown") if found.renders_tools else (HERMES, "fallback")
    markers = {fmt.trigger, fmt.section_close, *fmt.markers()} if fmt else set()
    markers |= {reasoning.open, reasoning.close} if reasoning else set()
    stops = _stops(template, {m for m in markers if m})
    if fmt is not None and detected == "inferred":
        logger.info("chat template %s: tool calls inferred as %s", name, describe(fmt))
    if not found.renders_tools:
        logger.warning("chat template %s does not render tools: requests with tools get the fallback prompt (the tools in a system message, calls as %s)", name, describe(fmt))
    elif fmt is None:
        logger.warning("chat template %s: the tool-call syntax was not found (%s); tool_choice required or named is refused", name, found.missing)
    return ChatFormat(fmt, detected, found.renders_tools, reasoning, stops, found.missing, name)


# A server sees one template (a test run or a host of several models a few); bounded like every
# cache that outlives a request, whatever passes (each key holds a whole template's source).
chat_formats: BoundedLRU[ChatFormat] = BoundedLRU(TEMPLATES_KEPT)


def chat_format(template: ChatTemplate) -> ChatFormat:
    """The tool-call format, reasoning markers and stops of `template` (cached per template)."""
    key = (template.source or "", template.bos_token, template.eos_token, template.name)
    got = chat_formats.get(key)
    if got is None:
        got = _detect(template)
        chat_formats.put(key, got)
    return got
