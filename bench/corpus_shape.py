"""Corpus shape (issue 14, item 6): data_io's real cleaned corpus through the CLI and Dagster.

    python -m bench.corpus_shape [--megabytes 215] [--file-scale 1] [--work-dir DIR]
                                 [--cleaned-sources NAME ...] [--json PATH]

(the stage ``corpus_shape`` of ``python -m bench``; ``plan()`` there sets the sizes).

**Corpus.** data_io's cleaned tree has thousands of files, most of them small: one Parquet file
per FLAN task (~1,800, ``flan/<subset>__<task>.parquet``), 194 tasksource tasks, 168 DeepMind
mathematics modules (``dmmath/train-easy__algebra__linear_1d.parquet``), SYNTH shards, and
single-file sources (``gsm8k_train.jsonl``, ``numinamath.jsonl``, ...). The bench writes that
shape: at file scale 1, 2,176 files named by the sources' own route functions (so each is a
partition of its ``tokenized/<source>``, which the bench checks with
``hrm_assets.tokenization.partitioning``), with heavy-tailed sizes (FLAN tasks log-normal from 3
rows to tens of thousands, a few large SYNTH and single-file sources). Rows are real rows of
the real raw rows (GSM8K, MATH, TheoremQA, SciBench, DeepMind mathematics), mutated as in
``bench/tokenization.py`` so that no two copies repeat, with each source's condition tags; the
corpus is a function of the seed.

**Figures**, all measured in one run on that corpus (commands as a user types them, each in a
fresh process; peak RSS: ``bench/measure.py`` for Python children, the kernel's ``wait4`` for
commands, which covers their step subprocesses):

1. the CLI ``hrm-tokenize CLEANED -o OUT --tokenizer-path P`` against the ``tokenizers``
   package's ``encode_batch`` in data_io's configuration (``bench/tokenization.py``'s baseline,
   timed without its imports and tokenizer loading), and whether both wrote the same arrays;
2. the first build of every ``tokenized/<source>`` partition through Dagster against the bare
   CLI: a fresh SQLite ``DAGSTER_HOME``, the files registered by ``cleaned_files_sensor``, then
   per source ``dagster asset materialize -m hrm_assets.definitions --select
   'key:"tokenized/<source>"' --partition-range FIRST...LAST``. That needs the tokenized assets'
   ``BackfillPolicy.single_run()`` (issue 14, item 1); without it Dagster refuses the command
   and the figure is reported as not available, with the refusal;
3. the no-op rebuild (the same commands again) against the skip checks alone
   (``hrm_assets.tokenization.tokenize.tokenize_tree`` on the CLI's output, nothing to do), and the
   CLI's own no-op run;
4. a no-op ``dagster asset materialize --select 'key:"cleaned/*"'`` on the demo raw corpus (its
   own data root, since cleaning a source replaces that source's files), after a first build,
   against the same no-op under the in-process executor;
5. ``cleaned_files_sensor`` and the automation sensor ticking over the corpus.

**Fair timing.** Dirty pages are written out before each timed command (the tokenizer's
``syncfs`` per chunk would otherwise also flush what the command before left unwritten), and no
timed command writes right after thousands of files were removed from its filesystem: ext4's
inode allocator then checks each candidate inode for a recent deletion (``recently_deleted``
under ``ext4_create``), about a third of the CPU of a CLI run measured with ``perf`` after an
earlier output was removed. So each build writes into a folder of its own, and work folders
are removed at the end.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path

from bench.arrays import differing_folders
from bench.measure import REPO_ROOT, child_env, measured, run_child

SEED = 0
TOKENIZER_VOCAB = 65_536
TRAIN_MB = 16.0  # tokenizer training text at most (less for a small corpus: train_megabytes)
GENERATOR_SHARDS = 2  # fixed, so that the corpus does not depend on the machine's cores
CLI_SPEEDUP_TARGET = 30.0
DAGSTER_OVER_CLI_TARGET = 1.3
NOOP_REBUILD_TARGET_SECONDS = 20.0
CLEANED_NOOP_TARGET_SECONDS = 20.0
# What Dagster 1.13 says when a partition range is asked of assets that cannot run it as one run.
BATCH_REFUSAL = "BackfillPolicy.single_run()"
# The code location measured; another module exposing ``defs`` (a work-in-progress variant of
# the tokenized assets, say) can be benched through the same commands.
DEFINITIONS_MODULE = os.environ.get("HRM_BENCH_DEFINITIONS", "hrm_assets.definitions")
Log = Callable[[str], None]


# -- the corpus's shape ------------------------------------------------------------------------


@dataclass(frozen=True)
class Family:
    """One source of the corpus: how many files (at file scale 1), its share of the text
    bytes, the spread of its file sizes (sigma of a log-normal; 0: equal sizes), which real
    rows it draws from, and its rows' condition tags (None: FLAN's, by subset)."""

    source: str
    files: int
    share: float
    sigma: float
    pool: str
    conditions: tuple[str, ...] | None


FAMILIES = (
    Family("flan", 1_800, 0.45, 2.0, "mixed", None),
    Family("tasksource", 194, 0.10, 1.5, "mixed", ("direct",)),
    Family("dmmath", 168, 0.12, 0.3, "dmmath", ("direct",)),
    Family("synth", 8, 0.13, 0.3, "mixed", ("synth,cot", "synth,direct", "synth,noisy,cot")),
    Family("numinamath", 1, 0.08, 0.0, "math", ("noisy,cot", "noisy,direct")),
    Family("openmathinstruct2", 1, 0.05, 0.0, "math", ("synth,cot",)),
    Family("math_train", 1, 0.03, 0.0, "math", ("cot", "direct")),
    Family("gsm8k_train", 1, 0.02, 0.0, "gsm8k", ("direct",)),
    Family("no_robots", 1, 0.015, 0.0, "mixed", ("cot",)),
    Family("theoremqa", 1, 0.005, 0.0, "mixed", ("direct",)),
)
MIN_FILES = {"flan": 8, "tasksource": 3, "dmmath": 3, "synth": 2}
MIN_ROWS = 3

# FLAN's subsets, weighted roughly as Open-Orca/FLAN's task counts (NIv2 holds most tasks).
FLAN_SUBSET_WEIGHTS = {
    "niv2_zsopt_data": 22,
    "niv2_fsopt_data": 22,
    "flan_zsopt_data": 8,
    "flan_fsopt_data": 8,
    "t0_zsopt_data": 6,
    "t0_fsopt_data": 6,
    "flan_zsnoopt_data": 4,
    "flan_fsnoopt_data": 4,
    "dialog_zsopt_data": 4,
    "dialog_fsopt_data": 4,
    "t0_zsnoopt_data": 3,
    "t0_fsnoopt_data": 3,
    "cot_zsopt_data": 3,
    "cot_fsopt_data": 3,
}
_TASK_WORDS = (
    "anli squad qasc glue mnli rte wnli cola sst2 qqp trivia hellaswag piqa cosmos quail "
    "quartz ropes duorc wiki_hop adversarial_qa dream social_iqa race winogrande drop coqa "
    "story_cloze app_reviews amazon yelp imdb ag_news dbpedia paws wiki_qa sciq math_qa "
    "gsm8k strategyqa ecqa creak esnli sentiment translation summarization classification "
    "answer_generation question_generation extraction title_generation"
).split()


@dataclass(frozen=True)
class PlannedFile:
    """One cleaned file to write: its path under the cleaned root, its source, the text
    bytes to reach (at least ``MIN_ROWS`` rows), its rows' real pool and condition tags."""

    relative: str
    source: str
    target_bytes: int
    pool: str
    conditions: tuple[str, ...]


