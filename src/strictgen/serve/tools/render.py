"""Chat messages → the variables a Jinja chat template expects, rendered through the template itself.

Templates disagree on the shape of the same conversation: some want tool-call `arguments` as an
object (they `tojson` it), others concatenate it as a string; some reject `content: None`, ids
that are not 9 alphanumerics (Mistral), or a system message (Gemma 2). Rather than keep a list per
model, `render_chat` tries the plain OpenAI shape first and then the adaptations that make the
template's own checks pass, and remembers per template which set worked.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time

from strictgen.engine.model import ChatTemplate
from strictgen.errors import StrictgenError
from strictgen.lru import BoundedLRU

# the adaptations, in the order they are tried (each set only when the smaller ones failed)
ADAPTATIONS = ("content_text", "string_arguments", "short_ids", "fold_system")
_ATTEMPTS = [frozenset(c) for n in range(len(ADAPTATIONS) + 1) for c in itertools.combinations(ADAPTATIONS, n)]
# per (template source, with tools): the adaptations that rendered last time; bounded like every
# cache that outlives a request (a template is a few kilobytes of key)
TEMPLATES_KEPT = 64
worked_shapes: BoundedLRU[frozenset] = BoundedLRU(2 * TEMPLATES_KEPT)


class TemplateError(StrictgenError):
    """The chat template cannot render this conversation, whatever shape it is given in."""


def openai_tool(name: str, parameters: dict, description: str = "") -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _short_id(call_id: str) -> str:
    """A 9-character alphanumeric id derived from `call_id` (Mistral's templates insist)."""
    if len(call_id) == 9 and call_id.isalnum():
        return call_id
    return hashlib.sha1(call_id.encode()).hexdigest()[:9]


def _arguments_object(args):
    if isinstance(args, str):
        try:
            return json.loads(args or "{}")
        except json.JSONDecodeError as exc:
            raise TemplateError(f"tool call arguments are not JSON: {exc}") from exc
    return args if args is not None else {}


def adapt_messages(messages: list[dict], how: frozenset) -> list[dict]:
    """`messages` (OpenAI shape: tool calls with string arguments) reshaped by the adaptations in `how`."""
    out: list[dict] = []
    for m in messages:
        m = dict(m)
        if m.get("content") is None and "content_text" in how:
            m["content"] = ""
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function") or {})
                args = _arguments_object(fn.get("arguments"))
                fn["arguments"] = json.dumps(args, ensure_ascii=False) if "string_arguments" in how else args
                call = {"id": c.get("id") or "call0", "type": "function", **c, "function": fn}
                if "short_ids" in how:
                    call["id"] = _short_id(str(call["id"]))
                calls.append(call)
            m["tool_calls"] = calls
        if m.get("tool_call_id") and "short_ids" in how:
            m["tool_call_id"] = _short_id(str(m["tool_call_id"]))
        out.append(m)
    if "fold_system" in how and out and out[0].get("role") == "system":
        system = out.pop(0).get("content") or ""
        if out and out[0].get("role") == "user":
            out[0] = {**out[0], "content": f"{system}\n\n{out[0].get('content') or ''}"}
        else:
            out.insert(0, {"role": "user", "content": system})
    return out


def render_chat(template: ChatTemplate, messages: list[dict], tools: list[dict] | None = None, *, add_generation_prompt: bool = True) -> str:
    """The template's text for `messages` and `tools` (OpenAI tool dicts), shaped so the template accepts it."""
    extra = {}
    if tools:
        # `tools` for most templates; Firefunction v2 reads `functions` (JSON text) and `datetime`
        extra = {"tools": tools, "functions": json.dumps([t["function"] for t in tools], ensure_ascii=False, indent=4), "datetime": time.strftime("%d %b %Y")}
    key = (template.source or "", bool(tools))
    known = worked_shapes.get(key)
    attempts = ([known] if known is not None else []) + [a for a in _ATTEMPTS if a != known]
    first_error: Exception | None = None
    for how in attempts:
        try:
            text = template.render(adapt_messages(messages, how), add_generation_prompt=add_generation_prompt, **extra)
        except TemplateError:
            raise
        except Exception as exc:  # a template's raise_exception, or a type error inside it
            first_error = first_error or exc
            continue
        worked_shapes.put(key, how)
        return text
    raise TemplateError(f"the chat template cannot render this conversation: {type(first_error).__name__}: {first_error}")
