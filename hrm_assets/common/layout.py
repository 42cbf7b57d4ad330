"""The cleaned-file layout shared by tokenization, the tokenizer trainer and Dagster."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from hrm_assets.common.atomic import TMP_PREFIX

CLEANED_SUFFIXES = (".jsonl", ".parquet")


class LayoutError(ValueError):
    """The cleaned tree cannot be mapped to tokenized folders unambiguously."""


def is_hidden(relative_path: str | Path) -> bool:
    """True for a path with a part starting with ``.`` (``.tmp-*`` leftovers, build records)."""
    return any(is_hidden_name(part) for part in Path(relative_path).parts)


def is_hidden_name(name: str) -> bool:
    """:func:`is_hidden` of one name (for walks that look at one entry at a time)."""
    return name.startswith(".")


def is_temporary(relative_path: str | Path) -> bool:
    """True for a path with a part starting with ``.tmp-``: an output still being written (or
    left by a killed writer), never data. Other hidden names are data, as in data_io."""
    return any(part.startswith(TMP_PREFIX) for part in Path(relative_path).parts)


def is_cleaned_name(name: str) -> bool:
    """Whether a file name has data_io's extensions, ``jsonl`` or ``parquet`` as Rust's
    ``Path::extension`` reads them (a bare ``.jsonl`` has none; ``.x.jsonl`` has one)."""
    return name.endswith(CLEANED_SUFFIXES) and name not in CLEANED_SUFFIXES


def is_cleaned_file(path: Path) -> bool:
    """A regular file, not a symlink: data_io's scan (``walkdir``, links not followed) skips
    symlinked files, so we do too, and say so (:class:`CleanedScan`)."""
    return path.is_file() and not path.is_symlink()


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


@dataclass(frozen=True)
class CleanedScan:
    files: list[CleanedFile]
    # Symlinks skipped as data_io's walk skips them (links to cleaned files, links to
    # folders, which are not followed, and dangling links); callers report them
    # (:func:`describe_skipped_link`).
    symlinks: list[Path]


def describe_skipped_link(path: Path) -> str:
    """What a skipped symlink of :class:`CleanedScan` is, for a warning."""
    if not path.exists():
        return "a dangling symlink"
    if path.is_dir():
        return "a symlinked folder, not followed"
    return "a symlink"


def scan_cleaned_files(roots: list[Path] | Path) -> list[CleanedFile]:
    """The files of :func:`scan_cleaned_tree`."""
    return scan_cleaned_tree(roots).files


def add_unique_folder(found: dict[str, CleanedFile], item: CleanedFile, advice: str) -> None:
    """Add ``item`` to ``found`` (by tokenized folder name); a second file for the same folder
    raises :class:`LayoutError` naming both, followed by ``advice``."""
    earlier = found.setdefault(item.safe_name, item)
    if earlier is not item:
        first, second = sorted([earlier.path, item.path])
        raise LayoutError(
            f"{first} and {second} both map to the tokenized folder {item.safe_name!r}; {advice}"
        )


def scan_cleaned_tree(roots: list[Path] | Path) -> CleanedScan:
    """Every ``.jsonl``/``.parquet`` file under the roots, sorted by safe name, as data_io's
    tokenizer finds them: hidden files and folders are data (``.x.jsonl`` is tokenized), but
    ``.tmp-*`` entries (outputs being written) are not. Symlinked folders are not followed, and
    they, symlinked files and dangling links are skipped and listed in ``symlinks``. Two files
    that map to the same safe name raise :class:`LayoutError` naming both.
    """
    if isinstance(roots, (str, Path)):
        roots = [Path(roots)]
    found: dict[str, CleanedFile] = {}
    symlinks: list[Path] = []
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            raise LayoutError(f"{root}: not a directory")
        # os.walk on strings: a sensor rescans thousands of files every minute, and pathlib's
        # rglob plus relative_to cost several times the directory reads themselves.
        for folder, subfolders, names in os.walk(root):
            subfolders[:] = [name for name in subfolders if not name.startswith(TMP_PREFIX)]
            # os.walk lists links to folders among the folders and does not follow them.
            symlinks.extend(
                Path(folder, name) for name in subfolders if os.path.islink(Path(folder, name))
            )
            for name in names:
                if name.startswith(TMP_PREFIX):
                    continue
                if not is_cleaned_name(name):
                    # A dangling link may have named a cleaned file or folder: say so.
                    path = Path(folder, name)
                    if os.path.islink(path) and not os.path.exists(path):
                        symlinks.append(path)
                    continue
                path = Path(folder, name)
                if not is_cleaned_file(path):
                    if path.is_symlink():
                        symlinks.append(path)
                    continue
                add_unique_folder(found, CleanedFile(path=path, root=root), "rename one of them")
    return CleanedScan(files=[found[name] for name in sorted(found)], symlinks=sorted(symlinks))
