"""Which cleaned files belong to which source, and partition set changes (pure, no Dagster)."""

from pathlib import Path

import pytest

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.layout import LayoutError, safe_name, scan_cleaned_files
from hrm_assets.tokenization.partitioning import (
    files_by_source,
    files_of_source,
    partition_changes,
    partition_file,
    relative_paths_for,
)


def _touch(root: Path, relative: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")


def test_partition_changes_adds_present_and_removes_gone():
    assert partition_changes(["a", "b"], ["b", "c", "d"]) == (["c", "d"], ["a"])
    assert partition_changes([], []) == ([], [])


def test_files_of_source_assigns_each_file_to_its_source(tmp_path):
    for relative in [
        "gsm8k_train.jsonl",
        "math_train.jsonl",
        "dmmath/train-easy__algebra__linear_1d.parquet",
        "openmathinstruct2/cot.parquet",
        "openmathinstruct2/direct.parquet",
        "stray.jsonl",
    ]:
        _touch(tmp_path, relative)
    owned = {
        name: [item.safe_name for item in files_of_source(spec, tmp_path)]
        for name, spec in SOURCES.items()
    }
    assert owned["gsm8k_train"] == ["gsm8k_train.jsonl"]
    assert owned["math_train"] == ["math_train.jsonl"]
    assert owned["dmmath"] == ["dmmath__train-easy__algebra__linear_1d.parquet"]
    assert owned["openmathinstruct2"] == [
        "openmathinstruct2__cot.parquet",
        "openmathinstruct2__direct.parquet",
    ]
    every_owned = [key for keys in owned.values() for key in keys]
    assert "stray.jsonl" not in every_owned
    assert len(every_owned) == len(set(every_owned)), "a file belongs to two sources"


def test_files_by_source_agrees_with_files_of_source(tmp_path):
    for relative in [
        "gsm8k_train.jsonl",
        "dmmath/train-easy__algebra__linear_1d.parquet",
        "dmmath/wrong_format.jsonl",
        "flan/cot_fsopt_data__task1.parquet",
        "flan/nested/task2.parquet",
        "Platypus/arb_math.jsonl",
        "Platypus/arb_unknown.jsonl",
        "Platypus/scibench.jsonl",
        "tasksource/task.parquet",
        "openmathinstruct2/cot.parquet",
        "stray.jsonl",
        "stray/file.parquet",
    ]:
        _touch(tmp_path, relative)
    scanned = scan_cleaned_files(tmp_path)
    grouped = files_by_source(SOURCES.values(), scanned)
    assert grouped == {name: files_of_source(spec, tmp_path) for name, spec in SOURCES.items()}
    assert [item.relative for item in grouped["arb"]] == ["Platypus/arb_math.jsonl"]
    assert len(grouped["flan"]) == 2


def test_files_of_source_on_missing_root_is_empty(tmp_path):
    assert files_of_source(SOURCES["gsm8k_train"], tmp_path / "missing") == []


def test_relative_paths_for_lists_every_spelling_of_a_folder_name():
    assert relative_paths_for("a.jsonl") == ["a.jsonl"]
    assert relative_paths_for("a__b.jsonl") == ["a/b.jsonl", "a__b.jsonl"]
    assert relative_paths_for("a___b") == ["a/_b", "a_/b", "a___b"]
    assert relative_paths_for("__a") == ["__a"]  # a path part is never empty
    for name in ["x__y__z.parquet", "a____b", "d__train-easy__alg.parquet"]:
        spellings = relative_paths_for(name)
        assert all(safe_name(path) == name for path in spellings)
        assert name in spellings


def test_partition_file_finds_the_file_and_names_a_clash(tmp_path):
    dmmath = SOURCES["dmmath"]
    name = "dmmath__train-easy__algebra.parquet"
    assert partition_file(dmmath, tmp_path, name) is None
    _touch(tmp_path, "dmmath/train-easy__algebra.parquet")
    assert partition_file(dmmath, tmp_path, name).relative == "dmmath/train-easy__algebra.parquet"
    assert partition_file(SOURCES["gsm8k_train"], tmp_path, name) is None  # not its file
    _touch(tmp_path, "dmmath__train-easy/algebra.parquet")
    with pytest.raises(LayoutError, match="both map to the tokenized folder"):
        partition_file(dmmath, tmp_path, name)
