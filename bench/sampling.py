"""Sampling: our sampler against data_io's algorithm and the memory-copy bound of its bytes.

``python -m bench.sampling [--tokens N ...] [--repeats R] [--work-dir DIR]`` generates a
synthetic tokenized root for each size (task folders of ``<u4`` tokens and ``<u8`` spans, as
the tokenizer writes them: FLAN-like capped and uncapped tasks, an upsampled task family, a
``drop``-mode family, rows too long for the context and responses too short to keep), then
samples it ten epochs deep, each run in a fresh process (:mod:`bench.measure`):

- ``ours``: :func:`hrm_assets.sampling.sampler.sample_tokenized`;
- ``data_io``: data_io's ``sample_tokenized.py`` algorithm, restated below (statistics computed,
  report not printed). Both must write the same bytes; the figures say whether they did;
- ``copy bound``: only moving the same bytes: every task's tokens cast into one ``.npy`` of the
  output dtype, and ``epochs x 4`` int64 arrays of the epoch's length saved, on the same
  filesystem with the same fsyncs as ours. No sampling method can do less.

Each method runs ``--repeats`` times, interleaved; a size's figure is the method's best run (on
a shared machine the least disturbed one; every run's time is kept in the JSON figures).

Targets (issue 7): ours within 2x of the copy bound, and faster than data_io, at the largest
size. Every file data_io writes must come out of ours with the same bytes (ours may add
files, such as ``manifest.json``). The work folder defaults to ``/dev/shm`` (where data_io
writes its samples, and where training reads them) when it has room, else the system's
temporary folder.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import numpy.random  # noqa: F401  (numpy imports it lazily: a start-up cost, not sampling work)
import pydantic
import yaml

from bench.measure import measured, run_child
from hrm_assets.common.npy_files import npy_layout
from hrm_assets.contracts.spans import SPAN_FIELDS
from hrm_assets.sampling.prefix_config import load_prefix_rules, rule_for
from hrm_assets.sampling.sampler import (
    filter_rows,
    load_spans,
    load_tokenizer_info,
    make_config,
    rows_per_epoch,
    sample_tokenized,
    token_dtype,
)

EPOCHS = 10
SEED = 0
CONTEXT_SIZE = 4097
MIN_RESP_LENGTH = 2
VOCAB_SIZE = 65_000  # stored as uint16: the sampler casts every token
TASKS = 200
MIN_TASKS, MIN_MEAN_ROWS = 10, 50  # tiny corpora: fewer, fuller tasks
MEAN_INST, MEAN_RESP = 100, 220  # tokens per row: GSM8K-like instructions, longer answers
LONG_ROW_SHARE = 0.005  # rows whose instruction alone nearly fills (or exceeds) the context
DEFAULT_TOKENS = (2_000_000, 8_000_000, 32_000_000)
DEFAULT_REPEATS = 3

METHODS = ("bound", "ours", "data_io")
WITHIN_BOUND_TARGET = 2.0


# -- synthetic tokenized root --------------------------------------------------------------------


def _task_name(index: int) -> str:
    family = index % 10
    if family < 5:
        return f"flan__task_{index:04d}.parquet"
    if family == 5:
        return f"flan__cot_{index:04d}.parquet"
    if family == 6:
        return f"dmmath__train-easy__topic_{index:04d}.parquet"
    if family == 7:
        return f"Platypus__set_{index:04d}.jsonl"
    return f"SYNTH__shard_{index:04d}.parquet"


def sampling_rules(rows_per_task: int) -> list[dict]:
    """The prefix rules of the synthetic root: caps, an upsampled family, drop mode.

    Caps are chosen so that an epoch never holds more rows than the filtered corpus: data_io
    sizes its epoch buffer by that count and crashes beyond it.
    """
    cap = max(1, rows_per_task // 2)
    return [
        {"prefix": "flan__cot_"},
        {"prefix": "flan__", "max_per_file": cap},
        {"prefix": "dmmath__", "long_context": "drop"},
        {"prefix": "Platypus__", "max_per_file": max(1, cap // 2), "repeat": 3},
    ]


@dataclass(frozen=True)
class Corpus:
    root: Path
    rules_path: Path
    tasks: int
    rows: int
    tokens: int
    token_bytes: int  # of the sampled tokens.npy (output dtype)
    epoch_rows: int  # rows per epoch after filtering, caps and repeats
    index_bytes: int  # of every epoch's four int64 arrays


def write_synthetic_corpus(
    work: Path, tokens: int, tasks: int = TASKS, seed: int = SEED, vocab_size: int = VOCAB_SIZE
) -> Corpus:
    """Write a tokenized root of about ``tokens`` tokens in at most ``tasks`` folders, plus its
    rules.

    Small corpora get fewer folders, so that a task holds ``MIN_MEAN_ROWS`` rows on average and
    the caps bite. Deterministic for a given seed. Task sizes vary (0.25x to 1.75x the mean).
    """
    tasks = max(MIN_TASKS, min(tasks, tokens // (MIN_MEAN_ROWS * (MEAN_INST + MEAN_RESP))))
    rng = np.random.default_rng(seed)
    root = Path(work) / "tokenized"
    root.mkdir(parents=True)
    info = {"tokenizer_path": "bench/tokenizer.json", "vocab_size": vocab_size}
    (root / "tokenizer_info.json").write_text(json.dumps(info, sort_keys=True), encoding="utf-8")
    mean_rows = max(1, tokens // (tasks * (MEAN_INST + MEAN_RESP)))
    rules_path = Path(work) / "prefix_config.yaml"
    rules_path.write_text(yaml.safe_dump(sampling_rules(mean_rows), sort_keys=False), "utf-8")
    for index in range(tasks):
        rows = max(1, int(mean_rows * rng.uniform(0.25, 1.75)))
        inst = rng.integers(1, 2 * MEAN_INST, rows)
        resp = rng.integers(0, 2 * MEAN_RESP, rows)
        long_rows = rng.random(rows) < LONG_ROW_SHARE
        inst[long_rows] = rng.integers(CONTEXT_SIZE - 400, CONTEXT_SIZE + 400, long_rows.sum())
        lengths = np.empty(2 * rows, dtype=np.int64)
        lengths[0::2], lengths[1::2] = inst, resp
        starts = np.cumsum(lengths) - lengths
        folder = root / _task_name(index)
        folder.mkdir()
        total = int(lengths.sum())
        np.save(folder / "tokens.npy", rng.integers(0, vocab_size, total, dtype=np.uint32))
        spans = {
            "inst_start": starts[0::2],
            "inst_len": inst,
            "resp_start": starts[1::2],
            "resp_len": resp,
        }
        for name, values in spans.items():
            np.save(folder / f"{name}.npy", values.astype("<u8"))
    rules = load_prefix_rules(rules_path)
    total_rows = total_tokens = epoch_rows = kept_rows = 0
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        spans, count = load_spans(folder)
        rule = rule_for(folder.name, rules)
        kept, _ = filter_rows(spans, rule, CONTEXT_SIZE, MIN_RESP_LENGTH)
        total_rows, total_tokens = total_rows + len(spans), total_tokens + count
        kept_rows += len(kept)
        epoch_rows += rows_per_epoch(rule, len(kept))
    if epoch_rows > kept_rows:
        raise ValueError(
            f"epoch of {epoch_rows} rows exceeds the {kept_rows} kept rows; "
            "data_io's algorithm would crash"
        )
    return Corpus(
        root=root,
        rules_path=rules_path,
        tasks=tasks,
        rows=total_rows,
        tokens=total_tokens,
        token_bytes=total_tokens * token_dtype(vocab_size).itemsize,
        epoch_rows=epoch_rows,
        index_bytes=EPOCHS * len(SPAN_FIELDS) * 8 * epoch_rows,
    )


# -- data_io's algorithm, restated ---------------------------------------------------------------


@dataclass
class _DataIoTask:
    name: str
    columns: dict[str, np.ndarray]  # span arrays as stored (uint64), filtered in place
    max_per_file: int | None
    long_context: str
    repeat: int
    offset: int = 0  # of the task's tokens in the concatenated file
    length: int = 0
    hits: np.ndarray | None = None
    order: np.ndarray | None = None  # the current permutation of the task's rows
    used: int = 0  # rows of ``order`` already drawn


class _DataIoMeta(pydantic.BaseModel):  # HRM-Text's V1DatasetMeta, as data_io declares it
    tokenizer_info: dict = {}
    vocab_size: int | None = None
    max_seq_len: int
    total_length: int


def _data_io_rule(name: str, rules: list[dict]) -> dict:
    """The first rule whose prefix starts ``name`` (data_io prints a warning on a second
    match and keeps the first), else the defaults."""
    for rule in rules:
        if name.startswith(rule["prefix"]):
            return rule
    return {}


def _data_io_dtype(vocab_size) -> type:
    if vocab_size is not None and vocab_size <= 255:
        return np.uint8
    if vocab_size is not None and vocab_size <= 65535:
        return np.uint16
    return np.int32


def _data_io_concatenate(tokenized: Path, output: Path, tasks: list[_DataIoTask], dtype) -> None:
    """One big memmap; a thread per task copies the task's whole tokens.npy into its slice."""
    position = 0
    for task in tasks:
        task.offset = position
        task.length = int(task.columns["inst_len"].sum() + task.columns["resp_len"].sum())
        position += task.length
    target = np.lib.format.open_memmap(
        output / "tokens.npy", mode="w+", dtype=dtype, shape=(position,)
    )

    def copy(task: _DataIoTask) -> None:
        source = np.load(tokenized / task.name / "tokens.npy", mmap_mode="r")
        target[task.offset : task.offset + task.length] = source

    with ThreadPoolExecutor(max_workers=32) as pool:
        for _ in pool.map(copy, tasks):
            pass
    target.flush()


