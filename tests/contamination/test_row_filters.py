"""The sampler's ``decontaminate`` and ``dedup`` options (hrm_assets/sampling/row_filters.py):
rows hit by an evaluation set, and every copy of a row after the first, left out and counted
like every other drop (task reports, analytics report, data card); with both off the epochs
are byte for byte those sampled from folders without sidecars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from contamination.test_sidecar import saved_eval_sets, tokenize
from hrm_assets.contamination.sidecar import OBSERVE_ENV, read_sidecar
from hrm_assets.sampling.analytics import render_report
from hrm_assets.sampling.config import SamplingError
from hrm_assets.sampling.sampler import make_config, sample_tokenized
from hrm_assets.sampling.training_nodes import TrainingNode
from hrm_assets.tokenization.tokenize import write_tokenizer_info

RULES = [{"prefix": "gsm8k__"}, {"prefix": "synth__"}]
GSM8K, SYNTH = "gsm8k__train.jsonl", "synth__part_0.parquet"


@pytest.fixture
def roots(tmp_path, monkeypatch, corpus, eval_sets, small_tokenizer_path):
    """Tokenized roots of the planted corpus (a row of gsm8k repeated in gsm8k and in synth):
    with sidecars, and without."""
    cleaned, _ = corpus
    train = cleaned / "gsm8k" / "train.jsonl"
    lines = train.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    again = {**first, "instruction": first["instruction"].upper()}
    train.write_text("\n".join([*lines, json.dumps(again)]) + "\n", encoding="utf-8")
    return tokenized_with_and_without_sidecars(
        cleaned, tmp_path, monkeypatch, eval_sets, small_tokenizer_path, RULES
    )


def tokenized_with_and_without_sidecars(
    cleaned: Path, tmp_path: Path, monkeypatch, eval_sets, tokenizer: Path, rules: list[dict]
) -> tuple[Path, Path, Path]:
    """``cleaned`` tokenized twice under ``tmp_path``, with the passes' sidecars (against
    ``eval_sets``) and without, each with its tokenizer info; and ``rules`` as a
    prefix_config.yaml: (scanned root, plain root, rules file)."""
    monkeypatch.setenv("HRM_DATA_ROOT", str(tmp_path / "data"))
    saved_eval_sets(tmp_path / "data", eval_sets)
    scanned, plain = tmp_path / "scanned", tmp_path / "plain"
    tokenize(cleaned, scanned, tokenizer)
    monkeypatch.setenv(OBSERVE_ENV, "0")
    tokenize(cleaned, plain, tokenizer)
    monkeypatch.delenv(OBSERVE_ENV)
    rules_file = tmp_path / "prefix_config.yaml"
    rules_file.write_text(yaml.safe_dump(rules), encoding="utf-8")
    for root in (scanned, plain):
        write_tokenizer_info(root, tokenizer)
    return scanned, plain, rules_file


def sample(tokenized: Path, output: Path, rules: Path, **options):
    config = make_config(
        tokenized_path=tokenized,
        output_path=output,
        prefix_config_path=rules,
        epochs=2,
        seed=7,
        **options,
    )
    return sample_tokenized(config)


def epoch_bytes(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*.npy"))
        if p.parent.name.startswith("epoch_") or p.name == "tokens.npy"
    }


def stats(result) -> dict[str, object]:
    return {task.name: task.stats for task in result.tasks}


def test_both_off_is_the_sampling_of_folders_without_sidecars(tmp_path, roots):
    scanned, plain, rules = roots
    sample(scanned, tmp_path / "a", rules)
    sample(plain, tmp_path / "b", rules)
    assert epoch_bytes(tmp_path / "a") == epoch_bytes(tmp_path / "b") != {}


def test_contaminated_and_repeated_rows_are_left_out_and_counted(tmp_path, roots):
    scanned, plain, rules = roots
    hits = {name: {hit[0] for hit in read_sidecar(scanned / name).hits} for name in (GSM8K, SYNTH)}
    off_result = sample(scanned, tmp_path / "off", rules)
    base = stats(off_result)
    decontaminated = sample(scanned, tmp_path / "decon", rules, decontaminate=True)
    for name, task in stats(decontaminated).items():
        assert task.rows_dropped_contaminated == len(hits[name]) > 0
        assert task.rows == base[name].rows - len(hits[name])
        assert task.rows_dropped_duplicate == 0
    deduped = stats(sample(scanned, tmp_path / "dedup", rules, dedup=True))
    # The repeat of gsm8k's first row inside gsm8k and its copy in synth.
    assert {name: task.rows_dropped_duplicate for name, task in deduped.items()} == {
        GSM8K: 1,
        SYNTH: 1,
    }
    both_result = sample(scanned, tmp_path / "both", rules, decontaminate=True, dedup=True)
    both = stats(both_result)
    assert both[GSM8K].rows_dropped_contaminated == len(hits[GSM8K])
    assert both[GSM8K].rows == base[GSM8K].rows - len(hits[GSM8K]) - 1

    card = json.loads((tmp_path / "both" / "datacard.json").read_bytes())
    assert card["sampling"]["decontaminate"] is True and card["sampling"]["dedup"] is True
    assert card["totals"]["rows_dropped_contaminated"] == len(hits[GSM8K]) + len(hits[SYNTH])
    assert card["totals"]["rows_dropped_duplicate"] == both[SYNTH].rows_dropped_duplicate + 1
    note = f"**Left out:** {card['totals']['rows_dropped_contaminated']} rows sharing"
    assert note in render_report(both_result)
    assert "**Left out:**" not in render_report(off_result)
    assert epoch_bytes(tmp_path / "both") != epoch_bytes(tmp_path / "off")

    with pytest.raises(SamplingError, match="no contamination sidecars"):
        sample(plain, tmp_path / "refused", rules, dedup=True)


def test_the_options_are_keys_of_training_nodes():
    node = TrainingNode(name="local", decontaminate=True, dedup=False)
    assert (node.decontaminate, node.dedup) == (True, False)
