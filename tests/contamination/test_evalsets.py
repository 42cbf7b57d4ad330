"""Evaluation sets: the built-in ones loaded with ``datasets`` from a mirror laid out like the
Hub (real GSM8K and MATH test rows, SYNTHETIC MMLU and ARC), sets declared in YAML, saved and
read back, and bad records named."""

from __future__ import annotations

import json

import pytest

from contamination.eval_fixtures import ARC_CHALLENGE, MMLU, write_parquet
from hrm_assets.contamination.evalsets import (
    BUILT_IN,
    EvalSetError,
    EvalSetSpec,
    eval_set_specs,
    load_eval_set,
    read_eval_set,
    write_eval_set,
)


def test_built_in_sets_load_from_the_mirror(eval_sets, real_raw):
    sizes = {loaded.spec.name: len(loaded) for loaded in eval_sets}
    assert sizes == {
        "gsm8k_test": 1319,
        "math_test": 5000,
        "mmlu_test": len(MMLU),
        "arc_easy_test": 1,
        "arc_challenge_test": 1,
    }
    gsm8k = eval_sets[0]
    first = json.loads((real_raw / "gsm8k" / "test.jsonl").read_text().splitlines()[0])
    assert gsm8k.texts["question"][0] == first["question"]
    assert gsm8k.texts["answer"][0] == first["answer"]
    assert gsm8k.shown(0) == first["question"]
    math = eval_sets[1]
    assert math.configs[0] == "algebra" and math.configs[-1] == "precalculus"
    assert eval_sets[4].texts["question"] == [ARC_CHALLENGE[0]["question"]]


def test_saved_set_reads_back(tmp_path, eval_sets):
    path = tmp_path / "eval" / "math_test.jsonl"
    digest = write_eval_set(eval_sets[1], path)
    assert len(digest) == 64
    again = read_eval_set(eval_sets[1].spec, path)
    assert again.texts == eval_sets[1].texts and again.configs == eval_sets[1].configs
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]
    assert write_eval_set(again, path) == digest


def test_sets_declared_in_yaml(tmp_path, monkeypatch):
    path = tmp_path / "eval_sets.yaml"
    path.write_text(
        "eval_sets:\n"
        "  - name: theoremqa_test\n"
        "    hub_id: TIGER-Lab/TheoremQA\n"
        "    fields: [Question]\n"
        "    configs: [default]\n"
    )
    monkeypatch.setenv("HRM_EVAL_SETS_YAML", str(path))
    specs = eval_set_specs()
    assert specs[: len(BUILT_IN)] == list(BUILT_IN)
    assert specs[-1] == EvalSetSpec(
        "theoremqa_test", "TIGER-Lab/TheoremQA", ("Question",), configs=("default",)
    )
    monkeypatch.setenv("HRM_EVAL_SETS_YAML", "")
    assert eval_set_specs() == list(BUILT_IN)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("eval_sets: {}", "expected a mapping with an `eval_sets:` list"),
        ("eval_sets:\n  - name: x\n    hub_id: a/b\n", "eval_sets[1]: `fields` is required"),
        ("eval_sets:\n  - {name: x, hub_id: a/b, fields: [q], splt: test}", "unknown key"),
        ("eval_sets:\n  - {name: X-1, hub_id: a/b, fields: [q]}", "lowercase letters"),
        ("eval_sets:\n  - {name: x, hub_id: a/b, fields: []}", "at least one field"),
        ("eval_sets:\n  - {name: gsm8k_test, hub_id: a/b, fields: [q]}", "declared twice"),
    ],
)
def test_declared_set_errors_name_the_entry(tmp_path, text, message):
    path = tmp_path / "eval_sets.yaml"
    path.write_text(text)
    with pytest.raises(EvalSetError, match=message.replace("[", r"\[").replace("]", r"\]")):
        eval_set_specs(path)


def test_declared_set_loads_and_a_bad_record_is_named(tmp_path):
    records = [{"Question": "What is the largest prime below one hundred and ten, exactly?"}]
    write_parquet(tmp_path / "TIGER-Lab" / "TheoremQA" / "default" / "test.parquet", records)
    spec = EvalSetSpec("theoremqa_test", "TIGER-Lab/TheoremQA", ("Question",))
    loaded = load_eval_set(spec, tmp_path)  # configs discovered from the mirror's folders
    assert loaded.configs == ["default"] and loaded.texts["Question"] == [records[0]["Question"]]
    bad = EvalSetSpec("theoremqa_test", "TIGER-Lab/TheoremQA", ("Question", "Answer"))
    with pytest.raises(EvalSetError, match=r"config default, row 1, field 'Answer'.*missing"):
        load_eval_set(bad, tmp_path)
    with pytest.raises(FileNotFoundError, match="no config folder with validation files"):
        load_eval_set(EvalSetSpec("x", "TIGER-Lab/TheoremQA", ("Q",), split="validation"), tmp_path)
