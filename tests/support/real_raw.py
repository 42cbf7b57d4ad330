"""Real raw rows for the tests and benchmarks (GSM8K, MATH, SciBench, TheoremQA, DeepMind
mathematics): where they come from, and the check that they are the pinned ones.

The repository holds no copy of them. ``real_raw.json`` (beside this module) pins every file:
its path in the real-raw folder, size and SHA-256 and, when it is a public file byte for byte,
its origin: a repository (``github:owner/name`` or ``hub:owner/name``, a Hugging Face dataset),
a commit and the file's path in it. The folder is found, in this order:

1. ``$HRM_REAL_RAW``: a local mirror (CI's, ``.ci/run``). Every pinned file must be in it with
   its size and SHA-256, so a wrong or partial mirror is refused, naming the file.
2. The cache, ``$HRM_CACHE_DIR/real_raw/`` (default ``~/.cache/hrm-data/real_raw/``, the
   project's cache rule): files missing there are downloaded from their origin at the pinned
   commit, checked, and written to a temporary name renamed into place. A file with no public
   origin (the DeepMind mathematics rows, made by its generator; the MATH per-file samples)
   can come only from a mirror, and the error says so.

Without network and without a mirror, :func:`real_raw_root` raises :class:`RealRawUnavailable`
whose message is one line saying how to provide the data. ``python tests/support/real_raw.py``
(what ``make test`` runs before anything else) prints the folder and exits 0, or prints that
line and exits 1 (on stdout both, for the Makefile; download progress goes to stderr). The
module uses the standard library only, so that check runs before anything is installed.

``python tests/support/real_raw.py pin FOLDER`` rewrites the sizes and SHA-256 of the manifest
from a mirror (the origins stay), for a maintainer who changes the set of files.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

MANIFEST = Path(__file__).resolve().with_name("real_raw.json")
MIRROR_ENV = "HRM_REAL_RAW"
CACHE_DIR_ENV = "HRM_CACHE_DIR"  # hrm_assets.common.settings.CACHE_DIR_ENV
CACHE_SUBFOLDER = "real_raw"
DOWNLOAD_TIMEOUT = 60

# Where a repository's file is at a commit, by kind of repository: the public HTTPS address, or
# the same layout under a local folder (``origin_bases`` of the functions below).
URL_TEMPLATES = {
    "github": "https://raw.githubusercontent.com/{repo}/{revision}/{path}",
    "hub": "https://huggingface.co/datasets/{repo}/resolve/{revision}/{path}",
}
HOW_TO_PROVIDE = "set HRM_REAL_RAW to a mirror of the real raw rows (docs/TESTING.md)"


class RealRawUnavailable(RuntimeError):
    """The real raw rows are neither in a mirror nor in the cache, nor downloadable."""


def load_manifest(path: Path = MANIFEST) -> dict[str, dict]:
    """Relative path -> ``{"size", "sha256", "origin"}`` (``origin``: ``None`` or
    ``{"repository", "revision", "path"}``)."""
    files = json.loads(path.read_text(encoding="utf-8"))["files"]
    for name, entry in files.items():
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ValueError(f"{path}: file {name!r} must be a relative path inside the folder")
        if not isinstance(entry.get("size"), int) or len(entry.get("sha256", "")) != 64:
            raise ValueError(f"{path}: file {name!r} needs an integer size and a SHA-256")
    return files


def cache_folder() -> Path:
    value = os.environ.get(CACHE_DIR_ENV)
    base = Path(value).absolute() if value else Path.home() / ".cache" / "hrm-data"
    return base / CACHE_SUBFOLDER


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mismatch(folder: Path, name: str, entry: Mapping) -> str | None:
    """Why ``folder/name`` is not the pinned file, or None when it is."""
    path = folder / name
    if not path.is_file():
        return f"{path}: missing"
    size = path.stat().st_size
    if size != entry["size"]:
        return f"{path}: {size} bytes, pinned {entry['size']}"
    digest = file_sha256(path)
    if digest != entry["sha256"]:
        return f"{path}: SHA-256 {digest}, pinned {entry['sha256']}"
    return None


def origin_url(origin: Mapping, bases: Mapping[str, str] | None = None) -> str:
    """The address of a pinned file; ``bases`` maps a kind (``github``, ``hub``) to a local
    folder laid out like the host (``<folder>/<owner>/<name>/<revision>/<path>``)."""
    kind, _, repo = origin["repository"].partition(":")
    if kind not in URL_TEMPLATES or repo.count("/") != 1:
        raise ValueError(f"{MANIFEST.name}: unknown repository {origin['repository']!r}")
    fields = {"repo": repo, "revision": origin["revision"], "path": origin["path"]}
    if bases and kind in bases:
        return (Path(bases[kind]) / repo / origin["revision"] / origin["path"]).absolute().as_uri()
    return URL_TEMPLATES[kind].format(**fields)


def download(name: str, entry: Mapping, folder: Path, bases: Mapping[str, str] | None) -> None:
    """Fetch one pinned file into ``folder/name``: streamed to a temporary file beside it,
    checked against its size and SHA-256, then renamed into place."""
    url = origin_url(entry["origin"], bases)
    target = folder / name
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".tmp-{target.name}.{os.getpid()}")
    digest, size = hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
            with open(temporary, "wb") as out:
                for block in iter(lambda: response.read(1 << 20), b""):
                    digest.update(block)
                    size += len(block)
                    out.write(block)
        if size != entry["size"] or digest.hexdigest() != entry["sha256"]:
            raise RealRawUnavailable(
                f"{url}: {size} bytes with SHA-256 {digest.hexdigest()}, pinned "
                f"{entry['size']} bytes {entry['sha256']} for {name}"
            )
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def verify_mirror(folder: Path, files: Mapping[str, Mapping]) -> Path:
    """``folder`` if it holds every pinned file; RealRawUnavailable naming the first that is
    missing or different otherwise."""
    if not folder.is_dir():
        raise RealRawUnavailable(f"{MIRROR_ENV}={folder} is not a folder; {HOW_TO_PROVIDE}")
    problems = [p for name, entry in files.items() if (p := mismatch(folder, name, entry))]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise RealRawUnavailable(
            f"{MIRROR_ENV} is not the pinned real raw rows: {problems[0]}{more}"
        )
    return folder


def fill_cache(
    folder: Path,
    files: Mapping[str, Mapping],
    bases: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> Path:
    """``folder`` with every pinned file, downloading those missing or different."""
    wanted = [name for name, entry in files.items() if mismatch(folder, name, entry)]
    no_origin = [name for name in wanted if not files[name].get("origin")]
    if no_origin:
        raise RealRawUnavailable(
            f"{len(no_origin)} real raw file(s) are missing from {folder} and have no public "
            f"copy to download ({no_origin[0]}, ...): {HOW_TO_PROVIDE}"
        )
    for index, name in enumerate(wanted, 1):
        log(f"real raw rows: downloading {name} ({index}/{len(wanted)})")
        try:
            download(name, files[name], folder, bases)
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise RealRawUnavailable(
                f"cannot download {origin_url(files[name]['origin'], bases)} ({reason}): "
                f"{HOW_TO_PROVIDE}, or download the pinned files into {folder} once with "
                "network"
            ) from error
    return folder


def real_raw_root(
    environ: Mapping[str, str] | None = None,
    bases: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda line: None,
) -> Path:
    """The folder of the pinned real raw rows: the mirror ``$HRM_REAL_RAW`` (checked), else the
    cache (filled from the origins as needed)."""
    environ = os.environ if environ is None else environ
    files = load_manifest()
    if environ.get(MIRROR_ENV):
        return verify_mirror(Path(environ[MIRROR_ENV]).absolute(), files)
    return fill_cache(cache_folder(), files, bases, log)


def pin(folder: Path, path: Path = MANIFEST) -> None:
    """Rewrite the sizes and SHA-256 of ``path`` from the mirror ``folder``: every file in it
    (but its README.md), keeping the origins already recorded."""
    document = json.loads(path.read_text(encoding="utf-8"))
    old = document.get("files", {})
    files = {}
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = file.relative_to(folder).as_posix()
        if name == "README.md":
            continue
        origin = old.get(name, {}).get("origin")
        files[name] = {"size": file.stat().st_size, "sha256": file_sha256(file), "origin": origin}
    document["files"] = files
    temporary = path.with_name(f".tmp-{path.name}")
    temporary.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    os.replace(temporary, path)


def main(argv: list[str]) -> int:
    if argv[:1] == ["pin"] and len(argv) == 2:
        pin(Path(argv[1]))
        return 0
    if argv:
        print("usage: real_raw.py [pin FOLDER]", file=sys.stderr)
        return 2
    try:
        root = real_raw_root(log=lambda line: print(line, file=sys.stderr))
    except RealRawUnavailable as error:
        print(f"real raw rows unavailable: {error}")
        return 1
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
