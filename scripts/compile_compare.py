"""Per-schema minima of two sets of compile_times.py / compile_sweep.py outputs, side by side.

    python scripts/compile_compare.py 'base-*.json' 'new-*.json'"""

import glob
import json
import sys


def load(pattern: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for path in glob.glob(pattern):
        for name, value in json.load(open(path)).items():
            t = value[1] if isinstance(value, list) else value  # compile_sweep.py: [outcome, seconds]
            if not isinstance(value, list) or value[0] == "ok":
                out[name] = min(out.get(name, float("inf")), t)
    return out


def pick(vals: list[float], p: float) -> float:
    vals = sorted(vals)
    return vals[min(len(vals) - 1, round(p / 100 * (len(vals) - 1)))]


def main() -> None:
    a, b = load(sys.argv[1]), load(sys.argv[2])
    names = sorted(set(a) & set(b))
    for label, d in (("A", a), ("B", b)):
        v = [d[n] for n in names]
        print(f"{label}: n={len(v)} p50={pick(v, 50) * 1e3:.2f} ms p90={pick(v, 90) * 1e3:.2f} p99={pick(v, 99) * 1e3:.1f} max={max(v) * 1e3:.0f} sum={sum(v) * 1e3:.0f}")
    r = [b[n] / a[n] for n in names]
    print(f"per-schema B/A: median {pick(r, 50):.3f}, p10 {pick(r, 10):.3f}, p90 {pick(r, 90):.3f}")


if __name__ == "__main__":
    main()
