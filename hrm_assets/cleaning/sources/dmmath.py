"""DeepMind mathematics dataset (local ``mathematics_dataset-v1.0/``) ->
``dmmath/<set>__<module>.parquet``.

data_io ``pipe_clustered/clean_dmmath.py``: for each set ``train-easy``, ``train-medium``,
``train-hard`` and each ``<set>/*.txt`` module file, the lines are read in text mode (universal
newlines) and stripped; even lines are questions, odd lines their answers. Every pair gives a
``direct`` row; each file gives ``dmmath/<safe_filename(set + "__" + module)>.parquet`` with
data_io's columns ``instruction, response, condition``, even for an empty module file
(``interpolate/`` and ``extrapolate/`` are not read).

The files are cleaned on columns: :func:`read_pair_batches` reads a file in blocks, splits
and strips its lines as Python's text mode and ``str.strip`` do, and pairs them (the Rust
core, ``rust_tokenizer/src/text_lines.rs``); a module file is its own output, so files are
cleaned in parallel.

Deliberate differences:
- data_io asserts an even line count and crashes otherwise; here the pairs of such a file are
  kept and its last, unpaired line is skipped and reported (reason ``odd number of lines``).
- data_io takes ``glob`` order; files are read sorted by name (each file is its own output, so
  no row moves).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from hrm_assets.cleaning.arrow_buffers import null_flags
from hrm_assets.cleaning.columnar import (
    RAW_BYTES_KEY,
    BatchSkip,
    CleanedBatch,
    ColumnarRule,
    constant,
    rows_table,
)
from hrm_assets.cleaning.mapped_spill import MappedFile
from hrm_assets.cleaning.rows import INSTRUCTION_FIRST, Row
from hrm_assets.cleaning.sources.local_files import (
    LocalLayout,
    batched,
    glob_files,
    safe_filename,
    write_bytes,
)
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

SETS = ("train-easy", "train-medium", "train-hard")
ODD_LINES = "odd number of lines"


def question_answer_pairs(lines: Iterable[str]) -> Iterator[dict]:
    """Stripped lines paired as ``{"question", "answer"}``; an unpaired last line comes with
    ``answer=None``."""
    question = None
    for line in lines:
        if question is None:
            question = line.strip()
        else:
            yield {"question": question, "answer": line.strip()}
            question = None
    if question is not None:
        yield {"question": question, "answer": None}


class DmmathLayout(LocalLayout):
    folder = "mathematics_dataset-v1.0"
    pattern = "{" + ",".join(SETS) + "}/*.txt"
    download_hint = "unpack mathematics_dataset-v1.0.tar.gz into the raw root"

    def part_files(self, spec: SourceSpec, root: Path) -> list[tuple[str, list[Path]]]:
        return [
            (f"{set_name}/{path.name}", [path])
            for set_name in SETS
            for path in glob_files(root / set_name, "*.txt")
        ]

    def read_batches(self, path: Path, part: str, batch_size: int) -> Iterator[list[Record]]:
        # Text mode with universal newlines, as data_io's open(filename, "r").
        with open(path, encoding="utf-8") as handle:
            yield from batched(question_answer_pairs(handle), batch_size)

    def write_part(self, root: Path, part: str, records: Iterable[Record]) -> list[Path]:
        text = "".join(f"{r['question']}\n{r['answer']}\n" for r in records)
        return [write_bytes(root / part, text.encode("utf-8"))]


def route_dmmath(record: Record, part: str) -> str:
    set_name, file_name = part.split("/")
    module = file_name.removesuffix(".txt")
    return f"dmmath/{safe_filename(f'{set_name}__{module}')}.parquet"


def clean_dmmath(record: Record, part: str) -> Iterator[Row]:
    if record["answer"] is None:
        raise SkipRecord(ODD_LINES, f"unpaired last line {record['question'][:80]!r}")
    yield Row("direct", record["question"], record["answer"])


# -- on columns ----------------------------------------------------------------------------------

# A batch per 16 MiB of whole lines: the engine's per-batch work counts more than the few MB
# of memory (the bench's 5 MB module files: one batch each, 0.77 against 0.86 s of CPU).
BLOCK_BYTES = 16 * 1024 * 1024


def _pair_schema():
    import pyarrow as pa

    return pa.schema([("question", pa.large_string()), ("answer", pa.large_string())])


def _text_column(offsets: bytes, data: bytes):
    """A ``large_string`` array over Arrow buffers (int64 offsets, data), without a Python
    object a value."""
    import pyarrow as pa

    rows = len(offsets) // 8 - 1
    return pa.Array.from_buffers(
        pa.large_string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def read_pair_batches(path: Path, columns: Sequence[str] = ()) -> Iterator:
    """The ``question``/``answer`` record batches of a module file, as
    :func:`question_answer_pairs` gives them (an unpaired last line: a null answer): one a
    block of whole lines, split, stripped and paired by the Rust core (lines end as in text
    mode, ``\r\n`` and ``\r`` as ``\n``; stripped of exactly ``str.isspace()``'s characters;
    text that is not UTF-8 is a ValueError naming the file and line)."""
    import pyarrow as pa

    from hrm_assets._core import question_answer_lines

    schema = _pair_schema()
    pending = None  # a question whose answer is in the next block
    line = 1  # the file's number of the block's first line
    # Mapped: a block is a view of the page cache, neither copied by a read nor written to
    # fresh pages the kernel zeroes first; its pages are let go once its lines are read, so
    # the process holds about a block of a large file.
    with MappedFile(path) as mapped, memoryview(mapped.buffer).cast("B") as text:
        start, size = 0, len(text)
        length = BLOCK_BYTES  # grows while a line is longer than a block
        while True:
            end = min(start + length, size)
            last = end == size
            try:
                consumed, lines, *buffers, pending = question_answer_lines(
                    text[start:end], pending, line, last
                )
            except ValueError as error:
                raise ValueError(f"{path}: {error}") from None
            line += lines
            if consumed:
                metadata = {RAW_BYTES_KEY: str(consumed).encode()}
                yield pa.record_batch(
                    [_text_column(*buffers[:2]), _text_column(*buffers[2:])],
                    schema=schema.with_metadata(metadata),
                )
            if last:
                break
            if consumed:
                mapped.drop_pages(start, start + consumed)
                start, length = start + consumed, BLOCK_BYTES
            else:
                length += BLOCK_BYTES
    if pending is not None:
        question = _text_column(struct.pack("<2q", 0, len(pending)), pending)
        yield pa.record_batch([question, pa.nulls(1, pa.large_string())], schema=schema)


def clean_dmmath_batch(batch, part: str) -> CleanedBatch:
    """:func:`clean_dmmath` on a batch of pairs."""
    import numpy as np

    output = route_dmmath({}, part)
    answers = batch.column("answer")
    if answers.null_count:  # the batch of a file's unpaired last line
        missing = null_flags(answers)
        kept = batch.filter(answers.is_valid())
        records, unpaired = np.flatnonzero(~missing), np.flatnonzero(missing)
    else:
        kept, records = batch, np.arange(batch.num_rows)
        unpaired = np.zeros(0, dtype=np.int64)
    return CleanedBatch(
        rows=rows_table(
            constant("direct", kept.num_rows), kept.column("question"), kept.column("answer")
        ),
        records=records,
        output=output,
        skips=[
            BatchSkip(
                ODD_LINES,
                unpaired,
                detail=lambda row: (
                    f"unpaired last line {batch.column('question')[row].as_py()[:80]!r}"
                ),
                output=lambda _row: output,
            )
        ],
        # Text from read_pair_batches, which refuses bytes that are not UTF-8 (naming the
        # file and line); no null field kept; one known condition.
        checked=True,
    )


DMMATH_COLUMNAR = ColumnarRule(
    columns=("question", "answer"),
    clean=clean_dmmath_batch,
    check_schema=lambda _schema: None,
    read=read_pair_batches,
    count_rows=None,
    read_schema=lambda _path: _pair_schema(),
)


# -- demo corpus: invented question/answer pairs in the dataset's line format ------------------


def _linear(rng: random.Random) -> tuple[str, str]:
    x, a, b = rng.randint(-20, 20), rng.randint(2, 12), rng.randint(-50, 50)
    letter = rng.choice("abcdfghjkmnpqrstuvwxyz")
    return f"Solve {a}*{letter} + {b} = {a * x + b} for {letter}.", str(x)


def _gcd(rng: random.Random) -> tuple[str, str]:
    from math import gcd

    a, b = rng.randint(10, 2000), rng.randint(10, 2000)
    return f"Calculate the greatest common divisor of {a} and {b}.", str(gcd(a, b))


def _place_value(rng: random.Random) -> tuple[str, str]:
    number = rng.randint(1000, 999999)
    places = ["units", "tens", "hundreds", "thousands"]
    place = rng.randrange(len(places))
    digit = number // 10**place % 10
    return f"What is the {places[place]} digit of {number}?", str(digit)


_MODULES = {
    "algebra__linear_1d": _linear,
    "numbers__gcd": _gcd,
    "numbers__place_value": _place_value,
}
# The real dataset is ASCII; a few invented lines are not, so the demo exercises UTF-8 paths.
_NON_ASCII = [
    ("Löse 3*x = 12 nach x.", "4"),
    ("计算 7 和 21 的最大公约数。", "7"),
    ("  Quelle est la réponse à 2 + 2 ?  ", "  4  "),
]


def demo_dmmath(rng: random.Random) -> dict[str, list[dict]]:
    parts: dict[str, list[dict]] = {}
    for set_index, set_name in enumerate(SETS):
        for module_index, (module, make) in enumerate(_MODULES.items()):
            records = []
            for index in range(25):
                if index == 11:
                    question, answer = _NON_ASCII[(set_index + module_index) % len(_NON_ASCII)]
                else:
                    question, answer = make(rng)
                records.append({"question": question, "answer": answer})
            parts[f"{set_name}/{module}.txt"] = records
    return parts


DMMATH = SourceSpec(
    name="dmmath",
    hub_id=None,
    configs=None,
    split="train",
    output="dmmath",
    format="parquet",
    columns=INSTRUCTION_FIRST,
    clean=clean_dmmath,
    layout=DmmathLayout(),
    demo=demo_dmmath,
    route=route_dmmath,
    one_output_per_part=True,
    columnar=DMMATH_COLUMNAR,
    description="DeepMind mathematics dataset, train-easy/medium/hard modules (direct).",
)

SPECS = (DMMATH,)
