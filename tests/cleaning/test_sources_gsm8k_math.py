"""gsm8k_train and math_train against data_io's rules, on real raw rows; the demo round trip.

Expected rows are computed here by restating data_io's scripts over the raw JSON, not with
the code under test. Everything loads from local raw roots (the Hub is unreachable in tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets import demo
from hrm_assets.cleaning.clean import clean_source, source_code_version
from hrm_assets.cleaning.outputs import jsonl_line
from hrm_assets.cleaning.rows import Row, iter_cleaned_rows
from hrm_assets.cleaning.sources import SOURCES, get_source
from hrm_assets.cleaning.sources.gsm8k import BAD_ANSWER
from hrm_assets.cleaning.sources.hub import HubLayout
from hrm_assets.cleaning.sources.math import SUBJECTS, last_boxed_content


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def expected_file_bytes(rows: list[dict]) -> bytes:
    """data_io's write_jsonl: orjson.dumps(row) + newline, i.e. compact, UTF-8, keys in order."""
    return b"".join(
        json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        for row in rows
    )


# -- GSM8K -------------------------------------------------------------------------------------


def data_io_gsm8k(raw: list[dict]) -> list[dict]:
    """pipe/clean_gsm8k_train.py restated (every real row has exactly one '#### ')."""
    out = []
    for row in raw:
        answer = row["answer"].split("#### ")
        assert len(answer) == 2
        out.append(
            {
                "condition": "direct",
                "instruction": row["question"].strip(),
                "response": answer[-1].strip(),
            }
        )
    return out


@pytest.fixture(scope="module")
def gsm8k_raw(real_raw) -> list[dict]:
    return read_jsonl(real_raw / "gsm8k" / "train.jsonl")


def test_gsm8k_real_rows_from_jsonl_mirror(tmp_path, real_raw, gsm8k_raw):
    raw_root = tmp_path / "raw"
    config = raw_root / "openai" / "gsm8k" / "main"
    config.mkdir(parents=True)
    (config / "train.jsonl").symlink_to(real_raw / "gsm8k" / "train.jsonl")
    spec = get_source("gsm8k_train")
    report = clean_source(spec, tmp_path / "cleaned", raw_root, batch_size=1000)
    expected = data_io_gsm8k(gsm8k_raw)
    out = tmp_path / "cleaned" / "gsm8k_train.jsonl"
    assert len(expected) == 7473
    assert out.read_bytes() == expected_file_bytes(expected)
    assert report.records_read == 7473 and report.rows_written == 7473
    assert report.skipped == {}
    assert report.parts == ["main"]
    assert report.tag_counts == {"direct": 7473}


def test_gsm8k_parquet_shards_are_read_in_shard_order(tmp_path, gsm8k_raw):
    raw_root = tmp_path / "raw"
    config = raw_root / "openai" / "gsm8k" / "main"
    config.mkdir(parents=True)
    head, tail = gsm8k_raw[:4000], gsm8k_raw[4000:]
    # Written in reverse order on purpose: the file names, not creation order, decide.
    pq.write_table(pa.Table.from_pylist(tail), config / "train-00001-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(head), config / "train-00000-of-00002.parquet")
    pq.write_table(pa.Table.from_pylist(head[:3]), config / "test-00000-of-00001.parquet")
    clean_source(get_source("gsm8k_train"), tmp_path / "cleaned", raw_root)
    rows = read_jsonl(tmp_path / "cleaned" / "gsm8k_train.jsonl")
    assert rows == data_io_gsm8k(gsm8k_raw)


def test_gsm8k_answer_without_single_separator_is_skipped_and_reported(tmp_path, gsm8k_raw):
    raw = [
        gsm8k_raw[0],
        {"question": "No final answer?", "answer": "Just reasoning."},
        gsm8k_raw[1],
        {"question": "Two answers?", "answer": "#### 1\n#### 2"},
    ]
    config = tmp_path / "raw" / "openai" / "gsm8k" / "main"
    config.mkdir(parents=True)
    (config / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in raw))
    report = clean_source(get_source("gsm8k_train"), tmp_path / "cleaned", tmp_path / "raw")
    assert read_jsonl(tmp_path / "cleaned" / "gsm8k_train.jsonl") == data_io_gsm8k(
        [gsm8k_raw[0], gsm8k_raw[1]]
    )
    skipped = report.skipped[BAD_ANSWER]
    assert skipped.count == 2
    assert [(e.file, e.raw, e.detail) for e in skipped.examples] == [
        ("gsm8k_train.jsonl", "main#2", "1 parts"),
        ("gsm8k_train.jsonl", "main#4", "3 parts"),
    ]


