"""The one resource every asset reads its locations from."""

import os
from pathlib import Path

import dagster as dg

from hrm_assets.common import settings
from hrm_assets.common.data_root import DataRoot
from hrm_assets.common.storage import Location, ObjectRoot, parse_location


class DataPaths(dg.ConfigurableResource):
    """Where raw inputs are read and every output is written.

    Defaults come from ``HRM_DATA_ROOT`` (``./data``) and ``HRM_RAW_ROOT`` (unset: the Hub);
    ``HRM_CLEANED_ROOT``, ``HRM_TOKENIZER_ROOT`` and ``HRM_TOKENIZED_ROOT`` move one stage's
    root. Any of them may be an object-storage URL (``s3://bucket/prefix``): the ``*_location``
    properties say which, and the ``Path`` properties are then the local working copy in the
    cache (docs/STORAGE.md).
    """

    data_root: str
    raw_root: str | None = None
    prefix_config_path: str
    cleaned_at: str | None = None
    tokenizer_at: str | None = None
    tokenized_at: str | None = None
    # Cleaned roots adopted as they are (``$HRM_ADOPT_CLEANED``, os.pathsep-separated): when
    # set, they are the cleaned corpus, recorded and tokenized but never written.
    adopted_cleaned: str | None = None

    @classmethod
    def from_environment(cls) -> "DataPaths":
        raw = settings.raw_root()
        stages = {
            field: settings.stage_location(variable)
            for field, variable in (
                ("cleaned_at", settings.CLEANED_ROOT_ENV),
                ("tokenizer_at", settings.TOKENIZER_ROOT_ENV),
                ("tokenized_at", settings.TOKENIZED_ROOT_ENV),
            )
        }
        adopted = os.environ.get(settings.ADOPT_CLEANED_ENV) or None
        return cls(
            adopted_cleaned=adopted,
            data_root=str(settings.data_location()),
            raw_root=str(raw) if raw else None,
            prefix_config_path=str(settings.default_prefix_config_path()),
            **{field: str(value) for field, value in stages.items() if value is not None},
        )

    def _location(self, given: str | None, name: str) -> Location:
        return parse_location(given) if given else parse_location(self.data_root) / name

    @property
    def cleaned_location(self) -> Location:
        return self._location(self.cleaned_at, "cleaned")

    @property
    def tokenizer_location(self) -> Location:
        return self._location(self.tokenizer_at, "tokenizer")

    @property
    def tokenized_location(self) -> Location:
        return self._location(self.tokenized_at, "tokenized")

    @property
    def adopted_cleaned_roots(self) -> list[Location]:
        """The adopted cleaned roots, folders or s3:// roots (empty: the cleaned root is ours)."""
        return settings.adopted_cleaned_roots(self.adopted_cleaned or "")

    @property
    def raw_location(self) -> Location | None:
        return parse_location(self.raw_root) if self.raw_root else None

    @property
    def root(self) -> Path:
        """The local data root (``./data`` when ``data_root`` is a URL): where what stays on
        this machine goes (a node's epochs without an ``output_path``, exports)."""
        root = parse_location(self.data_root)
        return root if isinstance(root, Path) else Path(settings.DEFAULT_DATA_ROOT).absolute()

    @property
    def cleaned_root(self) -> Path:
        return local_path(self.cleaned_location)

    @property
    def tokenizer_dir(self) -> Path:
        return local_path(self.tokenizer_location)

    @property
    def tokenizer_json(self) -> Path:
        return self.tokenizer_dir / settings.TOKENIZER_JSON

    @property
    def tokenized_root(self) -> Path:
        return local_path(self.tokenized_location)

    @property
    def raw_path(self) -> Path | None:
        """The raw root on this machine: the folder, or the refreshed working copy of a URL
        (only objects whose ETag changed are downloaded)."""
        location = self.raw_location
        if isinstance(location, ObjectRoot):
            from hrm_assets.common.object_mirror import mirror_tree

            return mirror_tree(location).local
        return location


def local_path(location: Location) -> Path:
    """A local root as it is; a remote one's working copy in the cache."""
    return DataRoot(location).local
