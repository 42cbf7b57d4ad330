"""The sampled build of one training node: whether its epochs are current, sampling them when
they are not, and its build record.

The build key hashes the inputs' fingerprint (the tokenized folders' versions and the rules
file), every sampler setting and the sampler's code version (``sampling.datacard.code_version``,
with the mixture package's only when the rules have a mixture). The epochs are kept when the
record beside the output (``.<name>.build.json``) has that key and the output still lists as it
was written. Plain data out (:class:`SampledBuild`); the Dagster asset turns it into its record.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hrm_assets.common.build_record import is_current, read_record, write_record
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.hashing import listing_sha256, value_sha256
from hrm_assets.sampling.datacard.code_version import sampling_code_version
from hrm_assets.sampling.mixture.code_version import has_mixture, mixture_code_version

Log = Callable[[str], object]


@dataclass(frozen=True)
class SampledBuild:
    """What building one node's epochs came to."""

    build_key: str  # the data version of the epochs
    summary: dict[str, Any]  # the run's figures, report and warnings (as recorded)
    resampled: bool


@dataclass(frozen=True)
class SamplingInputs:
    """Where a node's epochs come from and go, and what decides them."""

    tokenized: DataRoot
    tokenizer: DataRoot  # the tokenizer's root: a remote one's tokenizer.json is shipped
    node_tokenizer: Path | None  # the node's own tokenizer_path (shipped instead)
    output: Path
    prefix_config_path: Path
    settings: dict[str, Any]  # the sampler's settings (seed, epochs, ...)
    fingerprint: str  # the tokenized inputs' and the rules file's versions


@functools.cache
def _sampler_code_version() -> str:
    # Found without importing the sampler, so loading the definitions does not load numpy.
    return sampling_code_version()


def build_key(inputs: SamplingInputs) -> str:
    """The epochs' data version: inputs, settings and the code that decides their bytes."""
    code = _sampler_code_version()
    if has_mixture(inputs.prefix_config_path):
        code = value_sha256([code, mixture_code_version()])
    return value_sha256({"inputs": inputs.fingerprint, "config": inputs.settings, "code": code})


def record_path(output: Path) -> Path:
    """The build record beside the output: ``.<name>.build.json``."""
    return output.parent / f".{output.name}.build.json"


def build_sampled(inputs: SamplingInputs, log: Log, warn: Log) -> SampledBuild:
    """Sample the node's epochs unless they are current (module docstring); ``warn`` hears the
    sampler's warnings as they happen, ``log`` other news."""
    key = build_key(inputs)
    output = inputs.output
    record = read_record(record_path(output))
    if output.is_dir() and is_current(record, key, listing_sha256(output)):
        log(f"inputs and settings unchanged: {output} is kept as it is")
        return SampledBuild(key, record["summary"], resampled=False)
    summary = _sample(inputs, log, warn)
    write_record(record_path(output), key, listing_sha256(output), summary=summary)
    return SampledBuild(key, summary, resampled=True)


def _sample(inputs: SamplingInputs, log: Log, warn: Log) -> dict[str, Any]:
    """Run the sampler; returns the run's summary as the build record keeps it."""
    # numpy and the sampler are loaded only when epochs are sampled.
    from hrm_assets.sampling.analytics import (
        category_records,
        mixture_records,
        render_report,
        summary_figures,
        task_records,
    )
    from hrm_assets.sampling.remote_input import readable_tokenized
    from hrm_assets.sampling.sampler import make_config, sample_tokenized

    with readable_tokenized(inputs.tokenized, inputs.tokenizer, log) as (
        tokenized_path,
        tokenizer,
    ):
        config = make_config(
            tokenized_path=tokenized_path,
            output_path=inputs.output,
            prefix_config_path=inputs.prefix_config_path,
            tokenizer_path=inputs.node_tokenizer or tokenizer,
            **inputs.settings,
        )
        log(f"sampling {inputs.tokenized} into {inputs.output}")
        # Reads the tokenized root as one snapshot, waiting for tokenization steps that are
        # writing its folders and holding off those that would rewrite them.
        result = sample_tokenized(config, warn=warn, log=log)
    return {
        "figures": summary_figures(result),
        "categories": category_records(result),
        "tasks": task_records(result),
        "mixture": mixture_records(result),
        "analytics": render_report(result),
        "warnings": result.warnings,
        "tokenizer_dir": str(result.tokenizer_dir) if result.tokenizer_dir else None,
    }
