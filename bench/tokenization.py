"""Tokenization benchmark (issue 7): cleaned files to the five arrays on disk, three ways.

    python -m bench.tokenization [--size-mb 64] [--vocab-size 65536] [--threads 2]
                                 [--repeats 1] [--work-dir DIR] [--json PATH]

The corpus is real-like text made from the real raw rows (GSM8K, MATH, SciBench, TheoremQA,
DeepMind mathematics; :func:`real_raw_folder`), resampled with seeded mutations so that it
does not repeat itself: numbers redrawn, words swapped for other words of the corpus (drawn by
their frequency), now and then a passage of CJK, accented or emoji text, or a special-token
string inside the text. Rows carry data_io's condition tags and are split over JSONL and Parquet
cleaned files. A byte-level BPE tokenizer (``hrm_assets.tokenizer.train``, data_io's
configuration) is trained on the corpus's first 64 MB: 65,536 tokens are requested, and about
50,000 come out at 64 MB (``min_frequency=2`` runs out of pairs in text made from ~12 MB of real
rows); the figures give the actual size.

Each method takes the same cleaned files to the same five ``.npy`` arrays per file, in a fresh
process, on the same number of threads, timed without imports or tokenizer loading:

- ``python``: the ``tokenizers`` package's ``encode_batch`` in data_io's configuration
  (``encode_special_tokens=True``, no automatic special tokens), rows read with
  ``hrm_assets.cleaning.rows``, framed in Python, arrays written with ``numpy.save``;
- ``reference``: ``hrm_assets._core.Encoder(engine="reference")``, the Rust core driving
  the ``tokenizers`` crate;
- ``fast``: ``hrm_assets._core.Encoder(engine="fast")``, the Rust core's own encoder.

The benchmark checks that the three methods wrote byte-identical arrays. It runs at three sizes
(``size_mb`` / 16, / 4 and ``size_mb``), and reports text MB/s (UTF-8 bytes of condition,
instruction and response per wall second), per core (divided by the thread count), per CPU
second, and the speedups over ``python`` measured in the same run. Targets (issue 7): fast at
least 30x ``python`` end to end, and at least 25 MB/s per core.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.arrays import ARRAYS, differing_folders
from bench.measure import REPO_ROOT, measured, run_child

METHODS = ("python", "reference", "fast")
# The fast engine's runs last about a second, where a scheduling hiccup is a large share: it
# runs at least this many times per size (the others ``repeats`` times), the best one kept.
FAST_MIN_REPEATS = 5
SPEEDUP_TARGET = 30.0
PER_CORE_TARGET_MB = 25.0
DEFAULT_VOCAB_SIZE = 65_536
TRAIN_MB = 64.0
FILES_PER_SIZE = 4  # half JSONL, half Parquet
BATCH_ROWS = 4096
CONDITIONS = ("", "cot", "direct", "noisy,cot", "synth", "cot")
Log = Callable[[str], None]


# -- corpus ---------------------------------------------------------------------------------------


def _jsonl_pairs(path: Path, question: str, answer: str) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return [(row[question], row[answer]) for row in rows]


def _json_pairs(path: Path, question: str, answers: Sequence[str]) -> list[tuple[str, str]]:
    pairs = []
    for record in json.loads(path.read_text(encoding="utf-8")):
        response = "\n".join(str(record[a]) for a in answers if record.get(a) not in (None, ""))
        if isinstance(record.get(question), str):
            pairs.append((record[question], response))
    return pairs


def real_raw_folder() -> Path:
    """The real raw rows, checked against their pinned SHA-256: the mirror ``$HRM_REAL_RAW`` or
    the cache filled from their public origins (tests/support/real_raw.py, which the tests use
    too). FileNotFoundError, saying how to provide them, when neither is there."""
    tests = str(REPO_ROOT / "tests")
    sys.path.insert(0, tests)
    try:
        from support.real_raw import RealRawUnavailable, real_raw_root
    finally:
        sys.path.remove(tests)
    try:
        return real_raw_root()
    except RealRawUnavailable as error:
        raise FileNotFoundError(f"real raw rows unavailable: {error}") from error


def real_pairs(real_raw: Path | None = None) -> list[tuple[str, str]]:
    """(instruction, response) pairs of the real rows in ``real_raw`` (default:
    :func:`real_raw_folder`)."""
    real_raw = real_raw or real_raw_folder()
    if not real_raw.is_dir():
        raise FileNotFoundError(f"real raw data not found at {real_raw} (set HRM_REAL_RAW)")
    pairs = _jsonl_pairs(real_raw / "gsm8k" / "train.jsonl", "question", "answer")
    pairs += _jsonl_pairs(real_raw / "gsm8k" / "test.jsonl", "question", "answer")
    pairs += _jsonl_pairs(real_raw / "hendrycks_math" / "test.jsonl", "problem", "solution")
    pairs += _json_pairs(
        real_raw / "theoremqa" / "theoremqa_test.json", "Question", ("explanation", "Answer")
    )
    for path in sorted((real_raw / "scibench" / "dataset" / "original").glob("*.json")):
        pairs += _json_pairs(path, "problem_text", ("solution", "answer_latex", "unit"))
    for path in sorted((real_raw / "dmmath").rglob("*.txt")):
        lines = path.read_text(encoding="utf-8").splitlines()
        pairs += list(zip(lines[0::2], lines[1::2], strict=False))
    return pairs


_NUMBER = re.compile(r"\d+")
_WORD = re.compile(r"[A-Za-z]{3,}")
_FOREIGN = (
    "小明有3个苹果，又买了5个。他现在有几个？",
    "三角形の内角の和は180度です。",
    "이차방정식의 근의 공식은 무엇입니까?",
    "Решите уравнение x² − 5x + 6 = 0.",
    "Café, naïve façade, Ångström, Straße, Ελληνικά.",
    "👍🏽 🇫🇷 👨\u200d👩\u200d👧 🙂 ✅",
    "∑ᵢ xᵢ² ≤ ∞, ∀ε>0 ∃δ, ℝⁿ → ℂ, √2 ≈ 1.414",
)
_INLINE_SPECIALS = ("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|endoftext|>")


class Mutator:
    """Seeded mutations that keep text real-like while making each copy of a row new."""

    def __init__(self, pairs: list[tuple[str, str]], seed: int = 0):
        self.rng = random.Random(seed)
        # Word occurrences, not distinct words: a swapped-in word follows the corpus's own
        # (Zipfian) frequencies, as new text would, rather than drawing rare words as often as
        # common ones.
        sample = random.Random(seed).sample(pairs, min(len(pairs), 20_000))
        self.words = [w for pair in sample for text in pair for w in _WORD.findall(text)]

    def _number(self, match: re.Match) -> str:
        digits = len(match.group())
        if self.rng.random() < 0.3:
            return match.group()
        return str(self.rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits))

    def _word(self, match: re.Match) -> str:
        return self.rng.choice(self.words) if self.rng.random() < 0.08 else match.group()

    def text(self, text: str) -> str:
        text = _WORD.sub(self._word, _NUMBER.sub(self._number, text))
        roll = self.rng.random()
        if roll < 0.05:
            cut = self.rng.randrange(len(text) + 1)
            text = f"{text[:cut]} {self.rng.choice(_FOREIGN)} {text[cut:]}"
        elif roll < 0.06:
            text = f"{text} {self.rng.choice(_INLINE_SPECIALS)}"
        return text


def corpus_rows(pairs: list[tuple[str, str]], seed: int = 0) -> Iterator[dict]:
    """An endless stream of cleaned rows: real pairs in random order, mutated."""
    mutator = Mutator(pairs, seed)
    rng = random.Random(seed + 1)
    while True:
        for index in rng.sample(range(len(pairs)), len(pairs)):
            instruction, response = pairs[index]
            yield {
                "condition": rng.choice(CONDITIONS),
                "instruction": mutator.text(instruction),
                "response": mutator.text(response),
            }


def row_bytes(row: dict) -> int:
    return sum(len(row[key].encode("utf-8")) for key in ("condition", "instruction", "response"))


def take_rows(rows: Iterator[dict], megabytes: float) -> list[dict]:
    """Rows from ``rows`` until their text reaches ``megabytes`` (10^6 bytes)."""
    taken, total = [], 0
    while total < megabytes * 1e6:
        row = next(rows)
        taken.append(row)
        total += row_bytes(row)
    return taken


def write_cleaned_files(rows: list[dict], folder: Path, files: int = FILES_PER_SIZE) -> list[Path]:
    """Split ``rows`` over ``files`` cleaned files, alternately JSONL and Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(files):
        part = rows[index::files]
        if index % 2 == 0:
            path = folder / f"part{index}.jsonl"
            with open(path, "w", encoding="utf-8") as handle:
                for row in part:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            path = folder / f"part{index}.parquet"
            schema = pa.schema([(k, pa.string()) for k in ("condition", "instruction", "response")])
            pq.write_table(pa.Table.from_pylist(part, schema=schema), path)
        paths.append(path)
    return paths


