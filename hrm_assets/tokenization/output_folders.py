"""Which folders hrm-tokenize may write, replace or prune: only those carrying its ownership
marker, never an input root or what lies in one, never another kind's output folder."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from hrm_assets.common.atomic import TMP_PREFIX, exclusive_lock, lock_path_for, remove_leftovers
from hrm_assets.common.manifest import MANIFEST_FILE, ManifestError, manifest_kind, read_manifest
from hrm_assets.tokenization.identity import is_hrm_tokenized
from hrm_assets.tokenization.versions import OWNER_MARKER


class ForeignOutputError(ValueError):
    """An output path holds something this tool did not write; it is never replaced."""


def refuse_foreign(folder: Path) -> None:
    """Raise :class:`ForeignOutputError` naming ``folder`` if something is there that this tool
    cannot prove it wrote (no ownership marker, or not a plain folder)."""
    if not os.path.lexists(folder) or is_owned(folder):
        return
    what = "a symlink" if folder.is_symlink() else "a folder" if folder.is_dir() else "a file"
    raise ForeignOutputError(
        f"{folder}: {what} that hrm-tokenize did not write (no {OWNER_MARKER} marker) is in the "
        "way of this output; it is left as it is: move it away or choose another -o"
    )


def _resolved(path: Path | str, what: str) -> Path:
    """``path`` resolved; ``ValueError`` naming it when it cannot be (a symlink loop)."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError) as exc:
        raise ValueError(f"{path}: the {what} cannot be resolved: {exc}") from None


def check_input_roots(inputs: Iterable[Path | str]) -> None:
    """Raise ``ValueError`` naming the first input root that is not a readable folder
    (missing, a file, a symlink loop, no permission)."""
    for root in inputs:
        try:
            os.stat(root)
        except OSError as exc:
            raise ValueError(f"{root}: not a directory: {exc.strerror}") from None
        if not os.path.isdir(root):
            raise ValueError(f"{root}: not a directory")


def refuse_output_folder_as_root(out_root: Path | str) -> None:
    """Raise ``ValueError`` when ``out_root`` is itself an output folder (it holds a
    ``manifest.json``: a sampled folder, an export, one tokenized folder): hrm-tokenize would
    write a tokenized root's folders and ``tokenizer_info.json`` into another kind's output."""
    out_root = Path(out_root)
    try:
        manifest = read_manifest(out_root)
    except ManifestError:
        if not (out_root / MANIFEST_FILE).is_file():
            return
        manifest = {"files": {}}
    kind = manifest_kind(out_root, manifest) or "unknown"
    raise ValueError(
        f"{out_root}: an output folder of kind {kind!r} (it holds {MANIFEST_FILE}), not a "
        "tokenized root: hrm-tokenize writes one folder per cleaned file under -o; choose "
        "another -o"
    )


def check_roots_apart(inputs: Iterable[Path | str], out_root: Path | str) -> None:
    """Raise ``ValueError`` if the output root is an input root, inside one, or holds one
    (compared resolved): outputs would replace the cleaned files and prune their folders."""
    out_resolved = _resolved(out_root, "output folder")
    for root in inputs:
        resolved = _resolved(root, "input folder")
        if resolved == out_resolved or resolved in out_resolved.parents:
            raise ValueError(
                f"{out_root}: the output folder is the input folder {root} or inside it; "
                "choose an -o outside every input"
            )
        if out_resolved in resolved.parents:
            raise ValueError(
                f"{root}: the input folder is inside the output folder {out_root}; "
                "choose an -o outside every input"
            )


def is_owned(folder: Path) -> bool:
    """Whether ``folder`` was written by this tool (and so may be replaced or pruned):
    :func:`hrm_assets.tokenization.identity.is_hrm_tokenized`."""
    return is_hrm_tokenized(folder)


def remove_owned_output(out_root: Path, safe_name: str) -> bool:
    """Delete ``out_root/<safe_name>`` if this tool wrote it; True if something was removed.

    Done under the folder's lock, so a run still writing the folder finishes first.
    """
    folder = Path(out_root) / safe_name
    if not folder.is_dir() or not is_owned(folder):
        return False
    with exclusive_lock(lock_path_for(folder)):
        remove_leftovers(folder)
        if not folder.is_dir() or not is_owned(folder):
            return False
        shutil.rmtree(folder)
    return True


def prune_orphans(out_root: Path, expected_safe_names: Iterable[str]) -> list[str]:
    """Remove owned folders of ``out_root`` that no cleaned file maps to; return their names.

    Folders without the ownership marker, files, and ``.tmp-`` entries are left alone (hidden
    folders such as ``.x.jsonl`` are a hidden cleaned file's output, and pruned like others).
    """
    out_root = Path(out_root)
    if not out_root.is_dir():
        return []
    expected = set(expected_safe_names)
    removed = []
    for entry in sorted(out_root.iterdir()):
        if entry.name in expected or entry.name.startswith(TMP_PREFIX):
            continue
        if remove_owned_output(out_root, entry.name):
            removed.append(entry.name)
    return removed
