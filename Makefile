# The two README commands are `make demo` and `make test`; both install what they need first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test check demo lint typecheck bench clean browser docs

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q --upgrade pip
	# The CPU wheel first, so nothing asks for the multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	# Export MiniLM to ONNX once, offline, from the bundled weights, and its int8 query variant
	# (else the first use does it).
	$(BIN)/python -m fourfold.embeddings.onnx
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy

typecheck: $(STAMP)
	$(BIN)/mypy

# The browser tests drive Debian's chromium (Playwright never downloads a browser here).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "the browser tests need chromium: sudo apt-get install -y chromium" >&2; exit 1; fi; }

test: $(STAMP) browser
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(MAKE) docs
	$(BIN)/pytest -q

# The fast inner loop: lint, types and the tests that need no real model, server or PostgreSQL.
check: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/pytest -q -x -n 2 -m "not slow and not server and not postgres"

# The documentation site (MkDocs); --strict makes a broken link or anchor fail the build.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

demo: $(STAMP)
	$(BIN)/fourfold demo

bench: $(STAMP)
	$(BIN)/python benchmarks/locomo.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