# -- the three methods (in a child process) --------------------------------------------------------


def _python_method(tokenizer_path: Path, files: list[Path], out: Path, threads: int) -> dict:
    """data_io's configuration with the Python ``tokenizers`` package; returns the figures."""
    import numpy as np
    from tokenizers import Tokenizer

    from hrm_assets.cleaning.rows import iter_cleaned_rows
    from hrm_assets.contracts.framing import Framing, split_condition

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.encode_special_tokens = True
    framing = Framing()
    boq, eoq, eoa = (tokenizer.token_to_id(t) for t in (framing.boq, framing.eoq, framing.eoa))
    tags = {tag: tokenizer.token_to_id(token) for tag, token in framing.conditions.items()}

    def encode(texts: list[str]) -> list[list[int]]:
        return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]

    def work() -> dict:
        totals = {"rows": 0, "tokens": 0}
        for path in files:
            tokens: list[int] = []
            spans: dict[str, list[int]] = {k: [] for k in ARRAYS[1:]}
            rows = iter_cleaned_rows(path)
            while True:
                batch = [row for _, row in zip(range(BATCH_ROWS), rows, strict=False)]
                if not batch:
                    break
                instructions = encode([row.instruction for row in batch])
                responses = encode([row.response for row in batch])
                for row, inst, resp in zip(batch, instructions, responses, strict=True):
                    start = len(tokens)
                    tokens.append(boq)
                    tokens.extend(tags[tag] for tag in split_condition(row.condition))
                    tokens.extend(inst)
                    tokens.append(eoq)
                    spans["inst_start"].append(start)
                    spans["inst_len"].append(len(tokens) - start)
                    start = len(tokens)
                    tokens.extend(resp)
                    tokens.append(eoa)
                    spans["resp_start"].append(start)
                    spans["resp_len"].append(len(tokens) - start)
                totals["rows"] += len(batch)
            folder = out / path.name
            folder.mkdir(parents=True, exist_ok=True)
            np.save(folder / "tokens.npy", np.array(tokens, dtype="<u4"))
            for name, values in spans.items():
                np.save(folder / f"{name}.npy", np.array(values, dtype="<u8"))
            totals["tokens"] += len(tokens)
        return totals

    return measured(work)