def _data_io_filter(task: _DataIoTask, context_size: int, min_resp_length: int) -> None:
    columns = task.columns
    keep = columns["resp_len"] >= min_resp_length
    room = context_size - np.minimum(columns["inst_len"], context_size)
    if task.long_context == "truncate":
        keep &= room >= 1
        columns["resp_len"] = np.minimum(columns["resp_len"], room)
    else:
        keep &= columns["resp_len"] <= room
    for name in SPAN_FIELDS:
        columns[name] = columns[name][keep]


def _data_io_report(tasks: list[_DataIoTask]) -> dict[str, dict[str, int]]:
    """The per-category totals data_io's report prints (GLOBAL included)."""
    totals: dict[str, dict[str, int]] = {}
    for task in tasks:
        inst, resp, hits = task.columns["inst_len"], task.columns["resp_len"], task.hits
        figures = {
            "rows": len(inst),
            "tokens": int(inst.sum()) + int(resp.sum()),
            "covered_rows": int(hits.sum()),
            "covered_tokens": int((inst * hits).sum()) + int((resp * hits).sum()),
            "unique_rows": int((hits > 0).sum()),
            "unique_tokens": int((inst + resp)[hits > 0].sum()),
        }
        for category in ("GLOBAL", task.name.split("__")[0]):
            into = totals.setdefault(category, dict.fromkeys(figures, 0))
            for key, value in figures.items():
                into[key] += value
    return totals


