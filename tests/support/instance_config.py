"""A dagster.yaml for a test instance (pooled SQLite storage)."""


def write_config(home, base_dir) -> None:
    (home / "dagster.yaml").write_text(
        "storage:\n  custom:\n    module: hrm_assets.dagster_internals.instance\n"
        f"    class: PooledSqliteStorage\n    config:\n      base_dir: {base_dir}\n"
        "telemetry:\n  enabled: false\n"
    )
