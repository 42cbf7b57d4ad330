"""``prefix_config.yaml``: reading and validating the per-task sampling rules (the rules and
their matching by name prefix are a contract: :mod:`hrm_assets.contracts.prefix_rules`).

Types are strict: ``max_per_file: true`` or ``repeat: "2"`` is an error, not 1 or 2 (YAML's
``20_000`` is an integer). ``repeat`` is at least 1: ``repeat: 0`` would empty its tasks
without a word; ``max_per_file: 0`` is the way to leave tasks out. Whether the epochs a rule
asks for fit is checked against the data by the sampler (:mod:`hrm_assets.sampling.epoch_budget`).
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from hrm_assets.common.config_errors import field_problems
from hrm_assets.contracts.prefix_rules import DEFAULT_RULE, PrefixRule, SamplingRule, rule_for

__all__ = [
    "DEFAULT_RULE",
    "PrefixConfigError",
    "PrefixRule",
    "SamplingRule",
    "load_prefix_rules",
    "read_prefix_config",
    "rule_for",
]


class PrefixConfigError(ValueError):
    """The rules file is missing or malformed; the message names the file and the rule."""


# libyaml's safe loader when PyYAML was built with it (ten times faster), else the pure one.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# A rules file is data_io's list of rules, or a mapping that holds that list under ``rules``
# beside hrm-data's optional sections (``mixture``: hrm_assets.sampling.mixture.config).
DOCUMENT_KEYS = ("rules", "mixture")


def read_prefix_config(path: Path) -> tuple[object, dict[str, object]]:
    """The parsed YAML of a rules file: its rules (as written, not yet validated) and, when
    it is a mapping, its other sections by key. Errors name the file."""
    path = Path(path)
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except FileNotFoundError:
        raise PrefixConfigError(f"{path}: prefix config not found") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        # PyYAML's message spans lines (the problem, then where): one line here.
        raise PrefixConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(raw, dict) or not any(key in raw for key in DOCUMENT_KEYS):
        return raw, {}  # a mapping of neither kind is refused as "expected a list of rules"
    unknown = [key for key in raw if key not in DOCUMENT_KEYS]
    if unknown:
        raise PrefixConfigError(
            f"{path}: unknown top-level key {unknown[0]!r} (keys: {', '.join(DOCUMENT_KEYS)}; "
            f"or the file is data_io's plain list of rules)"
        )
    if "rules" not in raw:
        raise PrefixConfigError(f"{path}: a mapping needs the list of rules under 'rules'")
    return raw["rules"], {key: value for key, value in raw.items() if key != "rules"}


def load_prefix_rules(path: Path) -> list[PrefixRule]:
    """Read and validate the rules; errors name the file, the rule index and the field."""
    path = Path(path)
    raw, _ = read_prefix_config(path)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise PrefixConfigError(f"{path}: expected a list of rules, got {type(raw).__name__}")
    rules = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict):
            raise PrefixConfigError(f"{path}: rule {index}: expected a mapping, got {item!r}")
        where = f"{path}: rule {index} (prefix {item.get('prefix')!r})"
        for key in item:
            if not isinstance(key, str):
                raise PrefixConfigError(
                    f"{where}: key {key!r} is not a field name (fields: "
                    f"{', '.join(PrefixRule.model_fields)})"
                )
        try:
            rules.append(PrefixRule.model_validate(item))
        except ValidationError as exc:
            raise PrefixConfigError(f"{where}: {field_problems(exc)}") from None
    return rules