def _rust_method(
    tokenizer_path: Path, files: list[Path], out: Path, threads: int, engine: str
) -> dict:
    from hrm_assets import _core
    from hrm_assets.contracts.framing import Framing

    framing = Framing()
    started = time.perf_counter()
    encoder = _core.Encoder(
        str(tokenizer_path), framing.boq, framing.eoq, framing.eoa, framing.conditions, engine
    )
    load_seconds = time.perf_counter() - started
    assert encoder.engine == engine, encoder.fallback_reason

    def work() -> dict:
        totals = {"rows": 0, "tokens": 0, "text_bytes": 0}
        for path in files:
            result = encoder.tokenize_file(str(path), str(out / path.name), "{}", threads)
            for key in totals:
                totals[key] += result[key]
        return totals

    figures = measured(work)
    figures["load_seconds"] = load_seconds
    return figures


def child_main(argv: Sequence[str]) -> int:
    """``--child METHOD TOKENIZER CORPUS_DIR OUT_DIR THREADS``: one timed run, JSON on stdout."""
    method, tokenizer_path, corpus, out, threads = argv
    files = sorted(p for p in Path(corpus).iterdir() if p.suffix in (".jsonl", ".parquet"))
    if method == "python":
        figures = _python_method(Path(tokenizer_path), files, Path(out), int(threads))
    else:
        figures = _rust_method(Path(tokenizer_path), files, Path(out), int(threads), method)
    print(json.dumps(figures))
    return 0


# -- the benchmark --------------------------------------------------------------------------------


@dataclass
class SizePoint:
    """One corpus size: every method's figures and whether their arrays agree."""

    megabytes: float
    rows: int
    text_bytes: int
    tokens: int
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    all_seconds: dict[str, list[float]] = field(default_factory=dict)
    peak_rss_bytes: dict[str, int] = field(default_factory=dict)
    load_seconds: dict[str, float] = field(default_factory=dict)
    identical: bool | None = None

    def mb_per_s(self, method: str) -> float:
        return self.text_bytes / 1e6 / self.seconds[method]

    def mb_per_cpu_s(self, method: str) -> float:
        return self.text_bytes / 1e6 / self.cpu_seconds[method]

    def speedup(self, method: str, over: str = "python") -> float:
        return self.seconds[over] / self.seconds[method]


