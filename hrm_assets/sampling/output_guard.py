"""The output folder a run may replace: not nested with its input, holding nothing the sampler
cannot prove it wrote (:mod:`hrm_assets.sampling.output_folder`), and locked against a
concurrent run."""

from __future__ import annotations

import contextlib
from pathlib import Path

from hrm_assets.common.atomic import exclusive_lock, lock_path_for
from hrm_assets.common.manifest import MANIFEST_FILE, SAMPLED_KIND, kind_problem
from hrm_assets.sampling.config import SamplingConfig, SamplingError
from hrm_assets.sampling.output_folder import output_target, unproven_paths


def check_output_path(config: SamplingConfig) -> Path:
    """The folder to write (``output_path`` through any symlink,
    :func:`hrm_assets.sampling.output_folder.output_target`), refused when it nests with the inputs,
    is not a folder, or holds anything the sampler cannot prove it wrote."""
    output = output_target(config.output_path)
    tokenized = output_target(config.tokenized_path)
    if output == tokenized or tokenized in output.parents or output in tokenized.parents:
        raise SamplingError(
            f"output_path {output} and tokenized_path {tokenized} must not contain each other"
        )
    if output.exists() and not output.is_dir():
        raise SamplingError(f"{output}: output_path exists and is not a directory")
    refuse_unproven(output)
    return output


def refuse_unproven(output: Path) -> None:
    """Refuse to replace ``output`` while it holds paths that are not a sampled output's."""
    if not output.is_dir():
        return
    other_kind = kind_problem(output, SAMPLED_KIND, "hrm-sample")
    if other_kind is not None:
        raise SamplingError(f"output_path {other_kind}")
    foreign = unproven_paths(output)
    if foreign:
        shown = ", ".join(str(path) for path in foreign[:5]) + (
            f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        )
        raise SamplingError(
            f"{output}: output_path holds what is not a sampled output (not listed in its "
            f"{MANIFEST_FILE}): {shown}; the output is replaced as a whole, so move them away "
            f"or choose an empty or sampled folder"
        )


def exclusive_output(output: Path) -> contextlib.ExitStack:
    """Hold the lock of ``output`` (released when the returned stack exits); a concurrent run
    is refused at once rather than queued."""
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(exclusive_lock(lock_path_for(output), wait=False))
    except BlockingIOError:
        raise SamplingError(f"{output}: another sampling run is writing this output_path") from None
    return stack