def sample_like_data_io(
    tokenized: Path,
    output: Path,
    rules_path: Path,
    seed: int = SEED,
    epochs: int = EPOCHS,
    context_size: int = CONTEXT_SIZE,
    min_resp_length: int = MIN_RESP_LENGTH,
) -> dict[str, dict[str, int]]:
    """data_io's ``sample_tokenized.py``: same steps, same generator calls, same output bytes.

    Tokens are concatenated before filtering (filtered rows keep their tokens); the epoch
    buffer holds the filtered row count. Returns the report's category totals.
    """
    tokenized, output = Path(tokenized), Path(output)
    info = json.loads((tokenized / "tokenizer_info.json").read_text(encoding="utf-8"))
    rules = yaml.safe_load(Path(rules_path).read_text(encoding="utf-8")) or []
    tasks = []
    for folder in sorted(tokenized.iterdir()):
        if not folder.is_dir():
            continue
        rule = _data_io_rule(folder.name, rules)
        tasks.append(
            _DataIoTask(
                name=folder.name,
                columns={name: np.load(folder / f"{name}.npy") for name in SPAN_FIELDS},
                max_per_file=rule.get("max_per_file"),
                long_context=rule.get("long_context", "truncate"),
                repeat=rule.get("repeat", 1),
            )
        )
    output.mkdir(parents=True, exist_ok=True)
    _data_io_concatenate(tokenized, output, tasks, _data_io_dtype(info.get("vocab_size")))
    for task in tasks:
        _data_io_filter(task, context_size, min_resp_length)

    generator = np.random.Generator(np.random.Philox(seed=seed))
    capacity = sum(len(task.columns["inst_start"]) for task in tasks)
    epoch = {name: np.empty(capacity, dtype=np.int64) for name in SPAN_FIELDS}
    token_total = 0
    for number in range(epochs):
        filled = 0
        for task in tasks:
            rows = len(task.columns["inst_start"])
            wanted = rows if task.max_per_file is None else min(task.max_per_file, rows)
            wanted *= task.repeat
            if task.hits is None:
                task.hits = np.zeros(rows, dtype=np.int32)
            drawn = 0
            while drawn < wanted:
                if task.order is None or task.used >= len(task.order):
                    task.order = generator.permutation(len(task.columns["inst_len"]))
                    task.used = 0
                step = min(len(task.order) - task.used, wanted - drawn)
                picked = task.order[task.used : task.used + step]
                task.used += step
                drawn += step
                end = filled + step
                for name in SPAN_FIELDS:
                    values = task.columns[name][picked]
                    if name.endswith("_start"):
                        values = values + task.offset
                    epoch[name][filled:end] = values
                task.hits[picked] += 1
                filled = end
        token_total += np.sum(epoch["inst_len"][:filled]) + np.sum(epoch["resp_len"][:filled])
        shuffle = generator.permutation(filled)
        folder = output / f"epoch_{number}"
        folder.mkdir(parents=True, exist_ok=True)
        for name in SPAN_FIELDS:
            np.save(folder / f"{name}.npy", epoch[name][shuffle])
    meta = _DataIoMeta(
        tokenizer_info=info, max_seq_len=context_size, total_length=int(round(token_total / epochs))
    )
    (output / "metadata.json").write_text(meta.model_dump_json())
    return _data_io_report(tasks)


