"""Lines written apart in a ``JsonlSegment`` (a later file of a part, read on another thread)
and appended to a ``JsonlWriter`` make the file of writing every row through the writer, by
rows or by batches, on a file system that copies in the kernel or one that does not; a
segment not handed over leaves no file.

Rows are SYNTHETIC, generated here."""

from __future__ import annotations

import errno
import os

import pyarrow as pa
import pytest

from hrm_assets.cleaning.outputs import JsonlSegment, JsonlWriter
from hrm_assets.cleaning.rows import FIELDS
from hrm_assets.common.atomic import AtomicGroup

ORDER = ("instruction", "response", "condition")


def _rows(count: int, start: int = 0) -> list[tuple[str, str, str]]:
    return [
        (f"c{i % 3}", f'question {i} "é"\n', f"answer\t{i} 中") for i in range(start, start + count)
    ]


def _table(rows) -> pa.Table:
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(FIELDS)})


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_appended_segments_give_the_lines_of_one_writer(tmp_path, monkeypatch, kernel_copy):
    if not kernel_copy:

        def refused(*args):
            raise OSError(errno.EXDEV, "cross-device")

        monkeypatch.setattr(os, "copy_file_range", refused)
    rows = _rows(2000)
    serial = tmp_path / "serial.jsonl"
    with JsonlWriter(serial, ORDER) as writer:
        writer.write_batch(_table(rows))
    joined = tmp_path / "joined.jsonl"
    group = AtomicGroup()
    with JsonlWriter(joined, ORDER, group) as writer:
        writer.write_batch(_table(rows[:700]))
        with JsonlSegment(joined, ORDER) as empty, JsonlSegment(joined, ORDER) as second:
            for row in rows[700:710]:
                second.write(row)
            second.write_batch(_table(rows[710:]))
            writer.append_segment(empty)
            writer.append_segment(second)
        writer.write_batch(_table(_rows(3, start=2000)))
    group.commit()
    with JsonlWriter(tmp_path / "more.jsonl", ORDER) as more:
        more.write_batch(_table(_rows(3, start=2000)))
    assert joined.read_bytes() == serial.read_bytes() + (tmp_path / "more.jsonl").read_bytes()
    assert writer.rows == 2003
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "joined.jsonl",
        "more.jsonl",
        "serial.jsonl",
    ]


def test_a_segment_not_handed_over_leaves_no_file(tmp_path):
    path = tmp_path / "x.jsonl"
    with JsonlSegment(path) as segment:
        segment.write_batch(_table(_rows(10)))
        assert len(list(tmp_path.iterdir())) == 1
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="continues"):
        with JsonlWriter(path) as writer, JsonlSegment(path, ORDER) as other:
            writer.append_segment(other)
    assert list(tmp_path.iterdir()) == []
