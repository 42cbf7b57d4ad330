"""A clone stands on its own: no tracked file refers to a folder beside the checkout (the
``shared`` folder some machines have next to it) or to an absolute path of one machine (this
checkout's own path, a user's home, a workspace mount).

One reference is allowed, and only as written: ``.ci/run`` points ``HRM_REAL_RAW`` at the mirror
of the real raw rows that CI provides beside the clone, when the variable is not set already.
Paths inside the Docker image the project defines (``/opt/dagster``, the image user's home
and the build stage's cargo folder) and scratch folders under ``/tmp`` name no one machine and
are not refused. The examples below are spelled from pieces (``HOME``, ``WORK`` ...), so that
this file refers to no such path itself.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
THIS_FILE = Path(__file__).resolve().relative_to(REPO_ROOT).as_posix()
# Spelled in pieces so that this file does not match itself.
SHARED_NAME = "sha" + "red"
SHARED = ".." + "/" + SHARED_NAME
HOME, WORK, USERS, ROOT_HOME = "/ho" + "me/", "/wo" + "rk/", "/Us" + "ers/", "/ro" + "ot/"

# The one allowed reference: (file, the whole line, stripped).
ALLOWED = {
    (".ci/run", 'export HRM_REAL_RAW="${HRM_REAL_RAW:-$PWD/' + SHARED + '/real_raw}"'),
}
# An absolute path under a user's home or a machine's workspace mount.
MACHINE_PATH = re.compile(r"(?<![\w.~$}-])/(?:work|Users|mnt|home/(?!dagster/)[\w.-]+)/")
# Python reaching for the folder beside the checkout (`ROOT.parent / <its name>`, `parents[3]`).
PARENT_SHARED = re.compile(r"\.parents?(?:\[\d+\])?\s*/\s*[\"']shared[\"']")
ROOT_USER = re.compile(r"(?<![\w.~$}-])" + re.escape(ROOT_HOME))
# A local path as a whole path (not inside a URL or a longer name): prefix, escaped path, suffix.
LOCAL = (r"(?<![\w.~$}:/-])", r"(?![\w.-])")


def machine_paths() -> list[str]:
    """This checkout's absolute path: on another machine it means nothing. (Not its parent,
    which may be a folder every machine has, such as ``/tmp`` for a clone made there.)"""
    return [str(REPO_ROOT)]


def offences(name: str, text: str, local_paths: list[str]) -> list[str]:
    """``file:line: text`` of every line of ``text`` that refers to a folder beside the
    checkout or to an absolute machine path."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if (name, line.strip()) in ALLOWED:
            continue
        bad = (
            SHARED in line
            or "..\\shared" in line
            or PARENT_SHARED.search(line)
            or MACHINE_PATH.search(line)
            or (ROOT_USER.search(line) and not name.startswith("docker/"))
            or any(re.search(LOCAL[0] + re.escape(p) + LOCAL[1], line) for p in local_paths)
        )
        if bad:
            found.append(f"{name}:{number}: {line.strip()[:160]}")
    return found


def tracked_text_files() -> dict[str, str]:
    """Path -> text of every tracked text file but this one (whose examples are the very
    references it refuses)."""
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    files = {}
    for name in filter(None, (raw.decode() for raw in names)):
        path = REPO_ROOT / name
        if name == THIS_FILE or not path.is_file():  # deleted in the work tree, not yet committed
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary (golden arrays, Parquet)
        files[name] = data.decode("utf-8", errors="replace")
    return files


def test_no_tracked_file_refers_outside_the_clone():
    local_paths = machine_paths()
    files = tracked_text_files()
    assert "README.md" in files and ".ci/run" in files
    found = [line for name, text in files.items() for line in offences(name, text, local_paths)]
    assert not found, "references outside the clone:\n" + "\n".join(found)


def test_ci_run_has_the_one_allowed_line():
    lines = {line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()}
    assert {line for name, line in ALLOWED if name == ".ci/run"} <= lines


@pytest.mark.parametrize(
    "line",
    [
        'REAL_RAW = REPO_ROOT.parent / "' + SHARED_NAME + '" / "real_raw"',
        "os.environ.get('X', Path(__file__).resolve().parents[3] / '" + SHARED_NAME + "')",
        '.join("' + ".." + "/" + SHARED + '/real_raw")',
        "see " + SHARED + "/CONTRACTS.md",
        'Path(os.environ.get("HRM_REAL_RAW", "' + WORK + SHARED_NAME + '/real_raw"))',
        "python " + HOME + "alice/hrm-data/tests/x.py",
        "open " + USERS + "bob/data",
        "cache at " + ROOT_HOME + ".cache/hrm-data",
        'export HRM_REAL_RAW="$PWD/' + SHARED + '/real_raw"',  # not the allowed line
    ],
)
def test_the_check_refuses(line):
    assert offences("tests/x.py", line, ["/somewhere/checkout"])


@pytest.mark.parametrize(
    "line",
    [
        "output_path=/dev/shm/sampled",
        "mkdir -p /tmp/golden_work",
        "HRM_CACHE_DIR: " + HOME + "dagster/.cache/hrm-data  # in the container",
        "WORKDIR /opt/dagster/app",
        "default ~/.cache/hrm-data",
        "the shared folder, shared/real_raw in a mirror",
        "s3://bucket" + WORK + "x and $HOME" + WORK + "x",
    ],
)
def test_the_check_lets_through(line):
    assert not offences("docs/x.md", line, ["/somewhere/checkout"])


def test_the_checkouts_own_path_is_refused():
    assert offences("docs/x.md", "cd /somewhere/checkout/tests", ["/somewhere/checkout"])
    assert not offences("docs/x.md", "cd /somewhere/checkout-old", ["/somewhere/checkout"])
    assert offences("docker/Dockerfile", "python " + HOME + "alice/x", [])
    assert not offences("docker/Dockerfile", "ENV PATH=" + ROOT_HOME + ".cargo/bin:$PATH", [])


# A citation of the contract: `CONTRACTS.md`, perhaps with a section (`section 2`, `2`).
CITATION = re.compile(r"(?<![\w.])((?:docs/)?CONTRACTS\.md)(?:\s+(?:section\s+)?(\d+))?")


def test_every_citation_of_the_contract_names_docs_contracts_and_a_section_it_has():
    """Code and tests cite ``docs/CONTRACTS.md`` (the file in the repository), and a section
    number they cite is one of its ``## N.`` sections."""
    contract = (REPO_ROOT / "docs" / "CONTRACTS.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^## (\d+)\. ", contract, re.MULTILINE))
    assert {"1", "2", "3", "4", "5"} <= sections
    wrong = []
    for name, text in tracked_text_files().items():
        if not name.endswith((".py", ".rs", ".pyi")):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for path, section in CITATION.findall(line):
                if path != "docs/CONTRACTS.md" or (section and section not in sections):
                    wrong.append(f"{name}:{number}: {line.strip()}")
    assert not wrong, "citations of the contract:\n" + "\n".join(wrong)
