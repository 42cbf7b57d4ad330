"""Cleaning speed: our cleaner against data_io's algorithm and the read-and-write bound.

``python -m bench.cleaning_speed [--rows SOURCE=N ...] [--only SOURCE ...] [--repeats N]
[--quick] [--write]`` generates raw files in the real schema of each source
(:mod:`bench.cleaning_speed_raw`: FLAN, SYNTH, OpenMathInstruct-2, tasksource, dmmath and GSM8K,
the shape data_io loads with ``load_dataset`` and walks in Python) under a temporary raw root,
then cleans each by every method of :mod:`bench.cleaning_speed_methods` (ours, data_io's script
restated, the bound), each in a fresh Python process (peak RSS: the child's ``VmHWM``), in
``--repeats`` rounds (default 3): each round runs the three methods one after the other on the
same files, so every method meets the same moments of the machine's load.

Figures: wall time (the best round's, and the median), rows/s, raw MB/s, peak RSS (the
highest round's); ratios data_io / ours and ours / bound of the best times (and of the
medians, shown beside them). The best of a few rounds is the figure least moved by other work
on the machine; a lone run on 2 cores moved FLAN's time by half between runs of the same code.
Outputs must be byte-identical to data_io's (same pyarrow, same orjson), SYNTH's rows equal
(data_io's polars writes other bytes, see ``sources/synth.py``). ``--quick``: a few thousand
rows per source, for tests.

:func:`run_cleaning_speed_benchmark` returns the figures (for ``python -m bench``);
``--write`` also saves the table in its own marked section of ``docs/BENCHMARKS-cleaning.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.cleaning_speed_methods import child
from bench.cleaning_speed_raw import WRITERS
from bench.doc_sections import replace_section

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC_PATH = REPO_ROOT / "docs" / "BENCHMARKS-cleaning.md"

SOURCES = ("flan", "synth", "openmathinstruct2", "tasksource", "dmmath", "gsm8k_train")
METHODS = ("ours", "data_io", "bound")
DEFAULT_ROWS = {
    "flan": 1_000_000,
    "synth": 600_000,  # 567 MB: the reasoning column is most of the bytes
    "openmathinstruct2": 1_000_000,
    "tasksource": 1_000_000,
    "dmmath": 1_000_000,
    "gsm8k_train": 1_000_000,
}
QUICK_ROWS = 3_000
DEFAULT_REPEATS = 3
SECTION = "cleaning_speed"

# Targets of issue 28 (measured in the same run, never as timed tests).
BOUND_RATIO_TARGET = 1.5  # ours / bound
# data_io / ours: 5x where data_io loads with load_dataset and walks rows in Python; dmmath
# (data_io's readlines loop) has no target of its own: never slower.
SPEEDUP_TARGETS = {
    "flan": 3.0,
    "synth": 1.0,
    "openmathinstruct2": 5.0,
    "tasksource": 5.0,
    "dmmath": 1.0,
    "gsm8k_train": 5.0,
}
RSS_TARGET_BYTES = 600 * 1024 * 1024

Log = Callable[[str], None]


# -- measurement ---------------------------------------------------------------------------------


@dataclass
class Measurement:
    source: str
    method: str
    raw_rows: int
    raw_bytes: int
    rows_written: int
    files: int
    seconds: float  # the best round's
    peak_rss_bytes: int  # the highest round's
    rounds: list[float] = field(default_factory=list)  # every round's wall time, in order

    @property
    def median_seconds(self) -> float:
        if not self.rounds:
            return self.seconds
        ordered = sorted(self.rounds)
        middle = len(ordered) // 2
        if len(ordered) % 2:
            return ordered[middle]
        return (ordered[middle - 1] + ordered[middle]) / 2

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
    same_output: bool  # same bytes as data_io's; SYNTH: same rows
    measurements: dict[str, Measurement] = field(default_factory=dict)

    def ratio(self, numerator: str, denominator: str, median: bool = False) -> float:
        top, bottom = self.measurements[numerator], self.measurements[denominator]
        if median:
            return top.median_seconds / bottom.median_seconds
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

    @classmethod
    def from_dict(cls, saved: dict) -> CleaningSpeedResult:
        """A result saved by ``--json`` (:meth:`as_dict`), read back."""
        fields = Measurement.__dataclass_fields__
        sources = {
            name: SourceResult(
                name,
                source["raw_rows"],
                source["raw_bytes"],
                source["same_output"],
                {
                    method: Measurement(**{k: v for k, v in m.items() if k in fields})
                    for method, m in source["measurements"].items()
                },
            )
            for name, source in saved["sources"].items()
        }
        return cls(sources, saved["machine"])

    def table(self) -> str:
        lines = [
            "| source | raw | method | wall: best (median) | rounds | rows/s | raw MB/s | "
            "peak RSS | files |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for result in self.sources.values():
            raw = f"{result.raw_rows:,} rows, {result.raw_bytes / 1e6:,.0f} MB"
            for method in METHODS:
                m = result.measurements[method]
                rounds = " / ".join(f"{seconds:.2f}" for seconds in m.rounds) or "-"
                lines.append(
                    f"| {result.source} | {raw} | {method} | {m.seconds:.2f} s "
                    f"({m.median_seconds:.2f} s) | {rounds} | {m.rows_per_second:,.0f} | "
                    f"{m.mb_per_second:,.0f} | {m.peak_rss_bytes / 2**20:,.0f} MiB | "
                    f"{m.files:,} |"
                )
        lines += [
            "",
            "| source | data_io / ours (target) | ours / bound (target) | medians: data_io / "
            "ours, ours / bound | peak RSS (target) | output | met |",
            "|---|---|---|---|---|---|---|",
        ]
        for result in self.sources.values():
            ours = result.measurements["ours"]
            lines.append(
                f"| {result.source} | {result.speedup:.2f}x (>= "
                f"{SPEEDUP_TARGETS[result.source]:g}x) | {result.over_bound:.2f}x (<= "
                f"{BOUND_RATIO_TARGET:g}x) | {result.ratio('data_io', 'ours', median=True):.2f}x, "
                f"{result.ratio('ours', 'bound', median=True):.2f}x | "
                f"{ours.peak_rss_bytes / 2**20:,.0f} MiB (<= 600 MiB) "
                f"| {'same' if result.same_output else 'DIFFERENT'} | "
                f"{'yes' if result.meets_targets else 'no'} |"
            )
        return "\n".join(lines)


def _digests(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.suffix in (".parquet", ".jsonl")
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
    # data_io's load_dataset converts the shards into a fresh cache beside them, offline; its
    # whole Hugging Face home is there too, so that runs at once share no cache or lock file.
    # Every round starts with no cache and no outputs, as the first did.
    cache = raw.parent / "hf-cache" / method
    shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "HF_HOME": str(cache / "home"),
        "HF_DATASETS_CACHE": str(cache),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
    }
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
    repeats: int = DEFAULT_REPEATS,
) -> CleaningSpeedResult:
    """Generate each source's raw files, clean them by each method in a fresh process, in
    ``repeats`` rounds of the three methods, and return the figures. ``rows``: raw rows per
    source (default :data:`DEFAULT_ROWS`)."""
    from bench.report import machine_info

    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
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
            runs: dict[str, list[dict]] = {method: [] for method in METHODS}
            for round_number in range(1, repeats + 1):
                # ours first in every round: the bound writes ours' outputs again.
                for method in METHODS:
                    log(f"cleaning_speed: {source} by {method}, round {round_number}/{repeats}")
                    runs[method].append(
                        _run_child(method, source, raw, root / method, root / "ours")
                    )
            measured = {
                method: Measurement(
                    source,
                    method,
                    rows[source],
                    raw_bytes,
                    figures[-1]["rows_written"],
                    figures[-1]["files"],
                    min(run["seconds"] for run in figures),
                    max(run["peak_rss_bytes"] for run in figures),
                    [run["seconds"] for run in figures],
                )
                for method, figures in runs.items()
            }
            if source == "synth":
                same = _same_rows(root / "ours", root / "data_io")
            else:
                same = _digests(root / "ours") == _digests(root / "data_io")
            results[source] = SourceResult(source, rows[source], raw_bytes, same, measured)
            shutil.rmtree(root, ignore_errors=True)
    return CleaningSpeedResult(results, machine_info())


def stage_report(factor: float, work_dir: Path | None, log: Log):
    """``python -m bench``'s stage at a size factor (1: :data:`DEFAULT_ROWS`): the summary
    rows against the issue's targets and the section. Below half size one round: a smoke
    run, whose times say nothing."""
    rows = {name: max(200, round(count * factor)) for name, count in DEFAULT_ROWS.items()}
    repeats = DEFAULT_REPEATS if factor >= 0.5 else 1
    return result_stage(run_cleaning_speed_benchmark(rows, SOURCES, work_dir, log, repeats))


def result_stage(result: CleaningSpeedResult):
    """The summary rows and section of a measured :class:`CleaningSpeedResult`."""
    from bench.report import Ratio, StageReport

    ratios = []
    rounds = _rounds(result)
    best = f", best of {rounds} rounds" if rounds > 1 else ""
    for name, source in result.sources.items():
        ours, theirs, bound = (source.measurements[m] for m in METHODS)
        shape = f"{source.raw_rows:,} rows, {source.raw_bytes / 1e6:,.0f} MB raw"
        ratios += [
            Ratio(
                figure=f"{name} ({shape}): data_io's time / ours{best}",
                ours=f"{ours.seconds:.2f} s",
                baseline=f"{theirs.seconds:.2f} s",
                ratio=source.speedup,
                target=f">= {SPEEDUP_TARGETS[name]:g}x",
                met=source.speedup >= SPEEDUP_TARGETS[name],
            ),
            Ratio(
                figure=f"{name}: our time / the read-and-write bound{best}",
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
        "`bench/cleaning_speed.py`: FLAN, SYNTH, OpenMathInstruct-2, tasksource, dmmath and "
        "GSM8K (the `load_dataset` shape) raw files generated in their real schema, each "
        "cleaned by `hrm_assets.cleaning` (columnar engine, every core), by data_io's script "
        "restated (FLAN: pyarrow and a Python loop; SYNTH: its polars plan; OpenMathInstruct-2, "
        "tasksource, GSM8K: `load_dataset` and a Python loop; dmmath: `readlines`) and by the "
        "bound (read the needed columns, write the same output contents; files in parallel), "
        f"each in a fresh process, {rounds} round(s) of the three methods (ratios of the best "
        "rounds; the medians in the table). Outputs byte-identical to data_io's (SYNTH: rows "
        "equal): "
        + ", ".join(f"{n} {'yes' if s.same_output else 'NO'}" for n, s in result.sources.items())
        + ". Analysis against the targets: docs/BENCHMARKS-cleaning.md.\n\n"
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
    """Replace (or add) this benchmark's marked section of ``path``, keeping the rest."""
    text = (
        f"`{command}` on {result.machine.get('cpu', 'this machine')} "
        f"({result.machine.get('cores', '?')} cores), commit "
        f"{result.machine.get('commit', '?')}, load average "
        f"{os.getloadavg()[0]:.2f} after the run. Each method in a fresh process, "
        f"{_rounds(result)} rounds of the three; ratios of the best rounds, the medians' "
        "beside them. The bound reads the needed columns and writes our output files' "
        "contents again, files in parallel.\n\n" + result.table()
    )
    replace_section(path, SECTION, text, title="## Cleaning speed")


