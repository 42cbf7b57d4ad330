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

The cleaned files are wherever they were adopted from (folders, ``s3://`` roots: their size and
content hash come from :mod:`hrm_assets.adoption.roots`), so a data_io tokenized root on disk
is adopted with a corpus in object storage too, no object read whose hash is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hrm_assets.adoption.cleaned import where
from hrm_assets.adoption.roots import CleanedContent
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import CleanedFile, is_hidden_name
from hrm_assets.common.settings import TOKENIZER_INFO_FILE
from hrm_assets.tokenization.outcomes import TokenizeFailure
from hrm_assets.tokenization.tokenize import is_owned, read_metadata
from hrm_assets.tokenization.tokenizer_setup import TokenizerSetup
from hrm_assets.tokenization.versions import data_version

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


def has_foreign_folders(root: Path) -> bool:
    """Whether the tokenized root holds a folder another tool wrote (else nothing to adopt)."""
    root = Path(root)
    if not root.is_dir():
        return False
    return any(is_foreign(entry) for entry in root.iterdir() if not is_hidden_name(entry.name))


def version_of(cleaned: CleanedContent, setup: TokenizerSetup) -> Callable[[CleanedFile], str]:
    """The data version our tokenized step gives each cleaned file with ``setup``, from its
    content hash as ``cleaned`` knows it (an adopted object's kept hash: no data read)."""

    def version(item: CleanedFile) -> str:
        return data_version(cleaned.sha256(item)[1], setup)

    return version


def split_foreign_folders(
    files: Sequence[CleanedFile],
    tokenized_root: Path,
    recorded: Mapping[str, str | None],
    version: Callable[[CleanedFile], str],
) -> tuple[list[CleanedFile], int, list[TokenizeFailure]]:
    """(the files to tokenize, how many folders another tool wrote are current, a failure for
    each such folder that is not). ``recorded`` is the data version each partition last
    recorded. A folder another tool wrote is never rewritten: it is current when its record
    (the adoption of the root) has the version this file and tokenizer give."""
    foreign = {
        item.safe_name: item for item in files if is_foreign(tokenized_root / item.safe_name)
    }
    kept, refused = 0, []
    for name, item in foreign.items():
        if recorded.get(name) == version(item):
            kept += 1
            continue
        problem = (
            f"{tokenized_root / name} was written by another tool (data_io's tokenizer?) and "
            f"hrm-data never modifies it; it is not adopted for the cleaned file {where(item)} "
            "as it is now and this tokenizer (python -m hrm_assets.adoption --tokenized adopts "
            "a current one): move it away to have it tokenized"
        )
        refused.append(TokenizeFailure(name, FileExistsError(problem)))
    return [item for item in files if item.safe_name not in foreign], kept, refused


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


def adopt_folder(root: Path, item: CleanedFile, size: int) -> AdoptedFolder | str:
    """The folder of ``item`` (``size`` bytes now) under ``root`` hashed for adoption, or the
    reason it is not adopted (a line naming the folder). Call it for foreign folders
    (:func:`is_foreign`)."""
    folder = Path(root) / item.safe_name
    missing = [name for name in ARRAYS if not (folder / name).is_file()]
    if missing:
        return f"{folder}: not a tokenized folder of data_io's, {', '.join(missing)} missing"
    metadata = read_metadata(folder) or {}
    if "source_size" in metadata and metadata["source_size"] != size:
        return (
            f"{folder}: made from {metadata['source_size']:,} bytes, but {where(item)} has "
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
