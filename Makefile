# Quick start on a fresh machine: `make dataset` then `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PRESET ?=
PROVIDER ?=
OUT ?= outputs/$(or $(PRESET),default)
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local

.PHONY: install install-local install-local-portable dataset lint test test-fast test-unit bench eval-bench clean browser docs

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

# The remedy when llama.cpp still crashes on a CPU (the probe says so): rebuild llama-cpp-python for a generic
# x86-64 with AVX2/AVX-512 but without the AMX backend, bypassing pip's cache (it may hold a native build).
PORTABLE_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON
install-local-portable: $(LOCAL_STAMP)
	CMAKE_ARGS="$(PORTABLE_CMAKE_ARGS)" $(BIN)/pip install -q --no-cache-dir --force-reinstall --no-deps 'llama-cpp-python[server]>=0.3.2,<0.4'

# Provider resolution: PROVIDER wins; else ANTHROPIC_API_KEY -> anthropic, OPENAI_API_KEY/OPENAI_BASE_URL -> openai,
# else the embedded local model with the tiny preset (installed only when it is needed).
dataset: $(STAMP)
	@provider="$(PROVIDER)"; \
	if [ -z "$$provider" ] && [ -z "$$ANTHROPIC_API_KEY" ] && [ -z "$$OPENAI_API_KEY" ] && [ -z "$$OPENAI_BASE_URL" ]; then provider=local; fi; \
	if [ "$$provider" = "local" ]; then $(MAKE) --no-print-directory install-local; fi; \
	$(BIN)/synth run --personas personas --out $(OUT) $(if $(PRESET),--preset $(PRESET),) $(if $(PROVIDER),--provider $(PROVIDER),)

# The headless Chromium of tests/test_browse.py (`synth browse` clicked in a real browser): @sparticuz/chromium and
# puppeteer-core from npm into tests/browser/node_modules (git-ignored). Without Node the test skips and says why.
BROWSER_STAMP := tests/browser/node_modules/.installed
$(BROWSER_STAMP): tests/browser/package.json tests/browser/package-lock.json
	cd tests/browser && npm ci --no-audit --no-fund
	touch $@

browser:
	@if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(BROWSER_STAMP); \
	else echo "Node.js/npm not found: the browser test of synth browse will be skipped (install Node 20+ to run it)"; fi

lint: $(STAMP)
	$(BIN)/ruff check synth tests benchmarks

test: $(LOCAL_STAMP) lint browser
	$(BIN)/python -m pytest -q

# Without the local-model tests (no llama.cpp build, no npm: the browser test installs its node_modules itself
# when Node is there, and skips saying why when it is not).
test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -q -m 'not local'

# The docs site (MkDocs, Material theme), built strictly: a broken link or a page missing from the nav fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The tier to run while editing (docs/contributing.md): model-free, no npm, no llama.cpp, no end-to-end runs.
test-unit: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -m 'not local and not slow'

bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py

eval-bench: $(STAMP)
	$(BIN)/python benchmarks/eval_bench.py

clean:
	rm -rf $(VENV) .pytest_cache tests/browser/node_modules
