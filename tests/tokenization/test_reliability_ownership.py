"""Issue 16, tokenizer side: hrm-tokenize removes or replaces only what it can prove it wrote
(the ``.hrm-data`` marker, or its own temporary names); anything else in the way is an error
naming the path, and the output root may not overlap an input root."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from support.tokenizer_reference import write_jsonl

from hrm_assets.common.atomic import (
    STALE_AFTER_SECONDS,
    atomic_directory,
    atomic_write_text,
    is_own_temporary,
    leftovers_of,
    remove_stale_temporaries,
)
from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.tokenization.tokenize import (
    ForeignOutputError,
    TokenizeFailure,
    TokenizeOutcome,
    tokenize_files,
)

ROWS = [
    {"condition": "direct", "instruction": "What is 2 + 3?", "response": "5"},
    {"condition": "cot", "instruction": "Name a prime.", "response": "7 is prime."},
]


@pytest.fixture
def cleaned(tmp_path) -> Path:
    root = tmp_path / "cleaned"
    write_jsonl(root / "x.jsonl", ROWS)
    write_jsonl(root / "sub" / "y.jsonl", ROWS[:1])
    return root


def run_tokenize(*args) -> subprocess.CompletedProcess:
    """hrm-tokenize as its own process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "hrm_assets.tokenization", *map(str, args), "--no-progress"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize(
    "output", ["same", "inside-input", "input-inside", "same-through-a-symlink"]
)
def test_output_overlapping_input_is_refused_and_input_kept(
    tmp_path, cleaned, small_tokenizer_path, output
):
    before = snapshot(cleaned)
    inputs = [cleaned]
    if output == "same":
        out = cleaned
    elif output == "inside-input":
        out = cleaned / "tokenized"
    elif output == "input-inside":
        out = tmp_path
    else:
        out = tmp_path / "link"
        out.symlink_to(cleaned)
    result = run_tokenize(*inputs, "-o", out, "-t", small_tokenizer_path)
    assert result.returncode == 1, result.stderr
    assert "error:" in result.stderr and "choose an -o outside every input" in result.stderr
    assert "Traceback" not in result.stderr
    assert snapshot(cleaned) == before
    assert not (cleaned / "tokenized").exists()


def test_the_overlap_rule_holds_for_tokenize_files_too(cleaned, small_tokenizer_path):
    # The Dagster tokenized asset calls tokenize_files with the cleaned root's files.
    files = scan_cleaned_files(cleaned)
    with pytest.raises(ValueError, match="outside every input"):
        list(tokenize_files(files, cleaned, small_tokenizer_path))
    assert snapshot(cleaned).keys() == {"x.jsonl", "sub/y.jsonl"}


@pytest.mark.parametrize("kind", ["folder", "file", "symlink"])
def test_foreign_entry_named_like_an_output_is_an_error_naming_it(
    tmp_path, cleaned, small_tokenizer_path, kind
):
    out = tmp_path / "out"
    out.mkdir()
    foreign = out / "x.jsonl"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("mine")
    if kind == "folder":
        foreign.mkdir()
        (foreign / "notes.txt").write_text("mine")
    elif kind == "file":
        foreign.write_text("mine")
    else:
        foreign.symlink_to(elsewhere)
    result = run_tokenize(cleaned, "-o", out, "-t", small_tokenizer_path)
    assert result.returncode == 1, result.stderr
    assert f"{foreign}: a {kind} that hrm-tokenize did not write" in result.stderr
    assert "1 file(s) failed: x.jsonl" in result.stderr
    # Left exactly as it was; the other file was tokenized.
    if kind == "folder":
        assert snapshot(foreign) == {"notes.txt": b"mine"}
    elif kind == "file":
        assert foreign.read_text() == "mine"
    else:
        assert foreign.is_symlink() and snapshot(elsewhere) == {"notes.txt": b"mine"}
    assert (out / "sub__y.jsonl" / ".hrm-data").is_file()
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


def test_foreign_folder_fails_its_file_in_tokenize_files(tmp_path, cleaned, small_tokenizer_path):
    out = tmp_path / "out"
    (out / "x.jsonl").mkdir(parents=True)
    results = list(tokenize_files(scan_cleaned_files(cleaned), out, small_tokenizer_path))
    by_name = {result.safe_name: result for result in results}
    assert isinstance(by_name["x.jsonl"], TokenizeFailure)
    assert isinstance(by_name["x.jsonl"].error, ForeignOutputError)
    assert isinstance(by_name["sub__y.jsonl"], TokenizeOutcome)
    assert list((out / "x.jsonl").iterdir()) == []


def test_an_owned_folder_is_still_replaced(tmp_path, cleaned, small_tokenizer_path):
    out = tmp_path / "out"
    assert run_tokenize(cleaned, "-o", out, "-t", small_tokenizer_path).returncode == 0
    write_jsonl(cleaned / "x.jsonl", ROWS[::-1])
    result = run_tokenize(cleaned, "-o", out, "-t", small_tokenizer_path)
    assert result.returncode == 0, result.stderr
    assert "tokenized 1 file(s), skipped 1 unchanged" in result.stderr


def test_the_sweep_takes_only_the_projects_own_temporary_names(
    tmp_path, cleaned, small_tokenizer_path
):
    out = tmp_path / "out"
    out.mkdir()
    users = [".tmp-notes", ".tmp-sampled.notes", ".tmp-x.jsonl.backup", ".tmp-v.1.2.3"]
    for name in users:
        (out / name).write_text("mine")
    ours = out / ".tmp-gone.jsonl.0a1b2c3d4e5f"
    ours.mkdir()
    rust_staged = out / ".tmp-gone.jsonl.4242.1700000000000000000.0"
    rust_staged.mkdir()
    day_ago = time.time() - STALE_AFTER_SECONDS - 60
    for path in [out / name for name in users] + [ours, rust_staged]:
        os.utime(path, (day_ago, day_ago))
    result = run_tokenize(cleaned, "-o", out, "-t", small_tokenizer_path)
    assert result.returncode == 0, result.stderr
    assert not ours.exists() and not rust_staged.exists()
    for name in users:
        assert (out / name).read_text() == "mine"


def test_own_temporary_names_are_the_ones_the_writers_make(tmp_path, monkeypatch):
    renamed_to = []
    real_rename = os.rename

    def recording_rename(source, destination):
        renamed_to.append(Path(destination).name)
        return real_rename(source, destination)

    monkeypatch.setattr(os, "rename", recording_rename)
    monkeypatch.setattr(os, "replace", recording_rename)
    staged_names = []
    for _ in range(2):  # the second replaces the first, which is retired aside first
        with atomic_directory(tmp_path / "x.jsonl") as staged:
            staged_names.append(staged.name)
    atomic_write_text(tmp_path / "info.json", "{}")
    temporaries = staged_names + [name for name in renamed_to if name.startswith(".tmp-")]
    assert [name.startswith(".tmp-retired-") for name in temporaries] == [False, False, True]
    assert all(is_own_temporary(name) for name in temporaries), temporaries
    # A user's hidden names beside an output are neither its leftovers nor swept.
    (tmp_path / ".tmp-sampled.notes").write_text("mine")
    (tmp_path / ".tmp-notes").write_text("mine")
    assert leftovers_of(tmp_path / "sampled") == []
    assert remove_stale_temporaries(tmp_path, older_than=-1) == []
