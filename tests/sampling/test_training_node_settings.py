"""A training node owns its sampler settings (training_nodes.yaml): the sensor's runs, a run by
hand and ``hrm-sample node=<name>`` use them, and nothing replaces the node's folder with
epochs made from other settings (issue 29); a node file that is empty, or whose nodes share
one output folder, is one clear error line (issue 30)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest

from hrm_assets.common import settings
from hrm_assets.defs.common.keys import sampled_key, tokenized_key
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.sampled.assets import NODE_TAG, build_sampled_asset
from hrm_assets.defs.sampled.inputs import DATA_VERSION_TAG
from hrm_assets.defs.sampled.sensors import SENSOR_NAME, build_sampled_epochs_sensor
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS
from hrm_assets.sampling.training_nodes import (
    TrainingNode,
    TrainingNodesError,
    load_training_nodes,
)
from hrm_assets.tokenization.tokenize import tokenize_tree

# --------------------------------------------------------------------------- the file


def test_an_empty_training_nodes_file_is_one_clear_error_line(tmp_path):
    path = tmp_path / "training_nodes.yaml"
    for text in ("", "# only a comment\n"):
        path.write_text(text)
        with pytest.raises(TrainingNodesError) as error:
            load_training_nodes(path)
        message = str(error.value)
        assert "\n" not in message
        assert message.startswith(f"{path}: the file is empty; list the training nodes")


def test_two_nodes_sharing_one_output_path_are_one_clear_error_line(tmp_path):
    """One queue is one worker, one machine: the nodes' epochs would replace each other's."""
    path = tmp_path / "training_nodes.yaml"
    path.write_text(
        "nodes:\n"
        "  - {name: gpu0, queue: shared, output_path: /dev/shm/sampled}\n"
        "  - {name: gpu1, queue: shared, output_path: /dev/shm/sampled/}\n"
    )
    with pytest.raises(TrainingNodesError) as error:
        load_training_nodes(path)
    message = str(error.value)
    assert "\n" not in message
    assert message == (
        f"{path}: nodes: nodes 'gpu0' and 'gpu1' share output_path /dev/shm/sampled on one "
        "queue (shared, one worker): each node's sampler replaces that folder with its own "
        "epochs; give each node its own output_path"
    )


def test_nodes_sharing_one_output_path_on_one_machine_fail_in_one_line(
    tmp_path, small_tokenizer_path, monkeypatch, capsys
):
    """Queues of their own are machines of their own on Celery (docker/training_nodes.yaml:
    /dev/shm/sampled on each); run here, outside Celery, one node's epochs would replace the
    other's: the step and ``hrm-sample node=`` refuse, one line each."""
    from hrm_assets.sampling import cli as sample
    from hrm_assets.sampling.training_nodes import TRAINING_NODES_ENV

    shared = tmp_path / "shm" / "sampled"
    path = tmp_path / "training_nodes.yaml"
    path.write_text(
        f"nodes:\n  - {{name: gpu0, output_path: {shared}}}\n"
        f"  - {{name: gpu1, output_path: {shared}}}\n"
    )
    monkeypatch.setenv(TRAINING_NODES_ENV, str(path))
    gpu0, _ = load_training_nodes()
    data = tmp_path / "data"
    _write_tokenized(data, small_tokenizer_path, 20)
    paths = DataPaths(
        data_root=str(data), prefix_config_path=str(settings.default_prefix_config_path())
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [build_sampled_asset(gpu0)],
            instance=instance,
            resources={"data_paths": paths},
            raise_on_error=False,
        )
    assert not result.success
    (failure,) = result.get_step_failure_events()
    message = failure.step_failure_data.user_failure_data.description
    assert "\n" not in message
    assert message.startswith(
        f"training nodes 'gpu0' and 'gpu1' share output_path {shared} and this run is on this "
        "machine (not on Celery"
    )
    assert sample.main(["node=gpu1", f"tokenized_path={data / 'tokenized'}"]) == 2
    err = capsys.readouterr().err
    assert f"node=gpu1: nodes 'gpu1' and 'gpu0' share output_path {shared}" in err
    assert not shared.exists()


