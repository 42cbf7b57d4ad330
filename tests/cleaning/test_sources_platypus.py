"""The Platypus sources (arb, openbookqa, reclor, scibench, scienceqa, theoremqa) against
data_io's ``pipe/clean_platypus/`` scripts.

Expected rows come from restating each script here (with pandas where the script uses it)
over the raw fixture, not from the code under test. scibench and theoremqa run on real raw
data (tests/support/real_raw.py); the other fixtures are small, invented here in the Hub (or
download) schema and labelled synthetic. Everything loads from local raw roots.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets import demo
from hrm_assets.cleaning.checks import NOT_A_STRING
from hrm_assets.cleaning.clean import clean_source
from hrm_assets.cleaning.rows import iter_cleaned_rows
from hrm_assets.cleaning.sources import SOURCES, get_source
from hrm_assets.cleaning.sources.platypus import (
    BAD_ANSWER_KEY,
    BAD_LABEL,
    BAD_TEXT,
    NOT_AN_OBJECT,
)
from hrm_assets.cleaning.sources.platypus_raw import iter_json_array

PLATYPUS = ("arb", "openbookqa", "reclor", "scibench", "scienceqa", "theoremqa")
ARB_FILES = ("math.json", "reading.json", "law.json", "science.json", "physics.json")


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def data_io_jsonl_bytes(rows: list[dict]) -> bytes:
    """data_io's ``write_jsonl``: ``orjson.dumps(row) + b"\\n"``, keys in its dicts' order."""
    return b"".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for row in rows
    )


def assert_file_rows(path: Path, expected: list[dict]) -> None:
    """Exact rows, and exactly the bytes data_io writes for them (ARB: instruction first)."""
    assert read_jsonl(path) == expected
    assert path.read_bytes() == data_io_jsonl_bytes(expected)


def write_json(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return path


def write_parquet(path: Path, records: list[dict], schema: pa.Schema | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records, schema=schema), path)
    return path


def skipped(report) -> dict[str, int]:
    return {reason: entry.count for reason, entry in report.skipped.items()}


def test_registry_has_the_six_platypus_assets_with_data_io_outputs():
    assert set(PLATYPUS) <= set(SOURCES)
    assert get_source("arb").static_outputs == tuple(f"Platypus/arb_{name}l" for name in ARB_FILES)
    for name in PLATYPUS[1:]:
        assert get_source(name).static_outputs == (f"Platypus/{name}.jsonl",)
    arb = get_source("arb")
    assert arb.writes("Platypus/arb_law.jsonl")
    assert not arb.writes("Platypus/openbookqa.jsonl")  # a neighbour's file, not ARB's
    assert not get_source("reclor").writes("Platypus/arb_law.jsonl")


# -- ARB (local Platypus/ARB/<subject>.json) ----------------------------------------------------


ARB_RULES = {  # data_io clean_arb.py's DESCRIPTION_MAP, restated
    "math.json": ("Solve the math problem.", "cot"),
    "reading.json": ("Solve the reading comprehension problem.", "cot"),
    "law.json": ("Choose the correct option letter.", "direct"),
    "science.json": ("Solve the science problem.", "cot"),
    "physics.json": ("Solve the physics problem.", "cot"),
}


def data_io_arb(raw: dict[str, list[dict]]) -> dict[str, list[dict]]:
    out = {}
    for filename, (description, condition) in ARB_RULES.items():
        out[f"Platypus/arb_{filename}l"] = [
            {
                "instruction": f"{description}\n\n{x['instruction']}",
                "response": x["response"],
                "condition": condition,
            }
            for x in raw[filename]
        ]
    return out


def arb_fixture() -> dict[str, list[dict]]:
    """Synthetic ARB records in the download's schema (JSON arrays of instruction/response)."""
    return {
        "math.json": [
            {"instruction": "Find $\\lim_{x\\to 0} \\frac{\\sin x}{x}$.", "response": "It is $1$."},
            {"instruction": "  Prove that $\\sqrt 2$ is irrational.\n", "response": " Suppose... "},
        ],
        "reading.json": [
            {
                "instruction": "Lisez le texte : « Le café était froid. »",
                "response": "Le café était froid.",
            }
        ],
        "law.json": [
            {"instruction": "Which remedy applies?\nA. Damages\nB. Rescission", "response": "B"}
        ],
        "science.json": [],  # an empty subject still gets its (empty) file, as in data_io
        "physics.json": [
            {
                "instruction": "Ein Körper fällt 2 s lang. Wie weit?",
                "response": "$s = \\tfrac12 g t^2 \\approx 19.6$ m 🪂",
            }
        ],
    }


