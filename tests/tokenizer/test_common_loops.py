"""The loops every JSON grammar meets (trie.COMMON_LOOPS: a JSON string's body) are split with the
vocabulary's other tables, not in a first mask fill: the kept splits equal the ones built on first
use, the schema emitter's string body is that very loop (no fill builds them), and a stored copy
(VocabTrie.arrays / from_arrays, the tables file) gives them back, checked."""

import numpy as np
import pytest

import strictgen as sg
from strictgen.tokenizer.trie import COMMON_LOOPS, JSON_STRING_BODY, VocabTrie


def _same_trie(a: VocabTrie, b: VocabTrie) -> None:
    for name in ("offsets", "node_byte", "token_node", "node_tokens", "walk_nodes"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def _firsts() -> list[np.ndarray]:
    """Sets of bytes entering a string body: its own bytes, only a quote's, none."""
    own = np.zeros(256, dtype=bool)
    own[list(JSON_STRING_BODY)] = True
    quote = np.zeros(256, dtype=bool)
    quote[ord('"')] = True
    return [own, quote, np.zeros(256, dtype=bool)]


def _same_splits(a: VocabTrie, b: VocabTrie) -> None:
    """`a` and `b` answer every split of the common loops alike."""
    for loop_bytes, multibyte in COMMON_LOOPS:
        assert np.array_equal(a.loop_inside(loop_bytes, multibyte), b.loop_inside(loop_bytes, multibyte))
        for first in _firsts():
            for by_char in (False, True):
                assert np.array_equal(a.loop_entries(loop_bytes, multibyte, first, by_char), b.loop_entries(loop_bytes, multibyte, first, by_char))
        for skip_first in (False, True):
            (sa, oa, ea), (sb, ob, eb) = a.loop_suffixes(loop_bytes, multibyte, skip_first), b.loop_suffixes(loop_bytes, multibyte, skip_first)
            _same_trie(sa, sb)
            assert np.array_equal(oa, ob) and np.array_equal(ea, eb)
        _same_trie(a.loop_rest(loop_bytes, multibyte), b.loop_rest(loop_bytes, multibyte))


def test_kept_splits_equal_the_ones_built_on_first_use(vocab):
    """A vocabulary's trie (prepared) and a trie built without them answer alike."""
    _, tok = vocab
    lazy = VocabTrie(tok.all_token_bytes, tok.is_special)
    _same_splits(tok.trie, lazy)


def test_the_emitters_string_body_is_the_kept_loop(qwen, monkeypatch):
    """Filling masks through a document of strings (keys, values, escapes, non-ASCII) asks for the
    JSON_STRING_BODY loop's splits and builds none of them: the constant is the emitter's loop."""
    asked, built = [], []
    original = VocabTrie._cached

    def recorded(self, key, build):
        asked.append(key)
        return original(self, key, lambda: built.append(key) or build())

    monkeypatch.setattr(VocabTrie, "_cached", recorded)
    grammar = sg.GrammarCompiler(qwen).compile_json_schema({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}},
                                                                  "additionalProperties": {"type": "string"}})
    matcher = sg.GrammarMatcher(grammar)
    for token in _greedy_ids(qwen, '{"name":"añb c","some key":"a value, with \\"quotes\\" and ünïcode ✓","k2":"more text"}') + qwen.eos_token_ids[:1]:
        mask = matcher.next_token_mask()
        assert mask[token // 32] >> (token % 32) & 1
        assert matcher.accept_token(token)
    body = [k for k in asked if k[1:3] == (JSON_STRING_BODY, True)]
    assert {"suffixes", "rest"} <= {k[0] for k in body}, "the string body is not the kept loop"  # asked by the body's fills, the counted one's
    assert not [k for k in built if k[0] in ("inside", "by_first", "suffixes", "rest") and k[1:3] == (JSON_STRING_BODY, True)]


def _greedy_ids(tok: sg.TokenizerInfo, text: str) -> list[int]:
    """`text` as tokens, longest first (any split is a valid path through the grammar)."""
    special = set(tok.special_token_ids)
    by_bytes = {b: i for i, b in enumerate(tok.all_token_bytes) if b and i not in special}
    data, out = text.encode(), []
    while data:
        n = next(n for n in range(min(len(data), 32), 0, -1) if data[:n] in by_bytes)
        out.append(by_bytes[data[:n]])
        data = data[n:]
    return out


def _set(i: int, value: int):
    """A change of an array: item i set to `value`."""
    return lambda a: (a.__setitem__(i, value), a)[1]


def test_stored_splits_round_trip_and_refuse_damage(vocab):
    """from_arrays(arrays()) keeps the same splits (no build on use); a split array of another type,
    an id, group or suffix out of range, or a part missing is a ValueError (the tables file is
    then ignored with a warning and rebuilt: tests/compile/test_disk_tables.py)."""
    _, tok = vocab
    arrays = tok.trie.arrays()
    assert "loops.0.inside" in arrays
    again = VocabTrie.from_arrays(arrays, tok.all_token_bytes, tok.is_special)
    _same_splits(again, tok.trie)
    assert again.loop_suffixes(JSON_STRING_BODY, True, True)[1] is arrays["loops.0.suffixes.1.owner"]  # kept, not rebuilt

    n = len(tok.all_token_bytes)
    changes = [
        ("loops.0.inside", lambda a: a[1:]),
        ("loops.0.by_first.1", _set(0, n)),  # a token id past the vocabulary
        ("loops.0.by_first.4", _set(255, 10**9)),  # a group past the ids
        ("loops.0.by_first.2", lambda a: a.astype(np.int32)),
        ("loops.0.suffixes.1.owner", _set(0, -1)),
        ("loops.0.suffixes.0.empty", lambda a: np.append(a, n)),
        ("loops.0.suffixes.1.starts", _set(0, 10**12)),  # a suffix past the vocabulary's bytes
        ("loops.0.suffixes.0.node_tokens", _set(0, 10**6)),
        ("loops.0.suffixes.1.walk_nodes", _set(0, -1)),
    ]
    bad = [{**arrays, name: change(arrays[name].copy())} for name, change in changes]
    bad.append({k: a for k, a in arrays.items() if k != "loops.0.suffixes.0.lengths"})
    for broken in bad:
        with pytest.raises(ValueError):
            VocabTrie.from_arrays(broken, tok.all_token_bytes, tok.is_special)
    # a copy without them is still a trie: they are built on first use then
    plain = VocabTrie.from_arrays({k: a for k, a in arrays.items() if not k.startswith("loops.")}, tok.all_token_bytes, tok.is_special)
    _same_splits(plain, tok.trie)
