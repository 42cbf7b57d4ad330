"""Every benchmark of issue 7 in one command: ``python -m bench`` (``make bench``).

    python -m bench [--size small|medium|large|FACTOR] [--only STAGE ...] [--skip STAGE ...]
                    [--work-dir DIR] [--output PATH | --no-write] [--json PATH]

Stages, each on generated data, each at three sizes (its scale curve):

- ``tokenization``: the Rust encoder end to end against the ``tokenizers`` package's
  ``encode_batch`` in data_io's configuration (``bench/tokenization.py``);
- ``sampling``: our sampler against data_io's algorithm and the memory-copy bound
  (``bench/sampling.py``);
- ``cleaning``: streaming cleaning's peak memory against data_io's whole-list approach
  (``bench/cleaning_memory.py``);
- ``cleaning_speed``: FLAN, SYNTH, OpenMathInstruct-2, tasksource, dmmath and GSM8K (the
  ``load_dataset`` shape) cleaned by ours, data_io's scripts restated and the read-and-write
  bound: time, rows/s, MB/s, peak RSS (``bench/cleaning_speed.py``);
- ``dagster``: a no-op incremental rebuild of 2,000 tokenized partitions and a sensor tick
  over 10,000 cleaned files (``bench/dagster_overhead.py``);
- ``corpus_shape``: data_io's corpus shape (2,000+ cleaned files, heavy-tailed sizes) through
  the CLI and ``dagster asset materialize`` against the tokenizers package, the bare CLI and
  the skip checks; no-op ``cleaned/*``; sensor ticks (``bench/corpus_shape.py``; one size);
- ``export``: the Megatron and packed exports of a sampled epoch against copying the bytes
  they write once, and their peak memory (``bench/export.py``; the sampling stage's sizes);
- ``object_storage``: tokenization and sampling with every root in a bucket of an
  S3-compatible server on loopback against the same on local disk, and the bytes on the wire;
  one large file read by the Rust core's ``object_store`` against s3fs
  (``bench/object_storage.py``; one size);
- ``contamination``: the n-gram contamination and duplicate passes against tokenization of the
  same cleaned files, in the same run (``bench/contamination.py``).

``--size`` scales the data: ``small`` (factor 1, the default: a few minutes on 2 cores),
``medium`` (4), ``large`` (10), ``tiny`` (0.01, a smoke run) or any positive factor;
:func:`plan` says what each factor means per stage. The command prints the table of ratios
against the baselines measured in the same run and writes ``docs/BENCHMARKS.md`` (machine,
command, figures): every stage run replaces its own section and summary rows, and sections it
did not run (other stages, hand-written ones) are kept. It exits non-zero if a stage failed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.report import (
    DOC_PATH,
    Ratio,
    StageReport,
    growth_line,
    load_average,
    machine_info,
    markdown_document,
    merged_document,
    ratio_table,
    with_kept_sections,
)

# "tiny" is a smoke run (tests/project/test_bench.py): every stage and figure, on toy data.
SIZES = {"tiny": 0.01, "small": 1.0, "medium": 4.0, "large": 10.0}
STAGE_NAMES = (
    "tokenization",
    "sampling",
    "cleaning",
    "cleaning_speed",
    "dagster",
    "corpus_shape",
    "export",
    "object_storage",
    "contamination",
)
Log = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """What one size factor means for every stage (three points per scale curve)."""

    factor: float
    tokenization_mb: float  # text at the largest size; the curve is 1/16, 1/4 and all of it
    tokenization_repeats: int
    sampling_tokens: tuple[int, int, int]
    sampling_repeats: int
    cleaning_records: int  # at 1x; the curve is 1x, 3x, 10x
    cleaning_scales: tuple[int, int, int]
    dagster_partitions: tuple[int, int, int]
    dagster_sample: int  # no-op runs measured per partition count
    sensor_files: tuple[int, int, int]
    corpus_megabytes: float = 215.0  # corpus shape: text of the generated cleaned tree
    corpus_file_scale: float = 1.0  # its file count over data_io's (2,176 files at 1)
    corpus_cleaned_sources: tuple[str, ...] = ()  # the no-op cleaned run's; () is cleaned/*
    object_storage_mb: float = 32.0  # text of the object-storage stage's cleaned root
    object_storage_files: int = 16
    object_storage_one_file_mb: float = 100.0  # the file of its library comparison
    object_storage_repeats: int = 2


def plan(factor: float) -> Plan:
    """The sizes of every stage for a factor; factor 1 is ``small``.

    Below 1 every count shrinks (down to a tiny smoke run); from 1 up, the Dagster stage keeps
    the issue's 2,000 partitions and 10,000 files and measures more runs instead, and the
    corpus-shape stage keeps data_io's 2,176 files and grows their text (215 MB at 1). Below
    0.5 its no-op cleaned run covers two sources instead of all of them (each costs seconds).
    """
    if factor <= 0:
        raise ValueError(f"size factor must be positive, got {factor}")
    shrink = min(factor, 1.0)

    def curve(base: Sequence[float], minimum: int) -> tuple[int, int, int]:
        return tuple(max(minimum + i, round(value)) for i, value in enumerate(base))

    return Plan(
        factor=factor,
        tokenization_mb=round(64 * factor, 3),
        tokenization_repeats=2 if factor >= 0.5 else 1,
        sampling_tokens=curve([t * factor for t in (4e6, 16e6, 64e6)], 10_000),
        sampling_repeats=5 if factor >= 0.5 else 1,
        cleaning_records=max(50, round(20_000 * factor)),
        cleaning_scales=(1, 3, 10),
        dagster_partitions=curve([n * shrink for n in (500, 1_000, 2_000)], 2),
        dagster_sample=max(1, round(5 * factor)),
        sensor_files=curve([n * shrink for n in (2_500, 5_000, 10_000)], 5),
        corpus_megabytes=round(215 * factor, 3),
        corpus_file_scale=shrink,
        corpus_cleaned_sources=() if factor >= 0.5 else ("gsm8k_train", "math_train"),
        object_storage_mb=round(32 * factor, 3),
        object_storage_files=16 if factor >= 0.5 else 4,
        object_storage_one_file_mb=round(100 * factor, 3),
        object_storage_repeats=2 if factor >= 0.5 else 1,
    )


def parse_size(value: str) -> float:
    if value in SIZES:
        return SIZES[value]
    try:
        factor = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {', '.join(SIZES)} or a positive number, got {value!r}"
        ) from None
    if factor <= 0:
        raise argparse.ArgumentTypeError(f"size factor must be positive, got {value}")
    return factor


# -- stages --------------------------------------------------------------------------------------


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f} MiB"


def sampling_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.sampling import WITHIN_BOUND_TARGET, run_sampling_benchmark

    result = run_sampling_benchmark(
        p.sampling_tokens, p.sampling_repeats, work_dir=work_dir, log=log
    )
    top = result.largest
    ratios = [
        Ratio(
            figure=f"speedup over data_io's algorithm (time, {top.tokens:,} tokens, 10 epochs)",
            ours=f"{top.seconds['ours']:.2f} s",
            baseline=f"{top.seconds['data_io']:.2f} s",
            ratio=result.speedup_vs_data_io,
            target="> 1x",
            met=(result.speedup_vs_data_io or 0) > 1,
        ),
        Ratio(
            figure="time over the memory-copy bound of the same bytes",
            ours=f"{top.seconds['ours']:.2f} s",
            baseline=f"{top.seconds['bound']:.2f} s",
            ratio=result.within_bound,
            target=f"<= {WITHIN_BOUND_TARGET:g}x",
            met=(result.within_bound or float("inf")) <= WITHIN_BOUND_TARGET,
        ),
        Ratio(
            figure="the same, median runs instead of best runs",
            ours=f"{statistics.median(top.all_seconds['ours']):.2f} s",
            baseline=f"{statistics.median(top.all_seconds['bound']):.2f} s",
            ratio=result.within_bound_by_medians,
        ),
        Ratio(
            figure="time over copy bound + SHA-256 of the same bytes (ours writes manifest.json)",
            ours=f"{top.seconds['ours']:.2f} s",
            baseline=f"{top.seconds['bound'] + top.hash_seconds:.2f} s",
            ratio=result.within_hashed_bound,
        ),
        Ratio(
            figure="every data_io file written with data_io's bytes",
            ours="yes" if result.outputs_identical else "no",
            baseline="",
            ratio=None,
            target="identical",
            met=result.outputs_identical is True,
        ),
    ]
    sizes = [s.tokens for s in result.sizes]
    growth = [
        growth_line("ours, time", sizes, [s.seconds["ours"] for s in result.sizes], "time"),
        growth_line(
            "ours, peak anonymous memory",
            sizes,
            [s.peak_anon_bytes["ours"] for s in result.sizes],
            "memory",
        ),
        growth_line("data_io, time", sizes, [s.seconds["data_io"] for s in result.sizes], "time"),
    ]
    section = (
        "`bench/sampling.py`: a synthetic tokenized root (200 task folders: capped and uncapped "
        "FLAN-like tasks, an upsampled family, a drop-mode family, over-long rows and too-short "
        "responses), sampled 10 epochs deep by our "
        "`hrm_assets.sampling.sampler.sample_tokenized`, by data_io's `sample_tokenized.py` "
        "algorithm restated in the bench file, and by the copy "
        "bound (the same token bytes cast into one `.npy` plus the epochs' index arrays, with "
        "the same fsyncs, nothing else). Each method ran "
        f"{result.repeats} time(s) per size in fresh processes, interleaved; the figure is its "
        f"best run (CPU seconds: of that run, all threads). Work folder: "
        f"{result.work_filesystem}. Peak RSS counts file pages a process mapped (data_io maps "
        "its whole output); peak anonymous memory is the process's own heap and arrays. Ours "
        "also writes `manifest.json` (issue 6): the SHA-256 of every array, which the bound "
        "does not compute; the hashing of the same bytes is timed apart.\n\n"
        + result.table()
        + "\n\n"
        + "\n".join(line for line in growth if line)
    )
    return StageReport("sampling", "Sampling", ratios, section, result.as_dict())


def cleaning_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.cleaning_memory import (
        RSS_RATIO_TARGET,
        SHARD_RECORDS,
        run_cleaning_memory_benchmark,
    )

    shard = min(SHARD_RECORDS, max(10, p.cleaning_records // 4))
    result = run_cleaning_memory_benchmark(
        p.cleaning_records, p.cleaning_scales, work_dir=work_dir, shard_records=shard, log=log
    )
    low, high = min(result.scales), max(result.scales)
    ours, theirs = result.get("streaming", high), result.get("data_io", high)
    ratios = [
        Ratio(
            figure=f"peak RSS growth, {high}x rows over {low}x (streaming; baseline: data_io's)",
            ours=f"{result.rss_ratio('streaming'):.2f}x",
            baseline=f"{result.rss_ratio('data_io'):.2f}x",
            ratio=result.rss_ratio("streaming"),
            target=f"< {RSS_RATIO_TARGET:g}x and < 2 GiB",
            met=result.meets_target,
        ),
        Ratio(
            figure=f"peak RSS at {high}x rows, data_io / streaming",
            ours=_mib(ours.peak_rss_bytes),
            baseline=_mib(theirs.peak_rss_bytes),
            ratio=theirs.peak_rss_bytes / ours.peak_rss_bytes,
        ),
        Ratio(
            figure=f"time at {high}x rows, data_io / streaming",
            ours=f"{ours.seconds:.1f} s",
            baseline=f"{theirs.seconds:.1f} s",
            ratio=theirs.seconds / ours.seconds if ours.seconds else None,
        ),
    ]
    streaming = [m for m in result.measurements if m.method == "streaming"]
    growth = [
        growth_line(
            "streaming, time",
            [m.records for m in streaming],
            [m.seconds for m in streaming],
            "time",
        ),
        growth_line(
            "streaming, peak RSS",
            [m.records for m in streaming],
            [m.peak_rss_bytes for m in streaming],
            "memory",
        ),
    ]
    section = (
        "`bench/cleaning_memory.py`: the GSM8K source on synthetic Hub-schema shards of "
        f"{shard:,} records, cleaned by `hrm_assets.cleaning.clean.clean_source` (streaming) "
        "and by data_io's whole-list approach, each run in a fresh process (peak RSS: the child's "
        "VmHWM). One run per method and size.\n\n"
        + result.table()
        + "\n\n"
        + "\n".join(line for line in growth if line)
    )
    return StageReport("cleaning", "Cleaning (peak memory)", ratios, section, result.as_dict())


def dagster_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.dagster_overhead import run_dagster_overhead_benchmark

    result = run_dagster_overhead_benchmark(
        p.dagster_partitions, p.dagster_sample, p.sensor_files, work_dir=work_dir, log=log
    )
    top, tick = result.rebuild[-1], result.sensor[-1]
    skip_total = top.partitions * top.mean("skip_check")
    how = f"{top.sample} runs measured, extrapolated" if top.extrapolated else "every run"
    ratios = [
        Ratio(
            figure=f"no-op rebuild of {top.partitions:,} partitions ({how}), "
            "over the skip checks alone",
            ours=f"{top.rebuild_seconds:,.0f} s",
            baseline=f"{skip_total:,.2f} s",
            ratio=top.rebuild_seconds / skip_total if skip_total else None,
            target="measured",
        ),
        Ratio(
            figure="one no-op partition: Dagster run over its asset body (checks included) "
            "invoked directly",
            ours=f"{1e3 * top.mean('noop_run'):,.0f} ms",
            baseline=f"{1e3 * top.bodies:,.1f} ms",
            ratio=top.mean("noop_run") / top.bodies,
            target="measured",
        ),
        Ratio(
            figure=f"steady sensor tick over {tick.files:,} cleaned files, over the scan alone",
            ours=f"{tick.steady_seconds:.2f} s",
            baseline=f"{tick.scan_seconds:.2f} s",
            ratio=tick.steady_seconds / tick.scan_seconds if tick.scan_seconds else None,
            target="measured",
        ),
    ]
    counts = [pt.partitions for pt in result.rebuild]
    files = [pt.files for pt in result.sensor]
    growth = [
        growth_line(
            "no-op run per partition",
            counts,
            [pt.mean("noop_run") for pt in result.rebuild],
            "time",
        ),
        growth_line(
            "asset body per partition",
            counts,
            [pt.mean("asset_body") for pt in result.rebuild],
            "time",
        ),
        growth_line(
            "steady sensor tick", files, [pt.steady_seconds for pt in result.sensor], "time"
        ),
    ]
    section = (
        "`bench/dagster_overhead.py`, in-process execution on a fresh SQLite `DAGSTER_HOME` "
        "per point. **No-op rebuild**: N one-row cleaned FLAN files registered as dynamic "
        "partitions of `tokenized/flan` and materialized once; then the same partitions are "
        "materialized again (each run skips: same file, tokenizer and framing). Per partition: "
        "the Dagster run of job `tokenize_flan` (one step: the asset, which evaluates its two "
        "blocking checks itself), the asset body invoked directly (no run; it finds its file "
        "among the paths its partition key can name, hashes the tokenizer, skips, and runs the "
        "checks, also timed alone), and `tokenize_file`'s skip path alone (tokenizer loaded "
        "once). Dagster's share is what a run costs beyond the asset body. The asset "
        "reads `context.partition_key`, so a rebuild is one run per partition; "
        f"{top.sample} runs per point were measured, spread evenly over the keys, and the total "
        "is N times their mean where fewer than N ran. Deployed runs also pay a process launch "
        "per run: these are lower bounds. **Sensor tick**: `cleaned_files_sensor` evaluated "
        "with `dg.build_sensor_context` over cleaned files spread across five routed sources; "
        "first tick (all new), registering its partitions, then a steady tick (no change; best "
        "of two).\n\n" + result.table() + "\n\n" + "\n".join(line for line in growth if line)
    )
    return StageReport("dagster", "Dagster overhead", ratios, section, result.as_dict())


def tokenization_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.tokenization import (
        FAST_MIN_REPEATS,
        PER_CORE_TARGET_MB,
        SPEEDUP_TARGET,
        run_tokenization_benchmark,
    )

    figures = run_tokenization_benchmark(
        p.tokenization_mb, repeats=p.tokenization_repeats, work_dir=work_dir, log=log
    )
    top = figures["sizes"][-1]
    threads = figures["threads"]
    ratios = [
        Ratio(
            figure=f"end to end, cleaned files to arrays, over the tokenizers package's "
            f"encode_batch in data_io's configuration ({top['text_bytes'] / 1e6:,.0f} MB of "
            f"text, {threads} threads)",
            ours=f"{figures['fast_mb_per_s']:,.1f} MB/s",
            baseline=f"{figures['python_mb_per_s']:,.2f} MB/s",
            ratio=figures["speedup_vs_python"],
            target=f">= {SPEEDUP_TARGET:g}x",
            met=figures["speedup_vs_python"] >= SPEEDUP_TARGET,
        ),
        Ratio(
            figure="throughput per core (fast engine; baseline: the same per core)",
            ours=f"{figures['fast_mb_per_s_per_core']:,.1f} MB/s",
            baseline=f"{figures['python_mb_per_s'] / threads:,.2f} MB/s",
            ratio=None,
            target=f">= {PER_CORE_TARGET_MB:g} MB/s",
            met=figures["fast_mb_per_s_per_core"] >= PER_CORE_TARGET_MB,
        ),
        Ratio(
            figure="over the Rust core driving the tokenizers crate (reference engine)",
            ours=f"{figures['fast_mb_per_s']:,.1f} MB/s",
            baseline=f"{figures['reference_mb_per_s']:,.1f} MB/s",
            ratio=figures["speedup_vs_reference"],
        ),
        Ratio(
            figure="the three methods wrote byte-identical arrays, at every size",
            ours="yes" if figures["outputs_identical"] else "no",
            baseline="",
            ratio=None,
            target="identical",
            met=figures["outputs_identical"] is True,
        ),
    ]
    sizes = figures["sizes"]
    methods = list(sizes[0]["seconds"])
    memory = [
        "| text MB | " + " | ".join(f"{m} peak RSS (MiB)" for m in methods) + " |",
        "|---:|" + "---:|" * len(methods),
    ] + [
        f"| {size['text_bytes'] / 1e6:,.1f} | "
        + " | ".join(f"{size['peak_rss_bytes'][m] / 2**20:,.0f}" for m in methods)
        + " |"
        for size in sizes
    ]
    text = [size["text_bytes"] for size in sizes]
    growth = [
        growth_line(f"{m}, time", text, [size["seconds"][m] for size in sizes], "time")
        for m in methods
    ] + [
        growth_line(
            "fast, peak RSS", text, [size["peak_rss_bytes"]["fast"] for size in sizes], "memory"
        )
    ]
    section = (
        "`bench/tokenization.py` (see its docstring): real-like text resampled from the real "
        "raw rows (tests/support/real_raw.py), in JSONL and Parquet cleaned files, taken to the "
        "five arrays per file by the `tokenizers` package in data_io's configuration "
        "(`python`), the Rust core on the `tokenizers` crate (`reference`) and the Rust core's "
        f"own encoder (`fast`), each in a fresh process on {threads} threads, "
        f"{p.tokenization_repeats} time(s) per size, interleaved, and the fast engine (runs of "
        f"about a second) at least {FAST_MIN_REPEATS} times; the figure is each method's best run. "
        "Tokenizer: "
        f"{figures['vocab_size']:,} ids, trained on {figures['train_megabytes']:.0f} MB of the "
        "corpus.\n\n"
        + figures["table"]
        + "\n\n"
        + "\n".join(memory)
        + "\n\n- "
        + figures["summary"]
        + "\n"
        + "\n".join(line for line in growth if line)
    )
    return StageReport("tokenization", "Tokenization", ratios, section, figures)


def floor_ratios(result, commands: int) -> list[Ratio]:
    """What Dagster costs before any work (``bench/dagster_floor.py``), beside the targets it
    bounds, and the largest source's no-op through one ``dagster asset materialize``."""
    from bench.corpus_shape import NOOP_REBUILD_TARGET_SECONDS

    floor, cli = result.floor, result.cli_first["seconds"]
    ratios = [
        Ratio(
            figure=f"floor of a first build: recording every partition "
            f"({floor['records_partitions']:,}; a materialization and two check evaluations "
            "each, as the tokenized step does) in one run with no work, plus the bare CLI, "
            "over the bare CLI",
            ours=f"{floor['records_seconds'] + cli:,.1f} s",
            baseline=f"{cli:,.1f} s",
            ratio=(floor["records_seconds"] + cli) / cli,
            target="measured (bounds the 1.3x)",
        )
    ]
    if commands:
        largest, entry = max(result.dagster.sources.items(), key=lambda kv: kv[1]["partitions"])
        ratios += [
            Ratio(
                figure=f"floor of the per-source commands: {commands} x one `dagster asset "
                "materialize` whose step does nothing (best of 3), over their no-op rebuild",
                ours=f"{commands * floor['command_seconds']:,.1f} s",
                baseline=f"{result.dagster.noop_seconds:,.1f} s",
                ratio=commands * floor["command_seconds"] / result.dagster.noop_seconds,
                target="measured (bounds the 20 s)",
            ),
            Ratio(
                figure=f"no-op rebuild of the largest source (`tokenized/{largest}`, "
                f"{entry['partitions']:,} partitions) through one `dagster asset materialize "
                "--partition-range`",
                ours=f"{entry['noop_seconds']:,.1f} s",
                baseline="",
                ratio=None,
                target=f"<= {NOOP_REBUILD_TARGET_SECONDS:g} s wall",
                met=entry["noop_seconds"] <= NOOP_REBUILD_TARGET_SECONDS,
            ),
        ]
    return ratios