def test_arb_rows_files_and_order(tmp_path):
    raw = arb_fixture()
    for name, records in raw.items():
        write_json(tmp_path / "raw/Platypus/ARB" / name, records)
    write_json(tmp_path / "raw/Platypus/ARB/extra.json", [{"instruction": "x", "response": "y"}])
    report = clean_source(get_source("arb"), tmp_path / "cleaned", tmp_path / "raw")
    for relative, rows in data_io_arb(raw).items():
        assert_file_rows(tmp_path / "cleaned" / relative, rows)
    assert report.parts == list(ARB_FILES)  # data_io's order; other files are not read
    assert (tmp_path / "cleaned/Platypus/arb_science.jsonl").read_bytes() == b""
    assert report.files["Platypus/arb_law.jsonl"].conditions == {"direct": 1}
    assert not (tmp_path / "cleaned/Platypus/arb_extra.jsonl").exists()
    assert report.skipped == {}


def test_arb_malformed_records_are_skipped_and_reported(tmp_path):
    raw = arb_fixture()
    good = raw["math.json"]
    raw["math.json"] = [
        good[0],
        {"instruction": None, "response": "r"},  # data_io would write "...\n\nNone"
        {"response": "no instruction"},  # data_io: KeyError
        ["not", "an", "object"],  # data_io: TypeError
        {"instruction": "no response"},  # data_io: KeyError
        {"instruction": "numeric response", "response": 42},  # not a string row
        good[1],
    ]
    for name, records in raw.items():
        write_json(tmp_path / "raw/Platypus/ARB" / name, records)
    report = clean_source(get_source("arb"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_arb({**raw, "math.json": good})
    math_rows = expected["Platypus/arb_math.jsonl"]
    assert_file_rows(tmp_path / "cleaned/Platypus/arb_math.jsonl", math_rows)
    assert skipped(report) == {BAD_TEXT: 3, NOT_AN_OBJECT: 1, NOT_A_STRING: 1}
    examples = [(e.raw, e.detail) for e in report.skipped[BAD_TEXT].examples]
    assert examples == [
        ("math.json#2", "instruction: NoneType"),
        ("math.json#3", "instruction: missing"),
        ("math.json#5", "response: missing"),
    ]


def test_arb_missing_subject_file_or_raw_root_is_an_error(tmp_path):
    for name in ARB_FILES[:-1]:
        write_json(tmp_path / "raw/Platypus/ARB" / name, [])
    with pytest.raises(FileNotFoundError, match="physics.json"):
        clean_source(get_source("arb"), tmp_path / "cleaned", tmp_path / "raw")
    with pytest.raises(ValueError, match="Platypus/ARB"):
        clean_source(get_source("arb"), tmp_path / "cleaned", raw_root=None)
    assert not list((tmp_path / "cleaned").rglob("*.jsonl"))  # nothing half-written


# -- scibench (real clone files under Platypus/scibench/dataset/original) ------------------------


def data_io_scibench(folder: Path) -> list[dict]:
    """clean_scibench.py restated, files in sorted order (data_io: os.listdir's order)."""
    rows = []
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".json")):
        with open(folder / name) as handle:
            for d in json.load(handle):
                problem = d.get("problem_text", "").strip()
                solution = d.get("solution", "").strip()
                latex = d.get("answer_latex", "").strip()
                number = d.get("answer_number", "").strip()
                if latex == f"${number}$":
                    latex = number
                if solution:
                    rows.append({"condition": "cot", "instruction": problem, "response": solution})
                rows.append({"condition": "direct", "instruction": problem, "response": latex})
    return rows


