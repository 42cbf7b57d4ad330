"""``hrm-verify PATH...`` (``python -m hrm_assets.checks``): output folders against their
``manifest.json``, their span rule and identity (:mod:`hrm_assets.checks.verify`).

Prints one line per folder (``ok`` or ``FAIL`` and the problems, each naming the file) and a
summary. Exit status: 0 when every folder is intact, 1 when any is not (or a PATH is missing or
holds no folder), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from hrm_assets.checks.verify import verify_paths
from hrm_assets.common.manifest import VerifyReport

PROG = "hrm-verify"


def _size(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} TB"  # pragma: no cover - the loop always returns


def render(report: VerifyReport) -> str:
    if report.ok:
        return f"ok    {report.folder} ({report.files} files, {_size(report.bytes)})"
    lines = [f"FAIL  {report.folder}"]
    lines += [f"      {problem}" for problem in report.problems]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Recompute the manifest.json of hrm-data output folders (sizes and SHA-256 "
        "of every array, and of what else HRM-Text reads) and report any difference.",
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
