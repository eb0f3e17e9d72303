PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export TEST_DATABASE_URL ?= postgresql+asyncpg://postgres@127.0.0.1:5432/postgres

.PHONY: install run test lint typecheck unit bench clean lock

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/agent-runtime serve --host 127.0.0.1 --port 8000

lint: $(STAMP)
	$(BIN)/ruff check app tests bench migrations
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

test: lint unit

bench: $(STAMP)
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# The image's pinned dependencies (Dockerfile): the service and its `otlp` extra, for CPython 3.11 on
# any platform, with hashes. Re-run after changing the dependencies in pyproject.toml.
lock: $(STAMP)
	$(BIN)/uv pip compile pyproject.toml --extra otlp --universal --python-version 3.11 \
	  --generate-hashes --no-header --quiet -o requirements.lock

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
