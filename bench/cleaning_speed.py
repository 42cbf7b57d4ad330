"""Cleaning speed: our cleaner against data_io's algorithm and the read-and-write bound.

``python -m bench.cleaning_speed [--flan-rows N] [--synth-rows N] [--write]`` generates raw
files in the real schema of the two largest sources, under a temporary raw root:

- FLAN (``FLAN/<subset>/part.<n>.parquet``: ``inputs``, ``targets``, ``_template_type``,
  ``_task_source``, ``_task_name``, ``_template_idx``), three subsets of two files each,
  hundreds of tasks, written with pyarrow's default row groups (1M rows);
- SYNTH (``SYNTH/synth_<n>.parquet`` with the Hub's 14 columns, ``synthetic_reasoning`` the
  bulk of the bytes, as in the real shards),

then cleans each, every method in a fresh Python process (peak RSS: the child's ``VmHWM``):

- ``ours``: ``hrm_assets.cleaning.clean.clean_source`` (the columnar engine, every core);
- ``data_io``: data_io's script restated: ``pipe_clustered/clean_flan.py`` (``pq.read_table``
  of every column, a Python loop appending ``str()`` of each cell to per-task lists, one
  ``write_table`` per task) and ``pipe_clustered/clean_SYNTH.py`` (a polars lazy plan per file,
  ``sink_parquet``);
- ``bound``: reading the columns the source needs and writing our output files' bytes again
  with the same library, files in parallel on every core (the tables to write are loaded
  before the clock starts): no cleaning cost at all.

Figures: wall time, rows/s, raw MB/s, peak RSS; ratios data_io / ours and ours / bound.
FLAN's outputs must be byte-identical to data_io's (same pyarrow); SYNTH's rows must be
equal (data_io's polars writes other bytes, see ``sources/synth.py``).

:func:`run_cleaning_speed_benchmark` returns the figures (for ``python -m bench``);
``--write`` also saves the table to ``docs/BENCHMARKS-cleaning.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC_PATH = REPO_ROOT / "docs" / "BENCHMARKS-cleaning.md"
DOC_HEADING = "## Cleaning speed"

SOURCES = ("flan", "synth")
METHODS = ("ours", "data_io", "bound")
DEFAULT_ROWS = {"flan": 1_000_000, "synth": 600_000}
FLAN_SUBSETS = {"flan_fsopt_data": "direct", "niv2_zsopt_data": "direct", "cot_fsopt_data": "cot"}
FLAN_FILES_PER_SUBSET = 2
FLAN_TASKS_PER_SUBSET = 330
SYNTH_FILES = 2

# Targets of issue 28 (measured in the same run, never as timed tests).
BOUND_RATIO_TARGET = 1.5  # ours / bound
SPEEDUP_TARGETS = {"flan": 3.0, "synth": 1.0}  # data_io / ours
RSS_TARGET_BYTES = 600 * 1024 * 1024

Log = Callable[[str], None]


# -- generated raw files -------------------------------------------------------------------------


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


WRITERS = {"flan": write_flan_raw, "synth": write_synth_raw}
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
}


# -- the methods (each run in a child process) ---------------------------------------------------


def _peak_rss() -> int:
    try:
        with open("/proc/self/status", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _ours(source: str, raw: Path, out: Path) -> dict:
    from hrm_assets.cleaning.clean import clean_source
    from hrm_assets.cleaning.sources import get_source

    report = clean_source(get_source(source), out, raw)
    return {"rows_written": report.rows_written, "files": len(report.files)}


def _data_io_flan(raw: Path, out: Path) -> dict:
    """``pipe_clustered/clean_flan.py``'s algorithm (files sorted, nulls absent here)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hrm_assets.cleaning.sources.local_files import safe_filename

    target = out / "flan"
    target.mkdir(parents=True, exist_ok=True)
    written = files = 0
    for subset, condition in FLAN_SUBSETS.items():
        subset_data: dict[str, dict[str, list]] = {}
        for filename in sorted((raw / "FLAN" / subset).glob("*.parquet")):
            table = pq.read_table(filename)
            for task, inputs, targets in zip(
                table.column("_task_name"),
                table.column("inputs"),
                table.column("targets"),
                strict=True,
            ):
                task = str(task)
                lists = subset_data.setdefault(
                    task, {"instruction": [], "response": [], "condition": []}
                )
                lists["instruction"].append(str(inputs))
                lists["response"].append(str(targets))
                lists["condition"].append(condition)
        for task, lists in subset_data.items():
            path = target / f"{subset}__{safe_filename(task)}.parquet"
            pq.write_table(pa.Table.from_pydict(lists), path)
            written += len(lists["instruction"])
            files += 1
        del subset_data
    return {"rows_written": written, "files": files}


