"""Write constraints.txt: every package hrm-data[dev] depends on, directly or not, pinned at
the version installed in this environment (``make constraints``, after a working ``make
install``). ``make install`` and CI install with ``-c constraints.txt``, so pip resolves the
whole set at once instead of backtracking over the releases of graphene, boto3/aiobotocore and
s3fs; the pins change only when this is run again and the result committed.

Only the dependency closure is written (the requirements of each installed distribution,
followed from hrm-data with its ``dev`` extra, environment markers evaluated here), not what
else the environment holds.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = "hrm-data"
EXTRAS = ("dev",)
OUTPUT = Path(__file__).resolve().parent.parent / "constraints.txt"
HEADER = """\
# Pins of every dependency of hrm-data[dev], from a working install (scripts/constraints.py,
# `make constraints`). `make install` and .ci/run install with `-c constraints.txt`, so pip
# resolves without backtracking. Python {python}.
"""


def dependency_closure(root: str, extras: tuple[str, ...]) -> dict[str, str]:
    """Canonical name -> (name, version) of every installed distribution ``root[extras]``
    requires, directly or not; a requirement that is not installed is an error."""
    found: dict[str, frozenset[str]] = {}
    todo = [(root, frozenset(extras))]
    while todo:
        name, wanted = todo.pop()
        key = canonicalize_name(name)
        if key in found and wanted <= found[key]:
            continue
        found[key] = found.get(key, frozenset()) | wanted
        for text in metadata.distribution(name).requires or []:
            requirement = Requirement(text)
            markers = [{"extra": extra} for extra in wanted] or [{"extra": ""}]
            if requirement.marker and not any(requirement.marker.evaluate(m) for m in markers):
                continue
            try:
                metadata.distribution(requirement.name)
            except metadata.PackageNotFoundError as error:
                message = f"{name} requires {requirement}, which is not installed"
                raise SystemExit(message) from error
            todo.append((requirement.name, frozenset(requirement.extras)))
    del found[canonicalize_name(root)]
    return {
        key: f"{metadata.distribution(key).metadata['Name']}=={metadata.version(key)}"
        for key in sorted(found)
    }


def main() -> int:
    pins = dependency_closure(ROOT, EXTRAS)
    python = ".".join(map(str, sys.version_info[:2]))
    text = HEADER.format(python=python) + "".join(f"{pin}\n" for pin in pins.values())
    temporary = OUTPUT.with_name(f".tmp-{OUTPUT.name}")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(OUTPUT)
    print(f"wrote {OUTPUT.name}: {len(pins)} pins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
