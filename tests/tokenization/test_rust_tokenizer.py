"""The Rust encoder (hrm_assets._core) against the Python `tokenizers` package.

The reference (tests/support/tokenizer_reference.py) re-implements the framing of docs/CONTRACTS.md
section 2 with the Python package, so every array the Rust module writes is checked against an
independent computation.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import TRICKY_TEXTS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.tokenizer_reference import (
    ARRAYS,
    assert_folder_matches,
    gsm8k_rows,
    python_ids,
    python_tokenizer,
    reference_arrays,
    write_jsonl,
    write_parquet,
)

from hrm_assets import _core
from hrm_assets.cleaning.rows import RowError
from hrm_assets.contracts.framing import DEFAULT_CONDITIONS, Framing


@pytest.fixture(scope="module")
def tricky_rows() -> list[dict]:
    rows = []
    for text in TRICKY_TEXTS:
        rows.append({"condition": "", "instruction": text, "response": text[::-1]})
        rows.append({"condition": "noisy", "instruction": "", "response": text})
    rows.append({"condition": "cot", "instruction": "", "response": ""})
    return rows


# --- ids -------------------------------------------------------------------------------------


def test_ids_equal_python_tokenizers_on_gsm8k(encoder, small_tokenizer_path, real_raw):
    # The test split: text the fixture tokenizer was not trained on.
    texts = [
        t
        for row in gsm8k_rows(real_raw, "test", 400)
        for t in (row["instruction"], row["response"])
    ]
    python = python_tokenizer(small_tokenizer_path)
    assert encoder.encode_texts(texts) == [python_ids(python, text) for text in texts]


def test_ids_equal_python_tokenizers_on_tricky_texts(encoder, small_tokenizer_path):
    python = python_tokenizer(small_tokenizer_path)
    got = encoder.encode_texts(TRICKY_TEXTS, num_threads=1)
    assert got == [python_ids(python, text) for text in TRICKY_TEXTS]
    # Special-token strings inside text are plain text: no framing id appears.
    specials = set(encoder.framing_ids["conditions"].values())
    specials |= {encoder.framing_ids[k] for k in ("boq", "eoq", "eoa")}
    assert not specials & {i for ids in got for i in ids}


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=300), max_size=8)
)
def test_ids_equal_python_tokenizers_on_random_unicode(encoder, small_tokenizer_path, texts):
    python = python_tokenizer(small_tokenizer_path)
    assert encoder.encode_texts(texts, num_threads=2) == [python_ids(python, t) for t in texts]


def test_vocab_size_and_framing_ids(encoder, small_tokenizer_path):
    python = python_tokenizer(small_tokenizer_path)
    assert encoder.vocab_size == python.get_vocab_size(with_added_tokens=True) == 2048
    ids = encoder.framing_ids
    assert ids["boq"] == python.token_to_id("<|im_start|>")
    assert ids["eoq"] == python.token_to_id("<|im_end|>")
    assert ids["eoa"] == python.token_to_id("<|box_end|>")
    assert ids["conditions"] == {
        tag: python.token_to_id(t) for tag, t in DEFAULT_CONDITIONS.items()
    }


# --- tokenized folders -------------------------------------------------------------------------


def test_jsonl_folder_matches_reference(
    encoder, small_tokenizer_path, real_raw, tricky_rows, tmp_path
):
    rows = gsm8k_rows(real_raw, "train", 300) + tricky_rows
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out" / "in.jsonl"
    result = encoder.tokenize_file(str(source), str(out), json.dumps({"source_size": 1}))
    expected = reference_arrays(small_tokenizer_path, rows)
    assert_folder_matches(out, expected)
    assert result["rows"] == len(rows)
    assert result["tokens"] == len(expected["tokens"])
    texts = sum(len(r[k].encode()) for r in rows for k in ("condition", "instruction", "response"))
    assert result["text_bytes"] == texts
    assert result["nulls"] == 0
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata == {
        "source_size": 1,
        "rows": len(rows),
        "tokens": len(expected["tokens"]),
        "text_bytes": texts,
        "nulls": 0,
    }
    assert (out / _core.OWNER_MARKER).is_file()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [*_core.ARRAY_FILES, "metadata.json", "manifest.json", _core.OWNER_MARKER]
    )
    # Nothing but the folder is left next to it.
    assert [p.name for p in out.parent.iterdir()] == ["in.jsonl"]


def test_dtypes_are_u4_and_u8(encoder, tricky_rows, tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", tricky_rows)
    encoder.tokenize_file(str(source), str(tmp_path / "out"), "{}")
    assert np.load(tmp_path / "out" / "tokens.npy").dtype.str == "<u4"
    for name in ARRAYS[1:]:
        assert np.load(tmp_path / "out" / f"{name}.npy").dtype.str == "<u8"


def test_empty_condition_has_no_tag_tokens(encoder, tmp_path):
    rows = [{"condition": "", "instruction": "", "response": ""}]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    encoder.tokenize_file(str(source), str(tmp_path / "out"), "{}")
    ids = encoder.framing_ids
    assert np.load(tmp_path / "out" / "tokens.npy").tolist() == [ids["boq"], ids["eoq"], ids["eoa"]]
    assert np.load(tmp_path / "out" / "inst_len.npy").tolist() == [2]
    assert np.load(tmp_path / "out" / "resp_len.npy").tolist() == [1]


@pytest.mark.parametrize(
    "string_type",
    [pa.string(), pa.large_string(), pa.string_view(), pa.dictionary(pa.int32(), pa.string())],
    ids=["utf8", "large_utf8", "utf8_view", "dictionary"],
)
def test_parquet_folder_equals_jsonl_folder(encoder, real_raw, tricky_rows, tmp_path, string_type):
    rows = gsm8k_rows(real_raw, "train", 100) + tricky_rows
    jsonl = write_jsonl(tmp_path / "in.jsonl", rows)
    parquet = write_parquet(tmp_path / "in.parquet", rows, string_type)
    encoder.tokenize_file(str(jsonl), str(tmp_path / "a"), "{}")
    # Small batches: several Parquet record batches and several encode batches.
    encoder.tokenize_file(str(parquet), str(tmp_path / "b"), "{}", batch_rows=7)
    for name in _core.ARRAY_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_batching_and_threads_do_not_change_output(encoder, real_raw, tmp_path):
    rows = gsm8k_rows(real_raw, "train", 250)
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    settings_ = [(None, _core.DEFAULT_BATCH_ROWS), (1, 1), (2, 16), (3, 1000)]
    for index, (threads, batch_rows) in enumerate(settings_):
        encoder.tokenize_file(
            str(source),
            str(tmp_path / f"o{index}"),
            "{}",
            num_threads=threads,
            batch_rows=batch_rows,
        )
    for name in _core.ARRAY_FILES:
        first = (tmp_path / "o0" / name).read_bytes()
        assert all((tmp_path / f"o{i}" / name).read_bytes() == first for i in range(1, 4))


def test_custom_framing_tokens(small_tokenizer_path, real_raw, tmp_path):
    framing = Framing(
        boq="<|fim_prefix|>",
        eoq="<|fim_middle|>",
        eoa="<|fim_suffix|>",
        conditions={"x": "<think>"},
    )
    custom = _core.Encoder(
        str(small_tokenizer_path), framing.boq, framing.eoq, framing.eoa, framing.conditions
    )
    rows = [
        dict(r, condition="x" if i % 2 else "")
        for i, r in enumerate(gsm8k_rows(real_raw, "train", 20))
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    custom.tokenize_file(str(source), str(tmp_path / "out"), "{}")
    assert_folder_matches(tmp_path / "out", reference_arrays(small_tokenizer_path, rows, framing))


def test_replaces_an_existing_folder(encoder, tricky_rows, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("from an older run")
    source = write_jsonl(tmp_path / "in.jsonl", tricky_rows)
    encoder.tokenize_file(str(source), str(out), "{}")
    assert not (out / "stale.txt").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# --- errors ------------------------------------------------------------------------------------


def test_unknown_tag_names_file_row_and_known_tags(encoder, tmp_path):
    rows = [{"condition": "cot", "instruction": "a", "response": "b"}] * 2
    rows.append({"condition": "cot,bogus", "instruction": "a", "response": "b"})
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    with pytest.raises(RowError) as caught:
        encoder.tokenize_file(str(source), str(tmp_path / "out"), "{}", batch_rows=2)
    error = caught.value
    assert (error.path, error.row, error.field) == (str(source), 3, "condition")
    message = str(error)
    assert message.startswith(f"{source}: row 3, field 'condition': ")
    assert "'bogus'" in message or '"bogus"' in message
    assert "known tags: cot, direct, noisy, synth" in message
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.jsonl"]


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        ('{"condition": "", "instruction": null, "response": "b"}', "instruction", "got null"),
        ('{"condition": "", "instruction": "a"}', "response", "missing"),
        ('{"condition": 1, "instruction": "a", "response": "b"}', "condition", "got int"),
        ('{"condition": "", "instruction": "a", "response": ', None, "malformed JSON"),
    ],
)
def test_bad_jsonl_row_names_row_and_field(encoder, tmp_path, line, field, problem):
    source = tmp_path / "in.jsonl"
    source.write_text('{"condition": "", "instruction": "a", "response": "b"}\n\n' + line + "\n")
    with pytest.raises(RowError) as caught:
        encoder.tokenize_file(str(source), str(tmp_path / "out"), "{}")
    assert (caught.value.row, caught.value.field) == (3, field)
    assert problem in str(caught.value)
    assert str(source) in str(caught.value)


@pytest.mark.parametrize("string_type", [pa.string(), pa.large_string()])
def test_parquet_nulls_are_empty_strings_and_counted(
    encoder, small_tokenizer_path, tmp_path, string_type
):
    """data_io's reader takes a null's empty slot as the empty string; so do we, and count."""
    rows = [{"condition": "cot", "instruction": "a", "response": "b"}] * 4
    rows[1] = {"condition": None, "instruction": None, "response": "b"}
    rows[2] = {"condition": "", "instruction": "a", "response": None}
    source = write_parquet(tmp_path / "in.parquet", rows, string_type)
    out = tmp_path / "out"
    result = encoder.tokenize_file(str(source), str(out), "{}")
    as_empty = [{key: value or "" for key, value in row.items()} for row in rows]
    assert_folder_matches(out, reference_arrays(small_tokenizer_path, as_empty))
    assert (result["rows"], result["nulls"]) == (4, 3)
    assert json.loads((out / "metadata.json").read_text())["nulls"] == 3
    (written,) = encoder.tokenize_files([(str(source), str(tmp_path / "again"), "{}")])
    assert written["nulls"] == 3


def test_parquet_missing_column_names_field(encoder, tmp_path):
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"condition": [""], "instruction": ["a"]}), source)
    with pytest.raises(RowError, match="field 'response': column missing"):
        encoder.tokenize_file(str(source), str(tmp_path / "out"), "{}")


def test_missing_framing_token_names_it(small_tokenizer_path):
    with pytest.raises(ValueError, match=r'EOQ token "<\|nope\|>" is not in the tokenizer'):
        _core.Encoder(str(small_tokenizer_path), "<|im_start|>", "<|nope|>", "<|box_end|>", {})
    with pytest.raises(ValueError, match=r"condition 'cot' token \"<\|nada\|>\""):
        _core.Encoder(
            str(small_tokenizer_path),
            "<|im_start|>",
            "<|im_end|>",
            "<|box_end|>",
            {"cot": "<|nada|>"},
        )


def test_io_errors_are_oserrors(encoder, tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.jsonl"):
        encoder.tokenize_file(str(tmp_path / "absent.jsonl"), str(tmp_path / "out"), "{}")
    with pytest.raises(FileNotFoundError, match="nope.json"):
        _core.Encoder(str(tmp_path / "nope.json"), "a", "b", "c", {})
    with pytest.raises(ValueError, match="cannot load the tokenizer"):
        bad = tmp_path / "bad.json"
        bad.write_text("{}")
        _core.Encoder(str(bad), "a", "b", "c", {})
    with pytest.raises(ValueError, match="metadata_json must be a JSON object"):
        encoder.tokenize_file(str(tmp_path / "x.jsonl"), str(tmp_path / "out"), "[1]")


def test_gil_is_released_while_encoding(small_tokenizer_path, real_raw):
    # The reference engine: encoding then dominates the call. The fast engine encodes these
    # texts in milliseconds, about as long as making the Python lists of ids (which needs the
    # GIL), so gaps would be measured against a baseline the size of that conversion.
    framing = Framing()
    encoder = _core.Encoder(
        str(small_tokenizer_path),
        framing.boq,
        framing.eoq,
        framing.eoa,
        framing.conditions,
        engine="reference",
    )
    texts = [
        t
        for row in gsm8k_rows(real_raw, "train", 3000)
        for t in (row["instruction"], row["response"])
    ]
    started = time.perf_counter()
    encoder.encode_texts(texts, num_threads=1)
    alone = time.perf_counter() - started

    worker = threading.Thread(target=encoder.encode_texts, args=(texts,), kwargs={"num_threads": 1})
    ticks = []
    started = time.perf_counter()
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    ended = time.perf_counter()
    # Holding the GIL would stall this loop for the whole call: it would tick only before the
    # call takes the GIL and after it returns, never in the middle of it. (No bound on the gaps
    # between ticks: on a loaded machine the scheduler alone makes gaps of a large part of a
    # second.)
    middle = [tick for tick in ticks if started + (ended - started) / 4 < tick]
    middle = [tick for tick in middle if tick < ended - (ended - started) / 4]
    assert alone > 0 and len(ticks) > 10
    assert middle, f"no tick in the middle half of the call ({len(ticks)} ticks)"