# -- MATH --------------------------------------------------------------------------------------


def data_io_last_boxed(text: str):
    """_last_boxed_only_string restated: brace matching from the last \\boxed (else \\fbox)."""
    marker = text.rfind("\\boxed")
    if marker == -1:
        marker = text.rfind("\\fbox")
    if marker == -1:
        return None
    opened, depth = None, 0
    for i, ch in enumerate(text[marker:], start=marker):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "{" and opened is None:
            opened = i
        if ch == "}" and depth == 0:
            return text[opened + 1 : i].strip()
    return None


def data_io_math(raw_by_subject: dict[str, list[dict]]) -> list[dict]:
    """pipe/clean_math_train.py restated, subjects in config order."""
    out = []
    for subject in sorted(raw_by_subject):
        for row in raw_by_subject[subject]:
            out.append(
                {
                    "condition": "cot",
                    "instruction": row["problem"],
                    "response": row["solution"].strip(),
                }
            )
            answer = data_io_last_boxed(row["solution"])
            if answer:
                out.append(
                    {
                        "condition": "direct",
                        "instruction": row["problem"],
                        "response": answer.strip(),
                    }
                )
    return out


def config_of(subject_type: str) -> str:
    """The Hub config of a MATH ``type``: 'Counting & Probability' -> counting_and_probability."""
    return subject_type.lower().replace(" & ", "_and_").replace(" ", "_")


@pytest.fixture(scope="module")
def math_by_subject(real_raw) -> dict[str, list[dict]]:
    by_subject: dict[str, list[dict]] = {}
    for row in read_jsonl(real_raw / "hendrycks_math" / "test.jsonl"):
        by_subject.setdefault(config_of(row["type"]), []).append(row)
    return by_subject


