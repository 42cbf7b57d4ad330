"""The ``mixture:`` section of ``prefix_config.yaml``, validated strictly.

A rules file with a mixture is a mapping: data_io's list of rules under ``rules`` and this
section under ``mixture`` (``hrm_assets.sampling.prefix_config.read_prefix_config``)::

    rules:
      - prefix: "flan__"
        max_per_file: 5_000
      - prefix: "gsm8k_train.jsonl"
        repeat: 10
    mixture:
      tokens_per_epoch: 2_000_000
      group_by: rule            # weights name rule prefixes ("source": registered sources)
      weights: {"flan__": 3, "gsm8k_train.jsonl": 1}
      others: 1                 # tasks in no named group (absent: such tasks are an error)
      temperature: 1.0          # weights ** (1 / temperature), renormalised
      phases:
        - from_epoch: 8         # from epoch_8 on (epochs count from 0)
          weights: {"gsm8k_train.jsonl": 3}   # merged over the weights before
          temperature: 0.5

A phase changes only what it names; everything else carries over from the phase before it
(the section itself is phase 0). Errors name the file and the key, e.g.
``prefix_config.yaml: mixture.phases[0].from_epoch: ...``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hrm_assets.common.config_errors import field_problems
from hrm_assets.sampling.prefix_config import PrefixRule, read_prefix_config

MIXTURE_KEY = "mixture"
OTHERS_GROUP = "(others)"

Weight = Annotated[float, Field(ge=0)]


class MixtureConfigError(ValueError):
    """The ``mixture:`` section is malformed; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class PhaseConfig(_Strict):
    """What changes from ``from_epoch`` on; unset fields carry over."""

    from_epoch: int = Field(ge=1)
    tokens_per_epoch: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, gt=0)
    weights: dict[str, Weight] | None = None
    others: Weight | None = Field(default=None, ge=0)


class MixtureConfig(_Strict):
    tokens_per_epoch: int = Field(ge=1)
    group_by: Literal["rule", "source"] = "rule"
    weights: dict[str, Weight] = Field(min_length=1)
    others: Weight | None = Field(default=None, ge=0)
    temperature: float = Field(default=1.0, gt=0)
    phases: list[PhaseConfig] = []


@dataclass(frozen=True)
class Phase:
    """The mixture in force from ``first_epoch`` on (phase 0 starts at epoch 0)."""

    index: int
    first_epoch: int
    tokens_per_epoch: int
    temperature: float
    weights: dict[str, float]
    others: float | None


def effective_phases(mixture: MixtureConfig) -> list[Phase]:
    """Phase 0 (the section itself) and each phase with what it inherits filled in."""
    current = Phase(
        0, 0, mixture.tokens_per_epoch, mixture.temperature, dict(mixture.weights), mixture.others
    )
    phases = [current]
    for index, phase in enumerate(mixture.phases, start=1):
        current = Phase(
            index=index,
            first_epoch=phase.from_epoch,
            tokens_per_epoch=phase.tokens_per_epoch or current.tokens_per_epoch,
            temperature=phase.temperature or current.temperature,
            weights={**current.weights, **(phase.weights or {})},
            others=current.others if phase.others is None else phase.others,
        )
        phases.append(current)
    return phases


def _mixture_key(location: tuple) -> str:
    """``mixture.groups[0].weight`` from pydantic's location."""
    key = MIXTURE_KEY
    for part in location:
        key += f"[{part}]" if isinstance(part, int) else f".{part}"
    return key


def _check_weights(path: Path, mixture: MixtureConfig, rules: list[PrefixRule]) -> None:
    """Phases in epoch order, rule prefixes that exist, and something
    to sample in every phase."""
    sections = [("mixture", mixture.weights)] + [
        (f"mixture.phases[{index}]", phase.weights or {})
        for index, phase in enumerate(mixture.phases)
    ]
    prefixes = [rule.prefix for rule in rules]
    for where, weights in sections:
        for key in weights:
            if mixture.group_by == "rule" and key not in prefixes:
                raise MixtureConfigError(
                    f"{path}: {where}.weights.{key}: no rule has this prefix (group_by: rule "
                    f"names rules by their prefix; prefixes: {', '.join(map(repr, prefixes))})"
                )
    previous = 0
    for index, phase in enumerate(mixture.phases):
        if phase.from_epoch <= previous:
            raise MixtureConfigError(
                f"{path}: mixture.phases[{index}].from_epoch: {phase.from_epoch} must be after "
                f"the previous phase's start (epoch {previous}); phases are listed in epoch order"
            )
        previous = phase.from_epoch
    for phase in effective_phases(mixture):
        if not any(weight > 0 for weight in phase.weights.values()) and not phase.others:
            where = "mixture" if phase.index == 0 else f"mixture.phases[{phase.index - 1}]"
            raise MixtureConfigError(
                f"{path}: {where}.weights: every weight is 0, so the epochs would be empty"
            )


def parse_mixture(path: Path, section: object, rules: list[PrefixRule]) -> MixtureConfig:
    """Validate a ``mixture:`` section read from ``path`` against that file's ``rules``."""
    if not isinstance(section, dict):
        raise MixtureConfigError(
            f"{path}: mixture: expected a mapping, got {type(section).__name__}"
        )
    try:
        mixture = MixtureConfig.model_validate(section)
    except ValidationError as exc:
        raise MixtureConfigError(f"{path}: {field_problems(exc, _mixture_key)}") from None
    _check_weights(path, mixture, rules)
    return mixture


def load_mixture(path: Path, rules: list[PrefixRule]) -> MixtureConfig | None:
    """The rules file's mixture (``None`` when it has none: data_io's sampling)."""
    path = Path(path)
    _, sections = read_prefix_config(path)
    if MIXTURE_KEY not in sections:
        return None
    return parse_mixture(path, sections[MIXTURE_KEY], rules)


def check_phases_fit(path: Path, mixture: MixtureConfig, epochs: int) -> None:
    """A phase that starts at or after the last epoch would never apply: an error."""
    for index, phase in enumerate(mixture.phases):
        if phase.from_epoch >= epochs:
            raise MixtureConfigError(
                f"{path}: mixture.phases[{index}].from_epoch: {phase.from_epoch} is not below "
                f"epochs={epochs} (epochs are epoch_0 to epoch_{epochs - 1}), so the phase "
                f"would never apply"
            )
