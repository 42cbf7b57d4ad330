"""The columnar engine (FLAN, SYNTH) against the row path, at 1 and 2 threads.

Every fixture is SYNTHETIC, generated here in the raw schema of its source (FLAN's
``<subset>/*.parquet`` with ``_task_name``/``inputs``/``targets``, SYNTH's shards): the row
path (the same spec without its columnar rule, record by record) is the reference, itself
pinned against data_io's scripts in ``test_sources_local.py``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning import columnar, columnar_clean, grouped_store
from hrm_assets.cleaning.clean import clean_source
from hrm_assets.cleaning.cleaned_parquet import ParquetRowWriter
from hrm_assets.cleaning.rows import FIELDS, Row
from hrm_assets.cleaning.sources import flan as flan_module
from hrm_assets.cleaning.sources import get_source
from hrm_assets.cleaning.sources import synth as synth_module

REPO_ROOT = Path(__file__).resolve().parents[2]


def digests(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def report_content(report) -> dict:
    content = report.as_dict()
    content.pop("seconds")
    return content


def cleaned_by_engine_and_row_path(spec, raw: Path, out: Path):
    """``spec`` cleaned from ``raw`` by the columnar engine at 1 and 2 threads and by the row
    path (the same spec without its rule), under ``out``: the files and reports must be the
    same; the 1-thread report is returned for the caller's own checks."""
    one = clean_source(spec, out / "one", raw, threads=1)
    two = clean_source(spec, out / "two", raw, threads=2)
    rows = clean_source(dataclasses.replace(spec, columnar=None), out / "rows", raw)
    assert (one.engine, two.engine, rows.engine) == ("columnar", "columnar", "rows")
    assert (one.threads, two.threads) == (1, 2)
    assert digests(out / "one") == digests(out / "two") == digests(out / "rows")
    assert report_content(one) == report_content(two) == report_content(rows)
    return one


def flan_records(rng: random.Random, count: int, tasks: int) -> list[dict]:
    records = []
    for index in range(count):
        task = f"task{rng.randrange(tasks)}:v/{'é' if index % 7 == 0 else 'e'}"
        record = {
            "inputs": f"Question {index}: {'ü' * (index % 5)} what is {index} + 1?",
            "targets": f" {index + 1} ",
            "_template_type": "zs_opt",
            "_task_source": "Flan2021",
            "_task_name": task,
            "_template_idx": index % 10,
        }
        if index % 97 == 3:
            record[rng.choice(["inputs", "targets", "_task_name"])] = None
        records.append(record)
    # Two tasks whose safe names collide ("a:b" and "a_b"): one file, rows in read order.
    records[10]["_task_name"], records[11]["_task_name"] = "a:b", "a_b"
    records[12]["_task_name"] = "a:b"
    return records


def write_flan(raw: Path, rng: random.Random, per_file: int = 3000, tasks: int = 40) -> None:
    for subset in ("flan_fsopt_data", "niv2_zsopt_data", "cot_fsopt_data"):
        for shard in range(2):
            path = raw / "FLAN" / subset / f"part.{shard}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            table = pa.Table.from_pylist(flan_records(rng, per_file, tasks))
            pq.write_table(table, path, row_group_size=1000)


def synth_records(rng: random.Random, count: int) -> list[dict]:
    exercises = [*synth_module.CONDITIONS, "cooking", "summarization", None]
    records = []
    for index in range(count):
        exercise = rng.choice(exercises)
        records.append(
            {
                "synth_id": f"s{index}",
                "language": None if index % 211 == 5 else rng.choice(["en", "en", "en", "fr"]),
                "exercise": exercise,
                "query": f"Query {index} ö" if index % 173 != 9 else None,
                "query_seed_url": rng.choice(
                    ["https://en.wikipedia.org/wiki/X", "Pleias self-knowledge: hi"]
                ),
                "constraints": None if index % 89 == 1 else "\n\nCite the source.",
                "synthetic_reasoning": "r" * (index % 50),
                "synthetic_answer": None if index % 301 == 7 else f"Answer {index}.",
            }
        )
    return records


