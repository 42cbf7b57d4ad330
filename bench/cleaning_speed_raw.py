"""Raw files in the real schema of each source the cleaning speed benchmark measures.

Text columns are invented prose (Zipf-distributed invented words and a few non-ASCII ones), so
that they compress as real text does; every writer takes the number of records and a seed.

- FLAN: ``FLAN/<subset>/part.<n>.parquet`` (three subsets, two files each, 330 tasks each);
- SYNTH: ``SYNTH/synth_<n>.parquet``, the Hub's 14 columns;
- OpenMathInstruct-2: ``nvidia/OpenMathInstruct-2/data/train-*.parquet``;
- tasksource: ``tasksource/tasksource-instruct-v0/data/train-*.parquet``, the 194 selected tasks
  and as many others;
- dmmath: ``mathematics_dataset-v1.0/<set>/<module>.txt``, question and answer lines;
- GSM8K (data_io loads it with ``load_dataset`` and walks it in Python):
  ``openai/gsm8k/main/train-*.parquet``.
"""

from __future__ import annotations

from pathlib import Path

FLAN_SUBSETS = {"flan_fsopt_data": "direct", "niv2_zsopt_data": "direct", "cot_fsopt_data": "cot"}
FLAN_FILES_PER_SUBSET = 2
FLAN_TASKS_PER_SUBSET = 330
SYNTH_FILES = 2
HUB_SHARDS = 2
DMMATH_SETS = ("train-easy", "train-medium", "train-hard")
DMMATH_MODULES = 8


def _vocabulary(size: int = 20_000, seed: int = 7) -> list[str]:
    """Invented words (and a few non-ASCII ones), so that text compresses like prose does."""
    import numpy as np

    rng = np.random.default_rng(seed)
    letters = np.array(list("etaoinshrdlucmfwypvbgkqjxz"))
    weights = np.linspace(2.0, 0.2, len(letters))
    words = [
        "".join(rng.choice(letters, size=int(length), p=weights / weights.sum()))
        for length in rng.integers(2, 11, size=size)
    ]
    return words + ["énergie", "café", "naïve", "Zürich", "東京", "≤", "→"]


def _texts(rng, count: int, mean_words: int, prefix: str):
    """``count`` strings of about ``mean_words`` words (numbered, so none repeat)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    words = pa.array(_vocabulary())
    lengths = rng.integers(max(1, mean_words // 3), mean_words * 5 // 3 + 1, size=count)
    picks = words.take(pa.array(rng.zipf(1.3, size=int(lengths.sum())) % len(words)))
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    lists = pa.ListArray.from_arrays(pa.array(offsets), picks)
    body = pc.binary_join(lists, " ")
    numbers = pc.cast(pa.array(np.arange(count)), pa.string())
    return pc.binary_join_element_wise(pa.array([prefix] * count), numbers, body, " ")


def write_flan_raw(raw: Path, rows: int, seed: int = 0) -> list[Path]:
    """FLAN raw files of ``rows`` rows in all (three subsets, two files each)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    paths = []
    files = len(FLAN_SUBSETS) * FLAN_FILES_PER_SUBSET
    for subset_index, subset in enumerate(FLAN_SUBSETS):
        tasks = pa.array(
            [f"{subset.split('_')[0]}/task{t}:{t % 7}.0.0" for t in range(FLAN_TASKS_PER_SUBSET)]
        )
        for part in range(FLAN_FILES_PER_SUBSET):
            count = rows // files + (1 if subset_index * 2 + part < rows % files else 0)
            # Heavy-tailed task sizes, as in FLAN: a few tasks hold most rows.
            weights = 1.0 / np.arange(1, FLAN_TASKS_PER_SUBSET + 1)
            task = rng.choice(FLAN_TASKS_PER_SUBSET, size=count, p=weights / weights.sum())
            table = pa.table(
                {
                    "inputs": _texts(rng, count, 100, "Question"),
                    "targets": _texts(rng, count, 8, "Answer"),
                    "_template_type": pa.array(["zs_opt"] * count),
                    "_task_source": pa.array(["Flan2021"] * count),
                    "_task_name": tasks.take(pa.array(task)),
                    "_template_idx": pa.array(rng.integers(0, 10, size=count)),
                }
            )
            path = raw / "FLAN" / subset / f"part.{part}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path)  # pyarrow's default row groups: 1M rows
            paths.append(path)
    return paths


