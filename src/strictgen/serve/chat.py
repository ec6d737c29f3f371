"""Chat messages → prompt (tools through the model's template, or a Hermes `<tools>` block), and
model output → reasoning, content and tool calls.

The output parser works on any prefix of the output: `parse_output(text, final=False)` only reports
what no continuation can change (partial tags and trailing whitespace are held back). Streaming
sends the growth of that view after each step; the non-streamed answer is the view of the final
text, so the concatenated stream equals it by construction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from strictgen.engine.model import Model

from .formats import THINK_CLOSE, THINK_OPEN, TOOL_CLOSE, TOOL_OPEN, RequestError, Tool

HERMES_SYSTEM = (
    "You are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. "
    "You may call one or more functions to assist with the user query. Here are the available tools:\n<tools>\n{tools}\n</tools>\n"
    "For each function call return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags:\n"
    '<tool_call>\n{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)


def _text_of(content, where: str) -> str:
    """Message content as text: a string, or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, p in enumerate(content):
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and p.get("type") in ("text", "input_text", "output_text") and isinstance(p.get("text"), str):
                parts.append(p["text"])
            else:
                raise RequestError("only text content parts are supported", f"{where}.content[{i}]")
        return "".join(parts)
    raise RequestError("content must be a string or a list of text parts", f"{where}.content")


def _openai_tool(t: Tool) -> dict:
    return {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}


def render_prompt(model: Model, messages: list[dict], tools: list[Tool]) -> list[int]:
    """Prompt token ids for a chat, tools included when there are any."""
    template = model.chat_template
    source = template.source or ""
    native_tools = bool(tools) and "tools" in source
    native_tool_role = "tool" in source and "tool_call" in source
    out: list[dict] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        where = f"messages[{i}]"
        text = _text_of(m.get("content"), where)
        if role == "developer":
            role = "system"
        if role == "assistant" and m.get("tool_calls") and not native_tool_role:
            for call in m["tool_calls"]:
                fn = call.get("function") or {}
                args = fn.get("arguments") or "{}"
                try:
                    args_obj = json.loads(args) if isinstance(args, str) else args
                except json.JSONDecodeError as exc:
                    raise RequestError(f"tool call arguments are not JSON: {exc}", f"{where}.tool_calls") from exc
                text += ("\n" if text else "") + f"{TOOL_OPEN}\n{json.dumps({'name': fn.get('name'), 'arguments': args_obj}, ensure_ascii=False)}\n{TOOL_CLOSE}"
            out.append({"role": "assistant", "content": text})
        elif role == "tool" and not native_tool_role:
            out.append({"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"})
        elif role in ("system", "user", "assistant", "tool"):
            msg = dict(m)
            msg["role"], msg["content"] = role, text
            out.append(msg)
        else:
            raise RequestError(f"unknown role {role!r}", f"{where}.role")
    extra = {}
    if tools and native_tools:
        extra["tools"] = [_openai_tool(t) for t in tools]
    elif tools:
        block = HERMES_SYSTEM.format(tools="\n".join(json.dumps(_openai_tool(t), ensure_ascii=False) for t in tools))
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + block}
        else:
            out.insert(0, {"role": "system", "content": block})
    text = template.render(out, add_generation_prompt=True, **extra)
    ids = model.tokenize(text, special=True)
    if model.add_bos and model.bos_token_id is not None and (not ids or ids[0] != model.bos_token_id):
        ids = [model.bos_token_id] + ids
    return ids


def uses_reasoning(model: Model) -> bool:
    """Reasoning models' templates mention the think tags."""
    return THINK_OPEN in (model.chat_template.source or "")


@dataclass
class ParsedCall:
    name: str | None = None  # None until the whole name has been generated
    arguments: str = ""  # raw JSON text of the arguments, as generated
    complete: bool = False


@dataclass
class ParsedOutput:
    reasoning: str = ""
    content: str = ""
    calls: list[ParsedCall] = field(default_factory=list)


def _hold_partial(text: str, marker: str) -> str:
    """`text` without a suffix that could be the start of `marker`."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-k:]):
            return text[:-k]
    return text


def parse_output(text: str, *, final: bool, tools: bool, reasoning: bool) -> ParsedOutput:
    """What `text` (a prefix of the output, or all of it when `final`) says for sure."""
    out = ParsedOutput()
    rest = text
    if reasoning:
        if rest.startswith(THINK_OPEN):
            end = rest.find(THINK_CLOSE)
            if end < 0:
                out.reasoning = rest[len(THINK_OPEN) :] if final else _hold_partial(rest[len(THINK_OPEN) :], THINK_CLOSE)
                return out
            out.reasoning = rest[len(THINK_OPEN) : end]
            rest = rest[end + len(THINK_CLOSE) :].lstrip()
        elif not final and THINK_OPEN.startswith(rest):
            return out  # might still become a think block
    if not tools:
        out.content = rest
        return out
    start = rest.find(TOOL_OPEN)
    if start < 0:
        out.content = rest if final else _hold_partial(rest, TOOL_OPEN).rstrip()
        return out
    out.content = rest[:start].rstrip()
    for seg in rest[start:].split(TOOL_OPEN)[1:]:
        out.calls.append(_parse_call(seg, final))
    return out


_NAME_PREFIX = '{"name": '
_ARGS_PREFIX = ', "arguments": '


def _parse_call(seg: str, final: bool) -> ParsedCall:
    """One `<tool_call>` body as far as it goes (the grammar fixes its layout)."""
    call = ParsedCall()
    closed = TOOL_CLOSE in seg
    body = seg.split(TOOL_CLOSE)[0].strip() if closed else seg.lstrip()
    if not body.startswith(_NAME_PREFIX):
        return call
    try:
        name, used = json.JSONDecoder().raw_decode(body, len(_NAME_PREFIX))
    except json.JSONDecodeError:
        return call
    if not isinstance(name, str) or not body.startswith(_ARGS_PREFIX, used):
        return call
    call.name = name
    args = body[used + len(_ARGS_PREFIX) :]
    if closed or final:
        call.complete = closed
        call.arguments = args[:-1].rstrip() if args.endswith("}") else args
    else:
        # hold back what may be the wrapper's closing brace or the start of the closing tag
        call.arguments = args.rstrip("}\n</tool_call> ")
    return call
