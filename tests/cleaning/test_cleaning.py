"""Cleaning machinery: writer byte formats, atomicity, validation counting, streaming.

Sources here are synthetic specs over in-memory records (labelled synthetic); the real
sources are tested in test_sources_gsm8k_math.py.
"""

from __future__ import annotations

import dataclasses
import io
import json
import random
import subprocess
import sys
import tracemalloc
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning import cli
from hrm_assets.cleaning import report as cleaning_report
from hrm_assets.cleaning.checks import NOT_A_ROW, NOT_A_STRING, NOT_UTF8, UNKNOWN_TAG
from hrm_assets.cleaning.clean import clean_source
from hrm_assets.cleaning.cleaned_parquet import (
    BufferBudget,
    ParquetRowWriter,
    chunk_starts,
    piece_plan,
)
from hrm_assets.cleaning.outputs import JsonlWriter, jsonl_line
from hrm_assets.cleaning.rows import FIELDS, INSTRUCTION_FIRST, Row, iter_cleaned_rows
from hrm_assets.cleaning.sources import RawPart, SkipRecord, SourceSpec, build_registry
from hrm_assets.common.atomic import TMP_PREFIX


@dataclass
class MemoryLayout:
    """Synthetic raw layout: parts of in-memory records, batches produced lazily and logged."""

    parts_records: Mapping[str, list[dict]]
    log: list[tuple[str, int]] = field(default_factory=list)

    def parts(self, spec, raw_root, batch_size) -> Iterator[RawPart]:
        for name, records in self.parts_records.items():
            yield RawPart(name, self._batches(records, batch_size))

    def _batches(self, records: list[dict], batch_size: int) -> Iterator[list[dict]]:
        for start in range(0, len(records), batch_size):
            self.log.append(("read", start))
            yield records[start : start + batch_size]

    def write_parts(self, spec, raw_root, parts):  # pragma: no cover - not used by these tests
        raise NotImplementedError("MemoryLayout lives in memory only")

    def describe(self, spec) -> str:
        return "memory"


def passthrough(record, part) -> Iterable:
    """Yields whatever the synthetic record says: its 'rows' as given, or raises."""
    if "skip" in record:
        raise SkipRecord("synthetic skip reason", record["skip"])
    if "explode" in record:
        raise RuntimeError(record["explode"])
    yield from record["rows"]


def make_spec(records, fmt="jsonl", output=None, route=None, clean=passthrough, parts=None):
    layout = MemoryLayout(parts if parts is not None else {"p": records})
    return SourceSpec(
        name="synthetic",
        hub_id=None,
        configs=None,
        split="train",
        output=output or f"sub/synthetic.{fmt}",
        format=fmt,
        clean=clean,
        layout=layout,
        demo=lambda rng: {},
        route=route,
    )


def no_temporaries(root: Path) -> bool:
    return not [p for p in root.rglob("*") if p.name.startswith(TMP_PREFIX)]


# -- byte format -----------------------------------------------------------------------------

TRICKY = [
    Row("direct", "plain", "42"),
    Row("noisy,cot", 'quote " backslash \\ slash / tab \t newline \n cr \r', "ctrl \x01\x1f \x7f"),
    Row("", "日本語 한국어 中文 émoji 👨‍👩‍👧 \u2028 \u2029 \ufeff", "Cafe\u0301"),
    Row("synth,direct", "<|im_start|> $\\boxed{\\frac{1}{2}}$", ""),
]


def test_jsonl_line_is_orjson_compact_utf8():
    line = b'{"condition":"direct","instruction":"Q?","response":"A"}\n'
    assert jsonl_line(Row("direct", "Q?", "A")) == line
    assert jsonl_line(TRICKY[1]) == (
        b'{"condition":"noisy,cot","instruction":"quote \\" backslash \\\\ slash / tab \\t '
        b'newline \\n cr \\r","response":"ctrl \\u0001\\u001f \x7f"}\n'
    )
    # Non-ASCII stays raw UTF-8 (data_io's orjson never escapes it).
    assert jsonl_line(TRICKY[2]).decode("utf-8") == (
        '{"condition":"","instruction":"日本語 한국어 中文 émoji 👨‍👩‍👧 \u2028 \u2029 \ufeff",'
        '"response":"Cafe\u0301"}\n'
    )


