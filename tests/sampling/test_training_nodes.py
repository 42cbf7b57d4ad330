"""Training nodes: the configuration file, each node's sampled asset and queue, the execution
mode switch, the worker identity, the sampled-epochs sensor (fingerprints, run keys, waiting),
and sampling one node by hand from the command line."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import dagster as dg
import pytest
from conftest import REPO_ROOT
from dagster._core.test_utils import create_run_for_test

from hrm_assets.common import settings
from hrm_assets.defs.common import executor
from hrm_assets.defs.common.executor import (
    BACKEND_ENV,
    BROKER_ENV,
    CELERY_QUEUE_TAG,
    DEFAULT_BROKER,
    EXECUTOR_ENV,
    GENERAL_QUEUE,
    WORKER_NODE_ENV,
    current_step_worker,
)
from hrm_assets.defs.common.keys import sampled_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.assets import NODE_TAG, build_sampled_asset
from hrm_assets.defs.sampled.inputs import (
    DATA_VERSION_TAG,
    FINGERPRINT_METADATA,
    FINGERPRINT_TAG,
    tokenization_runs_in_progress,
    tokenized_state,
)
from hrm_assets.defs.sampled.sensors import SENSOR_NAME, build_sampled_epochs_sensor, run_key
from hrm_assets.defs.tokenized.assets import TOKENIZED_ASSETS
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.sampling.training_nodes import (
    TRAINING_NODES_ENV,
    TrainingNode,
    TrainingNodesError,
    load_training_nodes,
    training_nodes_path,
)
from hrm_assets.tokenization.tokenize import tokenize_tree

NODES = [TrainingNode(name="a"), TrainingNode(name="b", queue="gpu-b", output_path="/dev/shm/x")]


# --------------------------------------------------------------------------- configuration


def test_project_file_configures_one_local_node(monkeypatch):
    monkeypatch.delenv(TRAINING_NODES_ENV, raising=False)
    assert training_nodes_path() == REPO_ROOT / "training_nodes.yaml"
    (node,) = load_training_nodes()
    assert (node.name, node.queue_name(), node.output_path) == ("local", "node-local", None)


def test_environment_names_the_nodes_file(monkeypatch, tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text("nodes:\n  - name: gpu-0\n  - name: gpu_1\n    queue: fast\n")
    monkeypatch.setenv(TRAINING_NODES_ENV, str(path))
    nodes = load_training_nodes()
    assert [(n.name, n.queue_name()) for n in nodes] == [("gpu-0", "node-gpu-0"), ("gpu_1", "fast")]


def test_missing_default_file_means_one_local_node(monkeypatch, tmp_path):
    monkeypatch.delenv(TRAINING_NODES_ENV, raising=False)
    monkeypatch.setattr(settings, "PROJECT_ROOT", tmp_path)
    assert [node.name for node in load_training_nodes()] == ["local"]


def test_output_paths(tmp_path):
    assert NODES[0].output_dir(tmp_path) == tmp_path / "sampled" / "a"
    assert NODES[1].output_dir(tmp_path) == Path("/dev/shm/x")
    relative = TrainingNode(name="c", output_path="rel/out")
    assert relative.output_dir(tmp_path) == Path("rel/out").absolute()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes:\n  - name: a\n  - name: a\n", "duplicate node names: ['a']"),
        ("nodes:\n  - name: 'a b'\n", "must be letters, digits"),
        ("nodes:\n  - name: -a\n", "must be letters, digits"),
        ("nodes:\n  - name: a\n    gpus: 8\n", "gpus"),
        ("nodes: []\n", "at least one training node"),
        ("- a\n", "nodes"),
        ("nodes: [\n", "while parsing"),
    ],
)
def test_bad_nodes_files_name_the_file_and_the_problem(tmp_path, text, message):
    path = tmp_path / "nodes.yaml"
    path.write_text(text)
    with pytest.raises(TrainingNodesError) as error:
        load_training_nodes(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_missing_named_file_is_an_error(tmp_path):
    with pytest.raises(TrainingNodesError, match="training node file not found"):
        load_training_nodes(tmp_path / "absent.yaml")


# --------------------------------------------------------------------------- assets and queues


def test_each_node_gets_an_asset_on_its_own_queue():
    for node, queue in zip(NODES, ["node-a", "gpu-b"], strict=True):
        asset = build_sampled_asset(node)
        assert asset.key == sampled_key(node.name)
        assert asset.group_names_by_key[asset.key] == "sampled"
        assert asset.op.tags[CELERY_QUEUE_TAG] == queue
        assert asset.op.tags[NODE_TAG] == node.name
        assert asset.specs_by_key[asset.key].tags[NODE_TAG] == node.name
    # Tokenization partitions go to the general queue, served by every worker.
    assert {asset.op.tags[CELERY_QUEUE_TAG] for asset in TOKENIZED_ASSETS} == {GENERAL_QUEUE}


def test_definitions_register_the_sensor_on_sample_epochs():
    from hrm_assets.definitions import defs

    sensor = defs.resolve_sensor_def(SENSOR_NAME)
    assert sensor.job_name == "sample_epochs"
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    job = defs.resolve_job_def("sample_epochs")
    keys = {key for key in job.asset_layer.executable_asset_keys if key.path[0] == "sampled"}
    assert keys == {sampled_key(node.name) for node in load_training_nodes()}


# --------------------------------------------------------------------------- execution mode


def test_executor_modes(monkeypatch):
    for name in (EXECUTOR_ENV, BROKER_ENV, BACKEND_ENV):
        monkeypatch.delenv(name, raising=False)
    assert executor.executor_from_environment() is executor.MULTIPROCESS_EXECUTOR
    monkeypatch.setenv(EXECUTOR_ENV, "in_process")
    assert executor.executor_from_environment() is dg.in_process_executor
    monkeypatch.setenv(EXECUTOR_ENV, "celery")
    assert executor.executor_from_environment().name == "celery"
    assert executor.celery_connection() == {"broker": DEFAULT_BROKER, "backend": DEFAULT_BROKER}
    monkeypatch.setenv(BROKER_ENV, "redis://broker:6379/0")
    assert executor.celery_connection()["backend"] == "redis://broker:6379/0"
    monkeypatch.setenv(BACKEND_ENV, "redis://broker:6379/1")
    assert executor.celery_connection() == {
        "broker": "redis://broker:6379/0",
        "backend": "redis://broker:6379/1",
    }
    monkeypatch.setenv(EXECUTOR_ENV, "k8s")
    with pytest.raises(ValueError, match="HRM_EXECUTOR='k8s'.*multiprocess, in_process, celery"):
        executor.executor_from_environment()


def test_step_worker_outside_and_inside_a_celery_task(monkeypatch):
    monkeypatch.setenv(WORKER_NODE_ENV, "a")
    outside = current_step_worker()
    assert (outside.hostname, outside.name, outside.queue, outside.node) == (
        socket.gethostname(),
        "",
        "",
        "a",
    )
    from celery import Celery

    app = Celery("identity", broker="memory://", backend="cache+memory://")
    task = app.task(name="identity")(current_step_worker)
    # dagster-celery sends a step for queue Q with routing key "Q.execute_plan".
    inside = task.apply(routing_key="node-a.execute_plan").get()
    assert inside.queue == "node-a"
    assert inside.name == socket.gethostname()  # an eager task's worker name
    assert inside.node == "a"


def _write_tokenized_root(data_root: Path, tokenizer_path: Path) -> None:
    """A real tokenized tree of two small tasks, through the data_io-compatible tokenizer."""
    cleaned = data_root / "cleaned"
    cleaned.mkdir(parents=True)
    for name, count in (("gsm8k_train.jsonl", 40), ("math_train.jsonl", 30)):
        rows = [
            {"condition": "cot", "instruction": f"What is {i} + {i}?", "response": f"{2 * i}"}
            for i in range(count)
        ]
        (cleaned / name).write_text("".join(json.dumps(row) + "\n" for row in rows))
    tokenize_tree([cleaned], data_root / "tokenized", tokenizer_path, progress=False)


def test_step_refuses_another_nodes_epochs(monkeypatch, tmp_path, small_tokenizer_path):
    """A worker declared for node b never writes node a's epochs (a misrouted queue)."""
    data = tmp_path / "data"
    _write_tokenized_root(data, small_tokenizer_path)
    node = TrainingNode(name="a", output_path=str(tmp_path / "a" / "sampled"))
    monkeypatch.setenv(WORKER_NODE_ENV, "b")
    paths = DataPaths(
        data_root=str(data), prefix_config_path=str(settings.default_prefix_config_path())
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [build_sampled_asset(node)],
            instance=instance,
            resources={"data_paths": paths},
            raise_on_error=False,
        )
    assert not result.success
    (failure,) = result.get_step_failure_events()
    message = failure.step_failure_data.user_failure_data.description
    assert "training node 'a'" in message and "serves node 'b'" in message
    assert not (tmp_path / "a").exists()


