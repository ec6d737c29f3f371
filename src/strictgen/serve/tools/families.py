"""Tool-call formats: the description inference (tools/infer.py) finds in a template, and the
known families' formats as data that inference is checked against.

A format is a call pattern (literal text with slots), a separator between calls, and an optional
section around all calls. Slots: `@NAME@` the function name, `@ARGS@` the arguments as one line
of JSON (json.dumps spacing, what `tojson` renders), `@KV@` the arguments as one block per
parameter (`kv` = the block's opening, the text between key and value, its closing: Qwen3-Coder's
`<parameter=K>\nV\n</parameter>\n`, GLM's `<arg_key>K</arg_key><arg_value>V</arg_value>`), string
values raw where `kv_raw`, `@GEMMA@` Gemma 4's `key:value` pairs (tools/gemma.py), `@INDEX@` the
call's position (digits), `@ID@` a call id (9 alphanumerics, Mistral). The same pattern renders
calls (for tests and the fallback's prompt), builds the grammar and drives the parser, so the three
cannot drift apart.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .gemma import render_pairs

SLOTS = ("@NAME@", "@ARGS@", "@KV@", "@GEMMA@", "@INDEX@", "@ID@")
_SLOT_RE = re.compile("(" + "|".join(re.escape(s) for s in SLOTS) + ")")


@dataclass(frozen=True)
class CallFormat:
    name: str
    call: str
    sep: str = ""
    section_open: str = ""
    section_close: str = ""
    parallel: bool = True  # the template renders several calls in one message
    content_prefix: str = ""  # text that opens plain content (harmony's final channel)
    kv: tuple[str, str, str] = ("", "", "")  # @KV@: a block's opening, key-value delimiter, closing
    kv_raw: bool = True  # @KV@: string values written raw (else as JSON strings)
    json_layout: str = "spaced"  # JSON as json.dumps writes it: "spaced" (", " and ": ", tojson's) or "compact"

    def dumps(self, value) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":") if self.json_layout == "compact" else None)

    def pieces(self) -> list[str]:
        """The call pattern split into literals and slots (literals may be empty strings)."""
        return _SLOT_RE.split(self.call)

    def markers(self) -> tuple[str, ...]:
        """The format's fixed texts (delimiters, separators): the special tokens of a vocabulary
        found in them may be emitted as those tokens (Grammar.markers)."""
        fixed = [p for p in self.pieces() if p and not _SLOT_RE.fullmatch(p)]
        return tuple(t for t in (*fixed, self.sep, self.section_open, self.section_close, self.content_prefix) if t)

    @property
    def trigger(self) -> str:
        """The marker every tool-call section starts with (its fixed opening text up to the first
        line break; the separator where calls open with the name): free text never contains it,
        and once it appears the call grammar takes over."""
        opening = self.section_open or self.pieces()[0] or self.sep
        return opening.split("\n")[0] or opening

    def render_call(self, name: str, arguments: dict, index: int = 0, call_id: str = "") -> str:
        out = []
        for p in self.pieces():
            if p == "@NAME@":
                out.append(name)
            elif p == "@ARGS@":
                out.append(self.dumps(arguments))
            elif p == "@KV@":
                out.append(self.render_kv(arguments))
            elif p == "@GEMMA@":
                out.append(render_pairs(arguments))
            elif p == "@INDEX@":
                out.append(str(index))
            elif p == "@ID@":
                out.append(call_id)
            else:
                out.append(p)
        return "".join(out)

    def render_kv(self, arguments: dict) -> str:
        open_, mid, close = self.kv
        return "".join(f"{open_}{k}{mid}{v if self.kv_raw and isinstance(v, str) else self.dumps(v)}{close}" for k, v in arguments.items())

    def render(self, calls: list[tuple[str, dict]], ids: list[str] | None = None, index=None) -> str:
        """The text of these calls in this format (what a model trained on it writes); `index`
        overrides the calls' positions (detection renders a placeholder there)."""
        texts = [self.render_call(n, a, i if index is None else index, (ids or [""] * len(calls))[i]) for i, (n, a) in enumerate(calls)]
        return self.section_open + self.sep.join(texts) + self.section_close