def _rounds(result: CleaningSpeedResult) -> int:
    return max(
        (len(m.rounds) for s in result.sources.values() for m in s.measurements.values()),
        default=1,
    )


def write_summary(result: CleaningSpeedResult, command: str, when: str) -> None:
    """Replace this stage's rows of docs/BENCHMARKS.md's Summary and its section there, as
    ``python -m bench`` does for a stage run alone."""
    from bench.__main__ import TITLES
    from bench.report import merged_document

    path = REPO_ROOT / "docs" / "BENCHMARKS.md"
    provenance = (
        f"Measured alone by `{command}` (full size) on {when}, commit "
        f"{result.machine.get('commit', '?')}."
    )
    existing = path.read_text(encoding="utf-8")
    document = merged_document(existing, [result_stage(result)], set(TITLES.values()), provenance)
    path.write_text(document, encoding="utf-8")


def _shown_options(argv: Sequence[str]) -> list[str]:
    """The command line as the doc shows it: without the work and JSON paths (this
    machine's, not part of the method)."""
    shown, skip = [], False
    for argument in argv:
        if skip:
            skip = False
        elif argument in ("--work-dir", "--json", "--from-json"):
            skip = True
        elif not argument.startswith(("--work-dir=", "--json=", "--from-json=")):
            shown.append(argument)
    return shown


