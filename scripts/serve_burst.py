"""A request burst against `strictgen serve --max-queue N`, and the per-request cost of the
operations middleware (API key check, admission, metrics, request log).

    .venv/bin/python scripts/serve_burst.py [--requests 500] [--max-queue 64] [--slots 2] [--max-tokens 16]

Part 1 starts the real CLI server (`strictgen serve --api-key ... --max-queue N`) on a free
127.0.0.1 port in a subprocess and sends all requests at once (asyncio + httpx, one connection
each), JSON-Schema constrained chat completions; it prints how many were admitted (200), refused
(429, each with Retry-After), whether every admitted answer is valid under the schema (jsonschema),
and p50/p99 latency of the admitted and of the refused. Part 2 times, in process, a stub ASGI app
with and without the middleware and the pieces alone, in microseconds per request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import httpx
import jsonschema

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}, "temp_c": {"type": "integer", "minimum": -50, "maximum": 60}}, "required": ["city", "temp_c"], "additionalProperties": False}
KEY = "sk-burst-test"


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


async def _burst(url: str, n: int, max_tokens: int) -> list[tuple[int, float, dict, str | None]]:
    limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=1200, limits=limits, headers={"Authorization": "Bearer " + KEY}) as client:

        async def one(i: int):
            body = {"model": "default", "messages": [{"role": "user", "content": f"Weather in city number {i} as JSON."}], "max_tokens": max_tokens, "temperature": 0.7, "seed": i, "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": SCHEMA}}}
            t0 = time.perf_counter()
            r = await client.post("/v1/chat/completions", json=body)
            return r.status_code, time.perf_counter() - t0, r.json(), r.headers.get("retry-after")

        return await asyncio.gather(*(one(i) for i in range(n)))


def burst(args) -> dict:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    cmd = [sys.executable, "-m", "strictgen.cli", "serve", "--port", str(port), "--slots", str(args.slots), "--max-queue", str(args.max_queue), "--api-key", KEY, "--log-level", "warning", "--ctx", "1024"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(1200):
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        t0 = time.perf_counter()
        results = asyncio.run(_burst(url, args.requests, args.max_tokens))
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    ok = [r for r in results if r[0] == 200]
    refused = [r for r in results if r[0] == 429]
    valid = 0
    for _, _, body, _ in ok:
        try:
            jsonschema.validate(json.loads(body["choices"][0]["message"]["content"]), SCHEMA)
            valid += 1
        except (ValueError, jsonschema.ValidationError):
            pass
    return {
        "requests": len(results),
        "admitted_200": len(ok),
        "refused_429": len(refused),
        "other_status": sorted({r[0] for r in results} - {200, 429}),
        "refused_with_retry_after": sum(1 for r in refused if r[3] and int(r[3]) >= 1),
        "admitted_valid": valid,
        "admitted_p50_s": round(_pct([r[1] for r in ok], 0.5), 3),
        "admitted_p99_s": round(_pct([r[1] for r in ok], 0.99), 3),
        "refused_p50_ms": round(_pct([r[1] for r in refused], 0.5) * 1000, 1),
        "refused_p99_ms": round(_pct([r[1] for r in refused], 0.99) * 1000, 1),
        "wall_s": round(wall, 2),
    }


def overhead(n: int = 20000) -> dict:
    """µs per request of the middleware around a stub app (no model), and of its pieces."""
    from strictgen.engine.generate import GenerationResult, GenerationStats
    from strictgen.serve.auth import ApiKeys
    from strictgen.serve.ops import Operations, OperationsMiddleware, ServeOptions
    from strictgen.serve.trace import current_trace

    result = GenerationResult("x" * 20, list(range(10)), "stop", GenerationStats(prompt_tokens=30, output_tokens=10, sampled_tokens=8, forward_passes=7))

    async def stub(scope, receive, send):
        await receive()
        t = current_trace()
        if t is not None:  # what a generation reports
            t.result, t.prompt_tokens, t.output_tokens, t.finish_reason, t.format = result, 30, 10, "stop", "json_schema"
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{}"})

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": [(b"authorization", b"Bearer " + KEY.encode()), (b"content-type", b"application/json")]}

    async def receive():
        return {"type": "http.request", "body": b'{"messages": []}', "more_body": False}

    async def send(_):
        pass

    def timed(app) -> float:
        async def loop():
            for _ in range(200):
                await app(dict(scope), receive, send)
            t0 = time.perf_counter()
            for _ in range(n):
                await app(dict(scope), receive, send)
            return (time.perf_counter() - t0) / n * 1e6

        return asyncio.run(loop())

    keys = ApiKeys([KEY, "sk-other"])
    out = {"stub_us": timed(stub)}
    out["with_keys_metrics_us"] = timed(OperationsMiddleware(stub, Operations(ServeOptions(api_keys=keys), 2)))
    out["no_keys_metrics_us"] = timed(OperationsMiddleware(stub, Operations(ServeOptions(), 2)))
    import logging

    logger = logging.getLogger("strictgen.requests")
    logger.addHandler(logging.NullHandler())
    logger.setLevel(logging.INFO)
    logger.propagate = False
    out["with_keys_metrics_json_log_us"] = timed(OperationsMiddleware(stub, Operations(ServeOptions(api_keys=keys, log_format="json"), 2)))
    logger.setLevel(logging.WARNING)
    t0 = time.perf_counter()
    for _ in range(n):
        keys.allows("Bearer " + KEY)
    out["key_check_alone_us"] = (time.perf_counter() - t0) / n * 1e6
    out["middleware_overhead_us"] = out["with_keys_metrics_us"] - out["stub_us"]
    out["auth_share_us"] = out["with_keys_metrics_us"] - out["no_keys_metrics_us"]
    out["log_line_us"] = out["with_keys_metrics_json_log_us"] - out["with_keys_metrics_us"]
    return {k: round(v, 1) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--max-queue", type=int, default=64)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--skip-burst", action="store_true")
    args = ap.parse_args()
    if not args.skip_burst:
        print(json.dumps({"burst": burst(args)}))
    print(json.dumps({"overhead_us_per_request": overhead()}))


if __name__ == "__main__":
    main()
