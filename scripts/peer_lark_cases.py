"""Run the Lark cases of a peer's test suite through strictgen's Lark front end and sort them.

    python scripts/peer_lark_cases.py llguidance PATH/parser/tests/test_lark.rs
    python scripts/peer_lark_cases.py xgrammar PATH/tests/python/test_lark.py

llguidance: every `lark_ok`, `lark_err_test` and `lark_str_test_many` call (grammar, strings it
must accept, strings it must reject; `FINAL_REJECT:` strings are prefixes that may not end).
xgrammar: its parametrized (grammar, accepted, rejected) tables, `_assert_language` and
`_assert_lark_error` calls. The grammars are compiled for
Qwen's vocabulary; each case is reported as agreeing, refused by us (with our error, grouped by
reason) or disagreeing on a string. The peers' files are read at run time and never copied here.
"""

from __future__ import annotations

import ast
import collections
import re
import sys

import strictgen as sg

_RUST_STRING = r'r#"(?:.|\n)*?"#|r"[^"]*"|"(?:\\.|[^"\\])*"'
_CALL = re.compile(r"\b(lark_ok|lark_err_test|lark_str_test_many(?:_quiet)?)\(\s*(" + _RUST_STRING + r")")


def rust_string(token: str) -> str:
    if token.startswith('r#"'):
        return token[3:-2]
    if token.startswith('r"'):
        return token[2:-1]
    return re.sub(r"\\u\{([0-9a-fA-F]+)\}", lambda m: chr(int(m.group(1), 16)), ast.literal_eval(re.sub(r"\\u\{", r"\\\\u{", token)))


def rust_strings(source: str, start: int) -> tuple[list[str], int]:
    """The string literals of the `&[...]` array starting at or after `start`."""
    open_at = source.index("&[", start)
    depth, i = 0, open_at + 1
    out: list[str] = []
    while True:
        c = source[i]
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return out, i + 1
        elif c == '"' or source.startswith(('r#"', 'r"'), i):
            m = re.compile(_RUST_STRING).match(source, i)
            out.append(rust_string(m.group()))
            i = m.end()
            continue
        elif source.startswith("//", i):
            i = source.index("\n", i)
        i += 1


def accepts(compiled, text: str) -> tuple[bool, bool]:
    m = sg.GrammarMatcher(compiled)
    return m.accept_string(text), m.can_end()


def reason(exc: Exception) -> str:
    text = str(exc)
    text = re.sub(r"\(line \d+, column \d+\)", "", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "…", text)
    return text[:110].strip()


def llguidance_cases(path: str, compiler: sg.GrammarCompiler) -> collections.Counter:
    source = open(path, encoding="utf-8").read()
    tally: collections.Counter = collections.Counter()
    for m in _CALL.finditer(source):
        kind, grammar = m.group(1), rust_string(m.group(2))
        try:
            compiled = compiler.compile_lark(grammar)
            error = None
        except sg.StrictgenError as exc:
            error = exc
        if kind == "lark_err_test":
            tally["peer rejects the grammar: we reject it too" if error else "peer rejects the grammar: we accept it"] += 1
            if not error:
                print(f"--- accepted, the peer refuses:\n{grammar.strip()[:300]}\n")
            continue
        if error is not None:
            tally[f"refused: {reason(error)}"] += 1
            continue
        if kind == "lark_ok":
            tally["peer accepts the grammar: we compile it"] += 1
            continue
        passing, after = rust_strings(source, m.end())
        failing, _ = rust_strings(source, after)
        wrong = []
        for s in passing:
            ok, end = accepts(compiled, s)
            if not (ok and end):
                wrong.append(("should accept", s))
        for s in failing:
            prefix = s.startswith("FINAL_REJECT:")
            s = s.removeprefix("FINAL_REJECT:")
            ok, end = accepts(compiled, s)
            if ok and end:
                wrong.append(("should reject", s))
        if wrong:
            tally["strings: we differ"] += 1
            print(f"--- differs on {wrong[:3]} in:\n{grammar.strip()[:300]}\n")
        else:
            tally["strings: same verdicts"] += 1
    return tally


def xgrammar_cases(path: str, compiler: sg.GrammarCompiler) -> collections.Counter:
    """The literal cases of xgrammar's test file: parametrized (grammar, accepted, rejected)
    tables and `_assert_language(...)` / `_assert_lark_error(...)` calls."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    cases: list[tuple[str, list, list | None]] = []  # (grammar, accepted, rejected); None: an error case
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize" and len(node.args) >= 2:
            names = ast.literal_eval(node.args[0]) if isinstance(node.args[0], ast.Constant) else ""
            names = names.replace(" ", "") if isinstance(names, str) else ""
            if names.startswith(("grammar,accepted,rejected", "common_name,accepted,rejected")):
                for row in node.args[1].elts:
                    items = row.args if isinstance(row, ast.Call) else row.elts  # pytest.param(...) or a tuple
                    try:
                        values = [ast.literal_eval(x) for x in items[:3]]
                    except (ValueError, AttributeError):
                        continue
                    if names.startswith("common"):
                        values[0] = f"start: {values[0]}\n%import common.{values[0]}\n"
                    cases.append((values[0], values[1], values[2]))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("_assert_language", "_assert_lark_error"):
            try:
                args = [ast.literal_eval(x) for x in node.args[:3]]
            except ValueError:
                continue
            if node.func.id == "_assert_lark_error":
                cases.append((args[0], [], None))
            elif len(args) == 3:
                cases.append((args[0], args[1], args[2]))
    tally: collections.Counter = collections.Counter()
    for grammar, accepted, rejected in cases:
        try:
            compiled = compiler.compile_lark(grammar)
        except sg.StrictgenError as exc:
            tally["peer rejects the grammar: we reject it too" if rejected is None else f"refused: {reason(exc)}"] += 1
            continue
        if rejected is None:
            tally["peer rejects the grammar: we accept it"] += 1
            continue
        wrong = [("should accept", t) for t in accepted if accepts(compiled, t) != (True, True)]
        wrong += [("should reject", t) for t in rejected if accepts(compiled, t) == (True, True)]
        tally["strings: we differ" if wrong else "strings: same verdicts"] += 1
        if wrong:
            print(f"--- differs on {wrong[:3]} in:\n{grammar.strip()[:300]}\n")
    return tally


def main() -> None:
    peer, path = sys.argv[1], sys.argv[2]
    compiler = sg.GrammarCompiler(sg.TokenizerInfo.from_name("qwen"))
    tally = (llguidance_cases if peer == "llguidance" else xgrammar_cases)(path, compiler)
    for what, n in tally.most_common():
        print(f"{n:4d}  {what}")
    print(f"{sum(tally.values()):4d}  cases")


if __name__ == "__main__":
    main()
