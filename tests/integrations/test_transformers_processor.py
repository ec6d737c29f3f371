"""The transformers LogitsProcessor drives `model.generate` to valid output (batched, one grammar per row)."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

import strictgen as sg
from tests.models import WEATHER_PROMPT, embedded, weather_schema

pytestmark = pytest.mark.slow  # loads the model into transformers (dequantised GGUF, ~15 s)


def test_generate_batch_with_processor():
    import torch

    from strictgen.integrations.transformers import StrictgenLogitsProcessor

    wrapped = embedded("transformers")
    model, tokenizer = wrapped.hf_model, wrapped.hf_tokenizer
    compiler = sg.GrammarCompiler(wrapped.tokenizer_info)
    schema = weather_schema()
    pattern = r"[A-Z][a-z]{1,12}, [A-Z][a-z]{1,12}"  # bounded: done within max_new_tokens
    grammars = [compiler.compile_json_schema(schema, whitespace="compact"), compiler.compile_regex(pattern)]
    prompts = [WEATHER_PROMPT, "Name the capital of France and its country, like 'City, Country'."]
    texts = [wrapped.chat_template.render([{"role": "user", "content": p}]) for p in prompts]
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    processor = StrictgenLogitsProcessor(grammars)
    with torch.inference_mode():
        out = model.generate(
            **batch, logits_processor=[processor], max_new_tokens=40, do_sample=False,
            eos_token_id=wrapped.tokenizer_info.eos_token_ids, pad_token_id=tokenizer.pad_token_id,
        )
    new = out[:, batch["input_ids"].shape[1] :]
    decoded = [wrapped.detokenize([t for t in row.tolist() if t not in wrapped.tokenizer_info.eos_token_ids and t != tokenizer.pad_token_id]).decode() for row in new]
    jsonschema.validate(json.loads(decoded[0]), schema)
    assert re.fullmatch(pattern, decoded[1]), decoded[1]
    assert all(m.is_terminated() or m.can_end() for m in processor.matchers)


def test_processor_refuses_wrong_batch():
    from strictgen.integrations.transformers import StrictgenLogitsProcessor

    tok = sg.TokenizerInfo.from_name("smollm2")
    g = sg.GrammarCompiler(tok).compile_choice(["a", "b"])
    import torch

    processor = StrictgenLogitsProcessor([g, g, g])
    with pytest.raises(sg.StrictgenError, match="3 grammars for a batch of 2"):
        processor(torch.zeros((2, 4), dtype=torch.long), torch.zeros((2, tok.vocab_size)))