# --------------------------------------------------------------------------- the sensor


@pytest.fixture
def instance():
    with dg.instance_for_test() as instance:
        yield instance


@pytest.fixture
def data_paths(tmp_path) -> DataPaths:
    rules = tmp_path / "prefix_config.yaml"
    shutil.copy(settings.default_prefix_config_path(), rules)
    return DataPaths(data_root=str(tmp_path / "data"), prefix_config_path=str(rules))


def _tick(instance, data_paths, nodes=NODES):
    sensor = build_sampled_epochs_sensor(nodes)
    definitions = dg.Definitions(
        assets=[build_sampled_asset(node) for node in nodes],
        sensors=[sensor],
        resources={"data_paths": data_paths},
    )
    # Dagster 1.13's build_sensor_context does not take resources from `definitions`.
    context = dg.build_sensor_context(
        instance=instance, definitions=definitions, resources={"data_paths": data_paths}
    )
    return definitions.resolve_sensor_def(SENSOR_NAME).evaluate_tick(context)


def _keys(tick) -> dict[str, str]:
    return {request.tags[NODE_TAG]: request.run_key for request in tick.run_requests}


def _tokenized(instance, source: str, partition: str, version: str | None) -> None:
    """Register a partition and, unless ``version`` is None, record its materialization."""
    name = TOKENIZED_PARTITIONS[source].name
    if partition not in instance.get_dynamic_partitions(name):
        instance.add_dynamic_partitions(name, [partition])
    if version is not None:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                asset_key=tokenized_key(source),
                partition=partition,
                tags={DATA_VERSION_TAG: version},
            )
        )


