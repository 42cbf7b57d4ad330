"""The tokenizer oracle the tests share: data_io's framing (docs/CONTRACTS.md section 2) restated
on purpose with the Python ``tokenizers`` package, so that every array the Rust core writes is
checked against an independent computation; and real GSM8K rows written as cleaned files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tokenizers import Tokenizer

from hrm_assets.contracts.framing import Framing, split_condition
from support.ndarray_npy import ndarray_npy_bytes

ARRAYS = ("tokens", "inst_start", "inst_len", "resp_start", "resp_len")


def python_tokenizer(path: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.encode_special_tokens = True
    return tokenizer


def python_ids(tokenizer: Tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False).ids


def reference_arrays(
    tokenizer_path: Path, rows: list[dict], framing: Framing | None = None
) -> dict[str, np.ndarray]:
    """docs/CONTRACTS.md section 2, computed with the Python tokenizers package."""
    framing = framing or Framing()
    tokenizer = python_tokenizer(tokenizer_path)
    token_id = tokenizer.token_to_id
    tokens: list[int] = []
    columns: dict[str, list[int]] = {name: [] for name in ARRAYS[1:]}
    for row in rows:
        start = len(tokens)
        tokens.append(token_id(framing.boq))
        tokens.extend(
            token_id(framing.conditions[tag]) for tag in split_condition(row["condition"])
        )
        tokens.extend(python_ids(tokenizer, row["instruction"]))
        tokens.append(token_id(framing.eoq))
        columns["inst_start"].append(start)
        columns["inst_len"].append(len(tokens) - start)
        response_start = len(tokens)
        tokens.extend(python_ids(tokenizer, row["response"]))
        tokens.append(token_id(framing.eoa))
        columns["resp_start"].append(response_start)
        columns["resp_len"].append(len(tokens) - response_start)
    arrays = {"tokens": np.array(tokens, dtype="<u4")}
    arrays.update({name: np.array(values, dtype="<u8") for name, values in columns.items()})
    return arrays


def assert_folder_matches(folder: Path, expected: dict[str, np.ndarray]) -> None:
    """Each .npy file has data_io's exact bytes for the expected array (dtype, ndarray-npy's
    header, data)."""
    for name, array in expected.items():
        assert (folder / f"{name}.npy").read_bytes() == ndarray_npy_bytes(array), name


def gsm8k_rows(real_raw: Path, split: str, limit: int) -> list[dict]:
    conditions = ["cot", "", "noisy,cot", "direct", "synth", "cot,noisy,direct,synth"]
    rows = []
    with open(real_raw / "gsm8k" / f"{split}.jsonl", encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            if index >= limit:
                break
            raw = json.loads(line)
            rows.append(
                {
                    "condition": conditions[index % len(conditions)],
                    "instruction": raw["question"],
                    "response": raw["answer"],
                }
            )
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def write_parquet(path: Path, rows: list[dict], string_type: pa.DataType | None = None) -> Path:
    string_type = string_type or pa.string()
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([(name, string_type) for name in ("condition", "instruction", "response")])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path
