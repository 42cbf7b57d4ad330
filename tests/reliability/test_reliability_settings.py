"""Settings that cannot work end in one line naming the setting, before any work: a root
variable naming a file, DAGSTER_HOME unset or not a folder, a bad ``sources.yaml`` reached
from the cleaning CLI (docs/RELIABILITY.md, "Settings")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMANDS_WITH_ROOTS = [
    [sys.executable, "-m", "hrm_assets.cleaning", "gsm8k_train"],
    ["hrm-sample"],
    ["hrm-materialize-tokenized"],
    ["hrm-partition-range", "tokenized/gsm8k_train"],
]


def _run(command: list[str], cwd: Path, **env: str | None) -> subprocess.CompletedProcess:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("HRM_") or key == "HRM_REAL_RAW"
    }
    environment.pop("DAGSTER_HOME", None)
    for key, value in env.items():
        if value is not None:
            environment[key] = value
    return subprocess.run(
        command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def _one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS_WITH_ROOTS, ids=lambda command: command[-1])
@pytest.mark.parametrize("variable", ["HRM_DATA_ROOT", "HRM_TOKENIZED_ROOT"])
def test_a_root_variable_naming_a_file_is_one_line(tmp_path, command, variable):
    not_a_folder = tmp_path / "data.txt"
    not_a_folder.write_text("a file\n", encoding="utf-8")
    (tmp_path / "home").mkdir()
    result = _run(
        command,
        tmp_path,
        **{variable: str(not_a_folder), "DAGSTER_HOME": str(tmp_path / "home")},
    )
    line = _one_error_line(result)
    assert f"{variable}={not_a_folder} names a file, not a folder" in line


@pytest.mark.parametrize(
    "command",
    [["hrm-materialize-tokenized"], ["hrm-partition-range", "tokenized/gsm8k_train"]],
    ids=lambda command: command[0],
)
def test_dagster_home_unset_outside_the_repository_is_one_line(tmp_path, command):
    line = _one_error_line(_run(command, tmp_path))
    assert "DAGSTER_HOME is not set" in line and "export DAGSTER_HOME" in line


def test_dagster_home_naming_no_folder_is_one_line(tmp_path):
    missing = tmp_path / "no_instance_here"
    line = _one_error_line(_run(["hrm-materialize-tokenized"], tmp_path, DAGSTER_HOME=str(missing)))
    assert f"DAGSTER_HOME={missing} is not a folder" in line


def test_loading_the_definitions_without_dagster_home_says_the_instance_is_temporary(tmp_path):
    """What ``dagster asset materialize`` outside the repository did without a word: record into
    an instance that vanishes when the command ends."""
    result = _run([sys.executable, "-c", "import hrm_assets.definitions"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "DAGSTER_HOME is not set" in result.stderr
    assert "temporary instance discarded when it ends" in result.stderr


def test_loading_the_definitions_with_a_data_root_naming_a_file_names_it(tmp_path):
    not_a_folder = tmp_path / "data.txt"
    not_a_folder.write_text("", encoding="utf-8")
    result = _run(
        [sys.executable, "-c", "import hrm_assets.definitions"],
        tmp_path,
        HRM_DATA_ROOT=str(not_a_folder),
        DAGSTER_HOME=str(tmp_path),
    )
    assert result.returncode == 1
    assert f"HRM_DATA_ROOT={not_a_folder} names a file, not a folder" in result.stderr


def test_a_bad_sources_yaml_reached_from_the_cleaning_cli_is_one_line(tmp_path):
    (tmp_path / "sources.yaml").write_text("sources:\n  - name: 3\n", encoding="utf-8")
    result = _run([sys.executable, "-m", "hrm_assets.cleaning", "gsm8k_train"], tmp_path)
    line = _one_error_line(result)
    assert "sources.yaml: sources[0]: name:" in line
