"""``python -m hrm_assets.sampling``: data_io's keys, report on stdout, clear errors, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.reference_sampler import reference_sample, without_data_card
from support.tokenized_trees import (
    MIXED,
    MIXED_RULES,
    random_rows,
    tree_bytes,
    write_rules,
    write_tokenized,
)

from hrm_assets.common import settings
from hrm_assets.sampling import cli as sample
from hrm_assets.sampling import epoch_writing

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def inputs(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "prefix_config.yaml", MIXED_RULES)
    return tmp_path, tokenized, rules


def run_main(capsys, *arguments: str) -> tuple[int, str, str]:
    status = sample.main(list(arguments))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_samples_and_prints_data_io_report(inputs, capsys):
    tmp_path, tokenized, rules = inputs
    status, out, err = run_main(
        capsys,
        f"tokenized_path={tokenized}",
        f"output_path={tmp_path / 'sampled'}",
        f"prefix_config_path={rules}",
        "epochs=3",
        "seed=4",
        "context_size=60",
        "min_resp_length=1",
    )
    assert status == 0, err
    expected = reference_sample(
        tokenized,
        MIXED_RULES,
        tmp_path / "expected",
        seed=4,
        epochs=3,
        context_size=60,
        min_resp_length=1,
    )
    assert without_data_card(tree_bytes(tmp_path / "sampled")) == tree_bytes(tmp_path / "expected")
    # stdout is the report alone: data_io's sections first, then ours.
    assert out.startswith(expected["report"])
    assert "### Filtering Stats" in out and "### Epochs" in out
    # Warnings go to stderr, never into the Markdown.
    assert "warning: 1 task(s) match several prefixes" in err
    assert "warning" not in out and "Traceback" not in err


def test_module_entry_point_exit_codes(inputs):
    tmp_path, tokenized, rules = inputs
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "hrm_assets.sampling"]
    good = subprocess.run(
        [
            *command,
            f"tokenized_path={tokenized}",
            f"output_path={tmp_path / 'sampled'}",
            f"prefix_config_path={rules}",
            "epochs=2",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith("\n### Category Coverage Stats\n")
    assert "Writing tokens" in good.stderr  # progress bars on stderr
    bad = subprocess.run(
        [*command, "epochs=two"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert "hrm-sample: error: epochs: expected an integer, got 'two'" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["epoch=3"], "unknown key 'epoch'"),
        (["epochs=3.5"], "epochs: expected an integer"),
        (["seed=abc"], "seed: expected an integer"),
        (["epochs"], "expected key=value"),
        (["=3"], "expected key=value"),
        (["epochs=0"], "epochs: Input should be greater than or equal to 1"),
        (["context_size=1"], "context_size"),
        (["output_path="], "output_path: empty path"),
    ],
)
def test_bad_arguments_exit_2(capsys, arguments, message):
    status, out, err = run_main(capsys, *arguments)
    assert status == 2
    assert out == ""
    assert err.startswith("hrm-sample: error: ") and message in err
    assert "usage: hrm-sample" in err


def _break(kind: str, tmp_path: Path, tokenized: Path, rules: Path) -> list[str]:
    task = tokenized / "gsm8k_train.jsonl"
    args = [
        f"tokenized_path={tokenized}",
        f"output_path={tmp_path / 'sampled'}",
        f"prefix_config_path={rules}",
    ]
    if kind == "missing-folder":
        args[0] = f"tokenized_path={tmp_path / 'nowhere'}"
    elif kind == "missing-tokenizer-info":
        (tokenized / "tokenizer_info.json").unlink()
    elif kind == "malformed-prefix-config":
        rules.write_text("- prefix: a\n  long_context: squeeze\n")
    elif kind == "missing-prefix-config":
        args[2] = f"prefix_config_path={tmp_path / 'none.yaml'}"
    elif kind == "mismatched-lengths":
        np.save(task / "inst_len.npy", np.load(task / "inst_len.npy")[:-1])
    elif kind == "foreign-output":
        (tmp_path / "sampled").mkdir()
        (tmp_path / "sampled" / "keep.txt").write_text("not mine")
    return args


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("missing-folder", "tokenized_path is not a directory"),
        ("missing-tokenizer-info", "tokenizer_info.json: missing"),
        ("malformed-prefix-config", "rule 0"),
        ("missing-prefix-config", "prefix config not found"),
        ("mismatched-lengths", "span arrays have different lengths"),
        ("foreign-output", "not a sampled output"),
    ],
)
def test_bad_data_exit_1(inputs, capsys, kind, message):
    tmp_path, tokenized, rules = inputs
    status, out, err = run_main(capsys, *_break(kind, tmp_path, tokenized, rules))
    assert status == 1
    assert out == ""
    lines = [line for line in err.splitlines() if line.startswith("hrm-sample: error:")]
    assert len(lines) == 1 and message in lines[0]
    assert "Traceback" not in err


def test_io_error_is_one_line(inputs, capsys, monkeypatch):
    tmp_path, tokenized, rules = inputs
    real_draw = epoch_writing.draw_epochs

    def draw_onto_full_disk(staged, *args, **kwargs):
        def full_disk() -> None:
            raise OSError(28, "No space left on device", str(staged / "epoch_0"))

        return real_draw(staged, *args, **{**kwargs, "progress": full_disk})

    monkeypatch.setattr(epoch_writing, "draw_epochs", draw_onto_full_disk)
    status, out, err = run_main(
        capsys,
        f"tokenized_path={tokenized}",
        f"output_path={tmp_path / 'sampled'}",
        f"prefix_config_path={rules}",
    )
    assert status == 1 and out == ""
    # The progress bar ends its line first, so the error is a line of its own.
    assert any(
        line.startswith("hrm-sample: error: No space left on device: ") for line in err.splitlines()
    )
    assert "Traceback" not in err
    assert not (tmp_path / "sampled").exists()


def test_defaults_come_from_settings(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(settings.DATA_ROOT_ENV, str(tmp_path / "data"))
    write_tokenized(settings.tokenized_root(), {"a.jsonl": random_rows(1, 6)})
    rules = write_rules(tmp_path / "rules.yaml", [])
    defaults = sample.default_values()
    assert defaults["tokenized_path"] == tmp_path / "data" / "tokenized"
    assert defaults["output_path"] == tmp_path / "data" / "sampled" / "local"
    assert defaults["prefix_config_path"] == settings.default_prefix_config_path()
    assert (defaults["seed"], defaults["epochs"], defaults["context_size"]) == (0, 10, 4097)
    assert defaults["min_resp_length"] == 2

    status, out, err = run_main(capsys, f"prefix_config_path={rules}")
    assert status == 0, err
    output = tmp_path / "data" / "sampled" / "local"
    assert sorted(p.name for p in output.glob("epoch_*")) == [f"epoch_{i}" for i in range(10)]
    metadata = json.loads((output / "metadata.json").read_text())
    assert metadata["max_seq_len"] == 4097


def test_last_value_of_a_repeated_key_wins(inputs, capsys):
    tmp_path, tokenized, rules = inputs
    status, _, err = run_main(
        capsys,
        f"tokenized_path={tokenized}",
        f"output_path={tmp_path / 'sampled'}",
        f"prefix_config_path={rules}",
        "epochs=5",
        "epochs=2",
    )
    assert status == 0, err
    assert sorted(p.name for p in (tmp_path / "sampled").glob("epoch_*")) == ["epoch_0", "epoch_1"]


def test_help(capsys):
    status, out, err = run_main(capsys, "--help")
    assert status == 0 and err == ""
    assert out.startswith("usage: hrm-sample")
    for key in sample.PATH_KEYS + sample.INT_KEYS:
        assert f"{key}=" in out


def test_console_script_is_declared():
    text = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'hrm-sample = "hrm_assets.sampling.cli:main"' in text
