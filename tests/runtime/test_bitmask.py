"""apply_token_bitmask_inplace against a direct reference, over the cached plans (few allowed,
few disallowed, dense), both array libraries, several dtypes, and repeated / changed masks."""

import numpy as np
import pytest

import strictgen as sg
from strictgen.runtime.bitmask import FEW_TOKENS, unpack_bitmask

V = 1000


def _mask_with(allowed: np.ndarray) -> np.ndarray:
    mask = sg.allocate_token_bitmask(1, len(allowed))
    bits = np.zeros(mask.shape[1] * 32, dtype=np.uint8)
    bits[: len(allowed)] = allowed
    mask[0] = np.packbits(bits, bitorder="little").view(np.int32)
    return mask[0]


def _reference(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    allowed = unpack_bitmask(mask[None, :], logits.shape[-1])[0]
    return np.where(allowed, logits, -np.inf)


def _allowed_sets(rng):
    few = np.zeros(V, dtype=bool)
    few[rng.choice(V, FEW_TOKENS // 2, replace=False)] = True
    dense = rng.random(V) < 0.5
    almost_all = np.ones(V, dtype=bool)
    almost_all[rng.choice(V, 5, replace=False)] = False
    return {"few": few, "dense": dense, "almost_all": almost_all, "all": np.ones(V, dtype=bool), "none": np.zeros(V, dtype=bool)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_numpy_apply_matches_reference(dtype):
    rng = np.random.default_rng(0)
    for name, allowed in _allowed_sets(rng).items():
        mask = _mask_with(allowed)
        for _ in range(3):  # the second and third use the cached plan
            logits = rng.standard_normal(V).astype(dtype)
            logits[rng.choice(V, 3)] = np.inf  # a +inf logit on a disallowed token must become -inf, not NaN
            want = _reference(logits, mask)
            sg.apply_token_bitmask_inplace(logits, mask)
            assert np.array_equal(logits, want), name
            assert not np.isnan(logits).any()


def test_same_checksum_different_masks_are_not_confused():
    a = np.zeros(V, dtype=bool)
    a[[0, 33]] = True
    b = np.zeros(V, dtype=bool)
    b[[1, 32]] = True  # words (1, 2) and (2, 1): the same word sum, different masks
    ma, mb = _mask_with(a), _mask_with(b)
    assert ma.sum(dtype=np.int64) == mb.sum(dtype=np.int64)
    for mask, allowed in [(ma, a), (mb, b), (ma, a)]:
        logits = np.zeros(V, dtype=np.float32)
        sg.apply_token_bitmask_inplace(logits, mask)
        assert np.array_equal(np.isfinite(logits), allowed)


def test_logits_wider_than_mask_disallow_the_rest():
    allowed = np.ones(V, dtype=bool)
    mask = _mask_with(allowed)  # 1000 tokens: 1024 bits, the last 24 already zero
    logits = np.zeros(V + 100, dtype=np.float32)
    sg.apply_token_bitmask_inplace(logits, mask)
    assert np.isfinite(logits[:V]).all() and np.isneginf(logits[1024:]).all()


def test_batched_rows_and_indices():
    rng = np.random.default_rng(1)
    sets = list(_allowed_sets(rng).values())
    masks = np.stack([_mask_with(a) for a in sets])
    logits = rng.standard_normal((len(sets) + 2, V)).astype(np.float32)
    before = logits.copy()
    rows = list(range(2, len(sets) + 2))
    sg.apply_token_bitmask_inplace(logits, masks, indices=rows)
    assert np.array_equal(logits[:2], before[:2])  # rows not named are untouched
    for i, r in enumerate(rows):
        assert np.array_equal(logits[r], _reference(before[r], masks[i]))


@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "float16"])
def test_torch_apply_matches_reference(dtype_name):
    torch = pytest.importorskip("torch", reason="torch is a test dependency; absent only outside `make test`")
    dtype = getattr(torch, dtype_name)
    rng = np.random.default_rng(2)
    sets = _allowed_sets(rng)
    for name, allowed in sets.items():
        mask = torch.from_numpy(_mask_with(allowed))
        for _ in range(2):
            logits = torch.randn(2, V, dtype=dtype)
            logits[0, 7] = float("inf")
            want = torch.where(torch.from_numpy(allowed), logits[1], torch.tensor(float("-inf"), dtype=dtype))
            sg.apply_token_bitmask_inplace(logits, mask[None, :], indices=[1])
            assert torch.equal(logits[1], want), name
            assert torch.isfinite(logits[0]).sum() == V - 1  # row 0 not named: untouched
