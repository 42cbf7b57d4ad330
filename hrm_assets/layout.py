"""The cleaned-file layout shared by tokenization, the tokenizer trainer and Dagster."""

from __future__ import annotations

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

    # Cached: a sensor tick matches every file against every source's outputs.
    @cached_property
    def relative(self) -> str:
        return self.path.relative_to(self.root).as_posix()

    @cached_property
    def safe_name(self) -> str:
        return safe_name(self.relative)


def scan_cleaned_files(roots: list[Path] | Path) -> list[CleanedFile]:
    """Every ``.jsonl``/``.parquet`` file under the roots, sorted by safe name.

    Hidden entries (``.tmp-*`` leftovers of interrupted writes) are ignored. Two files that map
    to the same safe name raise :class:`LayoutError` naming both.
    """
    if isinstance(roots, (str, Path)):
        roots = [Path(roots)]
    found: dict[str, CleanedFile] = {}
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            raise LayoutError(f"{root}: not a directory")
        for path in sorted(root.rglob("*")):
            if is_hidden(path.relative_to(root)):
                continue
            if not path.is_file() or path.suffix not in CLEANED_SUFFIXES:
                continue
            item = CleanedFile(path=path, root=root)
            if item.safe_name in found:
                raise LayoutError(
                    f"{found[item.safe_name].path} and {path} both map to the tokenized folder "
                    f"{item.safe_name!r}; rename one of them"
                )
            found[item.safe_name] = item
    return [found[name] for name in sorted(found)]