@dataclass
class TokenizationResult:
    threads: int
    vocab_size: int
    vocab_requested: int
    train_seconds: float
    train_megabytes: float
    corpus_seconds: float
    sizes: list[SizePoint]

    @property
    def largest(self) -> SizePoint:
        return self.sizes[-1]

    @property
    def speedup_vs_python(self) -> float:
        return self.largest.speedup("fast")

    @property
    def fast_mb_per_s_per_core(self) -> float:
        return self.largest.mb_per_s("fast") / self.threads

    @property
    def outputs_identical(self) -> bool:
        return all(point.identical for point in self.sizes)

    @property
    def meets_targets(self) -> bool:
        return (
            self.outputs_identical
            and self.speedup_vs_python >= SPEEDUP_TARGET
            and self.fast_mb_per_s_per_core >= PER_CORE_TARGET_MB
        )

    def table(self) -> str:
        """Markdown: per size and method, time and throughput, and the speedups."""
        lines = [
            "| text MB | method | seconds | MB/s | MB/s per core | MB per CPU s "
            "| vs python | vs reference |",
            "|---:|---|---:|---:|---:|---:|---:|---:|",
        ]
        for point in self.sizes:
            for method in METHODS:
                lines.append(
                    f"| {point.text_bytes / 1e6:,.1f} | {method} | {point.seconds[method]:.2f} "
                    f"| {point.mb_per_s(method):,.1f} "
                    f"| {point.mb_per_s(method) / self.threads:,.1f} "
                    f"| {point.mb_per_cpu_s(method):,.1f} "
                    f"| {point.speedup(method):,.1f}x "
                    f"| {point.speedup(method, 'reference'):,.1f}x |"
                )
        return "\n".join(lines)

    def summary(self) -> str:
        top = self.largest
        return (
            f"fast engine, {top.text_bytes / 1e6:,.1f} MB on {self.threads} threads: "
            f"{top.mb_per_s('fast'):,.1f} MB/s ({self.fast_mb_per_s_per_core:,.1f} MB/s per "
            f"core; target {PER_CORE_TARGET_MB:g}), {self.speedup_vs_python:,.1f}x the Python "
            f"tokenizers package (target {SPEEDUP_TARGET:g}x), "
            f"{top.speedup('fast', 'reference'):,.1f}x the tokenizers crate; arrays "
            + ("identical" if self.outputs_identical else "DIFFERENT")
        )

    def as_dict(self) -> dict:
        figures = asdict(self)
        figures.update(
            speedup_vs_python=self.speedup_vs_python,
            speedup_vs_reference=self.largest.speedup("fast", "reference"),
            fast_mb_per_s=self.largest.mb_per_s("fast"),
            fast_mb_per_s_per_core=self.fast_mb_per_s_per_core,
            python_mb_per_s=self.largest.mb_per_s("python"),
            reference_mb_per_s=self.largest.mb_per_s("reference"),
            outputs_identical=self.outputs_identical,
            meets_targets=self.meets_targets,
            targets={"speedup_vs_python": SPEEDUP_TARGET, "mb_per_s_per_core": PER_CORE_TARGET_MB},
            table=self.table(),
            summary=self.summary(),
        )
        return figures


def _same_arrays(outputs: list[Path], names: list[str]) -> bool:
    return not any(differing_folders(outputs[0], other, names) for other in outputs[1:])


def train_benchmark_tokenizer(
    rows: list[dict], path: Path, vocab_size: int, megabytes: float
) -> tuple[int, float, float]:
    """Train data_io's BPE on the first ``megabytes`` of ``rows``; returns (vocab size,
    seconds, megabytes trained on)."""
    from hrm_assets.tokenizer.train import train_tokenizer, truncate_chars, vocab_size_of

    documents, total = [], 0
    for row in rows:
        if total >= megabytes * 1e6:
            break
        documents += [truncate_chars(row["instruction"]), truncate_chars(row["response"])]
        total += row_bytes(row)
    started = time.perf_counter()
    tokenizer = train_tokenizer(documents, vocab_size=vocab_size)
    seconds = time.perf_counter() - started
    tokenizer.save(str(path))
    return vocab_size_of(tokenizer), seconds, total / 1e6