HERMES = CallFormat("hermes", '<tool_call>\n{"name": "@NAME@", "arguments": @ARGS@}\n</tool_call>', sep="\n")

# The families of issue 17, as written by hand: tests check that inference finds each of them in its
# template (tests/serve/test_tool_formats.py). Only Gemma 4 is used at run time (GEMMA below).
FAMILIES: tuple[CallFormat, ...] = (
    HERMES,  # Hermes 2/3, Qwen2.5, Qwen3
    CallFormat("qwen3_coder", "<tool_call>\n<function=@NAME@>\n@KV@</function>\n</tool_call>", sep="\n", kv=("<parameter=", ">\n", "\n</parameter>\n")),
    CallFormat("llama3_json", '{"name": "@NAME@", "parameters": @ARGS@}', parallel=False),  # Llama 3.1-3.3
    CallFormat("mistral_v11", "[TOOL_CALLS]@NAME@[CALL_ID]@ID@[ARGS]@ARGS@"),  # Mistral Small 3.2, Magistral
    CallFormat("mistral_v11_noid", "[TOOL_CALLS]@NAME@[ARGS]@ARGS@"),
    CallFormat("mistral_nemo", '{"name": "@NAME@", "arguments": @ARGS@, "id": "@ID@"}', sep=", ", section_open="[TOOL_CALLS][", section_close="]"),
    CallFormat("mistral_json", '{"name": "@NAME@", "arguments": @ARGS@}', sep=", ", section_open="[TOOL_CALLS][", section_close="]"),
    CallFormat(
        "deepseek_v3_1",
        "<｜tool▁call▁begin｜>@NAME@<｜tool▁sep｜>@ARGS@<｜tool▁call▁end｜>",
        section_open="<｜tool▁calls▁begin｜>",
        section_close="<｜tool▁calls▁end｜>",
    ),
    CallFormat(
        "deepseek_r1",
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>@NAME@\n```json\n@ARGS@\n```<｜tool▁call▁end｜>",
        sep="\n",
        section_open="<｜tool▁calls▁begin｜>",
        section_close="<｜tool▁calls▁end｜>",
    ),
    CallFormat(
        "harmony",
        " to=functions.@NAME@<|channel|>commentary json<|message|>@ARGS@<|call|>",
        parallel=False,
        content_prefix="<|channel|>final<|message|>",
    ),  # gpt-oss
    CallFormat(
        "kimi_k2",
        "<|tool_call_begin|>functions.@NAME@:@INDEX@<|tool_call_argument_begin|>@ARGS@<|tool_call_end|>",
        section_open="<|tool_calls_section_begin|>",
        section_close="<|tool_calls_section_end|>",
    ),
    CallFormat("gemma4", "<|tool_call>call:@NAME@{@GEMMA@}<tool_call|>", section_close="<|tool_response>"),  # the turn goes on into the results
    CallFormat("functionary_v3_2", "@NAME@\n@ARGS@", sep=">>>", content_prefix="all\n"),  # the prompt ends in `>>>`
    CallFormat("functionary_v3_1", "<function=@NAME@>@ARGS@</function>", section_close="<|eom_id|>"),  # a turn of calls ends in <|eom_id|>
    CallFormat("firefunction_v2", '{"name": "@NAME@", "arguments": @ARGS@}', sep=", ", section_open=" functools[", section_close="]"),
    CallFormat(
        "command_r7b",
        '{"tool_call_id": "@INDEX@", "tool_name": "@NAME@", "parameters": @ARGS@}',
        sep=",\n    ",
        section_open="<|START_ACTION|>[\n    ",
        section_close="\n]<|END_ACTION|>",
        content_prefix="<|START_RESPONSE|>",
    ),
)

BY_NAME = {f.name: f for f in FAMILIES}
