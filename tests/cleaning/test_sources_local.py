"""Local-file sources (dmmath, sudoku, synth, flan, amps_khan, ampsmathematica) against data_io.

Expected rows are computed here by restating each data_io script over the raw fixture (its own
loops, globs, polars expressions and tar walk), not with the code under test. dmmath runs on real
files of the real raw rows; every other fixture is synthetic, written by the test in the raw
schema of its source.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import string
import tarfile
from collections import defaultdict
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets import demo
from hrm_assets.cleaning.clean import clean_source
from hrm_assets.cleaning.rows import iter_cleaned_rows
from hrm_assets.cleaning.sources import amps as amps_module
from hrm_assets.cleaning.sources import dmmath as dmmath_module
from hrm_assets.cleaning.sources import flan as flan_module
from hrm_assets.cleaning.sources import get_source
from hrm_assets.cleaning.sources import sudoku as sudoku_module
from hrm_assets.cleaning.sources import synth as synth_module
from hrm_assets.cleaning.sources.local_files import batched, glob_files


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def data_io_safe_filename(filename: str) -> str:
    safe_chars = set(string.ascii_letters + string.digits + "_-. ")
    return "".join(c if c in safe_chars else "_" for c in filename)


def read_outputs(root: Path) -> dict[str, list[dict]]:
    """Every cleaned file under ``root``, hidden ones too (relative path -> rows), validated."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.suffix in (".parquet", ".jsonl"):
            out[path.relative_to(root).as_posix()] = [
                row._asdict() for row in iter_cleaned_rows(path)
            ]
    return out


def row(condition: str, instruction: str, response: str) -> dict:
    return {"condition": condition, "instruction": instruction, "response": response}


def skips(report) -> dict[str, int]:
    return {reason: entry.count for reason, entry in report.skipped.items()}


# -- dmmath (real files) -------------------------------------------------------------------------


def data_io_dmmath(dataset_dir: Path) -> dict[str, list[dict]]:
    """pipe_clustered/clean_dmmath.py restated (its assert holds on these files)."""
    out = {}
    for set_name in ["train-easy", "train-medium", "train-hard"]:
        for filename in glob.glob(os.path.join(dataset_dir, set_name, "*.txt")):
            stem = os.path.basename(filename).removesuffix(".txt")
            task_name = data_io_safe_filename(f"{set_name}__{stem}")
            with open(filename) as f:
                lines = [line.strip() for line in f.readlines()]
            assert len(lines) % 2 == 0
            out[f"dmmath/{task_name}.parquet"] = [
                row("direct", x, y) for x, y in zip(lines[::2], lines[1::2], strict=True)
            ]
    return out


def test_dmmath_real_files_give_data_io_rows(tmp_path, real_raw):
    real = real_raw / "dmmath" / "mathematics_dataset-v1.0"
    raw = tmp_path / "raw"
    dataset = raw / "mathematics_dataset-v1.0"
    dataset.mkdir(parents=True)
    for set_name in ["train-easy", "train-medium", "train-hard"]:
        (dataset / set_name).symlink_to(real / set_name)
    # Not a training set: data_io never reads it.
    (dataset / "interpolate").symlink_to(
        real_raw / "dmmath" / "release_sample" / "mathematics_dataset-v1.0" / "interpolate"
    )
    report = clean_source(get_source("dmmath"), tmp_path / "cleaned", raw, batch_size=128)
    expected = data_io_dmmath(dataset)
    assert len(expected) == 168 and sum(map(len, expected.values())) == 50400
    assert read_outputs(tmp_path / "cleaned") == expected
    assert "dmmath/train-easy__algebra__linear_1d.parquet" in expected
    assert report.skipped == {}
    assert report.records_read == 50400
    assert report.parts[:2] == [
        "train-easy/algebra__linear_1d.txt",
        "train-easy/algebra__linear_1d_composed.txt",
    ]
    assert report.parts[-1].startswith("train-hard/")
    assert report.tag_counts == {"direct": 50400}


