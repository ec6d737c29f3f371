"""apply_token_bitmask_inplace against a reference masked fill, bit for bit: random masks, vocabulary
widths that are and are not multiples of 32, masks wider and narrower than the logits, rows that
allow everything, `indices`, numpy and torch, 1-D and 2-D, float16/bfloat16/float32(/float64).

Paths: rows allowing at most FEW_TOKENS tokens are filled and their logits put back (the masks
below include rows of 7 and of 0 allowed tokens); the other rows of the host path (numpy, CPU torch) run here in blocks of rows (BLOCK_BYTES is shrunk below so
that several blocks, consecutive and gathered, are crossed). The device path without Triton is
`apply_with_torch_ops`, run here on CPU tensors: it is the code a CUDA device runs, except for the
pinned upload in front of it. The Triton kernel (runtime/bitmask_triton.py) cannot run on a GPU
here (no GPU in this project's CI): `test_triton_kernel_in_interpreter` runs the same kernel
through Triton's CPU interpreter (TRITON_INTERPRET=1). Triton is in the `test` extra for that; where
it is absent the test skips, saying so.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import strictgen as sg
from strictgen.runtime import bitmask
from strictgen.runtime.bitmask import allows_everything, apply_with_torch_ops, unpack_bitmask

torch = pytest.importorskip("torch", reason="torch is a test dependency; absent only outside `make test`")


def _random_masks(rng, rows: int, tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Packed masks for `tokens` tokens and the bool rows they stand for: dense random, few allowed,
    almost all allowed, all allowed, none allowed, cycled."""
    allowed = np.zeros((rows, tokens), dtype=bool)
    for r in range(rows):
        kind = r % 5
        if kind == 0:
            allowed[r] = rng.random(tokens) < 0.5
        elif kind == 1:
            allowed[r, rng.choice(tokens, min(tokens, 7), replace=False)] = True
        elif kind == 2:
            allowed[r] = True
            allowed[r, rng.choice(tokens, 5, replace=False)] = False
        elif kind == 3:
            allowed[r] = True
    mask = sg.allocate_token_bitmask(rows, tokens)
    bits = np.zeros((rows, mask.shape[1] * 32), dtype=np.uint8)
    bits[:, :tokens] = allowed
    bits[:, tokens:] = rng.random((rows, bits.shape[1] - tokens)) < 0.5  # junk past the vocabulary
    mask[:] = np.packbits(bits, axis=1, bitorder="little").view(np.int32)
    return mask, allowed


def _reference_numpy(logits: np.ndarray, mask: np.ndarray, rows) -> np.ndarray:
    out = logits.copy()
    allowed = unpack_bitmask(mask, logits.shape[-1])
    for i, r in enumerate(rows):
        out[r][~allowed[i]] = -np.inf
    return out


def _reference_torch(logits, mask: np.ndarray, rows):
    out = logits.clone()
    allowed = torch.from_numpy(unpack_bitmask(mask, logits.shape[-1]))
    for i, r in enumerate(rows):
        out[r].masked_fill_(~allowed[i], float("-inf"))
    return out


def _bits(t):
    """The tensor's bit patterns: equal bits, not merely equal values (-0.0 is not 0.0)."""
    return t.view({2: torch.int16, 4: torch.int32}[t.element_size()])


def _logits(rng, rows: int, width: int) -> np.ndarray:
    x = rng.standard_normal((rows, width)) * 8
    x[rng.random((rows, width)) < 0.01] = np.inf  # a +inf logit on a disallowed token becomes -inf, not NaN
    x[:, 0] = -0.0
    return x


# (vocabulary of the mask, width of the logits): multiples of 32 and not, mask wider, logits wider
WIDTHS = [(1000, 1000), (1024, 1024), (1057, 1057), (1100, 1000), (1000, 1100), (992, 1030)]
INDICES = [None, "consecutive", "scattered"]


def _rows_for(rng, kind, n_logits: int, n_masks: int):
    if kind is None:
        return None, list(range(n_masks))
    if kind == "consecutive":
        rows = list(range(2, 2 + n_masks))
    else:
        rows = [int(r) for r in rng.permutation(n_logits)[:n_masks]]
    return rows, rows


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    monkeypatch.setattr(bitmask, "BLOCK_BYTES", 3 * 4 * 1100)  # about three rows per block


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("vocab,width", WIDTHS)
@pytest.mark.parametrize("kind", INDICES)
def test_numpy_batch_equals_masked_fill(dtype, vocab, width, kind):
    rng = np.random.default_rng(vocab * 7 + width)
    n_masks = 12
    mask, _ = _random_masks(rng, n_masks, vocab)
    logits = _logits(rng, n_masks + 4, width).astype(dtype)
    indices, rows = _rows_for(rng, kind, len(logits), n_masks)
    if indices is None:
        logits = logits[:n_masks].copy()
    want = _reference_numpy(logits, mask, rows)
    sg.apply_token_bitmask_inplace(logits, mask, indices=indices)
    assert logits.tobytes() == want.tobytes()
    assert not np.isnan(logits).any()


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("vocab,width", WIDTHS)
@pytest.mark.parametrize("kind", INDICES)
@pytest.mark.parametrize("path", ["host", "torch_ops"])
def test_torch_batch_equals_masked_fill(dtype_name, vocab, width, kind, path):
    dtype = getattr(torch, dtype_name)
    rng = np.random.default_rng(vocab * 11 + width)
    n_masks = 12
    mask, _ = _random_masks(rng, n_masks, vocab)
    logits = torch.from_numpy(_logits(rng, n_masks + 4, width)).to(dtype)
    indices, rows = _rows_for(rng, kind, len(logits), n_masks)
    if indices is None:
        logits = logits[:n_masks].clone()
    want = _reference_torch(logits, mask, rows)
    if path == "host":
        sg.apply_token_bitmask_inplace(logits, torch.from_numpy(mask), indices=indices)
    else:
        apply_with_torch_ops(logits, torch.from_numpy(mask), np.asarray(rows, dtype=np.int64))
    assert torch.equal(_bits(logits), _bits(want))
    assert not torch.isnan(logits).any()


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("vocab,width", [(1000, 1000), (1057, 1057), (1000, 1100)])
def test_one_dimensional_logits(lib, vocab, width):
    rng = np.random.default_rng(width)
    mask, _ = _random_masks(rng, 5, vocab)
    for row in mask:
        base = _logits(rng, 1, width).astype(np.float32)
        want = _reference_numpy(base, row[None], [0])[0]
        logits = base[0].copy() if lib == "numpy" else torch.from_numpy(base[0].copy())
        sg.apply_token_bitmask_inplace(logits, row)
        got = logits if lib == "numpy" else logits.numpy()
        assert got.tobytes() == want.tobytes()


