"""Cleaned rows of real GSM8K text, for tests that tokenize and sample them."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from conftest import TRICKY_TEXTS

# Texts without special-token strings: inside cleaned text those are plain text for our
# tokenizer (encode_special_tokens) but special tokens for transformers' default encoding.
PLAIN_TEXTS = [text for text in TRICKY_TEXTS if "<|" not in text and "<think>" not in text]


def cleaned_rows() -> dict[str, list[dict[str, str]]]:
    """Two cleaned files: tricky texts, and instructions of growing length. A digit and a
    space are one token each whatever the vocabulary (the split regex isolates them), so an
    instruction of k digits is BOQ + tags + 2k - 1 tokens + EOQ: with two tags and k = 18 it
    leaves a context of 40 room for one response token."""
    conditions = ["cot", "direct", "noisy,cot", "synth"]
    tricky = [
        {"condition": conditions[i % 4], "instruction": text, "response": PLAIN_TEXTS[-1 - i]}
        for i, text in enumerate(PLAIN_TEXTS)
    ]
    growing = [
        {
            "condition": condition,
            "instruction": " ".join(str(j % 10) for j in range(k)),
            "response": f"The answer is {k * 7} apples and {k} pears.",
        }
        for k in range(1, 22)
        for condition in ("cot", "noisy,cot")
    ]
    return {"tricky.jsonl": tricky, "growing.jsonl": growing}


def write_flan_file(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = ("condition", "instruction", "response")
    schema = pa.schema([(name, pa.string()) for name in columns])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