def corpus_shape_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.corpus_shape import (
        CLEANED_NOOP_TARGET_SECONDS,
        CLI_SPEEDUP_TARGET,
        DAGSTER_OVER_CLI_TARGET,
        NOOP_REBUILD_TARGET_SECONDS,
        corpus_table,
        dagster_table,
        run_corpus_shape_benchmark,
        timing_table,
        verdict_lines,
    )

    result = run_corpus_shape_benchmark(
        p.corpus_megabytes,
        p.corpus_file_scale,
        p.corpus_cleaned_sources,
        work_dir=work_dir,
        log=log,
    )
    corpus, d, cleaned = result.corpus, result.dagster, result.cleaned
    cli, skip = result.cli_first["seconds"], result.skip_checks["seconds"]
    shape = f"{corpus['files']:,} files, {corpus['text_bytes'] / 1e6:,.0f} MB of text"
    missing = "not available: no BackfillPolicy.single_run() on the tokenized assets yet"
    ratios = [
        Ratio(
            figure=f"CLI (`hrm-tokenize`, wall) over the tokenizers package's encode_batch in "
            f"data_io's configuration ({shape}, {result.threads} threads)",
            ours=f"{cli:,.1f} s",
            baseline=f"{result.baseline['seconds']:,.1f} s",
            ratio=result.cli_speedup,
            target=f">= {CLI_SPEEDUP_TARGET:g}x",
            met=result.cli_speedup >= CLI_SPEEDUP_TARGET,
        ),
        Ratio(
            figure="the CLI and the baseline wrote the same arrays, every file",
            ours="yes" if not result.cli_differing else "no",
            baseline="",
            ratio=None,
            target="identical",
            met=not result.cli_differing,
        ),
        Ratio(
            figure=f"first full build of every tokenized partition ({result.partitions:,}) "
            "through `dagster asset materialize --partition-range`, over the bare CLI"
            + ("" if d.available else f" ({missing})"),
            ours=f"{d.first_seconds:,.1f} s" if d.available else "not available",
            baseline=f"{cli:,.1f} s",
            ratio=result.dagster_over_cli,
            target=f"<= {DAGSTER_OVER_CLI_TARGET:g}x",
            met=None if not d.available else result.dagster_over_cli <= DAGSTER_OVER_CLI_TARGET,
        ),
        Ratio(
            figure=f"no-op rebuild of every partition ({result.partitions:,}) through the same "
            "commands, over the skip checks alone" + ("" if d.available else " (not available)"),
            ours=f"{d.noop_seconds:,.1f} s" if d.available else "not available",
            baseline=f"{skip:,.2f} s",
            ratio=d.noop_seconds / skip if d.available and skip else None,
            target=f"<= {NOOP_REBUILD_TARGET_SECONDS:g} s wall",
            met=None if not d.available else d.noop_seconds <= NOOP_REBUILD_TARGET_SECONDS,
        ),
        Ratio(
            figure=f"first full build of every tokenized partition ({result.partitions:,}) "
            "through one command (`hrm-materialize-tokenized`: each source's run, one "
            "process), over the bare CLI",
            ours=f"{result.one_command.first_seconds:,.1f} s",
            baseline=f"{cli:,.1f} s",
            ratio=result.one_command_over_cli,
            target=f"<= {DAGSTER_OVER_CLI_TARGET:g}x",
            met=result.one_command_over_cli <= DAGSTER_OVER_CLI_TARGET,
        ),
        Ratio(
            figure=f"no-op rebuild of every partition ({result.partitions:,}) through the same "
            "command, over the skip checks alone",
            ours=f"{result.one_command.noop_seconds:,.1f} s",
            baseline=f"{skip:,.2f} s",
            ratio=result.one_command.noop_seconds / skip if skip else None,
            target=f"<= {NOOP_REBUILD_TARGET_SECONDS:g} s wall",
            met=result.one_command.noop_seconds <= NOOP_REBUILD_TARGET_SECONDS,
        ),
        *floor_ratios(result, len(d.sources) if d.available else 0),
        Ratio(
            figure="CLI no-op run (wall) over the skip checks alone",
            ours=f"{result.cli_noop['seconds']:,.2f} s",
            baseline=f"{skip:,.2f} s",
            ratio=result.cli_noop["seconds"] / skip if skip else None,
            target="measured",
        ),
        Ratio(
            figure=f"no-op `{cleaned['select']}` ({len(cleaned['sources'])} assets), default "
            "executor, over the same in process",
            ours=f"{cleaned['noop']['seconds']:,.1f} s",
            baseline=f"{cleaned['inprocess_noop']['seconds']:,.1f} s",
            ratio=cleaned["noop"]["seconds"] / cleaned["inprocess_noop"]["seconds"],
            target=f"<= {CLEANED_NOOP_TARGET_SECONDS:g} s wall",
            met=cleaned["noop"]["seconds"] <= CLEANED_NOOP_TARGET_SECONDS,
        ),
        Ratio(
            figure=f"`cleaned_files_sensor` steady tick over {corpus['files']:,} files, over "
            "the scan alone",
            ours=f"{min(result.sensor['steady_tick_seconds']):,.2f} s",
            baseline=f"{result.sensor['scan_seconds']:,.2f} s",
            ratio=min(result.sensor["steady_tick_seconds"]) / result.sensor["scan_seconds"],
            target="measured",
        ),
        Ratio(
            figure=f"automation sensor tick over the graph ({result.partitions:,} tokenized "
            "partitions): steady, over the first",
            ours=f"{min(result.automation['steady_tick_seconds']):,.1f} s",
            baseline=f"{result.automation['first_tick_seconds']:,.1f} s",
            ratio=min(result.automation["steady_tick_seconds"])
            / result.automation["first_tick_seconds"],
            target="measured",
        ),
        Ratio(
            figure="peak RSS, CLI over the baseline",
            ours=_mib(result.cli_first["peak_rss_bytes"]),
            baseline=_mib(result.baseline["peak_rss_bytes"]),
            ratio=result.cli_first["peak_rss_bytes"] / result.baseline["peak_rss_bytes"],
            target="measured",
        ),
    ]
    section = (
        "`bench/corpus_shape.py` (see its docstring): a generated cleaned tree with data_io's "
        "file layout, each file named by its source's own route and checked to be a partition "
        "of its `tokenized/<source>`; rows are real raw rows (GSM8K, MATH, "
        "TheoremQA, SciBench, DeepMind mathematics), mutated so that copies differ, with each "
        f"source's condition tags. Written in {corpus['seconds']:,.0f} s; tokenizer: "
        f"{result.tokenizer['vocab_size']:,} ids trained on "
        f"{result.tokenizer['train_megabytes']:,.0f} MB of such rows. Work folder: "
        f"{result.work_filesystem}. Every command runs once, as a user types it, and its wall "
        "time includes process start-up and imports (the baseline's does not: it is timed "
        "inside its process; it encodes each file in `encode_batch` calls of up to 4,096 rows, "
        "so on this corpus, where most files hold fewer, its batches are small). Dagster runs "
        "use a fresh SQLite `DAGSTER_HOME` with the "
        "project's `dagster_home/dagster.yaml`, the files registered by "
        "`cleaned_files_sensor`, and one `dagster asset materialize -m hrm_assets.definitions "
        "--select 'key:\"tokenized/<source>\"' --partition-range FIRST...LAST` per source with "
        "files (FIRST/LAST: the first and last registered partition key), default executor. "
        "The no-op cleaned run uses the demo raw corpus (`python -m hrm_assets.demo RAW`, "
        "`HRM_RAW_ROOT=RAW`) in its own data root and instance, built once in process first. "
        "Dirty pages are written out before each timed command, and no build writes right "
        "after a mass deletion on its filesystem (each writes into a folder of its own; see "
        "the module docstring). Dagster's floor (`bench/dagster_floor.py`): a `dagster asset "
        "materialize` of a one-partition asset whose step does nothing, in process, best of 3; "
        "and one run recording every partition as the tokenized step does (a materialization "
        "and two check evaluations each) with no tokenizing or checking. "
        "Peak RSS: the process and its reaped descendants (`wait4`) for commands, "
        "`bench/measure.py` for Python children.\n\n"
        + corpus_table(corpus)
        + "\n\n"
        + timing_table(result)
        + ("\n\n" + dagster_table(d) if d.available else "")
        + "\n\n"
        + "\n".join(verdict_lines(result))
    )
    return StageReport("corpus_shape", TITLES["corpus_shape"], ratios, section, result.as_dict())


