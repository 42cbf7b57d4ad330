"""A prefix_config.yaml with a mixture: section, over known tasks."""

from __future__ import annotations

from pathlib import Path

import yaml

RULES = [
    {"prefix": "a__", "max_per_file": 30},
    {"prefix": "b.jsonl", "repeat": 2},
    {"prefix": "c.jsonl"},
]


# name: (rows, instruction tokens, response tokens) -- every row of a task alike.
TASKS = {
    "a__1.jsonl": (40, 3, 5),
    "a__2.jsonl": (20, 2, 8),
    "b.jsonl": (30, 4, 6),
    "c.jsonl": (10, 5, 15),
}


def write_config(path: Path, mixture: dict | None, rules=RULES) -> Path:
    document = rules if mixture is None else {"rules": rules, "mixture": mixture}
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path
