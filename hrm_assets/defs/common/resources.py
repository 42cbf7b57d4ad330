"""The one resource every asset reads its locations from."""

from pathlib import Path

import dagster as dg

from hrm_assets.common import settings


class DataPaths(dg.ConfigurableResource):
    """Where raw inputs are read and every output is written.

    Defaults come from ``HRM_DATA_ROOT`` (``./data``) and ``HRM_RAW_ROOT`` (unset: the Hub).
    """

    data_root: str
    raw_root: str | None = None
    prefix_config_path: str

    @classmethod
    def from_environment(cls) -> "DataPaths":
        raw = settings.raw_root()
        return cls(
            data_root=str(settings.data_root()),
            raw_root=str(raw) if raw else None,
            prefix_config_path=str(settings.default_prefix_config_path()),
        )

    @property
    def root(self) -> Path:
        return Path(self.data_root)

    @property
    def cleaned_root(self) -> Path:
        return settings.cleaned_root(self.root)

    @property
    def tokenizer_dir(self) -> Path:
        return settings.tokenizer_dir(self.root)

    @property
    def tokenizer_json(self) -> Path:
        return settings.tokenizer_json(self.root)

    @property
    def tokenized_root(self) -> Path:
        return settings.tokenized_root(self.root)

    @property
    def raw_path(self) -> Path | None:
        return Path(self.raw_root) if self.raw_root else None
