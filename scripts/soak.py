"""Soak `strictgen serve` (the embedded model) under a bounded mixed load, and watch its memory.

    PYTHONPATH=src .venv/bin/python scripts/soak.py [--minutes 30] [--concurrency 4] [--out soak.json]

Starts the real CLI server on a free 127.0.0.1 port (`--max-queue` small, `--max-body-bytes`
100000) and, until --minutes have passed, keeps --concurrency clients busy with a random mix:
every dialect (OpenAI chat, completions and responses; llama.cpp /completion; Ollama /api/chat and
/api/generate), every format (JSON Schema, json_object, regex, choice, GBNF, none), streamed or not;
streams dropped after the first chunk (client disconnects); bad inputs (malformed JSON, bad schemas,
regexes and grammars, wrong types, unknown routes, oversized bodies); and, once a minute, a burst
beyond the queue that must get 429s. Every 10 s it samples the server's RSS (/proc). Then it stops
the load and the server by itself and prints, and writes as JSON: RSS over time, requests per kind
and status, and the errors: any 5xx, any connection failure that was not our own disconnect, any
bad input answered 2xx, any constrained answer invalid under its format, any traceback in the
server log. The exit code is 1 if there was any error.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time

import httpx
import jsonschema

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "temp_c": {"type": "integer", "minimum": -50, "maximum": 60}, "sky": {"enum": ["clear", "rain", "snow"]}},
    "required": ["city", "temp_c", "sky"],
    "additionalProperties": False,
}
REGEX = r"[A-Z][a-z]{1,8} (19|20)\d\d"
CHOICES = ["yes", "no", "maybe"]
GBNF = 'root ::= "(" num ("+" num)* ")"\nnum ::= [1-9] [0-9]?\n'
PROMPT = "Describe the weather in one city."
# (route, body) pairs a correct server refuses with a 4xx
BAD = [
    ("/v1/chat/completions", b"{not json"),
    ("/v1/chat/completions", {"messages": []}),
    ("/v1/chat/completions", {"messages": "hi"}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "max_tokens": -3}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "wat"}}}}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "guided_regex": "(unclosed"}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "guided_grammar": "root ::= (\"a\""}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "structural_tag", "format": {"type": "field"}}}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "nonsense"}}),
    ("/v1/completions", {"prompt": ["a", "b"]}),
    ("/v1/responses", {"input": 42}),
    ("/completion", {"prompt": "x", "grammar": "root ::= \"a\"", "json_schema": {"type": "string"}}),
    ("/completion", {"prompt": "x", "grammar": "root ::= undefined_rule"}),
    ("/api/chat", {"messages": [{"role": "user", "content": "x"}], "format": {"type": "object", "minProperties": "2"}}),
    ("/api/generate", {"prompt": 7}),
    ("/v1/nowhere", {}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x" * 200_000}]}),  # over --max-body-bytes
]
INTENDED_4XX = {400, 404, 405, 413, 422, 429}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Load:
    """The mixed load and its tallies."""

    def __init__(self, url: str, rnd: random.Random, max_tokens: int):
        self.url = url
        self.rnd = rnd
        self.max_tokens = max_tokens
        self.status: collections.Counter = collections.Counter()  # "kind status" -> count
        self.errors: collections.Counter = collections.Counter()
        self.examples: dict[str, str] = {}

    def error(self, what: str, detail: str) -> None:
        self.errors[what] += 1
        self.examples.setdefault(what, detail[:500])

    # ---- requests ----

    def good_request(self):
        """(kind, route, body, format check) for a well-formed request."""
        rnd = self.rnd
        fmt = rnd.choice(["schema", "json", "regex", "choice", "grammar", "none"])
        stream = rnd.random() < 0.5
        mt = self.max_tokens
        dialect = rnd.choice(["chat", "completions", "responses", "llama", "ollama_chat", "ollama_generate"])
        seed = rnd.randrange(1 << 30)
        msgs = [{"role": "user", "content": PROMPT}]
        if dialect in ("chat", "completions"):
            body = {"max_tokens": mt, "temperature": 0.8, "seed": seed, "stream": stream}
            body.update({"messages": msgs} if dialect == "chat" else {"prompt": PROMPT + "\n"})
            body.update({
                "schema": {"response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": SCHEMA}}},
                "json": {"response_format": {"type": "json_object"}},
                "regex": {"guided_regex": REGEX},
                "choice": {"guided_choice": CHOICES},
                "grammar": {"guided_grammar": GBNF},
                "none": {},
            }[fmt])
            route = "/v1/chat/completions" if dialect == "chat" else "/v1/completions"
        elif dialect == "responses":
            fmt = fmt if fmt in ("schema", "json", "none") else "schema"
            body = {"input": PROMPT, "max_output_tokens": mt, "stream": stream}
            if fmt == "schema":
                body["text"] = {"format": {"type": "json_schema", "name": "w", "schema": SCHEMA}}
            elif fmt == "json":
                body["text"] = {"format": {"type": "json_object"}}
            route = "/v1/responses"
        elif dialect == "llama":
            fmt = fmt if fmt in ("schema", "grammar", "none") else "grammar"
            body = {"prompt": PROMPT + "\n", "n_predict": mt, "seed": seed, "stream": stream}
            if fmt == "schema":
                body["json_schema"] = SCHEMA
            elif fmt == "grammar":
                body["grammar"] = GBNF
            route = "/completion"
        else:
            fmt = fmt if fmt in ("schema", "json", "none") else "json"
            body = {"stream": stream, "options": {"num_predict": mt, "seed": seed}}
            if fmt != "none":
                body["format"] = SCHEMA if fmt == "schema" else "json"
            if dialect == "ollama_chat":
                body["messages"] = msgs
                route = "/api/chat"
            else:
                body["prompt"] = PROMPT
                route = "/api/generate"
        return f"{dialect}/{fmt}/{'stream' if stream else 'whole'}", route, body, fmt

    async def one(self, client: httpx.AsyncClient) -> None:
        r = self.rnd.random()
        if r < 0.12:
            route, body = self.rnd.choice(BAD)
            await self.bad(client, route, body)
        elif r < 0.2:
            await self.disconnect(client)
        else:
            await self.good(client, *self.good_request())

    async def bad(self, client, route: str, body) -> None:
        kind = f"bad {route}"
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            resp = await client.post(route, content=data, headers={"content-type": "application/json"})
        except httpx.HTTPError as exc:
            return self.error("connection", f"{kind}: {exc!r}")
        self.status[f"{kind} {resp.status_code}"] += 1
        if resp.status_code >= 500:
            self.error("5xx", f"{kind}: {resp.status_code} {resp.text[:300]}")
        elif resp.status_code < 400:
            self.error("bad input accepted", f"{kind}: {resp.status_code} {resp.text[:300]}")
        elif resp.status_code not in INTENDED_4XX:
            self.error("unexpected 4xx", f"{kind}: {resp.status_code} {resp.text[:300]}")

    async def disconnect(self, client) -> None:
        kind, route, body, _ = self.good_request()
        body["stream"] = True
        try:
            async with client.stream("POST", route, json=body) as resp:
                self.status[f"disconnect {resp.status_code}"] += 1
                if resp.status_code >= 500:
                    self.error("5xx", f"disconnect {kind}: {resp.status_code}")
                async for _ in resp.aiter_bytes():
                    break  # drop the connection after the first chunk
        except httpx.HTTPError as exc:
            self.error("connection", f"disconnect {kind}: {exc!r}")

    async def good(self, client, kind: str, route: str, body: dict, fmt: str) -> None:
        try:
            if body.get("stream"):
                async with client.stream("POST", route, json=body) as resp:
                    raw = (await resp.aread()).decode("utf-8", "replace")
            else:
                resp = await client.post(route, json=body)
                raw = resp.text
        except httpx.HTTPError as exc:
            return self.error("connection", f"{kind}: {exc!r}")
        self.status[f"{kind} {resp.status_code}"] += 1
        if resp.status_code == 429:
            return
        if resp.status_code != 200:
            return self.error("5xx" if resp.status_code >= 500 else "good request refused", f"{kind}: {resp.status_code} {raw[:300]}")
        try:
            text, finish = output_text(route, raw, bool(body.get("stream")))
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            return self.error("unreadable answer", f"{kind}: {exc!r} {raw[:300]}")
        if finish == "stop" and not format_holds(fmt, text):
            self.error("invalid output", f"{kind}: {text!r}")

    async def burst(self, client, n: int) -> None:
        """n small requests at once: beyond slots + queue, some must be refused with 429."""
        async def small():
            body = {"messages": [{"role": "user", "content": "Say yes or no."}], "guided_choice": ["yes", "no"], "max_tokens": 4}
            try:
                resp = await client.post("/v1/chat/completions", json=body)
            except httpx.HTTPError as exc:
                return self.error("connection", f"burst: {exc!r}")
            self.status[f"burst {resp.status_code}"] += 1
            if resp.status_code not in (200, 429):
                self.error("5xx" if resp.status_code >= 500 else "good request refused", f"burst: {resp.status_code} {resp.text[:300]}")
            elif resp.status_code == 429 and "retry-after" not in resp.headers:
                self.error("429 without Retry-After", resp.text[:300])

        await asyncio.gather(*(small() for _ in range(n)))


def output_text(route: str, raw: str, stream: bool) -> tuple[str, str]:
    """The generated text and the finish reason of a 200 answer (SSE, NDJSON or one JSON body)."""
    if route in ("/api/chat", "/api/generate"):
        docs = [json.loads(line) for line in raw.splitlines() if line.strip()]
        key = (lambda d: d["message"]["content"]) if route == "/api/chat" else (lambda d: d["response"])
        return "".join(key(d) for d in docs), ("stop" if docs[-1].get("done_reason") == "stop" else "length")
    if not stream:
        doc = json.loads(raw)
        if route == "/v1/responses":
            text = "".join(c["text"] for item in doc["output"] if item["type"] == "message" for c in item["content"])
            return text, ("stop" if doc["status"] == "completed" else "length")
        if route == "/completion":
            return doc["content"], ("stop" if doc.get("stop_type") in ("eos", "word") or doc.get("stopped_eos") else "length")
        choice = doc["choices"][0]
        return (choice["message"]["content"] or "") if "message" in choice else choice["text"], choice["finish_reason"]
    events = [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:") and line[5:].strip() != "[DONE]"]
    if route == "/v1/responses":
        done = [e for e in events if e.get("type") == "response.completed"]
        if done:
            return output_text(route, json.dumps(done[-1]["response"]), False)
        return "", "length"
    if route == "/completion":
        return "".join(e.get("content", "") for e in events), ("stop" if any(e.get("stop_type") in ("eos", "word") or e.get("stopped_eos") for e in events) else "length")
    text, finish = "", None
    for e in events:
        for c in e.get("choices", []):
            text += (c.get("delta", {}).get("content") or "") if "delta" in c else (c.get("text") or "")
            finish = c.get("finish_reason") or finish
    return text, finish or "length"


def format_holds(fmt: str, text: str) -> bool:
    if fmt == "schema":
        try:
            jsonschema.validate(json.loads(text), SCHEMA)
        except (ValueError, jsonschema.ValidationError):
            return False
        return True
    if fmt == "json":
        try:
            json.loads(text)
        except ValueError:
            return False
        return True
    if fmt == "regex":
        return re.fullmatch(REGEX, text, re.ASCII) is not None
    if fmt == "choice":
        return text in CHOICES
    if fmt == "grammar":
        return re.fullmatch(r"\((?:[1-9][0-9]?)(?:\+[1-9][0-9]?)*\)", text) is not None
    return True


async def drive(load: Load, pid: int, minutes: float, concurrency: int, burst: int, samples: list, drain_s: float = 30.0) -> None:
    deadline = time.monotonic() + minutes * 60
    t0 = time.monotonic()
    limits = httpx.Limits(max_connections=concurrency + burst + 4)
    async with httpx.AsyncClient(base_url=load.url, timeout=300, limits=limits) as client:

        async def worker():
            while time.monotonic() < deadline:
                await load.one(client)

        bursts: list = []

        async def sampler():
            next_burst = t0 + 30
            while time.monotonic() < deadline:
                samples.append((round(time.monotonic() - t0), round(rss_mb(pid), 1)))
                if time.monotonic() >= next_burst:
                    next_burst += 60
                    bursts.append(asyncio.ensure_future(load.burst(client, burst)))
                await asyncio.sleep(10)

        tasks = [asyncio.ensure_future(sampler())] + [asyncio.ensure_future(worker()) for _ in range(concurrency)]
        await asyncio.wait(tasks, timeout=minutes * 60 + drain_s - (time.monotonic() - t0))
        if bursts:
            await asyncio.wait(bursts, timeout=max(0.1, minutes * 60 + drain_s - (time.monotonic() - t0)))
        pending = [t for t in tasks + bursts if not t.done()]
        for task in pending:  # requests still running past the drain time: dropped, like a disconnect
            task.cancel()
        load.status["cut at the end"] += len(pending)
        await asyncio.gather(*pending, return_exceptions=True)
        samples.append((round(time.monotonic() - t0), round(rss_mb(pid), 1)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--concurrency", type=int, default=4, help="clients kept busy (the load is bounded by this)")
    ap.add_argument("--burst", type=int, default=12, help="requests sent at once each minute to provoke 429s")
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--max-queue", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="soak.json")
    args = ap.parse_args()
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="strictgen-soak-", suffix=".log", delete=False)
    cmd = [sys.executable, "-m", "strictgen.cli", "serve", "--port", str(port), "--slots", str(args.slots), "--max-queue", str(args.max_queue),
           "--ctx", "1024", "--max-body-bytes", "100000", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    url = f"http://127.0.0.1:{port}"
    samples: list = []
    load = Load(url, random.Random(args.seed), args.max_tokens)
    started = time.time()
    try:
        for _ in range(1800):
            if proc.poll() is not None:
                raise SystemExit(f"the server exited with code {proc.returncode}; log: {log.name}")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        samples.append((0, round(rss_mb(proc.pid), 1)))
        asyncio.run(drive(load, proc.pid, args.minutes, args.concurrency, args.burst, samples))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    with open(log.name, errors="replace") as f:
        server_log = f.read()
    tracebacks = server_log.count("Traceback (most recent call last)")
    if tracebacks:
        load.error("server traceback", server_log[server_log.index("Traceback"):][:1500])
    by_status = collections.Counter()
    for key, n in load.status.items():
        by_status[key.rsplit(" ", 1)[1] if key[-3:].isdigit() else key] += n
    report = {
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "minutes": args.minutes, "concurrency": args.concurrency, "slots": args.slots, "max_queue": args.max_queue,
        "requests": sum(load.status.values()), "by_status": dict(sorted(by_status.items())),
        "errors": dict(load.errors), "error_examples": load.examples,
        "rss_mb": samples, "by_kind": dict(sorted(load.status.items())), "server_log": log.name,
    }
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    print("RSS (s, MB):", " ".join(f"{t}:{m:.0f}" for t, m in samples))
    print("requests:", report["requests"], "by status:", report["by_status"])
    print("errors:", report["errors"] or "none")
    for what, example in load.examples.items():
        print(f"  {what}: {example}")
    return 1 if load.errors else 0


if __name__ == "__main__":
    sys.exit(main())
