"""Minimised cases of the fuzz campaign, kept: each replays through the campaign's own check.

tests/fuzz/regressions.json: cases that once gave a finding and must give none now (with the
counters a case must move, e.g. a document rejected only for an exponent counts as `exponent_limit`).
Open findings, not fixed yet, are strict xfails here with the input, the expected and the actual
result; and the harness is checked to report what it should (a false verdict, a crash, a hang)."""

from __future__ import annotations

import gc
import json
import os
import time
from pathlib import Path

import pytest

import strictgen as sg
from strictgen.runtime.budget import ShortestCompletions

from tests.fuzz import campaign

CASES = json.loads((Path(__file__).parent / "regressions.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def compiler() -> sg.GrammarCompiler:
    return sg.GrammarCompiler(sg.TokenizerInfo.from_name("smollm2"), compile_timeout=10.0)


@pytest.mark.parametrize("entry", CASES, ids=[c["name"][:60] for c in CASES])
def test_minimised_case_has_no_finding(compiler, entry):
    t0 = time.perf_counter()
    result = campaign.check_case(entry["case"], compiler)
    assert result["outcome"] == "compiled", result
    assert result["findings"] == []
    for counter, at_least in entry["expect"].items():
        assert result[counter] >= at_least, (counter, result)
    assert time.perf_counter() - t0 < 60


# ---- open findings ----------------------------------------------------------------------------------


def test_min_properties_counts_distinct_names(compiler):
    """Finding C: member names that no keyword names may repeat, and every JSON parser reads
    {"a":0,"a":0} as one member, so a minProperties that two such members could reach was a false
    accept; it was refused, and is now enforced: the matcher refuses a repeated name in such an
    object (compile/distinct_names.py; tests/compile/test_distinct_names.py has the property test)."""
    g = compiler.compile_json_schema({"minProperties": 2})
    for text, ok in [('{"a":0,"a":0}', False), ('{"a":0,"\\u0061":0}', False), ('{"a":0,"b":0}', True)]:
        m = sg.GrammarMatcher(g)
        assert (m.accept_string(text) and m.can_end()) == ok, text


def test_an_existential_member_is_not_undone_by_a_repeated_name(compiler):
    """Seen with finding C: a member required by `not` with a name no property lists could be
    followed by the same name with another value ({"x":"s","x":1}: json.loads keeps the last, so
    the document is invalid), and was accepted; refused now, naming the negated keyword."""
    with pytest.raises(sg.SchemaError) as e:
        compiler.compile_json_schema({"not": {"additionalProperties": {"type": "integer"}}})
    assert (e.value.keyword, e.value.pointer) == ("additionalProperties", "/not/additionalProperties")


def test_shortest_completion_of_a_small_recursive_grammar_is_quick(compiler):
    """Finding A: the breadth-first search over machine states met a new state for each '(' or
    '{' below a '.' loop, exponentially many within 16 bytes (minutes, or CompletionSearchTooLarge
    once bounded). Shortest derivations per frame (runtime/derivations.py) answer at once."""
    g = compiler.compile_grammar('root ::= r3 "abcdefghijklmnop" | "(" root ")"\nr3 ::= .* | "{" root "}"\n')
    t0 = time.thread_time()
    completions = ShortestCompletions(g.machine, max_expanded=5000)
    assert completions.completion(g.machine.start) == b"abcdefghijklmnop"
    assert time.thread_time() - t0 < 1


def test_the_breadth_first_search_stops_in_bounded_time(compiler):
    """The search stays for grammars whose rules are built at run time; on finding A's grammar
    (forced onto it) it still ends with a clear error within its time bound instead of minutes
    of a server's CPU."""
    from strictgen.runtime.budget import CompletionSearchTooLarge

    g = compiler.compile_grammar('root ::= r3 "abcdefghijklmnop" | "(" root ")"\nr3 ::= .* | "{" root "}"\n')
    gc.collect()  # the garbage earlier tests left is not this search's CPU (one CI run spent 8.7 s here)
    t0 = time.thread_time()
    with pytest.raises(CompletionSearchTooLarge, match="within 0.5 s"):
        ShortestCompletions(g.machine, max_seconds=0.5, by_frames=False).completion(g.machine.start)
    assert time.thread_time() - t0 < 5  # CPU time: the bound is 0.5 s, the slack is for a slow check


def test_any_of_unique_and_free_arrays_admits_duplicates(compiler):
    """Finding B: an anyOf of an array with uniqueItems and one without refused [null,null] (the
    matcher followed the unique array as soon as one stack was inside it). A repeat now drops only
    the parses inside the unique array (compile/unique_items.py), so the schema compiles exactly,
    strict=True included; tests/compile/test_unique_items.py has the property test."""
    case = {"target": "schema", "seed": 100470, "source": {"anyOf": [{"uniqueItems": True}, {}]}, "docs": ["[null,null]", "[[1],[1]]", "[1,2,1]"]}
    result = campaign.check_case(case, compiler)
    assert result["findings"] == [] and result["valid"] == 3
    g = compiler.compile_json_schema(case["source"], strict=True)
    m = sg.GrammarMatcher(g)
    assert m.accept_string("[null,null]") and m.can_end()


def test_nested_ambiguous_parentheses_keep_few_stacks(compiler):
    """Finding D, found twice by the campaign (gbnf seed 1040185 on deepseek, minimised by hand; gbnf
    seed 1082316 on smollm2, minimised by the campaign to `root ::= r1 | "{" root ")"`,
    `r1 ::= "你"{3,5} | "{" root ")"`): the frames "root after ( root" and "a after ( root" both
    expect `)` and then return, and as two frames they made every sequence over the two: 2**k stacks
    after k `(` (65,536 after 16; its probe's completion search hung for 100 s in such rows). The
    machine now pushes one frame per future (compile/_futures.c), so the stacks stay few."""
    g = compiler.compile_grammar('root ::= a | "(" root ")"\na ::= "x" | "(" root ")"\n')
    state = g.machine.step_bytes(g.machine.start, b"(" * 16)
    assert state != 0
    assert len(g.machine.stacks(state)) < 1000  # 2 here; 65,536 before the frames were merged
    m = sg.GrammarMatcher(g)
    assert m.accept_string("(" * 40 + "x" + ")" * 40) and m.can_end()
    assert not sg.GrammarMatcher(g).accept_string("(" * 40 + "x" + ")" * 41)


def test_nested_ambiguous_parentheses_end_in_a_clear_error_not_a_hang(compiler):
    """Where the two rules close the bracket differently (`)` vs `]`), the parses really differ
    until the closers come, and sets of whole stacks still double with each `(` (only a
    graph-structured stack would stay linear): a state may hold at most MAX_STATE_STACKS (65,536)
    stacks, so the 17th '(' fails with a GrammarTooLargeError that says why, in bounded CPU time,
    through the matcher as through the machine."""
    g = compiler.compile_grammar('root ::= a | "(" root ")"\na ::= "x" | "(" root "]"\n')
    t0 = time.thread_time()
    with pytest.raises(sg.GrammarTooLargeError, match="parses"):
        sg.GrammarMatcher(g).accept_string("(" * 40)
    assert time.thread_time() - t0 < 30  # CPU seconds; about 0.1 here: the bound is against a hang
    ok = sg.GrammarMatcher(g)  # nesting within the bound still works
    assert ok.accept_string("(" * 8 + "x" + "]" + ")" * 7) and ok.can_end()


# ---- the harness reports what it should --------------------------------------------------------------


def test_a_wrong_verdict_is_a_finding(compiler, monkeypatch):
    case = {"target": "regex", "seed": 0, "source": ["rep", ["lit", "ab"], 1, None], "docs": ["ab", "abab", "ba"]}
    assert campaign.check_case(case, compiler)["findings"] == []
    monkeypatch.setattr(campaign.Judge, "valid", lambda self, data: data == b"ba")  # a judge that disagrees
    kinds = {f["kind"] for f in campaign.check_case(case, compiler)["findings"]}
    assert {"false_accept", "false_reject"} <= kinds


def test_a_crash_and_a_hang_are_findings(monkeypatch):
    tok = sg.TokenizerInfo.from_name("smollm2")
    case = {"target": "regex", "seed": 0, "source": ["lit", "a"], "docs": ["a"]}
    monkeypatch.setattr(campaign, "check_case", lambda case, compiler: os._exit(3))
    with campaign.Supervisor(tok, compile_timeout=1.0, cap=30.0) as sup:
        got = sup.run(case)
    assert got["outcome"] == "crash" and "exit code 3" in got["findings"][0]["detail"]
    monkeypatch.setattr(campaign, "check_case", lambda case, compiler: time.sleep(60))
    with campaign.Supervisor(tok, compile_timeout=1.0, cap=3.0) as sup:
        got = sup.run(case)
    assert got["outcome"] == "hang" and "test_regressions.py" in got["findings"][0]["detail"]  # where it hung


def test_a_hang_inside_a_judge_is_no_finding(monkeypatch):
    """Python's `re` can backtrack for minutes in C, where no alarm reaches it: a hang inside the
    judge's bounded call is an outcome of its own, not a finding against strictgen."""
    tok = sg.TokenizerInfo.from_name("smollm2")
    case = {"target": "regex", "seed": 0, "source": ["lit", "a"], "docs": ["a"]}
    monkeypatch.setattr(campaign, "check_case", lambda case, compiler: campaign._within(60.0, lambda: time.sleep(60)))
    with campaign.Supervisor(tok, compile_timeout=1.0, cap=3.0) as sup:
        got = sup.run(case)
    assert got["outcome"] == "judge_hang" and got["findings"] == []
