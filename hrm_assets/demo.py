"""The demo raw corpus: small, deterministic, invented by the project, in the sources' raw schemas.

``python -m hrm_assets.demo RAW_DIR`` writes, for every registered source, the records of its
``demo`` generator (in ``sources/<family>.py``) laid out by its raw layout, so that
``HRM_RAW_ROOT=RAW_DIR`` makes cleaning read them instead of the Hub. A source joins the demo by
defining ``demo=`` in its spec; nothing here changes.
"""

from __future__ import annotations

import argparse
import random
import sys
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from hrm_assets.cleaning.sources import SOURCES, SourceSpec, get_source


def source_rng(spec: SourceSpec) -> random.Random:
    """A generator seeded from the source name only, so each source's corpus is reproducible
    on its own, whatever other sources are registered or selected."""
    return random.Random(zlib.crc32(spec.name.encode("utf-8")))


def write_demo_source(spec: SourceSpec, raw_dir: Path) -> list[Path]:
    """Write one source's demo records under ``raw_dir``; returns the files written."""
    parts = spec.demo(source_rng(spec))
    return spec.layout.write_parts(spec, Path(raw_dir), parts)


def write_demo_corpus(raw_dir: Path, names: Iterable[str] | None = None) -> dict[str, list[Path]]:
    """Write the demo corpus of the named sources (default: every source)."""
    specs = list(SOURCES.values()) if names is None else [get_source(name) for name in names]
    return {spec.name: write_demo_source(spec, raw_dir) for spec in specs}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hrm_assets.demo",
        description="Write the demo raw corpus, laid out as a raw root for HRM_RAW_ROOT.",
    )
    parser.add_argument("raw_dir", type=Path, metavar="RAW_DIR")
    parser.add_argument(
        "--sources",
        nargs="+",
        metavar="SOURCE",
        default=None,
        help=f"only these sources (default: all of {', '.join(SOURCES)})",
    )
    args = parser.parse_args(argv)
    raw_dir = args.raw_dir.absolute()
    try:
        written = write_demo_corpus(raw_dir, args.sources)
    except KeyError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    for name, paths in written.items():
        print(f"{name}: {len(paths)} file(s) under {raw_dir}")
    print(f"export HRM_RAW_ROOT={raw_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
