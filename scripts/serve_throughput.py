"""Throughput of `strictgen serve` on the embedded model: 1, 4 and 8 concurrent chat requests.

    .venv/bin/python scripts/serve_throughput.py [--slots 2] [--max-tokens 48] [--deterministic] [--no-tools]

Starts a real server on a free 127.0.0.1 port, sends each batch of concurrent requests with the
openai client (JSON-Schema constrained and free text), and prints completion tokens per second
summed over the batch, plus one tool-calling round trip as a transcript.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI

from strictgen.serve import build_server
from strictgen.serve.local import local_server

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 24}, "temp_c": {"type": "integer"}, "summary": {"type": "string", "maxLength": 80}}, "required": ["city", "temp_c", "summary"], "additionalProperties": False}
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"], "additionalProperties": False}}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--deterministic", action="store_true", help="the server's --deterministic mode (no pass shared between requests)")
    ap.add_argument("--no-tools", action="store_true", help="skip the tool-calling transcript")
    args = ap.parse_args()
    server = build_server("default", slots=args.slots, n_ctx=2048, deterministic=args.deterministic)
    try:
        with local_server(server) as url:
            client = OpenAI(base_url=url + "/v1", api_key="unused", timeout=600)
            measure(client, args)
    finally:
        server.pool.close()


def measure(client: OpenAI, args: argparse.Namespace) -> None:
    if not args.no_tools:
        transcript(client)
    for kind in ("json_schema", "text"):
        for n in (1, 4, 8):
            def one(i):
                kw = {"response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": SCHEMA}}} if kind == "json_schema" else {}
                r = client.chat.completions.create(model="default", messages=[{"role": "user", "content": f"Describe the weather in city {i} as JSON."}], max_tokens=args.max_tokens, temperature=0.7, seed=i, **kw)
                return r.usage.completion_tokens

            t0 = time.perf_counter()
            with ThreadPoolExecutor(n) as pool:
                toks = sum(pool.map(one, range(n)))
            dt = time.perf_counter() - t0
            print(f"{kind:11s} concurrency {n}: {toks} tokens in {dt:.2f} s = {toks / dt:.1f} tokens/s total ({args.slots} slots)")


def transcript(client: OpenAI) -> None:
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    print("# tool-calling round trip")
    print(">>> request 1:", json.dumps({"messages": messages, "tools": [TOOL], "tool_choice": "required"}))
    r1 = client.chat.completions.create(model="default", messages=messages, tools=[TOOL], tool_choice="required", max_tokens=48, temperature=0)
    print("<<< response 1:", r1.choices[0].model_dump_json(exclude_none=True))
    call = r1.choices[0].message.tool_calls[0]
    messages += [{"role": "assistant", "content": None, "tool_calls": [call.model_dump()]}, {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp_c": 18, "sky": "cloudy"})}]
    r2 = client.chat.completions.create(model="default", messages=messages, tools=[TOOL], max_tokens=48, temperature=0)
    print(">>> request 2: + assistant tool_calls + tool result", json.dumps(messages[-1]))
    print("<<< response 2:", r2.choices[0].model_dump_json(exclude_none=True))


if __name__ == "__main__":
    main()
