"""Chat messages → prompt: exactly the template's own rendering of the messages and tools whenever
the template renders tools (serve/tools/detect.py); for a template that cannot, the fallback: the
tools in a system message of ours, with the call syntax the template's renderings of past calls
show (inferred), else the Hermes one (past calls as Hermes text, results as user turns). The
response says which (`x-strictgen-tool-prompt`). Model output is read back by serve/tools/parse.py
in the same format."""

from __future__ import annotations

import json

from strictgen.engine.model import ChatTemplate, Model

from .errors import RequestError
from .grammars import Tool
from .tools.detect import ChatFormat, chat_format
from .tools.families import HERMES, CallFormat
from .tools.render import TemplateError, render_chat

PROMPT_HEADER = "x-strictgen-tool-prompt"

HERMES_SYSTEM = (
    "You are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. "
    "You may call one or more functions to assist with the user query. Here are the available tools:\n<tools>\n{tools}\n</tools>\n"
    "For each function call return a JSON object with the function name and arguments within <tool_call></tool_call> XML tags:\n"
    '<tool_call>\n{{"name": <function-name>, "arguments": <args-json-object>}}\n</tool_call>'
)
# the fallback for a template that renders past calls (so their syntax is known) but not the tools
INFERRED_SYSTEM = (
    "You are a function calling AI model. You are provided with function signatures within <tools></tools> XML tags. "
    "You may call one or more functions to assist with the user query. Here are the available tools:\n<tools>\n{tools}\n</tools>\n"
    "To call a function, write:\n{example}"
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


def _system_block(tools: list[Tool], fmt: CallFormat) -> str:
    listed = "\n".join(json.dumps(_openai_tool(t), ensure_ascii=False) for t in tools)
    if fmt is HERMES:
        return HERMES_SYSTEM.format(tools=listed)
    example = fmt.render([("<function-name>", {"<parameter-name>": "<parameter-value>"})], ["<call-id>"])
    return INFERRED_SYSTEM.format(tools=listed, example=example)


def _fallback_messages(messages: list[dict], tools: list[Tool], fmt: CallFormat) -> list[dict]:
    """The documented fallback for templates that do not render tools: the tools with the call
    format's instructions up front; under the Hermes format (the template renders no calls either)
    past calls as Hermes text and tool results as user turns."""
    out: list[dict] = []
    for i, m in enumerate(messages):
        if fmt is not HERMES:
            out.append(m)  # the template renders past calls and results itself
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                fn = call.get("function") or {}
                args = fn.get("arguments") or "{}"
                try:
                    calls.append((fn.get("name"), json.loads(args) if isinstance(args, str) else args))
                except json.JSONDecodeError as exc:
                    raise RequestError(f"tool call arguments are not JSON: {exc}", f"messages[{i}].tool_calls") from exc
            text = m.get("content") or ""
            out.append({"role": "assistant", "content": text + ("\n" if text else "") + HERMES.sep.join(HERMES.render_call(n, a) for n, a in calls)})
        elif m["role"] == "tool":
            response = f"<tool_response>\n{m.get('content') or ''}\n</tool_response>"
            if i and messages[i - 1]["role"] == "tool":  # results of one turn's calls: one user turn
                out[-1] = {"role": "user", "content": out[-1]["content"] + "\n" + response}
            else:
                out.append({"role": "user", "content": response})
        else:
            out.append(m)
    if tools:
        block = _system_block(tools, fmt)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + block}
        else:
            out.insert(0, {"role": "system", "content": block})
    return out


def render_prompt(model: Model, messages: list[dict], tools: list[Tool]) -> list[int]:
    """Prompt token ids for a chat, tools included when there are any."""
    ids = model.tokenize(render_text(model.chat_template, messages, tools), special=True)
    if model.add_bos and model.bos_token_id is not None and (not ids or ids[0] != model.bos_token_id):
        ids = [model.bos_token_id] + ids
    return ids


def tool_prompt_headers(chat: ChatFormat, tools: list[Tool]) -> dict[str, str]:
    """The response header that says whose prompt the tools went into: "template" (its own
    rendering) or "fallback" (ours, for a template that cannot render tools)."""
    return {PROMPT_HEADER: "template" if chat.native else "fallback"} if tools else {}


def call_format(chat: ChatFormat, mode: str) -> CallFormat | None:
    """The call format for tool_choice `mode`; None (free text) under "auto" where the template's
    call syntax was not found, and a 400 naming the template and what is missing otherwise."""
    if chat.tools is None and mode != "auto":
        raise RequestError(f"tool_choice {mode!r} needs the tool-call syntax of chat template {chat.template}, which was not found: {chat.missing}", "tool_choice")
    return chat.tools


def render_text(template: ChatTemplate, messages: list[dict], tools: list[Tool]) -> str:
    """The prompt text: the template's own rendering when it renders tools, else the fallback."""
    out: list[dict] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        where = f"messages[{i}]"
        if role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant", "tool"):
            raise RequestError(f"unknown role {role!r}", f"{where}.role")
        msg = dict(m)
        msg["role"], msg["content"] = role, _text_of(m.get("content"), where)
        if role == "assistant" and m.get("tool_calls") and not msg["content"]:
            msg["content"] = None
        out.append(msg)
    chat = chat_format(template)
    try:
        if chat.native or (not tools and chat.tools is not HERMES):
            return render_chat(template, out, [_openai_tool(t) for t in tools] or None)
        return render_chat(template, _fallback_messages(out, tools, chat.tools or HERMES))  # tools None: native only
    except TemplateError as exc:
        raise RequestError(str(exc), "messages") from exc
