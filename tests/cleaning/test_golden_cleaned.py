"""Cleaned files byte-identical to what data_io's own cleaning scripts write, by SHA-256.

``tests/golden/cleaned/`` holds the outputs of data_io's scripts (``data/...`` and
``data_clustered/...``, as data_io lays them out) and a README saying how they were made. Both
data_io and this test read the raw root that :func:`build_golden_raw_root` lays out: subsets of
the real raw rows of GSM8K, MATH and dmmath (tests/support/real_raw.py) and a small invented
ARB download (Platypus). This test cleans that root with our pipeline and compares every file.

``python tests/cleaning/test_golden_cleaned.py RAW_DIR`` writes the same raw root (for making the
golden files again, see the README).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "cleaned"

# Our source name -> the data_io script that writes its files.
GOLDEN_SOURCES = {
    "gsm8k_train": "pipe.clean_gsm8k_train",
    "math_train": "pipe.clean_math_train",
    "dmmath": "pipe_clustered.clean_dmmath",
    "arb": "pipe.clean_platypus.clean_arb",
}

GSM8K_ROWS = 300  # the first rows of the real train split (51 of them hold non-ASCII text)
MATH_ROWS_PER_SUBJECT = 25
DMMATH_MODULES = (
    "algebra__linear_1d",
    "arithmetic__mixed",
    "comparison__sort",
    "numbers__base_conversion",
)
DMMATH_SETS = ("train-easy", "train-medium", "train-hard")
DMMATH_PAIRS = 100


# -- the raw inputs ----------------------------------------------------------------------------


def _lines(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.readlines()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def math_config(subject_type: str) -> str:
    """The Hub config of a MATH ``type``: 'Counting & Probability' -> counting_and_probability."""
    return subject_type.lower().replace(" & ", "_and_").replace(" ", "_")


def math_subset(lines: list[str]) -> dict[str, list[str]]:
    """Config -> JSONL lines: the first rows of each subject, and every row with non-ASCII text."""
    by_config: dict[str, list[str]] = {}
    for line in lines:
        row = json.loads(line)
        chosen = by_config.setdefault(math_config(row["type"]), [])
        text = row["problem"] + row["solution"]
        if len(chosen) < MATH_ROWS_PER_SUBJECT or not text.isascii():
            chosen.append(line)
    return by_config


# Invented ARB records (the download is JSON arrays of instruction/response). The text exercises
# what a JSONL writer can get wrong: quotes, backslashes, every ASCII control character, DEL,
# U+2028/U+2029, non-BMP characters, surrounding whitespace (kept: ARB strips nothing).
ARB_RECORDS: dict[str, list[dict]] = {
    "math.json": [
        {"instruction": "Find $\\lim_{x\\to 0} \\frac{\\sin x}{x}$.", "response": "It is $1$."},
        {
            "instruction": "  Prove that $\\sqrt 2$ is irrational.\n",
            "response": ' Suppose $\\sqrt 2 = p/q$ in lowest terms... "contradiction" ',
        },
        {
            "instruction": "Controls: " + "".join(chr(c) for c in range(32)) + "\x7f end",
            "response": "line\u2028separator and paragraph\u2029separator, tab\there",
        },
    ],
    "reading.json": [
        {
            "instruction": "Lisez le texte : « Le café était froid. » Qu'en dit l'auteur ?",
            "response": "Que le café était froid.",
        }
    ],
    "law.json": [
        {"instruction": "Which remedy applies?\nA. Damages\nB. Rescission", "response": "B"},
        {"instruction": "Choose: A) </script> B) <|im_end|>", "response": "A"},
    ],
    "science.json": [],  # an empty subject: data_io still writes its (empty) file
    "physics.json": [
        {
            "instruction": "Ein Körper fällt 2 s lang. Wie weit? 物体下落多远？",
            "response": "$s = \\tfrac12 g t^2 \\approx 19.6$ m 🪂 \U0001d4d0",
        }
    ],
}


def build_golden_raw_root(real_raw: Path, raw_root: Path) -> None:
    """Lay out the golden inputs under ``raw_root`` (data_io's ``raw_data/``, our raw root).

    - ``openai/gsm8k/main/train.jsonl``: the first ``GSM8K_ROWS`` lines of the real train split;
    - ``EleutherAI/hendrycks_math/<config>/train.jsonl``: per subject, the first
      ``MATH_ROWS_PER_SUBJECT`` rows of the real test split (same schema as train) plus every
      row with non-ASCII text, in file order;
    - ``mathematics_dataset-v1.0/<set>/<module>.txt``: the first ``DMMATH_PAIRS`` question/answer
      pairs of ``DMMATH_MODULES`` in each train set;
    - ``Platypus/ARB/<subject>.json``: :data:`ARB_RECORDS`.

    Lines are copied byte for byte; only the ARB files are written by this function.
    """
    raw_root = Path(raw_root)
    gsm8k = _lines(real_raw / "gsm8k" / "train.jsonl")[:GSM8K_ROWS]
    _write(raw_root / "openai" / "gsm8k" / "main" / "train.jsonl", "".join(gsm8k))
    math_lines = _lines(real_raw / "hendrycks_math" / "test.jsonl")
    for config, lines in math_subset(math_lines).items():
        _write(raw_root / "EleutherAI" / "hendrycks_math" / config / "train.jsonl", "".join(lines))
    dmmath = real_raw / "dmmath" / "mathematics_dataset-v1.0"
    for set_name in DMMATH_SETS:
        for module in DMMATH_MODULES:
            lines = _lines(dmmath / set_name / f"{module}.txt")[: 2 * DMMATH_PAIRS]
            target = raw_root / "mathematics_dataset-v1.0" / set_name / f"{module}.txt"
            _write(target, "".join(lines))
    for subject, records in ARB_RECORDS.items():
        text = json.dumps(records, ensure_ascii=False, indent=1)
        _write(raw_root / "Platypus" / "ARB" / subject, text)


# -- the golden files --------------------------------------------------------------------------

_SHA256_LINE = re.compile(r"^([0-9a-f]{64})  ((?:data|data_clustered)/\S+)$", re.MULTILINE)


def golden_sha256() -> dict[str, str]:
    """data_io-relative path -> SHA-256, from the README's ``sha256`` block."""
    readme = (GOLDEN / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sha256\n", 1)[1].split("```", 1)[0]
    return {path: digest for digest, path in _SHA256_LINE.findall(block)}


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ours(cleaned: Path, data_io_path: str) -> Path:
    """data_io writes under ``data/`` and ``data_clustered/``; we write both under one root."""
    return cleaned / data_io_path.split("/", 1)[1]


GOLDEN_FILES = sorted(golden_sha256())


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory, real_raw) -> Path:
    from hrm_assets.cleaning.cli import main

    work = tmp_path_factory.mktemp("golden")
    build_golden_raw_root(real_raw, work / "raw")
    argv = [*GOLDEN_SOURCES, "--raw-root", str(work / "raw"), "--out", str(work / "cleaned")]
    assert main(argv) == 0
    return work / "cleaned"


def test_golden_files_are_the_recorded_ones():
    on_disk = sorted(
        path.relative_to(GOLDEN).as_posix()
        for folder in ("data", "data_clustered")
        for path in (GOLDEN / folder).rglob("*")
        if path.is_file()
    )
    assert on_disk == GOLDEN_FILES
    for relative, digest in golden_sha256().items():
        assert file_sha256(GOLDEN / relative) == digest, relative
    assert len(GOLDEN_FILES) == 19


def test_we_write_exactly_the_golden_files(cleaned):
    written = sorted(p.relative_to(cleaned).as_posix() for p in cleaned.rglob("*") if p.is_file())
    assert written == sorted(ours(Path(), path).as_posix() for path in GOLDEN_FILES)


def assert_same_parquet_layout(golden: Path, path: Path) -> None:
    """Everything of two Parquet files but their bytes: schema, row groups, column chunks."""
    import pyarrow.parquet as pq

    expected, actual = pq.ParquetFile(golden), pq.ParquetFile(path)
    assert actual.schema_arrow == expected.schema_arrow
    assert actual.read() == expected.read()
    for group in range(expected.metadata.num_row_groups):
        want, got = expected.metadata.row_group(group), actual.metadata.row_group(group)
        assert got.num_rows == want.num_rows
        for column in range(want.num_columns):
            a, b = want.column(column).to_dict(), got.column(column).to_dict()
            assert b == a
    assert actual.metadata.num_row_groups == expected.metadata.num_row_groups


@pytest.mark.parametrize("relative", GOLDEN_FILES)
def test_cleaned_file_is_byte_identical_to_data_ios(cleaned, relative):
    golden, path = GOLDEN / relative, ours(cleaned, relative)
    digest = golden_sha256()[relative]
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        writer = pq.ParquetFile(golden).metadata.created_by
        installed = pq.ParquetFile(path).metadata.created_by
        if installed != writer:
            assert_same_parquet_layout(golden, path)
            pytest.skip(f"bytes name their writer: golden {writer!r}, ours {installed!r}")
    assert file_sha256(path) == digest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/cleaning/test_golden_cleaned.py RAW_DIR")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from support.real_raw import real_raw_root

    build_golden_raw_root(real_raw_root(), Path(sys.argv[1]))