def test_dmmath_release_sample_lines(tmp_path, real_raw):
    raw = real_raw / "dmmath" / "release_sample"
    report = clean_source(get_source("dmmath"), tmp_path / "cleaned", raw)
    expected = data_io_dmmath(raw / "mathematics_dataset-v1.0")
    assert sorted(expected) == [
        "dmmath/train-easy__algebra__linear_1d.parquet",
        "dmmath/train-hard__algebra__linear_1d.parquet",
        "dmmath/train-medium__algebra__linear_1d.parquet",
    ]
    assert read_outputs(tmp_path / "cleaned") == expected
    assert report.records_read == 6 and report.skipped == {}


def test_dmmath_line_handling_names_and_odd_files(tmp_path):
    """Synthetic files: universal newlines, stripping, blank lines, unsafe names, an odd file."""
    train = tmp_path / "mathematics_dataset-v1.0" / "train-medium"
    train.mkdir(parents=True)
    (train / "crlf.txt").write_bytes(b"  What is 2+2?\r\n4 \r\nOld Mac?\r\x0cyes\n\n\t\n")
    (train / "odd one+ü.txt").write_bytes("Q1\nA1\nQ2\nA2\nlonely ü\n".encode())
    (train / "empty.txt").write_bytes(b"")
    (train / ".hidden.txt").write_bytes(b"q\na\n")
    (train / "notes.md").write_bytes(b"q\na\n")
    report = clean_source(get_source("dmmath"), tmp_path / "cleaned", tmp_path)
    assert read_outputs(tmp_path / "cleaned") == {
        "dmmath/train-medium__crlf.parquet": [
            row("direct", "What is 2+2?", "4"),
            row("direct", "Old Mac?", "yes"),  # '\r' ends a line; '\x0c' is stripped
            row("direct", "", ""),  # two blank lines are a (blank) pair, as in data_io
        ],
        "dmmath/train-medium__odd one__.parquet": [
            row("direct", "Q1", "A1"),
            row("direct", "Q2", "A2"),
        ],
        "dmmath/train-medium__empty.parquet": [],  # data_io writes an empty file too
    }
    assert skips(report) == {dmmath_module.ODD_LINES: 1}
    (example,) = report.skipped[dmmath_module.ODD_LINES].examples
    assert example.raw == "train-medium/odd one+ü.txt#3"
    assert example.file == "dmmath/train-medium__odd one__.parquet"
    assert "lonely ü" in example.detail
    assert report.parts == [
        "train-medium/crlf.txt",
        "train-medium/empty.txt",
        "train-medium/odd one+ü.txt",
    ]


def test_dmmath_needs_a_raw_root(tmp_path):
    spec = get_source("dmmath")
    with pytest.raises(ValueError, match="HRM_RAW_ROOT"):
        clean_source(spec, tmp_path / "cleaned", None)
    with pytest.raises(FileNotFoundError, match="mathematics_dataset-v1.0"):
        clean_source(spec, tmp_path / "cleaned", tmp_path)
    (tmp_path / "mathematics_dataset-v1.0" / "train-easy").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no raw files"):
        clean_source(spec, tmp_path / "cleaned", tmp_path)


# -- sudoku (synthetic CSV in the Hub file's schema) -------------------------------------------

GRID = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"


def data_io_sudoku(csv_path: Path) -> list[dict]:
    """pipe_clustered/clean_sudoku.py restated, minus the rows it would crash on."""
    out = []
    with open(csv_path, newline="") as csvfile:
        reader = csv.reader(csvfile)
        next(reader)
        for fields in reader:
            if len(fields) != 4:
                continue
            source, q, a, rating = fields
            if len(q) == 81 and len(a) == 81:
                out.append(row("direct", f"Solve the Sudoku\n\n{q.replace('.', '0')}", f"{a}"))
    return out


def write_sudoku_csv(path: Path) -> None:
    puzzle = "".join("." if i % 3 else ch for i, ch in enumerate(GRID))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "source,question,answer,rating\n"
        f"puzzles0_kaggle,{puzzle},{GRID},3\n"
        f'"puzzles4, quoted",{puzzle.replace(".", "0")},{GRID},17\n'
        f"short,{puzzle[:80]},{GRID},1\n"
        f"three,{puzzle},{GRID}\n"
        f"five,{puzzle},{GRID},2,extra\n"
        f"last,{GRID},{GRID},0\n",
        encoding="utf-8",
    )


