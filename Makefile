# Two commands for a person (README quickstart), a few more for developers.
PYTHON ?= python3
export DAGSTER_HOME ?= $(CURDIR)/dagster_home

.PHONY: install demo test test-fast test-rust bench lint

install:
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e '.[dev]'

demo: install
	$(PYTHON) -m hrm_assets.quickstart

test: install test-rust
	$(PYTHON) -m pytest -q
	$(PYTHON) -m pytest -q -m slow

# The Rust core on its own: unit tests and the fast encoder's proptest oracles (the
# `tokenizers` crate and the onig regex run on random Unicode).
test-rust:
	cd rust_tokenizer && cargo test --release --locked

test-fast: install
	$(PYTHON) -m pytest -q

bench: install
	$(PYTHON) -m bench

lint:
	ruff check . && ruff format --check .
