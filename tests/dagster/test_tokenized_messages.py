"""Honest messages (issue 29): ``hrm-materialize-tokenized`` says how many files it tokenized
and how many were unchanged, ``hrm-partition-range`` how partitions come to exist."""

# ruff: noqa: F401, F811  (the shared fixtures are imported by name)
from __future__ import annotations

import dagster as dg
import pytest
from support.cleaned_rows import write_flan_file
from support.dagster_instance import data_paths, instance
from support.tokenizer_reference import gsm8k_rows

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.defs.tokenized.assets import build_tokenized_asset
from hrm_assets.defs.tokenized.materialize_all import materialize_sources
from hrm_assets.defs.tokenized.partition_range import main as partition_range
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

pytestmark = pytest.mark.slow

FLAN = SOURCES["flan"]


def test_one_changed_file_among_unchanged_ones_is_said_as_such(instance, data_paths, real_raw):
    rows = gsm8k_rows(real_raw, "train", 40)
    keys = []
    for index in range(4):
        name = f"cot_fsopt_data__task{index}.parquet"
        write_flan_file(data_paths.cleaned_root / "flan" / name, rows[index * 5 : index * 5 + 5])
        keys.append(f"flan__{name}")
    instance.add_dynamic_partitions(TOKENIZED_PARTITIONS["flan"].name, keys)
    defs = dg.Definitions(
        assets=[build_tokenized_asset(FLAN)],
        jobs=[dg.define_asset_job("tokenize_flan", selection=[dg.AssetKey(["tokenized", "flan"])])],
        resources={"data_paths": data_paths},
    )
    lines: list[str] = []
    assert materialize_sources(defs, instance, ["flan"], log=lines.append) == []
    assert lines[0].startswith("tokenized/flan: 4 partition(s) done in ")
    assert lines[0].endswith("): 4 tokenized, 0 unchanged")

    write_flan_file(data_paths.cleaned_root / "flan" / "cot_fsopt_data__task2.parquet", rows[30:])
    lines.clear()
    assert materialize_sources(defs, instance, ["flan"], log=lines.append) == []
    assert lines[0].startswith("tokenized/flan: 4 partition(s) done in ")
    assert lines[0].endswith("): 1 tokenized, 3 unchanged")

    lines.clear()
    assert materialize_sources(defs, instance, ["flan"], log=lines.append) == []
    assert lines[0].startswith("tokenized/flan: 4 partition(s) done in ")
    assert lines[0].endswith("): 0 tokenized, 4 unchanged")


def test_partition_range_says_how_partitions_come_to_exist(instance, capsys, monkeypatch):
    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(lambda: instance))
    assert partition_range(["tokenized/gsm8k_train"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: tokenized/gsm8k_train has no partitions yet: one is registered")
    assert "when cleaned/gsm8k_train is materialized" in err
    assert "cleaned_files_sensor" in err
