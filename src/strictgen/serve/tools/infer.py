"""The tool-call format a chat template speaks, inferred from what the template renders.

The model writes what its template renders, so the template is asked, with probe conversations
(rendered as Hugging Face's apply_chat_template renders them, through tools/render.py): the
generation prompt; an assistant turn of plain text; one call; two calls of two tools. The probes'
names, ids and argument values are sentinels, found in the renderings and replaced by slots (see
tools/families.py); what is left is literal text. Where the one-call and two-call turns part and
meet again separates the call's own text from the separator between calls and from the section
around them; the plain turn gives the text that opens content and the end-of-turn marker, which is
the model's stop and no part of the call. Everything is measured from where the generation prompt
ends, so the format is the text the model itself writes.

Arguments are recognised as one line of JSON (what `tojson` writes), as one block per parameter
(`<parameter=K>V</parameter>`, `<arg_key>K</arg_key><arg_value>V</arg_value>`, ...: the block's
opening, key-value delimiter and closing are read off two parameters), or as Gemma 4's value
language, which two probe values cannot teach and is written by hand (tools/gemma.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from strictgen.engine.model import ChatTemplate

from . import gemma
from .families import CallFormat
from .reasoning import Reasoning
from .render import TemplateError, openai_tool, render_chat

NAMES = ("sg_probe_alpha", "sg_probe_beta")
ARGS = ({"sg_text": "sg value one", "sg_count": 7}, {"sg_text": "sg value two", "sg_count": 8})  # keys not sorted: the order shows
IDS = ("sgcallid1", "sgcallid2")  # 9 alphanumerics, which Mistral's templates insist on
QUESTION, ANSWER, THOUGHT = "sg probe question", "sg probe answer", "sg probe thought"
_SCHEMA = {"type": "object", "properties": {"sg_text": {"type": "string"}, "sg_count": {"type": "integer"}}, "required": ["sg_text", "sg_count"]}
PROBE_TOOLS = [openai_tool(n, _SCHEMA, f"Probe tool {n}") for n in NAMES]
_OPENERS = {"<": ">", "[": "]"}


class NotInferred(Exception):
    """What inference did not find, in words for an error message."""


@dataclass(frozen=True)
class Inferred:
    fmt: CallFormat | None  # None: the call syntax was not found (`missing` says what)
    renders_tools: bool  # the template shows the tools to the model itself
    missing: str = ""


def _render(template: ChatTemplate, messages: list[dict], generation: bool) -> str | None:
    try:
        return render_chat(template, messages, PROBE_TOOLS, add_generation_prompt=generation)
    except TemplateError:
        return None


def _calls(n: int) -> list[dict]:
    calls = [{"id": IDS[i], "type": "function", "function": {"name": NAMES[i], "arguments": json.dumps(ARGS[i])}} for i in range(n)]
    return [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": None, "tool_calls": calls}]


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _marker_end(text: str, j: int) -> int:
    """The end of the marker that opens at `j` (`<|im_end|>`, `[TOOL_CALLS]`: no spaces inside, at
    most 48 characters), or -1 where none does (`[` of a JSON array, `<` of a comparison)."""
    end = text.find(_OPENERS[text[j]], j, j + 48)
    return end + 1 if end > j and not any(ch.isspace() or ch == '"' for ch in text[j:end]) else -1


def _out_of_marker(text: str, i: int) -> int:
    """`i`, moved back before a `<...` or `[...` marker it would cut in two."""
    for o, c in _OPENERS.items():
        j = text.rfind(o, 0, i)
        if j >= 0 and text.rfind(c, 0, i) < j and _marker_end(text, j) > i:
            i = j
    return i


def _skip_reasoning(body: str, reasoning: Reasoning | None) -> str:
    """`body` past a reasoning block it starts with (templates render one in a last assistant turn)."""
    if reasoning is not None and body.lstrip().startswith(reasoning.open.strip()):
        end = body.find(reasoning.close)
        if end >= 0:
            return body[end + len(reasoning.close) :].lstrip(" \n")
    return body


def _kv_span(body: str, start: int, args: dict) -> tuple[int, int, tuple[str, str, str], bool]:
    """Per-parameter blocks of `args` (two parameters) in `body` after `start`: (span, the blocks'
    opening / key-value delimiter / closing, string values raw?)."""
    (k1, v1), (k2, v2) = args.items()
    a = body.find(k1, start)
    if a < 0:
        raise NotInferred("the arguments of a call (neither JSON nor per-parameter blocks)")
    b = body.find(v1, a + len(k1))
    c = body.find(k2, b + len(v1)) if b >= 0 else -1
    d = body.find(json.dumps(v2), c + len(k2)) if c >= 0 else -1
    if d < 0:
        raise NotInferred("the arguments of a call (the parameters are not written in the call's order, as JSON or blocks)")
    b_end = b + len(v1)
    raw = not (body[b - 1 : b] == '"' and body[b_end : b_end + 1] == '"')
    if not raw:
        b, b_end = b - 1, b_end + 1
    mid, d_end = body[a + len(k1) : b], d + len(json.dumps(v2))
    if body[c + len(k2) : d] != mid:
        raise NotInferred("the arguments of a call (the text between key and value differs per parameter)")
    between, before, after = body[b_end:c], body[start:a], body[d_end:]
    splits = [s for s in range(len(between) + 1) if before.endswith(between[s:]) and after.startswith(between[:s])]
    if not splits:
        raise NotInferred("the arguments of a call (the parameter blocks do not repeat)")
    s = max(splits, key=lambda s: (between[s : s + 1] in _OPENERS, s))  # a block opens at a tag when it can
    open_, close = between[s:], between[:s]
    return a - len(open_), d_end + len(close), (open_, mid, close), raw


@dataclass
class _Call:
    """One call found in a rendering: its span and its text between the spans with slots."""

    start: int
    end: int
    inner: str
    fields: dict  # what the arguments say of the format: the JSON layout, or the blocks' delimiters


def _find_call(body: str, i: int, start: int) -> _Call:
    name_at = body.find(NAMES[i], start)
    if name_at < 0:
        raise NotInferred(f"call {i + 1} of an assistant message with tool_calls (the template does not render them)")
    spans = [(name_at, name_at + len(NAMES[i]), "@NAME@")]
    fields: dict = {}
    layouts = {layout: CallFormat("", "", json_layout=layout).dumps(ARGS[i]) for layout in ("spaced", "compact")}
    found = [(body.find(text, start), text, layout) for layout, text in layouts.items()]
    at, args, layout = next(((at, text, layout) for at, text, layout in found if at >= 0), (-1, "", ""))
    if at >= 0:
        spans.append((at, at + len(args), "@ARGS@"))
        fields = {"json_layout": layout}
    elif (at := body.find(gemma.render_pairs(ARGS[i]), start)) >= 0:
        spans.append((at, at + len(gemma.render_pairs(ARGS[i])), "@GEMMA@"))
    else:
        a, b, blocks, raw = _kv_span(body, name_at + len(NAMES[i]), ARGS[i])
        spans.append((a, b, "@KV@"))
        fields = {"kv": blocks, "kv_raw": raw}
    at = body.find(IDS[i], start)
    if at >= 0:
        spans.append((at, at + len(IDS[i]), "@ID@"))
    spans.sort()
    if any(spans[k][1] > spans[k + 1][0] for k in range(len(spans) - 1)):
        raise NotInferred("the parts of a call (name, id and arguments overlap)")
    inner, pos = [], spans[0][0]
    for a, b, slot in spans:
        inner += [body[pos:a], slot]
        pos = b
    return _Call(spans[0][0], spans[-1][1], "".join(inner), fields)


def _match(a: str, b: str, reverse: bool) -> tuple[int, list[int]]:
    """Length of the common prefix (suffix when `reverse`) of `a` and `b`, where a '0' in `a`
    against a '1' in `b` counts as equal (the calls' positions, 0 and 1): (length, those offsets)."""
    n, wild = 0, []
    while n < min(len(a), len(b)):
        x, y = (a[-1 - n], b[-1 - n]) if reverse else (a[n], b[n])
        if x != y and not (x == "0" and y == "1"):
            break
        if x != y:
            wild.append(n)
        n += 1
    return n, wild


def _with_index(text: str, offsets: list[int], reverse: bool) -> str:
    chars = list(text)
    for n in offsets:
        chars[len(chars) - 1 - n if reverse else n] = "@INDEX@"
    return "".join(chars)


def _head_len(pre: str, k: int) -> int:
    """A common suffix of length `k` of `pre`, shortened so it does not start inside a marker."""
    cut = len(pre) - k
    back = _out_of_marker(pre, cut)
    return len(pre) - _marker_end(pre, back) if back < cut else k


def _plain_turn(template: ChatTemplate, prompt: str, reasoning: Reasoning | None) -> tuple[str, str]:
    """(the text that opens content, the text after it) in an assistant turn of plain text, as
    the model writes them after the generation prompt."""
    plain = _render(template, [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": ANSWER}], False)
    if not plain:
        return "", ""
    cut = _out_of_marker(plain, _common_prefix(prompt, plain))
    body = plain[cut:]
    if body.startswith(prompt[cut:]):
        body = body[len(prompt) - cut :]
    if ANSWER not in body:
        return "", ""
    prefix, turn_end = body.split(ANSWER, 1)
    prefix = _skip_reasoning(prefix, reasoning)
    return (prefix if prefix.strip() else ""), turn_end


def infer_reasoning(template: ChatTemplate) -> tuple[str, str] | None:
    """The reasoning block's (open, close) markers, read off the template's rendering of an
    assistant turn with `reasoning_content` (None where it does not render that field)."""
    prompt = _render(template, [{"role": "user", "content": QUESTION}], True)
    text = _render(template, [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": ANSWER, "reasoning_content": THOUGHT}], False)
    if not prompt or not text or THOUGHT not in text or ANSWER not in text.split(THOUGHT, 1)[1]:
        return None
    body = text[_out_of_marker(text, _common_prefix(prompt, text)) :]
    open_, rest = body.split(THOUGHT, 1)
    open_, close = open_.strip(), rest.split(ANSWER, 1)[0].strip()
    return (open_, close) if open_ and close else None


def infer(template: ChatTemplate, reasoning: Reasoning | None) -> Inferred:
    """The call format of `template` (`reasoning`: its reasoning markers, skipped in renderings)."""
    prompt = _render(template, [{"role": "user", "content": QUESTION}], True)
    if prompt is None:
        return Inferred(None, False, "a prompt with tools (the template refuses to render one)")
    renders = NAMES[0] in prompt
    try:
        return Inferred(_infer(template, prompt, reasoning), renders)
    except NotInferred as exc:
        return Inferred(None, renders, str(exc))


def _infer(template: ChatTemplate, prompt: str, reasoning: Reasoning | None) -> CallFormat:
    one = _render(template, _calls(1), False)
    if one is None:
        raise NotInferred("an assistant message with tool_calls (the template refuses to render one)")
    cut = min(_out_of_marker(prompt, _common_prefix(prompt, one)), _out_of_marker(one, _common_prefix(prompt, one)))
    if cut <= prompt.find(QUESTION):
        raise NotInferred("where the assistant's turn begins (the generation prompt and a rendered call part before it)")
    body1 = _skip_reasoning(one[cut:], reasoning)
    call1 = _find_call(body1, 0, 0)
    two = _render(template, _calls(2), False)
    body2 = _skip_reasoning(two[cut:], reasoning) if two and two[:cut] == one[:cut] else ""
    content_prefix, turn_end = _plain_turn(template, prompt, reasoning)

    def closing(rest: str) -> str:  # `rest` without the end of the turn (the model's stop, not the format's)
        n, _ = _match(rest, turn_end, True)
        n = _head_len(rest, n)
        return rest[: len(rest) - n]

    kw: dict = dict(content_prefix=content_prefix, **call1.fields)
    pre1 = body1[: call1.start]
    if NAMES[1] not in body2:  # one call per message
        return CallFormat("inferred", pre1 + call1.inner + closing(body1[call1.end :]), parallel=False, **kw)
    first, second = _find_call(body2, 0, 0), _find_call(body2, 1, 0)
    n, wild = _match(first.inner, second.inner, False)
    if n != len(first.inner) or len(first.inner) != len(second.inner) or first.start != call1.start:
        raise NotInferred("how two calls are written (the second call is not written like the first)")
    inner = _with_index(first.inner, wild, False)
    pre, between, post = body2[: first.start], body2[first.end : second.start], body2[second.end :]
    k, head_wild = _match(pre, between, True)
    k = _head_len(pre, k)
    k -= len(pre[len(pre) - k :]) - len(pre[len(pre) - k :].lstrip())  # a call starts at its first mark; the layout before it is the section's or separator's
    head_wild = [w for w in head_wild if w < k]
    m, tail_wild = _match(between[: len(between) - k], post, False)
    m = _out_of_marker(between, m)
    tail_wild = [w for w in tail_wild if w < m]
    head = _with_index(pre[len(pre) - k :], head_wild, True)
    call_tail = _with_index(between[:m], tail_wild, False)
    sep = between[m : len(between) - k]
    return CallFormat(
        "inferred",
        head + inner + call_tail,
        sep=sep,
        section_open=pre[: len(pre) - k],
        section_close=closing(post[m:]),
        **kw,
    )


def describe(fmt: CallFormat | None) -> str:
    """One line of a format's syntax, for logs and reports."""
    if fmt is None:
        return "none"
    parts = [repr(fmt.call)]
    if fmt.sep:
        parts.append(f"sep {fmt.sep!r}")
    if fmt.section_open or fmt.section_close:
        parts.append(f"section {fmt.section_open!r} … {fmt.section_close!r}")
    if "@KV@" in fmt.call:
        parts.append(f"params {fmt.kv!r}" + ("" if fmt.kv_raw else " (JSON values)"))
    if fmt.json_layout != "spaced":
        parts.append(f"{fmt.json_layout} JSON")
    if fmt.content_prefix:
        parts.append(f"content after {fmt.content_prefix!r}")
    if not fmt.parallel:
        parts.append("one call per message")
    return ", ".join(parts)