# -- the memory-copy bound ------------------------------------------------------------------------


BOUND_BLOCK = 1 << 20  # elements per read


class _Buffers(threading.local):
    def __init__(self) -> None:
        self.arrays: dict[np.dtype, np.ndarray] = {}

    def get(self, dtype: np.dtype, count: int) -> np.ndarray:
        if dtype not in self.arrays:
            self.arrays[dtype] = np.empty(BOUND_BLOCK, dtype=dtype)
        return self.arrays[dtype][:count]


def _copy_tokens(fd: int, base: int, dtype: np.dtype, buffers: _Buffers, task: tuple) -> None:
    """Read one task's tokens block by block, cast each block, write it at its place."""
    path, first = task
    source_dtype, count, offset = npy_layout(path)
    with open(path, "rb", buffering=0) as source:
        source.seek(offset)
        for start in range(0, count, BOUND_BLOCK):
            raw = buffers.get(source_dtype, min(BOUND_BLOCK, count - start))
            source.readinto(memoryview(raw).cast("B"))
            cast = buffers.get(dtype, len(raw))
            np.copyto(cast, raw, casting="unsafe")
            os.pwrite(fd, memoryview(cast).cast("B"), base + (first + start) * dtype.itemsize)


def copy_bound(
    tokenized: Path, output: Path, epoch_rows: int, epochs: int = EPOCHS, workers: int | None = None
) -> int:
    """Move the bytes a sample consists of and nothing else; returns the bytes written.

    Each task's ``tokens.npy`` is read in blocks into reused buffers, cast to the output dtype
    and written at its offset in one output ``.npy`` (a thread per core; plain reads and writes
    cost less than memory maps' page faults), then ``epochs`` folders of four int64 arrays of
    ``epoch_rows`` are saved. Every file is fsynced, as the sampler does.
    """
    tokenized, output = Path(tokenized), Path(output)
    dtype = token_dtype(load_tokenizer_info(tokenized).get("vocab_size"))
    paths = [p / "tokens.npy" for p in sorted(tokenized.iterdir()) if p.is_dir()]
    counts = [npy_layout(path)[1] for path in paths]
    firsts = np.cumsum([0] + counts).tolist()
    output.mkdir(parents=True)
    destination = output / "tokens.npy"
    with open(destination, "wb") as handle:
        np.lib.format.write_array_header_1_0(
            handle, {"descr": dtype.str, "fortran_order": False, "shape": (firsts[-1],)}
        )
        base = handle.tell()
    fd = os.open(destination, os.O_WRONLY)
    try:
        copy = partial(_copy_tokens, fd, base, dtype, _Buffers())
        with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
            for _ in pool.map(copy, zip(paths, firsts, strict=False)):
                pass
        os.fsync(fd)
    finally:
        os.close(fd)
    written = firsts[-1] * dtype.itemsize
    values = np.arange(epoch_rows, dtype=np.int64)
    for number in range(epochs):
        folder = output / f"epoch_{number}"
        folder.mkdir()
        for name in SPAN_FIELDS:
            with open(folder / f"{name}.npy", "wb") as handle:
                np.save(handle, values)
                handle.flush()
                os.fsync(handle.fileno())
            written += values.nbytes
    return written


