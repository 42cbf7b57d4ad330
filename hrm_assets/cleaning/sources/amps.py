"""AMPS (local ``amps/`` folder or ``amps.tar.gz``) -> ``amps_khan.jsonl`` and
``ampsmathematica/<topic>_<task>.parquet``.

Both read the AMPS archive's files, either unpacked under ``<raw root>/amps/`` (data_io unpacks
``amps.tar.gz`` into ``raw_data/``) or straight from ``<raw root>/amps.tar.gz``, streamed member
by member. Member names are the archive's (``amps/khan/...``); for the folder they are the paths
relative to the raw root, which are the same names.

``amps_khan``, data_io ``pipe/clean_amps_khan.py``: every ``amps/khan/**/*.json`` file (as
``glob`` finds them: no hidden names) gives one ``noisy,cot`` row, the ``problem`` as is and the
``hints`` joined by newlines and stripped. The folder is preferred when both exist (data_io reads
the folder).

``ampsmathematica``, data_io ``pipe_clustered/clean_ampsmathematica.py``: over the
archive's regular ``.txt`` members whose path has at least three parts (and, with four or
more, ``mathematica`` fourth from the end), ``<topic>/<task>/<file>``: the text (UTF-8) loses
a leading ``Problem:``, is split at the first ``Answer:``, and both sides are stripped; the row
goes to ``ampsmathematica/<topic>_<task>.parquet`` with condition ``noisy,cot`` when the task
folder ends with ``w_steps``, else ``noisy,direct``. data_io reads the archive, so the archive
is preferred when both exist (its member order is data_io's row order).

Deliberate differences:
- data_io skips a mathematica file that is not UTF-8, has no ``Answer:`` or an empty side and
  prints only a total; here each is skipped and reported under its reason.
- a khan file that is not valid JSON, lacks ``problem`` or ``hints``, or has hints that cannot
  be joined crashes data_io; here it is skipped and reported.
- data_io takes ``glob`` order for khan (none fixed); folders are read in sorted path order, the
  archive in member order. JSON is parsed with ``json`` (data_io: ``orjson``; they differ only on
  non-standard input such as ``NaN``).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.local_files import (
    batched,
    glob_files,
    relative_posix,
    tar_regular_files,
    write_bytes,
)
from hrm_assets.cleaning.sources.spec import RawPart, Record, SkipRecord, SourceSpec

FOLDER = "amps"
ARCHIVE = "amps.tar.gz"
KHAN_PREFIX = "amps/khan/"

BAD_JSON = "not valid JSON"
MISSING_FIELD = "problem or hints missing"
BAD_HINTS = "hints cannot be joined"
NOT_UTF8 = "file is not UTF-8"
NO_ANSWER = "no 'Answer:' in the file"
EMPTY_SIDE = "empty problem or answer"


def member_parts(name: str) -> list[str]:
    """data_io's split of a member name: ``name.strip("/").split("/")``."""
    return name.strip("/").split("/")


def is_khan_member(name: str) -> bool:
    """Whether ``glob("amps/khan/**/*.json")`` over the unpacked archive finds this member."""
    parts = [part for part in member_parts(name) if part != "."]
    return (
        len(parts) >= 3
        and parts[:2] == ["amps", "khan"]
        and parts[-1].endswith(".json")
        and not any(part.startswith(".") for part in parts[2:])
    )


def is_mathematica_member(name: str) -> bool:
    """data_io's choice of archive members: ``.txt``, three parts or more, and with four or more
    ``mathematica`` fourth from the end."""
    if not name.endswith(".txt"):
        return False
    parts = member_parts(name)
    return len(parts) >= 3 and (len(parts) < 4 or parts[-4] == "mathematica")


def walk_files(folder: Path) -> Iterator[Path]:
    """Every file under ``folder``, depth first in sorted name order, one directory listing in
    memory at a time (the archive has millions of files)."""
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        if entry.is_dir(follow_symlinks=True):
            yield from walk_files(Path(entry.path))
        elif entry.is_file():
            yield Path(entry.path)


