"""UTF-8 splitting: the byte-range sequences spell exactly the encodings of the code points."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from strictgen.regular.utf8 import utf8_sequences


def spelled(lo: int, hi: int) -> set[bytes]:
    out = set()
    for seq in utf8_sequences(lo, hi):
        out.update(bytes(c) for c in itertools.product(*(range(a, b + 1) for a, b in seq)))
    return out


def expected(lo: int, hi: int) -> set[bytes]:
    return {chr(c).encode("utf-8") for c in range(lo, hi + 1) if not 0xD800 <= c <= 0xDFFF}


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 0x10FFFF), st.integers(0, 3000))
def test_random_ranges(lo, width):
    hi = min(0x10FFFF, lo + width)
    assert spelled(lo, hi) == expected(lo, hi)


def test_boundaries_and_surrogates():
    for lo, hi in [(0, 0x7F), (0x7F, 0x80), (0x7FF, 0x800), (0xD700, 0xE0FF), (0xFFFF, 0x10010), (0x10FF00, 0x10FFFF)]:
        assert spelled(lo, hi) == expected(lo, hi)
    assert utf8_sequences(0xD800, 0xDFFF) == []


def test_whole_code_space_is_nine_sequences():
    # [00-7F] | [C2-DF][80-BF] | E0[A0-BF].. | [E1-EC].. | ED[80-9F].. | [EE-EF].. | F0[90-BF]... | [F1-F3]... | F4[80-8F]...
    assert len(utf8_sequences(0, 0x10FFFF)) == 9
