"""Where data lives. Every default path of the project, and the names of the files the stages
hand to each other, are decided here and nowhere else."""

from __future__ import annotations

import os
from pathlib import Path

DATA_ROOT_ENV = "HRM_DATA_ROOT"
RAW_ROOT_ENV = "HRM_RAW_ROOT"
SOURCES_YAML_ENV = "HRM_SOURCES_YAML"
SOURCES_YAML_NAME = "sources.yaml"
PROJECT_ROOT = Path(__file__).resolve().parents[2]

# File names of the contract between the stages (CONTRACTS.md): a tokenizer folder holds
# TOKENIZER_JSON; a tokenized root holds TOKENIZER_INFO_FILE, and each task folder and sampled
# folder METADATA_FILE and TOKENS_FILE.
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_INFO_FILE = "tokenizer_info.json"
METADATA_FILE = "metadata.json"
TOKENS_FILE = "tokens.npy"


def data_root() -> Path:
    """Root of every output: ``$HRM_DATA_ROOT``, default ``./data``."""
    return Path(os.environ.get(DATA_ROOT_ENV, "data")).absolute()


def raw_root() -> Path | None:
    """Local mirror of the raw sources (``$HRM_RAW_ROOT``), or None to load from the Hub."""
    value = os.environ.get(RAW_ROOT_ENV)
    return Path(value).absolute() if value else None


def sources_yaml_path() -> Path | None:
    """The declared sources' file: ``$HRM_SOURCES_YAML`` (set but empty: none), else
    ``./sources.yaml`` when it exists, else None (no declared sources)."""
    value = os.environ.get(SOURCES_YAML_ENV)
    if value is not None:
        return Path(value).absolute() if value else None
    default = Path(SOURCES_YAML_NAME).absolute()
    return default if default.is_file() else None


def cleaned_root(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "cleaned"


def tokenizer_dir(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "tokenizer"


def tokenizer_json(root: Path | None = None) -> Path:
    """The trained tokenizer's file: ``<root>/tokenizer/tokenizer.json``."""
    return tokenizer_dir(root) / TOKENIZER_JSON


def tokenized_root(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "tokenized"


def sampled_root(root: Path | None = None) -> Path:
    return (Path(root) if root is not None else data_root()) / "sampled"


def default_prefix_config_path() -> Path:
    return PROJECT_ROOT / "prefix_config.yaml"
