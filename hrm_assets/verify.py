"""Check output folders against their ``manifest.json``: ``python -m hrm_assets.verify PATH...``
(console script ``hrm-verify``).

A PATH holding ``manifest.json`` or ``.npy`` arrays is one output folder (a tokenized file's
folder, a sampled folder). Any other directory is a root of outputs (a tokenized root, a folder
of sampled outputs): each of its non-hidden sub-folders is verified, and one without a manifest
fails.

Prints one line per folder (``ok`` or ``FAIL`` and the problems, each naming the file) and a
summary. Exit status: 0 when every folder is intact, 1 when any is not (or a PATH is missing or
holds no folder), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.atomic import TMP_PREFIX
from hrm_assets.manifest import MANIFEST_FILE, VerifyReport, verify_folder

PROG = "hrm-verify"


def output_folders(path: Path) -> list[Path]:
    """The folders ``path`` stands for: itself if it is an output (it has a manifest, or arrays
    directly in it, whose manifest is then reported missing), else its sub-folders (hidden ones
    too, such as the output of a hidden cleaned file; not ``.tmp-`` leftovers)."""
    path = Path(path)
    if not path.is_dir() or (path / MANIFEST_FILE).is_file() or any(path.glob("*.npy")):
        return [path]
    return sorted(
        entry
        for entry in path.iterdir()
        if entry.is_dir() and not entry.name.startswith(TMP_PREFIX)
    )


def verify_paths(paths: Sequence[Path]) -> list[VerifyReport]:
    """A :class:`VerifyReport` per output folder of each path (a failing one for an empty root)."""
    reports = []
    for path in paths:
        folders = output_folders(Path(path))
        if not folders:
            empty = VerifyReport(folder=Path(path))
            empty.problems.append(f"{path}: no {MANIFEST_FILE} and no output folders in it")
            reports.append(empty)
        reports.extend(verify_folder(folder) for folder in folders)
    return reports


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"  # pragma: no cover - the loop always returns


def render(report: VerifyReport) -> str:
    if report.ok:
        return f"ok    {report.folder} ({report.files} arrays, {_size(report.bytes)})"
    lines = [f"FAIL  {report.folder}"]
    lines += [f"      {problem}" for problem in report.problems]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Recompute the manifest.json of hrm-data output folders (sizes and SHA-256 "
        "of every array) and report any difference.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="an output folder, or a root whose sub-folders are outputs",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    args = parser.parse_args(argv)
    reports = verify_paths(args.paths)
    failed = [report for report in reports if not report.ok]
    for report in reports:
        if not (args.quiet and report.ok):
            print(render(report))
    print(
        f"{PROG}: {len(reports) - len(failed)} of {len(reports)} folder(s) intact"
        + (f", {len(failed)} failed" if failed else ""),
        file=sys.stderr,
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
