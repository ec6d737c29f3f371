"""The embedded model, loaded once per test session for each runtime (loading takes seconds)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

WEATHER_FILE = Path(__file__).resolve().parents[1] / "examples" / "weather.json"  # what `make run` asks for
WEATHER_PROMPT = "Give the current weather in Beijing as JSON: the city, the temperature in Celsius, and the weather."


@functools.cache
def embedded(runtime: str):
    """SmolLM2-135M-Instruct through `runtime` ("llama.cpp" or "transformers")."""
    from strictgen.engine import load_model

    return load_model("default", runtime=runtime, n_ctx=1024)


def weather_schema() -> dict:
    """The weather schema of `make run` (examples/weather.json, in the repository)."""
    return json.loads(WEATHER_FILE.read_text(encoding="utf-8"))