def test_sudoku_rows_and_malformed_rows(tmp_path):
    csv_path = tmp_path / "raw" / "sapientinc" / "sudoku-extreme" / "train.csv"
    write_sudoku_csv(csv_path)
    report = clean_source(get_source("sudoku"), tmp_path / "cleaned", tmp_path / "raw")
    expected = data_io_sudoku(csv_path)
    assert len(expected) == 3
    assert read_outputs(tmp_path / "cleaned") == {"sudoku_extreme/all.parquet": expected}
    assert expected[0]["instruction"].startswith("Solve the Sudoku\n\n500600900")
    assert skips(report) == {sudoku_module.WRONG_LENGTH: 1, sudoku_module.WRONG_FIELD_COUNT: 2}
    field_examples = report.skipped[sudoku_module.WRONG_FIELD_COUNT].examples
    assert [(e.raw, e.detail) for e in field_examples] == [
        ("train.csv#4", "3 fields"),
        ("train.csv#5", "5 fields"),
    ]


def test_sudoku_from_the_hub_uses_hf_hub_download(tmp_path, monkeypatch):
    import huggingface_hub

    csv_path = tmp_path / "cache" / "train.csv"
    write_sudoku_csv(csv_path)
    calls = []

    def fake_download(repo_id, filename, **kwargs):
        calls.append((repo_id, filename, kwargs))
        return str(csv_path)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    spec = get_source("sudoku")
    clean_source(spec, tmp_path / "cleaned", None)
    assert calls == [("sapientinc/sudoku-extreme", "train.csv", {"repo_type": "dataset"})]
    assert read_outputs(tmp_path / "cleaned")["sudoku_extreme/all.parquet"] == data_io_sudoku(
        csv_path
    )
    assert spec.layout.describe(spec) == "sapientinc/sudoku-extreme/train.csv"


# -- SYNTH (synthetic Parquet in the Hub schema) -------------------------------------------------


def data_io_synth(input_dir: Path) -> dict[str, list[dict]]:
    """pipe_clustered/clean_SYNTH.py restated with its polars expressions, per input file."""
    out = {}
    for file_path in sorted(input_dir.glob("*.parquet")):
        df = (
            pl.scan_parquet(file_path)
            .filter(
                (pl.col("language") == "en")
                & (~pl.col("query_seed_url").str.contains("Pleias self-knowledge"))
                & (pl.col("exercise") != "cooking")
            )
            .select(
                [
                    pl.when(pl.col("exercise") == "rag")
                    .then(pl.col("query") + pl.col("constraints"))
                    .otherwise(pl.col("query"))
                    .alias("instruction"),
                    pl.when(
                        pl.col("exercise").is_in(
                            [
                                "creative writing",
                                "rag",
                                "memorization",
                                "constrained writing",
                                "editing",
                            ]
                        )
                    )
                    .then(pl.lit("synth,cot"))
                    .when(pl.col("exercise").is_in(["math mcq", "mcq"]))
                    .then(pl.lit("synth,direct"))
                    .when(pl.col("exercise") == "math exercise")
                    .then(pl.lit("synth,noisy,cot"))
                    .otherwise(pl.lit(""))
                    .alias("condition"),
                    pl.col("synthetic_answer").alias("response"),
                ]
            )
        )
        rows = df.collect().select(["condition", "instruction", "response"]).to_dicts()
        out[f"SYNTH/{file_path.name}"] = rows
    return out


def synth_record(
    exercise,
    language="en",
    url="https://en.wikipedia.org/wiki/X",
    query="Q?",
    constraints="",
    answer="A.",
) -> dict:
    return {
        "synth_id": "s",
        "language": language,
        "exercise": exercise,
        "model": "m",
        "query": query,
        "query_seed_url": url,
        "query_seed_text": "seed",
        "constraints": constraints,
        "synthetic_reasoning": "long reasoning",
        "synthetic_answer": answer,
        "words": 3,
    }


