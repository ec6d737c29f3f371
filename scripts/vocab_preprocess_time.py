"""Vocabulary preprocessing as `strictgen bench` times it (TokenizerInfo from the loaded tokenizer,
then its trie), in wall and CPU seconds (CPU time is steadier on a shared machine); the best of
--repeats runs.

    python scripts/vocab_preprocess_time.py [--repeats 5] [qwen deepseek smollm2]
"""

from __future__ import annotations

import argparse
import time

from strictgen.bench import load_vocab


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=["qwen", "deepseek", "smollm2"])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    for name in args.names:
        vocab = load_vocab(name)
        wall, cpu = [], []
        for _ in range(args.repeats):
            w, c = time.perf_counter(), time.process_time()
            info = vocab.build_info()
            info.trie  # noqa: B018
            wall.append(time.perf_counter() - w)
            cpu.append(time.process_time() - c)
        print(f"{name:9s} wall {min(wall):.3f} s  cpu {min(cpu):.3f} s  (best of {args.repeats})", flush=True)


if __name__ == "__main__":
    main()
