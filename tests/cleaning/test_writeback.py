"""``WritebackFile`` starts the write-back of a cleaned output behind its writer (Linux
``sync_file_range``): the same bytes, contiguous ranges, and an ordinary file where the call
is refused."""

from __future__ import annotations

import os
import sys

import pytest

from hrm_assets.common import writeback


def test_a_writeback_file_starts_the_write_back_behind_the_writer_same_bytes(tmp_path, monkeypatch):
    started: list[tuple[int, int]] = []

    def sync_file_range(fd: int, offset: int, length: int, flags: int) -> int:
        assert flags == writeback._SYNC_FILE_RANGE_WRITE
        assert os.fstat(fd).st_size >= offset + length  # flushed before it is asked for
        started.append((offset, length))
        return 0

    monkeypatch.setattr(writeback, "_sync_file_range", lambda: sync_file_range)
    pieces = [os.urandom(size) for size in (10, 300, 5, 1000, 64, 2048, 1)]
    path = tmp_path / "out.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    with writeback.WritebackFile(fd, every=1000) as handle:
        for piece in pieces:
            handle.write(piece)
    assert path.read_bytes() == b"".join(pieces)
    # Contiguous ranges from the start, each started once at least 1000 bytes behind, and
    # the tail when the file is closed.
    assert started == [(0, 1315), (1315, 2112), (3427, 1)]

    refused: list[int] = []
    monkeypatch.setattr(
        writeback, "_sync_file_range", lambda: lambda *args: refused.append(1) or -1
    )
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    with writeback.WritebackFile(fd, every=1000) as handle:
        for piece in pieces:
            handle.write(piece)
    assert path.read_bytes() == b"".join(pieces) and refused == [1]  # not asked again


def test_the_write_back_call_of_this_platform_is_accepted(tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("sync_file_range is Linux's")
    start = writeback._sync_file_range()
    assert start is not None
    path = tmp_path / "out.bin"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        os.write(fd, b"x" * 4096)
        assert start(fd, 0, 4096, writeback._SYNC_FILE_RANGE_WRITE) == 0
    finally:
        os.close(fd)
