"""The llama-cpp-python logits processor keeps llama.cpp's own create_completion on format."""

from __future__ import annotations

import json

import jsonschema

from tests.models import WEATHER_PROMPT, embedded, weather_schema


def test_create_completion_with_processor():
    from llama_cpp import LogitsProcessorList

    from strictgen.integrations.llama_cpp import StrictgenLlamaLogitsProcessor

    wrapped = embedded("llama.cpp")
    llm = wrapped.llm
    schema = weather_schema()
    processor = StrictgenLlamaLogitsProcessor.from_json_schema(llm, schema, whitespace="compact")
    prompt = wrapped.chat_template.render([{"role": "user", "content": WEATHER_PROMPT}])
    wrapped.reset()  # the engine's cache bookkeeping: llama.cpp's own calls manage the context now
    out = llm.create_completion(prompt, max_tokens=64, temperature=0.0, logits_processor=LogitsProcessorList([processor]))
    wrapped.reset()
    text = out["choices"][0]["text"]
    jsonschema.validate(json.loads(text), schema)
    assert processor.matcher.can_end() or processor.matcher.is_terminated()
