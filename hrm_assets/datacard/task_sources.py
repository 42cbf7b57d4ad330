"""Which registered source wrote each task (tokenized folder) of a sampled output.

A task is named after a cleaned file (its relative path with ``/`` as ``__``,
``hrm_assets.layout.safe_name``); it belongs to the source that writes such a file
(``SourceSpec.writes``): one of its fixed outputs, or a file of its format under its routed
folder. Tasks of files no source writes (a hand-made cleaned file) have no source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hrm_assets.layout import safe_name
from hrm_assets.sources import SourceSpec


class TaskSourceIndex:
    """Looks up the source of a task name; built once from the specs."""

    def __init__(self, specs: Iterable[SourceSpec]) -> None:
        self._fixed: dict[str, str] = {}
        self._routed: list[tuple[str, str, str]] = []
        for spec in sorted(specs, key=lambda item: item.name):
            if spec.route is None or spec.route_outputs:
                for output in spec.static_outputs:
                    self._fixed.setdefault(safe_name(output), spec.name)
            else:
                folder = safe_name(spec.output.rstrip("/")) + "__"
                self._routed.append((folder, f".{spec.format}", spec.name))

    def source_of(self, task: str) -> str | None:
        """The name of the source whose cleaned file ``task`` was made from, else ``None``
        (the first source by name if several could have written it)."""
        found = self._fixed.get(task)
        if found is not None:
            return found
        for folder, suffix, name in self._routed:
            if task.startswith(folder) and task.endswith(suffix) and len(task) > len(folder):
                return name
        return None


def sources_of_tasks(
    tasks: Iterable[str], specs: Mapping[str, SourceSpec]
) -> dict[str, str | None]:
    """Task name -> source name (``None``: no registered source writes it)."""
    index = TaskSourceIndex(specs.values())
    return {task: index.source_of(task) for task in tasks}
