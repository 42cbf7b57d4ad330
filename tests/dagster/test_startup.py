"""Cheap steps: what loading the definitions imports, how the multiprocess executor starts a
step, and that a cleaned source is one step that checks its rows. Nothing here is timed; the
figures are in docs/BENCHMARKS.md ("Step start-up")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.util import find_spec

import dagster as dg
import pytest
from dagster._core.definitions.reconstruct import ReconstructableJob
from dagster._core.system_config.objects import ResolvedRunConfig

from hrm_assets.cleaning.build import BUILD_RECORDS, content_version
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.settings import default_prefix_config_path
from hrm_assets.defs.cleaned.assets import build_cleaned_asset
from hrm_assets.defs.cleaned.checks import ROWS_VALID
from hrm_assets.defs.common import executor
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.demo import write_demo_corpus
from hrm_assets.tokenization.partitioning import files_of_source

HEAVY_MODULES = (
    "datasets",
    "huggingface_hub",
    "matplotlib",
    "numpy",
    "pandas",
    "polars",
    "pyarrow",
    "tokenizers",
)


def test_loading_the_definitions_imports_no_heavy_library():
    code = (
        "import json, sys\n"
        "import hrm_assets.definitions\n"
        f"print(json.dumps([m for m in {HEAVY_MODULES!r} if m in sys.modules]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []


def _engine_config(executor_def: dg.ExecutorDefinition, run_config: dict) -> dict:
    job = dg.Definitions(
        assets=[dg.AssetSpec("placeholder")], executor=executor_def
    ).resolve_implicit_global_asset_job_def()
    return ResolvedRunConfig.build(job, run_config).execution.execution_engine_config


def test_multiprocess_steps_fork_from_a_server_with_the_definitions_loaded(monkeypatch):
    monkeypatch.delenv(executor.EXECUTOR_ENV, raising=False)
    chosen = executor.executor_from_environment()
    assert chosen is executor.MULTIPROCESS_EXECUTOR
    assert chosen.name == "multiprocess"
    preload = {"forkserver": {"preload_modules": list(executor.FORKSERVER_PRELOAD)}}
    assert _engine_config(chosen, {})["start_method"] == preload
    assert executor.FORKSERVER_PRELOAD[0] == "hrm_assets.definitions"
    # The forkserver skips a module it cannot import: a renamed one would silently cost time.
    assert all(find_spec(name) is not None for name in executor.FORKSERVER_PRELOAD)


def test_run_config_still_chooses_the_start_method_and_concurrency():
    run_config = {"execution": {"config": {"start_method": {"spawn": {}}, "max_concurrent": 1}}}
    config = _engine_config(executor.MULTIPROCESS_EXECUTOR, run_config)
    assert config["start_method"] == {"spawn": {}}
    assert config["max_concurrent"] == 1


@dg.op
def step_pid() -> int:
    return os.getpid()


@dg.op
def next_step_pid(previous: int) -> int:
    return os.getpid()


@dg.job(executor_def=executor.MULTIPROCESS_EXECUTOR)
def one_step():
    step_pid()


@dg.job(executor_def=executor.MULTIPROCESS_EXECUTOR)
def two_steps():
    next_step_pid(step_pid())


def _step_pids(job_fn, instance) -> set[int]:
    # Step processes load the job from this file (tests/ is not a package they can import).
    job = ReconstructableJob.for_file(__file__, job_fn.name)
    with dg.execute_job(job, instance=instance) as result:
        assert result.success
        return {
            result.output_for_node(name)
            for name in ("step_pid", "next_step_pid")
            if name in {node.name for node in result.job_def.nodes}
        }


def test_a_run_of_one_step_runs_it_in_the_run_process_and_more_steps_get_a_process_each(
    tmp_path,
):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        assert _step_pids(one_step, instance) == {os.getpid()}
        pids = _step_pids(two_steps, instance)
        assert len(pids) == 2 and os.getpid() not in pids


def test_other_modes_are_unchanged(monkeypatch):
    monkeypatch.setenv(executor.EXECUTOR_ENV, "in_process")
    assert executor.executor_from_environment() is dg.in_process_executor
    monkeypatch.setenv(executor.EXECUTOR_ENV, "celery")
    assert executor.executor_from_environment().name == "celery"


# --------------------------------------------------------------------------- cleaned steps

GSM8K = SOURCES["gsm8k_train"]


@pytest.fixture
def cleaned_setup(tmp_path):
    write_demo_corpus(tmp_path / "raw", [GSM8K.name])
    paths = DataPaths(
        data_root=str(tmp_path / "data"),
        raw_root=str(tmp_path / "raw"),
        prefix_config_path=str(default_prefix_config_path()),
    )
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        yield paths, instance


def _materialize(paths: DataPaths, instance) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [build_cleaned_asset(GSM8K)],
        instance=instance,
        resources={"data_paths": paths},
        raise_on_error=False,
    )


def test_a_cleaned_source_is_one_step_that_checks_its_rows(cleaned_setup):
    paths, instance = cleaned_setup
    for rebuilt in (True, False):
        result = _materialize(paths, instance)
        assert result.success
        steps = {event.step_key for event in result.all_events if event.step_key}
        assert len(steps) == 1
        [materialization] = result.asset_materializations_for_node(next(iter(steps)))
        assert materialization.metadata["rebuilt"].value is rebuilt
        [evaluation] = result.get_asset_check_evaluations()
        assert (evaluation.check_name, evaluation.passed) == (ROWS_VALID, True)
        assert evaluation.metadata["rows"].value > 0


def test_a_bad_row_fails_the_cleaned_step_even_when_it_skips(cleaned_setup):
    paths, instance = cleaned_setup
    assert _materialize(paths, instance).success
    # A file changed behind a build record that still matches it: the skip path keeps it,
    # the blocking check must still fail the step.
    root = paths.cleaned_root
    [item] = files_of_source(GSM8K, root)
    with item.path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"condition": "bogus", "instruction": "q", "response": "a"}) + "\n")
    record_path = root / BUILD_RECORDS / f"{GSM8K.name}.json"
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record["outputs"] = content_version(root, [item])
    record_path.write_text(json.dumps(record), encoding="utf-8")

    result = _materialize(paths, instance)
    assert not result.success
    [evaluation] = result.get_asset_check_evaluations()
    assert (evaluation.check_name, evaluation.passed) == (ROWS_VALID, False)
    assert "bogus" in json.dumps(evaluation.metadata["problems"].value)
