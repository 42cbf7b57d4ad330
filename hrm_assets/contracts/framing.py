"""How a cleaned row becomes tokens: its condition tags, the special tokens around instruction
and response.

A row is ``[BOQ, tag ids..., instruction ids..., EOQ]`` followed by
``[response ids..., EOA]`` (docs/CONTRACTS.md section 2). The defaults are data_io's.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict, Field, field_validator

KNOWN_TAGS = ("direct", "cot", "noisy", "synth")

DEFAULT_BOQ = "<|im_start|>"
DEFAULT_EOQ = "<|im_end|>"
DEFAULT_EOA = "<|box_end|>"
DEFAULT_CONDITIONS = {
    "direct": "<|object_ref_start|>",
    "cot": "<|object_ref_end|>",
    "noisy": "<|quad_start|>",
    "synth": "<|quad_end|>",
}


class Framing(BaseModel):
    """The framing tokens (as strings of the tokenizer's vocabulary)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    boq: str = DEFAULT_BOQ
    eoq: str = DEFAULT_EOQ
    eoa: str = DEFAULT_EOA
    conditions: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_CONDITIONS))

    @field_validator("boq", "eoq", "eoa")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("framing tokens must be non-empty strings")
        return value

    @field_validator("conditions")
    @classmethod
    def _valid_conditions(cls, value: dict[str, str]) -> dict[str, str]:
        for tag, token in value.items():
            if not tag or "," in tag or not token:
                raise ValueError(f"bad condition mapping {tag!r}={token!r}")
        return value

    def tokenizer_info(self, tokenizer_path: str, vocab_size: int) -> dict:
        """The ``tokenizer_info.json`` object, keys in data_io's order.

        data_io's serde_json keeps insertion order (a dependency turns on its
        ``preserve_order``), so the keys come as its ``json!`` lists them. Its
        ``condition_mapping`` is a Rust ``HashMap``, in a random order each run; ours is the
        order the conditions were given (the defaults: ``direct, cot, noisy, synth``, as
        data_io's command line lists them), one of the orders data_io writes.
        """
        return {
            "tokenizer_path": tokenizer_path,
            "boq": self.boq,
            "eoq": self.eoq,
            "eoa": self.eoa,
            "condition_mapping": dict(self.conditions),
            "vocab_size": vocab_size,
        }


def parse_conditions(spec: str | list[str]) -> dict[str, str]:
    """Parse data_io's ``--conditions direct=<tok>,cot=<tok>`` value."""
    items = spec if isinstance(spec, list) else [spec]
    mapping: dict[str, str] = {}
    for item in items:
        for pair in item.split(","):
            if not pair:
                continue
            tag, sep, token = pair.partition("=")
            if not sep or not tag or not token:
                raise ValueError(f"bad --conditions entry {pair!r}: expected tag=token")
            mapping[tag] = token
    if not mapping:
        raise ValueError("--conditions needs at least one tag=token pair")
    return mapping


def tokenizer_info_json(info: dict) -> str:
    """Serialise like serde_json's compact writer (data_io's ``tokenizer_info.json``): keys in
    the dict's order, no spaces, no final newline, non-ASCII as UTF-8, and the same escapes
    (``\\"``, ``\\\\``, ``\\b\\f\\n\\r\\t``, other control characters as lowercase
    ``\\u00xx``)."""
    return json.dumps(info, separators=(",", ":"), ensure_ascii=False)


def split_condition(condition: str) -> list[str]:
    """The tags of a condition string; the empty string means no tag."""
    return condition.split(",") if condition else []
