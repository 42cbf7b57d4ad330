"""Where the sampler writes, and which existing folder it may replace there.

The sampler replaces ``output_path`` as a whole (hrm_assets.sampling.sampler), so it may only
replace what it can prove it wrote: a folder whose ``manifest.json`` (hrm_assets.common.manifest)
lists every file in it, at any depth, besides the manifest itself, ``metadata.json`` (which
manifests of older runs did not list) and the data card (``DATACARD.md``, ``datacard.json``:
``hrm_assets.sampling.datacard``), or an empty folder, which holds nothing to lose. Anything else
(a user's ``epoch_7/notes.txt``, a symlink, a folder data_io or a person wrote) is named in an
error, never deleted.

A symlinked ``output_path`` is written through: the folder it points to is replaced and the
link is kept, pointing to the new output.
"""

from __future__ import annotations

import os
from pathlib import Path

from hrm_assets.common.manifest import (
    MANIFEST_FILE,
    SAMPLED_METADATA_FILE,
    ManifestError,
    read_manifest,
)


def output_target(output_path: Path) -> Path:
    """The folder a run writes: ``output_path`` with every symlink resolved (the path it names
    need not exist yet), so that the link itself is never replaced."""
    return Path(os.path.realpath(Path(output_path).absolute()))


def unproven_paths(folder: Path) -> list[Path]:
    """Every path under ``folder`` that no manifest proves the sampler wrote (sorted; a folder
    that is not proven is named, not its contents). Empty: ``folder`` may be replaced."""
    folder = Path(folder)
    try:
        listed = set(read_manifest(folder)["files"])
    except ManifestError:
        listed = set()
    # metadata.json is not listed by the manifests of hrm-sample runs before issue 16; the
    # data card describes the manifest, so no manifest lists it. (Imported here: the data card
    # package loads the sources registry, which the sampler checks first.)
    from hrm_assets.sampling.datacard import CARD_FILES

    own = {MANIFEST_FILE, SAMPLED_METADATA_FILE, *CARD_FILES}
    proven_files = listed | own if listed else set()
    proven_dirs = {
        parent.as_posix() for name in listed for parent in Path(name).parents if parent.parts
    }
    found: list[Path] = []
    for current, dirnames, filenames in os.walk(folder):
        relative = Path(current).relative_to(folder)
        for name in list(dirnames):
            path = Path(current) / name
            if path.is_symlink() or (relative / name).as_posix() not in proven_dirs:
                found.append(path)
                dirnames.remove(name)  # named as a whole
        for name in filenames:
            path = Path(current) / name
            if path.is_symlink() or (relative / name).as_posix() not in proven_files:
                found.append(path)
    return sorted(found)