def sample_with_ours(tokenized: Path, output: Path, rules_path: Path) -> int:
    """Our sampler with data_io's defaults; returns the sampled epoch's rows."""
    config = make_config(
        tokenized_path=tokenized,
        output_path=output,
        prefix_config_path=rules_path,
        seed=SEED,
        epochs=EPOCHS,
        context_size=CONTEXT_SIZE,
        min_resp_length=MIN_RESP_LENGTH,
    )
    return sample_tokenized(config).epoch_rows[0]


def run_child_method(
    method: str, corpus_root: Path, output: Path, rules_path: Path, epoch_rows: int
) -> dict:
    """One measured run of ``method`` in this process."""
    if method == "ours":
        return measured(lambda: sample_with_ours(corpus_root, output, rules_path))
    if method == "data_io":
        return measured(lambda: sample_like_data_io(corpus_root, output, rules_path))
    if method == "bound":
        figures = measured(lambda: copy_bound(corpus_root, output, epoch_rows))
        # Ours also hashes what it wrote (manifest.json): the same hashing, timed apart.
        hashing = measured(lambda: tree_sha256(output))
        figures["hash_seconds"] = hashing["seconds"]
        figures["hash_cpu_seconds"] = hashing["cpu_seconds"]
        return figures
    raise ValueError(f"unknown method {method!r}")


# -- the benchmark -----------------------------------------------------------------------------