def test_jsonl_line_matches_orjson_when_installed():
    orjson = pytest.importorskip("orjson")
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(0, 0x300)] + ["😀", "\u2028", "中", "\U0010ffff", "\ud7ff"]
    rows = list(TRICKY)
    for _ in range(300):
        rows.append(Row(*("".join(rng.choice(alphabet) for _ in range(20)) for _ in range(3))))
    for row in rows:
        assert jsonl_line(row) == orjson.dumps(row._asdict()) + b"\n"


def test_jsonl_writer_streams_rows_and_reads_back(tmp_path):
    path = tmp_path / "out" / "x.jsonl"
    with JsonlWriter(path) as writer:
        for row in TRICKY:
            writer.write(row)
        assert not path.exists()  # only the temporary sibling exists while writing
    assert path.read_bytes() == b"".join(jsonl_line(row) for row in TRICKY)
    assert list(iter_cleaned_rows(path)) == TRICKY
    assert writer.rows == len(TRICKY)
    assert no_temporaries(tmp_path)


def test_parquet_writer_schema_and_row_groups(tmp_path):
    path = tmp_path / "x.parquet"
    rows = [Row("cot", f"q{i} 数", f"a{i}") for i in range(25)]
    with ParquetRowWriter(path, row_group_rows=10) as writer:
        for row in rows:
            writer.write(row)
    parquet = pq.ParquetFile(path)
    assert parquet.schema_arrow.names == ["condition", "instruction", "response"]
    assert all(str(t) == "string" for t in parquet.schema_arrow.types)
    assert parquet.metadata.num_row_groups == 3 == writer.row_groups
    assert [parquet.metadata.row_group(i).num_rows for i in range(3)] == [10, 10, 5]
    assert list(iter_cleaned_rows(path)) == rows


def test_empty_outputs_are_valid_files(tmp_path):
    with JsonlWriter(tmp_path / "e.jsonl"):
        pass
    with ParquetRowWriter(tmp_path / "e.parquet"):
        pass
    assert (tmp_path / "e.jsonl").read_bytes() == b""
    assert pq.read_table(tmp_path / "e.parquet").num_rows == 0
    # As data_io's write_table of an empty table: one empty row group. Its columns are strings
    # (data_io's, inferred from empty lists, have pyarrow's null type).
    parquet = pq.ParquetFile(tmp_path / "e.parquet")
    assert parquet.metadata.num_row_groups == 1
    assert all(str(t) == "string" for t in parquet.schema_arrow.types)


def test_jsonl_keys_follow_the_sources_column_order(tmp_path):
    orjson = pytest.importorskip("orjson")
    for row in TRICKY:
        as_data_io = {"instruction": row[1], "response": row[2], "condition": row[0]}
        assert jsonl_line(row, INSTRUCTION_FIRST) == orjson.dumps(as_data_io) + b"\n"
    path = tmp_path / "arb.jsonl"
    with JsonlWriter(path, INSTRUCTION_FIRST) as writer:
        writer.write(TRICKY[0])
    assert path.read_bytes().startswith(b'{"instruction":')
    assert list(iter_cleaned_rows(path)) == [TRICKY[0]]
    with pytest.raises(ValueError, match="in some order"):
        JsonlWriter(path, ("instruction", "response"))


# -- Parquet bytes: data_io's pq.write_table(pa.Table.from_pydict(columns)) --------------------