def _rows_option(text: str) -> tuple[str, int]:
    name, _, count = text.partition("=")
    if name not in SOURCES or not count.isdigit():
        raise argparse.ArgumentTypeError(f"expected SOURCE=N with SOURCE in {SOURCES}: {text!r}")
    return name, int(count)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        method, source, raw, out, reference = argv[1:6]
        child(method, source, Path(raw), Path(out), reference)
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.cleaning_speed")
    parser.add_argument(
        "--rows",
        type=_rows_option,
        nargs="+",
        default=[],
        metavar="SOURCE=N",
        help=f"raw rows of a source (default: {DEFAULT_ROWS})",
    )
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_ROWS} rows per source")
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        metavar="N",
        help=f"rounds of the three methods per source, the best kept (default "
        f"{DEFAULT_REPEATS}; 1 with --quick)",
    )
    parser.add_argument("--only", nargs="+", choices=SOURCES, default=list(SOURCES))
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also save the figures here")
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"save the table to {DOC_PATH} (a full-size run of every source: also the "
        "summary rows of docs/BENCHMARKS.md)",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        default=None,
        metavar="F",
        help="measure nothing: take the figures a previous --json run saved in F (with "
        "--write: only docs/BENCHMARKS.md's summary rows and section)",
    )
    args = parser.parse_args(argv)
    rows = dict.fromkeys(SOURCES, QUICK_ROWS) if args.quick else {}
    rows.update(dict(args.rows))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if args.from_json is not None:
        result = CleaningSpeedResult.from_dict(json.loads(args.from_json.read_text("utf-8")))
        started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(args.from_json.stat().st_mtime))
    else:
        repeats = args.repeats or (1 if args.quick else DEFAULT_REPEATS)
        result = run_cleaning_speed_benchmark(
            rows,
            args.only,
            args.work_dir,
            log=lambda message: print(message, file=sys.stderr, flush=True),
            repeats=repeats,
        )
    print(result.table())
    if args.json is not None:
        args.json.write_text(json.dumps(result.as_dict(), indent=2), encoding="utf-8")
    if args.write:
        command = " ".join(["python -m bench.cleaning_speed", *_shown_options(argv)])
        if args.from_json is None:
            write_doc(result, command)
        full_size = all(
            name in result.sources and result.sources[name].raw_rows == DEFAULT_ROWS[name]
            for name in SOURCES
        )
        if full_size:
            write_summary(result, command, started)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
