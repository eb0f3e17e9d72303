PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
export TEST_DATABASE_URL ?= postgresql+asyncpg://postgres@127.0.0.1:5432/postgres

.PHONY: install run test lint typecheck unit bench bench-compaction bench-replicas clean lock browser node-clients screenshots

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# `make run` installs what the service needs (about 320 MB), without the `claude` extra (claude-agent-sdk,
# 385 MB: the claude_sdk runtime) and the test, lint and browser tooling. `make install`, `make test` and
# the targets below install the dev extra (about 1 GB), which includes the `claude` extra.
$(RUN_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(RUN_STAMP)

install: $(STAMP)

run: $(RUN_STAMP)
	$(BIN)/agent-runtime serve --host 127.0.0.1 --port 8000

lint: $(STAMP)
	$(BIN)/ruff check app tests bench
	$(BIN)/mypy

unit: $(STAMP) browser node-clients
	$(BIN)/pytest -q

# Debian's chromium for the page's browser tests (tests/web), installed only when missing; Playwright
# drives it as it is (no browser download). Needs root and Debian's archive, as CI has.
browser:
	test -x /usr/bin/chromium || (apt-get update && apt-get install -y chromium)

test: lint unit

bench: $(STAMP)
	$(BIN)/python -m bench.run $(BENCH_ARGS)

bench-compaction: $(STAMP)
	$(BIN)/python -m bench.compaction $(BENCH_ARGS)

bench-replicas: $(STAMP)
	$(BIN)/python -m bench.replicas $(BENCH_ARGS)

# The image's pinned dependencies (Dockerfile): the service and its `otlp` extra (requirements.lock),
# and the same with the `claude` extra (requirements-claude.lock, the image built with WITH_CLAUDE=true),
# for CPython 3.11 on any platform, with hashes. Re-run after changing the dependencies in pyproject.toml.
LOCK := $(BIN)/uv pip compile pyproject.toml --extra otlp --universal --python-version 3.11 --generate-hashes --no-header --quiet
lock: $(STAMP)
	$(LOCK) -o requirements.lock
	$(LOCK) --extra claude -o requirements-claude.lock

# The README's pictures of the web page, taken by its browser tests (tests/web).
screenshots: $(STAMP) browser
	UPDATE_SCREENSHOTS=1 $(BIN)/pytest -q tests/web

# The real AG-UI, AI SDK, MCP and A2A client libraries (tests/adapters run tests/node/clients.mjs,
# tests/interop run tests/node/doors.mjs), from the committed package-lock.json, installed when missing.
node-clients: tests/node/node_modules/.package-lock.json

tests/node/node_modules/.package-lock.json: tests/node/package.json tests/node/package-lock.json
	cd tests/node && npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