def varied_rows(n: int, seed: int = 3, width: int = 200) -> list[Row]:
    """Synthetic rows: long varied instructions (many pages, a dictionary that overflows its
    page limit), short repeated responses and conditions (dictionary-encoded)."""
    rng = random.Random(seed)
    letters = "abcdefghij é中"
    return [
        Row(
            rng.choice(["direct", "cot", "noisy,cot"]),
            f"{i} " + "".join(rng.choice(letters) for _ in range(rng.randint(5, width))),
            str(rng.randint(0, 300)),
        )
        for i in range(n)
    ]


def data_io_parquet_bytes(rows: list[Row], columns, row_group_size=None, chunks=None) -> bytes:
    """What data_io writes: one dict of lists, ``pa.Table.from_pydict``, ``pq.write_table``.
    ``chunks`` (column -> cut points) stands for pyarrow's 2 GiB chunking at a smaller size."""
    data = {name: [row[FIELDS.index(name)] for row in rows] for name in columns}
    table = pa.Table.from_pydict(data)
    for name, cuts in (chunks or {}).items():
        if cuts:
            pieces = [pa.array(data[name][a:b], pa.string()) for a, b in pairwise(cuts)]
            position = table.schema.get_field_index(name)
            table = table.set_column(position, name, pa.chunked_array(pieces))
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=row_group_size)
    return sink.getvalue()


def written_parquet_bytes(path: Path, rows: list[Row], columns, **options) -> bytes:
    with ParquetRowWriter(path, columns, **options) as writer:
        for row in rows:
            writer.write(row)
    return path.read_bytes()


@pytest.mark.parametrize("columns", [INSTRUCTION_FIRST, FIELDS])
def test_parquet_file_is_data_ios_one_call_write(tmp_path, columns):
    rows = varied_rows(30_000)
    ours = written_parquet_bytes(tmp_path / "x.parquet", rows, columns)
    assert ours == data_io_parquet_bytes(rows, columns)
    parquet = pq.ParquetFile(tmp_path / "x.parquet")
    assert parquet.schema_arrow.names == list(columns)
    assert parquet.metadata.row_group(0).column(1).num_values == 30_000
    # Pieces cut anywhere but at multiples of 1,024 rows move pages: the test can tell.
    data = {name: [row[FIELDS.index(name)] for row in rows] for name in columns}
    cut = pa.table(
        {k: pa.chunked_array([v[:1000], v[1000:]], pa.string()) for k, v in data.items()}
    )
    sink = io.BytesIO()
    pq.write_table(cut, sink)
    assert sink.getvalue() != ours


def test_parquet_row_groups_are_cut_where_write_table_cuts_them(tmp_path):
    rows = varied_rows(12_000, seed=5)
    ours = written_parquet_bytes(
        tmp_path / "x.parquet", rows, INSTRUCTION_FIRST, row_group_rows=5000, piece_rows=1024
    )
    assert ours == data_io_parquet_bytes(rows, INSTRUCTION_FIRST, row_group_size=5000)
    assert pq.ParquetFile(tmp_path / "x.parquet").metadata.num_row_groups == 3


def pyarrow_chunk_starts(lengths: list[int], carried: int, limit: int) -> tuple[list[int], int]:
    """pyarrow's rule, value by value: a value that would take the chunk over ``limit`` bytes
    starts a new chunk (measured: 2 GiB - 2 bytes per chunk, see cleaned_parquet)."""
    starts, used = [], carried
    for index, length in enumerate(lengths):
        if used + length > limit:
            starts.append(index)
            used = 0
        used += length
    return starts, used


def test_chunk_starts_follow_pyarrows_rule():
    rng = random.Random(11)
    for _ in range(300):
        limit = rng.randint(5, 400)
        lengths = [rng.randint(0, limit) for _ in range(rng.randint(0, 60))]
        carried = rng.randint(0, limit)
        assert chunk_starts(lengths, carried, limit) == pyarrow_chunk_starts(
            lengths, carried, limit
        )
    assert chunk_starts([3, 3, 3], 0, 6) == ([2], 3)
    with pytest.raises(ValueError, match="7 bytes"):
        chunk_starts([1, 7], 0, 6)
    with pytest.raises(ValueError, match="7 bytes"):
        chunk_starts([7], 0, 6)


