"""The cleaned asset, materialized through Dagster in a temporary instance, carries how fast
its cleaning ran (``speed/*``: engine, threads, records/s, raw MB/s) in its metadata, and logs
the closing summary with them. SYNTHETIC raw data: dmmath's line format, written here."""

from __future__ import annotations

import random

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.defs.cleaned.assets import build_cleaned_asset
from hrm_assets.defs.common.resources import DataPaths
from tests.cleaning.test_columnar_sources import write_dmmath


def test_cleaned_asset_metadata_carries_the_speed_figures(tmp_path, monkeypatch):
    write_dmmath(tmp_path / "raw", random.Random(2), lines=400)
    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    paths = DataPaths(
        data_root=str(tmp_path / "data"),
        raw_root=str(tmp_path / "raw"),
        prefix_config_path=str(tmp_path / "prefix_config.yaml"),
    )
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        result = dg.materialize(
            [build_cleaned_asset(SOURCES["dmmath"])],
            instance=instance,
            resources={"data_paths": paths},
        )
    assert result.success
    (materialization,) = result.asset_materializations_for_node(result.all_node_events[0].node_name)
    metadata = {
        key: getattr(value, "value", value) for key, value in materialization.metadata.items()
    }
    assert metadata["speed/engine"] == "columnar"
    assert metadata["speed/threads"] >= 1
    assert metadata["speed/records_per_second"] > 0
    assert metadata["speed/raw_mb_per_second"] > 0
    assert metadata["speed/raw_bytes"] == sum(
        path.stat().st_size for path in (tmp_path / "raw").rglob("*.txt")
    )
    # 3 sets x 2 modules x 200 pairs, an unpaired line in train-medium's two files
    assert metadata["records_read"] == 3 * 2 * 200 + 2
    assert metadata["rows_written"] == 3 * 2 * 200
