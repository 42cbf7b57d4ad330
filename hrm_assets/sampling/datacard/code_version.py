"""The code version a data card records: the package version and the sampler's own version.

The sampler's version is the SHA-256 of ``hrm_assets/sampling/sampler.py``, found without importing
it (so loading the Dagster definitions, which need it for the sampled asset's build key, does
not load numpy). A change to that file means resampling.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

from hrm_assets import __version__
from hrm_assets.common.hashing import file_sha256


def sampling_code_version() -> str:
    """SHA-256 of the sampler's source file."""
    return file_sha256(Path(find_spec("hrm_assets.sampling.sampler").origin))


def code_version() -> dict[str, str]:
    """``{"hrm_data": <package version>, "sampling_sha256": <sampling_code_version()>}``."""
    return {"hrm_data": __version__, "sampling_sha256": sampling_code_version()}