def test_piece_plan_cuts_where_write_batches_start():
    # Arrays aligned on 1,024 rows: zero-copy slices; cuts restart at a chunk start (1500).
    assert piece_plan(5000, [], [2048, 5000]) == [(0, 2048, False), (2048, 5000, False)]
    assert piece_plan(5000, [1500], [5000]) == [(0, 1500, False), (1500, 5000, False)]
    assert piece_plan(5000, [1500], [3000, 5000]) == [
        (0, 1500, False),
        (1500, 2524, False),
        (2524, 3548, True),
        (3548, 5000, False),
    ]
    # An array ending off a cut: the 1,024 rows across it are copied.
    assert piece_plan(3000, [], [1500, 3000]) == [
        (0, 1024, False),
        (1024, 2048, True),
        (2048, 3000, False),
    ]
    assert piece_plan(10, [0, 4], [10]) == [(0, 4, False), (4, 10, False)]
    with pytest.raises(ValueError, match="multiple of 1024"):
        ParquetRowWriter(Path("x.parquet"), piece_rows=1000)


def test_parquet_chunks_split_where_pyarrow_splits_a_long_column(tmp_path):
    """pyarrow starts a new Arrow chunk every 2 GiB of a column's text; the writer reproduces
    the chunks (here with a limit of ~1 MB) across row groups and column by column."""
    rows = varied_rows(9000, seed=8, width=600)
    limit, group = 1_000_003, 4096
    chunks = {}
    for name in INSTRUCTION_FIRST:
        lengths = [len(row[FIELDS.index(name)].encode()) for row in rows]
        starts, _ = pyarrow_chunk_starts(lengths, 0, limit)
        chunks[name] = [0, *starts, len(rows)] if starts else None
    assert len(chunks["instruction"]) > 4 and chunks["condition"] is None
    ours = written_parquet_bytes(
        tmp_path / "x.parquet",
        rows,
        INSTRUCTION_FIRST,
        row_group_rows=group,
        piece_rows=1024,
        chunk_text_limit=limit,
    )
    assert ours == data_io_parquet_bytes(rows, INSTRUCTION_FIRST, group, chunks)


def test_spilled_buffers_give_the_same_bytes_and_bounded_memory(tmp_path):
    """Writers over their shared budget spill to disk; row groups and bytes stay data_io's."""
    rows = {name: varied_rows(6000, seed=i) for i, name in enumerate("ab")}
    budget = BufferBudget(limit=50_000)
    options = {"row_group_rows": 4000, "piece_rows": 1024}
    with (
        ParquetRowWriter(tmp_path / "a.parquet", INSTRUCTION_FIRST, budget, **options) as a,
        ParquetRowWriter(tmp_path / "b.parquet", INSTRUCTION_FIRST, budget, **options) as b,
    ):
        for row_a, row_b in zip(rows["a"], rows["b"], strict=True):
            a.write(row_a)
            b.write(row_b)
            assert budget.used <= budget.limit
            assert budget.used == a.buffered + b.buffered
    assert a.spills > 10 and b.spills > 10
    assert budget.used == 0
    for name in "ab":
        expected = data_io_parquet_bytes(rows[name], INSTRUCTION_FIRST, row_group_size=4000)
        assert (tmp_path / f"{name}.parquet").read_bytes() == expected
    assert no_temporaries(tmp_path)
    with pytest.raises(RuntimeError, match="disk on fire"):
        with ParquetRowWriter(tmp_path / "c.parquet", budget=budget, **options) as c:
            for row in rows["a"][:3000]:
                c.write(row)
            c.spill()
            raise RuntimeError("disk on fire")
    assert c.spills > 1 and no_temporaries(tmp_path)
    assert not (tmp_path / "c.parquet").exists()