def test_a_node_pins_hrm_samples_keys(tmp_path):
    path = tmp_path / "training_nodes.yaml"
    path.write_text(
        "nodes:\n"
        "  - name: gpu0\n"
        "    output_path: /dev/shm/sampled\n"
        "    epochs: 4\n"
        "    seed: 7\n"
        "    context_size: 2049\n"
        "    prefix_config_path: rules/prefix_config.yaml\n"
        "  - name: plain\n"
    )
    pinned, plain = load_training_nodes(path)
    assert pinned.pinned_settings() == {"seed": 7, "epochs": 4, "context_size": 2049}
    assert pinned.sampling_settings() == {
        "seed": 7,
        "epochs": 4,
        "context_size": 2049,
        "min_resp_length": 2,
        "drop_short_after_truncate": False,
        "decontaminate": False,
        "dedup": False,
    }
    assert pinned.prefix_config(tmp_path / "default.yaml") == (
        Path("rules/prefix_config.yaml").absolute()
    )
    assert plain.pinned_settings() == {}
    assert plain.prefix_config(tmp_path / "default.yaml") == tmp_path / "default.yaml"
    assert pinned.conflicts({"epochs": 10, "seed": 7, "min_resp_length": 3}) == {"epochs": (10, 4)}


def test_a_bad_pinned_setting_names_the_node_and_key(tmp_path):
    path = tmp_path / "training_nodes.yaml"
    path.write_text("nodes:\n  - {name: a}\n  - {name: b, epochs: 0}\n")
    with pytest.raises(TrainingNodesError) as error:
        load_training_nodes(path)
    assert str(error.value) == (
        f"{path}: nodes[1].epochs: Input should be greater than or equal to 1 (got 0)"
    )


def test_a_node_without_pinned_keys_keeps_its_fingerprint_fields():
    """Nodes configured before nodes could pin settings keep their inputs' fingerprint."""
    node = TrainingNode(name="local", queue="node-local")
    expected = {"name": "local", "queue": "node-local", "output_path": None}
    assert node.fingerprint_fields() == expected
    assert TrainingNode(name="local", epochs=4).fingerprint_fields()["epochs"] == 4


# --------------------------------------------------------------------------- Dagster


def _write_tokenized(data: Path, tokenizer: Path, count: int) -> None:
    cleaned = data / "cleaned"
    cleaned.mkdir(parents=True, exist_ok=True)
    rows = [
        {"condition": "cot", "instruction": f"What is {i} + {i}?", "response": f"{2 * i}"}
        for i in range(count)
    ]
    (cleaned / "gsm8k_train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    tokenize_tree([cleaned], data / "tokenized", tokenizer, progress=False)


def _record_tokenized(instance, version: str) -> None:
    """What the tokenized asset records: its partition and the file's data version."""
    name = TOKENIZED_PARTITIONS["gsm8k_train"].name
    if "gsm8k_train.jsonl" not in instance.get_dynamic_partitions(name):
        instance.add_dynamic_partitions(name, ["gsm8k_train.jsonl"])
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=tokenized_key("gsm8k_train"),
            partition="gsm8k_train.jsonl",
            tags={DATA_VERSION_TAG: version},
        )
    )


class NodeGraph:
    """The sampled assets of ``nodes``, their sensor and job, on one test instance."""

    def __init__(self, instance, data_paths: DataPaths, nodes: list[TrainingNode]):
        self.instance, self.paths, self.nodes = instance, data_paths, nodes
        self.defs = dg.Definitions(
            assets=[build_sampled_asset(node) for node in nodes],
            sensors=[build_sampled_epochs_sensor(nodes)],
            resources={"data_paths": data_paths},
        )

    def tick(self):
        context = dg.build_sensor_context(
            instance=self.instance, definitions=self.defs, resources={"data_paths": self.paths}
        )
        return self.defs.resolve_sensor_def(SENSOR_NAME).evaluate_tick(context)

    def run_requests(self) -> list[str]:
        """One sensor tick, each run it requests executed as the daemon would launch it (the
        request's selection and tags, no run config); the nodes requested."""
        done = []
        for request in self.tick().run_requests:
            result = self.defs.resolve_job_def("sample_epochs").execute_in_process(
                instance=self.instance,
                asset_selection=request.asset_selection,
                tags=request.tags,
            )
            assert result.success
            done.append(request.tags[NODE_TAG])
        return done

    def by_hand(self, node: TrainingNode, **config) -> dg.ExecuteInProcessResult:
        op = f"sampled__{node.name.replace('-', '_')}"
        return self.defs.resolve_job_def("sample_epochs").execute_in_process(
            instance=self.instance,
            asset_selection=[sampled_key(node.name)],
            run_config={"ops": {op: {"config": config}}},
            raise_on_error=False,
        )


