"""PleIAs SYNTH (local ``SYNTH/*.parquet``, an ``hf download`` of the Hub repository) ->
``SYNTH/<same file name>.parquet``.

data_io ``pipe_clustered/clean_SYNTH.py`` (polars, one output per input file, rows in order):
- keeps the rows with ``language == "en"``, a ``query_seed_url`` that does not contain
  ``Pleias self-knowledge`` and an ``exercise`` other than ``cooking``;
- instruction: ``query + constraints`` when ``exercise == "rag"``, else ``query``;
- condition by exercise: ``synth,cot`` for creative writing, rag, memorization, constrained
  writing and editing; ``synth,direct`` for math mcq and mcq; ``synth,noisy,cot`` for math
  exercise; any other exercise falls through to the empty condition ``""``;
- response: ``synthetic_answer``; no string is stripped.

Every input file gives an output file, even one none of whose rows is kept (as data_io's
``sink_parquet``). Only those six columns are read (the reasoning traces, most of the bytes,
never are), batch by batch, by the columnar rule (:func:`clean_synth_batch`); files are
cleaned in parallel and each output streams to disk. Rows whose exercise reaches the
fallback branch are kept with the empty condition, as data_io writes them; the report counts
them (condition ``""``, tag ``(none)``).

Deliberate differences:
- polars drops a row when a filter column is null (the comparison is null, not true); such rows
  are dropped here too, but counted as skipped (reason ``null filter field``).
- a kept row whose instruction or response would be null (null ``query``, ``rag`` with null
  ``constraints``, null ``synthetic_answer``) is written by data_io with a null; here it is
  skipped and reported (reason ``null instruction or response``).
- data_io takes ``Path.glob`` order; files are read sorted by name (one output per input file).
- Same columns (``instruction, condition, response``), rows and order as data_io, but not the
  same bytes: data_io's polars ``sink_parquet`` writes zstd pages of ``large_string`` columns in
  row groups that follow its streaming engine's morsels, which vary with the thread count (one
  input gave different files at ``POLARS_MAX_THREADS=1`` and ``2``). Its output is not
  reproducible, so ours is written like every other Parquet source (pyarrow, ``string``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path

from hrm_assets.cleaning.columnar import (
    BatchSkip,
    CleanedBatch,
    ColumnarRule,
    null_mask,
    null_names,
    require_text_columns,
    rows_table,
    text,
)
from hrm_assets.cleaning.rows import Row
from hrm_assets.cleaning.sources.local_files import (
    LocalLayout,
    parquet_record_batches,
    pathlib_glob_files,
    write_parquet_records,
)
from hrm_assets.cleaning.sources.spec import Record, SkipRecord, SourceSpec

COLUMNS = ("language", "exercise", "query_seed_url", "query", "constraints", "synthetic_answer")
SELF_KNOWLEDGE = "Pleias self-knowledge"
CONDITIONS = {
    **dict.fromkeys(
        ("creative writing", "rag", "memorization", "constrained writing", "editing"), "synth,cot"
    ),
    **dict.fromkeys(("math mcq", "mcq"), "synth,direct"),
    "math exercise": "synth,noisy,cot",
}
FALLBACK_CONDITION = ""
# The order of data_io's polars select: instruction, condition, response.
SYNTH_COLUMNS = ("instruction", "condition", "response")
NULL_FILTER_FIELD = "null filter field"
NULL_TEXT = "null instruction or response"


class SynthLayout(LocalLayout):
    folder = "SYNTH"
    pattern = "*.parquet"
    download_hint = "hf download PleIAs/SYNTH --repo-type dataset --local-dir <raw root>/SYNTH"

    def part_files(self, spec: SourceSpec, root: Path) -> list[tuple[str, list[Path]]]:
        # data_io globs with pathlib, which (unlike glob.glob) matches hidden names too.
        return [(path.name, [path]) for path in pathlib_glob_files(root, self.pattern)]

    def read_batches(self, path: Path, part: str, batch_size: int) -> Iterator[list[Record]]:
        return parquet_record_batches(path, batch_size, COLUMNS)

    def write_part(self, root: Path, part: str, records: Iterable[Record]) -> list[Path]:
        return [write_parquet_records(root / part, records)]


def route_synth(record: Record, part: str) -> str:
    return f"SYNTH/{part}"


def clean_synth(record: Record, part: str) -> Iterator[Row]:
    language, exercise, url = record["language"], record["exercise"], record["query_seed_url"]
    if language is None or exercise is None or url is None:
        nulls = [name for name in COLUMNS[:3] if record[name] is None]
        raise SkipRecord(NULL_FILTER_FIELD, f"null {', '.join(nulls)}")
    if language != "en" or SELF_KNOWLEDGE in url or exercise == "cooking":
        return
    query, answer = record["query"], record["synthetic_answer"]
    if exercise == "rag":
        constraints = record["constraints"]
        instruction = None if query is None or constraints is None else query + constraints
    else:
        instruction = query
    if instruction is None or answer is None:
        raise SkipRecord(NULL_TEXT, f"exercise {exercise!r}: null query, constraints or answer")
    yield Row(CONDITIONS.get(exercise, FALLBACK_CONDITION), instruction, answer)


def clean_synth_batch(batch, part: str) -> CleanedBatch:
    """:func:`clean_synth` on a record batch, as column kernels (data_io's polars plan): the
    filter first, then the texts of the rows it keeps only (not copied when they are one run
    of the batch and none is ``rag``)."""
    import numpy as np
    import pyarrow.compute as pc

    from hrm_assets.cleaning.arrow_buffers import (
        boolean_array,
        null_flags,
        string_array,
        string_scalar,
        true_flags,
    )

    output = route_synth({}, part)
    filter_nulls = null_mask(batch, COLUMNS[:3])
    wanted = pc.and_(
        pc.and_(
            pc.equal(text(batch.column("language")), string_scalar("en")),
            pc.invert(pc.match_substring(text(batch.column("query_seed_url")), SELF_KNOWLEDGE)),
        ),
        pc.not_equal(text(batch.column("exercise")), string_scalar("cooking")),
    )
    chosen = np.flatnonzero(true_flags(wanted) & ~filter_nulls)
    kept = _rows_at(batch, chosen)
    exercise = text(kept.column("exercise"))
    query, answer = text(kept.column("query")), text(kept.column("synthetic_answer"))
    # instruction: query + constraints for rag, else query; null when a part it uses is null.
    rag = pc.equal(exercise, string_scalar("rag"))
    if rag.true_count:
        suffix = pc.if_else(rag, text(kept.column("constraints")), string_scalar(""))
        instruction = pc.binary_join_element_wise(query, suffix, string_scalar(""))
    else:  # no rag row: the queries themselves, not a copy
        instruction = query
    null_text = null_flags(instruction) | null_flags(answer)
    names = exercise.dictionary_encode()
    conditions = string_array(
        [CONDITIONS.get(name, FALLBACK_CONDITION) for name in names.dictionary.to_pylist()]
    ).take(names.indices)
    rows = rows_table(conditions, instruction, answer)
    if null_text.any():
        rows = rows.filter(boolean_array(~null_text))
    return CleanedBatch(
        rows=rows,
        records=chosen[~null_text],
        output=output,
        skips=[
            BatchSkip(
                NULL_FILTER_FIELD,
                np.flatnonzero(filter_nulls),
                detail=lambda row: f"null {', '.join(null_names(batch, COLUMNS[:3], row))}",
                output=lambda _row: output,
            ),
            BatchSkip(
                NULL_TEXT,
                chosen[null_text],
                detail=lambda row: (
                    f"exercise {batch.column('exercise')[row].as_py()!r}: "
                    "null query, constraints or answer"
                ),
                output=lambda _row: output,
            ),
        ],
    )


def _rows_at(batch, rows):
    """The rows of ``batch`` at ``rows`` (ascending positions): a zero-copy slice when they
    are one run (every row of a batch the filter keeps whole), else a copy (``take``)."""
    from hrm_assets.cleaning.arrow_buffers import index_array

    if len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows):
        return batch.slice(int(rows[0]), len(rows))
    return batch.take(index_array(rows))


SYNTH_COLUMNAR = ColumnarRule(
    columns=COLUMNS,
    clean=clean_synth_batch,
    check_schema=lambda schema: require_text_columns(schema, COLUMNS),
)


# -- demo corpus: invented SYNTH-like records, in the Hub schema ------------------------------

_TOPICS = [
    "the Rhine",
    "photosynthesis",
    "the Meiji Restoration",
    "Ada Lovelace",
    "basalt",
    "the Fibonacci sequence",
    "Gdańsk",
    "the Río de la Plata",
    "Zürich",
    "Nikola Tesla",
]
_EXERCISES = [
    "rag",
    "memorization",
    "creative writing",
    "constrained writing",
    "editing",
    "math mcq",
    "mcq",
    "math exercise",
    "cooking",
    "summarization",
]


def _record(rng: random.Random, index: int, exercise: str, language: str) -> dict:
    topic = _TOPICS[index % len(_TOPICS)]
    a, b = rng.randint(2, 40), rng.randint(2, 40)
    query = {
        "math exercise": f"A train covers {a} km in {b} minutes. What is its speed in km/h?",
        "math mcq": f"What is {a} × {b}?\nA) {a * b}\nB) {a * b + 1}\nC) {a + b}",
        "mcq": f"Which statement about {topic} is correct?\nA) first\nB) second",
        "cooking": f"How do I bake bread inspired by {topic}?",
    }.get(exercise, f"Tell me about {topic}.")
    answer = {
        "math exercise": f"Speed = {a} / ({b}/60) = {a * 60 / b:.2f} km/h.",
        "math mcq": "A",
        "mcq": "B",
    }.get(exercise, f"{topic[0].upper()}{topic[1:]} is discussed in the seed article. ✓")
    url = (
        f"https://{language}.wikipedia.org/wiki/{topic.replace(' ', '_')}"
        if index % 23 != 5
        else "Pleias self-knowledge: who made you?"
    )
    return {
        "synth_id": f"synth_{index:06d}",
        "language": language,
        "exercise": exercise,
        "model": "invented-demo",
        "query": query,
        "query_seed_url": url,
        "query_seed_text": f"Seed text about {topic}.",
        "additional_seed_url": None,
        "seed_license": "CC-BY-SA 4.0",
        "constraints": "\n\nAnswer in two sentences, citing the source."
        if exercise == "rag"
        else "",
        "script": None,
        "synthetic_reasoning": f"Reasoning about {topic}: recall, check, answer.",
        "synthetic_answer": answer,
        "words": rng.randint(20, 400),
    }


def demo_synth(rng: random.Random) -> dict[str, list[dict]]:
    parts = {}
    for shard in range(2):
        records = []
        for index in range(shard * 150, shard * 150 + 150):
            language = "en" if index % 7 else rng.choice(["fr", "de", "es"])
            records.append(_record(rng, index, _EXERCISES[index % len(_EXERCISES)], language))
        parts[f"synth_{shard}.parquet"] = records
    return parts


SYNTH = SourceSpec(
    name="synth",
    hub_id="PleIAs/SYNTH",
    configs=None,
    split="train",
    output="SYNTH",
    format="parquet",
    columns=SYNTH_COLUMNS,
    clean=clean_synth,
    layout=SynthLayout(),
    demo=demo_synth,
    route=route_synth,
    columnar=SYNTH_COLUMNAR,
    one_output_per_part=True,
    description="PleIAs SYNTH synthetic exercises, English, tagged by exercise (synth).",
)

SPECS = (SYNTH,)
