"""``python -m hrm_assets.export megatron|packed ...`` (also ``hrm-export-megatron`` and
``hrm-export-packed``): export a sampled epoch, or a whole tokenized root, for other trainers.

A summary goes to stdout, progress and warnings to stderr. Exit status: 0 done, 1 bad input or
I/O (the message names the file, row and field; nothing is written), 2 bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.export.export_runs import ExportSummary, export_megatron, export_packed
from hrm_assets.export.megatron import DEFAULT_PREFIX, IndexedDatasetError
from hrm_assets.export.output_folder import ExportError
from hrm_assets.export.row_source import RowSourceError
from hrm_assets.sampling import defaults

DESCRIPTION = "Export a sampled epoch, or a whole tokenized root, for other trainers."


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _add_source(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sampled", type=Path, metavar="DIR", help="a sampled folder (hrm-sample)")
    source.add_argument(
        "--tokenized",
        type=Path,
        metavar="DIR",
        help="a tokenized root: every row of every task, untruncated (instead of an epoch)",
    )
    parser.add_argument(
        "--epoch", type=_non_negative, default=0, help="the sampled epoch to export (default 0)"
    )
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of one command (``hrm-export-<command>``), or of both as sub-commands."""

    def megatron(parser: argparse.ArgumentParser) -> None:
        _add_source(parser)
        parser.add_argument(
            "--prefix",
            default=DEFAULT_PREFIX,
            help=f"file name prefix: PREFIX.bin, PREFIX.idx (default {DEFAULT_PREFIX})",
        )

    def packed(parser: argparse.ArgumentParser) -> None:
        _add_source(parser)
        parser.add_argument(
            "--context-size",
            type=int,
            default=None,
            help="tokens per sequence (default: the sampled folder's context_size, "
            f"or {defaults.CONTEXT_SIZE.default} for a tokenized root)",
        )
        parser.add_argument(
            "--seed", type=_non_negative, default=defaults.SEED.default, help="packing seed"
        )

    builders = {"megatron": megatron, "packed": packed}
    if command is not None:
        parser = argparse.ArgumentParser(prog=f"hrm-export-{command}", description=DESCRIPTION)
        builders[command](parser)
        parser.set_defaults(command=command)
        return parser
    parser = argparse.ArgumentParser(prog="python -m hrm_assets.export", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    builders["megatron"](
        commands.add_parser("megatron", help="Megatron-LM indexed dataset (.bin + .idx)")
    )
    builders["packed"](
        commands.add_parser("packed", help="packed sequences with loss masks (.npy)")
    )
    return parser


def render_summary(summary: ExportSummary) -> str:
    """The summary printed on stdout: figures, then every file with its size."""
    lines = [
        f"{summary.kind} export of {summary.source.get('path')}"
        + (f" epoch {summary.source['epoch']}" if "epoch" in summary.source else " (whole corpus)")
        + f" -> {summary.output}",
        f"  rows:      {summary.rows:,}",
        f"  sequences: {summary.sequences:,}",
        f"  tokens:    {summary.tokens:,} ({summary.token_dtype})",
    ]
    if summary.packing_efficiency is not None:
        lines.append(
            f"  packing:   {summary.packing_efficiency:.2%} of {summary.capacity_tokens:,} "
            f"token slots filled (context_size {summary.settings['context_size']}, "
            f"seed {summary.settings['seed']})"
        )
        if summary.overlong_rows:
            lines.append(
                f"  not packed: {summary.overlong_rows:,} row(s) longer than context_size "
                f"(overlong_rows.npy)"
            )
    for name, entry in sorted(summary.files.items()):
        lines.append(f"  {name:<32} {entry['size']:>14,} bytes")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, command: str | None = None) -> int:
    """Run an export; returns the exit status."""
    parser = build_parser(command)
    try:
        arguments = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if arguments.tokenized is not None and arguments.epoch:
        parser.print_usage(sys.stderr)
        sys.stderr.write(f"{parser.prog}: --epoch applies to --sampled only\n")
        return 2
    source = {
        "sampled_dir": arguments.sampled,
        "tokenized_dir": arguments.tokenized,
        "epoch": arguments.epoch,
        "progress": not arguments.no_progress,
    }
    try:
        if arguments.command == "megatron":
            summary = export_megatron(arguments.output, prefix=arguments.prefix, **source)
        else:
            summary = export_packed(
                arguments.output,
                context_size=arguments.context_size,
                seed=arguments.seed,
                warn=lambda message: sys.stderr.write(f"warning: {message}\n"),
                **source,
            )
    except (RowSourceError, ExportError, IndexedDatasetError, ValueError) as exc:
        sys.stderr.write(f"{parser.prog}: error: {exc}\n")
        return 1
    except OSError as exc:
        described = f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)
        sys.stderr.write(f"{parser.prog}: error: {described}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"{parser.prog}: interrupted; the previous output is unchanged\n")
        return 130
    sys.stdout.write(render_summary(summary))
    return 0


def megatron_main() -> None:
    sys.exit(main(command="megatron"))


def packed_main() -> None:
    sys.exit(main(command="packed"))
