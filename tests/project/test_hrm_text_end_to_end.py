"""HRM-Text end to end: cleaned rows -> tokenized -> sampled, read the way HRM-Text reads them.

What HRM-Text does, from its source (sapientinc/HRM-Text), re-implemented here in a few lines:

- ``dataset_new.py`` (``V1Dataset``): reads ``metadata.json`` as ``V1DatasetMeta``, takes one
  off ``max_seq_len`` (the autoregressive shift), requires ``vocab_size`` null and pops
  ``tokenizer_info.vocab_size`` (padded to a multiple of 256); memory-maps ``tokens.npy`` and
  ``epoch_<n>/{inst_start,inst_len,resp_start,resp_len}.npy``; a row of length
  ``inst_len + resp_len - 1`` becomes inputs ``inst + resp[:-1]``, labels ``inst[1:] + resp``
  and a causal segment of ``resp_len - 1`` tokens.
- ``simple_inference_engine.py``: ``AutoTokenizer.from_pretrained(tokenizer_path)``; a prompt is
  ``tokenizer(boq + condition tokens + prompt + eoq, add_special_tokens=False)``; generation
  stops at the id of ``eoa``.
- ``conversion/convert_to_hf.py``: ``--tokenizer_path`` (its folder when it names a
  ``tokenizer.json``) through ``AutoTokenizer``, bos/eos set to BOQ/EOA, ``save_pretrained``.
"""

from __future__ import annotations

import json
import math
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import transformers
from conftest import TRICKY_TEXTS
from pydantic import BaseModel
from support.cleaned_rows import PLAIN_TEXTS, cleaned_rows
from support.tokenized_trees import write_rules, write_tokenized

from hrm_assets.common.manifest import read_manifest, verify_folder
from hrm_assets.sampling import cli as sample
from hrm_assets.sampling.sampler import SamplingError, make_config, sample_tokenized
from hrm_assets.sampling.tokenizer_folder import SPECIAL_TOKENS_MAP, TOKENIZER_CONFIG, TOKENIZER_DIR
from hrm_assets.tokenization.tokenize import TokenizerSetup, tokenize_tree
from hrm_assets.tokenizer.train import train_tokenizer

SPAN_NAMES = ("inst_start", "inst_len", "resp_start", "resp_len")
CONTEXT_SIZE = 40


# --------------------------------------------------------------------------- HRM-Text's side


class V1DatasetMeta(BaseModel):
    tokenizer_info: dict = {}
    vocab_size: int | None = None
    max_seq_len: int
    total_length: int


def hrm_text_rows(folder: Path, epoch: int):
    """What HRM-Text's V1Dataset makes of one epoch: its metadata, then per row (in the
    epoch's order) the instruction and response ids, the model inputs and labels, and the
    length of the causal segment."""
    meta = V1DatasetMeta(**json.loads((folder / "metadata.json").read_text(encoding="utf-8")))
    meta.max_seq_len -= 1
    assert meta.vocab_size is None
    meta.vocab_size = math.ceil(meta.tokenizer_info.pop("vocab_size") / 256) * 256
    tokens = np.load(folder / "tokens.npy", mmap_mode="r")
    spans = {
        name: np.load(folder / f"epoch_{epoch}" / f"{name}.npy", mmap_mode="r")
        for name in SPAN_NAMES
    }
    rows = []
    for i in range(len(spans["inst_start"])):
        inst = tokens[spans["inst_start"][i] : spans["inst_start"][i] + spans["inst_len"][i]]
        resp = tokens[spans["resp_start"][i] : spans["resp_start"][i] + spans["resp_len"][i]]
        inst, resp = inst.astype(np.int32), resp.astype(np.int32)
        rows.append(
            {
                "inst_start": int(spans["inst_start"][i]),
                "inst": inst.tolist(),
                "resp": resp.tolist(),
                "inputs": np.concatenate([inst, resp[:-1]]).tolist(),
                "labels": np.concatenate([inst[1:], resp]).tolist(),
                "causal_len": len(resp) - 1,
            }
        )
    return meta, rows


def hrm_text_prompt(tokenizer, tokenizer_info: dict, condition: str, prompt: str) -> list[int]:
    """simple_inference_engine.InferenceCheckpoint.tokenize_prompt, as a function."""
    tags = "".join(tokenizer_info["condition_mapping"][c] for c in condition.split(","))
    text = f"{tokenizer_info['boq']}{tags}{prompt}{tokenizer_info['eoq']}"
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def export_tokenizer_folder(path: Path) -> Path:
    """convert_to_hf.tokenizer_path: the folder of a tokenizer.json, else the path itself."""
    return path.parent if path.name == "tokenizer.json" else path


# --------------------------------------------------------------------------- our side


