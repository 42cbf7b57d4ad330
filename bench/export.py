"""Benchmark of the exports (issue 19): Megatron and packed export of a sampled epoch against
copying the same bytes once, and their peak memory.

For each size a synthetic sampled folder is written (``tokens.npy`` of uint16 ids, one epoch of
rows whose instruction and response lengths are heavy-tailed like FLAN's, none longer than the
default ``context_size`` of 4,097, in shuffled order). Then, in fresh processes, interleaved,
``repeats`` times:

- ``megatron``: :func:`hrm_assets.export.export_runs.export_megatron` of the epoch;
- ``copy_megatron``: every file that export wrote, copied once (read, write, fsync) into
  another folder: the cost of moving the export's bytes with nothing else done;
- ``packed`` and ``copy_packed``: the same for :func:`export_packed`.

The exports also hash what they write (SHA-256 for ``manifest.json``), which the copies do
not: that hashing is timed apart and reported. Targets: each export within 2x of its copy;
peak memory bounded (streamed in chunks: the peak anonymous memory stays far below the bytes
written and grows with the row count, not the token count).

    python -m bench.export [--tokens N ...] [--repeats R] [--work-dir DIR] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from bench.measure import measured, run_child
from bench.sampling import default_work_parent

DEFAULT_TOKENS = (4_000_000, 16_000_000, 64_000_000)
DEFAULT_REPEATS = 3
CONTEXT_SIZE = 4097
VOCAB_SIZE = 32_000
METHODS = ("megatron", "copy_megatron", "packed", "copy_packed")
WITHIN_COPY_TARGET = 2.0
COPY_BUFFER = 1 << 22


def write_synthetic_sampled(folder: Path, tokens: int, seed: int = 0) -> int:
    """A sampled folder of about ``tokens`` tokens in one epoch; returns its row count."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    estimate = max(8, tokens // 50)  # rows average about 270 tokens: more than enough
    inst = np.clip(rng.lognormal(4.0, 1.0, estimate).astype(np.int64) + 3, 3, 3000)
    resp = np.clip(rng.lognormal(4.6, 1.1, estimate).astype(np.int64) + 1, 1, CONTEXT_SIZE)
    resp = np.minimum(resp, CONTEXT_SIZE - inst)  # the sampler's truncate rule
    ends = np.cumsum(inst + resp)
    rows = int(np.searchsorted(ends, tokens)) + 1 if ends[-1] >= tokens else len(ends)
    inst, resp = inst[:rows], resp[:rows]
    total = int((inst + resp).sum())
    np.save(folder / "tokens.npy", rng.integers(0, VOCAB_SIZE, total, dtype=np.uint16))
    inst_start = np.concatenate([[0], np.cumsum(inst + resp)[:-1]]).astype(np.int64)
    order = rng.permutation(rows)
    epoch = folder / "epoch_0"
    epoch.mkdir(exist_ok=True)
    spans = {
        "inst_start": inst_start,
        "inst_len": inst,
        "resp_start": inst_start + inst,
        "resp_len": resp,
    }
    for name, values in spans.items():
        np.save(epoch / f"{name}.npy", values[order].astype(np.int64))
    metadata = {
        "tokenizer_info": {"vocab_size": VOCAB_SIZE},
        "vocab_size": None,
        "max_seq_len": CONTEXT_SIZE,
        "total_length": total,
    }
    (folder / "metadata.json").write_text(json.dumps(metadata))
    return rows


def copy_folder(source: Path, destination: Path) -> int:
    """Copy every file of ``source`` once (read, write, fsync); returns the bytes copied."""
    destination.mkdir(parents=True, exist_ok=True)
    buffer = bytearray(COPY_BUFFER)
    view = memoryview(buffer)
    copied = 0
    for path in sorted(source.iterdir()):
        if not path.is_file():
            continue
        with open(path, "rb", buffering=0) as reader, open(destination / path.name, "wb") as out:
            while True:
                got = reader.readinto(buffer)
                if not got:
                    break
                out.write(view[:got])
                copied += got
            out.flush()
            os.fsync(out.fileno())
    return copied


def folder_sha256(folder: Path) -> int:
    """SHA-256 of every file of ``folder`` (what the exports compute for the manifest)."""
    hashed = 0
    for path in sorted(folder.iterdir()):
        if path.is_file():
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for chunk in iter(lambda h=handle: h.read(COPY_BUFFER), b""):
                    digest.update(chunk)
                    hashed += len(chunk)
    return hashed


def run_child_method(method: str, sampled: Path, output: Path) -> dict:
    """One measured run of ``method`` in this process."""
    from hrm_assets.export.export_runs import export_megatron, export_packed

    if method == "megatron":
        return measured(lambda: export_megatron(output, sampled_dir=sampled).tokens)
    if method == "packed":
        return measured(lambda: export_packed(output, sampled_dir=sampled).packing_efficiency)
    if method.startswith("copy_"):
        source = output.parent / method.removeprefix("copy_")
        figures = measured(lambda: copy_folder(source, output))
        hashing = measured(lambda: folder_sha256(source))
        figures["hash_seconds"] = hashing["seconds"]
        return figures
    raise ValueError(f"unknown method {method!r}")


