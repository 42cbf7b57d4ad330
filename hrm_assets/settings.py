"""Where data lives. Every default path of the project is decided here and nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ROOT_ENV = "HRM_DATA_ROOT"
RAW_ROOT_ENV = "HRM_RAW_ROOT"
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def data_root() -> Path:
    """Root of every output: ``$HRM_DATA_ROOT``, default ``./data``."""
    return Path(os.environ.get(DATA_ROOT_ENV, "data")).absolute()


def raw_root() -> Path | None:
    """Local mirror of the raw sources (``$HRM_RAW_ROOT``), or None to load from the Hub."""
    value = os.environ.get(RAW_ROOT_ENV)
    return Path(value).absolute() if value else None


def cleaned_root(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "cleaned"


def tokenizer_dir(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "tokenizer"


def tokenized_root(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "tokenized"


def sampled_root(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "sampled"


def default_prefix_config_path() -> Path:
    return PROJECT_ROOT / "prefix_config.yaml"