def _counts_by_weight(total: int, weights: dict[str, int]) -> dict[str, int]:
    """``total`` split over the keys in proportion to ``weights`` (largest remainders)."""
    whole = sum(weights.values())
    exact = {key: total * w / whole for key, w in weights.items()}
    counts = {key: int(value) for key, value in exact.items()}
    by_remainder = sorted(exact, key=lambda key: counts[key] - exact[key])
    for key in by_remainder[: total - sum(counts.values())]:
        counts[key] += 1
    return counts


def flan_outputs(count: int, rng: random.Random) -> list[tuple[str, str]]:
    """(relative path, condition) of ``count`` FLAN task files, named by FLAN's route."""
    from hrm_assets.cleaning.sources.flan import SUBSETS, route_flan

    outputs = []
    index = 0
    for subset, n in _counts_by_weight(count, FLAN_SUBSET_WEIGHTS).items():
        for _ in range(n):
            first, second = rng.choice(_TASK_WORDS), rng.choice(_TASK_WORDS)
            if subset.startswith("niv2"):
                task = f"task{index:04d}_{first}_{second}"
            elif subset.startswith("flan"):
                task = f"{first}/{second}_{index}:1.0.0"  # ':' and '/' exercise safe_filename
            else:
                task = f"{first}_{second}_{index}"
            index += 1
            record = {"_task_name": task, "inputs": "", "targets": ""}
            outputs.append((route_flan(record, subset), SUBSETS[subset]))
    return outputs


def family_outputs(family: Family, count: int, rng: random.Random) -> list[tuple[str, ...]]:
    """(relative path, condition...) of ``count`` files of ``family``, named as its source
    names them (its route function, or its fixed output path)."""
    from hrm_assets.cleaning.sources import get_source

    spec = get_source(family.source)
    if family.source == "flan":
        return flan_outputs(count, rng)
    if family.source == "tasksource":
        from hrm_assets.cleaning.sources.tasksource import TASKS

        tasks = [TASKS[round(i * (len(TASKS) - 1) / max(1, count - 1))] for i in range(count)]
        paths = [spec.output_of({"task": task}, "default") for task in dict.fromkeys(tasks)]
    elif family.source == "dmmath":
        from hrm_assets.cleaning.sources.dmmath import SETS

        modules = dmmath_modules()
        parts = [f"{s}/{m}.txt" for s in SETS for m in modules]
        chosen = [parts[round(i * (len(parts) - 1) / max(1, count - 1))] for i in range(count)]
        paths = [spec.output_of({}, part) for part in dict.fromkeys(chosen)]
    elif family.source == "synth":
        paths = [spec.output_of({}, f"synth_{i:03d}.parquet") for i in range(count)]
    else:
        paths = list(spec.static_outputs[:count])
    return [(path, *family.conditions) for path in paths]


def real_raw_folder() -> Path:
    """The checked real raw rows (``bench.tokenization.real_raw_folder``, imported when needed
    as that module is everywhere here)."""
    from bench.tokenization import real_raw_folder as find

    return find()


def dmmath_modules(real_raw: Path | None = None) -> list[str]:
    """The DeepMind mathematics module names (``algebra__linear_1d``, ...), sorted."""
    real_raw = real_raw or real_raw_folder()
    folder = real_raw / "dmmath" / "mathematics_dataset-v1.0" / "train-easy"
    return sorted(path.stem for path in folder.glob("*.txt"))


def family_file_counts(file_scale: float) -> dict[str, int]:
    """Files per source: data_io's counts at scale 1, fewer below (never under a minimum)."""
    scale = min(file_scale, 1.0)
    return {
        f.source: max(MIN_FILES.get(f.source, 1), round(f.files * scale)) if f.files > 1 else 1
        for f in FAMILIES
    }


def plan_corpus(megabytes: float, file_scale: float = 1.0, seed: int = SEED) -> list[PlannedFile]:
    """Every file of the corpus with its size, sorted by path; a function of the arguments.

    Each family gets its share of ``megabytes`` (10^6 text bytes), split over its files by
    log-normal weights: FLAN's sigma of 2 gives tasks from a few rows to tens of thousands.
    """
    if megabytes <= 0 or file_scale <= 0:
        raise ValueError("megabytes and file_scale must be positive")
    counts = family_file_counts(file_scale)
    planned = []
    for family in FAMILIES:
        rng = random.Random(f"{seed}:{family.source}")
        outputs = family_outputs(family, counts[family.source], rng)
        weights = [math.exp(rng.gauss(0.0, family.sigma)) for _ in outputs]
        budget = megabytes * 1e6 * family.share
        for (relative, *conditions), weight in zip(outputs, weights, strict=True):
            target = round(budget * weight / sum(weights))
            planned.append(
                PlannedFile(relative, family.source, target, family.pool, tuple(conditions))
            )
    return sorted(planned, key=lambda item: item.relative)


# -- writing it -----------------------------------------------------------------------------------


def _jsonl_pairs(path: Path, question: str, answer: str) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [(row[question], row[answer]) for row in rows]


