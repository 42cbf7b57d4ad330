"""dmmath's reader on columns (``read_pair_batches``, the Rust core's ``question_answer_lines``)
against Python itself: lines as ``open(path, encoding="utf-8")`` gives them in text mode,
stripped by ``str.strip()``, paired as the row path pairs them (``question_answer_pairs``),
whatever the block size; text that is not UTF-8 named by file and line; no pandas imported.

Every file here is SYNTHETIC text written by the tests.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hrm_assets.cleaning.sources import dmmath
from tests.cleaning.test_columnar import REPO_ROOT
from tests.cleaning.test_columnar_sources import write_dmmath

# Line ends of text mode, and characters str.splitlines() splits at but text mode does not.
ENDS = ["\n", "\r", "\r\n"]
NOT_ENDS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
OTHERS = [" ", "\t", "\x1f", "\xa0", "\u3000", "\u200b", "\ufeff", "a", "é", "∑", "😀"]


def columnar_pairs(path: Path) -> list[dict]:
    pairs = []
    for batch in dmmath.read_pair_batches(path):
        pairs += batch.to_pylist()
    return pairs


def text_mode_pairs(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return list(dmmath.question_answer_pairs(handle))


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(ENDS + NOT_ENDS + OTHERS), max_size=60),
    block=st.integers(min_value=1, max_value=24),
)
def test_pairs_are_text_mode_s_whatever_the_block(tmp_path_factory, pieces, block):
    path = tmp_path_factory.mktemp("dmmath") / "module.txt"
    path.write_bytes("".join(pieces).encode("utf-8"))
    # Small blocks: cuts fall inside characters and between \r and \n.
    original = dmmath.BLOCK_BYTES
    dmmath.BLOCK_BYTES = block
    try:
        assert columnar_pairs(path) == text_mode_pairs(path)
    finally:
        dmmath.BLOCK_BYTES = original


def test_every_character_str_strip_removes_and_no_other(tmp_path):
    characters = [
        chr(code)
        for code in range(0x110000)
        if not 0xD800 <= code <= 0xDFFF and chr(code) not in "\r\n"
    ]
    path = tmp_path / "module.txt"
    # Each character around a word, as a question, and alone, as its answer.
    path.write_bytes("".join(f"{c}{c}x{c}\n{c}\r\n" for c in characters).encode("utf-8"))
    pairs = columnar_pairs(path)
    assert len(pairs) == len(characters)
    assert pairs == text_mode_pairs(path)
    removed = {c for c, pair in zip(characters, pairs, strict=True) if pair["answer"] == ""}
    assert removed == {c for c in characters if c.isspace()}


def test_a_file_s_blocks_carry_their_raw_bytes_and_its_unpaired_line(tmp_path, monkeypatch):
    monkeypatch.setattr(dmmath, "BLOCK_BYTES", 10)
    path = tmp_path / "module.txt"
    path.write_bytes(b"What is 1 + 1?\r\n 2 \nWhat is 2 + 2?\n4\nleft over")
    batches = list(dmmath.read_pair_batches(path))
    raw_bytes = [int(batch.schema.metadata[b"hrm.raw_bytes"]) for batch in batches[:-1]]
    assert sum(raw_bytes) == path.stat().st_size
    assert batches[-1].to_pylist() == [{"question": "left over", "answer": None}]
    assert columnar_pairs(path) == text_mode_pairs(path)
    (tmp_path / "empty.txt").write_bytes(b"")
    assert columnar_pairs(tmp_path / "empty.txt") == []


def test_a_file_of_many_pages_is_read_through_the_pages_its_blocks_let_go(tmp_path, monkeypatch):
    # The file is mapped; a block's pages are given back once its lines are read, and a line
    # longer than a block grows the block over several pages.
    import mmap

    monkeypatch.setattr(dmmath, "BLOCK_BYTES", mmap.PAGESIZE + 7)
    rng = random.Random(3)
    lines = [" ".join(rng.choice(["é", "x" * rng.randint(1, 90), "\u3000"]) for _ in range(9))]
    lines += ["long " * (3 * mmap.PAGESIZE // 5)]
    lines += [f" q{index} {'y' * rng.randint(0, 300)}" for index in range(2000)]
    path = tmp_path / "module.txt"
    path.write_bytes("".join(line + rng.choice(ENDS) for line in lines).encode("utf-8"))
    assert path.stat().st_size > 50 * mmap.PAGESIZE
    batches = list(dmmath.read_pair_batches(path))
    assert len(batches) > 50
    assert sum(int(batch.schema.metadata[b"hrm.raw_bytes"]) for batch in batches) == (
        path.stat().st_size
    )
    assert columnar_pairs(path) == text_mode_pairs(path)


@pytest.mark.parametrize("block", [3, 1 << 20])
def test_text_that_is_not_utf8_names_the_file_and_line(tmp_path, monkeypatch, block):
    monkeypatch.setattr(dmmath, "BLOCK_BYTES", block)
    path = tmp_path / "module.txt"
    path.write_bytes(b"Q1\nA1\r\nQ2 \xc3\xa9\rA2\nQ3 \xff\nA3\n")
    with pytest.raises(ValueError, match=rf"{path}: line 5, byte 4: text is not valid UTF-8"):
        columnar_pairs(path)


def test_cleaning_dmmath_imports_no_pandas(tmp_path):
    # pyarrow imports pandas on its first conversion of a Python or numpy value: 0.4 s a
    # process, more than reading all the lines takes.
    write_dmmath(tmp_path / "raw", random.Random(5), lines=300)
    code = """
        import json, sys
        from hrm_assets.cleaning.clean import clean_source
        from hrm_assets.cleaning.sources import dmmath, get_source

        dmmath.BLOCK_BYTES = 700  # pairs across blocks
        reports = [
            clean_source(get_source("dmmath"), f"{sys.argv[1]}/{threads}", sys.argv[2],
                         threads=threads)
            for threads in (1, 2)
        ]
        print(json.dumps({
            "engines": [report.engine for report in reports],
            "rows": [report.rows_written for report in reports],
            "skipped": sorted(reports[0].skipped),
            "pandas": "pandas" in sys.modules,
        }))
        """
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), str(tmp_path / "out"), str(tmp_path / "raw")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["engines"] == ["columnar", "columnar"]
    assert result["rows"][0] == result["rows"][1] == 6 * 150
    assert result["skipped"] == [dmmath.ODD_LINES]
    assert result["pandas"] is False
