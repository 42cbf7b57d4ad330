"""constraints.txt (``make constraints``, scripts/constraints.py) against pyproject.toml: every
requirement of hrm-data[dev] is pinned, at a version its specifier accepts, and the Dagster
libraries are pinned at one matching release. A dependency added or changed in pyproject.toml
without regenerating the file fails here, instead of making ``make install`` refuse or pip
backtrack."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO_ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def pins() -> dict[str, Version]:
    found = {}
    text = (REPO_ROOT / "constraints.txt").read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        match = PIN.match(line.strip())
        assert match, f"constraints.txt:{number}: not a name==version pin: {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in found, f"constraints.txt:{number}: {name} pinned twice"
        found[name] = Version(match.group(2))
    return found


def requirements() -> list[Requirement]:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = project["dependencies"] + project["optional-dependencies"]["dev"]
    return [Requirement(text) for text in listed]


def test_every_requirement_is_pinned_at_a_version_it_accepts():
    pinned = pins()
    wrong = []
    for requirement in requirements():
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            wrong.append(f"{requirement}: not pinned")
        elif not requirement.specifier.contains(version, prereleases=True):
            wrong.append(f"{requirement}: pinned {version}")
    assert not wrong, "run `make constraints` after installing:\n" + "\n".join(wrong)


def test_the_dagster_libraries_are_one_release():
    """Dagster's core packages share a version (1.x) and its libraries the matching 0.x."""
    pinned = pins()
    dagster = {name: v for name, v in pinned.items() if re.match(r"dagster(-|$)", name)}
    core = {v for v in dagster.values() if v.major >= 1}
    libraries = {v for v in dagster.values() if v.major == 0}
    assert len(core) == 1 and len(libraries) <= 1, dagster
    (release,) = core
    assert {"dagster", "dagster-webserver", "dagster-graphql"} <= set(dagster)
    for library in libraries:  # dagster 1.13.27 goes with its libraries 0.29.27
        assert (library.minor, library.micro) == (release.minor + 16, release.micro), dagster