SYNTH_FIXTURE = {
    "synth_2.parquet": [
        synth_record("rag", query="Who was Ada? ", constraints="\nCite the text.", answer=" Ada. "),
        synth_record("memorization", query="  Recall Zürich  ", answer="Zürich is a city.\n"),
        synth_record("math exercise", query="2+2?", answer="4"),
        synth_record("math mcq"),
        synth_record("mcq"),
        synth_record("editing"),
        synth_record("creative writing"),
        synth_record("constrained writing"),
        synth_record("summarization", query="Summarize.", answer="Short."),  # fallback: ""
        synth_record("cooking"),
        synth_record("rag", language="fr"),
        synth_record("rag", url="Pleias self-knowledge: who are you?"),
        synth_record("rag", url="x Pleias self-knowledgeable"),  # contains it too
        synth_record("rag", url="pleias Self-Knowledge"),  # case differs: kept
        synth_record(None),  # null filter field
        synth_record("mcq", language=None),  # null filter field
        synth_record("rag", constraints=None),  # null instruction
        synth_record("mcq", answer=None),  # null response
        synth_record("reasoning", language="de", answer=None),  # filtered before the null
    ],
    "synth_10.parquet": [synth_record("mcq", query=f"Q{i} ü", answer=str(i)) for i in range(5)],
    "synth_3.parquet": [synth_record("cooking")],  # nothing kept: an empty file, as data_io
}


def write_synth_fixture(raw: Path) -> Path:
    folder = raw / "SYNTH"
    folder.mkdir(parents=True)
    for name, records in SYNTH_FIXTURE.items():
        pq.write_table(pa.Table.from_pylist(records), folder / name)
    (folder / "README.md").write_text("card")
    # data_io globs with pathlib: a hidden Parquet file is read too.
    hidden = pa.Table.from_pylist(SYNTH_FIXTURE["synth_10.parquet"][:1])
    pq.write_table(hidden, folder / ".x.parquet")
    return folder


def test_synth_rows_conditions_and_reported_cases(tmp_path):
    folder = write_synth_fixture(tmp_path / "raw")
    report = clean_source(get_source("synth"), tmp_path / "cleaned", tmp_path / "raw", batch_size=4)
    expected = data_io_synth(folder)
    # Rows data_io writes with a null field are the ones reported instead of written.
    nulls = {name: [r for r in rows if None in r.values()] for name, rows in expected.items()}
    assert len(nulls["SYNTH/synth_2.parquet"]) == 2
    kept = {name: [r for r in rows if None not in r.values()] for name, rows in expected.items()}
    assert read_outputs(tmp_path / "cleaned") == kept
    assert sorted(kept) == [
        "SYNTH/.x.parquet",
        "SYNTH/synth_10.parquet",
        "SYNTH/synth_2.parquet",
        "SYNTH/synth_3.parquet",
    ]
    assert kept["SYNTH/synth_3.parquet"] == []
    assert kept["SYNTH/synth_2.parquet"][0] == row(
        "synth,cot", "Who was Ada? \nCite the text.", " Ada. "
    )
    assert skips(report) == {synth_module.NULL_FILTER_FIELD: 2, synth_module.NULL_TEXT: 2}
    assert report.condition_counts[""] == 1  # the fallback branch's row is kept and counted
    assert report.tag_counts["(none)"] == 1
    assert report.parts == [".x.parquet", "synth_10.parquet", "synth_2.parquet", "synth_3.parquet"]
    assert report.records_read == 26


def test_synth_reads_only_the_columns_it_needs(tmp_path):
    folder = tmp_path / "SYNTH"
    folder.mkdir()
    slim = [{k: v for k, v in synth_record("mcq").items() if k in synth_module.COLUMNS}]
    pq.write_table(pa.Table.from_pylist(slim), folder / "a.parquet")
    clean_source(get_source("synth"), tmp_path / "cleaned", tmp_path)
    assert read_outputs(tmp_path / "cleaned") == {
        "SYNTH/a.parquet": [row("synth,direct", "Q?", "A.")]
    }
    no_constraints = [{k: v for k, v in slim[0].items() if k != "constraints"}]
    pq.write_table(pa.Table.from_pylist(no_constraints), folder / "a.parquet")
    with pytest.raises(ValueError, match="constraints"):
        clean_source(get_source("synth"), tmp_path / "cleaned2", tmp_path)


# -- FLAN (synthetic Parquet in the Hub schema) --------------------------------------------------

FLAN_INCLUDED = {
    "direct": [
        "dialog_fsopt_data",
        "flan_fsopt_data",
        "flan_fsnoopt_data",
        "niv2_fsopt_data",
        "t0_fsopt_data",
        "t0_fsnoopt_data",
        "dialog_zsopt_data",
        "flan_zsopt_data",
        "flan_zsnoopt_data",
        "niv2_zsopt_data",
        "t0_zsopt_data",
        "t0_zsnoopt_data",
    ],
    "cot": ["cot_fsopt_data", "cot_zsopt_data"],
}


