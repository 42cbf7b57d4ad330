"""Data of the evaluation-set mirror the contamination tests use (conftest.py lays it out)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# SYNTHETIC: invented questions in cais/mmlu's schema (question, subject, choices, answer).
MMLU = [
    {
        "question": "Which of the following best describes the role of the mitochondria in "
        "eukaryotic cells during aerobic respiration?",
        "subject": "college_biology",
        "choices": ["protein folding", "ATP production", "lipid storage", "DNA repair"],
        "answer": 1,
    },
    {
        "question": "Which treaty formally ended the war between the two kingdoms in 1648?",
        "subject": "high_school_european_history",
        "choices": ["Utrecht", "Westphalia", "Versailles", "Tordesillas"],
        "answer": 1,
    },
    {
        "question": "Find the derivative of x squared.",  # 6 words: too short to index
        "subject": "college_mathematics",
        "choices": ["x", "2x", "x^2", "2"],
        "answer": 1,
    },
]
# SYNTHETIC: invented questions in allenai/ai2_arc's schema.
ARC_EASY = [
    {
        "id": "Synthetic_1",
        "question": "A student pours water into a freezer tray and leaves it overnight. "
        "Which property of the water changes the most?",
        "choices": {"text": ["mass", "state", "color", "smell"], "label": ["A", "B", "C", "D"]},
        "answerKey": "B",
    },
]
ARC_CHALLENGE = [
    {
        "id": "Synthetic_2",
        "question": "Which gas do green plants absorb from the air to make food?",
        "choices": {"text": ["oxygen", "nitrogen", "carbon dioxide"], "label": ["A", "B", "C"]},
        "answerKey": "C",
    },
]


def write_parquet(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), path)


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
