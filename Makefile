# The README's two commands, on a fresh machine: `make reproduce` runs the main job, `make test` the
# tests.  Each first makes the virtual environment .venv when it is missing or older than
# pyproject.toml (scripts/make-env: the CPU build of torch on a machine without an NVIDIA GPU, then
# the project with its test extras).  `make env` makes it alone; ARGS passes options on, e.g.
# `make reproduce ARGS="--update-readme"`.  CI (.ci/run) calls `make lint test`.

PYTHON ?= python3
VENV ?= .venv
ARGS ?=

.PHONY: env reproduce test lint

env: $(VENV)/.ready

$(VENV)/.ready: pyproject.toml scripts/make-env
	PYTHON=$(PYTHON) bash scripts/make-env $(VENV)
	touch $@

reproduce: env
	$(VENV)/bin/noisymix reproduce --out results $(ARGS)

# the README's test command: the fast suite on two workers (slow end-to-end runs: -m slow)
test: env
	$(VENV)/bin/python -m pytest -n 2 -m "not slow" $(ARGS)

lint: env
	$(VENV)/bin/ruff check .
