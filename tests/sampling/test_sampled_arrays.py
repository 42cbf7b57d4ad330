"""The sampled output's array writers: numpy.save's bytes, and manifest entries of those bytes."""

from __future__ import annotations

import hashlib
import io
import threading

import numpy as np
import pytest

from hrm_assets import _core
from hrm_assets.sampling import arrays as sampled_arrays
from hrm_assets.sampling.arrays import (
    TokenCopyError,
    TokenSource,
    concatenate_tokens,
    npy_header,
    save_npy,
)
from hrm_assets.sampling.sampler import npy_layout


def numpy_save_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def entry_of(data: bytes) -> dict:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


@pytest.mark.parametrize("dtype", ["<i8", "<u2", "<u4", "u1", "<i4"])
def test_header_is_numpy_saves(dtype):
    for length in (0, 1, 7, 1000):
        array = np.zeros(length, dtype=dtype)
        assert numpy_save_bytes(array) == npy_header(np.dtype(dtype), length) + array.tobytes()
    # numpy leaves room for 21 digits, so a huge length keeps the header's size.
    huge = npy_header(np.dtype(dtype), 10**15)
    assert len(huge) == len(npy_header(np.dtype(dtype), 0))
    assert b"'shape': (1000000000000000,)" in huge


def test_save_npy_writes_numpy_save_bytes_and_their_entry(tmp_path):
    array = np.arange(-5, 100_000, 3, dtype=np.int64)[::2]  # not contiguous
    entry = save_npy(tmp_path / "a.npy", array)
    written = (tmp_path / "a.npy").read_bytes()
    assert written == numpy_save_bytes(np.ascontiguousarray(array))
    assert entry == entry_of(written)
    empty = save_npy(tmp_path / "empty.npy", np.empty(0, dtype=np.int64))
    assert (tmp_path / "empty.npy").read_bytes() == numpy_save_bytes(np.empty(0, dtype=np.int64))
    assert empty == entry_of((tmp_path / "empty.npy").read_bytes())


def write_sources(tmp_path, arrays: list[np.ndarray]) -> list[TokenSource]:
    sources = []
    for number, array in enumerate(arrays):
        path = tmp_path / f"task{number}" / "tokens.npy"
        path.parent.mkdir()
        np.save(path, array)
        sources.append(TokenSource(path, *npy_layout(path)))
    return sources


@pytest.mark.parametrize("block", [1, 7, 1 << 19])
@pytest.mark.parametrize("workers", [1, 3])
def test_concatenation_casts_hashes_and_finds_the_max(tmp_path, monkeypatch, block, workers):
    monkeypatch.setattr(sampled_arrays, "COPY_BLOCK", block)
    rng = np.random.default_rng(block + workers)
    arrays = [
        rng.integers(0, 70_000, size=n).astype(dtype)
        for n, dtype in [(50, "<u4"), (0, "<u4"), (23, "<u8"), (9, "<i4"), (1, "<u2")]
    ]
    arrays[2][5] = 70_001  # the largest id, beyond uint16: it wraps, as numpy assignment does
    sources = write_sources(tmp_path, arrays)
    destination = tmp_path / "tokens.npy"
    max_id, entry = concatenate_tokens(destination, sources, np.dtype(np.uint16), workers=workers)
    expected = numpy_save_bytes(np.concatenate(arrays).astype(np.uint16))
    assert destination.read_bytes() == expected
    assert entry == entry_of(expected)
    assert max_id == 70_001


def test_concatenation_of_nothing_is_an_empty_array(tmp_path):
    max_id, entry = concatenate_tokens(tmp_path / "t.npy", [], np.dtype(np.int32))
    expected = numpy_save_bytes(np.empty(0, dtype=np.int32))
    assert (tmp_path / "t.npy").read_bytes() == expected
    assert (max_id, entry) == (-1, entry_of(expected))


def test_a_source_shorter_than_its_header_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sampled_arrays, "COPY_BLOCK", 4)
    sources = write_sources(tmp_path, [np.arange(10, dtype="<u4"), np.arange(20, dtype="<u4")])
    # The file shrinks after its header was read (another process rewrote it).
    data = sources[1].path.read_bytes()
    sources[1].path.write_bytes(data[: len(data) - 8])
    with pytest.raises(TokenCopyError, match=rf"{sources[1].path}: shorter than its header"):
        concatenate_tokens(tmp_path / "t.npy", sources, np.dtype(np.uint16))


def test_progress_reports_add_up_to_every_element(tmp_path):
    arrays = [np.arange(n, dtype="<u4") for n in (1000, 0, 37, 5000)]
    sources = write_sources(tmp_path, arrays)
    reported: list[int] = []
    max_id, _, size = _core.concatenate_token_arrays(
        str(tmp_path / "t.npy"),
        npy_header(np.dtype(np.uint16), 6037),
        [(str(s.path), s.dtype.str, s.count, s.data_offset) for s in sources],
        "<u2",
        workers=2,
        block_elements=16,
        progress=reported.append,
    )
    assert sum(reported) == 6037 and max_id == 4999
    assert size == (tmp_path / "t.npy").stat().st_size


def test_an_exception_in_the_progress_callback_propagates(tmp_path):
    sources = write_sources(tmp_path, [np.arange(3000, dtype="<u4")])

    def failing(elements: int) -> None:
        raise RuntimeError(f"no more after {elements}")

    with pytest.raises(RuntimeError, match="no more after"):
        _core.concatenate_token_arrays(
            str(tmp_path / "t.npy"),
            npy_header(np.dtype(np.uint16), 3000),
            [(str(s.path), s.dtype.str, s.count, s.data_offset) for s in sources],
            "<u2",
            block_elements=7,
            progress=failing,
        )


def test_setting_stop_raises_copy_stopped(tmp_path):
    sources = write_sources(tmp_path, [np.arange(100, dtype="<u4")])
    stop = threading.Event()
    stop.set()
    with pytest.raises(sampled_arrays.CopyStopped, match="the copy was stopped"):
        concatenate_tokens(tmp_path / "t.npy", sources, np.dtype(np.uint16), stop=stop)


def test_a_quiet_progress_bar_is_no_tqdm_and_passes_items_through():
    from tqdm import tqdm

    from hrm_assets.common.progress import progress_bar

    with progress_bar(False, [1, 2, 3], desc="quiet") as bar:
        assert list(bar) == [1, 2, 3]
        bar.update(5)
    assert not isinstance(bar, tqdm)
    with progress_bar(True, total=2, desc="shown", disable=True) as shown:
        assert isinstance(shown, tqdm)
