"""Where the bench's first pass of fills spends its mask computations, by the path each mask
took (token_mask.py: the full trie walk, a counted string, a string entered or walked inside, a
wide loop walked whole), with the time inside rule builds (lazy rules a walk met) and inside the
vocabulary's splits built on first use (`VocabTrie._cached`) told apart from the rest (the walks,
the machine rows they compute, numpy), and the time in `machine.chain` (a counted string's places,
asked at its first mask) over the pass. Every bench schema compiled with a fresh compiler, each
valid document forced token by token (fill, accept; then EOS), as first_pass_fills.py does.
Thread CPU time; instrumented, so the figures run above the bench's: compare paths, and trees
only by interleaved runs.

    PYTHONPATH=<tree>/src python scripts/first_pass_paths.py [--vocab qwen|deepseek|smollm2]"""

import argparse
import collections
import time

import numpy as np

import strictgen as sg
from strictgen import bench
from strictgen.compile import machine as machine_module
from strictgen.compile import token_mask
from strictgen.tokenizer import trie as trie_module

# the TokenMasker steps that name a path (those a tree has: _live_cut_owners is 956c8c3's wide loops)
PATHS = ("_counted_allowed", "_entering", "_live_loop_bits", "_live_tokens", "_live_cut_owners")


def first_pass(vocab, tok, fill=None) -> list:
    """The bench's first pass: every bench schema compiled with a fresh compiler, each valid
    document forced through a new matcher token by token (`fill(matcher, mask)`, by default the
    plain fill; accept; then EOS). Returns the grammars compiled (scripts/first_time_masks.py asks
    their maskers again)."""
    mask = sg.allocate_token_bitmask(1, tok.vocab_size)
    eos = tok.eos_token_ids[0]
    grammars = []
    for case in bench.load_cases(bench.default_schemas_dir()):
        try:
            grammar = sg.GrammarCompiler(tok).compile_json_schema(case.schema_text)
            sg.GrammarMatcher(grammar)
        except sg.StrictgenError:
            continue
        for doc in case.documents:
            m = sg.GrammarMatcher(grammar)
            for token in list(vocab.encode(doc)) + [eos]:
                if fill is None:
                    m.fill_next_token_bitmask(mask)
                else:
                    fill(m, mask)
                if not m.accept_token(token):
                    break
        grammars.append(grammar)
    return grammars


def main(vocab_name: str) -> None:
    vocab = bench.load_vocab(vocab_name)
    tok = vocab.build_info()
    spent: collections.Counter = collections.Counter()  # seconds in rule builds, split builds (this mask)
    path: list[str] = []

    def timed(function, key):
        def run(*a, **k):
            t0 = time.thread_time()
            try:
                return function(*a, **k)
            finally:
                spent[key] += time.thread_time() - t0
        return run

    def named(function, name):
        def run(*a, **k):
            path.append(name)
            return function(*a, **k)
        return run

    masker, trie = token_mask.TokenMasker, trie_module.VocabTrie
    chains = collections.Counter()  # over the pass: calls of machine.chain and seconds in them
    chain = machine_module.PushdownMachine.chain

    def timed_chain(self, *a):
        t0 = time.thread_time()
        try:
            return chain(self, *a)
        finally:
            chains["calls"] += 1
            chains["s"] += time.thread_time() - t0

    machine_module.PushdownMachine.chain = timed_chain
    machine_module.PushdownMachine._add_lazy_rule = timed(machine_module.PushdownMachine._add_lazy_rule, "rule")
    cached = trie._cached
    trie._cached = lambda self, key, build: cached(self, key, timed(build, "split"))
    for name in PATHS:
        if hasattr(masker, name):
            setattr(masker, name, named(getattr(masker, name), name))
    rows = []  # (seconds, in rule builds, in split builds, path)
    compute = masker._compute

    def counted_compute(self, state):
        spent.clear()
        path.clear()
        t0 = time.thread_time()
        got = compute(self, state)
        rows.append((time.thread_time() - t0, spent["rule"], spent["split"], "+".join(dict.fromkeys(path)) or "full walk"))
        return got

    masker._compute = counted_compute
    fills = []

    def timed_fill(m, mask):
        t0 = time.thread_time()
        m.fill_next_token_bitmask(mask)
        fills.append(time.thread_time() - t0)

    first_pass(vocab, tok, timed_fill)
    us = np.asarray(fills) * 1e6
    r = np.asarray([row[:3] for row in rows]) * 1e6
    paths = np.asarray([row[3] for row in rows])
    rest = r[:, 0] - r[:, 1] - r[:, 2]
    print(f"fills {len(us)}: mean {us.mean():.1f} us, p99 {np.percentile(us, 99):.0f} us; masks computed {len(r)}: {r[:, 0].sum() / 1e3:.0f} ms, "
          f"of which rule builds {r[:, 1].sum() / 1e3:.0f} ms, split builds {r[:, 2].sum() / 1e3:.0f} ms, the rest {rest.sum() / 1e3:.0f} ms")
    for name in sorted(set(paths.tolist())):
        s = paths == name
        print(f"  {name:40s} {s.sum():5d} masks: {r[s, 0].sum() / 1e3:6.1f} ms (rules {r[s, 1].sum() / 1e3:5.1f}, splits {r[s, 2].sum() / 1e3:5.1f}, "
              f"rest {rest[s].sum() / 1e3:6.1f}; rest per mask {rest[s].mean():6.1f} us)")
    print(f"machine.chain: {chains['calls']} calls, {chains['s'] * 1e3:.2f} ms, {chains['s'] * 1e6 / max(1, chains['calls']):.1f} us a call")
    p99 = np.percentile(us, 99)
    tail = r[:, 0] >= p99
    unbuilt = tail & (r[:, 1] + r[:, 2] < 1)
    print(f"masks at or over the fills' p99: {tail.sum()}, of which {unbuilt.sum()} built no rule and no split:")
    for name in sorted(set(paths[unbuilt].tolist())):  # the tail this lane's walks own
        s = unbuilt & (paths == name)
        print(f"  {name:40s} {s.sum():5d} masks, {r[s, 0].mean():6.0f} us each on average")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", default="qwen", help="the bench vocabulary: qwen, deepseek or smollm2")
    main(ap.parse_args().vocab)
