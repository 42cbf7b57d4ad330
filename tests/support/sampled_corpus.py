"""A sampled corpus for the export tests: rows of known content, sampled into epochs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hrm_assets.sampling.sampler import SPAN_FIELDS, make_config, sample_tokenized
from support.tokenized_trees import random_rows, write_rules, write_tokenized

EPOCHS = 2


CONTEXT_SIZE = 120


def make_sampled(root: Path, vocab_size: int = 1000, context_size: int = CONTEXT_SIZE) -> Path:
    """A tokenized root of three tasks (long rows among them, so some responses are
    truncated) sampled into ``root/sampled``."""
    tokenized = write_tokenized(
        root / "tokenized",
        {
            "alpha.jsonl": random_rows(1, 40),
            "beta__long.jsonl": random_rows(2, 30, max_inst=90, max_resp=120),
            "gamma.parquet": random_rows(3, 25),
        },
        vocab_size=vocab_size,
    )
    rules = write_rules(root / "rules.yaml", [{"prefix": "beta__", "long_context": "truncate"}])
    sample_tokenized(
        make_config(
            tokenized_path=tokenized,
            output_path=root / "sampled",
            prefix_config_path=rules,
            epochs=EPOCHS,
            context_size=context_size,
        )
    )
    return root / "sampled"


def sampled_rows(sampled: Path, epoch: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(instruction, response) tokens of every row of an epoch, read as HRM-Text reads them."""
    tokens = np.load(sampled / "tokens.npy")
    spans = {name: np.load(sampled / f"epoch_{epoch}" / f"{name}.npy") for name in SPAN_FIELDS}
    return [
        (
            tokens[spans["inst_start"][i] : spans["inst_start"][i] + spans["inst_len"][i]],
            tokens[spans["resp_start"][i] : spans["resp_start"][i] + spans["resp_len"][i]],
        )
        for i in range(len(spans["inst_len"]))
    ]


def corpus_rows(tokenized: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every row of every task of a tokenized root, tasks in name order, untruncated."""
    rows = []
    for task in sorted(p for p in tokenized.iterdir() if p.is_dir()):
        tokens = np.load(task / "tokens.npy")
        spans = {name: np.load(task / f"{name}.npy").astype(np.int64) for name in SPAN_FIELDS}
        for i in range(len(spans["inst_len"])):
            rows.append(
                (
                    tokens[spans["inst_start"][i] : spans["inst_start"][i] + spans["inst_len"][i]],
                    tokens[spans["resp_start"][i] : spans["resp_start"][i] + spans["resp_len"][i]],
                )
            )
    return rows
