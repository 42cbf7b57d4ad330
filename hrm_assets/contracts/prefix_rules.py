"""Per-task sampling rules, matched by task name prefix (first match wins).

The rules of ``prefix_config.yaml`` (read by :mod:`hrm_assets.sampling.prefix_config`): the
sampler applies them, and the tokenizer's training reads ``max_per_file`` to sample its text as
data_io does. Types are strict: ``max_per_file: true`` or ``repeat: "2"`` is an error, not 1 or 2.
``repeat`` is at least 1: ``repeat: 0`` would empty its tasks without a word; ``max_per_file: 0``
is the way to leave tasks out.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class SamplingRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_per_file: int | None = Field(default=None, ge=0)
    long_context: Literal["drop", "truncate"] = "truncate"
    repeat: int = 1

    @field_validator("repeat")
    @classmethod
    def _repeat_samples_something(cls, value: int) -> int:
        if value == 0:
            raise ValueError(
                "0 would sample nothing from these tasks; use max_per_file: 0 to leave tasks out"
            )
        if value < 0:
            raise ValueError(f"must be at least 1 (got {value})")
        return value


class PrefixRule(SamplingRule):
    prefix: str


DEFAULT_RULE = SamplingRule()


def rule_for(name: str, rules: list[PrefixRule]) -> SamplingRule:
    """The first rule whose prefix starts ``name``, else the defaults."""
    for rule in rules:
        if name.startswith(rule.prefix):
            return rule
    return DEFAULT_RULE
