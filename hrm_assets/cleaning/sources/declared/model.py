"""The schema of ``sources.yaml``: typed, strict declarations (docs/SOURCES.md is the reference).

Types are strict (``strip: "yes"`` is an error) and unknown keys are refused, so a typo never
passes silently; :mod:`hrm_assets.cleaning.sources.declared.declarations` turns a validation error
into a message naming the file, the source and the key path.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hrm_assets.cleaning.sources.declared.template import parse_template
from hrm_assets.contracts.framing import KNOWN_TAGS, split_condition

RowField = Literal["instruction", "response"]
OutputFormat = Literal["jsonl", "parquet"]
InputFormat = Literal["jsonl", "parquet", "csv"]

# An asset key part and a partitions definition name: letters, digits, underscores.
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def check_condition(condition: str) -> str:
    """A condition string of known tags (``"noisy,cot"``; ``""`` is no tag)."""
    unknown = [tag for tag in split_condition(condition) if tag not in KNOWN_TAGS]
    if unknown:
        raise ValueError(
            f"condition {condition!r} has unknown tag(s) {unknown}; known tags: "
            f"{', '.join(KNOWN_TAGS)}"
        )
    return condition


class HubInput(_Strict):
    """A Hugging Face Hub dataset, loaded with ``datasets`` in streaming mode (as the built-in
    sources are), or from its mirror under the raw root (``<raw root>/<id>/<data_dir>/``)."""

    id: str = Field(min_length=1)
    config: str | None = None
    split: str = "train"  # or "a+b": every named split in turn, one raw part each
    revision: str | None = None
    # Folder of the split's files in the repository (and its mirror); default the config's
    # name, or ``data`` (the Hub's layout of a dataset without configs).
    data_dir: str | None = None

    @field_validator("split")
    @classmethod
    def _splits(cls, value: str) -> str:
        names = value.split("+")
        if not all(names) or len(set(names)) != len(names):
            raise ValueError(f"split {value!r}: a split name, or distinct names joined by '+'")
        return value

    @field_validator("id")
    @classmethod
    def _hub_id(cls, value: str) -> str:
        parts = value.split("/")
        if len(parts) != 2 or not all(parts) or ".." in parts:
            raise ValueError(f"hub id {value!r} must be 'owner/name'")
        return value


class LocalInput(_Strict):
    """Local files: a path or glob, relative to the folder of ``sources.yaml`` (or absolute);
    ``format`` defaults to the files' suffix."""

    path: str = Field(min_length=1)
    format: InputFormat | None = None

    @model_validator(mode="after")
    def _known_format(self) -> LocalInput:
        if self.format is None:
            suffix = PurePosixPath(self.path).suffix.lstrip(".")
            if suffix not in ("jsonl", "parquet", "csv"):
                raise ValueError(
                    f"path {self.path!r}: cannot tell the format from its suffix; set format: "
                    f"jsonl, parquet or csv"
                )
        return self

    @property
    def file_format(self) -> str:
        return self.format or PurePosixPath(self.path).suffix.lstrip(".")


class FieldRule(_Strict):
    """One cleaned field from the record: a column or a template over columns, optionally the
    text after a separator that must occur exactly once, stripped by default."""

    column: str | None = None
    template: str | None = None
    after: str | None = Field(default=None, min_length=1)
    strip: bool = True

    @model_validator(mode="after")
    def _one_source(self) -> FieldRule:
        if (self.column is None) == (self.template is None):
            raise ValueError("set exactly one of column and template")
        if self.template is not None:
            parse_template(self.template)
        return self

    @property
    def columns(self) -> tuple[str, ...]:
        if self.column is not None:
            return (self.column,)
        return parse_template(self.template).columns


class FieldsMapping(_Strict):
    """``instruction`` and ``response``: a column name, or a :class:`FieldRule`."""

    instruction: str | FieldRule
    response: str | FieldRule

    def rule(self, name: RowField) -> FieldRule:
        value = getattr(self, name)
        return FieldRule(column=value) if isinstance(value, str) else value


class ChatRules(_Strict):
    """OpenAI-style conversations (``{"messages": [{"role", "content"}, ...]}``); the rule is
    in :mod:`hrm_assets.cleaning.sources.declared.chat`."""

    column: str = "messages"
    turns: Literal["last", "each"] = "last"
    history_template: str = "{role}: {content}"
    separator: str = "\n\n"
    strip: bool = False

    @field_validator("history_template")
    @classmethod
    def _template(cls, value: str) -> str:
        unknown = set(parse_template(value).columns) - {"role", "content"}
        if unknown:
            raise ValueError(
                f"history_template {value!r} may use {{role}} and {{content}} only, not "
                f"{sorted(unknown)}"
            )
        return value


