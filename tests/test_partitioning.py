"""Which cleaned files belong to which source, and partition set changes (pure, no Dagster)."""

from pathlib import Path

from hrm_assets.partitioning import files_of_source, partition_changes
from hrm_assets.sources import SOURCES


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


def test_files_of_source_on_missing_root_is_empty(tmp_path):
    assert files_of_source(SOURCES["gsm8k_train"], tmp_path / "missing") == []
