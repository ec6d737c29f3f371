"""Rules built by several threads at once are the rules one thread builds (issue 28): the regular
core's C work (determinise, trim, minimise, the lowering, the JSON spellings) lets the GIL go on
big automata, so threads compiling grammars run it side by side on shared caches and memos.

Each side runs in a fresh process, so that the process-wide automaton caches start empty and the
threaded side really builds every rule (in the test's own process an earlier test may have kept
them, and both sides would then read the same cached objects, an equality that could not fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

# strings with long spellings (unicode ranges, length bounds, formats), objects of many rules
SCHEMAS = [
    {"type": "string", "pattern": "^[\u00e0-\u0fff]{3,40}-[a-z]{2,30}$"},
    {"type": "object", "properties": {f"k{i}": {"type": "string", "maxLength": 30 + i} for i in range(12)}, "required": ["k0", "k3"]},
    {"type": "array", "items": {"type": "string", "format": "date-time"}, "minItems": 2},
    {"type": "object", "properties": {"a": {"enum": ["\u00e9t\u00e9", "hiver", "\u6625", "automne"]}, "b": {"$ref": "#"}}, "additionalProperties": False},
    {"anyOf": [{"type": "string", "minLength": 20, "maxLength": 60}, {"type": "integer", "minimum": -500, "maximum": 90000}]},
    {"type": "string", "pattern": "^([\u0400-\u04ff]+ ){1,6}\\d{2,5}$"},
]

CHILD = textwrap.dedent(
    """
    import hashlib, json, sys, threading
    from strictgen.compile.automaton import compile_automaton
    from strictgen.grammar.schema.entry import json_schema_grammar

    schemas, threads = json.loads(sys.argv[1]), int(sys.argv[2])

    def digests(order):
        got = {}
        for i in order:
            rules = compile_automaton(json_schema_grammar(schemas[i])[0], None).rules
            h = hashlib.sha256()
            for r in rules:
                h.update(r.name.encode() + r.dfa.table256() + r.dfa.accepting() + b"".join(r.dfa.call_arrays()))
            got[i] = h.hexdigest()
        return [got[i] for i in range(len(schemas))]

    n = len(schemas)
    if threads == 1:
        print(json.dumps([digests(range(n))]))
    else:
        out = [None] * threads
        def run(t):
            out[t] = digests([(i + t) % n for i in range(n)])  # each thread starts elsewhere
        workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        print(json.dumps(out))
    """
)


def _child(threads: int) -> list[list[str]]:
    env = dict(os.environ, PYTHONHASHSEED="0")
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(SCHEMAS), str(threads)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_rules_built_by_threads_at_once_equal_a_serial_build():
    (serial,) = _child(1)
    threaded = _child(4)
    assert len(set(serial)) == len(SCHEMAS)  # the schemas' rules differ: equality says something
    assert threaded == [serial] * 4
