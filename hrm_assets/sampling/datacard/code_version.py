"""The code version a data card records, and the sampled asset's build key is made of: the
package version and the sampler's version.

The sampler's version covers everything that decides a sampled folder's bytes: the sampler and
every project module it imports (found by reading their imports, without importing them, so
loading the Dagster definitions does not load numpy; see ``hrm_assets.common.source_version``),
and the SHA-256 of the Rust core's sampling sources baked into the extension when it was built
(``_core.SAMPLE_SOURCE_SHA256``, ``rust_tokenizer/build.rs``). The mixture package is left out
here and added by the sampled asset only when the rules file has a mixture
(``sampling/mixture/code_version.py``), so outputs without one keep their build key. A change
to any of them means resampling.
"""

from __future__ import annotations

from hrm_assets import __version__, _core
from hrm_assets.common.source_version import installed_closure_sha256

SAMPLER_MODULE = "hrm_assets.sampling.sampler"
# Versioned on their own, and only for outputs that use them (see the module docstring).
NOT_IN_SAMPLER_VERSION = ("hrm_assets.sampling.mixture",)


def sampling_code_version() -> str:
    """SHA-256 of the sampler's Python sources (its import closure) and of its Rust sources."""
    return installed_closure_sha256(
        SAMPLER_MODULE, NOT_IN_SAMPLER_VERSION, (_core.SAMPLE_SOURCE_SHA256,)
    )


def code_version() -> dict[str, str]:
    """``{"hrm_data": <package version>, "sampling_sha256": <sampling_code_version()>}``."""
    return {"hrm_data": __version__, "sampling_sha256": sampling_code_version()}
