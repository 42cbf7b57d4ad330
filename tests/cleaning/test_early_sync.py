"""A large output of a cleaning run is synced as soon as it is complete (``AtomicGroup.close``),
on a background thread, instead of at the run's commit; the commit still renames nothing
before every file is synced, and a failed run leaves nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning.cleaned_parquet import ParquetRowWriter
from hrm_assets.cleaning.outputs import CleanedOutputs, JsonlWriter
from hrm_assets.cleaning.rows import FIELDS, Row
from hrm_assets.common import atomic
from hrm_assets.common.atomic import TMP_PREFIX, AtomicGroup


@pytest.fixture
def synced(monkeypatch) -> list[tuple[str, bool]]:
    """The files ``fsync_file`` syncs, each with whether ``AtomicGroup.close`` started the
    sync (its background threads), not the commit."""
    calls: list[tuple[str, bool]] = []
    real_sync = atomic.fsync_file

    def fsync_file(path: Path) -> None:
        real_sync(path)
        early = threading.current_thread().name.startswith("atomic-sync")
        calls.append((Path(path).name, early))

    monkeypatch.setattr(atomic, "fsync_file", fsync_file)
    return calls


def _write(group: AtomicGroup, path: Path, size: int, early: bool = True) -> Path:
    handle = group.open(path)
    handle.write(b"x" * size)
    temporary = next(p for p in path.parent.iterdir() if p.name.startswith(TMP_PREFIX + path.name))
    if early:
        group.close(handle)
    else:
        handle.close()
    return temporary


def test_a_large_file_is_synced_when_closed_a_small_one_at_the_commit(tmp_path, synced):
    group = AtomicGroup(early_sync_bytes=1000)
    large = _write(group, tmp_path / "large.bin", 1000)
    small = _write(group, tmp_path / "small.bin", 999)
    plain = _write(group, tmp_path / "plain.bin", 5000, early=False)
    assert not (tmp_path / "large.bin").exists()
    group.commit()
    assert sorted(synced) == sorted([(large.name, True), (small.name, False), (plain.name, False)])
    assert (tmp_path / "large.bin").read_bytes() == b"x" * 1000
    assert (tmp_path / "small.bin").read_bytes() == b"x" * 999
    assert (tmp_path / "plain.bin").stat().st_size == 5000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["large.bin", "plain.bin", "small.bin"]


def test_a_failed_early_sync_commits_nothing(tmp_path, monkeypatch):
    group = AtomicGroup(early_sync_bytes=1)
    real_sync = atomic.fsync_file

    def fsync_file(path: Path) -> None:
        if Path(path).name.startswith(f"{TMP_PREFIX}bad.bin."):
            raise OSError(5, "Input/output error")
        real_sync(path)

    monkeypatch.setattr(atomic, "fsync_file", fsync_file)
    _write(group, tmp_path / "good.bin", 10)
    _write(group, tmp_path / "bad.bin", 10)
    with pytest.raises(OSError, match="Input/output"):
        group.commit()
    assert list(tmp_path.iterdir()) == []


def test_abort_after_early_syncs_leaves_nothing(tmp_path, synced):
    group = AtomicGroup(early_sync_bytes=1)
    first = _write(group, tmp_path / "a.bin", 10)
    _write(group, tmp_path / "b.bin", 10, early=False)
    group.abort()
    assert list(tmp_path.iterdir()) == []
    assert synced == [(first.name, True)]
    # The group is reusable after an abort, as before.
    _write(group, tmp_path / "c.bin", 10)
    group.commit()
    assert [p.name for p in tmp_path.iterdir()] == ["c.bin"]


def _table(rows: int, offset: int = 0) -> pa.Table:
    return pa.table(
        {
            "instruction": [f"question {offset + i} " * 20 for i in range(rows)],
            "response": [f"answer {offset + i} " * 30 for i in range(rows)],
            "condition": ["synth,cot"] * rows,
        }
    )


def test_a_parquet_writer_of_a_group_syncs_its_file_at_close_same_bytes(tmp_path, synced):
    alone = tmp_path / "alone" / "out.parquet"
    with ParquetRowWriter(alone, FIELDS, row_group_rows=700) as writer:
        writer.write_batch(_table(1500))
    group = AtomicGroup(early_sync_bytes=1)
    grouped = tmp_path / "grouped" / "out.parquet"
    with ParquetRowWriter(grouped, FIELDS, row_group_rows=700, group=group) as writer:
        writer.write_batch(_table(1500))
    assert not grouped.exists()
    group.commit()
    assert grouped.read_bytes() == alone.read_bytes()
    # Synced once, by the sync its writer's close started.
    assert len(synced) == 1 and synced[0][0].startswith(f"{TMP_PREFIX}out.parquet.")
    assert synced[0][1]


def test_a_writer_that_fails_starts_no_sync(tmp_path, synced):
    group = AtomicGroup(early_sync_bytes=1)
    with pytest.raises(RuntimeError, match="boom"):
        with ParquetRowWriter(
            tmp_path / "out.parquet", FIELDS, row_group_rows=700, group=group
        ) as w:
            w.write_batch(_table(1500))  # a row group written: the file is open
            raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        with JsonlWriter(tmp_path / "out.jsonl", group=group) as writer:
            writer.write(Row("synth,cot", "question", "answer"))
            raise RuntimeError("boom")
    assert synced == []
    group.abort()
    assert list(tmp_path.iterdir()) == []


def test_cleaned_outputs_sync_large_files_early_and_commit_them_all(tmp_path, synced, monkeypatch):
    monkeypatch.setattr(atomic, "EARLY_SYNC_BYTES", 1)
    with CleanedOutputs(tmp_path, "parquet", threads=2) as outputs:
        outputs.writer("a.parquet").write_batch(_table(300))
        outputs.close("a.parquet")
        assert not (tmp_path / "a.parquet").exists()
        outputs.writer("b.parquet").write_batch(_table(200, offset=300))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.parquet", "b.parquet"]
    assert pq.read_table(tmp_path / "b.parquet").num_rows == 200
    # a closed early; b closed by the run's end, before the commit: both synced once, early.
    assert len(synced) == 2 and all(early for _, early in synced)
