"""A tokenized root written by data_io's ``tokenizer`` binary, adopted as it is.

Our arrays are data_io's bytes, so its folders are taken as the tokenized partitions after one
hashing pass, never re-tokenized or modified: a folder is adopted when it is not ours (no
``.hrm-data`` marker), holds data_io's five arrays, and agrees with what it is checked against,
the root's ``tokenizer_info.json`` with the tokenizer and framing in use (all but the
``tokenizer_path`` data_io recorded as it was typed) and its ``metadata.json``'s
``source_size`` (when data_io wrote one) with the cleaned file's size. Its record carries the
data version our tokenized step would give that cleaned file with that tokenizer, so a later
run finds it current; a cleaned file that changes afterwards fails its partition with a line
saying to move the folder away (hrm-data never replaces it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.settings import TOKENIZER_INFO_FILE
from hrm_assets.tokenization.tokenize import is_owned, read_metadata

ARRAYS = ("tokens.npy", "inst_start.npy", "inst_len.npy", "resp_start.npy", "resp_len.npy")


@dataclass(frozen=True)
class AdoptedFolder:
    """A folder data_io wrote, hashed: its arrays' sizes and SHA-256, and its row count."""

    key: str
    folder: Path
    arrays: dict[str, tuple[int, str]]
    rows: int
    tokens: int


def is_foreign(folder: Path) -> bool:
    """A tokenized folder that exists and that hrm-data did not write."""
    return folder.is_dir() and not is_owned(folder)


def tokenizer_info_problems(root: Path, expected: Mapping[str, object]) -> list[str]:
    """How the root's ``tokenizer_info.json`` differs from ``expected`` (ours for the
    tokenizer in use), ``tokenizer_path`` aside; empty when it agrees."""
    path = Path(root) / TOKENIZER_INFO_FILE
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return [f"{path}: unreadable ({error})"]
    return [
        f"{path}: {key} is {info.get(key)!r}, the tokenizer in use gives {value!r}"
        for key, value in expected.items()
        if key != "tokenizer_path" and info.get(key) != value
    ]


def _length(path: Path) -> int:
    from hrm_assets.common.npy_files import npy_layout

    return int(npy_layout(path).length)


def adopt_folder(root: Path, item: CleanedFile) -> AdoptedFolder | str:
    """The folder of ``item`` under ``root`` hashed for adoption, or the reason it is not
    adopted (a line naming the folder). Call it for foreign folders (:func:`is_foreign`)."""
    folder = Path(root) / item.safe_name
    missing = [name for name in ARRAYS if not (folder / name).is_file()]
    if missing:
        return f"{folder}: not a tokenized folder of data_io's, {', '.join(missing)} missing"
    metadata = read_metadata(folder) or {}
    size = item.path.stat().st_size
    if "source_size" in metadata and metadata["source_size"] != size:
        return (
            f"{folder}: made from {metadata['source_size']:,} bytes, but {item.path} has "
            f"{size:,}; the cleaned file changed since"
        )
    from hrm_assets.common.npy_files import NpyFileError

    arrays = {name: ((folder / name).stat().st_size, file_sha256(folder / name)) for name in ARRAYS}
    try:
        rows, tokens = _length(folder / "inst_start.npy"), _length(folder / "tokens.npy")
    except NpyFileError as error:
        return str(error)
    return AdoptedFolder(
        key=item.safe_name,
        folder=folder,
        arrays=arrays,
        rows=rows,
        tokens=tokens,
    )