def test_rows_that_allow_everything_are_not_touched():
    rng = np.random.default_rng(3)
    mask = sg.allocate_token_bitmask(4, 1000)
    mask[2, 5] = 0
    logits = np.full((4, 1000), 7.0, dtype=np.float32)
    sg.apply_token_bitmask_inplace(logits, mask)
    assert (logits[[0, 1, 3]] == 7).all()
    assert np.isneginf(logits[2, 160:192]).all() and (logits[2, :160] == 7).all() and (logits[2, 192:] == 7).all()
    assert list(allows_everything(mask, 1000)) == [True, True, False, True]
    assert not allows_everything(mask, 1024 + 1).any()  # a token past the mask is disallowed
    wide, _ = _random_masks(rng, 5, 1100)
    wide[:, :] = -1
    wide[:, -1] = 0  # bits past a 1000-token vocabulary are ignored
    assert allows_everything(wide, 1000).all() and not allows_everything(wide, 1100).any()


def test_real_matcher_masks(qwen):
    """Masks of a real grammar on the Qwen vocabulary (151,643 tokens and specials, padded)."""
    m = sg.GrammarMatcher(sg.GrammarCompiler(qwen).compile_regex("ab+c?"))
    mask = sg.allocate_token_bitmask(3, qwen.vocab_size)
    m.fill_next_token_bitmask(mask, index=1)
    assert m.accept_string("ab")
    m.fill_next_token_bitmask(mask, index=2)
    allowed = unpack_bitmask(mask, qwen.vocab_size)
    for logits in (np.zeros((3, qwen.vocab_size), dtype=np.float32), torch.zeros(3, qwen.vocab_size)):
        sg.apply_token_bitmask_inplace(logits, mask)
        assert np.array_equal(np.isfinite(np.asarray(logits)), allowed)
    assert allowed[0].all() and 0 < allowed[1].sum() < allowed[2].sum() < 1000


def test_bad_arguments():
    mask = sg.allocate_token_bitmask(2, 64)
    with pytest.raises(ValueError, match="rows for"):
        sg.apply_token_bitmask_inplace(np.zeros((3, 64)), mask)
    with pytest.raises(ValueError, match="single mask row"):
        sg.apply_token_bitmask_inplace(np.zeros(64), mask)
    with pytest.raises(ValueError, match="name rows"):
        sg.apply_token_bitmask_inplace(np.zeros((2, 64)), mask, indices=[0, 2])
    with pytest.raises(ValueError, match="repeat"):
        sg.apply_token_bitmask_inplace(np.zeros((2, 64)), mask, indices=[1, 1])
    with pytest.raises(ValueError, match="1-D or 2-D"):
        sg.apply_token_bitmask_inplace(np.zeros((1, 2, 64)), mask)


KERNEL_CHECK = textwrap.dedent(
    """
    import numpy as np, torch
    from strictgen.runtime.bitmask import unpack_bitmask
    from strictgen.runtime.bitmask_triton import apply_masks
    rng = np.random.default_rng(0)
    for vocab, width in [(1000, 1000), (1100, 1000), (1000, 1100), (4096 + 33, 4096 + 33)]:
        words = (vocab + 31) // 32
        mask = rng.integers(-2**31, 2**31 - 1, (5, words), dtype=np.int64).astype(np.int32)
        mask[1] = -1
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            logits = torch.from_numpy(rng.standard_normal((7, width))).to(dtype)
            logits[0, 3] = float("inf")
            rows = [6, 0, 2, 3, 5]
            want = logits.clone()
            allowed = torch.from_numpy(unpack_bitmask(mask, width))
            for i, r in enumerate(rows):
                want[r].masked_fill_(~allowed[i], float("-inf"))
            apply_masks(logits, torch.from_numpy(mask), torch.tensor(rows, dtype=torch.int32))
            assert torch.equal(logits, want), (vocab, width, dtype)
    print("kernel ok")
    """
)


def test_triton_kernel_in_interpreter():
    """Triton's interpreter runs the kernel on CPU tensors with numpy: the same kernel source that
    a CUDA device compiles, its block loads and stores and masks, checked bit for bit against a
    masked fill (Triton is in the `test` extra; without it this skips)."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed: the CUDA kernel (runtime/bitmask_triton.py) is untested here")
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", KERNEL_CHECK], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "kernel ok" in done.stdout, done.stderr[-2000:]
