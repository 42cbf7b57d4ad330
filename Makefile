# Two commands for a person (README quickstart), a few more for developers.
PYTHON ?= python3
export DAGSTER_HOME ?= $(CURDIR)/dagster_home

.PHONY: install demo test test-fast bench lint

install:
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e '.[dev]'

demo: install
	$(PYTHON) -m hrm_assets.quickstart

test: install
	$(PYTHON) -m pytest -q
	$(PYTHON) -m pytest -q -m slow

test-fast: install
	$(PYTHON) -m pytest -q

bench: install
	$(PYTHON) -m bench

lint:
	ruff check . && ruff format --check .