def write_synth(raw: Path, rng: random.Random, shards: int = 3, per_file: int = 4000) -> None:
    folder = raw / "SYNTH"
    folder.mkdir(parents=True)
    for shard in range(shards):
        table = pa.Table.from_pylist(synth_records(rng, per_file))
        pq.write_table(table, folder / f"synth_{shard}.parquet", row_group_size=1500)


@pytest.mark.parametrize("budget", [columnar_clean.DEFAULT_BUFFER_BYTES, 40_000])
@pytest.mark.parametrize("name, write", [("flan", write_flan), ("synth", write_synth)])
def test_columnar_equals_the_row_path_at_one_and_two_threads(
    tmp_path, monkeypatch, name, write, budget
):
    write(tmp_path / "raw", random.Random(5))
    # Small batches: rows of one task and skips spread over many batches; a small budget:
    # grouped batches go to the spill file and writers spill (the bytes may not change).
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 700)
    monkeypatch.setattr(columnar_clean, "DEFAULT_BUFFER_BYTES", budget)
    spec = get_source(name)
    one = cleaned_by_engine_and_row_path(spec, tmp_path / "raw", tmp_path)
    assert one.skipped and all(len(e.examples) == 5 for e in one.skipped.values())


def test_flan_skips_counted_with_examples_across_batches(tmp_path, monkeypatch):
    write_flan(tmp_path / "raw", random.Random(9))
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    report = clean_source(get_source("flan"), tmp_path / "out", tmp_path / "raw", threads=2)
    nulls = report.skipped[flan_module.NULL_FIELD]
    expected = sum(
        1
        for subset in ("flan_fsopt_data", "niv2_zsopt_data", "cot_fsopt_data")
        for shard in range(2)
        for record in pq.read_table(tmp_path / "raw/FLAN" / subset / f"part.{shard}.parquet")
        .select(list(flan_module.COLUMNS))
        .to_pylist()
        if None in record.values()
    )
    assert nulls.count == nulls.rows == expected > 0
    first = nulls.examples[0]
    assert first.file == "flan" and first.row is None
    assert first.raw.startswith("flan_fsopt_data#") and first.detail.startswith("null ")
    assert report.rows_written + nulls.count == report.records_read == 6 * 3000
    collided = pq.read_table(tmp_path / "out/flan/flan_fsopt_data__a_b.parquet")
    assert collided.column("instruction").to_pylist()[:3] == [
        f"Question {i}: {'ü' * (i % 5)} what is {i} + 1?" for i in (10, 11, 12)
    ]


def test_write_batch_has_the_bytes_of_rows_written_one_by_one(tmp_path):
    rng = random.Random(3)
    rows = [Row("direct", f"q{i} " + "x" * rng.randrange(300), f"a{i}") for i in range(9000)]
    with ParquetRowWriter(tmp_path / "rows.parquet", row_group_rows=4000) as writer:
        for item in rows:
            writer.write(item)
    with ParquetRowWriter(tmp_path / "cols.parquet", row_group_rows=4000) as writer:
        start = 0
        for size in (1, 999, 3100, 2500, 2400):  # batches across row group and piece bounds
            part = rows[start : start + size]
            columns = {name: [r[i] for r in part] for i, name in enumerate(FIELDS)}
            writer.write_batch(pa.table({"response": columns["response"], **columns}))
            start += size
    assert writer.row_groups == 3
    assert (tmp_path / "rows.parquet").read_bytes() == (tmp_path / "cols.parquet").read_bytes()


def test_bad_raw_text_names_file_row_and_field(tmp_path):
    folder = tmp_path / "raw" / "SYNTH"
    folder.mkdir(parents=True)
    records = synth_records(random.Random(1), 50)
    for record in records:
        record.update(language="en", exercise="mcq", query_seed_url="u", query="ok")
        record["synthetic_answer"] = "fine"
    table = pa.Table.from_pylist(records)
    answers = pa.array([b"fine"] * 41 + [b"bad \xff text"] + [b"fine"] * 8, pa.binary())
    table = table.set_column(
        table.schema.get_field_index("synthetic_answer"),
        "synthetic_answer",
        answers.view(pa.string()),
    )
    pq.write_table(table, folder / "s.parquet")
    with pytest.raises(ValueError) as error:
        clean_source(get_source("synth"), tmp_path / "out", tmp_path / "raw")
    message = str(error.value)
    assert str(folder / "s.parquet") in message
    assert "row 42" in message and "'response'" in message and "UTF-8" in message
    assert not (tmp_path / "out" / "SYNTH").exists() or not any((tmp_path / "out/SYNTH").iterdir())


