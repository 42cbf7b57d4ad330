"""Issue 14: ``kill -9`` during a batched Dagster run of many tokenized partitions.

The run (``hrm-materialize-tokenized flan``: the run ``dagster asset materialize
--partition-range`` makes, in one process) is killed at random moments: while files are
encoded, while folders are renamed into place, while partitions are recorded (the instance's
grouped commits). Each time, every folder in place is complete, byte for byte what an
uninterrupted run writes; the final run leaves the same tree as the uninterrupted one, and
every partition recorded with that file's data version."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import DATA_VERSION_TAG
from dagster._core.instance.ref import InstanceRef
from support.cleaned_rows import write_flan_file
from support.instance_config import write_config
from support.tokenized_trees import tree_bytes, visible
from support.tokenizer_reference import gsm8k_rows

from hrm_assets.common.manifest import verify_folder
from hrm_assets.common.settings import PROJECT_ROOT
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

pytestmark = pytest.mark.slow

KILLS = 6
FILES = 60
KEY = dg.AssetKey(["tokenized", "flan"])


def flan_root(root: Path, real_raw: Path, tokenizer: Path) -> list[str]:
    """A data root with ``FILES`` FLAN task files (20 to 140 rows) and the tokenizer; the
    files' partition keys."""
    rows = gsm8k_rows(real_raw, "train", 7000)
    keys, start = [], 0
    for index in range(FILES):
        count = 20 + (index * 37) % 121
        name = f"cot_fsopt_data__task{index:03d}.parquet"
        write_flan_file(root / "cleaned" / "flan" / name, rows[start : start + count])
        start += count
        keys.append(f"flan__{name}")
    (root / "tokenizer").mkdir(parents=True)
    shutil.copy(tokenizer, root / "tokenizer" / "tokenizer.json")
    return keys


def new_home(path: Path, keys: list[str]) -> dict[str, str]:
    """A ``DAGSTER_HOME`` with the project's instance storage and the partitions registered;
    the environment of a command using it."""
    path.mkdir(parents=True)
    write_config(path, path)  # the project's storage (grouped commits), its base_dir spelled out
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(path))) as instance:
        instance.add_dynamic_partitions(TOKENIZED_PARTITIONS["flan"].name, keys)
    return {"DAGSTER_HOME": str(path), "HF_HUB_OFFLINE": "1"}


def command() -> list[str]:
    code = "from hrm_assets.defs.tokenized.materialize_all import main; main(['flan'])"
    return [sys.executable, "-c", code]


def run(env: dict[str, str], data_root: Path, kill_after: float | None = None) -> bool:
    """Run the batched materialization; SIGKILL it after ``kill_after`` seconds. True if it
    ran to the end."""
    full_env = {**os.environ, **env, "HRM_DATA_ROOT": str(data_root)}
    process = subprocess.Popen(
        command(), cwd=PROJECT_ROOT, env=full_env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _, stderr = process.communicate(timeout=kill_after if kill_after is not None else 600)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.communicate()
        return False
    assert process.returncode == 0, stderr.decode()[-3000:]
    return True


def recorded_versions(home: str) -> dict[str, str]:
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(home)) as instance:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=KEY), limit=10_000
        ).records
    latest: dict[str, str] = {}
    for record in records:  # newest first
        latest.setdefault(record.partition_key, record.asset_materialization.tags[DATA_VERSION_TAG])
    return latest


def test_kill_9_during_a_batched_dagster_run(tmp_path, real_raw, small_tokenizer_path):
    reference_root = tmp_path / "reference"
    keys = flan_root(reference_root, real_raw, small_tokenizer_path)
    reference_env = new_home(tmp_path / "reference-home", keys)
    started = time.monotonic()
    assert run(reference_env, reference_root)
    elapsed = time.monotonic() - started
    expected = {p.name: tree_bytes(p) for p in visible(reference_root / "tokenized") if p.is_dir()}
    assert len(expected) == FILES
    expected_versions = recorded_versions(reference_env["DAGSTER_HOME"])
    assert sorted(expected_versions) == sorted(keys)

    data_root = tmp_path / "killed"
    # The same files, modification times included (metadata.json records them).
    for folder in ("cleaned", "tokenizer"):
        shutil.copytree(reference_root / folder, data_root / folder)
    env = new_home(tmp_path / "killed-home", keys)
    tokenized = data_root / "tokenized"
    rng = random.Random(20261124)
    killed = runs = 0
    while killed < KILLS:
        runs += 1
        assert runs <= 3 * KILLS, f"only {killed} of {runs} runs were killed"
        if tokenized.exists():
            # Lose some finished folders, so that the next run has files to be killed in.
            folders = [p for p in visible(tokenized) if p.is_dir()]
            for folder in rng.sample(folders, k=len(folders) // 2):
                shutil.rmtree(folder)
        killed += not run(env, data_root, kill_after=rng.uniform(0.3, 1.1) * elapsed)
        if not tokenized.exists():
            continue
        for entry in visible(tokenized):
            if entry.is_dir():  # in place means complete
                assert tree_bytes(entry) == expected[entry.name], entry.name
                assert verify_folder(entry).ok

    assert run(env, data_root)
    assert {p.name: tree_bytes(p) for p in visible(tokenized) if p.is_dir()} == expected
    assert not [p.name for p in tokenized.iterdir() if p.name.startswith(".tmp-")]
    # Every partition is recorded, with its file's own version, whatever the kills lost.
    assert recorded_versions(env["DAGSTER_HOME"]) == expected_versions
