"""``hrm-sample`` as a data_io user runs it: ``./prefix_config.yaml`` read from the working
directory, the rules file and roots said, and ``node=<name>`` sampling with the node's own
settings from training_nodes.yaml (issue 29)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.tokenized_trees import MIXED, MIXED_RULES, write_rules, write_tokenized

from hrm_assets.common import settings
from hrm_assets.sampling import cli as sample
from hrm_assets.sampling.training_nodes import TRAINING_NODES_ENV


def run_main(capsys, *arguments: str) -> tuple[int, str, str]:
    status = sample.main(list(arguments))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A data_io user's working directory holding a tokenized root."""
    work = tmp_path / "work"
    work.mkdir()
    write_tokenized(work / "data_tokenized_bpe_65k", MIXED)
    monkeypatch.chdir(work)
    monkeypatch.delenv(settings.DATA_ROOT_ENV, raising=False)  # ./data, as a new user has it
    return work


def _epochs(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("epoch_*"))


def test_a_rules_file_in_the_working_directory_is_used_and_named(workdir, capsys):
    write_rules(workdir / "prefix_config.yaml", MIXED_RULES)
    status, out, err = run_main(
        capsys, "tokenized_path=data_tokenized_bpe_65k", "output_path=sampled", "epochs=1"
    )
    assert status == 0, err
    rules = workdir / "prefix_config.yaml"
    assert (
        f"hrm-sample: rules {rules} (the working directory's, as data_io reads it); "
        f"tokenized root {workdir / 'data_tokenized_bpe_65k'}; output {workdir / 'sampled'}"
    ) in err
    assert "1 task(s) match several prefixes" in err  # MIXED_RULES' flan rules: they applied


def test_an_invalid_rule_in_the_working_directory_fails_instead_of_being_ignored(workdir, capsys):
    write_rules(workdir / "prefix_config.yaml", [{"prefix": "flan__", "max_per_file": -3}])
    status, out, err = run_main(
        capsys, "tokenized_path=data_tokenized_bpe_65k", "output_path=sampled", "epochs=1"
    )
    assert status != 0 and out == ""
    assert str(workdir / "prefix_config.yaml") in err and "max_per_file" in err
    assert not (workdir / "sampled").exists()


def test_without_a_rules_file_here_the_projects_is_used_and_said(workdir, capsys):
    status, _, err = run_main(
        capsys, "tokenized_path=data_tokenized_bpe_65k", "output_path=sampled", "epochs=1"
    )
    assert status == 0, err
    assert f"rules {settings.default_prefix_config_path()} (the project's default)" in err


@pytest.fixture
def nodes_file(workdir, monkeypatch):
    path = workdir / "training_nodes.yaml"
    path.write_text(
        "nodes:\n"
        f"  - {{name: hrm, output_path: {workdir / 'shm' / 'sampled'}, epochs: 3, seed: 5}}\n"
        "  - {name: plain}\n"
    )
    monkeypatch.setenv(TRAINING_NODES_ENV, str(path))
    return path


def test_node_samples_with_the_nodes_folder_and_settings(workdir, nodes_file, capsys):
    write_rules(workdir / "prefix_config.yaml", MIXED_RULES)
    status, _, err = run_main(capsys, "node=hrm", "tokenized_path=data_tokenized_bpe_65k")
    assert status == 0, err
    assert _epochs(workdir / "shm" / "sampled") == ["epoch_0", "epoch_1", "epoch_2"]
    assert f"output {workdir / 'shm' / 'sampled'}" in err
    # The same value as the node's is no conflict.
    status, _, err = run_main(
        capsys, "node=hrm", "epochs=3", "tokenized_path=data_tokenized_bpe_65k"
    )
    assert status == 0, err


def test_node_refuses_a_setting_that_is_not_the_nodes(workdir, nodes_file, capsys):
    status, out, err = run_main(
        capsys, "node=hrm", "epochs=10", "tokenized_path=data_tokenized_bpe_65k"
    )
    assert status == 2 and out == ""
    assert (
        f"hrm-sample: error: epochs=10 differs from training node 'hrm''s epochs: 3 ({nodes_file})"
    ) in err
    status, _, err = run_main(
        capsys, "node=hrm", "output_path=elsewhere", "tokenized_path=data_tokenized_bpe_65k"
    )
    assert status == 2 and "output_path=elsewhere differs from training node 'hrm'" in err
    status, _, err = run_main(capsys, "node=gpu9")
    assert status == 2 and "node=gpu9: no such training node" in err and "hrm, plain" in err
    assert not (workdir / "shm").exists()


def test_the_default_output_inside_data_ios_cleaned_folder_is_warned_about(workdir, capsys):
    """data_io's cleaned files are in ./data, which is also our default data root."""
    (workdir / "data").mkdir()
    (workdir / "data" / "gsm8k_train.jsonl").write_text("")
    status, _, err = run_main(capsys, "tokenized_path=data_tokenized_bpe_65k", "epochs=1")
    assert status == 0, err
    output = workdir / "data" / "sampled" / "local"
    assert (
        f"hrm-sample: warning: the default output {output} is inside {workdir / 'data'}, which "
        "holds cleaned files"
    ) in err
    status, _, err = run_main(
        capsys, "tokenized_path=data_tokenized_bpe_65k", "output_path=epochs", "epochs=1"
    )
    assert status == 0 and "the default output" not in err
