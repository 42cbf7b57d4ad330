"""Issue 6 through the Dagster assets: bad input fails the step (the run reports a failure, the
process does not crash), the message names the file, row and field, earlier good outputs stay
byte for byte, and ``manifest_valid`` catches what a skip cannot see.

Each test builds the assets it needs over a temporary data root and a temporary Dagster
instance (``hrm_assets.definitions`` reads the environment at import, so it is not used)."""

# ruff: noqa: F401, F811  (the shared fixtures are imported by name)
from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from support.dagster_instance import data_paths, failure_text, instance
from support.tokenized_trees import MIXED, MIXED_RULES, tree_bytes, write_rules, write_tokenized
from support.tokenizer_reference import gsm8k_rows, write_jsonl

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.manifest import verify_folder
from hrm_assets.defs.cleaned.assets import build_cleaned_asset
from hrm_assets.defs.sampled.assets import build_sampled_asset
from hrm_assets.defs.sampled.checks import build_sampled_manifest_check
from hrm_assets.defs.tokenized.assets import build_tokenized_asset
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.sampling.training_nodes import TrainingNode

GSM8K = SOURCES["gsm8k_train"]
PARTITION = "gsm8k_train.jsonl"


def check_evaluations(result) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


# --------------------------------------------------------------------------- tokenized


def materialize_tokenized(instance, data_paths, spec=GSM8K, partition=PARTITION):
    return dg.materialize(
        [build_tokenized_asset(spec)],
        instance=instance,
        partition_key=partition,
        resources={"data_paths": data_paths},
        raise_on_error=False,
    )


def test_tokenized_bad_row_fails_the_step_and_keeps_the_folder(instance, data_paths, real_raw):
    instance.add_dynamic_partitions(TOKENIZED_PARTITIONS[GSM8K.name].name, [PARTITION])
    cleaned = data_paths.cleaned_root / PARTITION
    write_jsonl(cleaned, gsm8k_rows(real_raw, "train", 40))
    first = materialize_tokenized(instance, data_paths)
    assert first.success
    assert check_evaluations(first)["manifest_valid"].passed
    before = tree_bytes(data_paths.tokenized_root)

    rows = gsm8k_rows(real_raw, "train", 40)
    rows[6]["condition"] = "cot,sarcastic"
    write_jsonl(cleaned, rows)
    second = materialize_tokenized(instance, data_paths)
    assert not second.success
    text = failure_text(second)
    assert f"{cleaned}: row 7, field 'condition': unknown tag" in text
    assert "sarcastic" in text and "known tags: cot, direct, noisy, synth" in text
    assert tree_bytes(data_paths.tokenized_root) == before


def test_tokenized_two_files_one_safe_name_fail_the_step(instance, data_paths):
    dmmath, partition = SOURCES["dmmath"], "dmmath__train-easy__algebra.parquet"
    instance.add_dynamic_partitions(TOKENIZED_PARTITIONS[dmmath.name].name, [partition])
    for relative in ["dmmath/train-easy__algebra.parquet", "dmmath__train-easy/algebra.parquet"]:
        (data_paths.cleaned_root / relative).parent.mkdir(parents=True, exist_ok=True)
        (data_paths.cleaned_root / relative).write_bytes(b"PAR1")
    result = materialize_tokenized(instance, data_paths, spec=dmmath, partition=partition)
    assert not result.success
    assert f"both map to the tokenized folder {partition!r}" in failure_text(result)
    assert not (data_paths.tokenized_root / partition).exists()


def test_tokenized_partition_is_not_blocked_by_a_clash_elsewhere(instance, data_paths, real_raw):
    instance.add_dynamic_partitions(TOKENIZED_PARTITIONS[GSM8K.name].name, [PARTITION])
    write_jsonl(data_paths.cleaned_root / PARTITION, gsm8k_rows(real_raw, "train", 5))
    write_jsonl(data_paths.cleaned_root / "x" / "y.jsonl", gsm8k_rows(real_raw, "test", 2))
    write_jsonl(data_paths.cleaned_root / "x__y.jsonl", gsm8k_rows(real_raw, "test", 2))
    assert materialize_tokenized(instance, data_paths).success
    assert (data_paths.tokenized_root / PARTITION / "tokens.npy").is_file()


def test_manifest_check_catches_corruption_a_skip_cannot_see(instance, data_paths, real_raw):
    instance.add_dynamic_partitions(TOKENIZED_PARTITIONS[GSM8K.name].name, [PARTITION])
    write_jsonl(data_paths.cleaned_root / PARTITION, gsm8k_rows(real_raw, "train", 40))
    assert materialize_tokenized(instance, data_paths).success
    tokens = data_paths.tokenized_root / PARTITION / "tokens.npy"
    data = bytearray(tokens.read_bytes())
    data[200] ^= 0x01  # same size: the incremental skip (sizes only) still reuses the folder
    tokens.write_bytes(bytes(data))

    result = materialize_tokenized(instance, data_paths)
    # The folder is unchanged as far as a skip can see: its record stands, and the failing
    # check is recorded against it.
    assert result.asset_materializations_for_node("tokenized_gsm8k_train") == []
    evaluation = check_evaluations(result)["manifest_valid"]
    assert evaluation.partition == PARTITION
    assert not evaluation.passed
    problems = evaluation.metadata["problems"].value
    assert len(problems) == 1 and f"{tokens}: SHA-256" in problems[0]
    # The check is blocking: the step fails, so nothing downstream runs on a corrupt folder.
    assert not result.success
    assert check_evaluations(result)["arrays_consistent"].passed


