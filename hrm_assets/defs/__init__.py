"""Dagster wiring only, one package per domain, each exporting its `defs` (merged by
hrm_assets.definitions); the logic they wire lives in the stage packages of hrm_assets."""
