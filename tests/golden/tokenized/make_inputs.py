"""Writes the golden inputs cleaned/ and cleaned_custom/ into the current folder (see README.md).

GSM8K rows come from ``gsm8k/train.jsonl`` of the real raw rows (tests/support/real_raw.py: the
mirror ``$HRM_REAL_RAW``, or the pinned files in the cache)."""

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

FIELDS = ("condition", "instruction", "response")


def row(condition, instruction, response):
    return {"condition": condition, "instruction": instruction, "response": response}


def write_jsonl(path, rows, line_end="\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + line_end for r in rows)
    path.write_bytes(text.encode("utf-8"))


def write_parquet(path, rows, string_type, columns=FIELDS, row_group_size=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(name, string_type) for name in columns])
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, path, row_group_size=row_group_size)


sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from support.real_raw import real_raw_root  # noqa: E402

real_raw = real_raw_root()
with open(real_raw / "gsm8k" / "train.jsonl", encoding="utf-8") as lines:
    gsm8k = [json.loads(line) for _, line in zip(range(6), lines, strict=False)]
tricky = [
    "数学问题：小明有3个苹果，又买了5个。他现在有几个？",
    "Family: 👨‍👩‍👧‍👦, thumbs: 👍🏽, flags: 🇫🇷🇯🇵",
    "Cafe\u0301 vs Café, A\u030a vs Å, ﬁ ligature",
    "inline specials <|im_start|> and <|box_end|> and <think>x</think> stay text",
    "spaces:      many\t\ttabs\n\n\nnewlines \r\n and trailing   ",
    'quotes " and backslash \\ and control \u0001 and del \u007f',
]
root = Path("cleaned")
conditions = ["cot", "direct", "noisy,cot", "synth", "cot,noisy,direct,synth", "noisy"]
write_jsonl(
    root / "gsm8k_train.jsonl",
    [row(c, g["question"], g["answer"]) for c, g in zip(conditions, gsm8k, strict=True)],
)
write_jsonl(
    root / "Platypus" / "arb_math.jsonl",
    [row("cot", t, t[::-1]) for t in tricky] + [row("direct", "", "")],
)
# CRLF line ends and blank lines between rows (both readers skip whitespace).
write_jsonl(root / "crlf.jsonl", [row("direct", "a\r\nb", "c"), row("cot", "d", "")], "\r\n\r\n")
(root / "empty.jsonl").write_bytes(b"")
# Hidden files and folders are data for data_io; a bare ".jsonl" has no extension for it.
write_jsonl(root / ".hidden.jsonl", [row("synth", "hidden question", "hidden answer")])
write_jsonl(root / ".hidden_dir" / "inner.jsonl", [row("noisy", "inner", "answer")])
write_jsonl(root / ".jsonl", [row("cot", "no extension", "skipped")])
# Parquet: nulls in instruction and response (read as empty strings), Utf8 columns.
write_parquet(
    root / "flan" / "cot_fsopt_data__task.parquet",
    [
        row("cot", "What is 2+2?", "4"),
        row("direct", None, "an answer to nothing"),
        row("noisy", "a question without answer", None),
        row("synth", None, None),
    ],
    pa.string(),
)
# LargeUtf8 columns in data_io's cleaner order, several row groups.
write_parquet(
    root / "dmmath" / "train-easy__algebra__linear_1d.parquet",
    [row("direct", f"Solve {k}*x + {k + 1} = {3 * k + 1} for x.", "3") for k in range(1, 8)],
    pa.large_string(),
    columns=("instruction", "response", "condition"),
    row_group_size=3,
)
write_parquet(root / "empty.parquet", [], pa.string())

# A second root for a non-default framing (one condition: data_io's mapping order is then fixed).
write_jsonl(
    Path("cleaned_custom") / "custom.jsonl",
    [row("cot", gsm8k[0]["question"], gsm8k[0]["answer"]), row("cot", tricky[0], "x")],
)
