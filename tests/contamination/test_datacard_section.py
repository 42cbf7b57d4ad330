"""The contamination and duplicates section of a sampled folder's data card: tokenized folders
with sidecars (evaluation questions planted, a row repeated across two sources and within one)
sampled; the card counts the hits per source and evaluation set and the duplicates per source
pair, DATACARD.md shows them, and hrm-verify accepts the folder. A tokenized root without
sidecars gives a card without the section."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from contamination.test_sidecar import saved_eval_sets, tokenize
from hrm_assets.contamination.datacard_section import contamination_section
from hrm_assets.contamination.sidecar import OBSERVE_ENV, read_sidecar
from hrm_assets.sampling.datacard.verification import verify_sampled_folder
from hrm_assets.sampling.sampler import make_config, sample_tokenized
from hrm_assets.tokenization.tokenize import write_tokenizer_info

RULES = [{"prefix": "gsm8k__"}, {"prefix": "synth__"}]


def sample(tokenized: Path, output: Path, rules: Path, tokenizer: Path) -> dict:
    write_tokenizer_info(tokenized, tokenizer)
    config = make_config(
        tokenized_path=tokenized, output_path=output, prefix_config_path=rules, epochs=1, seed=3
    )
    sample_tokenized(config)
    return json.loads((output / "datacard.json").read_bytes())


def test_the_card_counts_hits_per_source_and_duplicates_per_pair(
    tmp_path, monkeypatch, corpus, eval_sets, small_tokenizer_path
):
    cleaned, planted = corpus
    data_root = tmp_path / "data"
    monkeypatch.setenv("HRM_DATA_ROOT", str(data_root))
    saved_eval_sets(data_root, eval_sets)
    # A second copy of a gsm8k row inside gsm8k's own file (a repeat within the source).
    train = cleaned / "gsm8k" / "train.jsonl"
    lines = train.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    again = {**first, "instruction": first["instruction"].upper(), "response": first["response"]}
    train.write_text("\n".join([*lines, json.dumps(again)]) + "\n", encoding="utf-8")
    tokenized = tmp_path / "tokenized"
    tokenize(cleaned, tokenized, small_tokenizer_path)
    rules = tmp_path / "prefix_config.yaml"
    rules.write_text(yaml.safe_dump(RULES), encoding="utf-8")

    card = sample(tokenized, tmp_path / "sampled", rules, small_tokenizer_path)
    section = card["contamination"]
    by_source = {source["name"]: source for source in section["sources"]}
    gsm8k = read_sidecar(tokenized / "gsm8k__train.jsonl")
    # No registered source claims these task names: each counts as a source of its own.
    by_source["gsm8k"], by_source["synth"] = (
        by_source.pop("gsm8k__train.jsonl"),
        by_source.pop("synth__part_0.parquet"),
    )
    assert not by_source.keys() - {"gsm8k", "synth"}
    assert by_source["gsm8k"]["rows"] == by_source["gsm8k"]["rows_scanned"] == 201
    assert by_source["gsm8k"]["rows_hit"] == len(gsm8k.hits) >= len(planted["gsm8k__train.jsonl"])
    for eval_set in ("gsm8k_test", "math_test", "mmlu_test", "arc_challenge_test"):
        assert by_source["gsm8k"]["hits_by_set"][eval_set] >= 1
    assert by_source["synth"]["rows_hit"] == 1
    assert by_source["synth"]["hits_by_set"] == {"gsm8k_test": 1}
    gsm8k_task, synth_task = "gsm8k__train.jsonl", "synth__part_0.parquet"
    assert section["duplicate_pairs"] == [
        {"first": gsm8k_task, "later": gsm8k_task, "rows": 1},
        {"first": gsm8k_task, "later": synth_task, "rows": 1},
    ]
    assert section["tasks_without_sidecars"] == 0
    assert section["n"] == [13]

    markdown = (tmp_path / "sampled" / "DATACARD.md").read_text(encoding="utf-8")
    assert "## Contamination and duplicates" in markdown
    assert "| First copy in | Repeated in | Rows |" in markdown
    assert f"| {gsm8k_task} | 201 | 201 | {len(gsm8k.hits)} |" in markdown
    report = verify_sampled_folder(tmp_path / "sampled")
    assert report.ok, report.problems

    # Without sidecars: no section, and the helper says so.
    monkeypatch.setenv(OBSERVE_ENV, "0")
    plain = tmp_path / "plain"
    tokenize(cleaned, plain, small_tokenizer_path)
    assert contamination_section(plain, ["gsm8k__train.jsonl"], {}) is None
    plain_card = sample(plain, tmp_path / "sampled_plain", rules, small_tokenizer_path)
    assert "contamination" not in plain_card
