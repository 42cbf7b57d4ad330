"""Which registered source wrote each task (tokenized folder) of a sampled output.

A task is named after a cleaned file (its relative path with ``/`` as ``__``,
``hrm_assets.common.layout.safe_name``); it belongs to the source that writes such a file
(``SourceSpec.writes``): one of its fixed outputs, or a file of its format under its routed
folder; the first such source in registry order if several could have. Tasks of files no
source writes (a hand-made cleaned file) have no source.

Equivalent to trying every spelling of the name with ``/`` for ``__``
(``hrm_assets.tokenization.partitioning.relative_paths_for``) against every source, without building
the spellings: a name with many ``__`` has exponentially many.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from hrm_assets.cleaning.sources import SourceSpec
from hrm_assets.common.layout import safe_name


class TaskSourceIndex:
    """Looks up the source of a task name; built once from the specs (in registry order)."""

    def __init__(self, specs: Iterable[SourceSpec]) -> None:
        self._fixed: dict[str, tuple[int, str]] = {}
        self._routed: list[tuple[int, str, str, str]] = []
        for order, spec in enumerate(specs):
            if spec.route is None or spec.route_outputs:
                for output in spec.static_outputs:
                    self._fixed.setdefault(safe_name(output), (order, spec.name))
            else:
                folder = safe_name(spec.output.rstrip("/")) + "__"
                self._routed.append((order, folder, f".{spec.format}", spec.name))

    def source_of(self, task: str) -> str | None:
        """The name of the first source (registry order) that writes a cleaned file whose
        tokenized folder is ``task``, else ``None``."""
        found = self._fixed.get(task)
        for order, folder, suffix, name in self._routed:
            if found is not None and order > found[0]:
                break
            if task.startswith(folder) and task.endswith(suffix) and len(task) > len(folder):
                found = (order, name)
                break
        return None if found is None else found[1]


def sources_of_tasks(
    tasks: Iterable[str], specs: Mapping[str, SourceSpec]
) -> dict[str, str | None]:
    """Task name -> source name (``None``: no registered source writes it)."""
    index = TaskSourceIndex(specs.values())
    return {task: index.source_of(task) for task in tasks}
