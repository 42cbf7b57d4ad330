"""What a new user meets in the first hour (issue 17): the README's selections, the ``.env``
that points Dagster's CLI at the project's instance, the instance settings, and
``hrm-verify`` given the cleaned folder."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from hrm_assets import local_env
from hrm_assets.checks import cli as verify
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.definitions import defs
from hrm_assets.defs.common.keys import CLEANED_PREFIX
from hrm_assets.defs.tokenized.partitions import TOKENIZED_PARTITIONS

REPO_ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- selections


def _selected(selection: str) -> set[dg.AssetKey]:
    # As `dagster asset materialize --select` reads its argument (dagster/_cli/asset.py).
    return dg.AssetSelection.from_coercible(selection.split(",")).resolve(
        defs.resolve_asset_graph()
    )


@pytest.mark.parametrize("selection", ['key:"cleaned/*"', "key:cleaned/*", "group:cleaned"])
def test_documented_selections_pick_every_cleaned_asset_and_nothing_else(selection):
    assert _selected(selection) == {dg.AssetKey([CLEANED_PREFIX, name]) for name in SOURCES}


def test_bare_cleaned_star_is_the_legacy_downstream_operator_not_a_wildcard():
    """The README says why `--select cleaned/*` fails: Dagster's current syntax rejects it, so
    the legacy one reads it as the asset `cleaned/` and everything downstream of it, and no
    asset has that key. If Dagster ever reads it as a wildcard, the README must change."""
    with pytest.raises(dg.DagsterInvalidSubsetError, match=r"\['cleaned/'\]"):
        _selected("cleaned/*")


# --------------------------------------------------------------------------- .env


def test_env_file_points_at_the_project_and_yields_to_the_environment(tmp_path, monkeypatch):
    project = tmp_path / "checkout"
    project.mkdir()
    assert local_env.write_env_file(project) == project / ".env"
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.delenv("HRM_RAW_ROOT", raising=False)
    assert local_env.read_env_file(project) == {
        "DAGSTER_HOME": str(project / "dagster_home"),
        "HRM_RAW_ROOT": str(project / "data" / "demo_raw"),
    }
    # A DAGSTER_HOME chosen on purpose (the cluster's, a scratch one) is kept, and an empty
    # HRM_RAW_ROOT still means "load from the Hub".
    monkeypatch.setenv("DAGSTER_HOME", "/elsewhere/home")
    monkeypatch.setenv("HRM_RAW_ROOT", "")
    assert local_env.read_env_file(project) == {
        "DAGSTER_HOME": "/elsewhere/home",
        "HRM_RAW_ROOT": "",
    }


def test_env_file_keeps_a_users_edits_unless_replaced(tmp_path):
    (tmp_path / ".env").write_text("DAGSTER_HOME=/mine\n")
    assert local_env.write_env_file(tmp_path) is None
    assert (tmp_path / ".env").read_text() == "DAGSTER_HOME=/mine\n"
    assert local_env.write_env_file(tmp_path, replace=True) == tmp_path / ".env"
    assert "dagster_home" in (tmp_path / ".env").read_text()


def test_dagster_cli_reads_the_env_file_as_we_write_it(tmp_path, monkeypatch):
    """Dagster's own loader (the one its CLI calls before opening the instance) agrees."""
    from dagster._core.secrets.env_file import get_env_var_dict

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    local_env.write_env_file(tmp_path)
    assert get_env_var_dict(str(tmp_path)) == local_env.read_env_file(tmp_path)


def test_partition_range_command_uses_the_env_files_instance(tmp_path, monkeypatch, capsys):
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions(
            TOKENIZED_PARTITIONS["flan"].name, ["a.parquet", "b.parquet"]
        )
    local_env.write_env_file(tmp_path)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert local_env.partition_range_main(["tokenized/flan"]) == 0
    assert capsys.readouterr().out == "a.parquet...b.parquet\n"


# --------------------------------------------------------------------------- instance settings


def test_project_instance_has_no_telemetry_and_no_community_dialog(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_bytes((REPO_ROOT / "dagster_home" / "dagster.yaml").read_bytes())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance:
        # nux: the "Join the Dagster community" dialog of the UI's first visit.
        assert instance.nux_enabled is False
        assert instance.telemetry_enabled is False


# --------------------------------------------------------------------------- hrm-verify


def test_verify_given_the_cleaned_folder_says_what_it_is_once(tmp_path, capsys):
    cleaned = tmp_path / "cleaned"
    (cleaned / "Platypus").mkdir(parents=True)
    (cleaned / "flan").mkdir()
    row = {"condition": "", "instruction": "1+1?", "response": "2"}
    (cleaned / "gsm8k_train.jsonl").write_text(json.dumps(row) + "\n")
    (cleaned / "Platypus" / "arb_math.jsonl").write_text(json.dumps(row) + "\n")
    (cleaned / "flan" / "cot_fsopt_data__x.parquet").write_bytes(b"PAR1")
    assert verify.main([str(cleaned)]) == 1
    captured = capsys.readouterr()
    assert "manifest.json: missing" not in captured.out
    assert captured.out.count("FAIL") == 1
    assert "cleaned files (JSONL/Parquet), not tokenized or sampled outputs" in captured.out
    assert "rows_valid" in captured.out and "hrm-verify data/tokenized" in captured.out


def test_verify_still_reports_a_missing_manifest_next_to_arrays(tmp_path, capsys):
    """A root that holds arrays is an output root even if it also holds a JSONL file."""
    root = tmp_path / "tokenized"
    (root / "gsm8k_train.jsonl").mkdir(parents=True)
    (root / "gsm8k_train.jsonl" / "tokens.npy").write_bytes(b"\x93NUMPY")
    (root / "stray.jsonl").write_text("{}\n")
    assert verify.main([str(root)]) == 1
    assert "manifest.json: missing" in capsys.readouterr().out
