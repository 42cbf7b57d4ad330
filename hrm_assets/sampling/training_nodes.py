"""The training nodes that receive sampled epochs, read from ``training_nodes.yaml``.

A node owns its sampling settings: the keys of ``hrm-sample`` it sets in the file (``epochs``,
``seed``, ``context_size``, ``min_resp_length``, ``drop_short_after_truncate``,
``decontaminate``, ``dedup``, ``prefix_config_path``, ``tokenizer_path``, and its
``output_path``) are the ones its epochs are
made with, by the sensor's runs, a run by hand and ``hrm-sample node=<name>`` alike; a key it
leaves out takes the default of ``hrm_assets.sampling.defaults``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hrm_assets.common import settings
from hrm_assets.common.config_errors import field_problems
from hrm_assets.sampling import defaults

TRAINING_NODES_ENV = "HRM_TRAINING_NODES"
_NAME = re.compile(r"^[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*$")
# The sampler's settings a node may pin (the paths are handled on their own).
SETTING_KEYS = tuple(setting.name for setting in defaults.SETTINGS)


class TrainingNodesError(ValueError):
    """The training-node file is missing or malformed."""


def _pinned(setting: defaults.SamplingSetting) -> Any:
    """A node's optional copy of a sampler setting: None (not pinned) or a valid value."""
    return Field(default=None, ge=setting.minimum, description=setting.help)


class TrainingNode(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    queue: str = Field(default="", description="Celery queue served by this node's worker")
    output_path: str | None = None
    # hrm-sample's keys, pinned for this node (None: the default).
    seed: int | None = _pinned(defaults.SEED)
    epochs: int | None = _pinned(defaults.EPOCHS)
    context_size: int | None = _pinned(defaults.CONTEXT_SIZE)
    min_resp_length: int | None = _pinned(defaults.MIN_RESP_LENGTH)
    drop_short_after_truncate: bool | None = None
    decontaminate: bool | None = None
    dedup: bool | None = None
    prefix_config_path: str | None = Field(
        default=None, description="sampling rules of this node (default: the project's)"
    )
    tokenizer_path: str | None = Field(
        default=None, description="tokenizer shipped in the epochs' folder (default: recorded)"
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"node name {value!r} must be letters, digits, _ or inner -")
        return value

    def queue_name(self) -> str:
        return self.queue or f"node-{self.name}"

    def output_dir(self, data_root: Path | None = None) -> Path:
        """The configured path, else ``<data root>/sampled/<name>``."""
        if self.output_path:
            return Path(self.output_path).absolute()
        return settings.sampled_root(data_root) / self.name

    def pinned_settings(self) -> dict[str, Any]:
        """The sampler settings this node sets in its file (the others take their default)."""
        return {key: getattr(self, key) for key in SETTING_KEYS if getattr(self, key) is not None}

    def sampling_settings(self) -> dict[str, Any]:
        """Every sampler setting of this node: its pinned ones over the defaults."""
        return {**defaults.default_values(), **self.pinned_settings()}

    def conflicts(self, given: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
        """``{key: (given, pinned)}`` for each of ``given`` that differs from a pinned setting."""
        pinned = self.pinned_settings()
        return {
            key: (value, pinned[key])
            for key, value in given.items()
            if key in pinned and value != pinned[key]
        }

    def prefix_config(self, project_default: Path) -> Path:
        """The node's rules file, else ``project_default``."""
        if self.prefix_config_path:
            return Path(self.prefix_config_path).absolute()
        return Path(project_default)

    def fingerprint_fields(self) -> dict[str, Any]:
        """What of the node goes into its inputs' fingerprint: name, queue, output path, and
        the keys it pins (left out when unset, so that nodes configured before nodes could pin
        settings keep their fingerprint)."""
        base = self.model_dump(mode="json", include={"name", "queue", "output_path"})
        extra = self.model_dump(mode="json", exclude={"name", "queue", "output_path"})
        return {**base, **{key: value for key, value in extra.items() if value is not None}}


class TrainingNodes(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nodes: list[TrainingNode] = Field(default_factory=lambda: [TrainingNode(name="local")])

    @field_validator("nodes")
    @classmethod
    def _unique(cls, nodes: list[TrainingNode]) -> list[TrainingNode]:
        names = [node.name for node in nodes]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"duplicate node names: {duplicates}")
        if not nodes:
            raise ValueError("at least one training node is required")
        owners: dict[tuple[Path, str], str] = {}
        for node in nodes:
            # Nodes without output_path get <data root>/sampled/<name>: distinct by name. Nodes
            # on queues of their own are machines of their own (one worker each), each with
            # its own /dev/shm; one queue is one worker, so one folder.
            if not node.output_path:
                continue
            place = (node.output_dir(), node.queue_name())
            if place in owners:
                raise ValueError(
                    f"nodes {owners[place]!r} and {node.name!r} share output_path {place[0]} "
                    f"on one queue ({place[1]}, one worker): each node's sampler replaces that "
                    "folder with its own epochs; give each node its own output_path"
                )
            owners[place] = node.name
        return nodes


def nodes_sharing_output(nodes: list[TrainingNode], node: TrainingNode) -> list[str]:
    """The other nodes whose ``output_path`` is ``node``'s: on one machine (a run outside
    Celery) they would replace each other's epochs."""
    if not node.output_path:
        return []
    folder = node.output_dir()
    return [
        other.name
        for other in nodes
        if other.name != node.name and other.output_path and other.output_dir() == folder
    ]


def training_nodes_path() -> Path:
    return Path(os.environ.get(TRAINING_NODES_ENV, settings.PROJECT_ROOT / "training_nodes.yaml"))


def _node_key(location: tuple[int | str, ...]) -> str:
    """``nodes[0].epochs`` from pydantic's location."""
    parts = [f"[{part}]" if isinstance(part, int) else f".{part}" for part in location]
    return "".join(parts).lstrip(".")


def load_training_nodes(path: Path | None = None) -> list[TrainingNode]:
    """The configured nodes; a missing default file means one node, ``local``.

    Raises :class:`TrainingNodesError`, one line naming the file, for a file that is missing
    (when named), empty, not YAML, or not a valid list of nodes."""
    path = Path(path) if path is not None else training_nodes_path()
    if not path.exists():
        if path == settings.PROJECT_ROOT / "training_nodes.yaml":
            return TrainingNodes().nodes
        raise TrainingNodesError(f"{path}: training node file not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise TrainingNodesError(f"{path}: {' '.join(str(exc).split())}") from None
    if raw is None:
        raise TrainingNodesError(
            f"{path}: the file is empty; list the training nodes under 'nodes:' "
            "(e.g. nodes: [{name: local}]), or delete the file for the one node 'local'"
        )
    if not isinstance(raw, dict):
        raise TrainingNodesError(f"{path}: expected a mapping with a 'nodes' list at the top")
    try:
        return TrainingNodes(**raw).nodes
    except (TypeError, ValidationError) as exc:
        if isinstance(exc, ValidationError):
            problem = field_problems(exc, _node_key)
        else:
            problem = str(exc)
        raise TrainingNodesError(f"{path}: {problem}") from None
