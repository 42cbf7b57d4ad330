"""The project's commands run as a user runs them in a folder of their own: a fresh Dagster
instance (``home/``), ``HRM_DATA_ROOT`` at ``ours/``, in-process runs, and none of the test
process's own ``HRM_*``/``DAGSTER_*`` settings."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from hrm_assets.common import settings


def commands_in(folder: Path) -> Callable[..., subprocess.CompletedProcess]:
    """``run(*command)``: the command in ``folder``, its output captured as text."""
    home = folder / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HRM_", "DAGSTER_"))},
        "DAGSTER_HOME": str(home),
        settings.DATA_ROOT_ENV: str(folder / "ours"),
        "HRM_EXECUTOR": "in_process",
    }

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            command, env=env, cwd=folder, capture_output=True, text=True, timeout=600
        )

    return run
