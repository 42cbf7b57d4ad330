"""The engine's ordered pipeline (``columnar_clean._prepared_in_order``): batches prepared
on worker threads come back in read order, each with the rows read before it, and a read
error comes where its batch would have been, after every batch before it; the same through
the helper that decodes ahead (``_read_ahead``), which a unit uses only when it has cores of
its own (a part read alone), not when every thread reads a part."""

from __future__ import annotations

import random
import threading
import time

import pyarrow as pa
import pytest

from hrm_assets.cleaning.arrow_buffers import repeated_string
from hrm_assets.cleaning.columnar_clean import _prepared_in_order, _read_ahead


def _batches(sizes, error_at=None):
    for index, size in enumerate(sizes):
        if index == error_at:
            raise OSError(f"damaged at batch {index}")
        yield pa.record_batch([repeated_string(str(index), size)], names=["value"])


def _prepare(batch: pa.RecordBatch, before: int):
    # Uneven work, so that later batches often finish first on the workers.
    time.sleep(random.Random(before).random() / 200)
    return batch.column(0)[0].as_py(), before, threading.current_thread().name


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_results_in_read_order_with_the_rows_before_each(threads):
    sizes = [random.Random(i).randrange(1, 50) for i in range(40)]
    results = [
        (batch.num_rows, prepared())
        for batch, prepared in _prepared_in_order(_batches(sizes), _prepare, threads)
    ]
    befores = [sum(sizes[:i]) for i in range(len(sizes))]
    assert [(rows, value, before) for rows, (value, before, _) in results] == [
        (size, str(index), before)
        for index, (size, before) in enumerate(zip(sizes, befores, strict=True))
    ]
    workers = {name for _, (_, _, name) in results}
    assert all(name.startswith("clean-rule") for name in workers) == (threads > 1)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_read_error_comes_after_the_batches_before_it(threads):
    seen = []
    for batch, prepared in _prepared_in_order(_batches([5] * 10, error_at=6), _prepare, threads):
        if batch is None:
            assert isinstance(prepared, OSError) and "batch 6" in str(prepared)
            break
        seen.append(prepared()[0])
    assert seen == [str(index) for index in range(6)]


@pytest.mark.parametrize("depth", [1, 2])
def test_a_read_error_through_the_helper_comes_after_the_batches_before_it(depth):
    seen, errors = [], []
    batches = _read_ahead(_batches([5] * 10, error_at=6), depth=depth)
    for batch, prepared in _prepared_in_order(batches, _prepare, 2):
        if batch is None:
            errors.append(prepared)
            break
        seen.append(prepared()[0])
    assert seen == [str(index) for index in range(6)]
    assert len(errors) == 1 and isinstance(errors[0], OSError) and "batch 6" in str(errors[0])
    assert not [t for t in threading.enumerate() if t.name == "clean-read"]


def test_the_helper_decodes_ahead_only_for_a_part_read_alone(tmp_path, monkeypatch):
    from hrm_assets.cleaning import columnar, columnar_clean
    from hrm_assets.cleaning.clean import clean_source
    from hrm_assets.cleaning.sources import get_source
    from tests.cleaning.test_columnar import write_synth

    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    depths = []
    read_ahead = columnar_clean._read_ahead

    def counted(batches, depth=1):
        depths.append(depth)
        return read_ahead(batches, depth)

    monkeypatch.setattr(columnar_clean, "_read_ahead", counted)
    spec = get_source("synth")
    write_synth(tmp_path / "three", random.Random(3), shards=3)
    clean_source(spec, tmp_path / "out3", tmp_path / "three", threads=2)  # a thread a part
    assert depths == []
    write_synth(tmp_path / "one", random.Random(3), shards=1)
    clean_source(spec, tmp_path / "out1", tmp_path / "one", threads=2)  # one part, alone
    assert depths == [2]