@pytest.mark.parametrize("writer_class", [JsonlWriter, ParquetRowWriter])
def test_writer_failure_keeps_old_file_and_leaves_no_temporary(tmp_path, writer_class):
    path = tmp_path / f"x.{'jsonl' if writer_class is JsonlWriter else 'parquet'}"
    with writer_class(path) as writer:
        writer.write(Row("direct", "old", "1"))
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="disk on fire"):
        with writer_class(path) as writer:
            writer.write(Row("direct", "new", "2"))
            raise RuntimeError("disk on fire")
    assert path.read_bytes() == before
    assert no_temporaries(tmp_path)


# -- clean_source: validation and counting -----------------------------------------------------


def test_invalid_rows_are_counted_with_file_row_and_reason(tmp_path):
    records = [
        {"rows": [Row("direct", "q1", "a1"), Row("cot", "q1", "s1")]},
        {"rows": [Row("direct,bogus", "q2", "a2")]},  # unknown tag: row 3 of the file
        {"rows": [Row("direct", None, "a3"), ("cot", "q3", 3)]},
        {"rows": [{"condition": "", "instruction": "q4", "response": "dict rows work"}]},
        {"rows": [Row("cot", "lone \ud800 surrogate", "x")]},
        {"rows": ["not a row"]},
        {"skip": "rule of the source"},
        {"no_rows_key": True},  # the cleaning function fails with KeyError: a malformed record
        {"rows": [Row("noisy,cot", "q9", "s9")]},
    ]
    report = clean_source(make_spec(records), tmp_path)
    out = tmp_path / "sub" / "synthetic.jsonl"
    assert list(iter_cleaned_rows(out)) == [
        Row("direct", "q1", "a1"),
        Row("cot", "q1", "s1"),
        Row("", "q4", "dict rows work"),
        Row("noisy,cot", "q9", "s9"),
    ]
    assert report.records_read == 9
    assert report.rows_written == 4
    counts = {reason: entry.count for reason, entry in report.skipped.items()}
    assert counts == {
        UNKNOWN_TAG: 1,
        NOT_A_STRING: 2,
        NOT_UTF8: 1,
        NOT_A_ROW: 1,
        "synthetic skip reason": 1,
        "malformed raw record (KeyError)": 1,
    }
    assert report.rows_skipped == 7
    tag = report.skipped[UNKNOWN_TAG].examples[0]
    assert (tag.file, tag.row, tag.raw) == ("sub/synthetic.jsonl", 3, "p#2")
    assert "sub/synthetic.jsonl: row 3" in tag.detail and "'bogus'" in tag.detail
    assert "known tags: direct, cot, noisy, synth" in tag.detail
    strings = [e.detail for e in report.skipped[NOT_A_STRING].examples]
    assert "row 4, field 'instruction': expected a string, got null" in strings[0]
    assert "row 5, field 'response': expected a string, got int" in strings[1]
    skip = report.skipped["synthetic skip reason"].examples[0]
    assert (skip.file, skip.row, skip.raw, skip.detail) == (
        "sub/synthetic.jsonl",
        None,
        "p#7",
        "rule of the source",
    )
    assert report.condition_counts == {"direct": 1, "cot": 1, "": 1, "noisy,cot": 1}
    assert report.tag_counts == {"direct": 1, "cot": 2, "(none)": 1, "noisy": 1}
    file_report = report.files["sub/synthetic.jsonl"]
    assert file_report.bytes == out.stat().st_size == report.bytes_written
    assert file_report.preview[0] == Row("direct", "q1", "a1")
    # The report is plain JSON for Dagster metadata.
    as_dict = json.loads(json.dumps(report.as_dict()))
    assert as_dict["skipped"][UNKNOWN_TAG]["examples"][0]["row"] == 3
    assert as_dict["files"]["sub/synthetic.jsonl"]["rows"] == 4
    assert "skipped 1: unknown condition tag" in report.summary()


