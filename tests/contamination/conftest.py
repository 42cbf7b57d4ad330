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


@pytest.fixture
def corpus(tmp_path, eval_sets, real_raw):
    """A cleaned root with planted rows, and the row numbers planted in each file."""
    from contamination.eval_fixtures import ARC_CHALLENGE, MMLU, read_jsonl
    from contamination.test_scan import long_item, perturb, row, write_jsonl, write_parquet

    gsm8k, math, *_ = eval_sets
    raw = read_jsonl(real_raw / "gsm8k" / "train.jsonl")[:200]
    base = [row(r["question"].strip(), r["answer"].split("#### ")[-1].strip()) for r in raw]
    g = long_item(gsm8k.texts["question"], 5)
    m = long_item(math.texts["problem"], 100)
    rows = list(base)
    rows[9] = row(gsm8k.texts["question"][g], "42")
    rows[49] = row(perturb(math.texts["problem"][m]), "7")
    rows[99] = row(f"Answer with one letter.\n{perturb(MMLU[0]['question'])} (A) ATP", "B")
    rows[149] = row("Quiz", f"Item: {ARC_CHALLENGE[0]['question'].lower()} Carbon.")
    cleaned = tmp_path / "cleaned"
    write_jsonl(cleaned / "gsm8k" / "train.jsonl", rows)
    synth = [
        row("Tell me a story about a fox.", "Once upon a time..."),
        row(perturb(base[3]["instruction"]), base[3]["response"] + "."),  # a duplicate
        row("Solve: " + gsm8k.texts["question"][g].lower() + " Show work.", "ok"),
    ]
    write_parquet(cleaned / "synth" / "part_0.parquet", synth)
    return cleaned, {"gsm8k__train.jsonl": [10, 50, 100, 150], "synth__part_0.parquet": [3]}
