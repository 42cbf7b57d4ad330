"""Sudoku-Extreme (``sapientinc/sudoku-extreme``, ``train.csv``) -> ``sudoku_extreme/all.parquet``.

data_io ``pipe_clustered/clean_sudoku.py`` downloads ``train.csv`` with ``hf_hub_download``,
skips the header line and unpacks each CSV row as ``source, question, answer, rating``. Every
row gives a ``direct`` row: instruction ``"Solve the Sudoku\\n\\n"`` followed by the puzzle with
each ``.`` (empty cell) turned into ``0``, response the solution as is.

The raw file is the Hub repository's ``train.csv``: from the Hub (``hf_hub_download``, as data_io)
or from a local mirror ``<raw root>/sapientinc/sudoku-extreme/train.csv``. It is read line by
line with ``csv.reader``; nothing is held but one batch.

Deliberate differences: data_io crashes on a row that does not have exactly four fields (the
unpacking fails) and asserts that puzzle and solution are 81 characters long; here such a row
is skipped and reported (reasons ``row does not have 4 fields`` and
``puzzle or solution is not 81 characters``).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.local_files import batched
from hrm_assets.cleaning.sources.spec import RawPart, Record, SkipRecord, SourceSpec
from hrm_assets.common.atomic import atomic_file

FIELDS = ("source", "question", "answer", "rating")
CSV_FILE = "train.csv"
WRONG_FIELD_COUNT = "row does not have 4 fields"
WRONG_LENGTH = "puzzle or solution is not 81 characters"
INSTRUCTION = "Solve the Sudoku\n\n"


def csv_records(lines: Iterable[str]) -> Iterator[dict]:
    """The CSV rows after the header, as ``{source, question, answer, rating}`` by position;
    a row with another number of fields comes as ``{"fields": [...]}``."""
    reader = csv.reader(lines)
    if next(reader, None) is None:
        return
    for fields in reader:
        if len(fields) == len(FIELDS):
            yield dict(zip(FIELDS, fields, strict=True))
        else:
            yield {"fields": fields}


@dataclass(frozen=True)
class HubFileLayout:
    """One CSV file of a Hub dataset repository: ``hf_hub_download`` on the Hub, or
    ``<raw root>/<hub id>/<file>`` in a local mirror."""

    file: str = CSV_FILE

    def path(self, spec: SourceSpec, raw_root: Path | None) -> Path:
        if raw_root is None:
            from huggingface_hub import hf_hub_download

            return Path(hf_hub_download(spec.hub_id, self.file, repo_type="dataset"))
        path = Path(raw_root) / spec.hub_id / self.file
        if not path.is_file():
            raise FileNotFoundError(f"{spec.name}: raw file {path} does not exist")
        return path

    def _batches(self, path: Path, batch_size: int) -> Iterator[list[Record]]:
        with open(path, newline="", encoding="utf-8") as handle:
            yield from batched(csv_records(handle), batch_size)

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        yield RawPart(self.file, self._batches(self.path(spec, raw_root), batch_size))

    def raw_files(self, spec: SourceSpec, raw_root: Path) -> list[Path]:
        return [self.path(spec, raw_root)]

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        path = Path(raw_root) / spec.hub_id / self.file
        with atomic_file(path, "w") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(FIELDS)
            for records in parts.values():
                for record in records:
                    writer.writerow(record.get("fields") or [record[name] for name in FIELDS])
        return [path]

    def describe(self, spec: SourceSpec) -> str:
        return f"{spec.hub_id}/{self.file}"


def clean_sudoku(record: Record, part: str) -> Iterator[Row]:
    if "fields" in record:
        raise SkipRecord(WRONG_FIELD_COUNT, f"{len(record['fields'])} fields")
    question, answer = record["question"], record["answer"]
    if len(question) != 81 or len(answer) != 81:
        raise SkipRecord(WRONG_LENGTH, f"puzzle {len(question)}, solution {len(answer)}")
    yield Row("direct", INSTRUCTION + question.replace(".", "0"), answer)


# -- demo corpus: invented puzzles from shuffled valid grids, in the CSV's schema ---------------

_BASE = [[(3 * (row % 3) + row // 3 + col) % 9 + 1 for col in range(9)] for row in range(9)]
_FULL_WIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def _solved_grid(rng: random.Random) -> list[list[int]]:
    digits = list(range(1, 10))
    rng.shuffle(digits)
    bands = rng.sample(range(3), 3)
    rows = [3 * band + row for band in bands for row in rng.sample(range(3), 3)]
    stacks = rng.sample(range(3), 3)
    cols = [3 * stack + col for stack in stacks for col in rng.sample(range(3), 3)]
    return [[digits[_BASE[r][c] - 1] for c in cols] for r in rows]


def demo_sudoku(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    sources = ["puzzles0_kaggle", "puzzles2_17_clue", "puzzles4_forum_hardest_1905"]
    for index in range(200):
        grid = _solved_grid(rng)
        answer = "".join(str(d) for row in grid for d in row)
        blanks = set(rng.sample(range(81), rng.randint(50, 64)))
        question = "".join("." if i in blanks else ch for i, ch in enumerate(answer))
        if index % 50 == 17:  # a puzzle transcribed with full-width digits: still 81 characters
            question = question.translate(_FULL_WIDTH)
        records.append(
            {
                "source": sources[index % 3],
                "question": question,
                "answer": answer,
                "rating": str(rng.randint(0, 120)),
            }
        )
    return {CSV_FILE: records}


SUDOKU = SourceSpec(
    name="sudoku",
    hub_id="sapientinc/sudoku-extreme",
    configs=None,
    split="train",
    output="sudoku_extreme/all.parquet",
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_sudoku,
    layout=HubFileLayout(),
    demo=demo_sudoku,
    description="Sudoku-Extreme puzzles and solutions (direct).",
)

SPECS = (SUDOKU,)