def data_io_flan(input_dir: Path) -> dict[str, list[dict]]:
    """pipe_clustered/clean_flan.py restated (files sorted), minus rows with a null cell."""
    out = {}
    for condition, subset_names in FLAN_INCLUDED.items():
        for subset_name in subset_names:
            subset_data: dict[str, list[dict]] = {}
            for filename in sorted(glob.glob(os.path.join(input_dir, subset_name, "*.parquet"))):
                table = pq.read_table(filename)
                for task_name, inputs, targets in zip(
                    table.column("_task_name"),
                    table.column("inputs"),
                    table.column("targets"),
                    strict=True,
                ):
                    if not (task_name.is_valid and inputs.is_valid and targets.is_valid):
                        continue
                    subset_data.setdefault(str(task_name), []).append(
                        row(condition, str(inputs), str(targets))
                    )
            for task_name, rows in subset_data.items():
                out[f"flan/{subset_name}__{data_io_safe_filename(task_name)}.parquet"] = rows
    return out


def flan_record(task, inputs, targets) -> dict:
    return {
        "inputs": inputs,
        "targets": targets,
        "_template_type": "fs_opt",
        "_task_source": "Flan2021",
        "_task_name": task,
        "_template_idx": 0,
    }


def write_flan_fixture(raw: Path) -> Path:
    folder = raw / "FLAN"
    files = {
        "flan_fsopt_data/part.0.parquet": [
            flan_record("glue/sst2:2.0.0", "Great movie! Positive?", "yes"),
            flan_record("anli/r1", " Premise: café.\n", " entailment "),
            flan_record("glue/sst2:2.0.0", None, "no"),  # null inputs
        ],
        "flan_fsopt_data/part.1.parquet": [
            flan_record("anli/r1", "Premise 2", "neutral"),
            flan_record(None, "x", "y"),  # null task name
            flan_record("glue/sst2:2.0.0", "Bad movie.", "no"),
        ],
        "t0_zsnoopt_data/part.0.parquet": [flan_record("tâche ü", "Question ?", "Réponse")],
        "cot_zsopt_data/part.0.parquet": [flan_record("cot_gsm8k", "2+3? Think.", "5")],
        "cot_submix_data/part.0.parquet": [flan_record("cot_gsm8k", "ignored", "ignored")],
    }
    for relative, records in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(records), folder / relative)
    (folder / "cot_zs_submix_data.json").write_text("[]")
    return folder


def test_flan_one_file_per_subset_and_task(tmp_path):
    folder = write_flan_fixture(tmp_path / "raw")
    report = clean_source(get_source("flan"), tmp_path / "cleaned", tmp_path / "raw", batch_size=2)
    expected = data_io_flan(folder)
    assert sorted(expected) == [
        "flan/cot_zsopt_data__cot_gsm8k.parquet",
        "flan/flan_fsopt_data__anli_r1.parquet",
        "flan/flan_fsopt_data__glue_sst2_2.0.0.parquet",
        "flan/t0_zsnoopt_data__t_che _.parquet",
    ]
    assert read_outputs(tmp_path / "cleaned") == expected
    assert expected["flan/flan_fsopt_data__anli_r1.parquet"][0] == row(
        "direct", " Premise: café.\n", " entailment "
    )
    assert skips(report) == {flan_module.NULL_FIELD: 2}
    assert [(e.raw, e.detail) for e in report.skipped[flan_module.NULL_FIELD].examples] == [
        ("flan_fsopt_data#3", "null inputs"),
        ("flan_fsopt_data#5", "null _task_name"),
    ]
    assert report.parts == list(flan_module.SUBSETS)
    assert report.condition_counts == {"direct": 5, "cot": 1}


# -- AMPS (synthetic archive in the AMPS layout) -------------------------------------------------


