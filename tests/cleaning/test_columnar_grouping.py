"""A unit's stored batches grouped together (``columnar_outputs.GROUPED_BYTES``): the files
and the report do not depend on how many batches are grouped at once.

SYNTHETIC FLAN fixture from ``test_columnar.py`` (tasks spread over every batch, null cells
skipped, two task names with one safe name); the row path is the reference.
"""

from __future__ import annotations

import random

import pytest

from hrm_assets.cleaning import columnar, columnar_clean, columnar_outputs, grouped_store
from hrm_assets.cleaning.sources import get_source
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path, write_flan


@pytest.mark.parametrize(
    "grouped_bytes",
    [
        pytest.param(1, id="every-batch-alone"),
        pytest.param(200_000, id="a-few-batches"),
        pytest.param(1 << 40, id="a-whole-part"),
    ],
)
@pytest.mark.parametrize("budget", [1 << 20, 1 << 30], ids=["spilled", "in-memory"])
def test_grouped_batches_give_the_row_path_files_and_report(
    tmp_path, monkeypatch, grouped_bytes, budget
):
    write_flan(tmp_path / "raw", random.Random(21))
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 700)
    monkeypatch.setattr(columnar_clean, "DEFAULT_BUFFER_BYTES", budget)
    monkeypatch.setattr(columnar_outputs, "GROUPED_BYTES", grouped_bytes)
    batches, stored = [], []
    unit_add, store_add = columnar_outputs.OutputUnit.add, grouped_store.GroupStore.add

    def unit_add_and_count(unit, files, codes, rows, reports):
        batches.append(rows.num_rows)
        return unit_add(unit, files, codes, rows, reports)

    def store_add_and_count(store, rows, order, bounds):
        stored.append(int(bounds[-1] - bounds[0]))
        return store_add(store, rows, order, bounds)

    monkeypatch.setattr(columnar_outputs.OutputUnit, "add", unit_add_and_count)
    monkeypatch.setattr(grouped_store.GroupStore, "add", store_add_and_count)
    one = cleaned_by_engine_and_row_path(get_source("flan"), tmp_path / "raw", tmp_path)
    assert one.rows_written and one.skipped
    # Two engine runs (1 and 2 threads), three subsets each: every row stored once a run.
    assert sum(stored) == sum(batches) == 2 * one.rows_written
    if grouped_bytes == 1:
        assert len(stored) == len(batches)
    elif grouped_bytes == 1 << 40:
        assert len(stored) == 2 * 3
    else:
        assert 2 * 3 < len(stored) < len(batches)


@pytest.mark.parametrize("budget", [1 << 20, 1 << 30], ids=["spilled", "in-memory"])
def test_stored_files_too_large_for_one_write_stream_their_groups(tmp_path, monkeypatch, budget):
    """A task file of more rows than a row group is written by the streaming writer, one
    stored group at a time (``GroupStore.rows``), not gathered whole: the row path's files."""
    from hrm_assets.cleaning import cleaned_parquet

    write_flan(tmp_path / "raw", random.Random(5))
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 300)
    monkeypatch.setattr(columnar_clean, "DEFAULT_BUFFER_BYTES", budget)
    monkeypatch.setattr(cleaned_parquet, "pyarrow_row_group_rows", lambda: 150)
    streamed = []
    rows = grouped_store.GroupStore.rows

    def rows_and_count(store, group):
        streamed.append(group.rows)
        return rows(store, group)

    monkeypatch.setattr(grouped_store.GroupStore, "rows", rows_and_count)
    one = cleaned_by_engine_and_row_path(get_source("flan"), tmp_path / "raw", tmp_path)
    assert one.rows_written and streamed
    assert sum(streamed) < 2 * one.rows_written  # the smaller files were gathered whole