@dataclass(frozen=True)
class AmpsLayout:
    """The AMPS files of one source (``khan`` or ``mathematica``), from folder or archive."""

    source: Literal["khan", "mathematica"]

    @property
    def prefer_archive(self) -> bool:
        return self.source == "mathematica"

    def selects(self, name: str) -> bool:
        return is_khan_member(name) if self.source == "khan" else is_mathematica_member(name)

    def location(self, spec: SourceSpec, raw_root: Path | None) -> Path:
        """``<raw root>/amps`` or ``<raw root>/amps.tar.gz``, whichever this source prefers."""
        if raw_root is None:
            raise ValueError(
                f"{spec.name}: data_io reads AMPS from local files, not the Hub; set a raw root "
                f"(HRM_RAW_ROOT) holding {FOLDER}/ or {ARCHIVE}"
            )
        folder, archive = Path(raw_root) / FOLDER, Path(raw_root) / ARCHIVE
        candidates = [(archive, archive.is_file()), (folder, folder.is_dir())]
        if not self.prefer_archive:
            candidates.reverse()
        for path, present in candidates:
            if present:
                return path
        raise FileNotFoundError(f"{spec.name}: neither {folder} nor {archive} exists")

    def folder_files(self, folder: Path) -> Iterator[Path]:
        if self.source == "khan":
            yield from glob_files(folder / "khan", "**/*.json")
            return
        for path in walk_files(folder):
            if self.selects(relative_posix(path, folder.parent)):
                yield path

    def records(self, location: Path) -> Iterator[Record]:
        if location.name == ARCHIVE:
            for name, tar, member in tar_regular_files(location):
                if self.selects(name):
                    yield {"path": name, "content": tar.extractfile(member).read()}
        else:
            for path in self.folder_files(location):
                yield {"path": relative_posix(path, location.parent), "content": path.read_bytes()}

    # -- RawLayout -------------------------------------------------------------------------

    def parts(self, spec: SourceSpec, raw_root: Path | None, batch_size: int) -> Iterator[RawPart]:
        location = self.location(spec, raw_root)
        yield RawPart(location.name, batched(self.records(location), batch_size))

    def raw_files(self, spec: SourceSpec, raw_root: Path) -> list[Path]:
        location = self.location(spec, raw_root)
        return [location] if location.name == ARCHIVE else list(self.folder_files(location))

    def write_parts(
        self, spec: SourceSpec, raw_root: Path, parts: Mapping[str, Iterable[Record]]
    ) -> list[Path]:
        """Write records ``{"path": "amps/...", "content": bytes}`` as files of the folder."""
        return [
            write_bytes(Path(raw_root) / record["path"], record["content"])
            for records in parts.values()
            for record in records
        ]

    def describe(self, spec: SourceSpec) -> str:
        files = "khan/**/*.json" if self.source == "khan" else "mathematica/<topic>/<task>/*.txt"
        return f"{FOLDER}/{files} (or the same members of {ARCHIVE})"


# -- cleaning ------------------------------------------------------------------------------------


def clean_amps_khan(record: Record, part: str) -> Iterator[Row]:
    try:
        item = json.loads(record["content"])
    except ValueError as error:  # JSONDecodeError and UnicodeDecodeError
        raise SkipRecord(BAD_JSON, f"{record['path']}: {error}") from None
    if not isinstance(item, dict) or "problem" not in item or "hints" not in item:
        raise SkipRecord(MISSING_FIELD, record["path"])
    try:
        response = "\n".join(item["hints"]).strip()
    except TypeError as error:
        raise SkipRecord(BAD_HINTS, f"{record['path']}: {error}") from None
    yield Row("noisy,cot", item["problem"], response)


def route_ampsmathematica(record: Record, part: str) -> str:
    parts = member_parts(record["path"])
    return f"ampsmathematica/{parts[-3]}_{parts[-2]}.parquet"


def clean_ampsmathematica(record: Record, part: str) -> Iterator[Row]:
    path = record["path"]
    try:
        text = record["content"].decode("utf-8")
    except UnicodeDecodeError as error:
        raise SkipRecord(NOT_UTF8, f"{path}: {error}") from None
    pieces = text.removeprefix("Problem:").split("Answer:", 1)
    if len(pieces) < 2:
        raise SkipRecord(NO_ANSWER, path)
    instruction, response = pieces[0].strip(), pieces[1].strip()
    if not instruction or not response:
        raise SkipRecord(EMPTY_SIDE, path)
    task = member_parts(path)[-2]
    yield Row("noisy,cot" if task.endswith("w_steps") else "noisy,direct", instruction, response)


