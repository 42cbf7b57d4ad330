"""The cleaning speed benchmark at a tiny size: every figure exists and the outputs agree
(FLAN byte for byte with data_io's restated script, SYNTH row for row); no timing asserted."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from bench import cleaning_speed as bench


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    work = tmp_path_factory.mktemp("cleaning_speed")
    return bench.run_cleaning_speed_benchmark({"flan": 3_000, "synth": 2_000}, work_dir=work)


def test_every_source_and_method_is_measured_with_the_same_output(result):
    assert set(result.sources) == {"flan", "synth"}
    for name, source in result.sources.items():
        assert source.same_output, name
        assert set(source.measurements) == set(bench.METHODS)
        ours = source.measurements["ours"]
        for method, figures in source.measurements.items():
            assert figures.seconds > 0 and figures.peak_rss_bytes > 0, (name, method)
            assert figures.rows_written == ours.rows_written, (name, method)
            assert figures.files == ours.files, (name, method)
            assert figures.raw_rows == source.raw_rows and figures.raw_bytes == source.raw_bytes
        assert source.speedup > 0 and source.over_bound > 0
    flan = result.sources["flan"].measurements["ours"]
    assert flan.rows_written == 3_000 and flan.files > 300  # hundreds of tasks, no nulls
    synth = result.sources["synth"].measurements["ours"]
    assert 0 < synth.rows_written < 2_000 and synth.files == bench.SYNTH_FILES


def test_table_and_figures_name_every_target(result):
    table = result.table()
    for name in ("flan", "synth"):
        for method in bench.METHODS:
            assert f"| {name} | " in table and f" | {method} | " in table
    assert ">= 3x" in table and "<= 1.5x" in table and "600 MiB" in table
    figures = result.as_dict()["sources"]["flan"]
    assert figures["measurements"]["ours"]["rows_per_second"] > 0
    assert isinstance(figures["meets_targets"], bool)


def test_generated_raw_files_have_the_hub_schema(tmp_path):
    flan = bench.write_flan_raw(tmp_path, 600)
    synth = bench.write_synth_raw(tmp_path, 100)
    assert len(flan) == 6 and sum(pq.ParquetFile(p).metadata.num_rows for p in flan) == 600
    assert set(pq.read_schema(flan[0]).names) == {
        "inputs",
        "targets",
        "_template_type",
        "_task_source",
        "_task_name",
        "_template_idx",
    }
    names = pq.read_schema(synth[0]).names
    assert len(names) == 14 and "synthetic_reasoning" in names
    assert set(bench.NEEDED_COLUMNS["synth"]) <= set(names)
