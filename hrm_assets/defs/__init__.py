"""Dagster wiring only: each module declares definitions over the pure logic in hrm_assets."""
