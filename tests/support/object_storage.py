"""Helpers of the object-storage tests (tests/storage): a small cleaned tree, uploaded as the
cleaned asset uploads it, and the requests the server logged."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hrm_assets.common.storage import ObjectStore
from hrm_assets.contamination.sidecar import KEYS_FILE, SCAN_FILE
from support.cleaned_rows import cleaned_rows, write_flan_file


def write_cleaned_tree(root: Path, copies: int = 1) -> Path:
    """JSONL files and a Parquet file under ``root`` (``copies`` of each JSONL file)."""
    for name, rows in cleaned_rows().items():
        for copy in range(copies):
            path = root / (name if copy == 0 else f"more/{copy}_{name}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    write_flan_file(root / "flan" / "cot_demo.parquet", cleaned_rows()["growing.jsonl"])
    return root


def upload_tree(local: Path, store: ObjectStore) -> None:
    for path in sorted(local.rglob("*")):
        if path.is_file():
            store.put_file(path.relative_to(local).as_posix(), path)


_REQUEST = re.compile(r'"(GET|PUT|HEAD|DELETE|POST) (/[^ ?]*)(\?[^ ]*)? HTTP')


def logged_requests(log: Path, bucket: str, start: int = 0) -> list[tuple[str, str, str]]:
    """(method, key, query) of the server's requests on ``bucket`` from line ``start``."""
    found = []
    for line in log.read_text(errors="replace").splitlines()[start:]:
        match = _REQUEST.search(line)
        if match and match.group(2).startswith(f"/{bucket}/"):
            key = match.group(2)[len(bucket) + 2 :]
            found.append((match.group(1), key, match.group(3) or ""))
    return found


def log_length(log: Path) -> int:
    return len(log.read_text(errors="replace").splitlines())


# What a skip decision reads: a folder's manifest and metadata, a root's tokenizer_info.json,
# a cleaned source's build record. Every other GET is a download of data.
SMALL_OBJECTS = ("manifest.json", "metadata.json", "tokenizer_info.json")
# A tokenized folder's contamination sidecars, in a bucket as on disk (docs/CONTAMINATION.md).
SIDECAR_FILES = (SCAN_FILE, KEYS_FILE)


def data_gets(requests: list[tuple[str, str, str]]) -> list[str]:
    """Keys of GETs of data objects: not listings, not the small objects skips read."""
    return [
        key
        for method, key, query in requests
        if method == "GET"
        and not query
        and key
        and key.rsplit("/", 1)[-1] not in SMALL_OBJECTS
        and "/.hrm-build/" not in f"/{key}"
    ]