# --------------------------------------------------------------------------- sampled


NODE = "reliability-node"


def materialize_sampled(instance, data_paths, output: Path, **config):
    node = TrainingNode(name=NODE, output_path=str(output))
    return dg.materialize(
        [build_sampled_asset(node), build_sampled_manifest_check(node)],
        instance=instance,
        resources={"data_paths": data_paths},
        run_config={"ops": {f"sampled__{NODE.replace('-', '_')}": {"config": config}}},
        raise_on_error=False,
    )


SAMPLED_BREAKS = {
    "negative-repeat": "rule 5 (prefix 'gsm8k'): repeat: must be at least 1 (got -1)",
    "unknown-key": "rule 0 (prefix 'SYNTH__'): maxperfile: Extra inputs are not permitted",
    "epochs-zero": "epochs: Input should be greater than or equal to 1",
    "broken-task": "span arrays have different lengths",
}


@pytest.mark.parametrize("change", sorted(SAMPLED_BREAKS))
def test_sampled_bad_input_fails_the_step_and_keeps_the_epochs(
    instance, data_paths, tmp_path, change
):
    message = SAMPLED_BREAKS[change]
    import numpy as np

    write_tokenized(data_paths.tokenized_root, MIXED)
    output = tmp_path / "shm" / "sampled"
    first = materialize_sampled(instance, data_paths, output, epochs=2)
    assert first.success, failure_text(first)
    assert check_evaluations(first)["manifest_valid"].passed
    before = tree_bytes(output)

    rules = Path(data_paths.prefix_config_path)
    config = {"epochs": 3, "seed": 1}
    if change == "negative-repeat":
        write_rules(rules, [*MIXED_RULES[:5], {**MIXED_RULES[5], "repeat": -1}])
    elif change == "unknown-key":
        write_rules(rules, [{"prefix": "SYNTH__", "maxperfile": 3}])
    elif change == "epochs-zero":
        config = {"epochs": 0}
    elif change == "broken-task":
        task = data_paths.tokenized_root / "gsm8k_train.jsonl"
        np.save(task / "resp_len.npy", np.load(task / "resp_len.npy")[:-1])
    result = materialize_sampled(instance, data_paths, output, **config)
    assert not result.success
    text = failure_text(result)
    assert message in text, text
    if change in ("negative-repeat", "unknown-key"):
        assert str(rules) in text
    assert tree_bytes(output) == before
    assert verify_folder(output).ok


# --------------------------------------------------------------------------- cleaned


def test_cleaned_malformed_raw_fails_the_step_and_keeps_cleaned_files(instance, data_paths):
    raw = Path(data_paths.raw_root) / "openai" / "gsm8k" / "main" / "train.jsonl"
    raw.parent.mkdir(parents=True)
    records = [{"question": f"How many {i}?", "answer": f"Count.\n#### {i}"} for i in range(6)]
    raw.write_text("".join(json.dumps(r) + "\n" for r in records))
    asset = build_cleaned_asset(GSM8K)

    def run():
        return dg.materialize(
            [asset], instance=instance, resources={"data_paths": data_paths},
            raise_on_error=False,
        )  # fmt: skip

    assert run().success
    cleaned = data_paths.cleaned_root / "gsm8k_train.jsonl"
    before = cleaned.read_bytes()
    assert before.count(b"\n") == 6

    # Records with null or non-string fields, or no answer: counted under a reason, not fatal.
    bad_records = [{"question": None, "answer": "x\n#### 1"}, {"question": "q", "answer": 5},
                   {"question": "q"}]  # fmt: skip
    raw.write_text("".join(json.dumps(r) + "\n" for r in records + bad_records))
    counted = run()
    assert counted.success
    metadata = counted.asset_materializations_for_node("cleaned__gsm8k_train")[0].metadata
    assert metadata["rows_skipped"].value == 3 and metadata["rows_written"].value == 6
    assert cleaned.read_bytes() == before

    # A line that is not JSON at all: the step fails, the cleaned file is untouched.
    raw.write_text(raw.read_text() + '{"question": "q", "answer": \n')
    failed = run()
    assert not failed.success
    assert "JSON parse error" in failure_text(failed)
    assert cleaned.read_bytes() == before
    assert sorted(p.name for p in data_paths.cleaned_root.iterdir()) == [
        ".hrm-build", "gsm8k_train.jsonl",
    ]  # fmt: skip
