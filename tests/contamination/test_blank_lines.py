"""Cleaned JSONL files with blank lines (leading, between rows, trailing, ``\\r\\n`` line ends):
the tokenizer skips them, so a hit's line number is not its row's position. The sidecar records
where lines and positions part (``row_lines``), ``decontaminate`` leaves out exactly the hit rows
and ``dedup`` the repeated one, counted like every other drop; with both off the epochs are
those of folders without sidecars, and the arrays data_io's own binary wrote for such a file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from contamination.test_row_filters import (
    epoch_bytes,
    sample,
    stats,
    tokenized_with_and_without_sidecars,
)
from contamination.test_sidecar import tokenize
from hrm_assets.contamination.sidecar import read_sidecar

GOLDEN = Path(__file__).parent.parent / "golden" / "tokenized"
NAME = "gsm8k__train.jsonl"


def line(instruction: str, response: str) -> bytes:
    row = {"condition": "direct", "instruction": instruction, "response": response}
    return json.dumps(row).encode("utf-8")


@pytest.fixture
def blank_lined(tmp_path, monkeypatch, eval_sets, small_tokenizer_path):
    """A cleaned JSONL file whose five rows are on lines 3, 4, 6, 9 and 10 (rows 2 and 4 hold
    GSM8K test questions, row 5 repeats row 1), tokenized with and without sidecars."""
    gsm8k = eval_sets[0]
    first, second = gsm8k.texts["question"][7], gsm8k.texts["question"][11]
    content = b"".join(
        [
            b"\n",
            b" \t\n",
            line("Name a prime number.", "7") + b"\r\n",
            line(first, "12") + b"\r\n",
            b"\r\n",
            line("Spell cat backwards.", "tac") + b"\n",
            b"\n\n",
            line("Please: " + second.upper(), "5") + b"\n",
            line("NAME a prime number!", "7") + b"\r\n",
            b"\n\r\n\n",
        ]
    )
    cleaned = tmp_path / "cleaned"
    (cleaned / "gsm8k").mkdir(parents=True)
    (cleaned / "gsm8k" / "train.jsonl").write_bytes(content)
    return tokenized_with_and_without_sidecars(
        cleaned, tmp_path, monkeypatch, eval_sets, small_tokenizer_path, [{"prefix": "gsm8k__"}]
    )


def sampled_rows(output: Path, tokenized: Path) -> set[int]:
    """The positions (from 1) of the task's rows sampled in the first epoch."""
    starts = np.load(tokenized / NAME / "inst_start.npy").astype(np.int64)
    drawn = set(np.load(output / "epoch_0" / "inst_start.npy").tolist())
    return {int(row) + 1 for row in np.flatnonzero(np.isin(starts, list(drawn)))}


def test_hits_after_blank_lines_are_placed_on_their_rows(tmp_path, blank_lined):
    scanned, plain, rules = blank_lined
    sidecar = read_sidecar(scanned / NAME)
    assert sidecar.rows == 5
    assert sorted(hit[0] for hit in sidecar.hits) == [4, 9]
    assert sidecar.row_lines == [[3, 1], [6, 3], [9, 4]]
    assert sorted(sidecar.hit_positions()) == [2, 4]

    off = sample(scanned, tmp_path / "off", rules)
    assert sampled_rows(tmp_path / "off", scanned) == {1, 2, 3, 4, 5}
    decontaminated = sample(scanned, tmp_path / "decon", rules, decontaminate=True)
    task = stats(decontaminated)[NAME]
    assert (task.rows, task.rows_dropped_contaminated, task.rows_dropped_duplicate) == (3, 2, 0)
    assert sampled_rows(tmp_path / "decon", scanned) == {1, 3, 5}
    deduped = stats(sample(scanned, tmp_path / "dedup", rules, dedup=True))[NAME]
    assert (deduped.rows, deduped.rows_dropped_duplicate) == (4, 1)
    assert sampled_rows(tmp_path / "dedup", scanned) == {1, 2, 3, 4}
    both = stats(sample(scanned, tmp_path / "both", rules, decontaminate=True, dedup=True))[NAME]
    assert (both.rows, both.rows_dropped_contaminated, both.rows_dropped_duplicate) == (2, 2, 1)
    assert sampled_rows(tmp_path / "both", scanned) == {1, 3}
    card = json.loads((tmp_path / "both" / "datacard.json").read_bytes())
    assert card["totals"]["rows_dropped_contaminated"] == 2
    assert card["totals"]["rows_dropped_duplicate"] == 1

    sample(plain, tmp_path / "without", rules)
    assert epoch_bytes(tmp_path / "off") == epoch_bytes(tmp_path / "without") != {}
    assert stats(off)[NAME].rows == 5


def test_a_blank_lined_file_keeps_data_ios_arrays_with_its_sidecars(tmp_path, monkeypatch):
    """data_io's own outputs for ``crlf.jsonl`` (rows on lines 1 and 3, CRLF, a blank line
    between and after): the folder tokenized with sidecars holds the same arrays."""
    monkeypatch.setenv("HRM_DATA_ROOT", str(tmp_path / "data"))
    cleaned = tmp_path / "cleaned"
    cleaned.mkdir()
    (cleaned / "crlf.jsonl").write_bytes((GOLDEN / "input" / "cleaned" / "crlf.jsonl").read_bytes())
    tokenize(cleaned, tmp_path / "out", GOLDEN / "input" / "tokenizer.json")
    folder = tmp_path / "out" / "crlf.jsonl"
    recorded = {}
    for entry in (GOLDEN / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, name = entry.split("  ")
        if name.startswith("data_io/default/crlf.jsonl/"):
            recorded[name.rsplit("/", 1)[-1]] = digest
    assert len(recorded) == 5
    for name, digest in recorded.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    sidecar = read_sidecar(folder)
    assert (sidecar.rows, sidecar.row_lines) == (2, [[3, 2]])