def test_math_real_rows_from_subject_folders(tmp_path, math_by_subject):
    assert sorted(math_by_subject) == sorted(SUBJECTS)
    repo = tmp_path / "raw" / "EleutherAI" / "hendrycks_math"
    for subject, rows in math_by_subject.items():
        (repo / subject).mkdir(parents=True)
        # The test split stands in for train (same schema); the Hub has both side by side.
        (repo / subject / "train.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
    (repo / "README.md").write_text("not a config")
    (repo / "empty_subject").mkdir()  # no train files: not a config
    report = clean_source(get_source("math_train"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_math(math_by_subject)
    out = tmp_path / "cleaned" / "math_train.jsonl"
    assert out.read_bytes() == expected_file_bytes(expected)
    assert report.parts == sorted(SUBJECTS)
    assert report.records_read == 5000
    direct = sum(1 for row in expected if row["condition"] == "direct")
    assert report.condition_counts == {"cot": 5000, "direct": direct}
    assert direct == 5000  # every real solution has a non-empty box (no-box cases: demo, unit)
    assert report.skipped == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so $\\boxed{5}$.", "5"),
        ("$\\boxed{\\frac{1}{2}}$", "\\frac{1}{2}"),
        ("first \\boxed{1} then \\boxed{ 2 }", "2"),
        ("\\fbox{3} and \\boxed{4}", "4"),  # \fbox only counts when there is no \boxed
        ("\\boxed{4} and \\fbox{3}", "4"),
        ("only \\fbox{ 7 }", "7"),
        ("no box at all", None),
        ("\\boxed{unclosed", None),
        ("\\boxed 9 and later {x}", "x"),  # the first brace after the marker, as data_io
        ("\\boxed} {a} }", None),  # a '}' first drives the count negative: never closes
        ("\\boxed{ }", ""),
    ],
)
def test_last_boxed_content_matches_data_io(text, expected):
    assert last_boxed_content(text) == expected == data_io_last_boxed(text)


def test_math_hub_code_path_calls_datasets_like_data_io(monkeypatch, tmp_path):
    """With no raw root, configs come from get_dataset_config_names and each is streamed."""
    import datasets

    raw = {
        "algebra": [
            {"problem": "P", "level": "Level 1", "type": "Algebra", "solution": "$\\boxed{1}$"}
        ],
        "geometry": [
            {"problem": "G", "level": "Level 2", "type": "Geometry", "solution": "no box"}
        ],
    }
    for name, rows in raw.items():
        (tmp_path / name).mkdir()
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / name / "train-00000-of-00001.parquet")
    calls = []
    real_load = datasets.load_dataset

    def fake_config_names(hub_id):
        calls.append(("configs", hub_id))
        return ["geometry", "algebra"]  # the Hub's order is kept, whatever it is

    def fake_load(path, name=None, **kwargs):
        calls.append(("load", path, name, kwargs))
        files = [str(tmp_path / name / "train-00000-of-00001.parquet")]
        return real_load("parquet", data_files={"train": files}, split="train", streaming=True)

    monkeypatch.setattr(datasets, "get_dataset_config_names", fake_config_names)
    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    report = clean_source(get_source("math_train"), tmp_path / "cleaned", raw_root=None)
    assert calls == [
        ("configs", "EleutherAI/hendrycks_math"),
        ("load", "EleutherAI/hendrycks_math", "geometry", {"split": "train", "streaming": True}),
        ("load", "EleutherAI/hendrycks_math", "algebra", {"split": "train", "streaming": True}),
    ]
    assert list(iter_cleaned_rows(tmp_path / "cleaned" / "math_train.jsonl")) == [
        Row("cot", "G", "no box"),
        Row("cot", "P", "$\\boxed{1}$"),
        Row("direct", "P", "1"),
    ]
    assert report.parts == ["geometry", "algebra"]


def test_missing_raw_files_name_the_expected_place(tmp_path):
    with pytest.raises(FileNotFoundError, match="openai/gsm8k/main"):
        clean_source(get_source("gsm8k_train"), tmp_path / "cleaned", tmp_path)
    with pytest.raises(FileNotFoundError, match="EleutherAI/hendrycks_math"):
        clean_source(get_source("math_train"), tmp_path / "cleaned", tmp_path)
    assert not (tmp_path / "cleaned" / "gsm8k_train.jsonl").exists()


def test_mixed_parquet_and_jsonl_in_one_config_is_an_error(tmp_path, gsm8k_raw):
    config = tmp_path / "openai" / "gsm8k" / "main"
    config.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(gsm8k_raw[:2]), config / "train-00000-of-00001.parquet")
    (config / "train.jsonl").write_text(json.dumps(gsm8k_raw[2]) + "\n")
    with pytest.raises(ValueError, match="both Parquet and JSONL"):
        HubLayout().local_files(get_source("gsm8k_train"), tmp_path, "main")


# -- demo corpus -------------------------------------------------------------------------------


