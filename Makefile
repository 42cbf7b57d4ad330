# Two commands for a person (README quickstart), a few more for developers.
PYTHON ?= python3
export DAGSTER_HOME ?= $(CURDIR)/dagster_home
# pipefail: a filtered command (pip below) still fails the target when it fails.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec

.PHONY: install constraints extension demo test test-fast test-rust system-packages test-packages bench lint

# `make test`, `test-fast` and `test-rust` read real raw rows (GSM8K, MATH, ...), which the
# repository does not hold: the mirror named by HRM_REAL_RAW, or the pinned public files in the
# cache (tests/support/real_raw.py, which checks every file's SHA-256). Found before anything
# runs, and exported to every recipe; without them make stops at once with one line saying why.
ifneq ($(filter test test-fast test-rust,$(MAKECMDGOALS)),)
REAL_RAW_DIR := $(shell $(PYTHON) tests/support/real_raw.py)
ifneq ($(.SHELLSTATUS),0)
$(error $(REAL_RAW_DIR))
endif
export HRM_REAL_RAW := $(REAL_RAW_DIR)
endif

# pip's own lines (what it downloads and installs), less one per dependency already there.
# constraints.txt pins every dependency at a release that works (make constraints), so pip
# resolves at once instead of backtracking.
install: extension
	@echo "==> installing hrm-data and its Python dependencies"
	$(PYTHON) -m pip install --progress-bar off -c constraints.txt -e '.[dev]' | { grep -v '^Requirement already satisfied' || true; }
	$(PYTHON) -m hrm_assets.local_env

# Rewrite constraints.txt from this environment after a working install (a dependency added or
# upgraded in pyproject.toml): the installed version of every dependency of hrm-data[dev].
constraints:
	$(PYTHON) scripts/constraints.py

# The Rust extension, compiled by cargo in the foreground so that its progress shows (pip hides
# a build's output). The command and environment are maturin's own (`maturin build --release`
# for this interpreter), so the `pip install -e` above finds every crate compiled and only
# packages the library. The first build compiles ~300 crates: about 13 minutes on 2 cores.
PY_EXE := $(shell $(PYTHON) -c 'import sys; print(sys.executable)')
PY_SIGNATURE := $(shell $(PYTHON) -c 'import platform, sys; print("{}-{}.{}-{}bit".format(platform.python_implementation().lower(), *sys.version_info[:2], 64 if sys.maxsize > 2**32 else 32))')
MATURIN_ENV := PYO3_BUILD_EXTENSION_MODULE=1 PYO3_ENVIRONMENT_SIGNATURE=$(PY_SIGNATURE) \
  PYO3_PYTHON=$(PY_EXE) PYTHON_SYS_EXECUTABLE=$(PY_EXE)
FEATURES := --features pyo3/extension-module
extension:
	$(PYTHON) -m pip install --quiet --upgrade pip
	@echo "==> compiling the Rust core (first time: about 13 minutes on 2 cores; then seconds)"
	cd rust_tokenizer && $(MATURIN_ENV) \
	  cargo rustc --locked --profile release $(FEATURES) --lib --crate-type cdylib
	@# An editable install imports the copy pip placed in the package: refresh it in place
	@# (a rename, so a running interpreter keeps the file it mapped).
	@if ls hrm_assets/_core.*.so >/dev/null 2>&1; then \
	  for so in hrm_assets/_core.*.so; do \
	    cp rust_tokenizer/target/release/libhrm_core.so "$$so.tmp" && mv "$$so.tmp" "$$so"; \
	  done; fi

demo: install
	$(PYTHON) -m hrm_assets.quickstart

# Every test runs: the programs the slow tests need are installed first (or the command to
# install them is printed), and a skipped test fails the run (--no-skips, tests/conftest.py).
test: install system-packages test-packages test-rust
	$(PYTHON) -m pytest -q --no-skips
	$(PYTHON) -m pytest -q --no-skips -m slow

system-packages:
	scripts/system-packages

# The Python packages only slow tests need: the `megatron` extra of pyproject.toml
# (megatron-core, which reads our Megatron export in tests/export/test_export_megatron.py, and torch
# with its CUDA libraries: about 3 GB, 2 minutes the first time, nothing afterwards).
MEGATRON_EXTRA = $(shell $(PYTHON) -c "import tomllib; print(' '.join(repr(r) for r in tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['megatron']))")
test-packages:
	$(PYTHON) -m pip install --progress-bar off $(MEGATRON_EXTRA) | { grep -v '^Requirement already satisfied' || true; }

# The Rust core on its own: unit tests and the fast encoder's proptest oracles (the
# `tokenizers` crate and the onig regex run on random Unicode). Same features and environment
# as the extension, and --lib (the crate has no doctests or integration tests, which would want
# every dependency compiled a second way): only the test crates and the test binary compile.
test-rust:
	cd rust_tokenizer && $(MATURIN_ENV) cargo test --release --locked $(FEATURES) --lib

test-fast: install
	$(PYTHON) -m pytest -q

bench: install
	$(PYTHON) -m bench

lint:
	ruff check . && ruff format --check .
