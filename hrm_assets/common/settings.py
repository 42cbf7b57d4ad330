"""Where data lives. Every default path of the project, and the names of the files the stages
hand to each other, are decided here and nowhere else."""

from __future__ import annotations

import os
import re
from pathlib import Path

from hrm_assets.common.hub_cache import hub_snapshot_folder, is_hub_address
from hrm_assets.common.storage import (
    CACHE_DIR_ENV,
    Location,
    ObjectRoot,
    is_url,
    parse_location,
)

DATA_ROOT_ENV = "HRM_DATA_ROOT"
RAW_ROOT_ENV = "HRM_RAW_ROOT"
# Each stage's root on its own (default: <data root>/cleaned, /tokenizer, /tokenized). Any root
# may be an object-storage URL (s3://bucket/prefix; raw data also gs://, az://, hf://).
CLEANED_ROOT_ENV = "HRM_CLEANED_ROOT"
TOKENIZER_ROOT_ENV = "HRM_TOKENIZER_ROOT"
TOKENIZED_ROOT_ENV = "HRM_TOKENIZED_ROOT"
# Cleaned roots adopted as they are, instead of the cleaned root (docs/COMING_FROM_DATA_IO.md):
# folders separated by os.pathsep (":"), e.g. data_io's "data:data_clustered" or a Hub
# download's snapshot folder. Never written; see hrm_assets.adoption.cleaned.
ADOPT_CLEANED_ENV = "HRM_ADOPT_CLEANED"
DEFAULT_DATA_ROOT = "data"
SOURCES_YAML_ENV = "HRM_SOURCES_YAML"
SOURCES_YAML_NAME = "sources.yaml"
PROJECT_ROOT = Path(__file__).resolve().parents[2]

# File names of the contract between the stages (docs/CONTRACTS.md): a tokenizer folder holds
# TOKENIZER_JSON; a tokenized root holds TOKENIZER_INFO_FILE, and each task folder and sampled
# folder METADATA_FILE and TOKENS_FILE.
TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_INFO_FILE = "tokenizer_info.json"
METADATA_FILE = "metadata.json"
TOKENS_FILE = "tokens.npy"


# Roots a user sets in the environment; a local one may not exist yet (it is created), but it
# may never be a file.
ROOT_VARIABLES = (
    DATA_ROOT_ENV,
    RAW_ROOT_ENV,
    CLEANED_ROOT_ENV,
    TOKENIZER_ROOT_ENV,
    TOKENIZED_ROOT_ENV,
    CACHE_DIR_ENV,
)


def root_setting_problem() -> str | None:
    """One line naming the first root variable that names an existing file instead of a
    folder, or None when every root set is a folder, a URL or not yet created."""
    for variable in ROOT_VARIABLES:
        value = os.environ.get(variable)
        if not value or is_url(value):
            continue
        path = Path(value)
        if path.exists() and not path.is_dir():
            return (
                f"{variable}={value} names a file, not a folder: point it at a folder "
                "(created when missing) or an s3:// URL"
            )
    return None


def data_root() -> Path:
    """Local root of every output: ``$HRM_DATA_ROOT``, default ``./data``. When
    ``$HRM_DATA_ROOT`` is a URL, what stays local (sampled epochs of a node without an
    ``output_path``, exports) goes under ``./data``; :func:`data_location` is the URL."""
    value = os.environ.get(DATA_ROOT_ENV, DEFAULT_DATA_ROOT)
    return Path(DEFAULT_DATA_ROOT if is_url(value) else value).absolute()


def data_location() -> Location:
    """``$HRM_DATA_ROOT`` as given: a local ``Path`` or an :class:`ObjectRoot`."""
    return parse_location(os.environ.get(DATA_ROOT_ENV, DEFAULT_DATA_ROOT))


def stage_location(variable: str) -> Location | None:
    """A stage root set on its own (``$HRM_CLEANED_ROOT`` ...), or None: under the data root."""
    value = os.environ.get(variable)
    return parse_location(value) if value else None


def stage_root(variable: str, name: str) -> Location:
    """One stage's root: its own variable (``$HRM_TOKENIZED_ROOT`` ...) when set, else
    ``<data root>/<name>``; a folder or a URL."""
    given = stage_location(variable)
    if given is not None:
        return given
    root = data_location()
    return root / name


def raw_root() -> Location | None:
    """Mirror of the raw sources (``$HRM_RAW_ROOT``): a local folder or a URL, or None to load
    from the Hub."""
    value = os.environ.get(RAW_ROOT_ENV)
    return parse_location(value) if value else None


_URL_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


def adopted_root_entries(value: str) -> list[str]:
    """The entries of an ``os.pathsep``-separated list of roots, URLs kept whole
    (``data:hf://datasets/org/name@rev`` is two entries, not three)."""
    parts = value.split(os.pathsep)
    entries: list[str] = []
    for index, part in enumerate(parts):
        if part.startswith("//") and index and entries and _URL_SCHEME.fullmatch(entries[-1]):
            entries[-1] = f"{entries[-1]}:{part}"  # the scheme and its "//..." rejoined
        elif part.strip():
            entries.append(part)
    return entries


def adopted_cleaned_roots(value: str | None = None) -> list[Location]:
    """The adopted cleaned roots of ``value`` (default ``$HRM_ADOPT_CLEANED``), absolute; empty
    when unset. An ``hf://datasets/...`` entry is its snapshot folder in the Hub cache
    (:mod:`hrm_assets.common.hub_cache`); an ``s3://bucket/prefix`` entry is that
    :class:`ObjectRoot` (read in place, hrm_assets.adoption.objects).

    Raises ``ValueError`` (one line) for an entry that is an unusable URL, and for folders and
    ``s3://`` roots together (their files are tokenized by different steps).
    """
    value = os.environ.get(ADOPT_CLEANED_ENV, "") if value is None else value
    roots: list[Location] = []
    for entry in adopted_root_entries(value):
        if is_hub_address(entry):
            roots.append(hub_snapshot_folder(entry))
        elif is_url(entry) and entry.startswith("s3://"):
            roots.append(ObjectRoot.parse(entry))
        elif is_url(entry):
            raise ValueError(
                f"{ADOPT_CLEANED_ENV}: {entry}: only folders, hf://datasets/... addresses and "
                "s3:// roots are adopted; copy the corpus to a folder and adopt that"
            )
        else:
            roots.append(Path(entry).absolute())
    remote = [root for root in roots if isinstance(root, ObjectRoot)]
    if remote and len(remote) < len(roots):
        raise ValueError(
            f"{ADOPT_CLEANED_ENV}: {remote[0]} and {next(r for r in roots if r not in remote)}: "
            "adopt s3:// roots or folders, not both at once"
        )
    return roots


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
