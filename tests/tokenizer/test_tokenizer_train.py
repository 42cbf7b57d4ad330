"""Tokenizer training in data_io's configuration, and the tokenizer asset's keep/retrain rule."""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer

from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.sampling.prefix_config import PrefixRule
from hrm_assets.tokenizer.train import (
    SPECIAL_TOKENS,
    SPLIT_PATTERN,
    TRUNCATE_CHARS,
    build_tokenizer,
    file_documents,
    train_tokenizer,
)


def _write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for condition, instruction, response in rows:
            record = {"condition": condition, "instruction": instruction, "response": response}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def test_trained_tokenizer_has_data_ios_configuration(small_tokenizer_path):
    config = json.loads(small_tokenizer_path.read_text(encoding="utf-8"))
    assert config["normalizer"]["type"] == "NFC"
    split, byte_level = config["pre_tokenizer"]["pretokenizers"]
    assert split["type"] == "Split" and split["pattern"]["Regex"] == SPLIT_PATTERN
    assert split["behavior"] == "Isolated" and split["invert"] is False
    assert byte_level == {
        "type": "ByteLevel",
        "add_prefix_space": False,
        "trim_offsets": False,
        "use_regex": False,
    }
    assert config["model"]["type"] == "BPE"
    added = config["added_tokens"]
    assert [token["content"] for token in added] == list(SPECIAL_TOKENS)
    assert [token["id"] for token in added] == list(range(len(SPECIAL_TOKENS)))
    assert all(token["special"] for token in added)
    assert len(SPECIAL_TOKENS) == 31
    tokenizer = Tokenizer.from_file(str(small_tokenizer_path))
    assert tokenizer.get_vocab_size(with_added_tokens=True) == 2048


def test_every_byte_is_encodable_and_round_trips(small_tokenizer_path):
    tokenizer = Tokenizer.from_file(str(small_tokenizer_path))
    text = "never seen: \u0916\u093f \U0001f9ec \x00\x7f ok"
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    assert tokenizer.decode(ids, skip_special_tokens=False) == text


def test_vocab_too_small_for_the_special_tokens_is_refused():
    with pytest.raises(ValueError, match="too small"):
        train_tokenizer(["a b c"], vocab_size=100)


def test_documents_are_truncated_and_capped_per_file(tmp_path):
    long_text = "x" * (TRUNCATE_CHARS + 500)
    _write_jsonl(tmp_path / "capped.jsonl", [("direct", f"q{i}", f"a{i}") for i in range(50)])
    _write_jsonl(tmp_path / "free.jsonl", [("cot", long_text, "short")])
    files = {item.safe_name: item for item in scan_cleaned_files(tmp_path)}
    rules = [PrefixRule(prefix="capped", max_per_file=3)]

    free = file_documents(files["free.jsonl"], rules)
    assert free == ["x" * TRUNCATE_CHARS, "short"]

    capped = file_documents(files["capped.jsonl"], rules)
    assert len(capped) == 30  # 10 x max_per_file of the 100 documents
    assert set(capped) <= {f"q{i}" for i in range(50)} | {f"a{i}" for i in range(50)}
    assert capped == file_documents(files["capped.jsonl"], rules), "deterministic"
    assert capped != file_documents(files["capped.jsonl"], rules, seed=1)


def test_build_keeps_an_existing_tokenizer_until_settings_change_or_retrain(tmp_path):
    cleaned = tmp_path / "cleaned"
    words = ["".join(chr(97 + (i * 7 + k * 3) % 26) for k in range(3 + i % 6)) for i in range(300)]
    rows = [
        ("direct", " ".join(words[(i * j) % 300] for j in range(12)), words[i % 300])
        for i in range(200)
    ]
    _write_jsonl(cleaned / "a.jsonl", rows)
    out = tmp_path / "tokenizer" / "tokenizer.json"

    first = build_tokenizer(cleaned, out, [], vocab_size=400)
    assert first.trained and first.documents == 400 and first.vocab_size <= 400
    mtime = out.stat().st_mtime_ns

    again = build_tokenizer(cleaned, out, [], vocab_size=400)
    assert not again.trained and not again.corpus_changed
    assert again.sha256 == first.sha256 and out.stat().st_mtime_ns == mtime

    _write_jsonl(cleaned / "b.jsonl", [("cot", "new text here", "new answer")])
    kept = build_tokenizer(cleaned, out, [], vocab_size=400)
    assert not kept.trained and kept.corpus_changed and kept.sha256 == first.sha256

    retrained = build_tokenizer(cleaned, out, [], vocab_size=400, retrain=True)
    assert retrained.trained and retrained.documents == 402

    resized = build_tokenizer(cleaned, out, [], vocab_size=450)
    assert resized.trained and resized.sha256 != retrained.sha256


def test_build_adopts_a_given_tokenizer_json(tmp_path, small_tokenizer_path):
    out = tmp_path / "tokenizer.json"
    outcome = build_tokenizer(tmp_path, out, [], adopt_path=small_tokenizer_path)
    assert out.read_bytes() == small_tokenizer_path.read_bytes()
    assert outcome.vocab_size == 2048 and not outcome.trained
    mtime = out.stat().st_mtime_ns
    build_tokenizer(tmp_path, out, [], adopt_path=small_tokenizer_path)
    assert out.stat().st_mtime_ns == mtime, "an identical adoption touches nothing"


def test_bad_tokenizer_json_is_a_clear_error(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(Exception, match="(?i)expected|json|line"):
        build_tokenizer(tmp_path, tmp_path / "out.json", [], adopt_path=bad)
