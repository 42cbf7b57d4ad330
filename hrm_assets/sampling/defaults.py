"""The sampler's settings, their defaults, bounds and help: the one place they are written.

``SamplingConfig`` (``hrm_assets.sampling.sampler``), the ``hrm-sample`` command
(``hrm_assets.sampling.cli``), the Dagster run config of ``sampled/<node>``
(``hrm_assets.defs.sampled.assets``) and the table in ``docs/SAMPLING.md`` (checked by a test
against :func:`markdown_table`) all read them here.

The numbers are data_io's ``sample_tokenized.py`` defaults (docs/CONTRACTS.md section 3).
``drop_short_after_truncate`` is hrm-data's own and off, so the default bytes stay data_io's.
The paths are not here: they default to the project's layout (``hrm_assets.common.settings``), and
the Dagster asset takes them from its ``DataPaths`` resource and training node.

Only pydantic is imported: loading the Dagster definitions imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field


@dataclass(frozen=True)
class SamplingSetting:
    """One sampling setting: its key (CLI and config), default, lower bound and help text."""

    name: str
    default: int | bool
    minimum: int | None
    help: str

    def field(self, *, bounded: bool = True, **extra: Any) -> Any:
        """A pydantic ``Field`` with this default, description and (if ``bounded``) lower
        bound; ``extra`` adds options such as ``strict=True``."""
        minimum = self.minimum if bounded else None
        return Field(default=self.default, ge=minimum, description=self.help, **extra)


SEED = SamplingSetting("seed", 0, 0, "random seed of the epoch draw")
EPOCHS = SamplingSetting(
    "epochs",
    10,
    1,
    "epochs to write; set HRM-Text's training epochs to match",
)
CONTEXT_SIZE = SamplingSetting(
    "context_size", 4097, 2, "max tokens per row, +1 for the autoregressive shift"
)
MIN_RESP_LENGTH = SamplingSetting(
    "min_resp_length", 2, 0, "drop rows whose response (EOA included) is shorter than this"
)
DROP_SHORT_AFTER_TRUNCATE = SamplingSetting(
    "drop_short_after_truncate",
    False,
    None,
    "also drop rows that truncation leaves shorter than min_resp_length (false: keep them, as "
    "data_io does; true changes the bytes wherever such rows exist)",
)

DECONTAMINATE = SamplingSetting(
    "decontaminate",
    False,
    None,
    "leave out rows sharing a word n-gram with an evaluation set (docs/CONTAMINATION.md; read "
    "from the tokenized folders' sidecars; true changes the bytes wherever such rows exist)",
)
DEDUP = SamplingSetting(
    "dedup",
    False,
    None,
    "keep one copy of rows with the same normalized instruction and response (the first, "
    "tasks in order; true changes the bytes wherever duplicates exist)",
)

SETTINGS: tuple[SamplingSetting, ...] = (
    SEED,
    EPOCHS,
    CONTEXT_SIZE,
    MIN_RESP_LENGTH,
    DROP_SHORT_AFTER_TRUNCATE,
    DECONTAMINATE,
    DEDUP,
)


def default_values() -> dict[str, int | bool]:
    """Every setting's default by key."""
    return {setting.name: setting.default for setting in SETTINGS}


def shown_default(setting: SamplingSetting) -> str:
    """The default as written on a command line (``false`` for booleans, as hrm-sample reads)."""
    if isinstance(setting.default, bool):
        return "true" if setting.default else "false"
    return str(setting.default)


def markdown_table() -> str:
    """The settings as the Markdown table ``docs/SAMPLING.md`` holds (ends with a newline)."""
    lines = ["| Key | Default | Minimum | Meaning |", "|---|---|---|---|"]
    for setting in SETTINGS:
        minimum = "" if setting.minimum is None else str(setting.minimum)
        lines.append(
            f"| `{setting.name}` | `{shown_default(setting)}` | {minimum} | {setting.help} |"
        )
    return "\n".join(lines) + "\n"
