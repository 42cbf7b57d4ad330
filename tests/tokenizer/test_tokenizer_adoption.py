"""A tokenizer.json hrm-data did not write is adopted, never replaced (issue 29)."""

from __future__ import annotations

import json

import pytest

from hrm_assets.tokenizer.train import (
    TokenizerOwnershipError,
    build_tokenizer,
    is_ours,
    record_path_of,
    train_tokenizer,
)


def _write_corpus(cleaned):
    cleaned.mkdir(parents=True, exist_ok=True)
    rows = [
        {"condition": "direct", "instruction": f"what is {i} plus {i}", "response": f"{2 * i}"}
        for i in range(120)
    ]
    (cleaned / "a.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def _state(folder):
    return {path.name: (path.read_bytes(), path.stat().st_mtime_ns) for path in folder.iterdir()}


@pytest.fixture
def users_tokenizer(tmp_path, small_tokenizer_path):
    """data_io's habit: a shipped tokenizer.json alone in its folder, no record of ours."""
    folder = tmp_path / "trained_tokenizers" / "bpe"
    folder.mkdir(parents=True)
    path = folder / "tokenizer.json"
    path.write_bytes(small_tokenizer_path.read_bytes())
    return path


def test_a_tokenizer_without_our_record_is_adopted_and_never_written(tmp_path, users_tokenizer):
    _write_corpus(tmp_path / "cleaned")
    before = _state(users_tokenizer.parent)
    messages = []
    outcome = build_tokenizer(tmp_path / "cleaned", users_tokenizer, [], 400, log=messages.append)
    assert outcome.adopted and not outcome.trained
    assert outcome.vocab_size == 2048
    assert "adopting" in messages[0] and "never modified" in messages[0]
    assert _state(users_tokenizer.parent) == before, "no byte, no record, no new file"
    assert not is_ours(users_tokenizer)


def test_retraining_over_an_adopted_tokenizer_is_refused(tmp_path, users_tokenizer):
    _write_corpus(tmp_path / "cleaned")
    before = _state(users_tokenizer.parent)
    with pytest.raises(TokenizerOwnershipError, match="retrain refused.*never replaced in place"):
        build_tokenizer(tmp_path / "cleaned", users_tokenizer, [], 400, retrain=True)
    other = tmp_path / "other.json"
    train_tokenizer(["a b c d e f"] * 20, vocab_size=300).save(str(other))
    with pytest.raises(TokenizerOwnershipError, match="not written by hrm-data and differs"):
        build_tokenizer(tmp_path / "cleaned", users_tokenizer, [], adopt_path=other)
    assert _state(users_tokenizer.parent) == before


def test_our_tokenizer_replaced_by_the_user_becomes_theirs(tmp_path, small_tokenizer_path):
    _write_corpus(tmp_path / "cleaned")
    out = tmp_path / "tokenizer" / "tokenizer.json"
    trained = build_tokenizer(tmp_path / "cleaned", out, [], 400)
    assert trained.trained and is_ours(out)
    assert json.loads(record_path_of(out).read_text())["sha256"] == trained.sha256

    out.write_bytes(small_tokenizer_path.read_bytes())  # the user puts their own in its place
    assert not is_ours(out)
    kept = build_tokenizer(tmp_path / "cleaned", out, [], 450)  # new settings: no retraining
    assert kept.adopted and out.read_bytes() == small_tokenizer_path.read_bytes()


def test_a_record_written_before_the_file_keeps_it_ours(tmp_path):
    """A crash between the record and the file leaves a tokenizer that is retrained, not
    adopted: the interim record names both the old and the coming bytes."""
    _write_corpus(tmp_path / "cleaned")
    out = tmp_path / "tokenizer" / "tokenizer.json"
    first = build_tokenizer(tmp_path / "cleaned", out, [], 400)
    record_path_of(out).write_text(json.dumps({"sha256": first.sha256, "pending_sha256": "f0"}))
    assert is_ours(out)
    again = build_tokenizer(tmp_path / "cleaned", out, [], 400)
    assert again.trained and not again.adopted  # no settings in the interim record: retrained
