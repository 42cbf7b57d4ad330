"""The files of one part read in parallel by the columnar engine (a unit per file at two
threads, the later files' rows kept in their own store until the part's outputs are written
in file order) against one thread and the row path: same bytes, same report, with the skip
examples and the rows ``check_row`` rejects in a part's later file numbered over the part.

Every fixture is SYNTHETIC: FLAN (outputs grouped per task), OpenMathInstruct-2 (two static
outputs with open streaming writers) and GSM8K (one JSONL output), each part two files, the
first without a record to skip so that every example comes from the second.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning import columnar, columnar_clean
from hrm_assets.cleaning.clean import RawReadError, clean_source
from hrm_assets.cleaning.columnar_outputs import OutputUnit
from hrm_assets.cleaning.sources import get_source
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path, flan_records

FLAN_SUBSETS = ("flan_fsopt_data", "niv2_zsopt_data", "cot_fsopt_data")


@pytest.fixture
def joined_parts(monkeypatch) -> list[int]:
    """Small batches, files read in parallel on two threads whatever the source's outputs and
    parts (the engine keeps FLAN's and GSM8K's serial, but a routed source's first file may
    write through too), and the number of later-file units joined by each part's finish (at
    two threads a part of two files has one)."""
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    monkeypatch.setattr(
        columnar_clean, "files_in_parallel", lambda spec, parts, threads: threads > 1
    )
    joined: list[int] = []
    finish = OutputUnit.finish

    def counted(self, threads=1, later=()):
        joined.append(len(later))
        return finish(self, threads, later)

    monkeypatch.setattr(OutputUnit, "finish", counted)
    return joined


def write_flan_parts(raw: Path, rng: random.Random, per_file: int = 2000) -> None:
    for subset in FLAN_SUBSETS:
        for shard in range(2):
            records = flan_records(rng, per_file, tasks=30)
            if shard == 0:  # the first file skips nothing: every example is in the second
                records = [r for r in records if None not in r.values()]
            path = raw / "FLAN" / subset / f"part.{shard}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(records), path, row_group_size=700)


def write_openmathinstruct2_parts(raw: Path, rng: random.Random, rows: int = 1800) -> None:
    folder = raw / "nvidia" / "OpenMathInstruct-2" / "data"
    folder.mkdir(parents=True)
    sources = ["augmented_math", "augmented_gsm8k", "math", "gsm8k"]
    for shard in range(2):
        records = []
        for i in range(rows):
            record = {
                "problem": f"Problem {shard}.{i}: what is {i} + {i}? ü",
                "generated_solution": f"It is $\\boxed{{{2 * i}}}$.\n",
                "expected_answer": str(2 * i),
                "problem_source": rng.choice(sources),
            }
            if shard == 1 and rng.random() < 0.02:  # rows check_row rejects, named by number
                record[rng.choice(["problem", "generated_solution"])] = None
            records.append(record)
        path = folder / f"train-{shard:05d}-of-00002.parquet"
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=900)


def write_gsm8k_parts(raw: Path, rng: random.Random, rows: int = 1500) -> None:
    folder = raw / "openai" / "gsm8k" / "main"
    folder.mkdir(parents=True)
    for shard in range(2):
        records = []
        for i in range(rows):
            answer = rng.choice(["x = 3\n#### 3", " two \n####  4\u3000"])
            if shard == 1 and rng.random() < 0.02:  # skipped, located over the part
                answer = rng.choice(["no separator", "#### a #### b"])
            records.append({"question": f"Question {shard}.{i}?\xa0", "answer": answer})
        path = folder / f"train-{shard:05d}-of-00002.parquet"
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=800)


def _first_file_rows(raw: Path, pattern: str) -> int:
    return pq.ParquetFile(sorted(raw.rglob(pattern))[0]).metadata.num_rows


@pytest.mark.parametrize("budget", [columnar_clean.DEFAULT_BUFFER_BYTES, 40_000])
def test_flan_part_files_in_parallel(tmp_path, monkeypatch, joined_parts, budget):
    # 40 KB: the later files' stores spill, and so do the first files'.
    monkeypatch.setattr(columnar_clean, "DEFAULT_BUFFER_BYTES", budget)
    raw = tmp_path / "raw"
    write_flan_parts(raw, random.Random(5))
    one = cleaned_by_engine_and_row_path(get_source("flan"), raw, tmp_path)
    assert joined_parts.count(1) == len(FLAN_SUBSETS)  # the two-thread run joined its parts
    first_rows = {
        subset: _first_file_rows(raw / "FLAN" / subset, "part.0.parquet") for subset in FLAN_SUBSETS
    }
    examples = [e for entry in one.skipped.values() for e in entry.examples]
    assert examples
    for example in examples:
        part, number = example.raw.split("#")
        assert int(number) > first_rows[part]  # located over the part, in its second file
    assert one.records_read == sum(first_rows.values()) + 3 * 2000


def test_flan_first_file_written_through_then_joined(tmp_path, joined_parts):
    # The first file's first batches have one task: written through its writer, which the
    # part's finish then gives the first file's stored rows and the second file's.
    raw = tmp_path / "raw"
    rng = random.Random(8)
    for shard in range(2):
        records = flan_records(rng, 2500, tasks=6)
        if shard == 0:
            for record in records[:1200]:
                record["_task_name"] = "task0:v/e"
        path = raw / "FLAN" / "flan_fsopt_data" / f"part.{shard}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=700)
    one = cleaned_by_engine_and_row_path(get_source("flan"), raw, tmp_path)
    assert joined_parts.count(1) == 1
    assert one.files["flan/flan_fsopt_data__task0_v_e.parquet"].rows > 1200


def test_openmathinstruct2_static_writers_join_in_file_order(tmp_path, joined_parts):
    raw = tmp_path / "raw"
    write_openmathinstruct2_parts(raw, random.Random(7))
    spec = get_source("openmathinstruct2")
    one = cleaned_by_engine_and_row_path(spec, raw, tmp_path)
    assert joined_parts.count(1) == 1
    rejected = one.skipped["field missing or not a string"]
    assert rejected.count > 5 and len(rejected.examples) == 5
    shards = sorted(raw.rglob("train-*.parquet"))
    shards[1].unlink()
    first_shard = clean_source(spec, tmp_path / "first", raw, threads=1)
    for example in rejected.examples:
        # Numbered after the first shard's rows of its file, as the message says.
        assert example.row > first_shard.files[example.file].rows
        assert f"row {example.row}," in example.detail
        assert int(example.raw.split("#")[1]) > first_shard.records_read


def test_gsm8k_one_jsonl_output_joined_in_file_order(tmp_path, joined_parts):
    raw = tmp_path / "raw"
    write_gsm8k_parts(raw, random.Random(3))
    one = cleaned_by_engine_and_row_path(get_source("gsm8k_train"), raw, tmp_path)
    assert joined_parts.count(1) == 1
    first_rows = _first_file_rows(raw, "train-*.parquet")
    examples = [e for entry in one.skipped.values() for e in entry.examples]
    assert examples and all(int(e.raw.split("#")[1]) > first_rows for e in examples)
    lines = (tmp_path / "two" / "gsm8k_train.jsonl").read_text("utf-8").splitlines()
    assert '"instruction":"Question 0.0?"' in lines[0]
    assert '"instruction":"Question 1.1499?"' in lines[-1]


def later_shard_read_errors(tmp_path: Path, raw: Path) -> list[str]:
    """OpenMathInstruct-2 cleaned from ``raw`` at 1 and 2 threads with its second shard's
    read failing at its third batch: the two errors' messages, once it is checked that
    neither run left a file in its output folder (no output committed, no spill file)."""
    spec = get_source("openmathinstruct2")
    rule = spec.columnar
    second = sorted(raw.rglob("train-*.parquet"))[1]

    def failing_read(path, names):
        for index, batch in enumerate(rule.read(path, names)):
            if path == second and index == 2:
                raise OSError("the disk went away")
            yield batch

    failing = dataclasses.replace(spec, columnar=dataclasses.replace(rule, read=failing_read))
    messages = []
    for threads in (1, 2):
        out = tmp_path / f"out{threads}"
        with pytest.raises(RawReadError) as error:
            clean_source(failing, out, raw, threads=threads)
        messages.append(str(error.value))
        assert not [path for path in out.rglob("*") if path.is_file()]
    return messages


def test_a_read_error_in_a_later_file_after_the_earlier_rows(tmp_path, joined_parts):
    raw = tmp_path / "raw"
    write_openmathinstruct2_parts(raw, random.Random(7))
    messages = later_shard_read_errors(tmp_path, raw)
    first_rows = _first_file_rows(raw, "train-*.parquet")
    assert messages[0] == messages[1]
    assert f"after {first_rows + 2 * 500} records" in messages[0]
    assert "OSError: the disk went away" in messages[0]


def test_which_parts_have_their_files_read_in_parallel(tmp_path):
    two = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    one_part = [("default", two)]
    assert columnar_clean.files_in_parallel(get_source("tasksource"), one_part, 2)
    assert not columnar_clean.files_in_parallel(get_source("tasksource"), one_part, 1)
    flan_parts = [(subset, two) for subset in FLAN_SUBSETS]  # the parts fill the threads
    assert not columnar_clean.files_in_parallel(get_source("flan"), flan_parts, 2)
    assert columnar_clean.files_in_parallel(get_source("flan"), flan_parts[:1], 2)
    # Static Parquet outputs take a later file's rows as segments; a JSONL writer does not.
    assert columnar_clean.files_in_parallel(get_source("openmathinstruct2"), one_part, 2)
    assert not columnar_clean.files_in_parallel(get_source("gsm8k_train"), one_part, 2)