def test_thousands_of_tasks_under_a_memory_cap(tmp_path):
    """3,000 FLAN task files open at once, cleaned in a child process whose address space is
    capped (``RLIMIT_AS``; allocators reserve far more address space than they touch, hence a
    generous cap) and whose peak resident set must stay under the target's 600 MiB: the
    writers' buffers are bounded together, and a writer opens its file only to write it."""
    rng = random.Random(11)
    folder = tmp_path / "raw" / "FLAN" / "flan_zsopt_data"
    folder.mkdir(parents=True)
    count = 60_000
    table = pa.table(
        {
            "inputs": [f"Input {i} " + "z" * rng.randrange(2000) for i in range(count)],
            "targets": [f"target {i}" for i in range(count)],
            "_task_name": [f"task_{rng.randrange(3000)}" for _ in range(count)],
        }
    )
    pq.write_table(table, folder / "part.0.parquet")
    del table
    cap = 6 * 1024**3
    code = textwrap.dedent(
        f"""
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
        from hrm_assets.cleaning.clean import clean_source
        from hrm_assets.cleaning.sources import get_source
        report = clean_source(get_source("flan"), sys.argv[1], sys.argv[2], threads=2)
        status = dict(line.split(":", 1) for line in open("/proc/self/status"))
        peak = int(status["VmHWM"].split()[0]) * 1024
        print(json.dumps({{"files": len(report.files), "rows": report.rows_written,
                          "peak": peak}}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "out"), str(tmp_path / "raw")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["files"] == len(list((tmp_path / "out" / "flan").glob("*.parquet"))) > 2900
    assert result["rows"] == count
    assert result["peak"] < 600 * 1024 * 1024


def test_cli_prints_a_short_summary_and_the_detail_behind_json(tmp_path, capsys):
    from hrm_assets.cleaning.cli import main

    write_flan(tmp_path / "raw", random.Random(2), per_file=300, tasks=12)
    args = ["flan", "--raw-root", str(tmp_path / "raw"), "--out", str(tmp_path / "out")]
    assert main([*args, "--threads", "2"]) == 0
    captured = capsys.readouterr()
    summary = captured.out.strip().splitlines()
    assert summary[0].startswith("flan: 1,800 records -> ")
    assert " files; " in summary[0] and "records/s" in summary[0] and "raw MB/s" in summary[0]
    assert "columnar, 2 threads" in summary[0]
    assert ".parquet" not in captured.out  # file names only in --json
    assert any(line.startswith("  skipped ") for line in summary)
    assert "rows/s" in captured.err and "MB/s" in captured.err  # the progress bar
    assert main([*args, "--json", "--threads", "1"]) == 0
    detail = json.loads(capsys.readouterr().out)
    assert len(detail["files"]) > 3 and detail["engine"] == "columnar"
    assert detail["rows_written"] == sum(item["rows"] for item in detail["files"].values())
    assert detail["records_per_second"] > 0 and detail["raw_bytes"] > 0
    assert main([*args, "--threads", "0"]) == 2


def test_a_spill_file_is_a_leftover_the_next_run_removes(tmp_path, monkeypatch):
    from hrm_assets.cleaning.leftovers import cleaning_leftovers

    write_flan(tmp_path / "raw", random.Random(4))
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    monkeypatch.setattr(columnar_clean, "DEFAULT_BUFFER_BYTES", 20_000)
    spec, out = get_source("flan"), tmp_path / "out"
    seen = []
    close = grouped_store.GroupStore.close

    def close_and_look(store):
        if store.path is not None:  # what a run killed now would leave
            seen.append((store.path, store.path in cleaning_leftovers(spec, out)))
        close(store)

    monkeypatch.setattr(grouped_store.GroupStore, "close", close_and_look)
    clean_source(spec, out, tmp_path / "raw", threads=1)
    assert seen and all(found for _, found in seen)
    assert not any(path.exists() for path, _ in seen)
