"""What tokenizing one cleaned file came to: a folder written or kept
(:class:`TokenizeOutcome`), or a failure that left the folder as it was
(:class:`TokenizeFailure`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TokenizeOutcome:
    safe_name: str
    skipped: bool
    rows: int
    tokens: int
    bytes: int  # size of the cleaned file
    data_version: str
    output_dir: Path
    text_bytes: int = 0  # UTF-8 bytes of the rows' text
    nulls: int = 0  # Parquet nulls read as empty strings


@dataclass(frozen=True)
class TokenizeFailure:
    """A file of a batch that could not be tokenized; its folder was left as it was."""

    safe_name: str
    error: Exception

    @property
    def message(self) -> str:
        return str(self.error)


def reused_outcome(
    safe_name: str, current: dict, expected: dict, output_dir: Path | None
) -> TokenizeOutcome:
    """The outcome of a folder kept as it is (``current``: its metadata)."""
    return TokenizeOutcome(
        safe_name=safe_name,
        skipped=True,
        rows=current["rows"],
        tokens=current["tokens"],
        bytes=expected["source_size"],
        data_version=expected["data_version"],
        output_dir=output_dir,  # type: ignore[arg-type]
        text_bytes=current.get("text_bytes", 0),
        nulls=current.get("nulls", 0),
    )


def written_outcome(
    safe_name: str, metadata: dict, written: dict, output_dir: Path
) -> TokenizeOutcome:
    """The outcome of a folder the Rust core just wrote (``metadata``: what it records;
    ``written``: the core's counts for the file)."""
    return TokenizeOutcome(
        safe_name=safe_name,
        skipped=False,
        rows=written["rows"],
        tokens=written["tokens"],
        bytes=metadata["source_size"],
        data_version=metadata["data_version"],
        output_dir=output_dir,
        text_bytes=written["text_bytes"],
        nulls=written["nulls"],
    )
