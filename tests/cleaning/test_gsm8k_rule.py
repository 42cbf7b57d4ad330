"""GSM8K's rule on columns (``clean_gsm8k_batch``, one pass of the Rust core over the Arrow
buffers) against ``clean_gsm8k``, the row path's ``str.split`` and ``str.strip``, record by
record on odd inputs: separators that overlap or repeat, every character ``str.isspace()``
holds for and some it does not, empty strings, nulls, sliced and ``large_string`` columns, and
text that is not UTF-8 (kept for the engine's check, which names the raw file, row and field).

Every input is SYNTHETIC, written here.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning import columnar
from hrm_assets.cleaning.clean import clean_source
from hrm_assets.cleaning.sources import get_source
from hrm_assets.cleaning.sources.gsm8k import BAD_ANSWER, MALFORMED, clean_gsm8k, clean_gsm8k_batch
from hrm_assets.cleaning.sources.spec import SkipRecord
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path

SPACES = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0"]
SPACES += ["\u1680", "\u2000", "\u200a", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
# Not whitespace for str.isspace(): zero width space, BOM, word joiner, a control, NUL.
NOT_SPACES = ["\u200b", "\ufeff", "\u2060", "\x01", "\x00"]
PIECES = ["#### ", "#", "##", "###", "####", "x", "42", "é", "😀", *SPACES[:6], *NOT_SPACES[:2]]

ODD_ANSWERS = [
    "",
    "#### ",
    "#### #### ",
    "########## ",
    "#####  7",
    "####",
    "#### ####",
    "a ####b",
    "w\n#### \u3000\u2028 18\x85\xa0",
    "w\n####\xa0 18",
    "\u200b#### \u200b",
    "#### \x1c\x1d\x1e\x1f",
    "#### " + "".join(SPACES),
]
ODD_QUESTIONS = ["", " ", "".join(SPACES), "\x1cq\x1f", "\ufeffq\u200b", " é😀 ", "q\x00"]


def _outcome(question, answer):
    """What the row path does with a record: ("row", instruction, response), (reason,
    detail) of its skip, or the malformed record's attribute error."""
    try:
        (row,) = clean_gsm8k({"question": question, "answer": answer}, "main")
    except SkipRecord as skip:
        return (skip.reason, skip.detail)
    except AttributeError as error:
        return (MALFORMED, f"AttributeError: {error}")
    return ("row", row.instruction, row.response)


def _outcomes_on_columns(batch: pa.RecordBatch) -> list:
    cleaned = clean_gsm8k_batch(batch, "main")
    outcomes = [None] * batch.num_rows
    rows = cleaned.rows
    assert cleaned.output == "gsm8k_train.jsonl"
    assert rows.column("condition").to_pylist() == ["direct"] * rows.num_rows
    for index, record in enumerate(cleaned.records.tolist()):
        instruction = rows.column("instruction")[index].as_py()
        outcomes[record] = ("row", instruction, rows.column("response")[index].as_py())
    for skip in cleaned.skips:
        assert skip.reason in (MALFORMED, BAD_ANSWER)
        assert skip.rows.tolist() == sorted(skip.rows.tolist())
        for record in skip.rows.tolist():
            assert outcomes[record] is None, "a record with two outcomes"
            outcomes[record] = (skip.reason, skip.detail(record))
    return outcomes


def _records(rng: random.Random, count: int) -> list[tuple]:
    def piece_text():
        return "".join(rng.choice(PIECES) for _ in range(rng.randrange(8)))

    records = [(q, a) for q in ODD_QUESTIONS for a in ODD_ANSWERS]
    records += [(None, "w #### 1"), (None, "no separator"), (None, None), ("q", None)]
    for _ in range(count):
        question = rng.choice([None, piece_text(), *ODD_QUESTIONS])
        answer = rng.choice([None, piece_text(), piece_text() + "#### " + piece_text()])
        records.append((question, answer))
    rng.shuffle(records)
    return records


def _batch(records: list[tuple], kind: pa.DataType | None = None) -> pa.RecordBatch:
    kind = kind or pa.string()
    questions, answers = zip(*records, strict=True)
    return pa.record_batch(
        [pa.array(questions, kind), pa.array(answers, kind)], names=["question", "answer"]
    )


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_every_record_gets_the_row_path_s_outcome(kind):
    records = _records(random.Random(5), 3000)
    expected = [_outcome(question, answer) for question, answer in records]
    assert {outcome[0] for outcome in expected} == {"row", MALFORMED, BAD_ANSWER}
    assert _outcomes_on_columns(_batch(records, kind)) == expected


def test_a_sliced_batch_reads_from_its_offset():
    records = _records(random.Random(8), 500)
    batch = _batch(records)
    # Offsets not a multiple of 8: the validity bitmaps start inside a byte.
    for start, length in [(3, 200), (13, 1), (250, 0), (101, len(records) - 101)]:
        expected = [_outcome(*record) for record in records[start : start + length]]
        assert _outcomes_on_columns(batch.slice(start, length)) == expected


