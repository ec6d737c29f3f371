"""The cost of a first-time mask itself, rule builds and machine rows left out: the bench's first
pass is run once (every bench schema compiled with a fresh compiler, each valid document forced
token by token, as first_pass_fills.py does), which builds the rules and rows its masks need;
then every state whose mask that pass computed is asked again through `TokenMasker.mask` with the
mask caches emptied (a store lookup miss, the path choice, the walk, blocked/markers/EOS bits,
`mask_memory.keep`, the store put), `--repeats` times. Per state the least thread CPU time of the
repeats is kept (a loaded machine's preemptions land on some repeats only), and the sums are
printed by the path the mask took: "plain" where no target of the state's row takes
`PLAIN_WIDTH` bytes or more (`_walk.plain_mask`'s states), "shortcut" for the others.

    PYTHONPATH=<tree>/src python scripts/first_time_masks.py [--vocab deepseek|qwen|smollm2] [--repeats 5]

Compare trees only by interleaved runs (run both alternately a few times)."""

import argparse
import time

import numpy as np

from strictgen import bench
from first_pass_paths import first_pass  # scripts/: the same pass, instrumented there
from strictgen.compile import _mask_store
from strictgen.lru import BoundedLRU

PLAIN_WIDTH = 8  # token_mask.py's bound on a plain state's widest target (the C walk's PLAIN_WIDTH)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="deepseek")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    vocab = bench.load_vocab(args.vocab)
    tok = vocab.build_info()
    maskers = [(g.masker, sorted(g.masker.cached_states())) for g in first_pass(vocab, tok)]
    best: dict[tuple[int, int], float] = {}
    plain: dict[tuple[int, int], bool] = {}
    for _ in range(args.repeats):
        for g, (masker, states) in enumerate(maskers):
            masker.store = _mask_store.MaskStore(masker.store.width, masker.max_cached)  # emptied: every ask a miss
            masker._shared = BoundedLRU(masker.max_cached)
            for s in states:
                t0 = time.thread_time_ns()
                masker.mask(s)
                dt = time.thread_time_ns() - t0
                key = (g, s)
                best[key] = min(best.get(key, dt), dt)
                if key not in plain:
                    widest = masker.machine.widest(s, 1)
                    plain[key] = not widest or widest[0][1] < PLAIN_WIDTH
    us = np.asarray(list(best.values())) / 1e3
    is_plain = np.asarray([plain[k] for k in best])
    print(f"{args.vocab}: {len(us)} first-time masks, least of {args.repeats} repeats each: mean {us.mean():.2f} us, p50 {np.median(us):.2f} us, "
          f"p99 {np.percentile(us, 99):.1f} us, sum {us.sum() / 1e3:.1f} ms")
    for name, sel in (("plain", is_plain), ("shortcut", ~is_plain)):
        if sel.any():
            print(f"  {name:9s} {sel.sum():5d} masks: mean {us[sel].mean():.2f} us, p50 {np.median(us[sel]):.2f} us, sum {us[sel].sum() / 1e3:.1f} ms")


if __name__ == "__main__":
    main()