@dataclass
class SizeFigures:
    """One corpus size: each method's best time over the repeats (the least disturbed run on a
    shared machine; every run is in ``all_seconds``) and its highest peaks."""

    tokens: int
    tasks: int
    rows: int
    epoch_rows: int
    bytes_moved: int  # tokens.npy plus every epoch's arrays
    seconds: dict[str, float] = field(default_factory=dict)
    all_seconds: dict[str, list[float]] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # of the same best runs
    hash_seconds: float = 0.0  # SHA-256 of the bound's output (best run), wall
    hash_cpu_seconds: float = 0.0
    peak_rss_bytes: dict[str, int] = field(default_factory=dict)
    peak_anon_bytes: dict[str, int] = field(default_factory=dict)
    identical: bool | None = None  # ours wrote every file data_io writes, byte for byte
    extra_files: list[str] = field(default_factory=list)  # ours only (e.g. manifest.json)
    bound_same_tokens: bool | None = None  # the bound wrote the samplers' tokens.npy bytes

    def ratio(self, method: str, other: str, cpu: bool = False) -> float | None:
        """``method``'s time over ``other``'s (wall, or CPU seconds with ``cpu``)."""
        times = self.cpu_seconds if cpu else self.seconds
        if method not in times or other not in times or not times[other]:
            return None
        return times[method] / times[other]

    def median_ratio(self, method: str, other: str) -> float | None:
        """``method``'s median time over ``other``'s, over all their runs: less sensitive than
        the best runs to one unusually quick run on a shared machine."""
        if not self.all_seconds.get(method) or not self.all_seconds.get(other):
            return None
        return statistics.median(self.all_seconds[method]) / statistics.median(
            self.all_seconds[other]
        )

    def over_hashed_bound(self, cpu: bool = False) -> float | None:
        """Ours over the copy bound plus SHA-256 of the same bytes: the least work of a sample
        that also writes manifest.json."""
        times = self.cpu_seconds if cpu else self.seconds
        if "ours" not in times or "bound" not in times:
            return None
        floor = times["bound"] + (self.hash_cpu_seconds if cpu else self.hash_seconds)
        return times["ours"] / floor if floor else None


