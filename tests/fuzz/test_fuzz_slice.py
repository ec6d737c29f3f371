"""A fixed-seed slice of the differential fuzz campaign (scripts/fuzz.py runs it for hours).

Each target's first seeds, on the SmolLM2 vocabulary, in one worker process (a crash or a hang is
a finding): every document's verdict equals the judge's, every probed allowed token reaches a valid
end, every failed compile is a StrictgenError within its deadline. About 30-60 s on a loaded 2-core
machine, and ~30 s more for the min_properties slice."""

from __future__ import annotations

import pytest

import strictgen as sg

from tests.fuzz.campaign import TARGETS, Supervisor, make_case

SLICE = {"schema": 40, "hypothesis_schema": 10, "regex": 100, "gbnf": 60, "min_properties": 15}


@pytest.fixture(scope="module")
def supervisor():
    with Supervisor(sg.TokenizerInfo.from_name("smollm2"), compile_timeout=10.0, cap=120.0) as sup:
        yield sup


@pytest.mark.parametrize("target", TARGETS)
def test_fixed_seed_slice_has_no_findings(supervisor, target):
    outcomes, findings, docs = {}, [], 0
    for seed in range(SLICE[target]):
        result = supervisor.run(make_case(target, seed))
        outcomes[result["outcome"]] = outcomes.get(result["outcome"], 0) + 1
        docs += result.get("docs", 0)
        findings += [(seed, f) for f in result["findings"]]
    assert not findings, findings[:3]
    assert outcomes.get("compiled", 0) >= SLICE[target] // 2, outcomes  # the slice exercises the matcher, not only refusals
    assert docs >= 5 * outcomes["compiled"], docs