_EXERCISES = (
    "rag",
    "memorization",
    "creative writing",
    "constrained writing",
    "editing",
    "math mcq",
    "mcq",
    "math exercise",
    "cooking",
)


def write_synth_raw(raw: Path, rows: int, seed: int = 0) -> list[Path]:
    """SYNTH raw shards of ``rows`` rows in all, the Hub's columns."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed + 1)
    paths = []
    for shard in range(SYNTH_FILES):
        count = rows // SYNTH_FILES + (1 if shard < rows % SYNTH_FILES else 0)
        exercise = pa.array(_EXERCISES).take(pa.array(rng.integers(0, len(_EXERCISES), count)))
        language = pa.array(["en", "en", "en", "fr", "de"]).take(
            pa.array(rng.integers(0, 5, count))
        )
        urls = pa.array(["https://en.wikipedia.org/wiki/X", "Pleias self-knowledge: who"])
        url = urls.take(pa.array((rng.random(count) < 0.03).astype(np.int64)))
        table = pa.table(
            {
                "synth_id": pa.array([f"synth_{shard}_{i}" for i in range(count)]),
                "language": language,
                "exercise": exercise,
                "model": pa.array(["qwen-3-8b"] * count),
                "query": _texts(rng, count, 40, "Query"),
                "query_seed_url": url,
                "query_seed_text": _texts(rng, count, 60, "Seed"),
                "additional_seed_url": pa.nulls(count, pa.string()),
                "seed_license": pa.array(["CC-BY-SA 4.0"] * count),
                "constraints": _texts(rng, count, 10, "\n\nConstraint"),
                "script": pa.nulls(count, pa.string()),
                "synthetic_reasoning": _texts(rng, count, 150, "Reasoning"),
                "synthetic_answer": _texts(rng, count, 50, "Answer"),
                "words": pa.array(rng.integers(20, 900, count)),
            }
        )
        path = raw / "SYNTH" / f"synth_{shard}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        paths.append(path)
    return paths


def _hub_shards(folder: Path, rows: int, make) -> list[Path]:
    """``rows`` records in :data:`HUB_SHARDS` Hub-named shards; ``make(count, shard)`` gives
    a shard's table."""
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for shard in range(HUB_SHARDS):
        count = rows // HUB_SHARDS + (1 if shard < rows % HUB_SHARDS else 0)
        path = folder / f"train-{shard:05d}-of-{HUB_SHARDS:05d}.parquet"
        pq.write_table(make(count, shard), path)
        paths.append(path)
    return paths