def test_skip_examples_and_preview_are_bounded(tmp_path):
    records = [{"rows": [Row("x", "q" * 5000, "a"), Row("direct", "q" * 5000, "a")]}] * 50
    report = clean_source(make_spec(records), tmp_path, batch_size=7)
    assert report.skipped[UNKNOWN_TAG].count == 50
    assert len(report.skipped[UNKNOWN_TAG].examples) == cleaning_report.MAX_SKIP_EXAMPLES
    preview = report.files["sub/synthetic.jsonl"].preview
    assert len(preview) == cleaning_report.PREVIEW_ROWS
    assert all(len(row.instruction) == cleaning_report.PREVIEW_CHARS for row in preview)


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_failure_midway_keeps_older_output(tmp_path, fmt):
    good = [{"rows": [Row("direct", f"q{i}", f"a{i}")]} for i in range(30)]
    clean_source(make_spec(good, fmt), tmp_path, batch_size=4)
    out = tmp_path / "sub" / f"synthetic.{fmt}"
    before = out.read_bytes()
    failing = good[:20] + [{"explode": "raw shard is corrupt"}] + good[20:]
    changed = [{"rows": [Row("cot", "changed", "x")]}] * 10 + failing
    with pytest.raises(RuntimeError, match="raw shard is corrupt"):
        clean_source(make_spec(changed, fmt), tmp_path, batch_size=4)
    assert out.read_bytes() == before
    assert no_temporaries(tmp_path)


def test_failure_on_first_run_leaves_no_file(tmp_path):
    records = [{"rows": [Row("direct", "q", "a")]}] * 5 + [{"explode": "boom"}]
    with pytest.raises(RuntimeError):
        clean_source(make_spec(records), tmp_path, batch_size=2)
    assert not (tmp_path / "sub" / "synthetic.jsonl").exists()
    assert no_temporaries(tmp_path)


def test_routed_source_writes_one_file_per_task(tmp_path):
    records = [
        {"task": "alpha", "rows": [Row("direct", "a1", "1")]},
        {"task": "beta", "rows": [Row("direct", "b1", "2")]},
        {"task": "alpha", "rows": [Row("direct", "a2", "3")]},
        {"task": "gamma", "rows": [Row("bad", "g", "4")]},  # every row invalid: no file
    ]
    spec = make_spec(
        records,
        fmt="parquet",
        output="routed/",
        route=lambda record, part: f"routed/{part}__{record['task']}.parquet",
    )
    report = clean_source(spec, tmp_path, batch_size=1)
    assert sorted(report.files) == ["routed/p__alpha.parquet", "routed/p__beta.parquet"]
    assert list(iter_cleaned_rows(tmp_path / "routed/p__alpha.parquet")) == [
        Row("direct", "a1", "1"),
        Row("direct", "a2", "3"),
    ]
    assert not (tmp_path / "routed/p__gamma.parquet").exists()
    assert report.skipped[UNKNOWN_TAG].examples[0].file == "routed/p__gamma.parquet"


def test_parts_are_read_in_order_and_counted(tmp_path):
    parts = {
        "second": [{"rows": [Row("direct", "s", "1")]}],
        "first": [{"rows": [Row("direct", "f", "2")]}] * 3,
    }
    spec = make_spec(None, parts=parts)
    seen = []
    report = clean_source(spec, tmp_path, batch_size=2, progress=seen.append)
    assert report.parts == ["second", "first"]
    assert seen == [1, 2, 1]
    assert [r.instruction for r in iter_cleaned_rows(tmp_path / "sub/synthetic.jsonl")] == [
        "s",
        "f",
        "f",
        "f",
    ]


# -- bounded memory --------------------------------------------------------------------------