def export_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.export import WITHIN_COPY_TARGET, run_export_benchmark

    result = run_export_benchmark(
        p.sampling_tokens, min(3, p.sampling_repeats), work_dir=work_dir, log=log
    )
    top = result.largest
    ratios = []
    for kind, title in (("megatron", "Megatron export"), ("packed", "packed export")):
        ratios.append(
            Ratio(
                figure=f"{title}: time over copying its bytes once ({top.tokens:,} tokens)",
                ours=f"{top.seconds[kind]:.2f} s",
                baseline=f"{top.seconds[f'copy_{kind}']:.2f} s",
                ratio=top.over_copy(kind),
                target=f"<= {WITHIN_COPY_TARGET:g}x",
                met=(top.over_copy(kind) or float("inf")) <= WITHIN_COPY_TARGET,
            )
        )
        ratios.append(
            Ratio(
                figure=f"{title}: time over copy + SHA-256 of the same bytes (manifest.json)",
                ours=f"{top.seconds[kind]:.2f} s",
                baseline=f"{top.seconds[f'copy_{kind}'] + top.hash_seconds[kind]:.2f} s",
                ratio=top.over_hashed_copy(kind),
            )
        )
        ratios.append(
            Ratio(
                figure=f"{title}: peak anonymous memory over the bytes it wrote",
                ours=_mib(top.peak_anon_bytes[kind]),
                baseline=_mib(top.output_bytes[kind]),
                ratio=top.peak_anon_bytes[kind] / max(1, top.output_bytes[kind]),
                target="bounded (< 1x)",
                met=top.peak_anon_bytes[kind] < top.output_bytes[kind],
            )
        )
    sizes = [s.tokens for s in result.sizes]
    growth = [
        growth_line(
            f"{kind}, peak anonymous memory",
            sizes,
            [s.peak_anon_bytes[kind] for s in result.sizes],
            "memory",
        )
        for kind in ("megatron", "packed")
    ] + [
        growth_line(f"{kind}, time", sizes, [s.seconds[kind] for s in result.sizes], "time")
        for kind in ("megatron", "packed")
    ]
    efficiency = top.packing_efficiency or 0.0
    section = (
        "`bench/export.py`: a synthetic sampled folder per size (uint16 tokens, one epoch of "
        "rows with heavy-tailed instruction and response lengths, none over context_size "
        "4,097, shuffled), exported by `hrm_assets.export.export_runs.export_megatron` and "
        "`export_packed` (first-fit-decreasing into 4,097-token sequences; packing efficiency "
        f"{efficiency:.2%} at the largest size), each followed by the copy of every file it "
        "wrote, once (read, write, fsync: the cost of moving those bytes and nothing else). "
        f"Each ran {result.repeats} time(s) per size in fresh processes, interleaved; the "
        f"figure is its best run. Work folder: {result.work_filesystem}. The exports also "
        "hash every byte they write (SHA-256 for `manifest.json`), which the copy does not; "
        "that hashing is timed apart. Peak anonymous memory is the process's own heap and "
        "arrays (streamed in chunks: it follows the row count, not the bytes written).\n\n"
        + result.table()
        + "\n\n"
        + "\n".join(line for line in growth if line)
    )
    return StageReport("export", TITLES["export"], ratios, section, result.as_dict())