def real_pools(real_raw: Path | None = None) -> dict[str, list[tuple[str, str]]]:
    """(instruction, response) pairs of the real rows, per pool: ``mixed`` (every real
    source), ``gsm8k``, ``math`` and ``dmmath``."""
    from bench.tokenization import real_pairs

    real_raw = real_raw or real_raw_folder()
    dmmath = []
    for path in sorted((real_raw / "dmmath" / "mathematics_dataset-v1.0").rglob("*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        dmmath += list(zip(lines[0::2], lines[1::2], strict=False))
    return {
        "mixed": real_pairs(real_raw),
        "gsm8k": _jsonl_pairs(real_raw / "gsm8k" / "train.jsonl", "question", "answer"),
        "math": _jsonl_pairs(real_raw / "hendrycks_math" / "test.jsonl", "problem", "solution"),
        "dmmath": dmmath,
    }


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(key, pa.string()) for key in ("condition", "instruction", "response")])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def write_shard(
    cleaned_root: str, planned: list[PlannedFile], shard: int, seed: int, real_raw: str
) -> list[dict]:
    """Write the files of one generator shard; returns per file its path, rows, text bytes.

    Each pool is one stream of mutated real rows (``bench.tokenization.corpus_rows``) seeded
    by (seed, shard, pool); a file takes the next rows of its pool's stream and draws their
    conditions from its own generator.
    """
    from bench.tokenization import corpus_rows, row_bytes

    pools = real_pools(Path(real_raw))
    streams = {
        name: corpus_rows(pairs, seed=seed * 1_000 + shard * 10 + index)
        for index, (name, pairs) in enumerate(sorted(pools.items()))
    }
    written = []
    for item in planned:
        rng = random.Random(f"{seed}:{item.relative}")
        rows, text = [], 0
        while text < item.target_bytes or len(rows) < MIN_ROWS:
            row = next(streams[item.pool])
            row["condition"] = rng.choice(item.conditions)
            rows.append(row)
            text += row_bytes(row)
        path = Path(cleaned_root) / item.relative
        _write_rows(path, rows)
        written.append(
            {
                "relative": item.relative,
                "source": item.source,
                "rows": len(rows),
                "text_bytes": text,
                "file_bytes": path.stat().st_size,
            }
        )
    return written


def shard_of_files(planned: list[PlannedFile], shards: int) -> list[list[PlannedFile]]:
    """The files dealt to ``shards`` generators, largest first, so their work is balanced."""
    by_size = sorted(planned, key=lambda item: (-item.target_bytes, item.relative))
    return [by_size[index::shards] for index in range(shards)]


def write_corpus(
    cleaned_root: Path,
    planned: list[PlannedFile],
    seed: int = SEED,
    real_raw: Path | None = None,
) -> list[dict]:
    """Write every planned file under ``cleaned_root`` (``GENERATOR_SHARDS`` processes);
    returns the written files' figures sorted by path. Raises ``FileNotFoundError`` without
    the real raw data."""
    real_raw = real_raw or real_raw_folder()
    if not (real_raw / "gsm8k").is_dir():
        raise FileNotFoundError(f"real raw data not found at {real_raw} (set HRM_REAL_RAW)")
    shards = shard_of_files(planned, GENERATOR_SHARDS)
    with ProcessPoolExecutor(len(shards), mp_context=get_context("fork")) as pool:
        futures = [
            pool.submit(write_shard, str(cleaned_root), files, index, seed, str(real_raw))
            for index, files in enumerate(shards)
        ]
        written = [entry for future in futures for entry in future.result()]
    return sorted(written, key=lambda entry: entry["relative"])


def routing_problems(cleaned_root: Path, planned: list[PlannedFile]) -> list[str]:
    """Files that would not become partitions of their own ``tokenized/<source>``: the
    cleaned tree scanned as the sensor scans it, each source's files as
    ``hrm_assets.tokenization.partitioning.files_of_source`` finds them. Empty when every file
    routes."""
    from hrm_assets.cleaning.sources import SOURCES
    from hrm_assets.common.layout import scan_cleaned_files
    from hrm_assets.tokenization.partitioning import files_of_source

    scanned = scan_cleaned_files(cleaned_root)
    owners: dict[str, list[str]] = {}
    for name, spec in SOURCES.items():
        for item in files_of_source(spec, cleaned_root, scanned):
            owners.setdefault(item.relative, []).append(name)
    problems = []
    expected = {item.relative: item.source for item in planned}
    for item in scanned:
        found = owners.get(item.relative, [])
        if found != [expected.get(item.relative)]:
            problems.append(f"{item.relative}: routed to {found or 'no source'}")
    missing = set(expected) - {item.relative for item in scanned}
    problems += [f"{relative}: not found by the scan" for relative in sorted(missing)]
    return problems


def baseline_view(cleaned_root: Path, view: Path) -> list[str]:
    """A flat folder of links named by the files' safe names, so that the baseline (which
    names each output folder after its input's file name) writes the CLI's folder names.
    Returns the safe names."""
    from hrm_assets.common.layout import scan_cleaned_files

    view.mkdir(parents=True, exist_ok=True)
    names = []
    for item in scan_cleaned_files(cleaned_root):
        (view / item.safe_name).symlink_to(item.path)
        names.append(item.safe_name)
    return names


def array_mtimes(root: Path) -> dict[str, int]:
    """``mtime_ns`` of every array under ``root``: unchanged ones were not rewritten."""
    return {str(path.relative_to(root)): path.stat().st_mtime_ns for path in root.rglob("*.npy")}


# -- running commands -----------------------------------------------------------------------------


@dataclass
class CommandRun:
    """One command as a user runs it: wall seconds from launch to exit (process start-up and
    imports included) and the peak RSS of it or any of its descendants (``wait4``)."""

    command: list[str]
    seconds: float
    peak_rss_bytes: int
    returncode: int
    stderr_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_command(command: Sequence[str], env: dict[str, str], cwd: Path = REPO_ROOT) -> CommandRun:
    """Run ``command`` to completion; its output goes to temporary files (never a pipe that
    could fill up), of which the end of stderr is kept.

    Dirty pages are written out first: the tokenizer's one ``syncfs`` per chunk flushes every
    writer's unwritten data on the filesystem, so without this a command would also pay for
    the earlier one's (the baseline leaves some 400 MB unsynced)."""
    os.sync()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(list(command), env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-6000:].decode("utf-8", "replace")
    return CommandRun(list(command), seconds, usage.ru_maxrss * 1024, process.returncode, tail)


def console_script(name: str, module: str) -> list[str]:
    """The installed console script ``name`` next to this interpreter (no pyenv shim in the
    timing), else ``python -m module``."""
    script = Path(sys.executable).parent / name
    if script.is_file():
        return [str(script)]
    found = shutil.which(name)
    return [found] if found else [sys.executable, "-m", module]