def test_reader_and_writer_interleave_batch_by_batch(tmp_path):
    """The reader is never more than one batch ahead of the writer: nothing accumulates."""
    n, batch = 1000, 50
    records = [{"rows": [Row("direct", f"q{i}", f"a{i}")]} for i in range(n)]
    layout_log: list = []

    def logging_clean(record, part):
        layout_log.append(("clean", None))
        yield from record["rows"]

    spec = make_spec(records, fmt="parquet", clean=logging_clean)
    spec.layout.log = layout_log
    clean_source(spec, tmp_path, batch_size=batch)
    reads, cleaned, worst = 0, 0, 0
    for kind, _ in layout_log:
        if kind == "read":
            reads += 1
        else:
            cleaned += 1
        worst = max(worst, reads * batch - cleaned)
    assert reads == n // batch
    assert worst <= batch
    parquet = pq.ParquetFile(tmp_path / "sub/synthetic.parquet")
    # Row groups are pyarrow's (1,048,576 rows, as data_io's one-call write), not read batches.
    assert parquet.metadata.num_row_groups == 1


def _records(n: int) -> Iterator[list[dict]]:
    for start in range(0, n, 500):
        yield [
            {"rows": [Row("cot", f"question {i} " * 8, f"answer {i} " * 8)]}
            for i in range(start, min(n, start + 500))
        ]


@dataclass
class GeneratedLayout:
    """Synthetic records generated on the fly, never held as a whole."""

    n: int

    def parts(self, spec, raw_root, batch_size):
        yield RawPart("gen", _records(self.n))

    def write_parts(self, spec, raw_root, parts):  # pragma: no cover
        raise NotImplementedError

    def describe(self, spec):
        return "generated"


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_peak_python_memory_does_not_grow_with_source_size(tmp_path, fmt):
    def peak(n: int) -> int:
        spec = SourceSpec(
            name="generated",
            hub_id=None,
            configs=None,
            split="train",
            output=f"generated_{n}.{fmt}",
            format=fmt,
            clean=passthrough,
            layout=GeneratedLayout(n),
            demo=lambda rng: {},
        )
        tracemalloc.start()
        try:
            report = clean_source(spec, tmp_path, batch_size=500)
            return tracemalloc.get_traced_memory()[1], report
        finally:
            tracemalloc.stop()

    peak(500)  # warm-up: first-use allocations (pyarrow's lazy imports) are not per row
    # Both sizes exceed one Parquet piece (8,192 rows, the most a writer holds as Python
    # strings); rows waiting for their row group are Arrow buffers, bounded by the BufferBudget.
    small, small_report = peak(9_000)
    large, large_report = peak(45_000)
    assert large_report.rows_written == 45_000 == 5 * small_report.rows_written
    assert large < small * 1.3 + 256 * 1024, (small, large)


# -- registry ----------------------------------------------------------------------------------


def test_one_output_per_part_writes_every_parts_file_even_empty(tmp_path):
    """dmmath and SYNTH: data_io writes one file per input file, rows or not."""
    spec = dataclasses.replace(
        make_spec(
            None,
            fmt="parquet",
            output="sub",
            route=lambda record, part: f"sub/{part}.parquet",
            parts={"a": [{"rows": [Row("direct", "q", "a")]}], "b": [], "c": [{"rows": []}]},
        ),
        one_output_per_part=True,
    )
    report = clean_source(spec, tmp_path)
    assert sorted(report.files) == ["sub/a.parquet", "sub/b.parquet", "sub/c.parquet"]
    assert [len(list(iter_cleaned_rows(tmp_path / f"sub/{p}.parquet"))) for p in "abc"] == [1, 0, 0]
    with pytest.raises(ValueError, match="needs a route"):
        dataclasses.replace(make_spec([]), one_output_per_part=True)
    with pytest.raises(ValueError, match="not one per part"):
        make_spec([]).part_output("p")