def _data_io_synth(raw: Path, out: Path) -> dict:
    """``pipe_clustered/clean_SYNTH.py``'s polars plan, one sink per input file."""
    import polars as pl

    target = out / "SYNTH"
    target.mkdir(parents=True, exist_ok=True)
    written = files = 0
    for file_path in sorted((raw / "SYNTH").glob("*.parquet")):
        plan = (
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
        plan.sink_parquet(target / file_path.name)
        written += pl.scan_parquet(target / file_path.name).select(pl.len()).collect().item()
        files += 1
    return {"rows_written": written, "files": files}


def _bound(source: str, raw: Path, out: Path, reference: Path) -> dict:
    """Read the needed columns of every raw file, write ``reference``'s files' tables again
    (loaded before the clock): both in parallel over files on every core."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.parquet as pq

    raw_files = sorted((raw / ("FLAN" if source == "flan" else "SYNTH")).rglob("*.parquet"))
    outputs = sorted(reference.rglob("*.parquet"))
    tables = [(path.relative_to(reference), pq.read_table(path)) for path in outputs]
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
    columns = list(NEEDED_COLUMNS[source])

    def read(path: Path) -> int:
        rows = 0
        for batch in pq.ParquetFile(path).iter_batches(
            batch_size=65_536, columns=columns, use_threads=False
        ):
            rows += batch.num_rows
        return rows

    def write(item) -> int:
        relative, table = item
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        return table.num_rows

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        read_rows = sum(pool.map(read, raw_files))
        written = sum(pool.map(write, tables))
    seconds = time.perf_counter() - started
    return {"rows_written": written, "files": len(tables), "read_rows": read_rows, "timed": seconds}


def _child(method: str, source: str, raw: Path, out: Path, reference: str) -> None:
    # Imports before the clock (polars only where it is used: its pages count in the RSS).
    import pyarrow.parquet  # noqa: F401

    if method == "data_io" and source == "synth":
        import polars  # noqa: F401

    import hrm_assets.cleaning.clean  # noqa: F401
    from hrm_assets.cleaning.sources import get_source

    get_source(source)
    started = time.perf_counter()
    if method == "ours":
        result = _ours(source, raw, out)
    elif method == "data_io":
        result = _data_io_flan(raw, out) if source == "flan" else _data_io_synth(raw, out)
    else:
        result = _bound(source, raw, out, Path(reference))
    seconds = result.pop("timed", time.perf_counter() - started)
    print(json.dumps({**result, "seconds": seconds, "peak_rss_bytes": _peak_rss()}))


# -- measurement ---------------------------------------------------------------------------------


@dataclass
class Measurement:
    source: str
    method: str
    raw_rows: int
    raw_bytes: int
    rows_written: int
    files: int
    seconds: float
    peak_rss_bytes: int

    @property
    def rows_per_second(self) -> float:
        return self.raw_rows / self.seconds if self.seconds else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.raw_bytes / 1e6 / self.seconds if self.seconds else 0.0


@dataclass
class SourceResult:
    source: str
    raw_rows: int
    raw_bytes: int
    same_output: bool  # FLAN: same bytes as data_io's; SYNTH: same rows
    measurements: dict[str, Measurement] = field(default_factory=dict)

    def ratio(self, numerator: str, denominator: str) -> float:
        top, bottom = self.measurements[numerator], self.measurements[denominator]
        return top.seconds / bottom.seconds if bottom.seconds else float("inf")

    @property
    def speedup(self) -> float:
        """data_io's time / ours."""
        return self.ratio("data_io", "ours")

    @property
    def over_bound(self) -> float:
        """Our time / the bound's."""
        return self.ratio("ours", "bound")

    @property
    def meets_targets(self) -> bool:
        ours = self.measurements["ours"]
        return (
            self.over_bound <= BOUND_RATIO_TARGET
            and self.speedup >= SPEEDUP_TARGETS[self.source]
            and ours.peak_rss_bytes <= RSS_TARGET_BYTES
        )


@dataclass
class CleaningSpeedResult:
    sources: dict[str, SourceResult]
    machine: dict

    def as_dict(self) -> dict:
        return {
            "machine": self.machine,
            "sources": {
                name: {
                    **{k: v for k, v in asdict(result).items() if k != "measurements"},
                    "speedup": result.speedup,
                    "over_bound": result.over_bound,
                    "meets_targets": result.meets_targets,
                    "measurements": {
                        method: {
                            **asdict(m),
                            "rows_per_second": m.rows_per_second,
                            "mb_per_second": m.mb_per_second,
                        }
                        for method, m in result.measurements.items()
                    },
                }
                for name, result in self.sources.items()
            },
        }

    def table(self) -> str:
        lines = [
            "| source | raw | method | wall | rows/s | raw MB/s | peak RSS | files |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for result in self.sources.values():
            raw = f"{result.raw_rows:,} rows, {result.raw_bytes / 1e6:,.0f} MB"
            for method in METHODS:
                m = result.measurements[method]
                lines.append(
                    f"| {result.source} | {raw} | {method} | {m.seconds:.2f} s | "
                    f"{m.rows_per_second:,.0f} | {m.mb_per_second:,.0f} | "
                    f"{m.peak_rss_bytes / 2**20:,.0f} MiB | {m.files:,} |"
                )
        lines += [
            "",
            "| source | data_io / ours (target) | ours / bound (target) | peak RSS (target) | "
            "output | met |",
            "|---|---|---|---|---|---|",
        ]
        for result in self.sources.values():
            ours = result.measurements["ours"]
            lines.append(
                f"| {result.source} | {result.speedup:.2f}x (>= "
                f"{SPEEDUP_TARGETS[result.source]:g}x) | {result.over_bound:.2f}x (<= "
                f"{BOUND_RATIO_TARGET:g}x) | {ours.peak_rss_bytes / 2**20:,.0f} MiB (<= 600 MiB) "
                f"| {'same' if result.same_output else 'DIFFERENT'} | "
                f"{'yes' if result.meets_targets else 'no'} |"
            )
        return "\n".join(lines)


def _digests(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*.parquet"))
    }


def _same_rows(ours: Path, theirs: Path) -> bool:
    import pyarrow.parquet as pq

    names = sorted(p.relative_to(ours) for p in ours.rglob("*.parquet"))
    if names != sorted(p.relative_to(theirs) for p in theirs.rglob("*.parquet")):
        return False
    columns = ["condition", "instruction", "response"]
    for name in names:
        left = pq.read_table(ours / name, columns=columns)
        right = pq.read_table(theirs / name, columns=columns).cast(left.schema)
        if not left.equals(right):
            return False
    return True


def _run_child(method: str, source: str, raw: Path, out: Path, reference: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.cleaning_speed",
            "--child",
            method,
            source,
            str(raw),
            str(out),
            str(reference),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        cwd=REPO_ROOT,
    )
    if run.returncode != 0:
        raise RuntimeError(f"{method} on {source} failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def run_cleaning_speed_benchmark(
    rows: dict[str, int] | None = None,
    sources: Sequence[str] = SOURCES,
    work_dir: Path | None = None,
    log: Log | None = None,
) -> CleaningSpeedResult:
    """Generate each source's raw files, clean them by each method in a fresh process, and
    return the figures. ``rows``: raw rows per source (default :data:`DEFAULT_ROWS`)."""
    from bench.report import machine_info

    log = log or (lambda message: None)
    rows = {**DEFAULT_ROWS, **(rows or {})}
    results = {}
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work_dir) as scratch:
        for source in sources:
            if rows[source] < 1:
                raise ValueError(f"{source}: rows must be positive")
            root = Path(scratch) / source
            raw = root / "raw"
            log(f"cleaning_speed: writing {rows[source]:,} raw {source} rows")
            paths = WRITERS[source](raw, rows[source])
            raw_bytes = sum(path.stat().st_size for path in paths)
            measured: dict[str, Measurement] = {}
            for method in METHODS:
                out = root / method
                log(f"cleaning_speed: {source} by {method}")
                figures = _run_child(method, source, raw, out, root / "ours")
                measured[method] = Measurement(
                    source,
                    method,
                    rows[source],
                    raw_bytes,
                    figures["rows_written"],
                    figures["files"],
                    figures["seconds"],
                    figures["peak_rss_bytes"],
                )
            if source == "flan":
                same = _digests(root / "ours") == _digests(root / "data_io")
            else:
                same = _same_rows(root / "ours", root / "data_io")
            results[source] = SourceResult(source, rows[source], raw_bytes, same, measured)
            shutil.rmtree(root, ignore_errors=True)
    return CleaningSpeedResult(results, machine_info())


def stage_report(factor: float, work_dir: Path | None, log: Log):
    """``python -m bench``'s stage at a size factor (1: :data:`DEFAULT_ROWS`): the summary
    rows against the issue's targets and the section."""
    from bench.report import Ratio, StageReport

    rows = {name: max(200, round(count * factor)) for name, count in DEFAULT_ROWS.items()}
    result = run_cleaning_speed_benchmark(rows, SOURCES, work_dir, log)
    ratios = []
    for name, source in result.sources.items():
        ours, theirs, bound = (source.measurements[m] for m in METHODS)
        shape = f"{source.raw_rows:,} rows, {source.raw_bytes / 1e6:,.0f} MB raw"
        ratios += [
            Ratio(
                figure=f"{name} ({shape}): data_io's time / ours",
                ours=f"{ours.seconds:.2f} s",
                baseline=f"{theirs.seconds:.2f} s",
                ratio=source.speedup,
                target=f">= {SPEEDUP_TARGETS[name]:g}x",
                met=source.speedup >= SPEEDUP_TARGETS[name],
            ),
            Ratio(
                figure=f"{name}: our time / the read-and-write bound",
                ours=f"{ours.seconds:.2f} s",
                baseline=f"{bound.seconds:.2f} s",
                ratio=source.over_bound,
                target=f"<= {BOUND_RATIO_TARGET:g}x",
                met=source.over_bound <= BOUND_RATIO_TARGET,
            ),
            Ratio(
                figure=f"{name}: our peak RSS (data_io's)",
                ours=f"{ours.peak_rss_bytes / 2**20:,.0f} MiB",
                baseline=f"{theirs.peak_rss_bytes / 2**20:,.0f} MiB",
                ratio=theirs.peak_rss_bytes / ours.peak_rss_bytes,
                target="<= 600 MiB",
                met=ours.peak_rss_bytes <= RSS_TARGET_BYTES,
            ),
        ]
    section = (
        "`bench/cleaning_speed.py`: FLAN and SYNTH raw files generated in the Hub schema, "
        "each cleaned by `hrm_assets.cleaning` (columnar engine, every core), by data_io's "
        "script restated (FLAN: pyarrow and a Python loop; SYNTH: its polars plan) and by the "
        "bound (read the needed columns, write the same output tables; files in parallel), "
        "each in a fresh process. FLAN's outputs byte-identical to data_io's, SYNTH's rows "
        "equal: "
        + ", ".join(f"{n} {'yes' if s.same_output else 'NO'}" for n, s in result.sources.items())
        + ".\n\n"
        + result.table()
    )
    return StageReport("cleaning_speed", "Cleaning speed", ratios, section, result.as_dict())


def engine_choice(raw: Path, batches: int = 8, repeats: int = 3) -> dict[str, float]:
    """Milliseconds per raw record batch of each source's transform, by our pyarrow kernels
    and by the polars expressions data_io writes (Arrow in and out, as the writers need),
    on the generated files under ``raw``: the measurement behind the engine's library."""
    import numpy as np
    import polars as pl
    import pyarrow as pa

    from hrm_assets.cleaning.columnar import read_parquet_batches
    from hrm_assets.cleaning.sources import flan, synth

    def first(path: Path, columns) -> list:
        found = []
        for batch in read_parquet_batches(path, columns):
            found.append(batch)
            if len(found) == batches:
                break
        return found

    synth_batches = first(sorted((raw / "SYNTH").glob("*.parquet"))[0], synth.COLUMNS)
    flan_file = sorted((raw / "FLAN" / "flan_fsopt_data").glob("*.parquet"))[0]
    flan_batches = first(flan_file, flan.COLUMNS)
    strings = pa.schema([(name, pa.string()) for name in ("instruction", "condition", "response")])

    def synth_polars(batch) -> pa.Table:
        exercise = pl.col("exercise")
        frame = pl.from_arrow(batch).filter(
            (pl.col("language") == "en")
            & (~pl.col("query_seed_url").str.contains(synth.SELF_KNOWLEDGE, literal=True))
            & (exercise != "cooking")
        )
        out = frame.select(
            pl.when(exercise == "rag")
            .then(pl.col("query") + pl.col("constraints"))
            .otherwise(pl.col("query"))
            .alias("instruction"),
            exercise.replace_strict(synth.CONDITIONS, default="").alias("condition"),
            pl.col("synthetic_answer").alias("response"),
        )
        return out.to_arrow().cast(strings)

    def flan_pyarrow(batch) -> list:
        cleaned = flan.clean_flan_batch(batch, "flan_fsopt_data")
        order = np.argsort(cleaned.route_codes, kind="stable")
        grouped = cleaned.rows.take(pa.array(order))
        counts = np.bincount(cleaned.route_codes)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        return [grouped.slice(int(a), int(n)) for a, n in zip(starts, counts, strict=True)]

    def flan_polars(batch) -> list:
        frame = pl.from_arrow(batch)
        groups = frame.partition_by("_task_name", maintain_order=True)
        return [
            group.select(
                pl.col("inputs").alias("instruction"), pl.col("targets").alias("response")
            ).to_arrow()
            for group in groups
        ]

    cases = {
        "synth, pyarrow kernels": (lambda b: synth.clean_synth_batch(b, "x"), synth_batches),
        "synth, polars expressions": (synth_polars, synth_batches),
        "flan grouping, pyarrow + numpy stable sort": (flan_pyarrow, flan_batches),
        "flan grouping, polars partition_by": (flan_polars, flan_batches),
    }
    figures = {}
    for name, (function, sample) in cases.items():
        function(sample[0])  # warm up
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            for batch in sample:
                function(batch)
            best = min(best, time.perf_counter() - started)
        figures[name] = best / len(sample) * 1000
    return figures


def write_doc(result: CleaningSpeedResult, command: str, path: Path = DOC_PATH) -> None:
    """Replace (or add) the cleaning speed section of ``path``, keeping the rest."""
    section = (
        f"{DOC_HEADING}\n\n"
        f"`{command}` on {platform.node() or 'this machine'}, "
        f"{result.machine.get('cpus', '?')} CPUs, load average "
        f"{os.getloadavg()[0]:.2f} after the run. Each method in a fresh process; the bound "
        "reads the needed columns and writes our output files' tables again, files in "
        "parallel.\n\n" + result.table() + "\n"
    )
    existing = path.read_text(encoding="utf-8") if path.is_file() else ""
    if DOC_HEADING in existing:
        before, _, after = existing.partition(DOC_HEADING)
        rest = after.split("\n## ", 1)
        tail = "\n## " + rest[1] if len(rest) > 1 else ""
        document = before + section + tail
    else:
        document = existing.rstrip() + ("\n\n" if existing else "") + section
    path.write_text(document, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        method, source, raw, out, reference = argv[1:6]
        _child(method, source, Path(raw), Path(out), reference)
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.cleaning_speed")
    parser.add_argument("--flan-rows", type=int, default=DEFAULT_ROWS["flan"])
    parser.add_argument("--synth-rows", type=int, default=DEFAULT_ROWS["synth"])
    parser.add_argument("--only", nargs="+", choices=SOURCES, default=list(SOURCES))
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--write", action="store_true", help=f"save the table to {DOC_PATH}")
    args = parser.parse_args(argv)
    result = run_cleaning_speed_benchmark(
        {"flan": args.flan_rows, "synth": args.synth_rows},
        args.only,
        args.work_dir,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(result.table())
    if args.write:
        write_doc(result, " ".join(["python -m bench.cleaning_speed", *argv]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
