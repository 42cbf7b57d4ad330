"""The evaluation sets HRM-Text is judged on, and those a user declares in YAML.

An evaluation set is a split of a Hub dataset and the text fields of each record that training
rows must not contain. It is loaded with ``datasets``: from the Hub by default, or from a local
mirror laid out like the Hub repository (the raw sources' layout,
``hrm_assets/cleaning/sources/hub.py``)::

    <mirror>/openai/gsm8k/main/test-00000-of-00001.parquet     (or test.jsonl, test-*.jsonl)
    <mirror>/EleutherAI/hendrycks_math/algebra/test.jsonl
    <mirror>/cais/mmlu/all/test-00000-of-00001.parquet
    <mirror>/allenai/ai2_arc/ARC-Easy/test-00000-of-00001.parquet

A loaded set is saved as one JSONL file (one object per record: ``{"config", "row", <fields>}``)
that the contamination scan reads; the file's SHA-256 is the set's version.

More sets are declared in a YAML file (``$HRM_EVAL_SETS_YAML``, else ``./eval_sets.yaml`` when it
exists)::

    eval_sets:
      - name: theoremqa_test           # the asset eval/theoremqa_test
        hub_id: TIGER-Lab/TheoremQA
        split: test                    # default test
        configs: [default]             # default: every config of the dataset
        fields: [Question]             # text fields checked, at least one
        revision: main                 # optional
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hrm_assets.cleaning.sources.math import SUBJECTS as MATH_SOURCE_SUBJECTS
from hrm_assets.common.atomic import atomic_file

EVAL_SETS_YAML_ENV = "HRM_EVAL_SETS_YAML"
EVAL_SETS_YAML_NAME = "eval_sets.yaml"
EVAL_ROOT_ENV = "HRM_EVAL_ROOT"
"""A local mirror of the evaluation sets' Hub repositories; unset: load from the Hub."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_]*$")
_PARQUET_PATTERNS = ("{split}-*.parquet", "{split}.parquet")
_JSONL_PATTERNS = ("{split}.jsonl", "{split}-*.jsonl")
# The Hub configs of EleutherAI/hendrycks_math: the MATH source's (its test split here).
MATH_SUBJECTS = tuple(MATH_SOURCE_SUBJECTS)


class EvalSetError(ValueError):
    """A declared evaluation set is malformed, or a loaded record lacks a text field."""


@dataclass(frozen=True)
class EvalSetSpec:
    """One evaluation set: ``split`` of the Hub dataset ``hub_id`` (configs ``configs``, None:
    all), the record fields ``fields`` checked (the first is the one shown in examples)."""

    name: str
    hub_id: str
    fields: tuple[str, ...]
    split: str = "test"
    configs: tuple[str, ...] | None = None
    revision: str | None = None

    def __post_init__(self):
        if not _NAME.match(self.name):
            raise EvalSetError(
                f"evaluation set name {self.name!r}: lowercase letters, digits and '_' only"
            )
        if not self.fields:
            raise EvalSetError(f"evaluation set {self.name}: at least one field is needed")

    def describe(self) -> str:
        configs = ",".join(self.configs) if self.configs else "<every config>"
        return f"{self.hub_id} [{configs}] split {self.split}, fields {', '.join(self.fields)}"


BUILT_IN: tuple[EvalSetSpec, ...] = (
    EvalSetSpec("gsm8k_test", "openai/gsm8k", ("question", "answer"), configs=("main",)),
    EvalSetSpec(
        "math_test", "EleutherAI/hendrycks_math", ("problem", "solution"), configs=MATH_SUBJECTS
    ),
    EvalSetSpec("mmlu_test", "cais/mmlu", ("question",), configs=("all",)),
    EvalSetSpec("arc_easy_test", "allenai/ai2_arc", ("question",), configs=("ARC-Easy",)),
    EvalSetSpec("arc_challenge_test", "allenai/ai2_arc", ("question",), configs=("ARC-Challenge",)),
)
"""HRM-Text's evaluation sets: GSM8K, MATH, MMLU, ARC-Easy and ARC-Challenge, test splits."""