@pytest.fixture
def tokenizer_json(tmp_path, small_tokenizer_path) -> Path:
    """A copy of the session's small tokenizer, which a test may replace."""
    path = tmp_path / "tokenizer" / "tokenizer.json"
    path.parent.mkdir()
    path.write_bytes(small_tokenizer_path.read_bytes())
    return path


@pytest.fixture
def pipeline(tmp_path, tokenizer_json):
    """A cleaned root, its tokenized root (real tokenizer) and a rules file."""
    cleaned = tmp_path / "cleaned"
    cleaned.mkdir()
    rows = cleaned_rows()
    for name, file_rows in rows.items():
        (cleaned / name).write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in file_rows),
            encoding="utf-8",
        )
    tokenized = tmp_path / "tokenized"
    tokenize_tree([cleaned], tokenized, tokenizer_json, progress=False)
    rules = write_rules(tmp_path / "rules.yaml", [])
    return tokenized, rules, rows


def sample_into(output: Path, tokenized: Path, rules: Path, **settings):
    values = {"epochs": 2, "context_size": CONTEXT_SIZE, **settings}
    config = make_config(
        tokenized_path=tokenized, output_path=output, prefix_config_path=rules, **values
    )
    return sample_tokenized(config)


def source_row(result, rows, inst_start: int) -> tuple[dict[str, str], bool]:
    """The cleaned row a sampled span comes from (by its offset in tokens.npy), and whether
    it is the last row of its task."""
    task = next(
        t
        for t in result.tasks
        if t.token_offset <= inst_start < t.token_offset + max(t.token_count, 1)
    )
    starts = np.load(result.config.tokenized_path / task.name / "inst_start.npy")
    index = int(np.searchsorted(starts, inst_start - task.token_offset))
    assert starts[index] == inst_start - task.token_offset
    return rows[task.name][index], index == len(starts) - 1


# --------------------------------------------------------------------------- tests


def test_hrm_text_reads_the_epochs_and_the_tokenizer_folder_gives_back_the_text(
    pipeline, tmp_path, tokenizer_json
):
    tokenized, rules, rows = pipeline
    out = tmp_path / "sampled"
    result = sample_into(out, tokenized, rules)
    assert result.tokenizer_dir == out / TOKENIZER_DIR
    assert not [w for w in result.warnings if "tokenizer" in w], result.warnings

    # The folder: the very tokenizer.json tokenization used, a config, a special tokens map;
    # listed in the manifest, so hrm-verify and manifest_valid cover it.
    folder = out / TOKENIZER_DIR
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["tokenizer.json", TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP]
    )
    assert (folder / "tokenizer.json").read_bytes() == tokenizer_json.read_bytes()
    listed = read_manifest(out)["files"]
    assert {f"{TOKENIZER_DIR}/{p.name}" for p in folder.iterdir()} <= set(listed)
    assert verify_folder(out).ok

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), use_fast=True)
    info = json.loads((tokenized / "tokenizer_info.json").read_text(encoding="utf-8"))
    assert (tokenizer.bos_token, tokenizer.eos_token) == (info["boq"], info["eoa"])
    assert len(tokenizer) == info["vocab_size"]
    eoa_id = tokenizer.convert_tokens_to_ids(info["eoa"])  # HRM-Text's stop token

    # Plain text encodes to the ids our tokenizer gives it; text with special-token strings
    # too when they are split as text (docs/SAMPLING.md).
    encoder = TokenizerSetup.load(tokenizer_json).encoder()
    for text in PLAIN_TEXTS:
        ours = encoder.encode_texts([text])[0]
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == ours, text
    for text in TRICKY_TEXTS:
        ours = encoder.encode_texts([text])[0]
        split = tokenizer(text, add_special_tokens=False, split_special_tokens=True)
        assert split["input_ids"] == ours, text

    seen = truncated_seen = 0
    for epoch in range(2):
        meta, sampled = hrm_text_rows(out, epoch)
        assert meta.max_seq_len == CONTEXT_SIZE - 1
        assert meta.vocab_size == 2048 and meta.tokenizer_info["tokenizer_path"]
        for row in sampled:
            assert len(row["inputs"]) == len(row["labels"]) <= meta.max_seq_len
            assert max(row["inputs"] + row["labels"]) < meta.vocab_size
            source, _ = source_row(result, rows, row["inst_start"])
            # HRM-Text's inference prompt for this row is the instruction it trained on.
            assert row["inst"] == hrm_text_prompt(
                tokenizer, info, source["condition"], source["instruction"]
            )
            response_ids = tokenizer(source["response"], add_special_tokens=False)["input_ids"]
            if row["resp"][-1:] == [eoa_id] and len(row["resp"]) == len(response_ids) + 1:
                # Whole: the response decodes to its (NFC-normalised) text.
                decoded = tokenizer.decode(row["resp"][:-1])
                assert decoded == unicodedata.normalize("NFC", source["response"])
            else:
                truncated_seen += 1
                assert row["resp"] == response_ids[: len(row["resp"])]
            seen += 1
    assert seen == sum(result.epoch_rows) and truncated_seen > 0


