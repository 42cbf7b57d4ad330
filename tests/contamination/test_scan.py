"""The contamination scan and the duplicate pass on cleaned files.

Evaluation questions (real GSM8K and MATH test rows, SYNTHETIC MMLU and ARC items) are planted
into training files made of real GSM8K train rows: as they are, with case, punctuation and
whitespace changed, and embedded in longer instructions or responses. Every planted row is
found, per file and per source, with its evaluation set and the matching span; the real rows
around them keep exactly the hits they have without the plants.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contamination.eval_fixtures import ARC_CHALLENGE, ARC_EASY, MMLU, read_jsonl
from hrm_assets import _core
from hrm_assets.contamination.scan import Report, Scanner, analyze

# The rate of GSM8K train rows hit by MATH test (13-grams), measured on the real rows:
# docs/CONTAMINATION.md states it. A rise means the normalization or the index changed.
GSM8K_TRAIN_VS_MATH_TEST_MAX_RATE = 0.001


def perturb(text: str) -> str:
    """Change case, punctuation and whitespace, keeping the words."""
    text = text.upper().replace(", ", " ;  ").replace(". ", " !\n\n").replace("?", " ??")
    return re.sub(r" ", "\t ", text)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def row(instruction: str, response: str) -> dict:
    return {"condition": "direct", "instruction": instruction, "response": response}


@pytest.fixture(scope="module")
def train_rows(real_raw) -> list[dict]:
    """Real GSM8K train rows as cleaned rows (question -> final answer)."""
    raw = read_jsonl(real_raw / "gsm8k" / "train.jsonl")
    return [row(r["question"].strip(), r["answer"].split("#### ")[-1].strip()) for r in raw]


def long_item(texts: list[str], start: int) -> int:
    return next(i for i in range(start, len(texts)) if len(_core.normalized_words(texts[i])) > 20)


def test_normalization_is_the_documented_one():
    assert _core.normalized_words("  Hello,\tWORLD!! it's 3.5$ ") == [
        "hello",
        "world",
        "it",
        "s",
        "3",
        "5",
    ]
    text = "Mix: A-B_c  déjà-VU; x²+y=1"
    expected = [w.lower() for w in re.findall(r"[^\W_]+", text)]
    assert _core.normalized_words(text) == expected


def test_planted_questions_are_found_per_file_and_source(tmp_path, eval_sets, train_rows):
    gsm8k, math, _mmlu, _arc_easy, _arc_challenge = eval_sets
    g = long_item(gsm8k.texts["question"], 5)
    m = long_item(math.texts["problem"], 100)
    base = train_rows[:300]
    planted = {
        # row number (1-based) -> (row, evaluation set, field hit)
        11: (row(gsm8k.texts["question"][g], "42"), "gsm8k_test", "instruction"),
        57: (row(perturb(math.texts["problem"][m]), "7"), "math_test", "instruction"),
        120: (
            row(f"Answer with one letter.\n{perturb(MMLU[0]['question'])} (A) ATP", "B"),
            "mmlu_test",
            "instruction",
        ),
        201: (
            row("Quiz", f"Here is the item: {ARC_CHALLENGE[0]['question'].lower()} Carbon."),
            "arc_challenge_test",
            "response",
        ),
    }
    rows = list(base)
    for number in sorted(planted):
        rows.insert(number - 1, planted[number][0])
    clean_file = write_jsonl(tmp_path / "clean" / "gsm8k_train.jsonl", base)
    first = write_jsonl(tmp_path / "planted" / "gsm8k_train.jsonl", rows)
    synth_rows = [
        row("Tell me a story about a fox.", "Once upon a time..."),
        row("Explain: " + perturb(ARC_EASY[0]["question"]) + " Think first.", "state"),
        row(MMLU[2]["question"], "2x"),  # six words: too short to be indexed
        row(MMLU[1]["question"] + "!!", "Westphalia"),  # twelve words: indexed whole
    ]
    second = write_parquet(tmp_path / "planted" / "synth_0.parquet", synth_rows)

    baseline = Scanner(eval_sets).scan_file(clean_file, "gsm8k_train").hit_rows
    report, scans = analyze({"gsm8k_train": [first], "synth": [second]}, eval_sets)

    # Real rows keep their own hits (shifted past the planted rows); every plant is found.
    shifted = []
    for number in baseline:
        shifted.append(number + sum(1 for p in planted if p <= number + len(shifted)))
    expected_rows = sorted(set(shifted) | set(planted))
    assert scans[0].hit_rows == expected_rows
    by_row = {example.row: example for example in report.files[0].examples}
    for number, (_, eval_set, field) in planted.items():
        if number in by_row:
            assert (by_row[number].eval_set, by_row[number].field) == (eval_set, field)
    gsm8k_example = next(e for e in report.files[0].examples if e.row == 11)
    assert gsm8k_example.eval_item == g
    assert gsm8k_example.eval_text == gsm8k.texts["question"][g][:300]
    assert gsm8k_example.span == gsm8k.texts["question"][g][: len(gsm8k_example.span)]
    assert report.files[0].rows == 304 and report.files[0].rows_hit == len(expected_rows)

    synth = report.files[1]
    assert (synth.rows, synth.rows_hit) == (4, 2)
    assert scans[1].hit_rows == [2, 4]
    assert synth.hits_by_set == {"arc_easy_test": 1, "mmlu_test": 1}
    example = synth.examples[0]
    assert (example.row, example.field, example.eval_set) == (2, "instruction", "arc_easy_test")
    assert example.span.startswith("A\t STUDENT") and example.span.endswith("MOST")

    sources = report.sources
    assert sources["gsm8k_train"].rows_hit == len(expected_rows)
    assert sources["gsm8k_train"].hits_by_set["math_test"] >= 1
    assert sources["gsm8k_train"].hits_by_set["mmlu_test"] == 1
    assert sources["gsm8k_train"].hits_by_set["arc_challenge_test"] == 1
    assert sources["synth"].hits_by_set == synth.hits_by_set
    assert report.eval_sets["mmlu_test"] == {"items": 3, "windowed": 1, "whole": 1, "too_short": 1}

    saved = tmp_path / "report.json"
    report.write(saved)
    assert Report.read(saved).to_dict() == report.to_dict()


def test_gsm8k_train_against_math_test_stays_under_the_documented_rate(
    tmp_path, eval_sets, real_raw
):
    # Question and full rationale, so both fields of every real train row are checked.
    records = read_jsonl(real_raw / "gsm8k" / "train.jsonl")
    train = write_jsonl(
        tmp_path / "gsm8k_train.jsonl", [row(r["question"], r["answer"]) for r in records]
    )
    math_only = [loaded for loaded in eval_sets if loaded.spec.name == "math_test"]
    report, _ = analyze({"gsm8k_train": [train]}, math_only, dedup=False)
    result = report.sources["gsm8k_train"]
    assert result.rows == 7473
    assert result.rate <= GSM8K_TRAIN_VS_MATH_TEST_MAX_RATE, result.examples


def test_exact_duplicates_within_and_across_sources(tmp_path, eval_sets):
    a = write_jsonl(
        tmp_path / "a.jsonl",
        [row("What is 2+2?", "4"), row("Name a prime.", "7"), row("what is 2 + 2", "4.")],
    )
    b = write_jsonl(tmp_path / "b.jsonl", [row("Name  a PRIME", "7"), row("Spell cat.", "c-a-t")])
    c = write_parquet(
        tmp_path / "c.parquet",
        [row("WHAT IS 2+2?", "4"), row("spell cat", "C A T"), row("New one", "x")],
    )
    report, scans = analyze({"a": [a], "b": [b], "c": [c]}, eval_sets)
    dups = report.duplicates
    assert dups.rows == {"a": 3, "b": 2, "c": 3}
    assert dups.duplicates == {"a": 1, "b": 1, "c": 2}
    assert dups.pairs == {("a", "a"): 1, ("a", "b"): 1, ("a", "c"): 1, ("b", "c"): 1}
    assert dups.within("a") == 1 and dups.across() == 3
    assert [scan.duplicate_rows for scan in scans] == [[3], [1], [1, 2]]
    # The same words in another field are no duplicate.
    _, scans = analyze(
        {"a": [write_jsonl(tmp_path / "d.jsonl", [row("a b", "c"), row("a", "b c")])]}, eval_sets
    )
    assert scans[0].duplicate_rows == []


def test_bad_rows_are_named(tmp_path, eval_sets):
    """The Rust core's row reader (the tokenizer's) names the file, the row and the field."""
    scanner = Scanner(eval_sets[:1])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps(row("q", "r")) + "\n" + json.dumps({"condition": "direct", "instruction": "q"})
    )
    with pytest.raises(ValueError, match=r"bad.jsonl: row 2, field 'response'"):
        scanner.scan_file(bad, "a")
    nulls = write_parquet(
        tmp_path / "nulls.parquet", [row("q", "r"), {**row("q", "r"), "response": None}]
    )
    assert scanner.scan_file(nulls, "a").result.rows == 2
    no_column = write_parquet(
        tmp_path / "nocol.parquet", [{"condition": "direct", "instruction": "q"}]
    )
    with pytest.raises(ValueError, match=r"nocol.parquet.*response"):
        scanner.scan_file(no_column, "a")
    with pytest.raises(ValueError, match=r"rows.csv"):
        scanner.scan_file(write_jsonl(tmp_path / "rows.csv", []), "a")