def _sampled(instance, node: str, fingerprint: str) -> None:
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=sampled_key(node), metadata={FINGERPRINT_METADATA: fingerprint}
        )
    )


def test_sensor_waits_for_tokenized_data(instance, data_paths):
    assert "no tokenized partition materialized yet" in _tick(instance, data_paths).skip_message
    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v1")
    _tokenized(instance, "math_train", "math_train.jsonl", None)
    tick = _tick(instance, data_paths)
    assert not tick.run_requests
    assert "waiting for 1 registered tokenized partition(s) never materialized" in (
        tick.skip_message
    )
    assert "math_train/math_train.jsonl" in tick.skip_message


def test_sensor_requests_one_run_per_node_with_fingerprint_run_keys(instance, data_paths):
    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v1")
    _tokenized(instance, "dmmath", "dmmath__a.parquet", "v2")
    tick = _tick(instance, data_paths)
    assert [request.tags[NODE_TAG] for request in tick.run_requests] == ["a", "b"]
    fingerprints = set()
    for request, node in zip(tick.run_requests, NODES, strict=True):
        fingerprint = request.tags[FINGERPRINT_TAG]
        assert request.run_key == run_key(node, fingerprint) == f"{node.name}:{fingerprint}"
        assert request.asset_selection == [sampled_key(node.name)]
        assert request.job_name in (None, "sample_epochs")
        fingerprints.add(fingerprint)
    assert len(fingerprints) == 2  # the node is part of the fingerprint
    assert tokenized_state(instance).versions == {
        "gsm8k_train": {"gsm8k_train.jsonl": "v1"},
        "dmmath": {"dmmath__a.parquet": "v2"},
    }


def test_run_keys_follow_data_versions_and_prefix_config(instance, data_paths):
    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v1")
    _tokenized(instance, "math_train", "math_train.jsonl", "m1")
    first = _keys(_tick(instance, data_paths))
    assert _keys(_tick(instance, data_paths)) == first  # idempotent across ticks

    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v1")  # no-op rebuild
    assert _keys(_tick(instance, data_paths)) == first

    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v2")  # content changed
    second = _keys(_tick(instance, data_paths))
    assert set(second.values()).isdisjoint(first.values())

    rules = Path(data_paths.prefix_config_path)
    rules.write_text(rules.read_text() + "\n- prefix: extra__\n  max_per_file: 3\n")
    third = _keys(_tick(instance, data_paths))
    assert set(third.values()).isdisjoint(set(first.values()) | set(second.values()))

    # A removed cleaned file's partition no longer counts, even though its events remain.
    instance.delete_dynamic_partition(TOKENIZED_PARTITIONS["math_train"].name, "math_train.jsonl")
    assert "math_train" not in tokenized_state(instance).versions
    assert set(_keys(_tick(instance, data_paths)).values()).isdisjoint(third.values())


