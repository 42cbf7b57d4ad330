"""The training nodes that receive sampled epochs, read from ``training_nodes.yaml``."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hrm_assets.common import settings

TRAINING_NODES_ENV = "HRM_TRAINING_NODES"
_NAME = re.compile(r"^[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*$")


class TrainingNodesError(ValueError):
    """The training-node file is missing or malformed."""


class TrainingNode(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    queue: str = Field(default="", description="Celery queue served by this node's worker")
    output_path: str | None = None

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
        return nodes


def training_nodes_path() -> Path:
    return Path(os.environ.get(TRAINING_NODES_ENV, settings.PROJECT_ROOT / "training_nodes.yaml"))


def load_training_nodes(path: Path | None = None) -> list[TrainingNode]:
    """The configured nodes; a missing default file means one node, ``local``."""
    path = Path(path) if path is not None else training_nodes_path()
    if not path.exists():
        if path == settings.PROJECT_ROOT / "training_nodes.yaml":
            return TrainingNodes().nodes
        raise TrainingNodesError(f"{path}: training node file not found")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return TrainingNodes(**raw).nodes
    except (yaml.YAMLError, TypeError, ValidationError) as exc:
        raise TrainingNodesError(f"{path}: {exc}") from None