def test_export_round_trip_keeps_the_encoding(pipeline, tmp_path):
    """convert_to_hf: --tokenizer_path may name the folder or its tokenizer.json; bos and eos
    are set from tokenizer_info, and the saved tokenizer encodes as the original."""
    tokenized, rules, _ = pipeline
    out = tmp_path / "sampled"
    sample_into(out, tokenized, rules)
    info = json.loads((out / "metadata.json").read_text(encoding="utf-8"))["tokenizer_info"]
    for given in (out / TOKENIZER_DIR, out / TOKENIZER_DIR / "tokenizer.json"):
        folder = export_tokenizer_folder(given)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), use_fast=True)
        tokenizer.bos_token, tokenizer.eos_token = info["boq"], info["eoa"]
        exported = tmp_path / "hf" / given.name
        tokenizer.save_pretrained(str(exported))
        again = transformers.AutoTokenizer.from_pretrained(str(exported), use_fast=True)
        for text in PLAIN_TEXTS:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            assert again(text, add_special_tokens=False)["input_ids"] == ids
            assert again.decode(ids) == tokenizer.decode(ids)
        assert again.convert_tokens_to_ids(info["eoa"]) == again.eos_token_id


def test_one_token_responses_are_what_hrm_text_cannot_train_on(pipeline, tmp_path):
    """Truncation to one response token leaves HRM-Text an empty causal segment: kept and
    warned about by default (data_io's bytes), excluded with drop_short_after_truncate."""
    tokenized, rules, _ = pipeline
    kept = sample_into(tmp_path / "kept", tokenized, rules)
    short = kept.global_stats.rows_short_after_truncate
    assert short == 1  # the two-tag instruction of 18 digits
    (warning,) = [w for w in kept.warnings if "min_resp_length=2" in w]
    assert f"{short} row(s) were truncated" in warning and "growing.jsonl" in warning
    assert "drop_short_after_truncate=true" in warning
    empty_segments = sum(
        row["causal_len"] == 0
        for epoch in range(2)
        for row in hrm_text_rows(kept.output_path, epoch)[1]
    )
    assert empty_segments == 2 * short  # every kept row is drawn once per epoch (no caps)

    dropped = sample_into(tmp_path / "dropped", tokenized, rules, drop_short_after_truncate=True)
    assert dropped.global_stats.rows_dropped_short_after_truncate == short
    assert not [w for w in dropped.warnings if "min_resp_length" in w]
    for epoch in range(2):
        assert all(row["causal_len"] >= 1 for row in hrm_text_rows(dropped.output_path, epoch)[1])


# --------------------------------------------------------------------------- finding the tokenizer


def test_data_io_layout_relative_path_is_found_from_anywhere(
    tmp_path, small_tokenizer_path, monkeypatch
):
    """data_io runs its tokenizer in tokenizer/ with ../trained_tokenizers/bpe/tokenizer.json
    and samples from its root: the path resolves against the tokenized root's parent."""
    home = tmp_path / "data_io"
    (home / "trained_tokenizers" / "bpe").mkdir(parents=True)
    (home / "tokenizer").mkdir()
    (home / "data").mkdir()
    (home / "data" / "a.jsonl").write_text(
        json.dumps({"condition": "cot", "instruction": "2+2?", "response": "4"}) + "\n"
    )
    (home / "trained_tokenizers" / "bpe" / "tokenizer.json").write_bytes(
        small_tokenizer_path.read_bytes()
    )
    monkeypatch.chdir(home / "tokenizer")
    tokenize_tree(
        ["../data"], "../data_tokenized", "../trained_tokenizers/bpe/tokenizer.json", progress=False
    )
    monkeypatch.chdir(tmp_path)
    rules = write_rules(tmp_path / "rules.yaml", [])
    result = sample_into(tmp_path / "sampled", home / "data_tokenized", rules)
    assert result.tokenizer_dir == tmp_path / "sampled" / TOKENIZER_DIR
    assert transformers.AutoTokenizer.from_pretrained(str(result.tokenizer_dir))


def other_tokenizer(path: Path, vocab_size: int = 2048) -> Path:
    docs = [f"other corpus line {i} with words {i * 3}" for i in range(300)]
    path.parent.mkdir(parents=True, exist_ok=True)
    train_tokenizer(docs, vocab_size=vocab_size).save(str(path))
    return path


