"""OpenMathInstruct-2's two shards read in parallel by the columnar engine (forced here; the
engine decides per source, ``files_in_parallel``): the later shard's rows for the static
outputs' open writers (cot, direct) are gathered in ``ParquetSegment``s and taken over by the
writers at the part's end, each row spilled at most once. Against one thread and the row
path: the same bytes and report, with row groups small enough that the shards' rows cross
them, with every writer and segment spilling, with rows check_row rejects (nulls) in the
later shard, and a read error in the later shard committing nothing.

Every fixture is SYNTHETIC."""

from __future__ import annotations

import functools
import random

import pytest

from hrm_assets.cleaning import cleaned_parquet, columnar, columnar_clean
from hrm_assets.cleaning.cleaned_parquet import ParquetRowWriter, ParquetSegment
from hrm_assets.cleaning.sources import get_source
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path
from tests.cleaning.test_columnar_part_files import (
    later_shard_read_errors,
    write_openmathinstruct2_parts,
)


@pytest.fixture
def appended(monkeypatch) -> list[tuple[int, int, int]]:
    """Small batches and row groups, a part's files read in parallel on two threads whatever
    ``files_in_parallel`` decides for the source; each segment appended, as (its rows, its
    spills, the writer's spills before it)."""
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    monkeypatch.setattr(
        columnar_clean, "files_in_parallel", lambda spec, parts, threads: threads > 1
    )
    monkeypatch.setattr(cleaned_parquet, "pyarrow_row_group_rows", lambda: 700)
    seen: list[tuple[int, int, int]] = []
    append = ParquetRowWriter.append_segment

    def counted(self, segment):
        seen.append((segment.rows, segment.spills, self.spills))
        return append(self, segment)

    monkeypatch.setattr(ParquetRowWriter, "append_segment", counted)
    return seen


def _spilling(monkeypatch) -> None:
    """Every writer and segment spills its rows as they come."""
    for kind in (ParquetRowWriter, ParquetSegment):
        init = functools.partialmethod(kind.__init__, large_row_group=1)
        monkeypatch.setattr(kind, "__init__", init)


@pytest.mark.parametrize("spill", [False, True])
def test_the_later_shard_joins_through_segments(tmp_path, monkeypatch, appended, spill):
    if spill:
        _spilling(monkeypatch)
    raw = tmp_path / "raw"
    write_openmathinstruct2_parts(raw, random.Random(9))
    one = cleaned_by_engine_and_row_path(get_source("openmathinstruct2"), raw, tmp_path)
    # The two-thread run appended a segment per output of the later shard, in the file order
    # the one-thread run and the row path wrote them.
    assert len(appended) == 2 and all(rows for rows, _, _ in appended)
    if spill:
        assert all(spills and before for _, spills, before in appended)
    assert one.skipped["field missing or not a string"].count > 5
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]  # no spill left


def test_a_read_error_in_the_later_shard_commits_nothing(tmp_path, monkeypatch, appended):
    _spilling(monkeypatch)
    raw = tmp_path / "raw"
    write_openmathinstruct2_parts(raw, random.Random(7))
    messages = later_shard_read_errors(tmp_path, raw)
    assert messages[0] == messages[1]
    assert appended == []