def khan_members() -> list[tuple[str, bytes]]:
    def item(problem, hints):
        return json.dumps({"problem": problem, "hints": hints}).encode()

    return [
        ("amps/khan/adding-fractions/1.json", item("Add $1/2+1/3$ ", ["LCD is 6.", "5/6 \n"])),
        ("amps/khan/adding-fractions/deeper/2.json", item("Größer?", ["Ja.", ""])),
        ("amps/khan/adding-fractions/3.json", b"{not json"),
        ("amps/khan/area/4.json", json.dumps({"problem": "P"}).encode()),
        ("amps/khan/area/5.json", item("Ints?", [1, 2])),
        ("amps/khan/area/6.json", item("One hint", "abc")),  # a string is joined per character
        ("amps/khan/area/.hidden.json", item("hidden", ["h"])),
        ("amps/khan/.cache/7.json", item("hidden dir", ["h"])),
        ("amps/khan/area/notes.txt", b"not json"),
    ]


def mathematica_members() -> list[tuple[str, bytes]]:
    return [
        (
            "amps/mathematica/Algebra/Polynomials_w_steps/1.txt",
            b"Problem:\nFactor $x^2-1$.\nAnswer:\nDifference of squares.\n$(x-1)(x+1)$\n",
        ),
        (
            "amps/mathematica/Algebra/Polynomials/2.txt",
            "Problem:\nExpand (x+1)²\nAnswer:\nx²+2x+1\nAnswer: twice\n".encode(),
        ),
        ("amps/mathematica/Algebra/Polynomials/3.txt", b"Problem:\nNo answer here\n"),
        ("amps/mathematica/Algebra/Polynomials/4.txt", b"Problem:\n  \nAnswer:\n5\n"),
        ("amps/mathematica/Algebra/Polynomials/5.txt", b"Problem:\n\xff\xfe\nAnswer:\n1\n"),
        ("amps/mathematica/Stats/Mean/6.txt", b"Compute the mean.\nAnswer: 3\nProblem:"),
        ("amps/mathematica/Stats/Mean/7.txt", b"Problem:Problem: twice?Answer:yes"),
        ("amps/other/a/b/8.txt", b"Problem:\nq\nAnswer:\na\n"),  # not mathematica: ignored
        ("amps/shallow/9.txt", b"Problem:\nq\nAnswer:\na\n"),  # three parts: amps_shallow
        ("amps/x.txt", b"Problem:\nq\nAnswer:\na\n"),  # two parts: ignored
        ("amps/mathematica/Algebra/Polynomials/10.json", b"{}"),
    ]


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def data_io_amps_khan(raw: Path) -> list[dict]:
    """pipe/clean_amps_khan.py restated (sorted glob), minus the files it would crash on."""
    out = []
    for filename in sorted(glob.glob(f"{raw}/amps/khan/**/*.json", recursive=True)):
        with open(filename, "rb") as f:
            try:
                item = json.loads(f.read())
                out.append(row("noisy,cot", item["problem"], "\n".join(item["hints"]).strip()))
            except (ValueError, KeyError, TypeError):
                continue
    return out


def data_io_ampsmathematica(input_path: Path) -> tuple[dict[str, list[dict]], int]:
    """process_amps_archive restated: (rows per output file, skipped count)."""
    tasks_data = defaultdict(list)
    skipped = 0
    with tarfile.open(input_path, "r:gz") as tar:
        for member in tar:
            if not member.isfile() or not member.name.endswith(".txt"):
                continue
            path_parts = member.name.strip("/").split("/")
            if len(path_parts) < 3:
                continue
            if len(path_parts) >= 4 and path_parts[-4] != "mathematica":
                continue
            topic, subtask = path_parts[-3], path_parts[-2]
            condition = "noisy,cot" if subtask.endswith("w_steps") else "noisy,direct"
            try:
                content = tar.extractfile(member).read().decode("utf-8")
            except UnicodeDecodeError:
                skipped += 1
                continue
            parts = content.removeprefix("Problem:").split("Answer:", 1)
            if len(parts) < 2 or not parts[0].strip() or not parts[1].strip():
                skipped += 1
                continue
            tasks_data[f"ampsmathematica/{topic}_{subtask}.parquet"].append(
                row(condition, parts[0].strip(), parts[1].strip())
            )
    return dict(tasks_data), skipped