def run_tokenization_benchmark(
    size_mb: float,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    threads: int | None = None,
    repeats: int = 1,
    work_dir: Path | None = None,
    log: Log | None = None,
    real_raw: Path | None = None,
) -> dict:
    """Measure the three methods at ``size_mb / 16``, ``/ 4`` and ``size_mb`` megabytes of text.

    Returns the figures (``TokenizationResult.as_dict()``: per size and method seconds, CPU
    seconds, peak RSS; the speedups and throughputs of the largest size; ``table`` in Markdown;
    ``outputs_identical``, false if any method wrote different arrays). Each method runs
    ``repeats`` times per size in fresh processes (best time kept), the fast engine at least
    ``FAST_MIN_REPEATS`` times. ``threads`` defaults to the
    machine's cores. Raises ``FileNotFoundError`` without the real raw data.
    """
    log = log or (lambda message: None)
    threads = threads or os.cpu_count() or 1
    owned = work_dir is None
    work = Path(tempfile.mkdtemp(prefix="bench-tokenization-")) if owned else Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        stream = corpus_rows(real_pairs(real_raw))
        sizes_mb = [size_mb / 16, size_mb / 4, size_mb]
        rows = take_rows(stream, sizes_mb[-1])
        corpus_seconds = time.perf_counter() - started
        log(f"tokenization: corpus of {len(rows):,} rows in {corpus_seconds:.1f} s")
        tokenizer_path = work / "tokenizer.json"
        trained, train_seconds, train_mb = train_benchmark_tokenizer(
            rows, tokenizer_path, vocab_size, min(TRAIN_MB, size_mb)
        )
        log(f"tokenization: vocab {trained:,} from {train_mb:.1f} MB ({train_seconds:.0f} s)")
        points = []
        for megabytes in sizes_mb:
            part = take_rows(iter(rows), megabytes)
            corpus = work / f"corpus-{megabytes:g}MB"
            files = write_cleaned_files(part, corpus)
            point = SizePoint(megabytes, len(part), sum(map(row_bytes, part)), 0)
            outputs = []
            for repeat in range(max(repeats, FAST_MIN_REPEATS)):
                for method in METHODS:  # interleaved, so drifting machine load hits all alike
                    if repeat >= repeats and method != "fast":
                        continue
                    out = work / "out" / f"{megabytes:g}MB-{method}-{repeat}"
                    shutil.rmtree(out, ignore_errors=True)
                    env = {"RAYON_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "true"}
                    figures = run_child(
                        "bench.tokenization",
                        [method, tokenizer_path, corpus, out, threads],
                        extra_env=env,
                    )
                    value = figures["value"]
                    point.tokens = value["tokens"]
                    if value.get("text_bytes", point.text_bytes) != point.text_bytes:
                        raise RuntimeError(f"{method} read {value['text_bytes']} text bytes")
                    point.all_seconds.setdefault(method, []).append(figures["seconds"])
                    if figures["seconds"] <= min(point.all_seconds[method]):
                        point.seconds[method] = figures["seconds"]
                        point.cpu_seconds[method] = figures["cpu_seconds"]
                        point.peak_rss_bytes[method] = figures["peak_rss_bytes"]
                        point.load_seconds[method] = figures.get("load_seconds", 0.0)
                    if repeat == 0:
                        outputs.append(out)
                    log(
                        f"tokenization: {point.text_bytes / 1e6:,.1f} MB {method}: "
                        f"{figures['seconds']:.2f} s"
                    )
            point.identical = _same_arrays(outputs, [p.name for p in files])
            shutil.rmtree(work / "out", ignore_errors=True)
            points.append(point)
        result = TokenizationResult(
            threads, trained, vocab_size, train_seconds, train_mb, corpus_seconds, points
        )
        return result.as_dict()
    finally:
        if owned:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return child_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m bench.tokenization", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--size-mb", type=float, default=64.0, help="largest size (default 64)")
    parser.add_argument("--vocab-size", type=int, default=DEFAULT_VOCAB_SIZE)
    parser.add_argument("--threads", type=int, default=None, help="default: one per core")
    parser.add_argument("--repeats", type=int, default=1, help="runs per method and size")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None, help="also save the figures here")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(f"[bench] {message}", file=sys.stderr, flush=True)

    figures = run_tokenization_benchmark(
        args.size_mb, args.vocab_size, args.threads, args.repeats, args.work_dir, log
    )
    print(figures["table"])
    print()
    print(figures["summary"])
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0 if figures["outputs_identical"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
