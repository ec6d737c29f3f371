"""Repair of unconstrained model output, and partial JSON for streams.

Repair is never silent: `repair_json` returns a RepairResult that says whether the text was valid
JSON as it stood, and if not, what was changed. The repairs themselves come from `json-repair`
(code fences, prose around the value, trailing commas, single quotes, Python literals, missing
closing brackets); strictgen only frames the result.

`parse_partial` reads a prefix of a JSON document, as a stream delivers it, with `jiter`'s partial
mode, and keeps its results monotone: a later prefix never loses or changes what an earlier one
showed (strings only grow; a number, literal or key appears once it is complete).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from strictgen.errors import StrictgenError


class RepairError(StrictgenError):
    """No JSON value could be recovered from the text."""


@dataclass
class RepairResult:
    value: object
    repaired: bool  # False: the text was valid JSON as it stood (surrounding whitespace aside)
    changes: list[str] = field(default_factory=list)  # what was done, in words
    text: str = ""  # the value as JSON text


_LOG_NOISE = ("returned early", "no more elements")  # json-repair's notes about its own control flow
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)(?:```|$)", re.S)
_PY_LITERAL = re.compile(r"\b(True|False|None)\b")


def _needs_library(name: str, extra: str = "reliability"):
    return StrictgenError(f"{name} is not installed: pip install 'strictgen[{extra}]'")


def _describe(original: str) -> list[str]:
    """What is wrong with `original`, in words (best effort; json-repair's own log is added)."""
    notes = []
    s = original.strip()
    if "```" in s:
        notes.append("removed a markdown code fence")
        m = _FENCE.search(s)
        s = m.group(1).strip() if m else s
    first = min((i for i in (s.find("{"), s.find("[")) if i >= 0), default=-1)
    if first > 0:
        notes.append(f"dropped {first} characters of text before the JSON")
    last = max(s.rfind("}"), s.rfind("]"))
    if 0 <= last < len(s) - 1 and first >= 0:
        notes.append(f"dropped {len(s) - 1 - last} characters of text after the JSON")
    if re.search(r",\s*[}\]]", s):
        notes.append("removed trailing commas")
    if re.search(r"'[^'\n]*'\s*[:,}\]]", s):
        notes.append("replaced single quotes with double quotes")
    if _PY_LITERAL.search(s):
        notes.append("converted Python literals (True/False/None) to JSON")
    if first >= 0:
        body = s[first:]
        opened = body.count("{") + body.count("[") - body.count("}") - body.count("]")
        if opened > 0:
            notes.append(f"closed {opened} unclosed bracket{'s' if opened > 1 else ''}")
    return notes


def repair_json(text: str) -> RepairResult:
    """The JSON value in `text`, repaired if need be; RepairResult.repaired and .changes say what was done.

    Raises RepairError when no JSON value can be recovered (empty text, prose without JSON)."""
    try:
        value = json.loads(text)
        return RepairResult(value, False, [], json.dumps(value, ensure_ascii=False))
    except (json.JSONDecodeError, TypeError):
        pass
    try:
        import json_repair
    except ImportError as exc:
        raise _needs_library("json-repair") from exc
    value, log = json_repair.repair_json(text, return_objects=True, logging=True)
    if value == "" and '""' not in text:
        raise RepairError(f"no JSON value found in the text: {text[:80]!r}")
    changes = _describe(text)
    for entry in log:
        note = entry.get("text", "") if isinstance(entry, dict) else str(entry)
        if note and note not in changes and not any(n in note for n in _LOG_NOISE):
            changes.append(note)
    if not changes:
        changes.append("rewritten by json-repair")
    return RepairResult(value, True, changes, json.dumps(value, ensure_ascii=False))


# ---- partial JSON ----

_NUMBER_TAIL = re.compile(r"-?[0-9][0-9.eE+-]*$|-$")


def _outside_string_at_end(text: str) -> bool:
    """True when `text` does not end inside a JSON string."""
    in_str = False
    esc = False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
    return not in_str


def parse_partial(text: str | bytes, *, partial_strings: bool = True):
    """The value a prefix of a JSON document shows so far (None: nothing yet).

    Objects and arrays are closed; an unfinished string shows the characters so far
    (`partial_strings=False` leaves it out); unfinished numbers, literals and keys are left out
    until complete, so results are monotone along a stream. A number standing alone as the whole
    document is read as far as it goes. Raises StrictgenError for text that cannot begin a JSON
    document (`{]`); it is a reader, not a validator (text after a complete value is not checked)."""
    try:
        import jiter
    except ImportError as exc:
        raise _needs_library("jiter") from exc
    if isinstance(text, bytes):
        text = text.decode("utf-8", "ignore")  # a cut multi-byte character at the end is dropped
    body = text.rstrip()
    if not body.strip():
        return None
    ends_clean = len(body) < len(text)  # whitespace after the last token ends a number
    if not ends_clean and _outside_string_at_end(body):
        m = _NUMBER_TAIL.search(body)
        if m and body[: m.start()].strip():  # an unfinished number inside a container: hold it back
            body = body[: m.start()]
    mode = "trailing-strings" if partial_strings else "on"
    try:
        return jiter.from_json(body.encode("utf-8"), partial_mode=mode)
    except ValueError as exc:
        if "EOF" in str(exc):  # a top-level literal or number not yet complete
            return None
        raise StrictgenError(f"not a prefix of a JSON document: {exc}") from exc