def test_amps_khan_from_folder_and_from_archive(tmp_path):
    members = sorted(khan_members())  # archive in path order, so both orders agree
    folder_raw = tmp_path / "folder"
    for name, data in members:
        (folder_raw / name).parent.mkdir(parents=True, exist_ok=True)
        (folder_raw / name).write_bytes(data)
    expected = data_io_amps_khan(folder_raw)
    assert [r["instruction"] for r in expected] == ["Add $1/2+1/3$ ", "Größer?", "One hint"]
    assert expected[0]["response"] == "LCD is 6.\n5/6"
    assert expected[2]["response"] == "a\nb\nc"

    spec = get_source("amps_khan")
    report = clean_source(spec, tmp_path / "out1", folder_raw)
    assert read_outputs(tmp_path / "out1") == {"amps_khan.jsonl": expected}
    want_skips = {amps_module.BAD_JSON: 1, amps_module.MISSING_FIELD: 1, amps_module.BAD_HINTS: 1}
    assert skips(report) == want_skips
    assert report.parts == ["amps"]
    assert len(spec.layout.raw_files(spec, folder_raw)) == 6

    archive_raw = tmp_path / "archive"
    archive_raw.mkdir()
    write_tar(archive_raw / "amps.tar.gz", members + mathematica_members())
    report = clean_source(spec, tmp_path / "out2", archive_raw)
    assert read_outputs(tmp_path / "out2") == {"amps_khan.jsonl": expected}
    assert skips(report) == want_skips
    assert report.parts == ["amps.tar.gz"]
    assert spec.layout.raw_files(spec, archive_raw) == [archive_raw / "amps.tar.gz"]


def test_ampsmathematica_from_archive_and_from_folder(tmp_path):
    members = khan_members()[:2] + mathematica_members()
    raw = tmp_path / "raw"
    raw.mkdir()
    write_tar(raw / "amps.tar.gz", members)
    expected, skipped = data_io_ampsmathematica(raw / "amps.tar.gz")
    assert sorted(expected) == [
        "ampsmathematica/Algebra_Polynomials.parquet",
        "ampsmathematica/Algebra_Polynomials_w_steps.parquet",
        "ampsmathematica/Stats_Mean.parquet",
        "ampsmathematica/amps_shallow.parquet",
    ]
    assert expected["ampsmathematica/Algebra_Polynomials.parquet"] == [
        row("noisy,direct", "Expand (x+1)²", "x²+2x+1\nAnswer: twice"),
    ]
    assert expected["ampsmathematica/Stats_Mean.parquet"] == [
        row("noisy,direct", "Compute the mean.", "3\nProblem:"),
        row("noisy,direct", "Problem: twice?", "yes"),
    ]
    assert skipped == 3

    spec = get_source("ampsmathematica")
    report = clean_source(spec, tmp_path / "out1", raw, batch_size=3)
    assert read_outputs(tmp_path / "out1") == expected
    assert skips(report) == {
        amps_module.NO_ANSWER: 1,
        amps_module.EMPTY_SIDE: 1,
        amps_module.NOT_UTF8: 1,
    }
    assert report.skipped[amps_module.NO_ANSWER].examples[0].file == (
        "ampsmathematica/Algebra_Polynomials.parquet"
    )

    # Unpacked (as data_io's README has it) and no archive: the same rows, path order.
    unpacked = tmp_path / "unpacked"
    with tarfile.open(raw / "amps.tar.gz") as tar:
        tar.extractall(unpacked, filter="data")
    report = clean_source(spec, tmp_path / "out2", unpacked)
    assert read_outputs(tmp_path / "out2") == expected
    assert report.parts == ["amps"]
    names = [p.relative_to(unpacked).as_posix() for p in spec.layout.raw_files(spec, unpacked)]
    assert names == sorted(names) and "amps/shallow/9.txt" in names and len(names) == 8


def test_amps_location_preference_and_errors(tmp_path):
    khan, mathematica = get_source("amps_khan"), get_source("ampsmathematica")
    with pytest.raises(ValueError, match="HRM_RAW_ROOT"):
        clean_source(khan, tmp_path / "out", None)
    with pytest.raises(FileNotFoundError, match="amps.tar.gz"):
        clean_source(mathematica, tmp_path / "out", tmp_path)
    (tmp_path / "amps").mkdir()
    write_tar(tmp_path / "amps.tar.gz", [])
    # data_io reads khan from the folder and mathematica from the archive.
    assert khan.layout.location(khan, tmp_path) == tmp_path / "amps"
    assert mathematica.layout.location(mathematica, tmp_path) == tmp_path / "amps.tar.gz"