def tokenize_command(cleaned_root: Path, out: Path, tokenizer: Path) -> list[str]:
    return [
        *console_script("hrm-tokenize", "hrm_assets.tokenization"),
        str(cleaned_root),
        "-o",
        str(out),
        "--tokenizer-path",
        str(tokenizer),
        "--no-progress",
    ]


def materialize_command(
    select: str, partition_range: tuple[str, str] | None = None, module: str = DEFINITIONS_MODULE
) -> list[str]:
    """``dagster asset materialize -m MODULE --select SELECT``, with ``--partition-range
    FIRST...LAST`` when given."""
    command = [
        *console_script("dagster", "dagster"),
        "asset",
        "materialize",
        "-m",
        module,
        "--select",
        select,
    ]
    if partition_range:
        command += ["--partition-range", f"{partition_range[0]}...{partition_range[1]}"]
    return command


def prepare_instance(home: Path) -> None:
    """A fresh ``DAGSTER_HOME`` with the project's instance config (SQLite, no telemetry)."""
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "dagster_home" / "dagster.yaml", home / "dagster.yaml")


def dagster_env(
    data_root: Path, home: Path, raw_root: Path | None = None, executor: str | None = None
) -> dict[str, str]:
    """The environment of a Dagster command or child: the bench's data root and instance, the
    raw root and executor given (else unset: no Hub access either way)."""
    env = child_env(
        {
            "HRM_DATA_ROOT": str(data_root),
            "DAGSTER_HOME": str(home),
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
        }
    )
    for name, value in (("HRM_RAW_ROOT", raw_root), ("HRM_EXECUTOR", executor)):
        env.pop(name, None)
        if value is not None:
            env[name] = str(value)
    return env


# -- children (python -m bench.corpus_shape --child KIND ...) -------------------------------------


def _quiet_dagster() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("dagster").setLevel(logging.WARNING)


def skip_checks_child(cleaned_root: str, out: str, tokenizer: str) -> dict:
    """``tokenize_tree`` over a tree that is already current: the skip checks alone."""
    from hrm_assets.tokenization.tokenize import tokenize_tree

    def work() -> dict:
        report = tokenize_tree([Path(cleaned_root)], Path(out), tokenizer, progress=False)
        return {
            "skipped": sum(o.skipped for o in report.outcomes),
            "tokenized": sum(not o.skipped for o in report.outcomes),
            "failures": len(report.failures),
        }

    return measured(work)


def partitions_child() -> dict:
    """Per tokenized source: its dynamic partitions in order (count, first, last), how many
    are recorded as materialized, and whether its asset has a single-run backfill policy."""
    _quiet_dagster()
    import dagster as dg

    defs = importlib.import_module(DEFINITIONS_MODULE).defs
    from hrm_assets.defs.common.keys import tokenized_key
    from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

    instance = dg.DagsterInstance.get()
    sources = {}
    for name, partitions_def in TOKENIZED_PARTITIONS.items():
        keys = instance.get_dynamic_partitions(partitions_def.name)
        asset = defs.get_assets_def(tokenized_key(name))
        policy = asset.backfill_policy
        materialized = instance.get_materialized_partitions(tokenized_key(name)) if keys else set()
        sources[name] = {
            "partitions": len(keys),
            "first": keys[0] if keys else None,
            "last": keys[-1] if keys else None,
            "materialized": len(set(keys) & set(materialized)),
            # single_run() is the policy without a cap on partitions per run.
            "single_run": policy is not None and policy.max_partitions_per_run is None,
        }
    return {"sources": sources}


def cleaned_rebuilt_child(names: Sequence[str]) -> dict:
    """Per cleaned source: its latest materialization's ``rebuilt`` flag (None if never)."""
    _quiet_dagster()
    import dagster as dg

    from hrm_assets.defs.common.keys import cleaned_key

    instance = dg.DagsterInstance.get()
    rebuilt = {}
    for name in names:
        event = instance.get_latest_materialization_event(cleaned_key(name))
        value = None
        if event is not None and event.asset_materialization is not None:
            entry = event.asset_materialization.metadata.get("rebuilt")
            value = None if entry is None else bool(entry.value)
        rebuilt[name] = value
    return {"rebuilt": rebuilt}


def automation_child(ticks: int = 1) -> dict:
    """``automation_sensor`` ticking over every asset as the daemon ticks it
    (``bench.dagster_overhead.automation_tick``, where it exists; else the testing entry point
    ``dg.evaluate_automation_conditions``, which costs more): a first tick from an empty
    cursor, then ``ticks`` steady ones from the previous cursor. Runs are requested, not
    launched."""
    _quiet_dagster()
    import dagster as dg

    from bench import dagster_overhead
    from bench.cleaning_memory import peak_rss_bytes
    from bench.measure import AnonPeak

    defs = importlib.import_module(DEFINITIONS_MODULE).defs
    instance = dg.DagsterInstance.get()
    daemon_tick = getattr(dagster_overhead, "automation_tick", None)
    seconds, requested = [], []
    with AnonPeak() as anon:
        if daemon_tick is not None:
            from dagster._core.definitions.asset_daemon_cursor import AssetDaemonCursor

            graph, cursor = defs.resolve_asset_graph(), AssetDaemonCursor.empty()
        else:
            cursor = None
        for evaluation_id in range(1, ticks + 2):
            started = time.perf_counter()
            if daemon_tick is not None:
                cursor, runs, _ = daemon_tick(graph, instance, cursor, evaluation_id)
            else:
                result = dg.evaluate_automation_conditions(defs, instance, cursor=cursor)
                cursor, runs = result.cursor, result.total_requested
            seconds.append(time.perf_counter() - started)
            requested.append(runs)
    return {
        "tick": "daemon" if daemon_tick is not None else "evaluate_automation_conditions",
        "first_tick_seconds": seconds[0],
        "steady_tick_seconds": seconds[1:],
        "requested": requested,
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_anon_bytes": anon.peak,
    }


# -- figures ------------------------------------------------------------------------------------