@dataclass
class SizeFigures:
    tokens: int
    rows: int
    output_bytes: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    all_seconds: dict[str, list[float]] = field(default_factory=dict)
    peak_anon_bytes: dict[str, int] = field(default_factory=dict)
    peak_rss_bytes: dict[str, int] = field(default_factory=dict)
    hash_seconds: dict[str, float] = field(default_factory=dict)
    packing_efficiency: float | None = None

    def over_copy(self, kind: str) -> float | None:
        copy = self.seconds.get(f"copy_{kind}")
        return self.seconds[kind] / copy if copy else None

    def over_hashed_copy(self, kind: str) -> float | None:
        copy = self.seconds.get(f"copy_{kind}")
        if not copy:
            return None
        return self.seconds[kind] / (copy + self.hash_seconds.get(kind, 0.0))


@dataclass
class ExportBenchResult:
    repeats: int
    work_filesystem: str
    sizes: list[SizeFigures]

    @property
    def largest(self) -> SizeFigures:
        return self.sizes[-1]

    def as_dict(self) -> dict:
        return asdict(self)

    def table(self) -> str:
        lines = [
            "| tokens | rows | export | time | copy of its bytes | ratio | copy + SHA-256 "
            "| ratio | bytes written | peak anon. memory | peak RSS |",
            "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for size in self.sizes:
            for kind in ("megatron", "packed"):
                copy = size.seconds[f"copy_{kind}"]
                hashed = copy + size.hash_seconds[kind]
                lines.append(
                    f"| {size.tokens:,} | {size.rows:,} | {kind} | {size.seconds[kind]:.2f} s "
                    f"| {copy:.2f} s | {size.over_copy(kind):.2f}x | {hashed:.2f} s "
                    f"| {size.over_hashed_copy(kind):.2f}x "
                    f"| {size.output_bytes[kind] / 2**20:,.0f} MiB "
                    f"| {size.peak_anon_bytes[kind] / 2**20:,.0f} MiB "
                    f"| {size.peak_rss_bytes[kind] / 2**20:,.0f} MiB |"
                )
        return "\n".join(lines)


def _filesystem_of(path: Path) -> str:
    from bench.sampling import _filesystem_of as filesystem_of

    return filesystem_of(path)


def run_export_benchmark(
    tokens: Sequence[int] = DEFAULT_TOKENS,
    repeats: int = DEFAULT_REPEATS,
    work_dir: Path | None = None,
    log=None,
) -> ExportBenchResult:
    """Generate a sampled folder per size, run every method ``repeats`` times (fresh
    processes, interleaved); the best run of each counts. Files are removed once measured."""
    log = log or (lambda message: None)
    needed = int(max(tokens) * 2 * 14)  # tokens, Megatron export, packed export, copies
    parent = work_dir or default_work_parent(needed)
    if parent is not None:
        Path(parent).mkdir(parents=True, exist_ok=True)
    sizes = []
    with tempfile.TemporaryDirectory(prefix="bench-export-", dir=parent) as temp:
        root = Path(temp)
        filesystem = _filesystem_of(root)
        for count in tokens:
            sampled = root / "sampled"
            rows = write_synthetic_sampled(sampled, count)
            figures = SizeFigures(tokens=count, rows=rows)
            for repeat in range(repeats):
                for method in METHODS:
                    log(f"export bench: {count:,} tokens, {method}, run {repeat + 1}/{repeats}")
                    output = root / "out" / method
                    if output.exists():  # a run replacing its predecessor would also delete it
                        shutil.rmtree(output)
                    run = run_child("bench.export", [method, sampled, output])
                    figures.all_seconds.setdefault(method, []).append(run["seconds"])
                    if run["seconds"] <= min(figures.all_seconds[method]):
                        figures.seconds[method] = run["seconds"]
                        figures.cpu_seconds[method] = run["cpu_seconds"]
                        figures.peak_anon_bytes[method] = run["peak_anon_bytes"]
                        figures.peak_rss_bytes[method] = run["peak_rss_bytes"]
                        if method.startswith("copy_"):
                            figures.hash_seconds[method.removeprefix("copy_")] = run["hash_seconds"]
                    if method == "packed":
                        figures.packing_efficiency = run["value"]
                    if not method.startswith("copy_"):
                        figures.output_bytes[method] = sum(
                            path.stat().st_size for path in output.iterdir() if path.is_file()
                        )
            sizes.append(figures)
            shutil.rmtree(root / "out", ignore_errors=True)
            shutil.rmtree(sampled, ignore_errors=True)
    return ExportBenchResult(repeats=repeats, work_filesystem=filesystem, sizes=sizes)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        method, sampled, output = argv[1:4]
        print(json.dumps(run_child_method(method, Path(sampled), Path(output))))
        return 0
    parser = argparse.ArgumentParser(
        prog="python -m bench.export", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--tokens", type=int, nargs="+", default=list(DEFAULT_TOKENS))
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    result = run_export_benchmark(
        args.tokens,
        args.repeats,
        work_dir=args.work_dir,
        log=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(json.dumps(result.as_dict(), indent=2) if args.json else result.table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
