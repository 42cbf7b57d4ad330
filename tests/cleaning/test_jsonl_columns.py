"""JSON lines built on columns by the Rust core (``hrm_assets.cleaning.jsonl_columns``) are
orjson's bytes, data_io's writer, on the strings that need escaping or must not be escaped."""

from __future__ import annotations

import random

import orjson
import pyarrow as pa
import pytest

from hrm_assets._core import JsonLines
from hrm_assets.cleaning.jsonl_columns import encode_jsonl_lines, jsonl_lines
from hrm_assets.cleaning.outputs import CleanedOutputs, JsonlWriter, jsonl_line
from hrm_assets.cleaning.rows import FIELDS, Row

HARD = [
    "",
    "plain ascii",
    'quote " and backslash \\ and both \\"',
    "".join(chr(c) for c in range(0x20)),  # every control character
    "\x7f DEL stays",
    "line separators \u2028 and \u2029 stay raw",
    "emoji 😀🧪 and astral 𝔘𝔫𝔦",
    "é naïve 東京 ≤ →",
    "\\u0041 is not unescaped",
    "tab\tnew\nline\rcarriage\x08back\x0cfeed",
    '"' * 9 + "\\" * 9,
    "\x00",
]


def orjson_lines(columns: dict[str, list], order: list[str]) -> bytes:
    rows = len(next(iter(columns.values())))
    return b"".join(
        orjson.dumps({name: columns[name][row] for name in order}) + b"\n" for row in range(rows)
    )


@pytest.mark.parametrize("kind", [pa.string(), pa.large_string()])
def test_hard_strings_match_orjson(kind):
    values = {
        "condition": ["direct"] * len(HARD),
        "instruction": HARD,
        "response": list(reversed(HARD)),
    }
    table = pa.table({name: pa.array(v, kind) for name, v in values.items()})
    for order in (["instruction", "response", "condition"], ["condition", "instruction"]):
        assert jsonl_lines(table, order) == orjson_lines(values, order)


def test_random_text_matches_orjson_sliced_and_chunked():
    rng = random.Random(28)
    alphabet = [chr(c) for c in range(0x30)] + list('"\\aé東\u2028😀\x7f')
    texts = ["".join(rng.choices(alphabet, k=rng.randrange(40))) for _ in range(2000)]
    values = {"instruction": texts, "response": texts[::-1], "condition": ["cot"] * len(texts)}
    table = pa.table(values)
    # Slices start inside the buffers (an array offset) and chunked columns are joined.
    for start, length in ((0, 2000), (17, 500), (1999, 1), (5, 0)):
        part = table.slice(start, length)
        expected = orjson_lines({k: v[start : start + length] for k, v in values.items()}, FIELDS)
        assert jsonl_lines(part, FIELDS) == expected
    chunked = pa.concat_tables([table.slice(0, 700), table.slice(700)])
    assert chunked.column("instruction").num_chunks == 2
    assert jsonl_lines(chunked, FIELDS) == orjson_lines(values, FIELDS)


def test_lines_encoded_into_a_kept_buffer_are_each_batchs_alone():
    rng = random.Random(2028)
    texts = ["".join(rng.choices('ab"\\\né😀', k=rng.randrange(60))) for _ in range(900)]
    table = pa.table({"condition": ["cot"] * 900, "instruction": texts, "response": texts[::-1]})
    lines = JsonLines()
    # Larger, smaller, empty, then larger than any before: the buffer grows and shrinks.
    for start, length in ((0, 600), (600, 3), (10, 0), (0, 900)):
        batch = table.slice(start, length)
        assert encode_jsonl_lines(lines, batch, FIELDS) is lines
        assert bytes(lines) == jsonl_lines(batch, FIELDS)
        assert len(lines) == len(bytes(lines))


def test_kept_lines_cannot_change_while_viewed_and_are_empty_after_an_error():
    table = pa.table({"condition": ["direct"], "instruction": ["q"], "response": ["r"]})
    lines = encode_jsonl_lines(JsonLines(), table, FIELDS)
    view = memoryview(lines)
    assert view.readonly and bytes(view) == jsonl_lines(table, FIELDS)
    with pytest.raises(BufferError, match="still viewed"):
        encode_jsonl_lines(lines, table.slice(0, 0), FIELDS)
    assert bytes(view) == jsonl_lines(table, FIELDS)
    view.release()
    bad = pa.array([b"\xff"], pa.binary()).cast(pa.string(), safe=False)
    with pytest.raises(ValueError, match=r"column \"response\", row 1: text is not valid UTF-8"):
        encode_jsonl_lines(lines, table.set_column(2, "response", bad), FIELDS)
    assert len(lines) == 0 and bytes(lines) == b""


def test_nulls_are_json_null_as_the_row_writer_writes_them():
    table = pa.table({"condition": ["a", None], "instruction": [None, "x"], "response": ["r", "s"]})
    rows = [Row("a", None, "r"), Row(None, "x", "s")]
    assert jsonl_lines(table, FIELDS) == b"".join(jsonl_line(row) for row in rows)


def test_text_that_is_not_utf8_names_the_column_and_row():
    bad = pa.array([b"fine", b"\xff\xfe"], pa.binary()).cast(pa.string(), safe=False)
    table = pa.table(
        {"condition": ["direct", "direct"], "instruction": ["a", "b"], "response": bad}
    )
    with pytest.raises(ValueError, match=r"column \"response\", row 2: text is not valid UTF-8"):
        jsonl_lines(table, FIELDS)


def test_a_column_that_is_not_text_is_refused():
    table = pa.table({"condition": [1], "instruction": ["a"], "response": ["b"]})
    with pytest.raises(ValueError, match="'condition' is int64, not text"):
        jsonl_lines(table, FIELDS)


def test_the_writer_writes_a_batch_as_it_writes_its_rows(tmp_path):
    order = ("instruction", "response", "condition")
    table = pa.table({"condition": ["direct"] * len(HARD), "instruction": HARD, "response": HARD})
    with JsonlWriter(tmp_path / "batch.jsonl", order) as writer:
        writer.write_batch(table.slice(0, 5))
        writer.write_batch(table.slice(5))
    with JsonlWriter(tmp_path / "rows.jsonl", order) as writer:
        for values in zip(*(table.column(name).to_pylist() for name in FIELDS), strict=True):
            writer.write(Row(*values))
    assert (tmp_path / "batch.jsonl").read_bytes() == (tmp_path / "rows.jsonl").read_bytes()
    assert writer.rows == len(HARD)


def test_a_runs_open_jsonl_writers_share_one_line_buffer(tmp_path):
    # Forty files open at once, each given a batch in turn: one buffer of lines for the run,
    # not one a file.
    table = pa.table({"condition": ["direct"] * len(HARD), "instruction": HARD, "response": HARD})
    with CleanedOutputs(tmp_path, "jsonl") as outputs:
        for index in range(40):
            outputs.writer(f"tasks/{index}.jsonl").write_batch(table.slice(index % 5))
        for index in range(40):
            outputs.writer(f"tasks/{index}.jsonl").write_batch(table.slice(0, 2))
        assert outputs.line_buffers.made == 1
    for index in range(40):
        expected = jsonl_lines(table.slice(index % 5), FIELDS) + jsonl_lines(
            table.slice(0, 2), FIELDS
        )
        assert (tmp_path / "tasks" / f"{index}.jsonl").read_bytes() == expected
