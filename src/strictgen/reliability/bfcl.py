"""A tool-calling set from the Berkeley Function Calling Leaderboard (BFCL v4) entries in ../shared/data/bfcl.

Each entry becomes a task: the user question, the functions it may call (their BFCL signatures
converted to JSON Schema), and the expected call. The model answers with one call as JSON,
`{"name": ..., "arguments": {...}}`; the call schema allows exactly the offered functions with their
parameter schemas. Scoring follows BFCL's AST checker in its simplest form: the right function, every
required argument present, no unknown argument, and each argument one of the acceptable values
(an empty string among them marks an optional argument).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from strictgen.errors import StrictgenError

FILES = ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json")
TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "integer": "integer", "string": "string",
            "boolean": "boolean", "array": "array", "number": "number", "object": "object"}
DROP = {"optional", "default"}  # BFCL annotations, not JSON Schema constraints (defaults are often of another type)


def default_bfcl_dir() -> Path:
    """../shared/data/bfcl relative to the project root (the checkout holding src/), else to the working directory."""
    root = Path(__file__).resolve().parents[3]
    for base in (root, Path.cwd()):
        candidate = (base / ".." / "shared" / "data" / "bfcl").resolve()
        if candidate.is_dir():
            return candidate
    return (root / ".." / "shared" / "data" / "bfcl").resolve()


def to_json_schema(param: dict) -> dict:
    """A BFCL parameter description as JSON Schema (dict→object, float→number, tuple→array, any→no type)."""
    out: dict = {}
    for key, value in param.items():
        if key in DROP:
            continue
        if key == "type":
            if value != "any":
                if value not in TYPE_MAP:
                    raise StrictgenError(f"unknown BFCL type {value!r}")
                out["type"] = TYPE_MAP[value]
        elif key == "properties":
            out["properties"] = {k: to_json_schema(v) for k, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    if out.get("type") == "object" and "properties" in out:
        out["additionalProperties"] = False
    return out


def call_schema(functions: list[dict]) -> dict:
    """The JSON Schema of one call to one of `functions`: {"name": <const>, "arguments": {...}}."""
    branches = []
    for fn in functions:
        branches.append({
            "type": "object",
            "properties": {"name": {"const": fn["name"]}, "arguments": to_json_schema(fn["parameters"])},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        })
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


@dataclass
class ToolTask:
    id: str
    prompt: str
    functions: list[dict]
    schema: dict
    expected: list[dict]  # BFCL ground truth: [{fn: {arg: [acceptable values]}}]


def tool_prompt(question: str, functions: list[dict]) -> str:
    listing = json.dumps([{"name": f["name"], "description": f.get("description", ""), "parameters": to_json_schema(f["parameters"])} for f in functions], ensure_ascii=False)
    return (f"You can call these functions:\n{listing}\n\nUser request: {question}\n"
            'Answer with only the call as JSON: {"name": <function name>, "arguments": {<argument>: <value>}}.')


def load_tool_tasks(folder: Path | None = None, limit: int | None = None) -> list[ToolTask]:
    """The first `limit` entries of each BFCL file (simple_python, multiple), interleaved."""
    folder = Path(folder) if folder else default_bfcl_dir()
    if not folder.is_dir():
        raise StrictgenError(
            f"BFCL data not found at {folder}: the tool-calling set reads ../shared/data/bfcl relative to the project root"
        )
    per_file = []
    for name in FILES:
        answers = {}
        with open(folder / "possible_answer" / name, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    a = json.loads(line)
                    answers[a["id"]] = a["ground_truth"]
        tasks = []
        with open(folder / name, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                e = json.loads(line)
                if e["id"] not in answers:
                    continue
                question = " ".join(m["content"] for m in e["question"][0] if m.get("role") == "user")
                tasks.append(ToolTask(e["id"], tool_prompt(question, e["function"]), e["function"], call_schema(e["function"]), answers[e["id"]]))
                if limit is not None and len(tasks) >= limit:
                    break
        per_file.append(tasks)
    out = []
    for pair in zip(*per_file):
        out.extend(pair)
    for tasks in per_file:
        out.extend(tasks[min(len(t) for t in per_file):])
    return out


def same_value(a, b) -> bool:
    """Equal as answers: numbers within 1e-6 relative, strings case- and space-insensitive, bools exact."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return a == b


def _args_match(args: dict, params: dict) -> bool:
    """Every argument acceptable, every required one present, none unknown (nested dicts alike)."""
    if any(k not in params for k in args):
        return False
    for k, accepted in params.items():
        if k not in args:
            if "" not in accepted:
                return False
        elif not any(_acceptable(args[k], v) for v in accepted if v != "" or args[k] == ""):
            return False
    return True


def _acceptable(got, want) -> bool:
    # a dict-typed argument's ground truth is again {key: [acceptable values]}
    if isinstance(want, dict) and want and all(isinstance(v, list) for v in want.values()):
        return isinstance(got, dict) and _args_match(got, want)
    return same_value(got, want)


def exact_match(call, expected: list[dict]) -> bool:
    """The call names an expected function and every argument is acceptable (BFCL's AST check, simplified)."""
    if not isinstance(call, dict) or not isinstance(call.get("arguments"), dict):
        return False
    return any(call.get("name") == fn and _args_match(call["arguments"], params) for gt in expected for fn, params in gt.items())