# -- demo corpus: invented AMPS-style files ------------------------------------------------------

_NAMES = ["Ana", "Björn", "Chiara", "Dmitri", "Élodie", "Farah", "Gökhan", "Hina"]


def _khan_item(rng: random.Random, index: int) -> tuple[str, dict]:
    name = _NAMES[index % len(_NAMES)]
    a, b = rng.randint(2, 19), rng.randint(2, 19)
    kinds = [
        (
            "adding-fractions",
            f"Add: $\\dfrac{{1}}{{{a}}} + \\dfrac{{1}}{{{b}}}$",
            [
                f"The common denominator is ${a * b}$.",
                f"$\\dfrac{{{b}}}{{{a * b}}} + \\dfrac{{{a}}}{{{a * b}}} = "
                f"\\dfrac{{{a + b}}}{{{a * b}}}$ ",
            ],
        ),
        (
            "area-of-rectangles",
            f"{name}'s garden is {a} m by {b} m. What is its area?",
            ["Area is length times width.", f"${a} \\times {b} = {a * b}$ square meters."],
        ),
        (
            "solving-equations",
            f"Solve for $x$: $x + {a} = {a + b}$ ",
            [f"Subtract ${a}$ from both sides.", f"$x = {b}$", ""],
        ),
    ]
    folder, problem, hints = kinds[index % len(kinds)]
    return folder, {"problem": problem, "hints": hints}


def demo_amps_khan(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for index in range(210):
        folder, item = _khan_item(rng, index)
        content = json.dumps(item, ensure_ascii=index % 2 == 0).encode("utf-8")
        records.append({"path": f"{KHAN_PREFIX}{folder}/{index}.json", "content": content})
    return {FOLDER: records}


_MATHEMATICA_TASKS = {
    ("Algebra", "Polynomials"): lambda a, b: (
        f"Expand $(x+{a})(x+{b})$.",
        f"$x^2+{a + b} x+{a * b}$",
    ),
    ("Algebra", "Polynomials_w_steps"): lambda a, b: (
        f"Factor $x^2+{a + b} x+{a * b}$.",
        f"We look for two numbers with sum {a + b} and product {a * b}: {a} and {b}.\n"
        f"$(x+{a}) (x+{b})$",
    ),
    ("Statistics", "Mean"): lambda a, b: (
        f"Compute the mean of ${{{a}, {b}}}$.",
        f"$\\frac{{{a + b}}}{{2}}$",
    ),
    ("Statistics", "Mean_w_steps"): lambda a, b: (
        f"Find the mean of ${{{a}, {b}, {a + b}}}$.",
        f"The sum is {2 * (a + b)} and there are 3 values, so the mean is "
        f"$\\frac{{{2 * (a + b)}}}{{3}}$",
    ),
}


def demo_ampsmathematica(rng: random.Random) -> dict[str, list[dict]]:
    records = []
    for (topic, task), make in _MATHEMATICA_TASKS.items():
        for index in range(55):
            problem, answer = make(rng.randint(1, 20), rng.randint(1, 20))
            if index % 9 == 4:
                problem = f"{problem} (Berechne — ≈ exakt.)"
            text = f"Problem:\n{problem}\nAnswer:\n{answer}\n"
            path = f"{FOLDER}/mathematica/{topic}/{task}/{index:05d}.txt"
            records.append({"path": path, "content": text.encode("utf-8")})
    return {FOLDER: records}


AMPS_KHAN = SourceSpec(
    name="amps_khan",
    hub_id=None,
    configs=None,
    split="train",
    output="amps_khan.jsonl",
    format="jsonl",
    clean=clean_amps_khan,
    layout=AmpsLayout("khan"),
    demo=demo_amps_khan,
    description="AMPS Khan Academy exercises: problems with joined hints (noisy,cot).",
)

AMPSMATHEMATICA = SourceSpec(
    name="ampsmathematica",
    hub_id=None,
    configs=None,
    split="train",
    output="ampsmathematica",
    format="parquet",
    clean=clean_ampsmathematica,
    layout=AmpsLayout("mathematica"),
    demo=demo_ampsmathematica,
    route=route_ampsmathematica,
    description="AMPS Mathematica problems, one file per topic and task (noisy,cot/direct).",
)

SPECS = (AMPS_KHAN, AMPSMATHEMATICA)