def test_scibench_real_clone_rows(tmp_path, real_raw):
    source = real_raw / "scibench/dataset/original"
    original = tmp_path / "raw/Platypus/scibench/dataset/original"
    original.mkdir(parents=True)
    for path in source.glob("*.json"):
        (original / path.name).symlink_to(path)
    (original / "README.md").write_text("not data")
    report = clean_source(get_source("scibench"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_scibench(source)
    assert_file_rows(tmp_path / "cleaned/Platypus/scibench.jsonl", expected)
    assert report.records_read == 692
    assert report.parts == sorted(p.name for p in source.glob("*.json"))
    assert report.skipped == {}
    cot = sum(row["condition"] == "cot" for row in expected)
    assert report.condition_counts == {"direct": 692, "cot": cot} and 0 < cot < 692
    # the "$x$" -> x rule fires on real data
    assert any(
        row["response"] and not row["response"].startswith("$")
        for row in expected
        if row["condition"] == "direct"
    )


def test_scibench_malformed_records(tmp_path):
    # Synthetic records in the clone's schema.
    good = {
        "problem_text": " Compute ΔG. ",
        "answer_latex": " $-3.5$ ",
        "answer_number": "-3.5",
        "unit": "kJ",
        "source": "atkins",
        "problemid": "1.1",
        "comment": "",
        "solution": " Use ΔG = ΔH - TΔS. ",
    }
    bare = {"answer_number": "2"}  # every other field missing: .get(..., '') as data_io
    records = [good, {**good, "answer_number": None}, "oops", {**good, "problem_text": 3}, bare]
    original = tmp_path / "raw/Platypus/scibench/dataset/original"
    write_json(original / "b.json", records)
    write_json(original / "a.json", [good])
    report = clean_source(get_source("scibench"), tmp_path / "cleaned", tmp_path / "raw")
    good_rows = [
        {"condition": "cot", "instruction": "Compute ΔG.", "response": "Use ΔG = ΔH - TΔS."},
        {"condition": "direct", "instruction": "Compute ΔG.", "response": "-3.5"},
    ]
    bare_rows = [{"condition": "direct", "instruction": "", "response": ""}]
    assert_file_rows(
        tmp_path / "cleaned/Platypus/scibench.jsonl", good_rows + good_rows + bare_rows
    )
    assert report.parts == ["a.json", "b.json"]
    assert skipped(report) == {BAD_TEXT: 2, NOT_AN_OBJECT: 1}


# -- OpenBookQA (allenai/openbookqa, config additional, train then validation) -----------------


def data_io_openbookqa(train: list[dict], validation: list[dict]) -> list[dict]:
    """clean_openbookqa.py restated on pandas frames, as the script builds them."""
    df = pd.concat([pd.DataFrame(train), pd.DataFrame(validation)])
    df["choices"] = df["choices"].apply(lambda x: [x["text"][i] for i in range(len(x["text"]))])
    rows = []
    for _, row in df.iterrows():
        choices = row["choices"]
        lines = [
            f"\n{chr(65 + i)}: {c}" if i == 0 else f"{chr(65 + i)}: {c}"
            for i, c in enumerate(choices)
        ]
        formatted = "\n".join(lines)
        instruction = (
            "Based on the given fact, which of the following option is the correct answer to the "
            f"question?\n\n{row['question_stem']} {formatted}\n\nFact: {row['fact1']}"
        )
        _ = choices[ord(row["answerKey"]) - 65]
        rows.append(
            {"condition": "direct", "instruction": instruction, "response": row["answerKey"]}
        )
    return rows


def openbookqa_record(i: int, stem: str, texts: list, key, fact) -> dict:
    return {
        "id": f"q{i}",
        "question_stem": stem,
        "choices": {"text": texts, "label": [chr(65 + j) for j in range(len(texts))]},
        "answerKey": key,
        "fact1": fact,
        "humanScore": 1.0,
        "clarity": 2.0,
        "turkIdAnonymized": "t1",
    }


def test_openbookqa_rows_train_then_validation(tmp_path):
    # Synthetic records in the Hub schema of config "additional".
    train = [
        openbookqa_record(
            1, "The sun is", ["a star", "a planet", "a moon", "a comet"], "A", "the sun is a star"
        ),
        openbookqa_record(
            2,
            "Frost forms when",
            ["it is hot", "water vapour freezes", "x", "y"],
            "B",
            "frost is frozen water vapour",
        ),
        openbookqa_record(
            3, "Welche Farbe hat Chlorophyll?", ["Rot", "Grün", "Blau"], "B", "Chlorophyll ist grün"
        ),
    ]
    validation = [
        openbookqa_record(
            4, "Magnets attract", ["iron", "glass", "wood", "paper"], "A", "magnets attract iron"
        )
    ]
    repo = tmp_path / "raw/allenai/openbookqa/additional"
    write_parquet(repo / "validation-00000-of-00001.parquet", validation)
    write_parquet(repo / "train-00000-of-00001.parquet", train)
    write_parquet(repo / "test-00000-of-00001.parquet", validation)  # not read by data_io
    report = clean_source(get_source("openbookqa"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_openbookqa(train, validation)
    assert_file_rows(tmp_path / "cleaned/Platypus/openbookqa.jsonl", expected)
    assert expected[0]["instruction"].endswith(
        "The sun is \nA: a star\nB: a planet\nC: a moon\nD: a comet\n\nFact: the sun is a star"
    )
    assert report.parts == ["train", "validation"]
    assert report.skipped == {}


def test_openbookqa_malformed_records(tmp_path):
    good = openbookqa_record(1, "Stem", ["a", "b", "c", "d"], "C", "fact")
    records = [
        good,
        {**good, "answerKey": "E"},  # data_io: IndexError on the answer lookup
        {**good, "answerKey": "AB"},  # data_io: TypeError in ord()
        {**good, "fact1": None},  # data_io would write "Fact: None"
        {**good, "choices": {"text": ["a", None], "label": ["A", "B"]}},
        {**good, "answerKey": "@"},  # ord('@') - 65 == -1: data_io takes the last choice
    ]
    write_parquet(
        tmp_path / "raw/allenai/openbookqa/additional/train-00000-of-00001.parquet", records
    )
    write_parquet(
        tmp_path / "raw/allenai/openbookqa/additional/validation-00000-of-00001.parquet", [good]
    )
    report = clean_source(get_source("openbookqa"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_openbookqa([good, records[-1]], [good])
    assert_file_rows(tmp_path / "cleaned/Platypus/openbookqa.jsonl", expected)
    assert skipped(report) == {BAD_ANSWER_KEY: 2, BAD_TEXT: 2}


# -- ReClor (metaeval/reclor: train.json and val.json at the repository root) -------------------


def data_io_reclor(train: list[dict], validation: list[dict]) -> list[dict]:
    """clean_reclor.py restated on pandas frames."""
    data = pd.concat([pd.DataFrame(train), pd.DataFrame(validation)])
    rows = []
    for _, entry in data.iterrows():
        text = f"{entry['question']}\n\n{entry['context']}\n\nOptions:"
        for i, answer in enumerate(entry["answers"]):
            text += "\n" + chr(65 + i) + ": " + answer
        rows.append(
            {"condition": "direct", "instruction": text, "response": chr(65 + entry["label"])}
        )
    return rows


def reclor_record(i: int, label, **changes) -> dict:
    record = {
        "context": f"Context {i}: all ravens in the study were black; “Corvus corax” was sampled.",
        "question": "Which one of the following most weakens the argument?",
        "answers": ["A white raven was found.", "Ravens fly.", "Crows are black.", "None."],
        "label": label,
        "id_string": f"train_{i}",
    }
    record.update(changes)
    return record


def test_reclor_rows_from_hub_json_files(tmp_path):
    # Synthetic records in the Hub files' schema (JSON arrays, integer labels).
    train = [reclor_record(i, i % 4) for i in range(5)]
    validation = [reclor_record(9, 2, answers=["Sí.", "No."])]
    write_json(tmp_path / "raw/metaeval/reclor/train.json", train)
    write_json(tmp_path / "raw/metaeval/reclor/val.json", validation)
    spec = get_source("reclor")
    report = clean_source(spec, tmp_path / "cleaned", tmp_path / "raw")
    assert_file_rows(tmp_path / "cleaned/Platypus/reclor.jsonl", data_io_reclor(train, validation))
    assert report.parts == ["train", "validation"]
    assert spec.layout.raw_files(spec, tmp_path / "raw") == [
        tmp_path / "raw/metaeval/reclor/train.json",
        tmp_path / "raw/metaeval/reclor/val.json",
    ]
    assert report.skipped == {}


def test_reclor_malformed_records(tmp_path):
    train = [
        reclor_record(0, 1),
        reclor_record(1, None),  # data_io: TypeError in chr(65 + label)
        reclor_record(2, -70),  # chr of a negative code point: ValueError
        reclor_record(3, 2, question=None),  # data_io would write "None"
        reclor_record(4, 0, answers=["ok", None]),  # data_io: TypeError on concatenation
        reclor_record(5, 30),  # no such option, but data_io writes chr(95) == "_"
    ]
    write_json(tmp_path / "raw/metaeval/reclor/train.json", train)
    write_json(tmp_path / "raw/metaeval/reclor/val.json", [])
    report = clean_source(get_source("reclor"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_reclor([train[0], train[5]], [])
    assert expected[1]["response"] == "_"
    assert_file_rows(tmp_path / "cleaned/Platypus/reclor.jsonl", expected)
    assert skipped(report) == {BAD_LABEL: 2, BAD_TEXT: 2}


def test_reclor_hub_code_path(monkeypatch, tmp_path):
    """Without a raw root each split is streamed from the Hub by name, train then validation."""
    import datasets

    files = {
        "train": write_json(tmp_path / "t.json", [reclor_record(0, 3)]),
        "validation": write_json(tmp_path / "v.json", [reclor_record(1, 0)]),
    }
    real_load, calls = datasets.load_dataset, []

    def fake_load(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        split = kwargs["split"]
        return real_load(
            "json", data_files={split: [str(files[split])]}, split=split, streaming=True
        )

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    clean_source(get_source("reclor"), tmp_path / "cleaned", raw_root=None)
    assert calls == [
        ("metaeval/reclor", None, {"split": "train", "streaming": True}),
        ("metaeval/reclor", None, {"split": "validation", "streaming": True}),
    ]
    assert [r["response"] for r in read_jsonl(tmp_path / "cleaned/Platypus/reclor.jsonl")] == [
        "D",
        "A",
    ]


# -- ScienceQA (metaeval/ScienceQA_text_only, data/, train, validation, test) ------------------


def data_io_scienceqa(splits: list[list[dict]]) -> list[dict]:
    """clean_scienceqa.py restated on pandas frames."""
    df = pd.concat([pd.DataFrame(split) for split in splits])
    rows = []
    for _, row in df.iterrows():
        question, choices = row["question"].strip(), row["choices"]
        lecture, solution, answer = row["lecture"].strip(), row["solution"].strip(), row["answer"]
        options = "\n".join(f"{chr(65 + i)}: {c.strip()}" for i, c in enumerate(choices))
        if solution:
            if lecture:
                text = (
                    "Solve the following question using the information provided in the "
                    f"lecture.\n\n{question}\nOptions:\n{options}\n\nLecture: {lecture}"
                )
            else:
                text = f"{question}\nOptions:\n{options}"
            rows.append(
                {
                    "condition": "cot",
                    "instruction": text,
                    "response": f"{solution}\n\nAnswer: {chr(65 + answer)}",
                }
            )
        if lecture:
            text = (
                "Choose the correct option letter for the following question based on the "
                f"information from the lecture.\n\n{question}\nOptions:\n{options}\n\n"
                f"Lecture: {lecture}"
            )
        else:
            text = f"{question}\nOptions:\n{options}"
        rows.append({"condition": "direct", "instruction": text, "response": f"{chr(65 + answer)}"})
    return rows


SCIENCEQA_SCHEMA = pa.schema(
    [
        ("question", pa.string()),
        ("choices", pa.list_(pa.string())),
        ("answer", pa.int8()),
        ("hint", pa.string()),
        ("task", pa.string()),
        ("grade", pa.string()),
        ("subject", pa.string()),
        ("topic", pa.string()),
        ("category", pa.string()),
        ("skill", pa.string()),
        ("lecture", pa.string()),
        ("solution", pa.string()),
    ]
)


def scienceqa_record(question, choices, answer, lecture, solution) -> dict:
    return {
        "question": question,
        "choices": choices,
        "answer": answer,
        "hint": "",
        "task": "closed choice",
        "grade": "grade3",
        "subject": "natural science",
        "topic": "physics",
        "category": "Magnets",
        "skill": "Magnets",
        "lecture": lecture,
        "solution": solution,
    }


def write_scienceqa(raw: Path, splits: dict[str, list[dict]]) -> None:
    for split, records in splits.items():
        write_parquet(
            raw / f"metaeval/ScienceQA_text_only/data/{split}-00000-of-00001-abc.parquet",
            records,
            SCIENCEQA_SCHEMA,
        )


def test_scienceqa_rows_all_branches(tmp_path):
    # Synthetic records in the Hub schema.
    splits = {
        "train": [
            scienceqa_record(
                " Will these magnets attract? ",
                [" attract ", "repel"],
                1,
                " Magnets have poles.\n",
                " Like poles repel. ",
            ),
            scienceqa_record("Which is a solid?", ["milk", "ice"], 1, "", "Ice is solid."),
            scienceqa_record(
                "Was ist schwerer?",
                ["1 kg Eisen", "1 kg Federn", "gleich"],
                2,
                "Masse misst Materie.",
                "  ",
            ),
            scienceqa_record("Pick one.", ["x"], 0, "", ""),
        ],
        "validation": [scienceqa_record("Val?", ["a", "b"], 0, "L.", "S.")],
        "test": [scienceqa_record("Test?", ["a", "b"], 1, "", "S.")],
    }
    write_scienceqa(tmp_path / "raw", splits)
    report = clean_source(get_source("scienceqa"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_scienceqa([splits["train"], splits["validation"], splits["test"]])
    assert_file_rows(tmp_path / "cleaned/Platypus/scienceqa.jsonl", expected)
    assert report.parts == ["train", "validation", "test"]
    assert report.condition_counts == {"cot": 4, "direct": 6}
    assert report.skipped == {}


def test_scienceqa_malformed_records(tmp_path):
    good = scienceqa_record("Q?", ["a", "b"], 0, "L.", "S.")
    train = [
        good,
        {**good, "lecture": None},  # data_io: AttributeError on .strip()
        {**good, "choices": ["a", None]},
        {**good, "answer": None},  # data_io: TypeError in chr()
        {**good, "question": None},
    ]
    write_scienceqa(tmp_path / "raw", {"train": train, "validation": [good], "test": [good]})
    report = clean_source(get_source("scienceqa"), tmp_path / "cleaned", tmp_path / "raw")
    assert_file_rows(
        tmp_path / "cleaned/Platypus/scienceqa.jsonl", data_io_scienceqa([[good], [good], [good]])
    )
    assert skipped(report) == {BAD_TEXT: 3, BAD_LABEL: 1}


# -- TheoremQA (TIGER-Lab/TheoremQA, data/test-*.parquet; real test split) ----------------------


def data_io_theoremqa(records: list[dict]) -> list[dict]:
    """clean_theoremqa.py restated: the rows of records whose Picture is None.

    Not through pandas: from pandas 3 on, ``iterrows`` turns that None into NaN, so the
    script's ``is None`` never holds and it writes an empty file (pandas 2 keeps None; the
    module docstring records the choice of the rule as written).
    """
    return [
        {"condition": "direct", "instruction": r["Question"], "response": r["Answer"]}
        for r in records
        if r["Picture"] is None
    ]


def test_pandas_version_decides_data_io_theoremqa_rule():
    """Why the restatement above avoids pandas: this pandas's iterrows keeps None or not."""
    frame = pd.DataFrame([{"Question": "q", "Picture": None}, {"Question": "r", "Picture": {}}])
    kept = [row["Question"] for _, row in frame.iterrows() if row["Picture"] is None]
    assert kept == (["q"] if int(pd.__version__.split(".")[0]) < 3 else [])


def hub_theoremqa_records(raw: list[dict]) -> list[dict]:
    """The real JSON as the Hub copy holds it: ``Answer`` a string (``str()`` of an int, float,
    bool or list), ``Picture`` an image (stored as ``{"bytes", "path"}``) or null."""
    return [
        {
            "Question": r["Question"],
            "Answer": r["Answer"] if isinstance(r["Answer"], str) else str(r["Answer"]),
            "Answer_type": r["Answer_type"],
            "Picture": None if r["Picture"] is None else {"bytes": None, "path": r["Picture"]},
        }
        for r in raw
    ]


def write_theoremqa_mirror(raw_root: Path, records: list[dict]) -> Path:
    """``data/test-00000-of-00001.parquet`` with the Hub's features (Picture: Image)."""
    import datasets

    features = datasets.Features(
        {
            "Question": datasets.Value("string"),
            "Answer": datasets.Value("string"),
            "Answer_type": datasets.Value("string"),
            "Picture": datasets.Image(),
        }
    )
    table = pa.Table.from_pylist(records, schema=features.arrow_schema)
    table = table.replace_schema_metadata(
        {"huggingface": json.dumps({"info": {"features": features.to_dict()}})}
    )
    path = raw_root / "TIGER-Lab/TheoremQA/data/test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(table, path)
    return path


@pytest.fixture(scope="module")
def theoremqa_raw(real_raw) -> list[dict]:
    return json.loads((real_raw / "theoremqa/theoremqa_test.json").read_text(encoding="utf-8"))


def test_theoremqa_real_test_split_rows(tmp_path, theoremqa_raw):
    records = hub_theoremqa_records(theoremqa_raw)
    assert {type(r["Answer"]) for r in theoremqa_raw} == {int, float, bool, list, str}
    write_theoremqa_mirror(tmp_path / "raw", records)
    spec = get_source("theoremqa")
    assert "TIGER-Lab/TheoremQA/data/test-*.parquet" in spec.layout.describe(spec)
    report = clean_source(spec, tmp_path / "cleaned", tmp_path / "raw")  # no Pillow needed
    expected = data_io_theoremqa(records)
    assert len(expected) == 747
    assert_file_rows(tmp_path / "cleaned/Platypus/theoremqa.jsonl", expected)
    assert report.records_read == 800 and report.rows_written == 747
    assert report.skipped == {}
    assert {"True", "False", "[0, 5]", "11760", "1.0"} <= {r["response"] for r in expected}


def test_theoremqa_unconverted_answers_are_reported_not_written(tmp_path, theoremqa_raw):
    """A JSONL mirror of the raw JSON (integer answers, picture paths as text) keeps the rule
    on pictures; rows whose answer is not a string are counted as skipped."""
    subset = [
        r
        for r in theoremqa_raw
        if isinstance(r["Answer"], int) and not isinstance(r["Answer"], bool)
    ][:30]
    assert any(r["Picture"] is not None for r in subset)
    data = tmp_path / "raw/TIGER-Lab/TheoremQA/data"
    data.mkdir(parents=True)
    (data / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in subset))
    report = clean_source(get_source("theoremqa"), tmp_path / "cleaned", tmp_path / "raw")
    without_picture = sum(r["Picture"] is None for r in subset)
    assert skipped(report) == {NOT_A_STRING: without_picture}
    assert read_jsonl(tmp_path / "cleaned/Platypus/theoremqa.jsonl") == []


# -- JSON array streaming ----------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 16])
def test_iter_json_array_at_every_chunk_boundary(tmp_path, chunk):
    values = [{"a": 'ü\\"]', "n": 12345}, 6789, -1.5e3, "x, y]", [], {}, True, None, [1, [2]]]
    path = tmp_path / "a.json"
    path.write_text(
        " \n[ " + " ,\n ".join(json.dumps(v, ensure_ascii=False) for v in values) + " ]\n",
        encoding="utf-8",
    )
    assert list(iter_json_array(path, chunk)) == values
    path.write_text(" [ ] ")
    assert list(iter_json_array(path, chunk)) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1}', "expected a JSON array"),
        ("", "expected a JSON array"),
        ("[1, 2", "unexpected end|expected ',' or ']'"),
        ("[1 2]", "expected ',' or ']'"),
        ("[1] [2]", "extra data"),
        ("[1, }]", "Expecting value"),
        ("[1,]", "Expecting value"),
    ],
)
def test_iter_json_array_rejects_non_arrays_naming_the_file(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as error:
        list(iter_json_array(path, 2))
    assert "bad.json" in str(error.value)


# -- demo corpus -------------------------------------------------------------------------------


def test_platypus_demo_cleans_as_data_io_would(tmp_path):
    raw = tmp_path / "raw"
    demo.write_demo_corpus(raw, PLATYPUS)
    reports = {name: clean_source(get_source(name), tmp_path / "cleaned", raw) for name in PLATYPUS}
    for name, report in reports.items():
        assert report.skipped == {}, name
        assert 200 <= report.records_read <= 1000, name
    cleaned = tmp_path / "cleaned"
    arb = {name: json.loads((raw / "Platypus/ARB" / name).read_text()) for name in ARB_FILES}
    for relative, rows in data_io_arb(arb).items():
        assert_file_rows(cleaned / relative, rows)
    assert_file_rows(
        cleaned / "Platypus/scibench.jsonl",
        data_io_scibench(raw / "Platypus/scibench/dataset/original"),
    )

    def table(path: str) -> list[dict]:
        return pq.read_table(raw / path).to_pylist()

    assert_file_rows(
        cleaned / "Platypus/openbookqa.jsonl",
        data_io_openbookqa(
            table("allenai/openbookqa/additional/train-00000-of-00001.parquet"),
            table("allenai/openbookqa/additional/validation-00000-of-00001.parquet"),
        ),
    )
    assert_file_rows(
        cleaned / "Platypus/reclor.jsonl",
        data_io_reclor(
            json.loads((raw / "metaeval/reclor/train.json").read_text()),
            json.loads((raw / "metaeval/reclor/val.json").read_text()),
        ),
    )
    assert_file_rows(
        cleaned / "Platypus/scienceqa.jsonl",
        data_io_scienceqa(
            [
                table(f"metaeval/ScienceQA_text_only/data/{s}-00000-of-00001.parquet")
                for s in ("train", "validation", "test")
            ]
        ),
    )
    theorem = table("TIGER-Lab/TheoremQA/data/test-00000-of-00001.parquet")
    assert_file_rows(cleaned / "Platypus/theoremqa.jsonl", data_io_theoremqa(theorem))
    assert reports["theoremqa"].rows_written < reports["theoremqa"].records_read  # pictures
    for name in ("scibench", "scienceqa"):
        assert set(reports[name].condition_counts) == {"cot", "direct"}, name
    for name in PLATYPUS:
        rows = [row for rel in reports[name].files for row in iter_cleaned_rows(cleaned / rel)]
        assert not "".join(row.instruction for row in rows).isascii(), name
