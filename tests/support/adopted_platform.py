"""The whole graph on adopted cleaned roots (``HRM_ADOPT_CLEANED``), with cleaned_files_sensor
and declarative automation driven by hand as the daemon drives them (tests/dagster/test_adopt_*)."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from hrm_assets.common import settings
from hrm_assets.definitions import build_definitions
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partition_range import range_tags
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor


def tree_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime of every file (through links) and the targets of links."""
    state = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            state[str(path)] = (os.readlink(path).encode(), path.lstat().st_mtime_ns)
        elif path.is_file():
            state[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
    return state


class Platform:
    """The whole graph on adopted roots, with the sensor and automation driven by hand as the
    daemon drives them."""

    def __init__(self, tmp_path: Path, roots: list[Path | str], tokenizer_dir: Path, **paths: str):
        self.paths = DataPaths(
            data_root=str(tmp_path / "ours"),
            tokenizer_at=str(tokenizer_dir),
            adopted_cleaned=os.pathsep.join(str(root) for root in roots),
            prefix_config_path=str(settings.default_prefix_config_path()),
            **paths,
        )
        self.defs = build_definitions(self.paths)
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor = None

    def sensor_tick(self) -> None:
        """One tick of cleaned_files_sensor, its requests and records applied."""
        context = dg.build_sensor_context(
            instance=self.instance, resources={"data_paths": self.paths}
        )
        result = cleaned_files_sensor(context)
        for request in result.dynamic_partitions_requests:
            if isinstance(request, dg.AddDynamicPartitionsRequest):
                self.instance.add_dynamic_partitions(
                    request.partitions_def_name, list(request.partition_keys)
                )
            else:
                for key in request.partition_keys:
                    self.instance.delete_dynamic_partition(request.partitions_def_name, key)
        for event in result.asset_events:
            self.instance.report_runless_asset_event(event)

    def automation_tick(self) -> dict[dg.AssetKey, list[str | None]]:
        """What automation requests now, each request then materialized; returns it."""
        result = dg.evaluate_automation_conditions(
            defs=self.defs, instance=self.instance, cursor=self.cursor
        )
        self.cursor = result.cursor
        requested: dict[dg.AssetKey, list[str | None]] = {}
        for item in result.results:
            key = item.key
            if not isinstance(key, dg.AssetKey) or result.get_num_requested(key) == 0:
                continue
            if key.path[0] == "tokenized":
                keys = set(result.get_requested_partitions(key))
                requested[key] = sorted(keys)
                # One run over the requested range, as the daemon launches a single-run
                # backfill of them.
                registered = self.instance.get_dynamic_partitions(
                    TOKENIZED_PARTITIONS[key.path[1]].name
                )
                order = [name for name in registered if name in keys]
                assert registered[registered.index(order[0]) :][: len(order)] == order
                job = self.defs.resolve_job_def(f"tokenize_{key.path[1]}")
                run = job.execute_in_process(instance=self.instance, tags=range_tags(order))
                assert run.success
            else:
                requested[key] = [None]
                job = self.defs.resolve_implicit_global_asset_job_def()
                run = job.execute_in_process(instance=self.instance, asset_selection=[key])
                assert run.success
        return requested

    def folder(self, key: str) -> Path:
        return self.paths.tokenized_root / key