def test_nodes_holding_current_epochs_are_not_requested(instance, data_paths):
    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v1")
    requests = {r.tags[NODE_TAG]: r for r in _tick(instance, data_paths).run_requests}
    _sampled(instance, "a", requests["a"].tags[FINGERPRINT_TAG])
    assert list(_keys(_tick(instance, data_paths))) == ["b"]
    _sampled(instance, "b", "an older fingerprint")
    assert list(_keys(_tick(instance, data_paths))) == ["b"]
    _sampled(instance, "b", requests["b"].tags[FINGERPRINT_TAG])
    tick = _tick(instance, data_paths)
    assert not tick.run_requests
    assert "all 2 node(s) hold epochs of the current 1 tokenized partition(s)" in (
        tick.skip_message
    )
    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v2")
    assert list(_keys(_tick(instance, data_paths))) == ["a", "b"]


def test_sensor_waits_while_tokenization_runs(instance, data_paths):
    _tokenized(instance, "gsm8k_train", "gsm8k_train.jsonl", "v1")
    running = create_run_for_test(
        instance, job_name="tokenize_gsm8k_train", status=dg.DagsterRunStatus.STARTED
    )
    starting = create_run_for_test(
        instance,
        job_name="__ASSET_JOB",
        asset_selection=frozenset({tokenized_key("math_train")}),
        status=dg.DagsterRunStatus.STARTING,
    )
    create_run_for_test(
        instance, job_name="tokenize_math_train", status=dg.DagsterRunStatus.SUCCESS
    )
    create_run_for_test(instance, job_name="sample_epochs", status=dg.DagsterRunStatus.STARTED)
    assert sorted(tokenization_runs_in_progress(instance)) == sorted(
        [running.run_id, starting.run_id]
    )
    tick = _tick(instance, data_paths)
    assert not tick.run_requests and "waiting for 2 tokenization run(s)" in tick.skip_message
    for run in (running, starting):
        instance.report_run_failed(instance.get_run_by_id(run.run_id))
    assert _keys(_tick(instance, data_paths)).keys() == {"a", "b"}


# --------------------------------------------------------------------------- by hand


def test_one_node_sampled_by_hand_from_the_command_line(tmp_path, small_tokenizer_path):
    data = tmp_path / "data"
    _write_tokenized_root(data, small_tokenizer_path)
    nodes_file = tmp_path / "nodes.yaml"
    outputs = {name: tmp_path / name / "sampled" for name in ("a", "b")}
    nodes_file.write_text(
        "nodes:\n" + "".join(f"  - name: {n}\n    output_path: {p}\n" for n, p in outputs.items())
    )
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {
        **{k: v for k, v in os.environ.items() if k != WORKER_NODE_ENV},
        "DAGSTER_HOME": str(home),
        settings.DATA_ROOT_ENV: str(data),
        TRAINING_NODES_ENV: str(nodes_file),
        EXECUTOR_ENV: "in_process",
    }
    # The README's command for one node.
    command = ["dagster", "asset", "materialize", "-m", "hrm_assets.definitions"]
    done = subprocess.run(
        [*command, "--select", 'key:"sampled/b"'],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (outputs["b"] / "tokens.npy").is_file()
    assert sorted(p.name for p in outputs["b"].glob("epoch_*")) == [f"epoch_{i}" for i in range(10)]
    assert not outputs["a"].exists()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_latest_materialization_event(sampled_key("a")) is None
        event = instance.get_latest_materialization_event(sampled_key("b"))
        metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
    assert metadata["training_node"] == "b"
    assert metadata["output_path"] == str(outputs["b"])
    assert (metadata["worker_name"], metadata["worker_queue"]) == ("", "")  # not on Celery
    assert len(metadata[FINGERPRINT_METADATA]) == 64
