"""The mixture code's version, for the sampled asset's build key: a change to this package
changes the epochs of a mixture, so it means resampling, as a change to the sampler does.

Found without importing the package's modules (loading the Dagster definitions must not load
numpy), and asked for only when the rules file has a mixture, so outputs without one keep
their build key.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from hrm_assets.common.hashing import value_sha256
from hrm_assets.sampling.prefix_config import read_prefix_config


def mixture_code_version() -> str:
    """SHA-256 over the package's source files (by name and content)."""
    folder = Path(find_spec("hrm_assets.sampling.mixture").origin).parent
    return value_sha256(
        [(path.name, path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.py"))]
    )


def has_mixture(prefix_config_path: Path) -> bool:
    """Whether the rules file has a ``mixture:`` section (errors as the sampler's)."""
    _, sections = read_prefix_config(Path(prefix_config_path))
    return "mixture" in sections