def eval_sets_yaml_path() -> Path | None:
    """``$HRM_EVAL_SETS_YAML`` (set but empty: none), else ``./eval_sets.yaml`` if it exists."""
    value = os.environ.get(EVAL_SETS_YAML_ENV)
    if value is not None:
        return Path(value).absolute() if value else None
    default = Path(EVAL_SETS_YAML_NAME).absolute()
    return default if default.is_file() else None


def eval_root() -> Path | None:
    value = os.environ.get(EVAL_ROOT_ENV)
    return Path(value).absolute() if value else None


def _string_list(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise EvalSetError(f"{where}: expected a list of non-empty strings")
    return tuple(value)


def specs_from_mapping(document: object, path: Path | str) -> list[EvalSetSpec]:
    """The evaluation sets of a parsed YAML document (``{"eval_sets": [...]}``)."""
    if not isinstance(document, Mapping) or not isinstance(document.get("eval_sets"), list):
        raise EvalSetError(f"{path}: expected a mapping with an `eval_sets:` list")
    allowed = {"name", "hub_id", "split", "configs", "fields", "revision"}
    specs = []
    for number, entry in enumerate(document["eval_sets"], start=1):
        where = f"{path}: eval_sets[{number}]"
        if not isinstance(entry, Mapping):
            raise EvalSetError(f"{where}: expected a mapping")
        unknown = sorted(set(entry) - allowed)
        if unknown:
            raise EvalSetError(f"{where}: unknown key(s) {unknown}; known: {sorted(allowed)}")
        for key in ("name", "hub_id", "fields"):
            if key not in entry:
                raise EvalSetError(f"{where}: `{key}` is required")
        for key in ("name", "hub_id", "split", "revision"):
            if key in entry and not (isinstance(entry[key], str) and entry[key]):
                raise EvalSetError(f"{where}, {key}: expected a non-empty string")
        configs = entry.get("configs")
        try:
            specs.append(
                EvalSetSpec(
                    name=entry["name"],
                    hub_id=entry["hub_id"],
                    fields=_string_list(entry["fields"], f"{where}, fields"),
                    split=entry.get("split", "test"),
                    configs=None if configs is None else _string_list(configs, f"{where}, configs"),
                    revision=entry.get("revision"),
                )
            )
        except EvalSetError as error:
            raise EvalSetError(f"{where}: {error}") from None
    return specs


def eval_set_specs(yaml_path: Path | None = None) -> list[EvalSetSpec]:
    """The built-in sets then those declared in ``yaml_path`` (default
    :func:`eval_sets_yaml_path`); a declared name equal to another is an error."""
    specs = list(BUILT_IN)
    path = yaml_path if yaml_path is not None else eval_sets_yaml_path()
    if path is not None:
        import yaml

        try:
            document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise EvalSetError(f"{path}: not valid YAML: {error}") from None
        specs.extend(specs_from_mapping(document, path))
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise EvalSetError(f"evaluation set {spec.name!r} is declared twice")
        seen.add(spec.name)
    return specs


# -- loading -----------------------------------------------------------------------------------


def _split_files(folder: Path, split: str) -> tuple[str, list[Path]] | None:
    for builder, patterns in (("parquet", _PARQUET_PATTERNS), ("json", _JSONL_PATTERNS)):
        files = sorted({p for pat in patterns for p in folder.glob(pat.format(split=split))})
        if files:
            return builder, files
    return None


def config_names(spec: EvalSetSpec, mirror: Path | None) -> list[str]:
    """``spec.configs``, else every config: from the Hub, or the mirror's config folders that
    hold files of the split (sorted)."""
    if spec.configs is not None:
        return list(spec.configs)
    if mirror is None:
        from datasets import get_dataset_config_names

        options = {"revision": spec.revision} if spec.revision else {}
        return list(get_dataset_config_names(spec.hub_id, **options))
    repo = Path(mirror) / spec.hub_id
    names = [
        entry.name
        for entry in sorted(repo.iterdir() if repo.is_dir() else [])
        if entry.is_dir() and not entry.name.startswith(".") and _split_files(entry, spec.split)
    ]
    if not names:
        raise FileNotFoundError(
            f"eval/{spec.name}: no config folder with {spec.split} files in {repo}"
        )
    return names


def _load(spec: EvalSetSpec, mirror: Path | None, config: str):
    """A streaming ``datasets`` dataset of one config's split (Hub or mirror)."""
    from datasets import load_dataset

    if mirror is None:
        options = {"revision": spec.revision} if spec.revision else {}
        return load_dataset(spec.hub_id, config, split=spec.split, streaming=True, **options)
    folder = Path(mirror) / spec.hub_id / config
    found = _split_files(folder, spec.split) if folder.is_dir() else None
    if found is None:
        wanted = ", ".join(p.format(split=spec.split) for p in _PARQUET_PATTERNS + _JSONL_PATTERNS)
        raise FileNotFoundError(f"eval/{spec.name}: no files in {folder} (looked for {wanted})")
    builder, files = found
    data_files = {spec.split: [str(path) for path in files]}
    return load_dataset(builder, data_files=data_files, split=spec.split, streaming=True)


@dataclass
class EvalSet:
    """A loaded evaluation set: per record its config and the text of each field."""

    spec: EvalSetSpec
    configs: list[str] = field(default_factory=list)
    texts: dict[str, list[str]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.configs)

    def shown(self, item: int) -> str:
        """The text shown for record ``item`` in examples: its first field."""
        return self.texts[self.spec.fields[0]][item]


def _records(spec: EvalSetSpec, mirror: Path | None) -> Iterator[tuple[str, int, Mapping]]:
    for config in config_names(spec, mirror):
        for row, record in enumerate(_load(spec, mirror, config)):
            yield config, row, record


def load_eval_set(spec: EvalSetSpec, mirror: Path | None = None) -> EvalSet:
    """Load ``spec`` from the Hub (``mirror`` None) or from a local mirror laid out like the Hub.
    A record whose field is missing or not a string is an error naming set, config, row, field."""
    loaded = EvalSet(spec, texts={name: [] for name in spec.fields})
    for config, row, record in _records(spec, mirror):
        for name in spec.fields:
            value = record.get(name)
            if not isinstance(value, str):
                kind = "missing" if name not in record else f"a {type(value).__name__}"
                raise EvalSetError(
                    f"eval/{spec.name}: config {config}, row {row + 1}, field {name!r}: "
                    f"expected a string, got {kind}"
                )
            loaded.texts[name].append(value)
        loaded.configs.append(config)
    if not loaded.configs:
        raise EvalSetError(f"eval/{spec.name}: {spec.describe()} has no rows")
    return loaded


def write_eval_set(loaded: EvalSet, path: Path) -> str:
    """Save ``loaded`` as JSONL at ``path`` (written to a temporary name, renamed); returns the
    file's SHA-256."""
    digest = hashlib.sha256()
    with atomic_file(Path(path)) as handle:
        for item, config in enumerate(loaded.configs):
            record = {"config": config, "row": item}
            record.update({name: loaded.texts[name][item] for name in loaded.spec.fields})
            line = json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
            digest.update(line)
            handle.write(line)
    return digest.hexdigest()


def read_eval_set(spec: EvalSetSpec, path: Path) -> EvalSet:
    """An evaluation set saved by :func:`write_eval_set`."""
    loaded = EvalSet(spec, texts={name: [] for name in spec.fields})
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                record = json.loads(line)
                values = [record[name] for name in spec.fields]
                config = record["config"]
            except (ValueError, KeyError) as error:
                raise EvalSetError(f"{path}: line {number}: {error!r}") from None
            for name, value in zip(spec.fields, values, strict=True):
                loaded.texts[name].append(value)
            loaded.configs.append(config)
    return loaded


def specs_by_name(specs: Sequence[EvalSetSpec]) -> dict[str, EvalSetSpec]:
    return {spec.name: spec for spec in specs}