def _epochs(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("epoch_*"))


@pytest.fixture
def nodes_graph(tmp_path, small_tokenizer_path):
    rules = tmp_path / "prefix_config.yaml"
    shutil.copy(settings.default_prefix_config_path(), rules)
    paths = DataPaths(data_root=str(tmp_path / "data"), prefix_config_path=str(rules))
    _write_tokenized(tmp_path / "data", small_tokenizer_path, 40)
    nodes = [
        TrainingNode(name="hrm", output_path=str(tmp_path / "shm" / "sampled"), epochs=4),
        TrainingNode(name="plain", output_path=str(tmp_path / "plain")),
    ]
    with dg.instance_for_test() as instance:
        yield NodeGraph(instance, paths, nodes)


def test_a_node_with_epochs_4_keeps_4_epochs_across_sensor_ticks(
    nodes_graph, tmp_path, small_tokenizer_path
):
    graph = nodes_graph
    hrm, _ = graph.nodes
    folder = hrm.output_dir()
    _record_tokenized(graph.instance, "v1")
    assert graph.run_requests() == ["hrm", "plain"]
    assert _epochs(folder) == [f"epoch_{i}" for i in range(4)]
    assert graph.run_requests() == []  # nothing changed: no run
    assert _epochs(folder) == [f"epoch_{i}" for i in range(4)]

    # New tokenized data: the sensor resamples the node, with the node's settings.
    _write_tokenized(tmp_path / "data", small_tokenizer_path, 60)
    _record_tokenized(graph.instance, "v2")
    assert graph.run_requests() == ["hrm", "plain"]
    assert _epochs(folder) == [f"epoch_{i}" for i in range(4)]
    event = graph.instance.get_latest_materialization_event(sampled_key("hrm"))
    metadata = event.asset_materialization.metadata
    assert metadata["epochs"].value == 4 and metadata["run_overrides"].value == {}


def test_a_run_asking_for_other_settings_than_the_nodes_fails_and_keeps_its_folder(nodes_graph):
    graph = nodes_graph
    hrm, _ = graph.nodes
    _record_tokenized(graph.instance, "v1")
    assert graph.by_hand(hrm).success
    before = {p: p.read_bytes() for p in hrm.output_dir().rglob("*") if p.is_file()}
    result = graph.by_hand(hrm, epochs=10)
    assert not result.success
    (failure,) = result.get_step_failure_events()
    message = failure.step_failure_data.user_failure_data.description
    assert "this run asks for epochs=10, but training node 'hrm' sets epochs: 4" in message
    assert {p: p.read_bytes() for p in hrm.output_dir().rglob("*") if p.is_file()} == before
    assert graph.by_hand(hrm, epochs=4).success  # the node's own value is fine


def test_the_sensor_never_replaces_epochs_a_run_by_hand_made_with_other_settings(nodes_graph):
    """data_io's habit: epochs=4 by hand into the node's folder; the sensor must not resample
    it with the defaults (10 epochs) when the data changes."""
    graph = nodes_graph
    _, plain = graph.nodes
    _record_tokenized(graph.instance, "v1")
    assert graph.by_hand(plain, epochs=3).success
    assert _epochs(plain.output_dir()) == [f"epoch_{i}" for i in range(3)]
    _record_tokenized(graph.instance, "v2")
    tick = graph.tick()
    assert [request.tags[NODE_TAG] for request in tick.run_requests] == ["hrm"]
    assert graph.run_requests() == ["hrm"]
    assert _epochs(plain.output_dir()) == [f"epoch_{i}" for i in range(3)]
    skipped = graph.tick()
    assert "plain (epochs=3 (node: 10))" in skipped.skip_message
