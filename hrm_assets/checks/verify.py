"""Check output folders against their ``manifest.json``: what ``hrm-verify PATH...`` (``python
-m hrm_assets.checks``, :mod:`hrm_assets.checks.cli`) runs.

What it checks: the folders hrm-data writes arrays into, each with a ``manifest.json`` that
lists every array's size and SHA-256 (a tokenized file's folder, a sampled folder). It
recomputes them and reports a missing, resized, altered or unlisted array. A folder whose arrays
match their manifest is then checked against the span rule the sampler applies
(``hrm_assets.sampling.span_table``): a tokenized folder's rows back to back within and covering
its ``tokens.npy``, a sampled folder's every epoch within its ``tokens.npy``. A tokenized folder
must also be its file's (``hrm_assets.tokenization.identity``: ``metadata.json`` names the
cleaned file whose folder it is, its ``rows`` and ``tokens`` are the arrays' lengths), and a
sampled folder's token ids must fit the dtype and vocabulary its ``metadata.json`` announces.

A PATH holding ``manifest.json`` or ``.npy`` arrays is one output folder. Any other directory
is a root of outputs (a tokenized root, a folder of sampled outputs): each of its sub-folders
is verified, and one without a manifest fails. The cleaned folder is neither: its JSONL and
Parquet files are data_io's format, with no manifest (their rows are checked by the cleaned
assets' ``rows_valid`` check), so a root that holds cleaned files and no output is reported
once, as such, not as a missing manifest per sub-folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hrm_assets.checks.consistency import sampled_token_problems, span_problems
from hrm_assets.common.atomic import TMP_PREFIX
from hrm_assets.common.layout import is_cleaned_name
from hrm_assets.common.manifest import EPOCH_PREFIX, MANIFEST_FILE, VerifyReport
from hrm_assets.sampling.datacard.verification import verify_sampled_folders
from hrm_assets.tokenization.identity import is_hrm_tokenized, scanned_identity_problems


def is_output_folder(path: Path) -> bool:
    """A folder hrm-data wrote arrays into: it has a manifest, or arrays directly in it."""
    return (path / MANIFEST_FILE).is_file() or any(path.glob("*.npy"))


def output_folders(path: Path) -> list[Path]:
    """The folders ``path`` stands for: itself if it is an output (it has a manifest, or arrays
    directly in it, whose manifest is then reported missing), else its sub-folders (hidden ones
    too, such as the output of a hidden cleaned file; not ``.tmp-`` leftovers)."""
    path = Path(path)
    if not path.is_dir() or is_output_folder(path):
        return [path]
    return sorted(
        entry
        for entry in path.iterdir()
        if entry.is_dir() and not entry.name.startswith(TMP_PREFIX)
    )


def is_cleaned_tree(path: Path) -> bool:
    """Whether a tree holds cleaned files (``.jsonl``/``.parquet``) and nothing hrm-verify
    checks (no manifest, no array anywhere in it)."""
    names = [entry.name for entry in Path(path).rglob("*") if entry.is_file()]
    outputs = any(name == MANIFEST_FILE or name.endswith(".npy") for name in names)
    return not outputs and any(is_cleaned_name(name) for name in names)


def not_an_output_root(path: Path) -> str | None:
    """Why ``path`` is not for hrm-verify when it is a cleaned folder; None otherwise."""
    if not is_cleaned_tree(path):
        return None
    return (
        f"{path}: cleaned files (JSONL/Parquet), not tokenized or sampled outputs. They have no "
        f"{MANIFEST_FILE} (data_io's format); their rows are checked by the cleaned assets' "
        "rows_valid check. hrm-verify checks tokenized and sampled folders, e.g. "
        "`hrm-verify data/tokenized data/sampled/local`"
    )


def verify_paths(paths: Sequence[Path]) -> list[VerifyReport]:
    """A :class:`VerifyReport` per output folder of each path (a failing one for an empty root)."""
    reports = []
    for path in paths:
        folders = output_folders(Path(path))
        if not folders:
            empty = VerifyReport(folder=Path(path))
            empty.problems.append(f"{path}: no {MANIFEST_FILE} and no output folders in it")
            reports.append(empty)
            continue
        reason = not_an_output_root(Path(path))
        if reason is not None:
            reports.append(VerifyReport(folder=Path(path), problems=[reason]))
            continue
        reports.extend(_verify_outputs(folders))
    return reports


def _verify_outputs(folders: Sequence[Path]) -> list[VerifyReport]:
    """The manifest check (every folder's arrays hashed in one parallel pass), then, for each
    folder whose arrays are as listed, the span rule the sampler and the asset checks apply:
    arrays that match their manifest can still have been written wrong."""
    reports = verify_sampled_folders(folders)
    for report in reports:
        if report.ok:
            report.problems.extend(span_problems(report.folder))
        if report.ok and is_hrm_tokenized(report.folder):
            report.problems.extend(scanned_identity_problems(report))
        elif report.ok and any(name.startswith(EPOCH_PREFIX) for name in report.scans):
            report.problems.extend(sampled_token_problems(report.folder, report.scans))
    return reports
