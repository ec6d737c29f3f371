"""Drop-in pieces for other inference libraries, one module each, imported on demand.

- `strictgen.integrations.transformers`: a LogitsProcessor for `model.generate` (batched).
- `strictgen.integrations.llama_cpp`: a logits processor for llama-cpp-python's own completion calls.
- `strictgen.integrations.vllm`: a vLLM logits-processor plugin (formats per request via extra_args).
- `strictgen.integrations.sglang`: an SGLang grammar backend (`--grammar-backend strictgen`).
"""
