"""OpenMathInstruct-2, tasksource, dmmath and GSM8K (a Parquet mirror) on the columnar engine
against their row path, at 1 and 2 threads: same bytes, same report (skips counted with their
examples).

Every fixture is SYNTHETIC, generated here in the raw schema of its source, with the records
the rules must handle: nulls, unselected tasks, trailing dots, odd line counts, every kind of
line end and Unicode whitespace. The row path (the spec without its columnar rule) is the
reference, itself pinned against data_io by the golden files and the per-source tests.
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
from hrm_assets.cleaning.sources import dmmath as dmmath_module
from hrm_assets.cleaning.sources import get_source
from hrm_assets.cleaning.sources.tasksource import TASKS
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path, digests


def _maybe(rng: random.Random, value, rate: float = 0.01):
    return None if rng.random() < rate else value


def write_openmathinstruct2(raw: Path, rng: random.Random, shards: int = 2, rows: int = 1500):
    folder = raw / "nvidia" / "OpenMathInstruct-2" / "data"
    folder.mkdir(parents=True)
    sources = ["augmented_math", "augmented_gsm8k", "math", "gsm8k", None]
    for shard in range(shards):
        records = [
            {
                "problem": _maybe(rng, f"Problem {shard}.{i}: what is {i} + {i}? ü"),
                "generated_solution": _maybe(rng, f"It is $\\boxed{{{2 * i}}}$.\n"),
                "expected_answer": _maybe(rng, str(2 * i)),
                "problem_source": rng.choice(sources),
            }
            for i in range(rows)
        ]
        path = folder / f"train-{shard:05d}-of-{shards:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=900)


def write_tasksource(raw: Path, rng: random.Random, shards: int = 2, rows: int = 1500):
    folder = raw / "tasksource" / "tasksource-instruct-v0" / "data"
    folder.mkdir(parents=True)
    tasks = [*TASKS[:60], "social_i_qa", "mmlu/abstract_algebra", None]
    for shard in range(shards):
        records = []
        for i in range(rows):
            task = rng.choice(tasks)
            target = rng.choice(["yes", "no.", "maybe..", ".", "", "é."])
            records.append(
                {
                    "inputs": _maybe(rng, f"{task}: example {shard}.{i}\nAnswer:"),
                    "targets": _maybe(rng, target),
                    "task": task,
                }
            )
        path = folder / f"train-{shard:05d}-of-{shards:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(records), path, row_group_size=700)


WHITESPACE = [" ", "\t", "\xa0", "\u3000", "\x1c", "\x0b", "\x0c", "\u2028", "\x85", ""]


def write_dmmath(raw: Path, rng: random.Random, lines: int = 2000) -> None:
    root = raw / "mathematics_dataset-v1.0"
    for set_index, set_name in enumerate(dmmath_module.SETS):
        for module in ("algebra__linear_1d", "numbers__gcd", "empty__module"):
            path = root / set_name / f"{module}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            if module == "empty__module":
                path.write_bytes(b"")
                continue
            count = lines + (set_index % 2)  # an odd count in train-medium: an unpaired line
            text = []
            for i in range(count):
                pad = rng.choice(WHITESPACE) + rng.choice(WHITESPACE)
                end = rng.choice(["\n", "\n", "\r\n", "\r"])
                text.append(f"{pad}{module} line {i} ∑{pad}{end}")
            if set_index == 2:  # no newline after the last line
                text[-1] = text[-1].rstrip("\r\n")
            path.write_bytes("".join(text).encode("utf-8"))


def write_gsm8k(raw: Path, rng: random.Random, rows: int = 2500) -> None:
    folder = raw / "openai" / "gsm8k" / "main"
    folder.mkdir(parents=True)
    answers = ["x = 3\n#### 3", " two \n####  4\u3000", "no separator", "#### a #### b", "####"]
    records = [
        {
            "question": _maybe(rng, f"{rng.choice(WHITESPACE)}Question {i}?\xa0"),
            "answer": _maybe(rng, rng.choice(answers)),
        }
        for i in range(rows)
    ]
    pq.write_table(pa.Table.from_pylist(records), folder / "train-00000-of-00001.parquet")


WRITERS = {
    "openmathinstruct2": write_openmathinstruct2,
    "tasksource": write_tasksource,
    "dmmath": write_dmmath,
    "gsm8k_train": write_gsm8k,
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_columnar_equals_the_row_path_at_one_and_two_threads(tmp_path, monkeypatch, name):
    WRITERS[name](tmp_path / "raw", random.Random(11))
    # Small batches and blocks: rules, pairs and line ends cross batch boundaries.
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    monkeypatch.setattr(dmmath_module, "BLOCK_BYTES", 1000)
    spec = get_source(name)
    one = cleaned_by_engine_and_row_path(spec, tmp_path / "raw", tmp_path)
    assert one.rows_written > 500
    assert one.skipped and all(entry.examples for entry in one.skipped.values())


def test_gsm8k_batches_where_every_record_gives_its_row(tmp_path, monkeypatch):
    # The rule copies nothing when no record is left out: same file as the row path.
    folder = tmp_path / "raw" / "openai" / "gsm8k" / "main"
    folder.mkdir(parents=True)
    records = [
        {"question": f" Q{i} \u2028?\t", "answer": f'step "{i}"\n#### {i}\\ \x01'}
        for i in range(1200)
    ]
    pq.write_table(pa.Table.from_pylist(records), folder / "train-00000-of-00001.parquet")
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    spec = get_source("gsm8k_train")
    ours = clean_source(spec, tmp_path / "one", tmp_path / "raw", threads=1)
    rows = clean_source(
        dataclasses.replace(spec, columnar=None), tmp_path / "rows", tmp_path / "raw"
    )
    assert (ours.engine, rows.engine) == ("columnar", "rows")
    assert ours.rows_written == 1200 and not ours.skipped
    assert digests(tmp_path / "one") == digests(tmp_path / "rows")


def test_dmmath_text_that_is_not_utf8_names_the_file(tmp_path):
    write_dmmath(tmp_path / "raw", random.Random(3), lines=40)
    bad = tmp_path / "raw" / "mathematics_dataset-v1.0" / "train-hard" / "numbers__gcd.txt"
    bad.write_bytes(b"What is 1 + 1?\n\xff\xfe2\n")
    with pytest.raises(RawReadError, match="numbers__gcd.txt"):
        clean_source(get_source("dmmath"), tmp_path / "out", tmp_path / "raw")


def test_dmmath_rows_skip_the_engines_checks_its_reader_made(tmp_path, monkeypatch):
    # Its reader refuses text that is not UTF-8 (above), it keeps no null field and its one
    # condition is a known tag: the engine's own checks of each batch would find nothing.
    write_dmmath(tmp_path / "raw", random.Random(4), lines=60)

    def never(*_args):
        raise AssertionError("the engine checked rows the rule vouches for")

    monkeypatch.setattr(columnar_clean, "_check_utf8", never)
    monkeypatch.setattr(columnar_clean, "_suspect_rows", never)
    spec = get_source("dmmath")
    ours = clean_source(spec, tmp_path / "one", tmp_path / "raw", threads=2)
    rows = clean_source(
        dataclasses.replace(spec, columnar=None), tmp_path / "rows", tmp_path / "raw"
    )
    assert (ours.engine, rows.engine) == ("columnar", "rows") and ours.rows_written > 0
    assert ours.skipped.keys() == rows.skipped.keys()
    assert digests(tmp_path / "one") == digests(tmp_path / "rows")


def test_a_jsonl_hub_mirror_stays_on_the_row_path(tmp_path):
    folder = tmp_path / "raw" / "tasksource" / "tasksource-instruct-v0" / "data"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text(
        '{"inputs": "Is it?", "targets": "yes.", "task": "WANLI"}\n', encoding="utf-8"
    )
    report = clean_source(get_source("tasksource"), tmp_path / "out", tmp_path / "raw")
    assert report.engine == "rows"
    assert report.rows_written == 1


def _with_bad_text(records: list[dict], column: str, row: int) -> pa.Table:
    """``records`` as a table whose ``column`` holds bytes that are not UTF-8 at ``row``
    (0-based), as a raw Parquet string column may."""
    table = pa.Table.from_pylist(records)
    values = [value.encode("utf-8") for value in table.column(column).to_pylist()]
    values[row] = b"bad \xff text"
    index = table.schema.get_field_index(column)
    return table.set_column(index, column, pa.array(values, pa.binary()).view(pa.string()))


@pytest.mark.parametrize(
    "name, folder, column, field",
    [
        ("gsm8k_train", "openai/gsm8k/main", "question", "instruction"),
        ("tasksource", "tasksource/tasksource-instruct-v0/data", "targets", "response"),
        ("openmathinstruct2", "nvidia/OpenMathInstruct-2/data", "problem", "instruction"),
    ],
)
def test_bad_raw_text_names_file_row_and_field(tmp_path, name, folder, column, field):
    records = [
        {
            "question": "q?",
            "answer": "w\n#### 1",
            "task": "WANLI",
            "inputs": "i",
            "targets": "t.",
            "problem": "p",
            "generated_solution": "s",
            "expected_answer": "1",
            "problem_source": "augmented_math",
        }
        for _ in range(30)
    ]
    path = tmp_path / "raw" / folder / "train-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(_with_bad_text(records, column, 21), path)
    with pytest.raises(ValueError) as error:
        clean_source(get_source(name), tmp_path / "out", tmp_path / "raw")
    message = str(error.value)
    assert str(path) in message and "row 22" in message
    assert f"'{field}'" in message and "UTF-8" in message


def test_the_whitespace_stripped_is_what_str_strip_removes():
    everything = "".join(chr(code) for code in range(0x110000) if chr(code).isspace())
    assert columnar.PYTHON_WHITESPACE == everything
