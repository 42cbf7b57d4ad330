"""The cleaning memory benchmark at a tiny size: figures are sane and consistent (no timing)."""

from __future__ import annotations

import random

import pyarrow.parquet as pq
import pytest

from bench import cleaning_memory as bench


@pytest.fixture(scope="module")
def bench_work(tmp_path_factory):
    return tmp_path_factory.mktemp("bench")


@pytest.fixture(scope="module")
def tiny_result(bench_work):
    return bench.run_cleaning_memory_benchmark(
        base_records=300, scales=(1, 3), work_dir=bench_work, shard_records=250
    )


def test_every_method_and_scale_is_measured_with_all_rows(tiny_result):
    assert tiny_result.scales == (1, 3)
    assert [(m.method, m.scale) for m in tiny_result.measurements] == [
        ("streaming", 1),
        ("data_io", 1),
        ("streaming", 3),
        ("data_io", 3),
    ]
    for item in tiny_result.measurements:
        assert item.records == 300 * item.scale
        assert item.rows == item.records  # every synthetic record has one '#### ' answer
        assert item.seconds > 0
        # A Python process with pyarrow and datasets loaded: more than 30 MiB, far under 2 GiB.
        assert 30 * 2**20 < item.peak_rss_bytes < bench.RSS_LIMIT_BYTES
        assert len(item.output_sha256) == 64


def test_both_methods_write_the_same_bytes_and_ratios_follow_the_figures(tiny_result):
    assert tiny_result.outputs_identical is True
    low = tiny_result.get("streaming", 1)
    high = tiny_result.get("streaming", 3)
    assert tiny_result.rss_ratio("streaming") == pytest.approx(
        high.peak_rss_bytes / low.peak_rss_bytes
    )
    assert tiny_result.meets_target == (
        tiny_result.rss_ratio("streaming") < bench.RSS_RATIO_TARGET
        and high.peak_rss_bytes < bench.RSS_LIMIT_BYTES
    )
    figures = tiny_result.as_dict()
    assert figures["outputs_identical"] is True
    assert len(figures["measurements"]) == 4
    table = tiny_result.table()
    assert "| streaming | 3x | 900 | 900 |" in table
    assert "byte-identical: yes" in table
    assert tiny_result.markdown().startswith("# Cleaning memory benchmark")
    assert tiny_result.section() in tiny_result.markdown()


def test_work_files_are_removed_after_measuring(tiny_result, bench_work):
    assert bench_work.is_dir() and list(bench_work.iterdir()) == []


def test_synthetic_source_is_sharded_in_row_groups_and_deterministic(tmp_path):
    paths = bench.write_synthetic_source(tmp_path / "a", 25, shard_records=10, row_group_records=4)
    again = bench.write_synthetic_source(tmp_path / "b", 25, shard_records=10, row_group_records=4)
    assert [p.name for p in paths] == [
        "train-00000-of-00003.parquet",
        "train-00001-of-00003.parquet",
        "train-00002-of-00003.parquet",
    ]
    assert [p.read_bytes() for p in paths] == [p.read_bytes() for p in again]
    files = [pq.ParquetFile(p) for p in paths]
    assert [f.metadata.num_rows for f in files] == [10, 10, 5]
    assert [f.metadata.num_row_groups for f in files] == [3, 3, 2]
    record = files[0].read().to_pylist()[0]
    assert list(record) == ["question", "answer"]
    assert record["answer"].count("#### ") == 1
    assert record == bench.synthetic_record(random.Random(0), 0)


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="methods"):
        bench.run_cleaning_memory_benchmark(10, (1,), methods=("pandas",), work_dir=tmp_path)
    with pytest.raises(ValueError, match="at least 1"):
        bench.run_cleaning_memory_benchmark(0, (1,), work_dir=tmp_path)


def test_child_reports_its_own_peak_rss():
    assert bench.peak_rss_bytes() > 10 * 2**20
