"""The export benchmark (``bench/export.py``) on toy sizes: every figure is measured, the
copy baseline copies exactly the bytes the export wrote, and the stage reports its targets."""

from __future__ import annotations

import numpy as np
import pytest

from bench.export import copy_folder, folder_sha256, run_export_benchmark, write_synthetic_sampled
from hrm_assets.export.row_source import sampled_epoch_rows


def test_synthetic_sampled_folder_is_one_valid_epoch(tmp_path):
    rows = write_synthetic_sampled(tmp_path / "s", 50_000)
    table = sampled_epoch_rows(tmp_path / "s", 0)
    assert table.rows == rows
    assert int(table.row_lengths.sum()) >= 50_000 * 0.9
    assert int(table.row_lengths.max()) <= 4097
    assert (table.resp_start == table.inst_start + table.inst_len).all()
    assert sorted(table.inst_start.tolist()) != table.inst_start.tolist()  # shuffled


def test_copy_folder_copies_every_byte_once(tmp_path):
    source = tmp_path / "a"
    source.mkdir()
    (source / "x.bin").write_bytes(bytes(range(256)) * 10_000)
    (source / "y.npy").write_bytes(b"abc")
    assert copy_folder(source, tmp_path / "b") == 2_560_003
    for name in ("x.bin", "y.npy"):
        assert (tmp_path / "b" / name).read_bytes() == (source / name).read_bytes()
    assert folder_sha256(source) == 2_560_003


@pytest.mark.slow
def test_every_figure_is_measured(tmp_path):
    result = run_export_benchmark([30_000, 60_000], repeats=1, work_dir=tmp_path)
    assert [size.tokens for size in result.sizes] == [30_000, 60_000]
    for size in result.sizes:
        for method in ("megatron", "copy_megatron", "packed", "copy_packed"):
            assert size.seconds[method] > 0 and size.peak_anon_bytes[method] > 0
        for kind in ("megatron", "packed"):
            assert size.output_bytes[kind] > 0 and size.hash_seconds[kind] > 0
            assert np.isfinite(size.over_copy(kind)) and size.over_copy(kind) > 0
            assert size.over_hashed_copy(kind) < size.over_copy(kind)
        assert 0.5 < size.packing_efficiency <= 1.0
    assert "| megatron |" in result.table() and "| packed |" in result.table()
    assert list(tmp_path.iterdir()) == []  # the generated folders are removed
