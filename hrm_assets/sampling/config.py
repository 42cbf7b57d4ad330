"""What a sampling run is asked to do: :class:`SamplingConfig` (the keys of data_io's
``sample_tokenized.py``) and :class:`SamplingError`, the one error every refusal raises."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from hrm_assets.common.config_errors import dotted_key, field_problems
from hrm_assets.sampling import defaults

Warn = Callable[[str], None]


class SamplingError(ValueError):
    """Bad sampling input or configuration; the message names the path and the problem."""


class SamplingConfig(BaseModel):
    """What to sample: the keys of data_io's ``sample_tokenized.py`` with its defaults.

    ``output_path`` belongs to the sampler: it is replaced as a whole on success.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokenized_path: Path
    output_path: Path
    prefix_config_path: Path
    # The tokenizer shipped in output_path/tokenizer/ (hrm_assets.sampling.tokenizer_folder); None:
    # the one tokenizer_info.json records, if it is found.
    tokenizer_path: Path | None = None
    # Defaults, bounds and help: hrm_assets.sampling.defaults.
    seed: int = defaults.SEED.field(strict=True)
    epochs: int = defaults.EPOCHS.field(strict=True)
    context_size: int = defaults.CONTEXT_SIZE.field(strict=True)
    min_resp_length: int = defaults.MIN_RESP_LENGTH.field(strict=True)
    drop_short_after_truncate: bool = defaults.DROP_SHORT_AFTER_TRUNCATE.field(strict=True)
    decontaminate: bool = defaults.DECONTAMINATE.field(strict=True)
    dedup: bool = defaults.DEDUP.field(strict=True)

    @field_validator(
        "tokenized_path", "output_path", "prefix_config_path", "tokenizer_path", mode="before"
    )
    @classmethod
    def _non_empty_path(cls, value: Any) -> Any:
        # Path("") is the current directory: almost always a missing value, never intended.
        if isinstance(value, str) and not value.strip():
            raise ValueError("must not be empty")
        return value


def config_error_message(exc: ValidationError) -> str:
    """One line per invalid field, e.g. ``epochs: Input should be greater than or equal to 1``."""
    return field_problems(exc, lambda location: dotted_key(location) or "config", show_value=False)


def make_config(**values: Any) -> SamplingConfig:
    """Build a :class:`SamplingConfig`, turning validation errors into :class:`SamplingError`."""
    try:
        return SamplingConfig(**values)
    except ValidationError as exc:
        raise SamplingError(config_error_message(exc)) from None


class RunWarnings:
    """The warnings of one run, kept in order and passed on to ``warn`` as they happen."""

    def __init__(self, warn: Warn | None = None) -> None:
        self.lines: list[str] = []
        self._warn = warn

    def __call__(self, message: str) -> None:
        self.lines.append(message)
        if self._warn is not None:
            self._warn(message)
