"""Reproducibility of `strictgen serve` on the embedded model, through the official openai client.

    .venv/bin/python scripts/reproducibility.py [--repeats 5] [--deterministic]

Starts a real server on a free 127.0.0.1 port and sends the same greedy request (`"Name three
colours."`, temperature 0, max_tokens 24) `--repeats` times in a row, then once streamed, then once
more while other requests run beside it (passes shared with them unless `--deterministic`). Prints
how many distinct texts came back for each part.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI

from strictgen.serve import build_server
from strictgen.serve.local import local_server

REQUEST = dict(model="default", messages=[{"role": "user", "content": "Name three colours."}], temperature=0, max_tokens=24)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--deterministic", action="store_true")
    args = ap.parse_args()
    server = build_server("default", slots=2, n_ctx=2048, deterministic=args.deterministic)
    try:
        with local_server(server) as url:
            client = OpenAI(base_url=url + "/v1", api_key="unused", timeout=600)
            check(client, args)
    finally:
        server.pool.close()


def check(client: OpenAI, args: argparse.Namespace) -> None:
    texts = [client.chat.completions.create(**REQUEST).choices[0].message.content for _ in range(args.repeats)]
    print(f"{args.repeats} requests in a row: {len(set(texts))} distinct text(s): {texts[0]!r}")
    streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(stream=True, **REQUEST) if c.choices)
    print(f"streamed == non-streamed: {streamed == texts[0]}")
    with ThreadPoolExecutor(3) as pool:
        noise = [pool.submit(client.chat.completions.create, **{**REQUEST, "messages": [{"role": "user", "content": f"Tell a story about town {i}."}], "max_tokens": 40}) for i in range(2)]
        time.sleep(0.3)  # the others are decoding when it arrives
        beside = pool.submit(client.chat.completions.create, **REQUEST).result().choices[0].message.content
        for f in noise:
            f.result()
    mode = "deterministic" if args.deterministic else "default (shared passes)"
    print(f"beside two other requests, {mode}: same text as alone: {beside == texts[0]}")


if __name__ == "__main__":
    main()
