"""Issue 16: the Rust row reader (hrm-tokenize) and the Python one (validation, the tokenizer
trainer) take the same JSONL lines and reject the same ones, by data_io's rule (serde_json):
only space, tab, CR and LF around a row, and every ``\\u`` escape valid Unicode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hrm_assets.cleaning.rows import Row, RowError, iter_cleaned_rows
from hrm_assets.common.layout import CleanedFile
from hrm_assets.tokenization.tokenize import tokenize_file

ROW = json.dumps({"condition": "", "instruction": "q", "response": "a"})
LONE = '{"condition": "", "instruction": "x \\ud800 y", "response": "a"}'
LONE_TRAILING = '{"condition": "", "instruction": "\\udc00", "response": "a"}'
LONE_IN_A_KEY = '{"\\ud800": 1, "condition": "", "instruction": "q", "response": "a"}'
PAIR = '{"condition": "", "instruction": "\\ud83d\\ude00", "response": "a"}'

REJECTED = {
    "form-feed-before": f"{ROW}\n\f{ROW}\n",
    "form-feed-after": f"{ROW}\n{ROW}\f\n",
    "form-feed-alone": f"{ROW}\n\f\n",
    "vertical-tab-before": f"{ROW}\n\v{ROW}\n",
    "lone-leading-surrogate": f"{ROW}\n{LONE}\n",
    "lone-trailing-surrogate": f"{ROW}\n{LONE_TRAILING}\n",
    "lone-surrogate-in-a-key": f"{ROW}\n{LONE_IN_A_KEY}\n",
}
ACCEPTED = {
    "json-whitespace": (f" \t{ROW}\r\n\t \n{ROW}\n", [Row("", "q", "a")] * 2),
    "surrogate-pair": (f"{PAIR}\n", [Row("", "\U0001f600", "a")]),
}


def rust_read(path: Path, tmp_path: Path, tokenizer) -> int:
    """The rows the Rust reader takes from ``path`` (through hrm-tokenize's core)."""
    cleaned = CleanedFile(path=path, root=path.parent)
    return tokenize_file(cleaned, tmp_path / "out", tokenizer).rows


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_both_readers_reject_the_same_lines(tmp_path, small_tokenizer_path, case):
    path = tmp_path / "cleaned" / "x.jsonl"
    path.parent.mkdir()
    path.write_text(REJECTED[case], encoding="utf-8", errors="surrogatepass")
    with pytest.raises(RowError) as python_error:
        list(iter_cleaned_rows(path))
    with pytest.raises(Exception) as rust_error:  # noqa: PT011 - the Rust core's RowError
        rust_read(path, tmp_path, small_tokenizer_path)
    for error in (python_error.value, rust_error.value):
        assert f"{path}: row 2: malformed JSON" in str(error), str(error)
    assert not (tmp_path / "out" / "x.jsonl").exists()


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_both_readers_take_the_same_lines(tmp_path, small_tokenizer_path, case):
    text, rows = ACCEPTED[case]
    path = tmp_path / "cleaned" / "x.jsonl"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    assert list(iter_cleaned_rows(path)) == rows
    assert rust_read(path, tmp_path, small_tokenizer_path) == len(rows)
