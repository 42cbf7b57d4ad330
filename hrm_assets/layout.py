"""The cleaned-file layout shared by tokenization, the tokenizer trainer and Dagster."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

CLEANED_SUFFIXES = (".jsonl", ".parquet")


class LayoutError(ValueError):
    """The cleaned tree cannot be mapped to tokenized folders unambiguously."""


def is_hidden(relative_path: str | Path) -> bool:
    """True for a path with a part starting with ``.`` (``.tmp-*`` leftovers, build records)."""
    return any(part.startswith(".") for part in Path(relative_path).parts)


def safe_name(relative_path: str | Path) -> str:
    """data_io's folder name for a cleaned file: its relative path with ``/`` turned into ``__``."""
    return Path(relative_path).as_posix().replace("/", "__")


@dataclass(frozen=True)
class CleanedFile:
    path: Path
    root: Path

    # Cached, and by string slicing where it can: a sensor tick matches every file against
    # every source's outputs, and pathlib's relative_to costs more than reading the directory.
    @cached_property
    def relative(self) -> str:
        path, prefix = str(self.path), os.path.join(str(self.root), "")
        if path.startswith(prefix):
            return path[len(prefix) :].replace(os.sep, "/")
        return self.path.relative_to(self.root).as_posix()

    @cached_property
    def safe_name(self) -> str:
        return self.relative.replace("/", "__")


def scan_cleaned_files(roots: list[Path] | Path) -> list[CleanedFile]:
    """Every ``.jsonl``/``.parquet`` file under the roots, sorted by safe name.

    Hidden entries (``.tmp-*`` leftovers of interrupted writes) are ignored, and hidden folders
    are not entered. Symlinked folders are not followed (as ``Path.rglob``). Two files that map
    to the same safe name raise :class:`LayoutError` naming both.
    """
    if isinstance(roots, (str, Path)):
        roots = [Path(roots)]
    found: dict[str, CleanedFile] = {}
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            raise LayoutError(f"{root}: not a directory")
        # os.walk on strings: a sensor rescans thousands of files every minute, and pathlib's
        # rglob plus relative_to cost several times the directory reads themselves.
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [name for name in subfolders if not name.startswith(".")]
            for name in names:
                if name.startswith(".") or not name.endswith(CLEANED_SUFFIXES):
                    continue
                path = Path(folder, name)
                if not path.is_file():
                    continue
                item = CleanedFile(path=path, root=root)
                earlier = found.setdefault(item.safe_name, item)
                if earlier is not item:
                    first, second = sorted([earlier.path, path])
                    raise LayoutError(
                        f"{first} and {second} both map to the tokenized folder "
                        f"{item.safe_name!r}; rename one of them"
                    )
    return [found[name] for name in sorted(found)]