def object_storage_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.object_storage import stage_report

    return stage_report(
        TITLES["object_storage"],
        p.object_storage_mb,
        p.object_storage_files,
        p.object_storage_repeats,
        p.object_storage_one_file_mb,
        work_dir,
        log,
    )


def cleaning_speed_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.cleaning_speed import stage_report

    return stage_report(p.factor, work_dir, log)


def contamination_stage(p: Plan, work_dir: Path | None, log: Log) -> StageReport:
    from bench.contamination import stage_report

    return stage_report(p.factor, work_dir, log)


STAGES: dict[str, Callable[[Plan, Path | None, Log], StageReport]] = {
    "tokenization": tokenization_stage,
    "sampling": sampling_stage,
    "cleaning": cleaning_stage,
    "cleaning_speed": cleaning_speed_stage,
    "dagster": dagster_stage,
    "corpus_shape": corpus_shape_stage,
    "export": export_stage,
    "object_storage": object_storage_stage,
    "contamination": contamination_stage,
}
TITLES = {
    "tokenization": "Tokenization",
    "sampling": "Sampling",
    "cleaning": "Cleaning (peak memory)",
    "cleaning_speed": "Cleaning speed",
    "dagster": "Dagster overhead",
    "corpus_shape": "Corpus shape",
    "export": "Export (Megatron, packed)",
    "object_storage": "Object storage (S3 against local disk)",
    "contamination": "Contamination and duplicates",
}