# -- shared helpers and the demo corpus ----------------------------------------------------------


def test_glob_files_matches_python_glob(tmp_path):
    for name in [
        "b/2.json",
        "a/1.json",
        "a/.h.json",
        ".d/3.json",
        "a/x/4.json",
        "5.json",
        "dir.json/6.json",
    ]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    found = [p.relative_to(tmp_path).as_posix() for p in glob_files(tmp_path, "**/*.json")]
    assert found == sorted(
        os.path.relpath(p, tmp_path)
        for p in glob.glob(f"{tmp_path}/**/*.json", recursive=True)
        if os.path.isfile(p)
    )
    assert found == ["5.json", "a/1.json", "a/x/4.json", "b/2.json", "dir.json/6.json"]
    assert [len(chunk) for chunk in batched(range(7), 3)] == [3, 3, 1]


@pytest.mark.parametrize(
    "name", ["dmmath", "sudoku", "synth", "flan", "amps_khan", "ampsmathematica"]
)
def test_demo_round_trip_matches_data_io(tmp_path, name):
    spec = get_source(name)
    written = demo.write_demo_source(spec, tmp_path / "raw")
    assert written and all(path.is_file() for path in written)
    report = clean_source(spec, tmp_path / "cleaned", tmp_path / "raw", batch_size=50)
    assert report.skipped == {}
    raw = tmp_path / "raw"
    expected = {
        "dmmath": lambda: data_io_dmmath(raw / "mathematics_dataset-v1.0"),
        "sudoku": lambda: {
            "sudoku_extreme/all.parquet": data_io_sudoku(
                raw / "sapientinc/sudoku-extreme/train.csv"
            )
        },
        "synth": lambda: data_io_synth(raw / "SYNTH"),
        "flan": lambda: data_io_flan(raw / "FLAN"),
        "amps_khan": lambda: {"amps_khan.jsonl": data_io_amps_khan(raw)},
        "ampsmathematica": lambda: data_io_ampsmathematica(_tar_of(raw))[0],
    }[name]()
    assert read_outputs(tmp_path / "cleaned") == expected
    assert report.rows_written == sum(map(len, expected.values())) > 0


def _tar_of(raw: Path) -> Path:
    """The demo's amps/ folder packed the way data_io's archive is (sorted member order)."""
    archive = raw.parent / "amps.tar.gz"
    members = sorted(
        (p.relative_to(raw).as_posix(), p.read_bytes())
        for p in (raw / "amps").rglob("*")
        if p.is_file()
    )
    write_tar(archive, members)
    return archive


def test_many_routed_outputs_share_one_buffer_budget(tmp_path):
    """FLAN routes rows to thousands of task files: their buffers are bounded together, by
    spilling to disk, so each file still has data_io's single row group."""
    from hrm_assets.cleaning.cleaned_parquet import BufferBudget, ParquetRowWriter
    from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row

    budget = BufferBudget(limit=200)
    rows = {
        name: [Row("direct", f"{name} question {i} é", "answer " * (i % 4)) for i in range(40)]
        for name in ("a", "b", "c")
    }
    with (
        ParquetRowWriter(tmp_path / "a.parquet", INSTRUCTION_FIRST, budget) as a,
        ParquetRowWriter(tmp_path / "b.parquet", INSTRUCTION_FIRST, budget) as b,
        ParquetRowWriter(tmp_path / "c.parquet", INSTRUCTION_FIRST, budget) as c,
    ):
        writers = {"a": a, "b": b, "c": c}
        for i in range(40):
            for name, writer in writers.items():
                writer.write(rows[name][i])
                assert budget.used <= budget.limit
                assert budget.used == sum(w.buffered for w in writers.values())
    for name, writer in writers.items():
        path = tmp_path / f"{name}.parquet"
        assert list(iter_cleaned_rows(path)) == rows[name]
        assert writer.spills > 1  # spilled by the budget...
        assert writer.row_groups == 1  # ...without cutting the row group
        with ParquetRowWriter(tmp_path / "alone.parquet", INSTRUCTION_FIRST) as alone:
            for row in rows[name]:
                alone.write(row)
        assert path.read_bytes() == (tmp_path / "alone.parquet").read_bytes()
    assert budget.used == 0
