"""Issue 16, cleaning side: a damaged raw file is named, ``rows_skipped`` counts rows, and the
temporaries of a killed cleaning run are removed by the next run (its own names only)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from hrm_assets.cleaning.clean import clean_source
from hrm_assets.cleaning.leftovers import cleaning_lock_path
from hrm_assets.cleaning.sources import get_source
from hrm_assets.common.atomic import exclusive_lock

OMNIMATH = get_source("omnimath")
RAW_FILE = "KbsdJames/Omni-MATH/test-00000-of-00001.parquet"


def omni(problem, solution, answer) -> dict:
    return {"problem": problem, "solution": solution, "answer": answer, "source": "imo"}


GOOD = [omni(f"Find n{i}.", f"So n{i}.", str(i)) for i in range(40)]


def write_raw_parquet(raw: Path, records: list[dict]) -> Path:
    (path,) = OMNIMATH.layout.write_parts(OMNIMATH, raw, {"default": records})
    assert path == raw / RAW_FILE
    return path


def run_cleaning(raw: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hrm_assets.cleaning", "omnimath", "--raw-root", raw, "--out", out],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("damage", ["corrupt-page", "not-parquet"])
def test_a_damaged_raw_parquet_is_named_in_one_error_line(tmp_path, damage):
    raw, out = tmp_path / "raw", tmp_path / "cleaned"
    path = write_raw_parquet(raw, GOOD)
    assert run_cleaning(raw, out).returncode == 0
    before = (out / "omnimath.jsonl").read_bytes()
    data = path.read_bytes()
    if damage == "corrupt-page":  # the footer is intact; a data page is not
        path.write_bytes(data[:100] + b"\0" * 60 + data[160:])
    else:
        path.write_bytes(b"PAR1 this is not a parquet file")
    result = run_cleaning(raw, out)
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors[0].startswith(f"error: omnimath: cannot read raw file {path}")
    assert "Traceback" not in result.stderr
    assert (out / "omnimath.jsonl").read_bytes() == before


def test_rows_skipped_counts_rows_not_records(tmp_path):
    raw, out = tmp_path / "raw", tmp_path / "cleaned"
    records = [
        *GOOD[:3],
        omni("Unsolved.", None, "1"),  # skipped whole by the source: its cot and direct rows
        omni(None, "So 2.", "2"),  # both rows fail the row check
        omni("No answer.", "So 3.", None),
    ]
    write_raw_parquet(raw, records)
    report = clean_source(OMNIMATH, out, raw)
    assert report.rows_written == 6
    assert report.rows_skipped == 6
    assert report.rows_written + report.rows_skipped == 2 * len(records)
    rows = {reason: entry.rows for reason, entry in report.skipped.items()}
    assert rows == {
        "solution is not a string": 2,
        "answer is not a string": 2,
        "field missing or not a string": 2,
    }
    assert report.as_dict()["rows_skipped"] == 6


def kill_9_while_writing(path: Path) -> None:
    """A process writing ``path`` through atomic_file, killed by SIGKILL halfway."""
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from hrm_assets.common.atomic import atomic_file\n"
        "with atomic_file(Path(sys.argv[1])) as handle:\n"
        "    handle.write(b'half a file')\n"
        "    handle.flush()\n"
        "    os.kill(os.getpid(), 9)\n"
    )
    result = subprocess.run([sys.executable, "-c", code, str(path)], cwd=REPO_ROOT)
    assert result.returncode == -9


def test_a_killed_cleaning_runs_temporaries_are_removed_by_the_next_run(tmp_path):
    raw, out = tmp_path / "raw", tmp_path / "cleaned"
    write_raw_parquet(raw, GOOD)
    out.mkdir()
    kill_9_while_writing(out / "omnimath.jsonl")
    kill_9_while_writing(out / "gsm8k_train.jsonl")  # another source's: not this run's
    (leftover,) = [p for p in out.iterdir() if p.name.startswith(".tmp-omnimath.jsonl.")]
    (other,) = [p for p in out.iterdir() if p.name.startswith(".tmp-gsm8k_train.jsonl.")]
    users = [out / ".tmp-notes", out / ".tmp-omnimath.jsonl.notes"]
    for path in users:
        path.write_text("mine")
    result = run_cleaning(raw, out)
    assert result.returncode == 0, result.stderr
    assert f"removed {leftover.name} (left by a cleaning run that died)" in result.stdout
    assert not leftover.exists()
    assert other.read_bytes() == b"half a file"
    assert all(path.read_text() == "mine" for path in users)
    lines = (out / "omnimath.jsonl").read_text().splitlines()
    assert len(lines) == 2 * len(GOOD) and json.loads(lines[0])["instruction"] == "Find n0."


def test_a_live_runs_temporaries_are_not_taken_for_leftovers(tmp_path):
    # A run holding the source's cleaning lock is alive: the next run waits for it, and only
    # then removes what it left (here: what it would have renamed into place).
    raw, out = tmp_path / "raw", tmp_path / "cleaned"
    write_raw_parquet(raw, GOOD)
    out.mkdir()
    staged = out / ".tmp-omnimath.jsonl.0a1b2c3d4e5f"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from pathlib import Path\n"
            "from hrm_assets.common.atomic import exclusive_lock\n"
            "with exclusive_lock(Path(sys.argv[1])):\n"
            "    Path(sys.argv[2]).write_text('being written')\n"
            "    print('holding', flush=True)\n"
            "    sys.stdin.readline()\n",
            str(cleaning_lock_path(out, OMNIMATH)),
            str(staged),
        ],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "holding\n"
        reports = []

        def second_run() -> None:
            reports.append(clean_source(OMNIMATH, out, raw))

        with pytest.raises(BlockingIOError):  # held by the live process
            with exclusive_lock(cleaning_lock_path(out, OMNIMATH), wait=False):
                pass
        runner = threading.Thread(target=second_run)
        runner.start()
        runner.join(timeout=2)  # it cannot finish while the holder lives
        assert runner.is_alive() and staged.read_text() == "being written"
        holder.stdin.write("\n")
        holder.stdin.flush()
        runner.join(timeout=120)
        assert not runner.is_alive()
    finally:
        holder.kill()
        holder.wait()
    assert reports[0].swept == [staged.name]
    assert not staged.exists()
