"""A local mirror of the evaluation sets laid out like the Hub: the real GSM8K and MATH test
rows (tests/support/real_raw.py) and small SYNTHETIC MMLU and ARC fixtures (eval_fixtures.py)
in those datasets' Hub schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contamination.eval_fixtures import (
    ARC_CHALLENGE,
    ARC_EASY,
    MMLU,
    read_jsonl,
    write_parquet,
)
from hrm_assets.cleaning.sources.math import SUBJECTS as MATH_TYPES
from hrm_assets.contamination.evalsets import MATH_SUBJECTS


@pytest.fixture(scope="session")
def eval_mirror(tmp_path_factory, real_raw) -> Path:
    root = tmp_path_factory.mktemp("eval_mirror")
    gsm8k = root / "openai" / "gsm8k" / "main"
    gsm8k.mkdir(parents=True)
    (gsm8k / "test.jsonl").symlink_to(real_raw / "gsm8k" / "test.jsonl")
    math_rows = read_jsonl(real_raw / "hendrycks_math" / "test.jsonl")
    for subject in MATH_SUBJECTS:
        folder = root / "EleutherAI" / "hendrycks_math" / subject
        folder.mkdir(parents=True)
        rows = [row for row in math_rows if row["type"] == MATH_TYPES[subject]]
        with open(folder / "test.jsonl", "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
    write_parquet(root / "cais" / "mmlu" / "all" / "test-00000-of-00001.parquet", MMLU)
    arc = root / "allenai" / "ai2_arc"
    write_parquet(arc / "ARC-Easy" / "test-00000-of-00001.parquet", ARC_EASY)
    write_parquet(arc / "ARC-Challenge" / "test-00000-of-00001.parquet", ARC_CHALLENGE)
    return root


@pytest.fixture(scope="session")
def eval_sets(eval_mirror):
    from hrm_assets.contamination.evalsets import BUILT_IN, load_eval_set

    return [load_eval_set(spec, eval_mirror) for spec in BUILT_IN]


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