def _quantiles(values: Sequence[int]) -> dict[str, int]:
    ordered = sorted(values)
    if not ordered:
        return {}

    def at(share: float) -> int:
        return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]

    return {"min": ordered[0], "median": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": at(1)}


def corpus_figures(written: list[dict], seconds: float) -> dict:
    """Files, rows and bytes of the written corpus, per source and overall."""
    by_source: dict[str, list[dict]] = {}
    for entry in written:
        by_source.setdefault(entry["source"], []).append(entry)
    return {
        "files": len(written),
        "rows": sum(e["rows"] for e in written),
        "text_bytes": sum(e["text_bytes"] for e in written),
        "file_bytes": sum(e["file_bytes"] for e in written),
        "seconds": seconds,
        "sources": {
            name: {
                "files": len(entries),
                "rows": sum(e["rows"] for e in entries),
                "text_bytes": sum(e["text_bytes"] for e in entries),
                "rows_per_file": _quantiles([e["rows"] for e in entries]),
            }
            for name, entries in sorted(by_source.items(), key=lambda kv: -len(kv[1]))
        },
        "largest": [
            {"relative": e["relative"], "rows": e["rows"], "text_bytes": e["text_bytes"]}
            for e in sorted(written, key=lambda e: -e["text_bytes"])[:5]
        ],
    }


@dataclass
class DagsterBuild:
    """The tokenized partitions through ``dagster asset materialize --partition-range`` per
    source, or through ``hrm-materialize-tokenized`` (one command, no per-source figures)."""

    available: bool
    reason: str = ""  # why not, when not available
    refusal: str = ""  # what Dagster answered, when it refused
    sources: dict[str, dict] = field(default_factory=dict)  # per source: partitions, runs
    first_seconds: float = 0.0
    noop_seconds: float = 0.0
    first_peak_rss_bytes: int = 0
    noop_peak_rss_bytes: int = 0
    materialized: int = 0  # partitions recorded as materialized after the first build
    differing: list[str] = field(default_factory=list)  # folders unlike the CLI's
    noop_rewritten: int = 0  # arrays the no-op rebuild wrote again


@dataclass
class CorpusShapeResult:
    megabytes: float
    file_scale: float
    threads: int
    work_filesystem: str
    corpus: dict
    tokenizer: dict
    baseline: dict
    cli_first: dict
    cli_noop: dict
    cli_differing: list[str]
    skip_checks: dict
    sensor: dict
    partitions: int
    dagster: DagsterBuild
    one_command: DagsterBuild
    floor: dict
    automation: dict
    cleaned: dict

    @property
    def cli_speedup(self) -> float:
        """The tokenizers package's seconds over the CLI's (wall, start-up included)."""
        return self.baseline["seconds"] / self.cli_first["seconds"]

    @property
    def dagster_over_cli(self) -> float | None:
        if not self.dagster.available:
            return None
        return self.dagster.first_seconds / self.cli_first["seconds"]

    @property
    def one_command_over_cli(self) -> float:
        return self.one_command.first_seconds / self.cli_first["seconds"]

    def as_dict(self) -> dict:
        figures = asdict(self)
        figures.update(
            cli_speedup=self.cli_speedup,
            dagster_over_cli=self.dagster_over_cli,
            one_command_over_cli=self.one_command_over_cli,
        )
        return figures


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f}"


def corpus_table(corpus: dict) -> str:
    """Markdown: files, rows and text per source, with the spread of rows per file."""
    lines = [
        "| source | files | rows | text MB | rows per file: min / median / p90 / p99 / max |",
        "|---|---:|---:|---:|---|",
    ]
    for name, entry in corpus["sources"].items():
        q = entry["rows_per_file"]
        spread = " / ".join(f"{q[k]:,}" for k in ("min", "median", "p90", "p99", "max"))
        lines.append(
            f"| {name} | {entry['files']:,} | {entry['rows']:,} | "
            f"{entry['text_bytes'] / 1e6:,.1f} | {spread} |"
        )
    lines.append(
        f"| **all** | {corpus['files']:,} | {corpus['rows']:,} | "
        f"{corpus['text_bytes'] / 1e6:,.1f} | |"
    )
    return "\n".join(lines)


def timing_rows(result: CorpusShapeResult) -> list[tuple[str, str, float | None, int | None]]:
    """(what, how, wall seconds or None, peak RSS bytes or None) of every measured process."""
    d, cleaned = result.dagster, result.cleaned
    partitions = f"{result.partitions:,} partitions"
    rows: list[tuple[str, str, float | None, int | None]] = [
        (
            "baseline: tokenizers package, data_io's configuration",
            "`bench/tokenization.py` child, timed without imports and tokenizer loading",
            result.baseline["seconds"],
            result.baseline["peak_rss_bytes"],
        ),
        (
            "CLI, first run",
            "`hrm-tokenize CLEANED -o OUT --tokenizer-path P`",
            result.cli_first["seconds"],
            result.cli_first["peak_rss_bytes"],
        ),
        (
            "CLI, no-op run",
            "the same command again",
            result.cli_noop["seconds"],
            result.cli_noop["peak_rss_bytes"],
        ),
        (
            "skip checks alone",
            "`tokenize_tree` on the CLI's output, nothing to do (child, timed without imports)",
            result.skip_checks["seconds"],
            result.skip_checks["peak_rss_bytes"],
        ),
    ]
    if d.available:
        rows += [
            (
                f"Dagster, first build ({partitions})",
                "`dagster asset materialize ... --partition-range FIRST...LAST`, per source",
                d.first_seconds,
                d.first_peak_rss_bytes,
            ),
            (
                f"Dagster, no-op rebuild ({partitions})",
                "the same commands again",
                d.noop_seconds,
                d.noop_peak_rss_bytes,
            ),
        ]
    else:
        rows.append((f"Dagster, build of {partitions}", f"not available: {d.refusal}", None, None))
    one = result.one_command
    rows += [
        (
            f"Dagster, first build ({partitions}), one command",
            "`hrm-materialize-tokenized` (every source's run in one process), fresh instance",
            one.first_seconds,
            one.first_peak_rss_bytes,
        ),
        (
            f"Dagster, no-op rebuild ({partitions}), one command",
            "the same command again",
            one.noop_seconds,
            one.noop_peak_rss_bytes,
        ),
    ]
    rows += [
        (
            f"`cleaned_files_sensor`, steady tick over {result.corpus['files']:,} files",
            "`bench/dagster_overhead.py` sensor child (best of two)",
            min(result.sensor["steady_tick_seconds"]),
            result.sensor["peak_rss_bytes"],
        ),
        (
            "automation sensor, steady tick",
            f"{result.automation.get('tick', 'evaluate_automation_conditions')} tick over every "
            "asset, from the first tick's cursor",
            min(result.automation["steady_tick_seconds"]),
            result.automation["peak_rss_bytes"],
        ),
        (
            f"no-op `{cleaned['select']}`, in process",
            "`HRM_EXECUTOR=in_process dagster asset materialize ...`",
            cleaned["inprocess_noop"]["seconds"],
            cleaned["inprocess_noop"]["peak_rss_bytes"],
        ),
        (
            f"no-op `{cleaned['select']}`, default executor",
            "`dagster asset materialize -m hrm_assets.definitions --select ...`",
            cleaned["noop"]["seconds"],
            cleaned["noop"]["peak_rss_bytes"],
        ),
    ]
    return rows