def test_columns_of_nulls_only():
    batch = pa.record_batch([pa.nulls(3), pa.nulls(3)], names=["question", "answer"])
    assert _outcomes_on_columns(batch) == [_outcome(None, None)] * 3
    answers = pa.array(["#### 1", "2", None])
    batch = pa.record_batch([pa.nulls(3), answers], names=["question", "answer"])
    assert _outcomes_on_columns(batch) == [_outcome(None, a) for a in answers.to_pylist()]


def test_separators_are_counted_as_str_split_counts_them():
    rng = random.Random(2)
    texts = ["".join(rng.choice(["#", "#### ", " ", "a"]) for _ in range(12)) for _ in range(400)]
    records = [("q", text) for text in texts]
    assert _outcomes_on_columns(_batch(records)) == [_outcome(*record) for record in records]


def test_odd_records_clean_as_on_the_row_path(tmp_path, monkeypatch):
    folder = tmp_path / "raw" / "openai" / "gsm8k" / "main"
    folder.mkdir(parents=True)
    records = [{"question": q, "answer": a} for q, a in _records(random.Random(9), 1500)]
    pq.write_table(pa.Table.from_pylist(records), folder / "train-00000-of-00001.parquet")
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 300)
    report = cleaned_by_engine_and_row_path(get_source("gsm8k_train"), tmp_path / "raw", tmp_path)
    assert set(report.skipped) == {MALFORMED, BAD_ANSWER}


def _with_bad_bytes(question: bytes, answer: bytes, row: int, rows: int = 30) -> pa.Table:
    questions = [b"q?"] * rows
    answers = [b"w\n#### 1"] * rows
    questions[row], answers[row] = question, answer
    return pa.table(
        {
            "question": pa.array(questions, pa.binary()).view(pa.string()),
            "answer": pa.array(answers, pa.binary()).view(pa.string()),
        }
    )


@pytest.mark.parametrize(
    "question, answer, field",
    [
        (b" \xff ", b"#### 1", "instruction"),
        (b"\x85 q \xe2\x80", b"#### 1", "instruction"),
        (b"q", b"w\n#### \x80\xe2\x80\xa8 ", "response"),
        (b"q", b"#### 1\xc3", "response"),
    ],
)
def test_text_that_is_not_utf8_is_named_by_file_row_and_field(tmp_path, question, answer, field):
    path = tmp_path / "raw" / "openai" / "gsm8k" / "main" / "train-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(_with_bad_bytes(question, answer, 17), path)
    with pytest.raises(ValueError) as error:
        clean_source(get_source("gsm8k_train"), tmp_path / "out", tmp_path / "raw")
    message = str(error.value)
    assert str(path) in message and "row 18" in message
    assert f"'{field}'" in message and "UTF-8" in message


def test_bytes_that_are_not_utf8_before_the_separator_are_not_in_the_row():
    batch = _with_bad_bytes(b" q ", b"\xff\xfe w #### 3 ", 0, rows=1).to_batches()[0]
    assert _outcomes_on_columns(batch) == [("row", "q", "3")]


def test_questions_every_record_keeps_whole_are_the_instruction_column(tmp_path, monkeypatch):
    records = [(f"Q{i} é {'?' * (1 + i % 3)}", f"w {i}\n#### {i} ") for i in range(700)]
    batch = _batch(records)
    for sliced in (batch, batch.slice(5, 300)):
        cleaned = clean_gsm8k_batch(sliced, "main")
        # No copy: the batch's own question array.
        assert cleaned.rows.column("instruction").chunk(0).buffers() == sliced.column(0).buffers()
        assert (
            _outcomes_on_columns(sliced)
            == [_outcome(*record) for record in records][
                sliced.column(0).offset : sliced.column(0).offset + sliced.num_rows
            ]
        )
    # One question the strip shortens, or one record skipped: the column is built.
    for changed in [("Q ", "#### 1"), ("Q", "1")]:
        cleaned = clean_gsm8k_batch(_batch([*records[:3], changed]), "main")
        assert cleaned.rows.column("instruction").chunk(0).buffers() != batch.column(0).buffers()
    folder = tmp_path / "raw" / "openai" / "gsm8k" / "main"
    folder.mkdir(parents=True)
    table = pa.Table.from_pylist([{"question": q, "answer": a} for q, a in records])
    pq.write_table(table, folder / "train-00000-of-00001.parquet", row_group_size=250)
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 300)
    report = cleaned_by_engine_and_row_path(get_source("gsm8k_train"), tmp_path / "raw", tmp_path)
    assert report.rows_written == len(records) and not report.skipped
