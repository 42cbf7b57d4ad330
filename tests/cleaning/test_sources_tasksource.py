"""tasksource against data_io's pipe_clustered/clean_tasksource.py, on synthetic Hub-schema rows.

Every fixture here is SYNTHETIC: records invented by this file in the schema of
``tasksource/tasksource-instruct-v0`` (columns ``inputs``, ``targets``, ``task``; Parquet shards
under ``data/``). Expected rows come from a restatement of data_io's script below, not from
the code under test.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets import demo
from hrm_assets.cleaning.clean import clean_source
from hrm_assets.cleaning.rows import iter_cleaned_rows
from hrm_assets.cleaning.sources import get_source
from hrm_assets.cleaning.sources.tasksource import (
    BAD_INPUTS,
    BAD_TARGETS,
    BAD_TASK,
    TASKS,
    tasks_without_rows,
)
from hrm_assets.common.layout import safe_name
from hrm_assets.sampling.prefix_config import load_prefix_rules, rule_for

REPO_ROOT = Path(__file__).resolve().parents[2]
HUB_DATA = Path("tasksource") / "tasksource-instruct-v0" / "data"


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


# -- data_io restated ---------------------------------------------------------------------------


def data_io_safe_filename(name: str) -> str:
    allowed = string.ascii_letters + string.digits + "_-. "
    return "".join(c if c in allowed else "_" for c in name)


def data_io_tasksource(records: list[dict], task_set: set[str]) -> dict[str, list[dict]]:
    """clean_tasksource.py restated: relative output path -> rows, for tasks with rows."""
    per_task: dict[str, list[dict]] = {}
    for item in records:
        if item["task"] not in task_set:
            continue
        per_task.setdefault(item["task"], []).append(
            {
                "instruction": item["inputs"],
                "response": item["targets"].removesuffix("."),
                "condition": "direct",
            }
        )
    return {
        f"tasksource/{data_io_safe_filename(task)}.parquet": [
            {key: row[key] for key in ("condition", "instruction", "response")} for row in rows
        ]
        for task, rows in per_task.items()
    }


def read_outputs(cleaned: Path) -> dict[str, list[dict]]:
    return {
        path.relative_to(cleaned).as_posix(): pq.read_table(path).to_pylist()
        for path in sorted((cleaned / "tasksource").glob("*.parquet"))
    }


def write_shard(folder: Path, name: str, records: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([("inputs", pa.string()), ("targets", pa.string()), ("task", pa.string())])
    pq.write_table(pa.Table.from_pylist(records, schema=schema), folder / name)


# -- synthetic fixture --------------------------------------------------------------------------

SELECTED = [
    "WANLI",  # plain name
    "recast/recast_ner",  # one slash
    "dynasent/dynabench.dynasent.r1.all/r1",  # dots and two slashes
    "commonsense_qa_2.0",  # a dot in the file name
    "nan-nli/joey234--nan-nli",  # dashes
    "MedQA-USMLE-4-options-hf",
]
UNSELECTED = [
    "social_i_qa",  # commented out in data_io's list
    "ScienceQA_text_only",  # commented out: already in Platypus
    "wanli",  # case matters
    "recast",  # a prefix of selected tasks is not selected
    "tweet_eval/stance_abortion",
]


def synthetic_records(count: int) -> list[dict]:
    """Interleaved tasks; targets with and without final dots; untouched whitespace."""
    targets = ["entailment", "neutral.", "B..", " contradiction .", ".", "", "3.5", "Ja. Nein."]
    records = []
    for index in range(count):
        tasks = SELECTED if index % 3 else UNSELECTED
        task = tasks[(index // 3 + index) % len(tasks)]
        records.append(
            {
                "inputs": f"  Frage {index}: ¿qué sigue? 次は何?\nOptions: A, B.  ",
                "targets": targets[index % len(targets)],
                "task": task,
            }
        )
    return records


def test_selected_tasks_become_one_file_each_with_data_io_rows(tmp_path):
    records = synthetic_records(150)
    data = tmp_path / "raw" / HUB_DATA
    # Written in reverse on purpose: shard names, not creation order, decide the row order.
    write_shard(data, "train-00001-of-00002.parquet", records[90:])
    write_shard(data, "train-00000-of-00002.parquet", records[:90])
    write_shard(data, "validation-00000-of-00001.parquet", records[:5])  # not read
    write_shard(data, "test-00000-of-00001.parquet", records[:5])  # not read
    report = clean_source(
        get_source("tasksource"), tmp_path / "cleaned", tmp_path / "raw", batch_size=16
    )
    expected = data_io_tasksource(records, set(TASKS))
    assert sorted(expected) == sorted(
        [
            "tasksource/MedQA-USMLE-4-options-hf.parquet",
            "tasksource/WANLI.parquet",
            "tasksource/commonsense_qa_2.0.parquet",
            "tasksource/dynasent_dynabench.dynasent.r1.all_r1.parquet",
            "tasksource/nan-nli_joey234--nan-nli.parquet",
            "tasksource/recast_recast_ner.parquet",
        ]
    )
    assert read_outputs(tmp_path / "cleaned") == expected
    assert {path: item.rows for path, item in report.files.items()} == {
        path: len(rows) for path, rows in expected.items()
    }
    assert report.records_read == 150
    assert report.rows_written == 100  # the 50 records of unselected tasks give no row
    assert report.skipped == {}
    assert report.parts == ["default"]
    assert report.condition_counts == {"direct": 100}
    responses = {row["response"] for rows in expected.values() for row in rows}
    assert {"neutral", "B.", " contradiction ", "", "3.5", "Ja. Nein"} <= responses
    # Cleaned files read back as valid rows, and the tokenizer's prefix rule applies.
    rules = load_prefix_rules(REPO_ROOT / "prefix_config.yaml")
    for relative in expected:
        assert len(list(iter_cleaned_rows(tmp_path / "cleaned" / relative))) > 0
        assert safe_name(relative).startswith("tasksource__")
        assert rule_for(safe_name(relative), rules).max_per_file == 10_000


def test_parquet_file_is_data_ios_write_whatever_the_batch_size(tmp_path):
    records = [{"inputs": f"q{i}", "targets": "yes.", "task": "WANLI"} for i in range(50)]
    write_shard(tmp_path / "raw" / HUB_DATA, "train-00000-of-00001.parquet", records)
    clean_source(get_source("tasksource"), tmp_path / "cleaned", tmp_path / "raw", batch_size=20)
    path = tmp_path / "cleaned" / "tasksource" / "WANLI.parquet"
    parquet = pq.ParquetFile(path)
    # data_io's dict order, and its one pq.write_table call: one row group, not one per batch.
    assert parquet.schema_arrow.names == ["instruction", "response", "condition"]
    assert all(str(t) == "string" for t in parquet.schema_arrow.types)
    assert parquet.metadata.num_rows == 50
    assert parquet.metadata.num_row_groups == 1
    data_io = {"instruction": [f"q{i}" for i in range(50)], "response": ["yes"] * 50}
    data_io["condition"] = ["direct"] * 50
    expected = tmp_path / "data_io.parquet"
    pq.write_table(pa.Table.from_pydict(data_io), expected)
    assert path.read_bytes() == expected.read_bytes()


def test_malformed_records_are_skipped_and_reported(tmp_path):
    good = [
        {"inputs": "p1", "targets": "yes.", "task": "WANLI"},
        {"inputs": "p2", "targets": "no", "task": "fracas"},
    ]
    bad = [
        {"inputs": "p3", "targets": None, "task": "WANLI"},  # data_io: AttributeError
        {"inputs": None, "targets": "no", "task": "fracas"},  # data_io: a null instruction
        {"inputs": "p5", "targets": "no", "task": None},  # data_io: silently not selected
        {"inputs": None, "targets": None, "task": "social_i_qa"},  # not selected: no complaint
    ]
    records = [good[0], *bad, good[1]]
    write_shard(tmp_path / "raw" / HUB_DATA, "train-00000-of-00001.parquet", records)
    report = clean_source(get_source("tasksource"), tmp_path / "cleaned", tmp_path / "raw")
    assert read_outputs(tmp_path / "cleaned") == data_io_tasksource(good, set(TASKS))
    assert report.records_read == 6
    assert {reason: entry.count for reason, entry in report.skipped.items()} == {
        BAD_TARGETS: 1,
        BAD_INPUTS: 1,
        BAD_TASK: 1,
    }
    examples = {reason: entry.examples[0] for reason, entry in report.skipped.items()}
    assert (examples[BAD_TARGETS].raw, examples[BAD_TARGETS].detail) == (
        "default#2",
        "WANLI: targets is NoneType",
    )
    assert examples[BAD_TARGETS].file == "tasksource/WANLI.parquet"
    assert (examples[BAD_INPUTS].raw, examples[BAD_INPUTS].file) == (
        "default#3",
        "tasksource/fracas.parquet",
    )
    assert (examples[BAD_TASK].raw, examples[BAD_TASK].file) == ("default#4", "tasksource/")


def test_record_without_task_field_is_reported(tmp_path):
    data = tmp_path / "raw" / HUB_DATA
    data.mkdir(parents=True)
    lines = [{"inputs": "a", "targets": "b.", "task": "WANLI"}, {"inputs": "c", "targets": "d"}]
    # JSONL shards let a record lack a column; datasets fills it with null, a non-string task.
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    report = clean_source(get_source("tasksource"), tmp_path / "cleaned", tmp_path / "raw")
    assert read_outputs(tmp_path / "cleaned") == {
        "tasksource/WANLI.parquet": [{"condition": "direct", "instruction": "a", "response": "b"}]
    }
    assert report.records_read == 2
    [(reason, entry)] = report.skipped.items()
    assert (reason, entry.count) == (BAD_TASK, 1)
    assert entry.examples[0].as_dict() == {
        "file": "tasksource/",
        "row": None,
        "raw": "default#2",
        "detail": "task is NoneType",
    }


def test_missing_fields_raise_key_error_for_the_framework_to_count_as_malformed(tmp_path):
    spec = get_source("tasksource")
    with pytest.raises(KeyError):
        spec.output_of({"inputs": "a", "targets": "b"}, "default")
    with pytest.raises(KeyError):
        list(spec.clean({"inputs": "a", "targets": "b"}, "default"))
    with pytest.raises(KeyError):
        list(spec.clean({"task": "WANLI", "inputs": "a"}, "default"))
    assert list(spec.clean({"task": "mmlu", "inputs": None}, "default")) == []  # not selected


def test_task_table_matches_data_io_file_names():
    assert len(TASKS) == len(set(TASKS)) == 194
    names = [data_io_safe_filename(task) for task in TASKS]
    assert len(set(names)) == 194  # no two tasks overwrite each other's file
    spec = get_source("tasksource")
    for task, name in zip(TASKS, names, strict=True):
        assert spec.output_of({"task": task}, "default") == f"tasksource/{name}.parquet"
    assert "social_i_qa" not in TASKS and "ScienceQA_text_only" not in TASKS
    assert "tweet_eval/emoji" in TASKS and "lexical_relation_classification/K&H+N" not in TASKS


def test_tasks_without_rows_lists_the_selected_tasks_that_wrote_nothing():
    written = ["tasksource/WANLI.parquet", "tasksource/recast_recast_ner.parquet"]
    missing = tasks_without_rows(written)
    assert len(missing) == 192
    assert missing[0] == "recast/recast_verbnet" and "WANLI" not in missing
    assert tasks_without_rows([]) == list(TASKS)


def test_hub_code_path_streams_the_default_config(monkeypatch, tmp_path):
    import datasets

    records = [{"inputs": "x", "targets": "y.", "task": "hlgd"}]
    write_shard(tmp_path / "hub", "train-00000-of-00001.parquet", records)
    calls = []
    real_load = datasets.load_dataset

    def fake_load(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        files = [str(tmp_path / "hub" / "train-00000-of-00001.parquet")]
        return real_load("parquet", data_files={"train": files}, split="train", streaming=True)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    clean_source(get_source("tasksource"), tmp_path / "cleaned", raw_root=None)
    assert calls == [
        ("tasksource/tasksource-instruct-v0", "default", {"split": "train", "streaming": True})
    ]
    assert read_outputs(tmp_path / "cleaned") == data_io_tasksource(records, set(TASKS))


def test_missing_raw_files_name_the_data_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="tasksource-instruct-v0/data"):
        clean_source(get_source("tasksource"), tmp_path / "cleaned", tmp_path)


def test_demo_cleans_as_data_io_would(tmp_path):
    spec = get_source("tasksource")
    [shard] = demo.write_demo_source(spec, tmp_path / "raw")
    assert shard == tmp_path / "raw" / HUB_DATA / "train-00000-of-00001.parquet"
    records = pq.read_table(shard).to_pylist()
    report = clean_source(spec, tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_tasksource(records, set(TASKS))
    assert read_outputs(tmp_path / "cleaned") == expected
    assert report.skipped == {}
    assert report.rows_written < report.records_read  # the demo has unselected tasks too
    assert any(r["targets"].endswith("..") for r in records)
