"""Drop-in pieces for other inference libraries, one module each, imported on demand.

- `strictgen.integrations.transformers`: a LogitsProcessor for `model.generate` (batched).
- `strictgen.integrations.llama_cpp`: a logits processor for llama-cpp-python's own completion calls.
"""