def write_openmathinstruct2_raw(raw: Path, rows: int, seed: int = 0) -> list[Path]:
    """OpenMathInstruct-2's four columns; half the problems are augmented ones (a direct row)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed + 2)
    sources = pa.array(["augmented_math", "augmented_gsm8k", "math", "gsm8k"])

    def make(count: int, shard: int) -> pa.Table:
        answers = pc.cast(pa.array(rng.integers(0, 1000, count)), pa.string())
        return pa.table(
            {
                "problem": _texts(rng, count, 45, f"Problem{shard}"),
                "generated_solution": _texts(rng, count, 140, "Solution"),
                "expected_answer": answers,
                "problem_source": sources.take(pa.array(rng.integers(0, 4, count))),
            }
        )

    return _hub_shards(raw / "nvidia" / "OpenMathInstruct-2" / "data", rows, make)


def write_tasksource_raw(raw: Path, rows: int, seed: int = 0) -> list[Path]:
    """tasksource-instruct's ``inputs``, ``targets``, ``task``: the selected tasks and as many
    unselected ones, targets some of which end in a dot."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from hrm_assets.cleaning.sources.tasksource import TASKS

    rng = np.random.default_rng(seed + 3)
    tasks = pa.array([*TASKS, *(f"other_task_{i}/config" for i in range(len(TASKS)))])
    labels = pa.array(["entailment", "neutral.", "contradiction", "A.", "B", "positive."])

    def make(count: int, shard: int) -> pa.Table:
        weights = 1.0 / np.arange(1, len(tasks) + 1)
        task = rng.choice(len(tasks), size=count, p=weights / weights.sum())
        return pa.table(
            {
                "inputs": _texts(rng, count, 80, f"Input{shard}"),
                "targets": pc.cast(labels.take(pa.array(rng.integers(0, 6, count))), pa.string()),
                "task": tasks.take(pa.array(rng.permutation(task))),
            }
        )

    return _hub_shards(raw / "tasksource" / "tasksource-instruct-v0" / "data", rows, make)


def write_dmmath_raw(raw: Path, rows: int, seed: int = 0) -> list[Path]:
    """``rows`` question/answer pairs over the three training sets' module files."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed + 4)
    files = len(DMMATH_SETS) * DMMATH_MODULES
    paths = []
    for index in range(files):
        set_name, module = DMMATH_SETS[index % 3], f"module_{index // 3}__kind"
        count = rows // files + (1 if index < rows % files else 0)
        questions = _texts(rng, count, 14, "Solve")
        answers = pc.cast(pa.array(rng.integers(-999, 999, count)), pa.string())
        lines = pc.binary_join_element_wise(questions, answers, "\n")
        path = raw / "mathematics_dataset-v1.0" / set_name / f"{module}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(lines.to_pylist()) + ("\n" if count else "")
        path.write_bytes(text.encode("utf-8"))
        paths.append(path)
    return paths


def write_gsm8k_raw(raw: Path, rows: int, seed: int = 0) -> list[Path]:
    """GSM8K's ``question`` and ``answer`` (worked solution, ``#### `` and the number)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed + 5)

    def make(count: int, shard: int) -> pa.Table:
        numbers = pc.cast(pa.array(rng.integers(0, 5000, count)), pa.string())
        work = _texts(rng, count, 60, "Work")
        answer = pc.binary_join_element_wise(work, numbers, "\n#### ")
        return pa.table({"question": _texts(rng, count, 45, f"Question{shard}"), "answer": answer})

    return _hub_shards(raw / "openai" / "gsm8k" / "main", rows, make)


WRITERS = {
    "flan": write_flan_raw,
    "synth": write_synth_raw,
    "openmathinstruct2": write_openmathinstruct2_raw,
    "tasksource": write_tasksource_raw,
    "dmmath": write_dmmath_raw,
    "gsm8k_train": write_gsm8k_raw,
}
NEEDED_COLUMNS = {
    "flan": ("_task_name", "inputs", "targets"),
    "synth": (
        "language",
        "exercise",
        "query_seed_url",
        "query",
        "constraints",
        "synthetic_answer",
    ),
    "openmathinstruct2": ("problem", "generated_solution", "expected_answer", "problem_source"),
    "tasksource": ("task", "inputs", "targets"),
    "dmmath": (),  # text files: every byte is read
    "gsm8k_train": ("question", "answer"),
}
RAW_FOLDERS = {
    "flan": "FLAN",
    "synth": "SYNTH",
    "openmathinstruct2": "nvidia/OpenMathInstruct-2",
    "tasksource": "tasksource/tasksource-instruct-v0",
    "dmmath": "mathematics_dataset-v1.0",
    "gsm8k_train": "openai/gsm8k",
}
