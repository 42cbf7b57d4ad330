"""``python -m hrm_assets.cleaning SOURCE... [--raw-root DIR] [--out DIR] [--threads N]
[--json]``: a progress bar (rows/s, raw MB/s), a short summary per source, every file's detail
with ``--json``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from hrm_assets.cleaning.clean import DEFAULT_BATCH_SIZE, clean_source
from hrm_assets.cleaning.progress import ProgressMeter
from hrm_assets.cleaning.sources import SOURCES, SourceSpec, get_source
from hrm_assets.common import settings
from hrm_assets.common.object_mirror import mirror_tree
from hrm_assets.common.storage import ObjectRoot


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m hrm_assets.cleaning",
        description="Clean raw sources into <out>/<data_io relative path>.",
    )
    parser.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        help=f"source names, or 'all' ({', '.join(SOURCES)})",
    )
    parser.add_argument(
        "--raw-root",
        type=Path,
        default=None,
        help=f"local raw mirror (default ${settings.RAW_ROOT_ENV}; unset: the Hub)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="cleaned root (default <$HRM_DATA_ROOT>/cleaned)"
    )
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads for a columnar source's parts (default: every core; files do not change)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print each report as JSON, with every file's detail"
    )
    return parser.parse_args(argv)


def _selected(names: Iterable[str]) -> list[SourceSpec]:
    names = list(names)
    if names == ["all"]:
        return list(SOURCES.values())
    return [get_source(name) for name in names]


def main(argv: Sequence[str] | None = None) -> int:
    from tqdm import tqdm

    args = _parse_args(argv)
    try:
        specs = _selected(args.sources)
    except KeyError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    if args.batch_size < 1:
        print("error: --batch-size must be at least 1", file=sys.stderr)
        return 2
    if args.threads is not None and args.threads < 1:
        print("error: --threads must be at least 1", file=sys.stderr)
        return 2
    raw_root = args.raw_root.absolute() if args.raw_root else settings.raw_root()
    if isinstance(raw_root, ObjectRoot):
        # Read through the local working copy, refreshed by ETag (docs/STORAGE.md).
        raw_root = mirror_tree(raw_root).local
    out_root = args.out.absolute() if args.out else settings.cleaned_root()
    failed = []
    for spec in specs:
        try:
            with tqdm(desc=spec.name, unit=" rows", unit_scale=True, file=sys.stderr) as bar:
                meter = ProgressMeter(bar)
                report = clean_source(
                    spec,
                    out_root,
                    raw_root,
                    args.batch_size,
                    progress=meter.records,
                    progress_bytes=meter.raw_bytes,
                    threads=args.threads,
                )
        except (OSError, ValueError, RuntimeError) as error:
            print(f"error: {error}", file=sys.stderr)
            failed.append(spec.name)
            continue
        if args.json:
            print(json.dumps({**report.as_dict(), **report.speed()}, ensure_ascii=False))
        else:
            print(report.summary())
    if failed:
        print(f"error: {len(failed)} source(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