def run_stage(
    name: str, p: Plan, work_dir: Path | None = None, log: Log | None = None
) -> StageReport:
    """Run one stage; a failure becomes the report's ``error`` (traceback on stderr)."""
    log = log or (lambda message: None)
    started = time.monotonic()
    try:
        report = STAGES[name](p, work_dir / name if work_dir else None, log)
    except Exception as exc:  # noqa: BLE001 - one failed stage must not hide the others
        traceback.print_exc()
        report = StageReport(name, TITLES[name], error=f"failed: {type(exc).__name__}: {exc}")
    report.seconds = time.monotonic() - started
    return report


# -- CLI ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size",
        type=parse_size,
        default=SIZES["small"],
        metavar="tiny|small|medium|large|FACTOR",
        help="data size (default: small)",
    )
    parser.add_argument("--only", nargs="+", choices=STAGE_NAMES, default=None)
    parser.add_argument("--skip", nargs="+", choices=STAGE_NAMES, default=[])
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where work files go (default: temporary folders); removed once measured",
    )
    parser.add_argument("--output", type=Path, default=DOC_PATH, help="Markdown report path")
    parser.add_argument("--no-write", action="store_true", help="print only, write no report")
    parser.add_argument("--json", type=Path, default=None, help="also save every figure here")
    args = parser.parse_args(argv)
    size_label = next((k for k, v in SIZES.items() if v == args.size), f"{args.size:g}")
    names = [n for n in (args.only or STAGE_NAMES) if n not in args.skip]
    p = plan(args.size)

    def log(message: str) -> None:
        print(f"[bench] {message}", file=sys.stderr, flush=True)

    command = " ".join(["python -m bench", *argv])
    machine, load_before = machine_info(), load_average()
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    clock = time.monotonic()
    reports = []
    for name in names:
        log(f"stage {name}")
        reports.append(run_stage(name, p, args.work_dir, log))
        log(
            f"stage {name}: {reports[-1].seconds:,.0f} s"
            + (f" ({reports[-1].error})" if reports[-1].error else "")
        )
    total = time.monotonic() - clock
    print(ratio_table(reports))
    if not args.no_write:
        document = markdown_document(
            command, size_label, machine, reports, started, load_before, load_average(), total
        )
        existing = args.output.read_text(encoding="utf-8") if args.output.is_file() else None
        if existing and set(names) != set(STAGE_NAMES):
            provenance = (
                f"Measured alone by `{command}` (size `{size_label}`) on {started}, commit "
                f"{machine['commit']}, load average before / after {load_before} — "
                f"{load_average()}."
            )
            document = merged_document(existing, reports, set(TITLES.values()), provenance)
        elif existing:
            document = with_kept_sections(document, existing, set(TITLES.values()))
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(document, encoding="utf-8")
        log(f"wrote {args.output}")
    if args.json:
        figures = {
            "command": command,
            "plan": asdict(p),
            "machine": machine,
            "stages": [r.as_dict() for r in reports],
        }
        args.json.write_text(json.dumps(figures, indent=2, default=str), encoding="utf-8")
    return 1 if any(r.error for r in reports) else 0


if __name__ == "__main__":
    raise SystemExit(main())