@dataclass
class SamplingBenchResult:
    sizes: list[SizeFigures]
    repeats: int
    work_filesystem: str
    epochs: int = EPOCHS

    @property
    def largest(self) -> SizeFigures:
        return self.sizes[-1]

    @property
    def within_bound(self) -> float | None:
        """Ours over the copy bound at the largest size (target: at most 2)."""
        return self.largest.ratio("ours", "bound")

    @property
    def within_bound_by_medians(self) -> float | None:
        """Ours over the copy bound at the largest size, median runs (no target: for reading)."""
        return self.largest.median_ratio("ours", "bound")

    @property
    def within_hashed_bound(self) -> float | None:
        """Ours over copy bound + hashing at the largest size (no target: for reading)."""
        return self.largest.over_hashed_bound()

    @property
    def speedup_vs_data_io(self) -> float | None:
        """data_io's time over ours at the largest size (target: above 1)."""
        return self.largest.ratio("data_io", "ours")

    @property
    def outputs_identical(self) -> bool | None:
        checked = [s.identical for s in self.sizes if s.identical is not None]
        return all(checked) if checked else None

    @property
    def meets_target(self) -> bool:
        within, speedup = self.within_bound, self.speedup_vs_data_io
        return (
            within is not None
            and within <= WITHIN_BOUND_TARGET
            and speedup is not None
            and speedup > 1
            and self.outputs_identical is True
        )

    def as_dict(self) -> dict:
        return {
            "sizes": [asdict(s) for s in self.sizes],
            "repeats": self.repeats,
            "epochs": self.epochs,
            "work_filesystem": self.work_filesystem,
            "within_bound": self.within_bound,
            "within_bound_by_medians": self.within_bound_by_medians,
            "within_hashed_bound": self.within_hashed_bound,
            "speedup_vs_data_io": self.speedup_vs_data_io,
            "outputs_identical": self.outputs_identical,
            "meets_target": self.meets_target,
        }

    def table(self) -> str:
        """The scale curve as a Markdown table plus the verdict lines."""
        lines = [
            "| tokens | rows | epoch rows | MB moved | method | seconds | GB/s | CPU s | "
            "peak RSS (MiB) | peak anon (MiB) | vs bound | CPU vs bound |",
            "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for size in self.sizes:
            for method in METHODS:
                if method not in size.seconds:
                    continue
                seconds = size.seconds[method]
                rate = size.bytes_moved / seconds / 1e9 if seconds else 0.0
                ratio, cpu_ratio = size.ratio(method, "bound"), size.ratio(method, "bound", True)
                lines.append(
                    f"| {size.tokens:,} | {size.rows:,} | {size.epoch_rows:,} | "
                    f"{size.bytes_moved / 1e6:,.0f} | {method} | {seconds:.3f} | {rate:.2f} | "
                    f"{size.cpu_seconds[method]:.3f} | "
                    f"{size.peak_rss_bytes[method] / 2**20:,.0f} | "
                    f"{size.peak_anon_bytes[method] / 2**20:,.0f} | "
                    f"{'' if ratio is None else f'{ratio:.2f}x'} | "
                    f"{'' if cpu_ratio is None else f'{cpu_ratio:.2f}x'} |"
                )
        lines.append("")
        if self.within_bound is not None:
            lines.append(
                f"- ours / copy bound at {self.largest.tokens:,} tokens: "
                f"{self.within_bound:.2f}x (target <= {WITHIN_BOUND_TARGET:g}x); in CPU "
                f"seconds {self.largest.ratio('ours', 'bound', True):.2f}x; median runs "
                f"{self.within_bound_by_medians:.2f}x"
            )
            top = self.largest
            lines.append(
                f"- SHA-256 of the same bytes (ours hashes them for manifest.json): "
                f"{top.hash_seconds:.3f} s, {top.hash_cpu_seconds:.3f} CPU s; ours / (copy "
                f"bound + hashing): {top.over_hashed_bound():.2f}x, in CPU seconds "
                f"{top.over_hashed_bound(True):.2f}x"
            )
        if self.speedup_vs_data_io is not None:
            lines.append(
                f"- data_io / ours at {self.largest.tokens:,} tokens: "
                f"{self.speedup_vs_data_io:.2f}x (target > 1); in CPU seconds "
                f"{self.largest.ratio('data_io', 'ours', True):.2f}x"
            )
        if self.outputs_identical is not None:
            same = "yes" if self.outputs_identical else "NO"
            lines.append(
                f"- every file data_io writes, ours writes with the same bytes, at "
                f"every size: {same}"
            )
            extra = sorted({name for size in self.sizes for name in size.extra_files})
            if extra:
                lines.append(f"- written by ours only: {', '.join(extra)}")
        bound_checks = [s.bound_same_tokens for s in self.sizes if s.bound_same_tokens is not None]
        if bound_checks:
            same = "yes" if all(bound_checks) else "NO"
            lines.append(f"- the copy bound wrote the samplers' tokens.npy bytes: {same}")
        lines.append(f"- target: {'met' if self.meets_target else 'NOT met'}")
        return "\n".join(lines)


def tree_sha256(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root``, keyed by relative path."""
    digests = {}
    for path in sorted(Path(root).rglob("*")):
        if path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for chunk in iter(lambda h=handle: h.read(1 << 20), b""):
                    digest.update(chunk)
            digests[path.relative_to(root).as_posix()] = digest.hexdigest()
    return digests


def default_work_parent(needed_bytes: int) -> Path | None:
    """``/dev/shm`` if it exists with twice ``needed_bytes`` free, else None (system temp)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        if shutil.disk_usage(shm).free > 2 * needed_bytes:
            return shm
    return None


@contextlib.contextmanager
def _work_folder(work_dir: Path | None, needed_bytes: int) -> Iterator[Path]:
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        yield Path(work_dir)
        return
    with tempfile.TemporaryDirectory(
        prefix="bench-sampling-", dir=default_work_parent(needed_bytes)
    ) as temp:
        yield Path(temp)


def _filesystem_of(path: Path) -> str:
    """The mount point and type holding ``path`` (from /proc/mounts), e.g. ``/dev/shm (tmpfs)``."""
    best = ("", "unknown")
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                parts = line.split()
                point = parts[1]
                if str(path).startswith(point.rstrip("/") + "/") and len(point) > len(best[0]):
                    best = (point, parts[2])
    except OSError:
        pass
    return f"{best[0] or '?'} ({best[1]})"


def run_sampling_benchmark(
    tokens: Sequence[int] = DEFAULT_TOKENS,
    repeats: int = DEFAULT_REPEATS,
    methods: Sequence[str] = METHODS,
    work_dir: Path | None = None,
    tasks: int = TASKS,
    log=None,
) -> SamplingBenchResult:
    """Generate a corpus per size, run each method ``repeats`` times (fresh processes,
    interleaved), check ours and data_io agree byte for byte; returns the figures.

    Files go to ``work_dir`` (default: a temporary folder, see :func:`default_work_parent`)
    and are removed once measured. ``log(message)`` reports progress.
    """
    unknown = set(methods) - set(METHODS)
    if unknown or not methods:
        raise ValueError(f"methods must be among {METHODS}, got {list(methods)}")
    if not tokens or min(tokens) < 1 or repeats < 1 or tasks < 1:
        raise ValueError("tokens, repeats and tasks must be at least 1")
    methods = [m for m in METHODS if m in methods]
    needed = max(tokens) * 4 * 4  # corpus, two outputs, index arrays: generous
    result_sizes = []
    with _work_folder(work_dir, needed) as work:
        filesystem = _filesystem_of(work.resolve())
        for size in sorted(set(tokens)):
            folder = work / f"size-{size}"
            if log:
                log(f"sampling: writing a corpus of about {size:,} tokens")
            corpus = write_synthetic_corpus(folder, size, tasks)
            figures = SizeFigures(
                tokens=corpus.tokens,
                tasks=corpus.tasks,
                rows=corpus.rows,
                epoch_rows=corpus.epoch_rows,
                bytes_moved=corpus.token_bytes + corpus.index_bytes,
            )
            digests: dict[str, dict[str, str]] = {}
            cpu_runs: dict[str, list[float]] = {}
            hash_runs: list[tuple[float, float]] = []
            for repeat in range(repeats):
                for method in methods:
                    output = folder / f"out-{method}"
                    if log:
                        log(f"sampling: {corpus.tokens:,} tokens, {method}, run {repeat + 1}")
                    child = run_child(
                        "bench.sampling",
                        [method, corpus.root, output, corpus.rules_path, corpus.epoch_rows],
                    )
                    figures.all_seconds.setdefault(method, []).append(child["seconds"])
                    cpu_runs.setdefault(method, []).append(child["cpu_seconds"])
                    if method == "bound":
                        hash_runs.append((child["hash_seconds"], child["hash_cpu_seconds"]))
                    figures.peak_rss_bytes[method] = max(
                        figures.peak_rss_bytes.get(method, 0), child["peak_rss_bytes"]
                    )
                    figures.peak_anon_bytes[method] = max(
                        figures.peak_anon_bytes.get(method, 0), child["peak_anon_bytes"]
                    )
                    if repeat == 0:
                        digests[method] = tree_sha256(output)
                    shutil.rmtree(output)
            for method, runs in figures.all_seconds.items():
                best = min(range(len(runs)), key=runs.__getitem__)
                figures.seconds[method] = runs[best]
                figures.cpu_seconds[method] = cpu_runs[method][best]
            if hash_runs:
                figures.hash_seconds, figures.hash_cpu_seconds = min(hash_runs)
            if "ours" in digests and "data_io" in digests:
                ours, theirs = digests["ours"], digests["data_io"]
                figures.identical = all(ours.get(name) == sha for name, sha in theirs.items())
                figures.extra_files = sorted(set(ours) - set(theirs))
            samplers = [digests[m] for m in ("ours", "data_io") if m in digests]
            if "bound" in digests and samplers:
                figures.bound_same_tokens = all(
                    d.get("tokens.npy") == digests["bound"]["tokens.npy"] for d in samplers
                )
            result_sizes.append(figures)
            shutil.rmtree(folder)
    return SamplingBenchResult(sizes=result_sizes, repeats=repeats, work_filesystem=filesystem)


# -- CLI ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        method, corpus_root, output, rules_path, epoch_rows = argv[1:6]
        figures = run_child_method(
            method, Path(corpus_root), Path(output), Path(rules_path), int(epoch_rows)
        )
        print(json.dumps(figures))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.sampling", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--tokens",
        type=int,
        nargs="+",
        default=list(DEFAULT_TOKENS),
        help="corpus sizes in tokens (one scale-curve point each)",
    )
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--tasks", type=int, default=TASKS)
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = run_sampling_benchmark(
        args.tokens,
        args.repeats,
        work_dir=args.work_dir,
        tasks=args.tasks,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
