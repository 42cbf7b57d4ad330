"""Where the real raw rows come from (tests/support/real_raw.py): a mirror checked file by file
against the pinned SHA-256, or the cache filled from each file's public origin at its pinned
commit, here a local folder laid out like that host (GitHub's raw files, the Hub's ``resolve``),
since the tests run without network. And ``make test``'s first step: one line, exit 1, when
neither is there."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import real_raw as rr

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "tests" / "support" / "real_raw.py"


def _origin_folder(base: Path, mirror: Path, files: dict[str, dict]) -> dict[str, str]:
    """Lay the files that have an origin out under ``base/<kind>/`` as their host serves them:
    ``<owner>/<name>/<revision>/<path>``. Returns the ``bases`` mapping."""
    for name, entry in files.items():
        origin = entry["origin"]
        if origin:
            kind, _, repo = origin["repository"].partition(":")
            target = base / kind / repo / origin["revision"] / origin["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mirror / name, target)
    return {kind: str(base / kind) for kind in rr.URL_TEMPLATES}


def _copy_without_origin(mirror: Path, cache: Path, files: dict[str, dict]) -> None:
    """What only a mirror provides, put into the cache as a user would copy it there."""
    for name, entry in files.items():
        if not entry["origin"]:
            (cache / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(mirror / name, cache / name)


def test_the_manifest_pins_every_file_of_the_mirror(real_raw):
    files = rr.load_manifest()
    assert rr.verify_mirror(real_raw, files) == real_raw
    on_disk = {p.relative_to(real_raw).as_posix() for p in real_raw.rglob("*") if p.is_file()} - {
        "README.md"
    }
    assert set(files) == on_disk
    with_origin = {name for name, entry in files.items() if entry["origin"]}
    assert {"gsm8k/train.jsonl", "gsm8k/test.jsonl", "hendrycks_math/test.jsonl"} <= with_origin
    assert "theoremqa/theoremqa_test.json" in with_origin


def test_a_wrong_mirror_is_refused_naming_the_file(real_raw, tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(real_raw, mirror)
    changed = mirror / "gsm8k" / "test.jsonl"
    changed.write_bytes(changed.read_bytes().replace(b"#### ", b"####  ", 1))
    with pytest.raises(rr.RealRawUnavailable, match=r"gsm8k/test\.jsonl: \d+ bytes, pinned"):
        rr.real_raw_root({rr.MIRROR_ENV: str(mirror)})
    (mirror / "scibench" / "dataset" / "original" / "stat.json").unlink()
    with pytest.raises(rr.RealRawUnavailable, match=r"test\.jsonl: .*pinned \d+ \(and 1 more\)"):
        rr.real_raw_root({rr.MIRROR_ENV: str(mirror)})
    changed.unlink()
    with pytest.raises(rr.RealRawUnavailable, match=r"gsm8k/test\.jsonl: missing \(and 1 more\)"):
        rr.real_raw_root({rr.MIRROR_ENV: str(mirror)})


def test_the_cache_is_filled_from_the_pinned_origins_then_reused(real_raw, tmp_path, monkeypatch):
    files = rr.load_manifest()
    bases = _origin_folder(tmp_path / "origin", real_raw, files)
    monkeypatch.setenv(rr.CACHE_DIR_ENV, str(tmp_path / "cache"))
    cache = tmp_path / "cache" / rr.CACHE_SUBFOLDER
    _copy_without_origin(real_raw, cache, files)
    log: list[str] = []
    assert rr.real_raw_root({}, bases, log.append) == cache
    downloaded = sum(1 for entry in files.values() if entry["origin"])
    assert len(log) == downloaded and "gsm8k/train.jsonl" in " ".join(log)
    assert rr.verify_mirror(cache, files) == cache
    assert not list(cache.rglob(".tmp-*"))
    # Every file present and right: nothing is fetched (the origin could be gone).
    shutil.rmtree(tmp_path / "origin")
    log.clear()
    assert rr.real_raw_root({}, bases, log.append) == cache and log == []
    # A file changed in the cache is fetched again, and only that one.
    _origin_folder(tmp_path / "origin", real_raw, files)
    (cache / "gsm8k" / "test.jsonl").write_text("{}\n")
    assert rr.real_raw_root({}, bases, log.append) == cache
    assert log == ["real raw rows: downloading gsm8k/test.jsonl (1/1)"]


def test_an_origin_with_other_bytes_is_refused_and_leaves_nothing(tmp_path):
    content = b'{"question": "1+1?", "answer": "#### 2"}\n'
    entry = {
        "size": len(content),
        "sha256": hashlib.sha256(content).hexdigest(),
        "origin": {"repository": "hub:someone/rows", "revision": "abc123", "path": "data/a.jsonl"},
    }
    served = tmp_path / "hub" / "someone" / "rows" / "abc123" / "data" / "a.jsonl"
    served.parent.mkdir(parents=True)
    served.write_bytes(content.replace(b"2", b"3"))
    bases = {"hub": str(tmp_path / "hub")}
    cache = tmp_path / "cache"
    with pytest.raises(rr.RealRawUnavailable, match=r"a\.jsonl: 41 bytes with SHA-256 \w+, pinned"):
        rr.fill_cache(cache, {"rows/a.jsonl": entry}, bases)
    assert not [p for p in cache.rglob("*") if p.is_file()]
    served.write_bytes(content)
    assert rr.fill_cache(cache, {"rows/a.jsonl": entry}, bases) == cache
    assert (cache / "rows" / "a.jsonl").read_bytes() == content


def test_the_public_addresses_are_the_hosts_raw_file_urls():
    origin = {"repository": "github:openai/grade-school-math", "revision": "c0ffee", "path": "a/b"}
    assert rr.origin_url(origin) == (
        "https://raw.githubusercontent.com/openai/grade-school-math/c0ffee/a/b"
    )
    hub = {"repository": "hub:openai/gsm8k", "revision": "c0ffee", "path": "main/t.parquet"}
    assert rr.origin_url(hub) == (
        "https://huggingface.co/datasets/openai/gsm8k/resolve/c0ffee/main/t.parquet"
    )
    with pytest.raises(ValueError, match="unknown repository 'gitlab:x/y'"):
        rr.origin_url({**origin, "repository": "gitlab:x/y"})


def test_an_unreachable_origin_is_one_line_saying_how_to_provide_the_rows(tmp_path):
    content = b"x\n"
    entry = {
        "size": 2,
        "sha256": hashlib.sha256(content).hexdigest(),
        "origin": {"repository": "github:o/n", "revision": "r", "path": "p"},
    }
    with pytest.raises(rr.RealRawUnavailable) as raised:
        rr.fill_cache(tmp_path / "cache", {"f": entry}, {"github": str(tmp_path / "nowhere")})
    message = str(raised.value)
    assert "\n" not in message and "cannot download file://" in message
    assert rr.HOW_TO_PROVIDE in message


def test_make_tests_first_step_without_mirror_or_cache_is_one_line(tmp_path):
    """No mirror, an empty cache: the files without a public copy cannot be fetched, so the
    script says so at once (no download is tried), on one line, and exits 1."""
    env = {k: v for k, v in os.environ.items() if k != rr.MIRROR_ENV}
    env[rr.CACHE_DIR_ENV] = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stdout.count("\n") == 1 and done.stderr == ""
    assert done.stdout.startswith("real raw rows unavailable: ")
    assert "HRM_REAL_RAW" in done.stdout


def test_make_tests_first_step_prints_the_checked_mirror(real_raw):
    env = {**os.environ, rr.MIRROR_ENV: str(real_raw)}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout
    assert done.stdout == f"{real_raw}\n"


def test_pin_rewrites_sizes_and_digests_and_keeps_origins(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "a").mkdir(parents=True)
    (mirror / "a" / "x.txt").write_text("x\n")
    (mirror / "README.md").write_text("about\n")
    manifest = tmp_path / "real_raw.json"
    origin = {"repository": "github:o/n", "revision": "r", "path": "x.txt"}
    manifest.write_text(json.dumps({"about": "kept", "files": {"a/x.txt": {"origin": origin}}}))
    rr.pin(mirror, manifest)
    document = json.loads(manifest.read_text())
    assert document["about"] == "kept"
    assert document["files"] == {
        "a/x.txt": {"size": 2, "sha256": hashlib.sha256(b"x\n").hexdigest(), "origin": origin}
    }