class ConditionFromColumn(_Strict):
    """The condition read from a column: its value as is (a tag list such as ``"noisy,cot"``),
    or looked up in ``map`` (value -> condition; a value not in it skips the record)."""

    column: str
    map: dict[str, str] | None = None

    @field_validator("map")
    @classmethod
    def _known_tags(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for condition in (value or {}).values():
            check_condition(condition)
        return value


class RowFilters(_Strict):
    """Rows kept only when they pass; every row left out is counted under its reason."""

    non_empty: list[RowField] = []
    min_chars: dict[RowField, int] = {}
    max_chars: dict[RowField, int] = {}

    @model_validator(mode="after")
    def _bounds(self) -> RowFilters:
        for name, bound in {**self.min_chars, **self.max_chars}.items():
            if bound < 0:
                raise ValueError(f"{name}: a length bound must be at least 0 (got {bound})")
        for name in set(self.min_chars) & set(self.max_chars):
            if self.min_chars[name] > self.max_chars[name]:
                raise ValueError(
                    f"{name}: min_chars {self.min_chars[name]} is above max_chars "
                    f"{self.max_chars[name]}"
                )
        return self


class OutputLayout(_Strict):
    """One file (``file: name.jsonl``), or one file per value of a column under a folder
    (``folder: tasks, per_value_of: task``, as FLAN's per-task files)."""

    file: str | None = None
    folder: str | None = None
    per_value_of: str | None = None
    format: OutputFormat | None = None

    @model_validator(mode="after")
    def _one_layout(self) -> OutputLayout:
        if self.file is not None:
            if self.folder is not None or self.per_value_of is not None:
                raise ValueError("set file, or folder with per_value_of, not both")
            suffix = PurePosixPath(self.file).suffix.lstrip(".")
            if suffix not in ("jsonl", "parquet"):
                raise ValueError(f"file {self.file!r} must end with .jsonl or .parquet")
            if self.format is not None and self.format != suffix:
                raise ValueError(f"file {self.file!r} does not end with .{self.format}")
            _relative(self.file)
        elif self.folder is None or self.per_value_of is None:
            raise ValueError("set file, or both folder and per_value_of")
        else:
            _relative(self.folder)
        return self

    @property
    def file_format(self) -> str:
        if self.file is not None:
            return PurePosixPath(self.file).suffix.lstrip(".")
        return self.format or "parquet"


def _relative(path: str) -> None:
    parts = PurePosixPath(path).parts
    if not parts or path.startswith("/") or "\\" in path:
        raise ValueError(f"{path!r} must be a relative path with '/' separators")
    if any(part in ("..", ".") or part.startswith(".") for part in parts):
        raise ValueError(f"{path!r}: no '.', '..' or hidden names (the cleaned scan skips them)")


class SourceDeclaration(_Strict):
    """One declared source: where its records are, how they become rows, where rows go."""

    name: str
    description: str = ""
    hub: HubInput | None = None
    local: LocalInput | None = None
    fields: FieldsMapping | None = None
    chat: ChatRules | None = None
    condition: str | ConditionFromColumn = ""
    filters: RowFilters = RowFilters()
    output: OutputLayout | None = None
    columns: list[Literal["condition", "instruction", "response"]] = [
        "condition",
        "instruction",
        "response",
    ]

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                f"name {value!r} must start with a letter and hold only letters, digits and "
                f"underscores (it becomes the asset keys raw/, cleaned/, tokenized/<name>)"
            )
        return value

    @field_validator("condition")
    @classmethod
    def _fixed_condition(cls, value: str | ConditionFromColumn) -> str | ConditionFromColumn:
        return check_condition(value) if isinstance(value, str) else value

    @field_validator("columns")
    @classmethod
    def _order(cls, value: list[str]) -> list[str]:
        if sorted(value) != ["condition", "instruction", "response"]:
            raise ValueError(f"columns {value} must list condition, instruction, response once")
        return value

    @model_validator(mode="after")
    def _one_input_one_mapping(self) -> SourceDeclaration:
        if (self.hub is None) == (self.local is None):
            raise ValueError("set exactly one of hub and local")
        if (self.fields is None) == (self.chat is None):
            raise ValueError("set exactly one of fields and chat")
        return self

    @property
    def output_layout(self) -> OutputLayout:
        return self.output or OutputLayout(file=f"{self.name}.jsonl")


class SourcesFile(_Strict):
    sources: list[SourceDeclaration] = []
