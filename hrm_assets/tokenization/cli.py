"""data_io's tokenizer command (``hrm-tokenize``, ``python -m hrm_assets.tokenization``):

    hrm-tokenize DIR... -o OUT --tokenizer-path PATH
        [--boq T] [--eoq T] [--eoa T] [--conditions k=v,...] [--threads N]

What it does: :func:`hrm_assets.tokenization.tokenize.tokenize_tree`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.common.layout import describe_skipped_link
from hrm_assets.contracts.framing import (
    DEFAULT_BOQ,
    DEFAULT_EOA,
    DEFAULT_EOQ,
    Framing,
    parse_conditions,
)
from hrm_assets.tokenization.tokenize import TreeReport, tokenize_tree


def _summary(report: TreeReport) -> str:
    done = [o for o in report.outcomes if not o.skipped]
    skipped = len(report.outcomes) - len(done)
    rows = sum(o.rows for o in report.outcomes)
    tokens = sum(o.tokens for o in report.outcomes)
    nulls = sum(o.nulls for o in report.outcomes)
    null_text = f", {nulls:,} Parquet null(s) read as empty strings" if nulls else ""
    mb = sum(o.bytes for o in done) / 1e6
    rate = f", {mb / report.seconds:.1f} MB/s" if done and report.seconds > 0 else ""
    symlink_text = f" and {len(report.symlinks)} symlinked" if report.symlinks else ""
    return (
        f"tokenized {len(done)} file(s), skipped {skipped} unchanged{symlink_text}, pruned "
        f"{len(report.pruned)}, failed {len(report.failures)}: {rows:,} rows, {tokens:,} tokens"
        f"{null_text} in {report.seconds:.1f} s{rate}"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hrm-tokenize",
        description="Tokenize cleaned JSONL/Parquet files into data_io's tokenized folders.",
    )
    parser.add_argument("dirs", nargs="+", type=Path, help="cleaned roots to scan")
    parser.add_argument("-o", "--output-dir", required=True, type=Path)
    parser.add_argument(
        "-t", "--tokenizer-path", required=True, help="tokenizer.json, or a folder holding one"
    )
    parser.add_argument("--boq", default=DEFAULT_BOQ)
    parser.add_argument("--eoq", default=DEFAULT_EOQ)
    parser.add_argument("--eoa", default=DEFAULT_EOA)
    parser.add_argument(
        "--conditions",
        nargs="+",
        default=None,
        metavar="TAG=TOKEN[,TAG=TOKEN...]",
        help="condition tags and their tokens (default: data_io's four)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="encoding threads (default: all cores)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--allow-empty-input",
        action="store_true",
        help="inputs with no cleaned file are meant: prune every tokenized folder (without it, "
        "such inputs are refused)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be at least 1", file=sys.stderr)
        return 2
    try:
        framing_args = dict(boq=args.boq, eoq=args.eoq, eoa=args.eoa)
        if args.conditions is not None:
            framing_args["conditions"] = parse_conditions(args.conditions)
        framing = Framing(**framing_args)
        report = tokenize_tree(
            args.dirs,
            args.output_dir,
            args.tokenizer_path,
            framing,
            threads=args.threads,
            progress=not args.no_progress,
            allow_empty_input=args.allow_empty_input,
        )
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for name in report.swept:
        print(f"removed {name} (left by a run that died over a day ago)", file=sys.stderr)
    for name in report.pruned:
        print(f"pruned {name} (its cleaned file is gone)", file=sys.stderr)
    for path in report.symlinks:
        print(
            f"warning: skipped {path}: {describe_skipped_link(path)} (data_io skips them too)",
            file=sys.stderr,
        )
    for outcome in report.outcomes:
        if outcome.nulls:
            print(
                f"warning: {outcome.safe_name}: {outcome.nulls:,} Parquet null(s) read as empty "
                "strings (as data_io reads them)",
                file=sys.stderr,
            )
    print(_summary(report), file=sys.stderr)
    for _, message in report.failures:
        print(f"error: {message}", file=sys.stderr)
    if report.failures:
        # A name that is not UTF-8 is shown escaped, as Python's own stderr would.
        names = ", ".join(
            name.encode("utf-8", "backslashreplace").decode("utf-8") for name, _ in report.failures
        )
        print(f"error: {len(report.failures)} file(s) failed: {names}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
