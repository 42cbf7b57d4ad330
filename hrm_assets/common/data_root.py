"""One type for a configured root wherever it is: a local folder or a folder in object storage
(:class:`~hrm_assets.common.storage.ObjectRoot`).

A stage's build takes a :class:`DataRoot` and decides the local-vs-object-store branch itself;
callers (the Dagster assets, the CLIs) do not test what kind of root they hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hrm_assets.common.storage import Location, ObjectRoot, mirror_path


@dataclass(frozen=True)
class DataRoot:
    """A root of data: ``location`` is its folder, or its URL in object storage."""

    location: Location

    @property
    def remote(self) -> ObjectRoot | None:
        """Its URL when it is in object storage, else None."""
        return self.location if isinstance(self.location, ObjectRoot) else None

    @property
    def local(self) -> Path:
        """Where its bytes are on this machine: the folder itself, or the working copy of a
        root in object storage (docs/STORAGE.md)."""
        remote = self.remote
        return mirror_path(remote) if remote is not None else Path(self.location)

    def __str__(self) -> str:
        return str(self.location)
