"""``prefix_config.yaml``: per-task sampling rules, matched by name prefix (first match wins)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class PrefixConfigError(ValueError):
    """The rules file is missing or malformed; the message names the file and the rule."""


class SamplingRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_per_file: int | None = Field(default=None, ge=0)
    long_context: Literal["drop", "truncate"] = "truncate"
    repeat: int = Field(default=1, ge=0)


class PrefixRule(SamplingRule):
    prefix: str


DEFAULT_RULE = SamplingRule()

# libyaml's safe loader when PyYAML was built with it (ten times faster), else the pure one.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_prefix_rules(path: Path) -> list[PrefixRule]:
    """Read and validate the rules; errors name the file, the rule index and the field."""
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except FileNotFoundError:
        raise PrefixConfigError(f"{path}: prefix config not found") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PrefixConfigError(f"{path}: not valid YAML: {exc}") from None
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise PrefixConfigError(f"{path}: expected a list of rules, got {type(raw).__name__}")
    rules = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise PrefixConfigError(f"{path}: rule {index}: expected a mapping, got {item!r}")
        try:
            rules.append(PrefixRule(**item))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
            )
            raise PrefixConfigError(
                f"{path}: rule {index} (prefix {item.get('prefix')!r}): {problems}"
            ) from None
    return rules


def rule_for(name: str, rules: list[PrefixRule]) -> SamplingRule:
    """The first rule whose prefix starts ``name``, else the defaults."""
    for rule in rules:
        if name.startswith(rule.prefix):
            return rule
    return DEFAULT_RULE