def test_every_source_has_a_demo_and_the_demo_cleans_to_valid_rows(tmp_path):
    written = demo.write_demo_corpus(tmp_path / "raw")
    assert sorted(written) == sorted(SOURCES)
    for name, spec in SOURCES.items():
        report = clean_source(spec, tmp_path / "cleaned", tmp_path / "raw", batch_size=64)
        assert report.skipped == {}, name
        assert 200 <= report.records_read <= 1000, name
        for relative, file_report in report.files.items():
            rows = list(iter_cleaned_rows(tmp_path / "cleaned" / relative))  # validates
            assert len(rows) == file_report.rows > 0
            texts = " ".join(row.instruction for row in rows)
            assert not texts.isascii(), f"{name}: the demo should include non-ASCII rows"


def test_demo_corpus_is_deterministic_and_cleans_as_data_io_would(tmp_path):
    first = demo.write_demo_corpus(tmp_path / "a")
    demo.write_demo_corpus(tmp_path / "b")
    for paths in first.values():
        for path in paths:
            twin = tmp_path / "b" / path.relative_to(tmp_path / "a")
            assert path.read_bytes() == twin.read_bytes()
    raw = tmp_path / "a"
    gsm8k = pq.read_table(raw / "openai/gsm8k/main/train-00000-of-00001.parquet").to_pylist()
    clean_source(get_source("gsm8k_train"), tmp_path / "cleaned", raw)
    assert read_jsonl(tmp_path / "cleaned" / "gsm8k_train.jsonl") == data_io_gsm8k(gsm8k)
    by_subject = {
        subject: pq.read_table(
            raw / "EleutherAI/hendrycks_math" / subject / "train-00000-of-00001.parquet"
        ).to_pylist()
        for subject in SUBJECTS
    }
    assert {r["type"] for rows in by_subject.values() for r in rows} == set(SUBJECTS.values())
    report = clean_source(get_source("math_train"), tmp_path / "cleaned", raw)
    expected = data_io_math(by_subject)
    assert read_jsonl(tmp_path / "cleaned" / "math_train.jsonl") == expected
    assert report.condition_counts["direct"] < report.condition_counts["cot"]  # corner cases


def test_cli_end_to_end_on_demo_corpus(tmp_path, capsys, monkeypatch):
    from hrm_assets.cleaning import cli

    assert demo.main([str(tmp_path / "raw")]) == 0
    monkeypatch.setenv("HRM_RAW_ROOT", str(tmp_path / "raw"))
    monkeypatch.setenv("HRM_DATA_ROOT", str(tmp_path / "data"))
    assert cli.main(["gsm8k_train", "math_train"]) == 0
    out = capsys.readouterr().out
    assert "gsm8k_train: 300 records -> 300 rows in gsm8k_train.jsonl" in out
    assert "math_train: 280 records ->" in out
    cleaned = tmp_path / "data" / "cleaned"
    assert len(list(iter_cleaned_rows(cleaned / "gsm8k_train.jsonl"))) == 300
    math_rows = list(iter_cleaned_rows(cleaned / "math_train.jsonl"))
    assert (cleaned / "math_train.jsonl").read_bytes() == b"".join(map(jsonl_line, math_rows))


def test_raw_files_and_code_version_for_data_versions(tmp_path):
    demo.write_demo_corpus(tmp_path)
    math_spec = get_source("math_train")
    files = math_spec.layout.raw_files(math_spec, tmp_path)
    assert [p.parent.name for p in files] == sorted(SUBJECTS)
    assert all(p.name == "train-00000-of-00001.parquet" for p in files)
    gsm8k_spec = get_source("gsm8k_train")
    assert gsm8k_spec.layout.raw_files(gsm8k_spec, tmp_path) == [
        tmp_path / "openai/gsm8k/main/train-00000-of-00001.parquet"
    ]
    assert "openai/gsm8k/main/train-*.parquet" in gsm8k_spec.layout.describe(gsm8k_spec)
    versions = {name: source_code_version(spec) for name, spec in SOURCES.items()}
    assert versions == {name: source_code_version(spec) for name, spec in SOURCES.items()}
    assert len(set(versions.values())) == len(versions)
