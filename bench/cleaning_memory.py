"""Peak memory of cleaning one source at 1x and 10x its size: streaming vs data_io's lists.

``python -m bench.cleaning_memory [--records N] [--write]`` generates a synthetic raw source in
the GSM8K Hub schema (``openai/gsm8k/main/train-*.parquet`` under a temporary raw root, shards
of a fixed size as the Hub keeps them), then for each size cleans it in a fresh Python process:

- ``streaming``: ``hrm_assets.cleaning.clean.clean_source`` (batches from reader to writer);
- ``data_io``: data_io's approach restated (``pipe/clean_gsm8k_train.py``): ``load_dataset``
  without streaming, every row appended to a Python list, then the list written as JSONL.

Each child reports its own peak resident set (``VmHWM`` in ``/proc/self/status``, else
``ru_maxrss``), so one size's peak never hides another's. Both methods must write the same
bytes; the table says whether they did. Target (issue 3): the streaming run at 10x the rows
stays under 1.3x its 1x peak and under 2 GiB.

:func:`run_cleaning_memory_benchmark` returns the figures (for ``python -m bench``);
``--write`` also saves the table in its own marked section of ``docs/BENCHMARKS-cleaning.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.doc_sections import replace_section

REPO_ROOT = Path(__file__).resolve().parent.parent
DOC_PATH = REPO_ROOT / "docs" / "BENCHMARKS-cleaning.md"

SECTION = "cleaning_memory"
SOURCE = "gsm8k_train"
HUB_CONFIG = Path("openai") / "gsm8k" / "main"
OUTPUT = "gsm8k_train.jsonl"

DEFAULT_RECORDS = 200_000
DEFAULT_SCALES = (1, 10)
SHARD_RECORDS = 50_000  # records per raw shard: the Hub caps shard size, so 10x = 10x shards
ROW_GROUP_RECORDS = 5_000  # rows per Parquet row group in the raw shards

RSS_RATIO_TARGET = 1.3
RSS_LIMIT_BYTES = 2 * 1024**3

METHODS = ("streaming", "data_io")
_SCHEMA = pa.schema([("question", pa.string()), ("answer", pa.string())])


# -- synthetic raw source ----------------------------------------------------------------------

_NAMES = ["Maya", "Tom", "Aiko", "Lukas", "Priya", "Omar", "Sofia", "Chen", "Zoë", "José"]
_GOODS = ["apples", "stickers", "marbles", "pencils", "cookies", "stamps", "crayons", "shells"]


def synthetic_record(rng: random.Random, index: int) -> dict[str, str]:
    """One GSM8K-shaped record (about 250 + 300 characters, like the real split)."""
    name, goods = _NAMES[index % len(_NAMES)], _GOODS[rng.randrange(len(_GOODS))]
    boxes, per_box, given = rng.randint(2, 99), rng.randint(2, 99), rng.randint(1, 99)
    total = boxes * per_box
    question = (
        f"{name} buys {boxes} boxes of {goods} for the school fair. Each box holds {per_box} "
        f"{goods}. On the way, {name} meets a friend and gives away {given} {goods}, then "
        f"counts the rest twice to be sure. How many {goods} does {name} have left? (#{index})"
    )
    answer = (
        f"{name} buys {boxes} * {per_box} = <<{boxes}*{per_box}={total}>>{total} {goods} in "
        f"all.\nAfter giving {given} away, {name} has {total} - {given} = "
        f"<<{total}-{given}={total - given}>>{total - given} {goods}.\nCounting twice changes "
        f"nothing, so the answer stays the same.\n#### {total - given}"
    )
    return {"question": question, "answer": answer}


def write_synthetic_source(
    raw_root: Path,
    records: int,
    shard_records: int = SHARD_RECORDS,
    row_group_records: int = ROW_GROUP_RECORDS,
    seed: int = 0,
) -> list[Path]:
    """Write ``records`` GSM8K-schema records as Hub-style shards under ``raw_root``; memory
    holds one row group at a time. Returns the shard paths."""
    folder = Path(raw_root) / HUB_CONFIG
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    shards = max(1, -(-records // shard_records))
    paths = []
    index = 0
    for shard in range(shards):
        path = folder / f"train-{shard:05d}-of-{shards:05d}.parquet"
        end = min(records, index + shard_records)
        with pq.ParquetWriter(path, _SCHEMA) as writer:
            while index < end:
                stop = min(end, index + row_group_records)
                rows = [synthetic_record(rng, i) for i in range(index, stop)]
                writer.write_table(pa.Table.from_pylist(rows, schema=_SCHEMA))
                index = stop
        paths.append(path)
    return paths


# -- one measured run (in a fresh process) ----------------------------------------------------


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return maxrss if sys.platform == "darwin" else maxrss * 1024


def _clean_streaming(raw_root: Path, out_root: Path) -> int:
    from hrm_assets.cleaning.clean import clean_source
    from hrm_assets.cleaning.sources import get_source

    report = clean_source(get_source(SOURCE), out_root, raw_root)
    return report.rows_written


def _clean_like_data_io(raw_root: Path, out_root: Path) -> int:
    """pipe/clean_gsm8k_train.py restated over the local shards: the whole split in a list."""
    from datasets import load_dataset

    try:
        import orjson

        def dumps(obj) -> bytes:
            return orjson.dumps(obj)
    except ImportError:  # same bytes for valid strings (see hrm_assets.cleaning.clean.jsonl_line)

        def dumps(obj) -> bytes:
            return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    files = sorted(str(p) for p in (raw_root / HUB_CONFIG).glob("train-*.parquet"))
    dataset = load_dataset("parquet", data_files={"train": files}, split="train")
    result = []
    for row in dataset:
        answer = row["answer"].split("#### ")
        assert len(answer) == 2
        result.append(
            {
                "condition": "direct",
                "instruction": row["question"].strip(),
                "response": answer[-1].strip(),
            }
        )
    path = out_root / OUTPUT
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for item in result:
            handle.write(dumps(item))
            handle.write(b"\n")
    return len(result)


def run_child(method: str, raw_root: Path, out_root: Path) -> dict:
    """Clean once with ``method`` in this process; the figures as a JSON-ready dict."""
    cleaners = {"streaming": _clean_streaming, "data_io": _clean_like_data_io}
    started = time.monotonic()
    rows = cleaners[method](Path(raw_root), Path(out_root))
    seconds = time.monotonic() - started
    return {"rows": rows, "seconds": seconds, "peak_rss_bytes": peak_rss_bytes()}


# -- the benchmark -----------------------------------------------------------------------------


@dataclass
class Measurement:
    method: str
    scale: int
    records: int
    rows: int
    seconds: float
    peak_rss_bytes: int
    output_sha256: str


@dataclass
class CleaningMemoryResult:
    """Figures of one benchmark run; ``measurements`` in (scale, method) order."""

    base_records: int
    scales: tuple[int, ...]
    measurements: list[Measurement] = field(default_factory=list)
    environment: str = ""

    def get(self, method: str, scale: int) -> Measurement | None:
        for item in self.measurements:
            if item.method == method and item.scale == scale:
                return item
        return None

    def rss_ratio(self, method: str = "streaming") -> float | None:
        """Peak RSS at the largest scale over peak RSS at the smallest."""
        low, high = self.get(method, min(self.scales)), self.get(method, max(self.scales))
        if low is None or high is None or low.peak_rss_bytes == 0:
            return None
        return high.peak_rss_bytes / low.peak_rss_bytes

    @property
    def outputs_identical(self) -> bool | None:
        """Whether both methods wrote the same bytes at every scale (None: one method only)."""
        pairs = [(self.get("streaming", s), self.get("data_io", s)) for s in self.scales]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        if not pairs:
            return None
        return all(a.output_sha256 == b.output_sha256 for a, b in pairs)

    @property
    def meets_target(self) -> bool:
        """Streaming at the largest scale: under 1.3x the smallest scale's peak and 2 GiB."""
        ratio = self.rss_ratio("streaming")
        high = self.get("streaming", max(self.scales))
        return (
            ratio is not None
            and high is not None
            and ratio < RSS_RATIO_TARGET
            and high.peak_rss_bytes < RSS_LIMIT_BYTES
        )

    def as_dict(self) -> dict:
        return {
            "base_records": self.base_records,
            "scales": list(self.scales),
            "measurements": [asdict(item) for item in self.measurements],
            "rss_ratio": {m: self.rss_ratio(m) for m in METHODS},
            "outputs_identical": self.outputs_identical,
            "meets_target": self.meets_target,
            "environment": self.environment,
        }

    def table(self) -> str:
        """The figures as a Markdown table plus the verdict lines."""
        lines = [
            "| method | scale | records | rows written | seconds | peak RSS (MiB) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for item in self.measurements:
            lines.append(
                f"| {item.method} | {item.scale}x | {item.records:,} | {item.rows:,} | "
                f"{item.seconds:.1f} | {item.peak_rss_bytes / 2**20:,.0f} |"
            )
        lines.append("")
        low, high = min(self.scales), max(self.scales)
        for method in METHODS:
            ratio = self.rss_ratio(method)
            if ratio is not None:
                lines.append(f"- {method}: peak RSS {high}x / {low}x = {ratio:.2f}")
        verdict = "met" if self.meets_target else "NOT met"
        lines.append(
            f"- target (streaming: {high}x rows at < {RSS_RATIO_TARGET}x the {low}x peak RSS "
            f"and < 2 GiB): {verdict}"
        )
        if self.outputs_identical is not None:
            same = "yes" if self.outputs_identical else "NO"
            lines.append(f"- streaming and data_io outputs byte-identical: {same}")
        return "\n".join(lines)

    def markdown(self) -> str:
        return f"# Cleaning memory benchmark\n\n{self.section()}"

    def section(self) -> str:
        """The figures as the text of the benchmark's section of the cleaning doc."""
        return (
            "`python -m bench.cleaning_memory --write` (see the module docstring). Source: "
            f"`{SOURCE}` on synthetic GSM8K-schema shards of {SHARD_RECORDS:,} records "
            f"({ROW_GROUP_RECORDS:,}-row row groups); each run in a fresh process, peak RSS is "
            "the child's VmHWM.\n\n"
            f"Environment: {self.environment}\n\n{self.table()}\n"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _child_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["HF_HUB_OFFLINE"] = env["HF_DATASETS_OFFLINE"] = "1"
    env["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # data_io's Arrow cache, removed after
    env["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    env.pop("HRM_RAW_ROOT", None)
    return env


def measure(method: str, raw_root: Path, out_root: Path, work: Path) -> dict:
    """Run one cleaning in a fresh interpreter and return its figures."""
    command = [
        sys.executable,
        "-m",
        "bench.cleaning_memory",
        "--child",
        method,
        str(raw_root),
        str(out_root),
    ]
    done = subprocess.run(
        command, env=_child_env(work), cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{method} run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _environment() -> str:
    return (
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"pyarrow {pa.__version__}, {platform.system()} {platform.machine()}"
    )


def run_cleaning_memory_benchmark(
    base_records: int = DEFAULT_RECORDS,
    scales: Sequence[int] = DEFAULT_SCALES,
    methods: Sequence[str] = METHODS,
    work_dir: Path | None = None,
    shard_records: int = SHARD_RECORDS,
    log=None,
) -> CleaningMemoryResult:
    """Generate, clean and measure each scale with each method; returns the figures.

    Files go to ``work_dir`` (default: a temporary folder, removed afterwards); each scale's
    raw and cleaned files are deleted once measured. ``log(message)`` reports progress.
    """
    unknown = set(methods) - set(METHODS)
    if unknown or not methods:
        raise ValueError(f"methods must be among {METHODS}, got {list(methods)}")
    if base_records < 1 or not scales or min(scales) < 1:
        raise ValueError("base_records and every scale must be at least 1")
    result = CleaningMemoryResult(
        base_records, tuple(sorted(set(scales))), environment=_environment()
    )
    with _work_folder(work_dir) as work:
        for scale in result.scales:
            records = base_records * scale
            raw_root = work / f"raw-{scale}x"
            if log:
                log(f"{scale}x: writing {records:,} synthetic records")
            write_synthetic_source(raw_root, records, shard_records)
            for method in methods:
                out_root = work / f"cleaned-{scale}x-{method}"
                if log:
                    log(f"{scale}x: cleaning with {method}")
                figures = measure(method, raw_root, out_root, work)
                result.measurements.append(
                    Measurement(
                        method=method,
                        scale=scale,
                        records=records,
                        rows=figures["rows"],
                        seconds=figures["seconds"],
                        peak_rss_bytes=figures["peak_rss_bytes"],
                        output_sha256=_sha256(out_root / OUTPUT),
                    )
                )
                shutil.rmtree(out_root)
                shutil.rmtree(work / "hf-cache", ignore_errors=True)
            shutil.rmtree(raw_root)
    return result


@contextlib.contextmanager
def _work_folder(work_dir: Path | None) -> Iterator[Path]:
    if work_dir is not None:
        Path(work_dir).mkdir(parents=True, exist_ok=True)
        yield Path(work_dir)
        return
    with tempfile.TemporaryDirectory(prefix="bench-cleaning-") as temp:
        yield Path(temp)


# -- CLI ---------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        method, raw_root, out_root = argv[1:4]
        print(json.dumps(run_child(method, Path(raw_root), Path(out_root))))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.cleaning_memory", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--records",
        type=int,
        default=DEFAULT_RECORDS,
        help=f"records at 1x (default {DEFAULT_RECORDS:,})",
    )
    parser.add_argument("--scales", type=int, nargs="+", default=list(DEFAULT_SCALES))
    parser.add_argument(
        "--no-baseline", action="store_true", help="skip the data_io (whole list in memory) runs"
    )
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--write", action="store_true", help=f"also write {DOC_PATH}")
    args = parser.parse_args(argv)
    methods = ("streaming",) if args.no_baseline else METHODS
    result = run_cleaning_memory_benchmark(
        args.records,
        args.scales,
        methods,
        args.work_dir,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
    if args.write:
        # Its own marked section: the other benchmarks' sections of the file stay.
        replace_section(DOC_PATH, SECTION, result.section(), title="## Cleaning memory")
        print(f"wrote the {SECTION} section of {DOC_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
