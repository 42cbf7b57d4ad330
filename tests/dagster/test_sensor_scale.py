"""The partition sensor and the automation condition on data_io's corpus shape (issue 14, item 5).

Fast: an ephemeral instance and empty cleaned files (the sensor reads names, not content).
"""

from __future__ import annotations

import dagster as dg
import pytest

from bench.dagster_overhead import write_sensor_files
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.common.settings import default_prefix_config_path
from hrm_assets.defs.common.automation import on_upstream_data_change
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.inputs import DATA_VERSION_TAG
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor
from hrm_assets.tokenization.tokenize import OWNER_MARKER

FILES = 2_500


def _requests(result) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(added, deleted) partition keys by partitions definition name."""
    added: dict[str, set[str]] = {}
    deleted: dict[str, set[str]] = {}
    for request in result.dynamic_partitions_requests:
        kind = added if isinstance(request, dg.AddDynamicPartitionsRequest) else deleted
        kind.setdefault(request.partitions_def_name, set()).update(request.partition_keys)
    return added, deleted


def _apply(instance: dg.DagsterInstance, result) -> None:
    """What the daemon does with a tick's requests."""
    for request in result.dynamic_partitions_requests:
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, request.partition_keys)
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)


@pytest.fixture
def corpus(tmp_path):
    paths = DataPaths(
        data_root=str(tmp_path / "data"), prefix_config_path=str(default_prefix_config_path())
    )
    write_sensor_files(paths.cleaned_root, FILES)
    return paths


def test_sensor_keeps_thousands_of_partitions_in_step_with_the_files(corpus, monkeypatch):
    instance = dg.DagsterInstance.ephemeral()
    lookups = []
    get_partitions = instance.get_dynamic_partitions
    monkeypatch.setattr(
        instance,
        "get_dynamic_partitions",
        lambda name: lookups.append(name) or get_partitions(name),
    )

    def tick():
        context = dg.build_sensor_context(instance=instance, resources={"data_paths": corpus})
        return cleaned_files_sensor(context)

    # First tick: every file is a new partition of its own source.
    first = tick()
    added, deleted = _requests(first)
    files = scan_cleaned_files(corpus.cleaned_root)
    expected: dict[str, set[str]] = {}
    for item in files:
        [owner] = [name for name, spec in SOURCES.items() if spec.writes(item.relative)]
        expected.setdefault(TOKENIZED_PARTITIONS[owner].name, set()).add(item.safe_name)
    assert len(files) == FILES and added == expected and deleted == {}
    assert len(expected["tokenized_flan"]) > 1_800
    # One partition-set lookup per source, however many files.
    assert sorted(lookups) == sorted(p.name for p in TOKENIZED_PARTITIONS.values())
    _apply(instance, first)

    # Some tasks gone (one with the tokenized folder this project wrote, one with a folder it
    # did not), others new.
    flan = corpus.cleaned_root / "flan"
    gone = sorted(flan.iterdir())[:100]
    for path in gone:
        path.unlink()
    owned = corpus.tokenized_root / f"flan__{gone[0].name}"
    foreign = corpus.tokenized_root / f"flan__{gone[1].name}"
    for folder in (owned, foreign):
        folder.mkdir(parents=True)
        (folder / "tokens.npy").write_bytes(b"")
    (owned / OWNER_MARKER).write_text("")
    new = [corpus.cleaned_root / "tasksource" / f"new_task_{i:03d}.parquet" for i in range(50)]
    for path in new:
        path.write_bytes(b"")

    lookups.clear()
    second = tick()
    added, deleted = _requests(second)
    assert added == {"tokenized_tasksource": {f"tasksource__{p.name}" for p in new}}
    assert deleted == {"tokenized_flan": {f"flan__{p.name}" for p in gone}}
    assert not owned.exists(), "the owned folder of a gone file is removed"
    assert foreign.exists(), "a folder without the ownership marker is left alone"
    assert len(lookups) == len(SOURCES)
    _apply(instance, second)

    # Steady: nothing changed, nothing requested.
    assert tick().dynamic_partitions_requests == []


def _graph() -> dg.Definitions:
    partitions = dg.DynamicPartitionsDefinition(name="files")

    @dg.asset
    def up() -> None: ...

    @dg.asset(deps=[up], partitions_def=partitions, automation_condition=on_upstream_data_change())
    def down() -> None: ...

    return dg.Definitions(assets=[up, down])


def _record(instance, key: str, version: str, partition: str | None = None) -> None:
    instance.report_runless_asset_event(
        dg.AssetMaterialization(key, partition=partition, tags={DATA_VERSION_TAG: version})
    )


def test_automation_requests_new_partitions_and_upstream_data_changes_only():
    defs, instance = _graph(), dg.DagsterInstance.ephemeral()
    down = dg.AssetKey("down")

    def evaluate(cursor):
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        return result, result.get_num_requested(down)

    instance.add_dynamic_partitions("files", ["a", "b", "c"])
    result, requested = evaluate(None)
    assert requested == 0, "an upstream never built blocks its downstream"

    _record(instance, "up", "v1")
    result, requested = evaluate(result.cursor)
    assert requested == 3, "every missing partition, once the upstream exists"
    for key in "abc":
        _record(instance, "down", key, partition=key)
    result, requested = evaluate(result.cursor)
    assert requested == 0

    _record(instance, "up", "v1")  # rebuilt, same content
    result, requested = evaluate(result.cursor)
    assert requested == 0, "a rebuild with the same data version triggers nothing"

    _record(instance, "up", "v2")
    result, requested = evaluate(result.cursor)
    assert requested == 3, "a new upstream data version rebuilds every partition"
    for key in "abc":
        _record(instance, "down", key, partition=key)
    result, requested = evaluate(result.cursor)
    assert requested == 0

    instance.add_dynamic_partitions("files", ["d"])
    result, requested = evaluate(result.cursor)
    assert requested == 1, "a new file is one new partition"
