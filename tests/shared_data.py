"""The outside corpora of ../shared/data (DESIGN.md §6): the JSON-Schema-Test-Suite, maskbench-dev,
BFCL, real chat templates and the bench schemas. CI has the folder beside the clone; a user's lone
clone does not, and there the tests that read a corpus skip with one line naming what is missing,
while everything else (the engine's own properties, the server, the model) still runs."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def shared_path(*parts: str) -> Path:
    """A path under ../shared/data, found from this file rather than the working directory."""
    return SHARED_DATA.joinpath(*parts)


def need_shared(*parts: str) -> Path:
    """The path under ../shared/data, or a skip naming it when the folder is absent."""
    path = shared_path(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared/data is not beside this clone")
    return path