def test_a_tokenizer_other_than_tokenizations_is_never_shipped(
    pipeline, tmp_path, tokenizer_json, capsys
):
    tokenized, rules, _ = pipeline
    good = sample_into(tmp_path / "good", tokenized, rules)
    good_bytes = {
        p.relative_to(good.output_path).as_posix(): p.read_bytes()
        for p in good.output_path.rglob("*.npy")
    }
    other = other_tokenizer(tmp_path / "other" / "tokenizer.json")

    # Named explicitly: an error before anything is written (CLI: exit 1).
    with pytest.raises(SamplingError, match="is not that of the tokenizer"):
        sample_into(tmp_path / "explicit", tokenized, rules, tokenizer_path=other.parent)
    assert not (tmp_path / "explicit").exists()
    status = sample.main(
        [f"tokenized_path={tokenized}", f"output_path={tmp_path / 'cli'}",
         f"prefix_config_path={rules}", f"tokenizer_path={other}", "epochs=1"]
    )  # fmt: skip
    assert status == 1 and "is not that of the tokenizer" in capsys.readouterr().err

    # The recorded path now holds another tokenizer: epochs written, no tokenizer, a warning.
    original = tokenizer_json.read_bytes()
    tokenizer_json.write_bytes(other.read_bytes())
    replaced = sample_into(tmp_path / "replaced", tokenized, rules)
    assert replaced.tokenizer_dir is None
    assert not (tmp_path / "replaced" / TOKENIZER_DIR).exists()
    (warning,) = [w for w in replaced.warnings if w.startswith("no tokenizer/ folder")]
    assert "is not that of the tokenizer" in warning and "tokenizer_path=" in warning
    assert {
        p.relative_to(replaced.output_path).as_posix(): p.read_bytes()
        for p in replaced.output_path.rglob("*.npy")
    } == good_bytes

    # Given explicitly and right: shipped although the recorded path is elsewhere.
    kept = tmp_path / "kept" / "tokenizer.json"
    kept.parent.mkdir()
    kept.write_bytes(original)
    named = sample_into(tmp_path / "named", tokenized, rules, tokenizer_path=kept)
    assert named.tokenizer_dir is not None


def test_data_io_folders_are_checked_by_vocabulary_and_framing_tokens(
    tmp_path, small_tokenizer_path
):
    """data_io's task folders record no tokenizer hash: the vocabulary size and the framing
    tokens decide."""
    rules = write_rules(tmp_path / "rules.yaml", [])
    path = str(small_tokenizer_path)
    matching = write_tokenized(
        tmp_path / "matching", {"a.jsonl": [(3, 4)]}, 2048, info_extra={"tokenizer_path": path}
    )
    assert sample_into(tmp_path / "s1", matching, rules).tokenizer_dir is not None

    other_vocab = write_tokenized(
        tmp_path / "other_vocab", {"a.jsonl": [(3, 4)]}, 1000, info_extra={"tokenizer_path": path}
    )
    result = sample_into(tmp_path / "s2", other_vocab, rules)
    assert result.tokenizer_dir is None
    assert any("vocabulary of 2048 tokens" in w and "records 1000" in w for w in result.warnings)

    unknown_tag = write_tokenized(
        tmp_path / "unknown_tag",
        {"a.jsonl": [(3, 4)]},
        2048,
        info_extra={"tokenizer_path": path, "condition_mapping": {"cot": "<|not_a_token|>"}},
    )
    result = sample_into(tmp_path / "s3", unknown_tag, rules)
    assert result.tokenizer_dir is None
    assert any("<|not_a_token|>" in w for w in result.warnings)

    missing = write_tokenized(tmp_path / "missing", {"a.jsonl": [(3, 4)]}, 2048)
    result = sample_into(tmp_path / "s4", missing, rules)
    assert result.tokenizer_dir is None
    assert any("tokenizers/bpé/tokenizer.json" in w for w in result.warnings)


def test_resampling_replaces_the_tokenizer_folder_with_the_rest(pipeline, tmp_path):
    tokenized, rules, _ = pipeline
    out = tmp_path / "sampled"
    sample_into(out, tokenized, rules)
    assert (out / TOKENIZER_DIR).is_dir()
    # An output holding a tokenizer folder is a sampled output: resampling into it is allowed,
    # and a run that ships no tokenizer leaves none behind.
    info_path = tokenized / "tokenizer_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info_path.write_text(json.dumps({**info, "tokenizer_path": "gone/tokenizer.json"}))
    result = sample_into(out, tokenized, rules)
    assert result.tokenizer_dir is None and not (out / TOKENIZER_DIR).exists()
    assert verify_folder(out).ok