def test_registry_rejects_duplicate_names_and_outputs():
    a = make_spec([], output="x.jsonl")
    with pytest.raises(ValueError, match="defined twice"):
        build_registry([a, a])
    b = SourceSpec(**{**a.__dict__, "name": "other", "output": "x.jsonl"})
    with pytest.raises(ValueError, match="both write 'x.jsonl'"):
        build_registry([a, b])
    c = SourceSpec(**{**a.__dict__, "name": "third", "output": "x.jsonl".replace("x", "sub/x")})
    d = SourceSpec(**{**a.__dict__, "name": "fourth", "output": "sub__x.jsonl"})
    with pytest.raises(ValueError, match="tokenized folder 'sub__x.jsonl'"):
        build_registry([c, d])


def test_spec_checks_output_suffix_and_relative_path():
    with pytest.raises(ValueError, match="must end with .parquet"):
        make_spec([], fmt="parquet", output="x.jsonl")
    with pytest.raises(ValueError, match="relative path"):
        make_spec([], output="../x.jsonl")


def test_cli_rejects_unknown_source(capsys):
    assert cli.main(["no_such_source"]) == 2
    assert "unknown source 'no_such_source'" in capsys.readouterr().err


def test_unreadable_raw_file_is_an_error_naming_source_part_and_place(tmp_path, capsys):
    from hrm_assets.cleaning.clean import RawReadError
    from hrm_assets.cleaning.cli import main
    from hrm_assets.cleaning.sources import SOURCES

    raw = tmp_path / "raw" / "openai" / "gsm8k" / "main"
    raw.mkdir(parents=True)
    (raw / "train.jsonl").write_text('{"question": "q", "answer": "a #### 1"}\nnot json\n')
    out = tmp_path / "cleaned"
    named = (
        rf"gsm8k_train: cannot read raw file {raw / 'train.jsonl'} \(raw part 'main'\): .*line 2"
    )
    with pytest.raises(RawReadError, match=named):
        clean_source(SOURCES["gsm8k_train"], out, tmp_path / "raw")
    assert not (out / "gsm8k_train.jsonl").exists(), "no half-written output"

    code = main(["gsm8k_train", "--raw-root", str(tmp_path / "raw"), "--out", str(out)])
    assert code == 1
    err = capsys.readouterr().err
    assert f"error: gsm8k_train: cannot read raw file {raw / 'train.jsonl'}" in err
    assert "Traceback" not in err


_MANY_OUTPUTS = """
import resource, sys
from pathlib import Path
from hrm_assets.cleaning.outputs import CleanedOutputs
soft, hard = (int(v) for v in sys.argv[2:4])
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
with CleanedOutputs(Path(sys.argv[1]), "jsonl") as outputs:
    for number in range(300):
        outputs.writer(f"flan/task_{number}.jsonl").write(("direct", "q", "a"))
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
"""


@pytest.mark.parametrize("hard", [128, 4096])
def test_hundreds_of_routed_outputs_open_past_a_low_soft_limit(tmp_path, hard):
    # A routed JSONL source keeps one file per output open (Parquet writers open theirs only
    # to write, see test_columnar); a default soft limit (often 1024) is raised to the hard
    # limit, and past the hard limit the error names the file and says what to do.
    run = subprocess.run(
        [sys.executable, "-c", _MANY_OUTPUTS, str(tmp_path), "64", str(hard)],
        capture_output=True,
        text=True,
        check=False,
    )
    if hard == 4096:
        assert run.returncode == 0, run.stderr
        assert int(run.stdout) == 4096
        assert len(list((tmp_path / "flan").glob("*.jsonl"))) == 300
    else:
        assert run.returncode != 0
        assert "too many open files (" in run.stderr and "raise the limit (ulimit -n)" in run.stderr
        assert "flan/task_" in run.stderr
        assert not (tmp_path / "flan").exists() or not list((tmp_path / "flan").iterdir())