def timing_table(result: CorpusShapeResult) -> str:
    lines = ["| measured | how | wall s | peak RSS (MiB) |", "|---|---|---:|---:|"]
    for what, how, seconds, rss in timing_rows(result):
        wall = "" if seconds is None else f"{seconds:,.2f}"
        peak = "" if rss is None else _mib(rss)
        lines.append(f"| {what} | {how.replace('|', chr(92) + '|')} | {wall} | {peak} |")
    return "\n".join(lines)


def dagster_table(build: DagsterBuild) -> str:
    """Markdown: per source, its partitions and both Dagster runs (when available)."""
    if not build.available:
        return ""
    lines = [
        "| tokenized source | partitions | first build (s) | no-op rebuild (s) | "
        "peak RSS first / no-op (MiB) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, entry in sorted(build.sources.items(), key=lambda kv: -kv[1]["partitions"]):
        lines.append(
            f"| {name} | {entry['partitions']:,} | {entry['first_seconds']:,.1f} | "
            f"{entry['noop_seconds']:,.1f} | {_mib(entry['first_peak_rss_bytes'])} / "
            f"{_mib(entry['noop_peak_rss_bytes'])} |"
        )
    return "\n".join(lines)


def verdict_lines(result: CorpusShapeResult) -> list[str]:
    """The section's checks in words: same arrays, every partition done, no-ops did nothing."""
    d, cleaned = result.dagster, result.cleaned
    skips = result.skip_checks["value"]
    lines = [
        "- the CLI wrote the baseline's arrays for every file: "
        + ("yes" if not result.cli_differing else f"NO ({len(result.cli_differing)} differ)"),
        "- every file registered by `cleaned_files_sensor`'s first tick: "
        + (
            "yes"
            if result.sensor["first_tick_added"] == result.corpus["files"] == result.partitions
            else f"NO ({result.sensor['first_tick_added']} of {result.corpus['files']})"
        ),
        "- the skip checks found every file current: "
        + ("yes" if skips["skipped"] == result.corpus["files"] else f"NO ({skips})"),
    ]
    if d.available:
        lines += [
            f"- Dagster recorded {d.materialized:,} of {result.partitions:,} partitions as "
            "materialized; its arrays equal the CLI's: "
            + ("yes" if not d.differing else f"NO ({len(d.differing)} differ)"),
            f"- arrays rewritten by the no-op rebuild: {d.noop_rewritten}",
        ]
    else:
        lines.append(f"- Dagster build not available: {d.reason}. Dagster said: {d.refusal}")
    one = result.one_command
    lines += [
        f"- one command: {one.materialized:,} of {result.partitions:,} partitions recorded as "
        "materialized; its arrays equal the CLI's: "
        + ("yes" if not one.differing else f"NO ({len(one.differing)} differ)"),
        f"- arrays rewritten by the one command's no-op rebuild: {one.noop_rewritten}",
    ]
    rebuilt = [name for name, flag in cleaned["noop_rebuilt"].items() if flag is not False]
    lines.append(
        f"- no-op cleaned run rebuilt nothing ({len(cleaned['sources'])} sources, each "
        "`rebuilt: false`): " + ("yes" if not rebuilt else f"NO ({', '.join(rebuilt)})")
    )
    lines.append(f"- automation sensor: runs requested per tick {result.automation['requested']}")
    return lines


# -- the benchmark -------------------------------------------------------------------------------


def train_megabytes(megabytes: float) -> float:
    """Tokenizer training text: ``TRAIN_MB`` of the corpus's rows, less for a small corpus."""
    return min(TRAIN_MB, max(0.25, megabytes / 4))


def train_tokenizer_for(path: Path, megabytes: float, seed: int, real_raw: Path) -> dict:
    """data_io's BPE trained on rows like the corpus's (their own stream); its figures."""
    from bench.tokenization import corpus_rows, real_pairs, take_rows, train_benchmark_tokenizer

    rows = take_rows(corpus_rows(real_pairs(real_raw), seed=seed + 7), megabytes)
    path.parent.mkdir(parents=True, exist_ok=True)
    vocab, seconds, trained_mb = train_benchmark_tokenizer(rows, path, TOKENIZER_VOCAB, megabytes)
    return {"vocab_size": vocab, "train_seconds": seconds, "train_megabytes": trained_mb}


def filesystem_of(path: Path) -> str:
    """``<mount point> (<type>)`` of the file system holding ``path``."""
    best = ("", "unknown")
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                _, point, kind, *_ = line.split()
                if str(path.resolve()).startswith(point) and len(point) > len(best[0]):
                    best = (point, kind)
    except OSError:
        pass
    return f"{best[0] or '?'} ({best[1]})"


def _child(kind: str, args: Sequence[object], env: dict[str, str]) -> dict:
    """``python -m bench.corpus_shape --child KIND ARGS`` in ``env``: its JSON."""
    keep = {k: env[k] for k in env if k.startswith(("HRM_", "DAGSTER_", "HF_"))}
    return run_child("bench.corpus_shape", [kind, *map(str, args)], keep)


def refusal_of(run: CommandRun) -> str:
    """Dagster's reason for refusing ``run`` (its error's sentence naming the backfill
    policy), or its exit status and last line when it did not refuse that way."""
    for line in reversed(run.stderr_tail.splitlines()):
        if BATCH_REFUSAL in line:
            message = line.split("Failure condition: ")[-1].strip()
            return message.split(". ")[0] + "."
    last = (run.stderr_tail.strip().splitlines() or [""])[-1]
    return f"exit {run.returncode}: {last[-300:]}"


def run_or_raise(command: Sequence[str], env: dict[str, str]) -> CommandRun:
    run = run_command(command, env)
    if not run.ok:
        raise RuntimeError(f"{' '.join(run.command)} failed ({run.returncode}):\n{run.stderr_tail}")
    return run


def rewritten_since(before: dict[str, int], root: Path) -> int:
    """Arrays under ``root`` whose ``mtime_ns`` is not the one in ``before``."""
    after = array_mtimes(root)
    return sum(after.get(k) != v for k, v in before.items())


def differing_from_cli(cli_out: Path, tokenized: Path) -> list[str]:
    """Folders of ``tokenized`` unlike the CLI's, then the CLI's folders it lacks."""
    keys = sorted(p.name for p in tokenized.iterdir() if p.is_dir())
    missing = {p.name for p in cli_out.iterdir() if p.is_dir()} - set(keys)
    return differing_folders(cli_out, tokenized, keys) + sorted(missing)


def measure_dagster_build(
    data_root: Path, home: Path, cli_out: Path, log: Log
) -> tuple[DagsterBuild, dict]:
    """Every tokenized partition through ``dagster asset materialize --partition-range``, per
    source, twice (first build, no-op rebuild); the second value is the partitions child's
    figures. Not available, with Dagster's refusal, without single-run backfill policies."""
    env = dagster_env(data_root, home)
    sources = {
        name: entry
        for name, entry in _child("partitions", [], env)["sources"].items()
        if entry["partitions"]
    }
    build = DagsterBuild(available=all(entry["single_run"] for entry in sources.values()))
    if not build.available:
        without = sorted(name for name, entry in sources.items() if not entry["single_run"])
        build.reason = (
            f"tokenized assets without BackfillPolicy.single_run() ({', '.join(without)}): "
            "Dagster refuses a partition range in one run, and one run per partition is what "
            "issue 14 item 1 replaces"
        )
        name = max(sources, key=lambda n: sources[n]["partitions"])
        entry = sources[name]
        log(f"corpus shape: no single-run backfill policy; trying tokenized/{name} once")
        run = run_command(
            materialize_command(f'key:"tokenized/{name}"', (entry["first"], entry["last"])), env
        )
        build.refusal = refusal_of(run)
        build.sources = {name: {"partitions": entry["partitions"], "refused": not run.ok}}
        return build, {"sources": sources}
    for phase in ("first", "noop"):
        before = array_mtimes(data_root / "tokenized") if phase == "noop" else {}
        for name, entry in sorted(sources.items()):
            log(
                f"corpus shape: dagster {phase} build of tokenized/{name} "
                f"({entry['partitions']:,} partitions)"
            )
            run = run_or_raise(
                materialize_command(f'key:"tokenized/{name}"', (entry["first"], entry["last"])),
                env,
            )
            build.sources.setdefault(name, {"partitions": entry["partitions"]})
            build.sources[name][f"{phase}_seconds"] = run.seconds
            build.sources[name][f"{phase}_peak_rss_bytes"] = run.peak_rss_bytes
            setattr(build, f"{phase}_seconds", getattr(build, f"{phase}_seconds") + run.seconds)
            peak = max(getattr(build, f"{phase}_peak_rss_bytes"), run.peak_rss_bytes)
            setattr(build, f"{phase}_peak_rss_bytes", peak)
        if phase == "noop":
            build.noop_rewritten = rewritten_since(before, data_root / "tokenized")
        else:
            recorded = _child("partitions", [], env)["sources"]
            build.materialized = sum(recorded[name]["materialized"] for name in sources)
            build.differing = differing_from_cli(cli_out, data_root / "tokenized")
    return build, {"sources": sources}


def measure_one_command_build(
    data_root: Path, home: Path, cli_out: Path, files: int, log: Log
) -> DagsterBuild:
    """``hrm-materialize-tokenized`` twice (first build, no-op) in a fresh instance and a
    fresh tokenized root, after the files are registered again by ``cleaned_files_sensor``."""
    prepare_instance(home)
    from hrm_assets.common.settings import TOKENIZED_ROOT_ENV

    # A tokenized root of its own, not the per-source build's removed (module docstring).
    tokenized = home.parent / "tokenized-one-command"
    env = {**dagster_env(data_root, home), TOKENIZED_ROOT_ENV: str(tokenized)}
    run_child("bench.dagster_overhead", ["sensor", files], env)
    build = DagsterBuild(available=True)
    command = console_script(
        "hrm-materialize-tokenized", "hrm_assets.defs.tokenized.materialize_all"
    )
    log("corpus shape: first build of every tokenized source in one command")
    first = run_or_raise(command, env)
    build.first_seconds, build.first_peak_rss_bytes = first.seconds, first.peak_rss_bytes
    recorded = _child("partitions", [], env)["sources"]
    build.materialized = sum(entry["materialized"] for entry in recorded.values())
    build.differing = differing_from_cli(cli_out, tokenized)
    log("corpus shape: no-op build of every tokenized source in one command")
    before = array_mtimes(tokenized)
    noop = run_or_raise(command, env)
    build.noop_seconds, build.noop_peak_rss_bytes = noop.seconds, noop.peak_rss_bytes
    build.noop_rewritten = rewritten_since(before, tokenized)
    return build


FLOOR_COMMAND_REPEATS = 3


def measure_dagster_floor(home: Path, partitions: int, log: Log) -> dict:
    """``bench/dagster_floor.py``'s two figures in a fresh instance: the least a ``dagster asset
    materialize`` costs (best of :data:`FLOOR_COMMAND_REPEATS`) and one run recording
    ``partitions`` new partitions as the tokenized step does, with no work."""
    prepare_instance(home)
    env = child_env({"DAGSTER_HOME": str(home)})
    log("corpus shape: Dagster's floor (a command whose step does nothing; the records alone)")
    command = [
        *materialize_command('key:"floor/one"', module="bench.dagster_floor"),
        "--partition",
        "only",
    ]
    runs = [run_or_raise(command, env) for _ in range(FLOOR_COMMAND_REPEATS)]
    records = run_child("bench.dagster_floor", ["records", partitions], {"DAGSTER_HOME": str(home)})
    return {
        "command_seconds": min(run.seconds for run in runs),
        "records_seconds": records["seconds"],
        "records_partitions": records["partitions"],
        "records_recorded": records["recorded"],
    }


def measure_cleaned_noop(work: Path, sources: Sequence[str], log: Log) -> dict:
    """No-op ``dagster asset materialize --select <cleaned>`` on the demo raw corpus: a first
    build (in process, not measured), the no-op in process (baseline), the no-op with the
    default executor (the figure); with each source's ``rebuilt`` flag after it."""
    from hrm_assets.cleaning.sources import SOURCES

    names = list(sources) or list(SOURCES)
    select = (
        'key:"cleaned/*"'
        if not sources
        else " or ".join(f'key:"cleaned/{name}"' for name in sources)
    )
    raw, data, home = work / "raw", work / "data", work / "home"
    demo = [sys.executable, "-m", "hrm_assets.demo", str(raw)]
    if sources:
        demo += ["--sources", *sources]
    log(f"corpus shape: demo raw corpus for {len(names)} cleaned source(s)")
    run_or_raise(demo, child_env())
    prepare_instance(home)
    figures: dict = {"select": select, "sources": names}
    runs = (("first_build", "in_process"), ("inprocess_noop", "in_process"), ("noop", None))
    for label, executor in runs:
        log(f"corpus shape: cleaned {label.replace('_', ' ')} ({executor or 'default executor'})")
        env = dagster_env(data, home, raw, executor)
        run = run_or_raise(materialize_command(select), env)
        figures[label] = asdict(run)
        if label != "first_build":
            figures[f"{label}_rebuilt"] = _child("cleaned-rebuilt", names, env)["rebuilt"]
    return figures


def run_corpus_shape_benchmark(
    megabytes: float,
    file_scale: float = 1.0,
    cleaned_sources: Sequence[str] = (),
    work_dir: Path | None = None,
    log: Log | None = None,
    seed: int = SEED,
    real_raw: Path | None = None,
) -> CorpusShapeResult:
    """Write the corpus and measure every figure of the module docstring in one run.

    ``cleaned_sources`` limits the cleaned no-op to those sources (empty: ``cleaned/*``).
    Work files are removed once measured. Raises ``FileNotFoundError`` without the real raw
    data and ``RuntimeError`` when a command fails or the corpus does not route.
    """
    log = log or (lambda message: None)
    real_raw = real_raw or real_raw_folder()
    threads = os.cpu_count() or 1
    owned = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="bench-corpus-shape-")) if owned else Path(work_dir)
    if work.exists() and not owned:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    data_root = work / "data"
    cleaned_root, tokenizer = data_root / "cleaned", data_root / "tokenizer" / "tokenizer.json"
    try:
        planned = plan_corpus(megabytes, file_scale, seed)
        log(f"corpus shape: writing {len(planned):,} cleaned files ({megabytes:g} MB of text)")
        started = time.perf_counter()
        written = write_corpus(cleaned_root, planned, seed, real_raw)
        corpus = corpus_figures(written, time.perf_counter() - started)
        problems = routing_problems(cleaned_root, planned)
        if problems:
            raise RuntimeError(f"{len(problems)} file(s) do not route: {problems[:5]}")
        log(
            f"corpus shape: {corpus['files']:,} files, {corpus['rows']:,} rows, "
            f"{corpus['text_bytes'] / 1e6:,.1f} MB of text in {corpus['seconds']:.0f} s"
        )
        trained = train_tokenizer_for(tokenizer, train_megabytes(megabytes), seed, real_raw)
        log(f"corpus shape: tokenizer of {trained['vocab_size']:,} ids")

        log("corpus shape: baseline (tokenizers package, data_io's configuration)")
        view, baseline_out = work / "baseline-view", work / "baseline-out"
        names = baseline_view(cleaned_root, view)
        env = {"RAYON_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "true"}
        baseline = run_child(
            "bench.tokenization", ["python", tokenizer, view, baseline_out, threads], env
        )
        log(f"corpus shape: baseline {baseline['seconds']:.1f} s; CLI first run")
        cli_out = work / "cli-out"
        cli_first = run_command(tokenize_command(cleaned_root, cli_out, tokenizer), child_env())
        if not cli_first.ok:
            raise RuntimeError(f"hrm-tokenize failed:\n{cli_first.stderr_tail}")
        cli_differing = differing_folders(baseline_out, cli_out, names)
        log(f"corpus shape: CLI {cli_first.seconds:.1f} s; CLI no-op run and skip checks")
        cli_noop = run_command(tokenize_command(cleaned_root, cli_out, tokenizer), child_env())
        skip_checks = _child("skip-checks", [cleaned_root, cli_out, tokenizer], {})

        home = work / "home"
        prepare_instance(home)
        log("corpus shape: cleaned_files_sensor ticks (registering every file)")
        sensor = run_child(
            "bench.dagster_overhead",
            ["sensor", corpus["files"]],
            {"HRM_DATA_ROOT": str(data_root), "DAGSTER_HOME": str(home)},
        )
        dagster, registered = measure_dagster_build(data_root, home, cli_out, log)
        one_command = measure_one_command_build(
            data_root, work / "home-one-command", cli_out, corpus["files"], log
        )
        floor = measure_dagster_floor(work / "home-floor", corpus["files"], log)
        log("corpus shape: automation sensor ticks")
        automation = _child("automation", [], dagster_env(data_root, home))
        cleaned = measure_cleaned_noop(work / "cleaned-noop", cleaned_sources, log)
        return CorpusShapeResult(
            megabytes=megabytes,
            file_scale=file_scale,
            threads=threads,
            work_filesystem=filesystem_of(work),
            corpus=corpus,
            tokenizer=trained,
            baseline=baseline,
            cli_first=asdict(cli_first),
            cli_noop=asdict(cli_noop),
            cli_differing=cli_differing,
            skip_checks=skip_checks,
            sensor=sensor,
            partitions=sum(e["partitions"] for e in registered["sources"].values()),
            dagster=dagster,
            one_command=one_command,
            floor=floor,
            automation=automation,
            cleaned=cleaned,
        )
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)


# -- CLI ---------------------------------------------------------------------------------------


def child_main(kind: str, args: Sequence[str]) -> dict:
    if kind == "skip-checks":
        return skip_checks_child(*args)
    if kind == "partitions":
        return partitions_child()
    if kind == "cleaned-rebuilt":
        return cleaned_rebuilt_child(args)
    if kind == "automation":
        return automation_child()
    raise SystemExit(f"unknown child {kind!r}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        print(json.dumps(child_main(argv[1], argv[2:])))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.corpus_shape", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--megabytes", type=float, default=215.0, help="text MB (default 215)")
    parser.add_argument("--file-scale", type=float, default=1.0, help="file count scale")
    parser.add_argument("--cleaned-sources", nargs="*", default=[], help="default: cleaned/*")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also save the figures here")
    args = parser.parse_args(argv)
    result = run_corpus_shape_benchmark(
        args.megabytes,
        args.file_scale,
        args.cleaned_sources,
        args.work_dir,
        log=lambda message: print(f"[bench] {message}", file=sys.stderr, flush=True),
    )
    figures = json.dumps(result.as_dict(), indent=2, default=str)
    if args.json:
        args.json.write_text(figures, encoding="utf-8")
    print(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
