"""Dagster's overhead: a no-op incremental rebuild of tokenized partitions, and a sensor tick.

``python -m bench.dagster_overhead [--partitions N ...] [--sample S] [--sensor-files F ...]``

**No-op rebuild.** For each partition count N, a fresh data root gets N tiny cleaned FLAN
files (``cleaned/flan/task_*.parquet``, one row each) and a small trained tokenizer; a fresh
SQLite ``DAGSTER_HOME`` gets the N files registered as dynamic partitions of
``tokenized/flan``. Then, in one child process (in-process execution, the job
``tokenize_flan`` as the quickstart runs it):

1. S partitions spread evenly over the N are materialized once (``first run``: tokenizes);
2. the same S are materialized again: every one skips (``no-op run``, the measured figure);
3. the asset's body is invoked directly for the same S, outside any run (``asset body``; it
   evaluates the asset's two blocking checks in the same step), and the checks' evaluation alone
   (``checks``, part of the asset body);
4. :func:`hrm_assets.tokenization.tokenize.tokenize_file` alone, with the tokenizer loaded once, for
the
   same S (``skip check``: the work a no-op partition cannot avoid).

What a run costs beyond the asset body is Dagster's share: run and step records, events and
logs written to the instance.

One Dagster run per partition is what a backfill of this asset launches (it reads
``context.partition_key``, so it has no single-run backfill over a range). A full rebuild is
N runs; with S < N the total is extrapolated as N x the mean no-op run and marked so. Runs in a
deployment also pay for launching a process per run, which in-process execution leaves out:
these figures are a lower bound.

**Sensor ticks.** For each file count F, F cleaned files in data_io's shape (every fixed-output
source's files, then the routed sources in data_io's proportions: FLAN about 82%, tasksource 9%,
DM Mathematics 8%, AMPS Mathematica and SYNTH the rest; copies of one tiny Parquet file: the
sensors read names and records, not content), then:

1. ``cleaned_files_sensor`` evaluated with ``dg.build_sensor_context``: the first tick (every
   file new), registering its requests (the daemon's part), then a steady tick (nothing
   changed, the usual case every minute), and the directory scan alone for comparison;
2. a materialization recorded for every registered partition and every other asset (an
   observation with a data version for each raw source), as after a full build;
3. ``automation_sensor``'s evaluation over every asset as the daemon ticks it
   (:func:`automation_tick`): the first tick (an empty cursor) and steady ticks (from the
   previous tick's cursor; nothing changed, so nothing is requested).

``dg.evaluate_automation_conditions`` (the testing entry point) is not what is timed: it builds
the new cursor outside the tick's caches, re-reading a dynamic partition set from the instance
for every condition node of every partitioned asset (several seconds at 2,000 partitions, on top
of the evaluation), which the daemon does not do.

Each point runs in a fresh process (:mod:`bench.measure`: peak RSS and anonymous memory).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.measure import AnonPeak, peak_rss_bytes, run_child

SOURCE = "flan"
# data_io's routed sources and their share of the routed files (FLAN writes one file per task).
SENSOR_SHAPE = {"flan": 1_800, "tasksource": 194, "dmmath": 168, "ampsmathematica": 20, "synth": 18}
DEFAULT_PARTITIONS = (500, 1_000, 2_000)
DEFAULT_SAMPLE = 10
DEFAULT_SENSOR_FILES = (2_500, 5_000, 10_000)
STEADY_TICKS = 2
# The second automation tick still rewrites every evaluation (the first was special); the
# fastest of the rest is the steady figure, since a busy machine makes single ticks noisy.
AUTOMATION_STEADY_TICKS = 5
TOKENIZER_VOCAB = 512

_SCHEMA = pa.schema([(name, pa.string()) for name in ("condition", "instruction", "response")])
LAYERS = ("first_run", "noop_run", "asset_body", "check_bodies", "skip_check")
# check_bodies: the checks' evaluation alone, which the asset body includes.


# -- inputs ------------------------------------------------------------------------------------


def cleaned_row(index: int) -> dict[str, str]:
    return {
        "condition": "direct",
        "instruction": f"Task {index}: what is {index} plus {index + 7}? Answer with a number.",
        "response": f"{2 * index + 7}",
    }


def write_flan_files(cleaned_root: Path, count: int) -> list[str]:
    """``count`` one-row cleaned FLAN files, each different; returns their partition keys."""
    folder = Path(cleaned_root) / "flan"
    folder.mkdir(parents=True, exist_ok=True)
    keys = []
    for index in range(count):
        name = f"task_{index:05d}.parquet"
        pq.write_table(pa.Table.from_pylist([cleaned_row(index)], schema=_SCHEMA), folder / name)
        keys.append(f"flan__{name}")
    return keys


def write_sensor_files(cleaned_root: Path, count: int) -> None:
    """``count`` cleaned files in data_io's shape (module docstring), all copies of one file."""
    from hrm_assets.cleaning.sources import SOURCES

    template = Path(cleaned_root) / ".template.parquet"  # hidden: the scan skips it
    template.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist([cleaned_row(0)], schema=_SCHEMA), template)
    content = template.read_bytes()
    template.unlink()
    fixed = [path for spec in SOURCES.values() for path in spec.static_outputs][:count]
    routed = count - len(fixed)
    weights = sum(SENSOR_SHAPE.values())
    shares = {name: routed * weight // weights for name, weight in SENSOR_SHAPE.items()}
    shares["flan"] += routed - sum(shares.values())
    paths = list(fixed)
    for name, files in shares.items():
        spec = SOURCES[name]
        folder = spec.output.rstrip("/")
        paths += [f"{folder}/task_{index:05d}.{spec.format}" for index in range(files)]
    for relative in paths:
        path = Path(cleaned_root) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def write_tokenizer(tokenizer_json: Path) -> None:
    """A small data_io-configured BPE, trained on text like the cleaned rows."""
    from hrm_assets.tokenizer.train import train_tokenizer

    documents = [" ".join(cleaned_row(i).values()) for i in range(3_000)]
    Path(tokenizer_json).parent.mkdir(parents=True, exist_ok=True)
    train_tokenizer(documents, vocab_size=TOKENIZER_VOCAB).save(str(tokenizer_json))


def prepare_home(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")


def sample_keys(keys: Sequence[str], sample: int) -> list[str]:
    """``sample`` keys spread evenly over ``keys`` (first and last included), in order."""
    if sample >= len(keys):
        return list(keys)
    if sample == 1:
        return [keys[len(keys) // 2]]
    step = (len(keys) - 1) / (sample - 1)
    return [keys[round(i * step)] for i in range(sample)]


def _child_environment(work: Path) -> dict[str, str]:
    # hrm_assets.definitions reads these at import: the child sets nothing itself.
    return {
        "HRM_DATA_ROOT": str(work / "data"),
        "HRM_RAW_ROOT": str(work / "raw"),
        "DAGSTER_HOME": str(work / "home"),
        "HRM_EXECUTOR": "in_process",
    }


# -- children ------------------------------------------------------------------------------------


def _quiet_dagster() -> None:
    """Keep the child's stdout for its JSON and its stderr short: no per-event debug lines."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("dagster").setLevel(logging.WARNING)


def rebuild_child(partitions: int, sample: int) -> dict:
    """Steps 1-4 of the module docstring in this process; the figures as a dict."""
    _quiet_dagster()
    import dagster as dg

    from hrm_assets.common.layout import scan_cleaned_files
    from hrm_assets.definitions import defs
    from hrm_assets.defs.common.keys import tokenized_key
    from hrm_assets.defs.common.resources import DataPaths
    from hrm_assets.defs.tokenized.assets import TokenizeConfig
    from hrm_assets.defs.tokenized.checks import tokenized_check_results
    from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
    from hrm_assets.tokenization.tokenize import TokenizerSetup, tokenize_file

    data_paths = DataPaths.from_environment()
    instance = dg.DagsterInstance.get()
    files = {item.safe_name: item for item in scan_cleaned_files(data_paths.cleaned_root)}
    keys = sorted(files)
    if len(keys) != partitions:
        raise RuntimeError(f"expected {partitions} cleaned files, found {len(keys)}")
    chosen = sample_keys(keys, sample)
    job = defs.resolve_job_def(f"tokenize_{SOURCE}")
    asset = defs.resolve_assets_def(tokenized_key(SOURCE))
    seconds: dict[str, list[float]] = {layer: [] for layer in LAYERS}
    skipped = {"noop_run": 0, "asset_body": 0, "skip_check": 0}
    checks = list(asset.check_specs)
    failed_checks = 0

    def run(key: str) -> bool:
        result = job.execute_in_process(instance=instance, partition_key=key)
        events = result.get_asset_materialization_events()
        return all(e.materialization.metadata["skipped"].value for e in events)

    with AnonPeak() as anon:
        started = time.perf_counter()
        instance.add_dynamic_partitions(TOKENIZED_PARTITIONS[SOURCE].name, keys)
        register_seconds = time.perf_counter() - started
        for layer in ("first_run", "noop_run"):
            for key in chosen:
                started = time.perf_counter()
                was_skipped = run(key)
                seconds[layer].append(time.perf_counter() - started)
                if layer == "noop_run":
                    skipped[layer] += was_skipped
        for key in chosen:
            context = dg.build_asset_context(partition_key=key, instance=instance)
            started = time.perf_counter()
            # The body yields the records and check evaluations of its partitions (records.py).
            events = list(asset(context, TokenizeConfig()))
            seconds["asset_body"].append(time.perf_counter() - started)
            records = [e for e in events if isinstance(e, dg.AssetMaterialization)]
            evaluations = [e for e in events if isinstance(e, dg.AssetCheckEvaluation)]
            # An unchanged partition may record nothing, and only its failing checks.
            skipped["asset_body"] += all(r.metadata["skipped"].value for r in records)
            failed_checks += sum(not check.passed for check in evaluations)
            started = time.perf_counter()
            tokenized_check_results(data_paths.tokenized_root, data_paths.tokenized_root / key)
            seconds["check_bodies"].append(time.perf_counter() - started)
        setup = TokenizerSetup.load(data_paths.tokenizer_json)
        setup.encoder()
        for key in chosen:
            started = time.perf_counter()
            outcome = tokenize_file(files[key], data_paths.tokenized_root, setup)
            seconds["skip_check"].append(time.perf_counter() - started)
            skipped["skip_check"] += outcome.skipped
    return {
        "partitions": partitions,
        "sample": len(chosen),
        "steps": [node.name for node in job.nodes],
        "register_seconds": register_seconds,
        "seconds": seconds,
        "skipped": skipped,
        "checks": len(checks),
        "failed_checks": failed_checks,
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_anon_bytes": anon.peak,
    }


def record_full_build(defs, instance) -> int:
    """Record what a full build leaves in the instance: a materialization with a data version for
    every registered partition and every other materializable asset, an observation for every
    raw source. Returns the number of events recorded."""
    import dagster as dg

    from hrm_assets.defs.sampled.inputs import DATA_VERSION_TAG

    events = 0
    for node in defs.resolve_asset_graph().asset_nodes:
        key = node.key
        version = {DATA_VERSION_TAG: f"v-{key.to_user_string()}"}
        if node.is_observable:
            instance.report_runless_asset_event(dg.AssetObservation(key, tags=version))
            events += 1
        elif node.is_materializable:
            partitions = node.partitions_def
            keys = (
                partitions.get_partition_keys(dynamic_partitions_store=instance)
                if partitions
                else [None]
            )
            for partition in keys:
                tags = {DATA_VERSION_TAG: f"v-{partition}"} if partition else version
                instance.report_runless_asset_event(
                    dg.AssetMaterialization(key, partition=partition, tags=tags)
                )
            events += len(keys)
    return events


def automation_tick(asset_graph, instance, cursor, evaluation_id: int):
    """One tick of ``automation_sensor`` as the asset daemon runs it: evaluate every condition,
    serialize the new cursor and store the evaluations that changed. Returns (cursor, number of
    runs requested, number of evaluations stored)."""
    import logging

    import dagster as dg
    from dagster._core.definitions.asset_daemon_cursor import AssetDaemonCursor
    from dagster._core.definitions.automation_tick_evaluation_context import (
        AutomationTickEvaluationContext,
    )
    from dagster_shared.serdes import deserialize_value, serialize_value

    context = AutomationTickEvaluationContext(
        evaluation_id=evaluation_id,
        asset_graph=asset_graph,
        asset_selection=dg.AssetSelection.all(),
        instance=instance,
        cursor=cursor,
        materialize_run_tags={},
        observe_run_tags={},
        emit_backfills=False,
        auto_observe_asset_keys=set(),
        logger=logging.getLogger("dagster"),
    )
    requests, new_cursor, evaluations = context.evaluate()
    stored = serialize_value(new_cursor)
    # The daemon stores evaluations inside a loading context (their sizes read partition sets).
    with dg.partition_loading_context(dynamic_partitions_store=instance):
        instance.schedule_storage.add_auto_materialize_asset_evaluations(
            evaluation_id, [evaluation.with_run_ids(set()) for evaluation in evaluations]
        )
    return deserialize_value(stored, AssetDaemonCursor), len(requests), len(evaluations)


def sensor_child(files: int) -> dict:
    """Both sensors over ``files`` cleaned files (module docstring, "Sensor ticks")."""
    _quiet_dagster()
    import dagster as dg
    from dagster._core.definitions.asset_daemon_cursor import AssetDaemonCursor

    from hrm_assets.common.layout import scan_cleaned_files
    from hrm_assets.definitions import build_definitions
    from hrm_assets.defs.common.resources import DataPaths
    from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor

    data_paths = DataPaths.from_environment()
    instance = dg.DagsterInstance.get()
    defs = build_definitions(data_paths)

    def tick() -> tuple[float, list]:
        context = dg.build_sensor_context(instance=instance, resources={"data_paths": data_paths})
        started = time.perf_counter()
        result = cleaned_files_sensor(context)
        return time.perf_counter() - started, list(result.dynamic_partitions_requests)

    with AnonPeak() as anon:
        first_seconds, requests = tick()
        first_added = sum(
            len(r.partition_keys) for r in requests if isinstance(r, dg.AddDynamicPartitionsRequest)
        )
        started = time.perf_counter()
        for request in requests:  # what the daemon does with the tick's result
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
        register_seconds = time.perf_counter() - started
        steady = [tick() for _ in range(STEADY_TICKS)]
        started = time.perf_counter()
        scanned = len(scan_cleaned_files(data_paths.cleaned_root))
        scan_seconds = time.perf_counter() - started

        started = time.perf_counter()
        recorded = record_full_build(defs, instance)
        record_seconds = time.perf_counter() - started
        asset_graph = defs.resolve_asset_graph()
        cursor = AssetDaemonCursor.empty()
        automation = []
        for evaluation_id in range(1, AUTOMATION_STEADY_TICKS + 2):
            started, cpu = time.perf_counter(), time.process_time()
            cursor, runs, stored = automation_tick(asset_graph, instance, cursor, evaluation_id)
            automation.append(
                (time.perf_counter() - started, time.process_time() - cpu, runs, stored)
            )
    return {
        "files": files,
        "scanned": scanned,
        "first_tick_seconds": first_seconds,
        "first_tick_added": first_added,
        "register_seconds": register_seconds,
        "steady_tick_seconds": [seconds for seconds, _ in steady],
        "steady_tick_requests": sum(len(found) for _, found in steady),
        "scan_seconds": scan_seconds,
        "recorded_events": recorded,
        "record_seconds": record_seconds,
        "automation_first_tick_seconds": automation[0][0],
        "automation_steady_tick_seconds": [tick[0] for tick in automation[1:]],
        # CPU seconds too: on a busy machine the wall time also counts waiting for a core.
        "automation_tick_cpu_seconds": [tick[1] for tick in automation],
        "automation_runs_requested": sum(tick[2] for tick in automation),
        "automation_evaluations_stored": [tick[3] for tick in automation],
        "peak_rss_bytes": peak_rss_bytes(),
        "peak_anon_bytes": anon.peak,
    }


# -- figures -----------------------------------------------------------------------------------


@dataclass
class RebuildPoint:
    partitions: int
    sample: int
    steps: list[str]
    register_seconds: float
    seconds: dict[str, list[float]]
    skipped: dict[str, int]
    checks: int
    failed_checks: int
    peak_rss_bytes: int
    peak_anon_bytes: int

    def mean(self, layer: str) -> float:
        return statistics.fmean(self.seconds[layer])

    @property
    def extrapolated(self) -> bool:
        return self.sample < self.partitions

    @property
    def rebuild_seconds(self) -> float:
        """The whole no-op rebuild: N runs (measured, or N x the mean of the sample)."""
        if not self.extrapolated:
            return sum(self.seconds["noop_run"])
        return self.partitions * self.mean("noop_run")

    @property
    def bodies(self) -> float:
        """Mean seconds of the asset body (checks included) of one partition, invoked directly."""
        return self.mean("asset_body")

    @property
    def dagster_share(self) -> float:
        """Share of a no-op run spent outside the asset body: Dagster's own."""
        run = self.mean("noop_run")
        return (run - self.bodies) / run if run else 0.0

    @property
    def all_skipped(self) -> bool:
        """Every measured partition skipped in every layer, and every check passed."""
        return self.failed_checks == 0 and all(
            count == self.sample for count in self.skipped.values()
        )


@dataclass
class SensorPoint:
    files: int
    scanned: int
    first_tick_seconds: float
    first_tick_added: int
    register_seconds: float
    steady_tick_seconds: list[float]
    steady_tick_requests: int
    scan_seconds: float
    recorded_events: int
    record_seconds: float
    automation_first_tick_seconds: float
    automation_steady_tick_seconds: list[float]
    automation_tick_cpu_seconds: list[float]
    automation_runs_requested: int
    automation_evaluations_stored: list[int]
    peak_rss_bytes: int
    peak_anon_bytes: int

    @property
    def steady_seconds(self) -> float:
        return min(self.steady_tick_seconds)

    @property
    def automation_steady_seconds(self) -> float:
        return min(self.automation_steady_tick_seconds)


@dataclass
class DagsterOverheadResult:
    rebuild: list[RebuildPoint] = field(default_factory=list)
    sensor: list[SensorPoint] = field(default_factory=list)

    @property
    def sane(self) -> bool:
        """Every no-op partition skipped, every file registered once, steady ticks empty, and
        automation requests nothing over a fully built graph."""
        return all(p.all_skipped for p in self.rebuild) and all(
            p.first_tick_added == p.files == p.scanned
            and p.steady_tick_requests == 0
            and p.automation_runs_requested == 0
            for p in self.sensor
        )

    def as_dict(self) -> dict:
        return {
            "rebuild": [
                {
                    **asdict(p),
                    "rebuild_seconds": p.rebuild_seconds,
                    "extrapolated": p.extrapolated,
                    "dagster_share": p.dagster_share,
                }
                for p in self.rebuild
            ],
            "sensor": [
                {
                    **asdict(p),
                    "steady_seconds": p.steady_seconds,
                    "automation_steady_seconds": p.automation_steady_seconds,
                }
                for p in self.sensor
            ],
            "sane": self.sane,
        }

    def rebuild_table(self) -> str:
        lines = [
            "| partitions | runs measured | no-op run (ms) | asset body (ms) | "
            "of which checks (ms) | skip check (ms) | first run (ms) | Dagster share | "
            "rebuild total (s) | "
            "peak RSS (MiB) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for p in self.rebuild:
            total = f"{p.rebuild_seconds:,.0f}" + (" (extrapolated)" if p.extrapolated else "")
            lines.append(
                f"| {p.partitions:,} | {p.sample} | {1e3 * p.mean('noop_run'):,.0f} | "
                f"{1e3 * p.mean('asset_body'):,.1f} | {1e3 * p.mean('check_bodies'):,.1f} | "
                f"{1e3 * p.mean('skip_check'):,.2f} | "
                f"{1e3 * p.mean('first_run'):,.0f} | {p.dagster_share:.0%} | {total} | "
                f"{p.peak_rss_bytes / 2**20:,.0f} |"
            )
        return "\n".join(lines)

    def sensor_table(self) -> str:
        lines = [
            "| cleaned files | first tick (s) | registering (s) | steady tick (s) | "
            "of which the scan (s) | automation first tick (s) | automation steady tick (s) | "
            "peak RSS (MiB) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for p in self.sensor:
            lines.append(
                f"| {p.files:,} | {p.first_tick_seconds:.2f} | {p.register_seconds:.2f} | "
                f"{p.steady_seconds:.2f} | {p.scan_seconds:.2f} | "
                f"{p.automation_first_tick_seconds:.2f} | {p.automation_steady_seconds:.2f} | "
                f"{p.peak_rss_bytes / 2**20:,.0f} |"
            )
        return "\n".join(lines)

    def table(self) -> str:
        parts = []
        if self.rebuild:
            parts.append(
                "No-op rebuild of tokenized/flan (per partition, means):\n\n" + self.rebuild_table()
            )
        if self.sensor:
            parts.append(
                "cleaned_files_sensor and automation_sensor ticks:\n\n" + self.sensor_table()
            )
        parts.append(
            f"- every no-op partition skipped and passed its checks, every file registered once, "
            f"automation requested nothing over the built graph: "
            f"{'yes' if self.sane else 'NO'}"
        )
        return "\n\n".join(parts)


# -- the benchmark -----------------------------------------------------------------------------


@contextlib.contextmanager
def _work_folder(work_dir: Path | None) -> Iterator[Path]:
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        yield Path(work_dir)
        return
    with tempfile.TemporaryDirectory(prefix="bench-dagster-") as temp:
        yield Path(temp)


def run_dagster_overhead_benchmark(
    partitions: Sequence[int] = DEFAULT_PARTITIONS,
    sample: int = DEFAULT_SAMPLE,
    sensor_files: Sequence[int] = DEFAULT_SENSOR_FILES,
    work_dir: Path | None = None,
    log=None,
) -> DagsterOverheadResult:
    """Measure the no-op rebuild at each partition count (``sample`` runs each, at most all)
    and the sensor tick at each file count, each point in a fresh process and a fresh
    ``DAGSTER_HOME``; returns the figures. Work files are removed once measured.
    """
    if (partitions and min(partitions) < 1) or (sensor_files and min(sensor_files) < 1):
        raise ValueError("partition and file counts must be at least 1")
    if sample < 1:
        raise ValueError("sample must be at least 1")
    result = DagsterOverheadResult()
    with _work_folder(work_dir) as work:
        for count in sorted(set(partitions)):
            point = work / f"rebuild-{count}"
            if log:
                log(f"dagster: {count:,} partitions, writing files and a tokenizer")
            write_flan_files(point / "data" / "cleaned", count)
            write_tokenizer(point / "data" / "tokenizer" / "tokenizer.json")
            prepare_home(point / "home")
            if log:
                log(f"dagster: {count:,} partitions, measuring {min(sample, count)} partition(s)")
            figures = run_child(
                "bench.dagster_overhead", ["rebuild", count, sample], _child_environment(point)
            )
            result.rebuild.append(RebuildPoint(**figures))
            shutil.rmtree(point)
        for count in sorted(set(sensor_files)):
            point = work / f"sensor-{count}"
            if log:
                log(f"dagster: sensor ticks over {count:,} cleaned files (and recording a build)")
            write_sensor_files(point / "data" / "cleaned", count)
            prepare_home(point / "home")
            figures = run_child(
                "bench.dagster_overhead", ["sensor", count], _child_environment(point)
            )
            result.sensor.append(SensorPoint(**figures))
            shutil.rmtree(point)
    return result


# -- CLI ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        kind = argv[1]
        if kind == "rebuild":
            figures = rebuild_child(int(argv[2]), int(argv[3]))
        elif kind == "sensor":
            figures = sensor_child(int(argv[2]))
        else:
            raise SystemExit(f"unknown child {kind!r}")
        print(json.dumps(figures))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.dagster_overhead", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--partitions", type=int, nargs="*", default=list(DEFAULT_PARTITIONS))
    parser.add_argument(
        "--sample",
        type=int,
        default=DEFAULT_SAMPLE,
        help="runs measured per partition count (all of them: no extrapolation)",
    )
    parser.add_argument("--sensor-files", type=int, nargs="*", default=list(DEFAULT_SENSOR_FILES))
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = run_dagster_overhead_benchmark(
        args.partitions,
        args.sample,
        args.sensor_files,
        args.work_dir,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
