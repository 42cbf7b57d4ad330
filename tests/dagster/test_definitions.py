"""The whole Definitions load, and every asset, check, job, sensor and schedule in them
resolves; each domain under ``hrm_assets/defs/`` contributes its own ``defs``."""

import dagster as dg

from hrm_assets.definitions import defs, domain_definitions


def test_the_definitions_are_loadable():
    dg.Definitions.validate_loadable(defs)


def test_every_asset_and_check_resolves():
    graph = defs.resolve_asset_graph()
    keys = graph.get_all_asset_keys()
    prefixes = {key.path[0] for key in keys}
    assert {"raw", "cleaned", "tokenizer", "tokenized", "sampled", "export"} <= prefixes
    for key in keys:
        assert defs.resolve_assets_def(key).key == key
    checks = graph.asset_check_keys
    assert checks
    for check in checks:
        assert check.asset_key in keys
        assert graph.get_check_spec(check).asset_key == check.asset_key


def test_every_job_sensor_and_schedule_resolves():
    jobs = defs.resolve_all_job_defs()
    assert {"observe_raw_sources", "clean_and_train_tokenizer", "sample_epochs"} <= {
        job.name for job in jobs
    }
    for job in jobs:
        assert defs.resolve_job_def(job.name).name == job.name
    sensors = [sensor.name for sensor in defs.sensors]
    assert {"automation_sensor", "cleaned_files_sensor", "sampled_epochs_sensor"} <= set(sensors)
    for name in sensors:
        assert defs.resolve_sensor_def(name).name == name
    schedules = [schedule.name for schedule in defs.schedules]
    assert schedules
    for name in schedules:
        assert defs.resolve_schedule_def(name).name == name


def test_the_merge_is_the_union_of_the_domains():
    """Nothing is defined outside a domain's ``defs`` but the resource and the executor."""
    domains = domain_definitions()
    assert len(domains) == 8  # raw, cleaned, tokenizer, tokenized, sampled, export, eval, common
    asset_keys = [asset.key for domain in domains for asset in domain.assets or []]
    assert len(asset_keys) == len(set(asset_keys))
    assert set(asset_keys) == set(defs.resolve_asset_graph().get_all_asset_keys())
    sensors = sorted(sensor.name for domain in domains for sensor in domain.sensors or [])
    assert sensors == sorted(sensor.name for sensor in defs.sensors)
    assert set(defs.resources) == {"data_paths"}
