"""Shared fixtures: the three real vocabularies of DESIGN.md §3, loaded once per session."""

from __future__ import annotations

import pytest

import strictgen as sg

VOCABS = ["smollm2", "qwen", "deepseek"]


@pytest.fixture(scope="session", params=VOCABS)
def vocab(request) -> tuple[str, sg.TokenizerInfo]:
    """(name, TokenizerInfo) for each real vocabulary."""
    return request.param, sg.TokenizerInfo.from_name(request.param)


@pytest.fixture(scope="session")
def qwen() -> sg.TokenizerInfo:
    return sg.TokenizerInfo.from_name("qwen")
