"""Tokenized roots and sampling rules written for tests, and the bytes of a folder tree."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

SPAN_NAMES = ("inst_start", "inst_len", "resp_start", "resp_len")


def write_tokenized(
    root: Path,
    tasks: dict[str, list[tuple[int, int]]],
    vocab_size=1000,
    seed: int = 0,
    info_extra: dict | None = None,
) -> Path:
    """A tokenized root like data_io's tokenizer writes: ``<u4`` tokens, ``<u8`` spans."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    info = {
        "boq": "<|im_start|>",
        "condition_mapping": {"cot": "<|object_ref_end|>", "direct": "<|object_ref_start|>"},
        "eoa": "<|box_end|>",
        "eoq": "<|im_end|>",
        "tokenizer_path": "tokenizers/bpé/tokenizer.json",
        "vocab_size": vocab_size,
        **(info_extra or {}),
    }
    (root / "tokenizer_info.json").write_text(json.dumps(info, sort_keys=True), encoding="utf-8")
    high = vocab_size if vocab_size is not None else 100_000
    for name, rows in tasks.items():
        task = root / name
        task.mkdir()
        tokens: list[int] = []
        spans = {key: [] for key in SPAN_NAMES}
        for inst_len, resp_len in rows:
            spans["inst_start"].append(len(tokens))
            spans["inst_len"].append(inst_len)
            tokens.extend(int(t) for t in rng.integers(0, high, inst_len))
            spans["resp_start"].append(len(tokens))
            spans["resp_len"].append(resp_len)
            tokens.extend(int(t) for t in rng.integers(0, high, resp_len))
        np.save(task / "tokens.npy", np.array(tokens, dtype="<u4"))
        for key, values in spans.items():
            np.save(task / f"{key}.npy", np.array(values, dtype="<u8"))
    return root


def write_rules(path: Path, rules: list[dict]) -> Path:
    path.write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    return path


def random_rows(seed: int, count: int, max_inst: int = 40, max_resp: int = 40):
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(1, max_inst)), int(rng.integers(0, max_resp))) for _ in range(count)]


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


MIXED = {
    "SYNTH__a.parquet": random_rows(1, 50),
    "flan__cot_x.parquet": random_rows(2, 30),
    "flan__y.parquet": random_rows(3, 40, 80, 80),
    "gsm8k_train.jsonl": random_rows(4, 7),
    "Platypus__arb.jsonl": random_rows(5, 5),
    "empty.jsonl": [],
    "zz_long.jsonl": random_rows(6, 20, 100, 100),
}


MIXED_RULES = [
    {"prefix": "SYNTH__", "max_per_file": 20},
    {"prefix": "flan__cot_"},
    {"prefix": "flan__", "max_per_file": 15, "long_context": "drop"},
    {"prefix": "zz_", "long_context": "drop"},
    {"prefix": "Platypus__", "repeat": 3},
    {"prefix": "gsm8k", "repeat": 2, "max_per_file": 5},
]


def visible(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if not p.name.startswith("."))
