"""The eval domain in Dagster: ``eval/<name>`` from a Hub-like mirror, ``eval/contamination``
over a cleaned root with planted evaluation questions and duplicated rows, its metadata tables,
and the warning-severity ``contamination`` check of each cleaned source."""

from __future__ import annotations

import json

import dagster as dg

from contamination.eval_fixtures import ARC_EASY, read_jsonl
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.eval import defs as eval_defs
from hrm_assets.defs.eval.assets import CONTAMINATION_KEY, EVAL_ASSETS
from hrm_assets.defs.eval.checks import contamination_checks


def write_rows(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def row(instruction, response):
    return {"condition": "direct", "instruction": instruction, "response": response}


def paths_adopting(tmp_path, adopted: str) -> DataPaths:
    return DataPaths(
        data_root=str(tmp_path / "data"),
        prefix_config_path=str(tmp_path / "prefix_config.yaml"),
        adopted_cleaned=adopted,
    )


def contamination_by_source(paths: DataPaths, eval_sets) -> dict:
    """eval/contamination materialized over ``paths`` with ``eval_sets`` saved: its sources
    table by source name."""
    from hrm_assets.contamination.evalsets import write_eval_set
    from hrm_assets.defs.eval.assets import contamination

    for loaded in eval_sets:
        write_eval_set(loaded, paths.root / "eval" / f"{loaded.spec.name}.jsonl")
    result = dg.materialize([contamination], resources={"data_paths": paths})
    metadata = result.asset_materializations_for_node("eval__contamination")[0].metadata
    return {r.data["source"]: r.data for r in metadata["sources"].value.records}


def test_eval_assets_contamination_and_checks(tmp_path, monkeypatch, eval_mirror, real_raw):
    monkeypatch.setenv("HRM_EVAL_ROOT", str(eval_mirror))
    paths = DataPaths(
        data_root=str(tmp_path / "data"), prefix_config_path=str(tmp_path / "prefix_config.yaml")
    )
    gsm8k_test = read_jsonl(real_raw / "gsm8k" / "test.jsonl")
    train = [row(r["question"], r["answer"].split("#### ")[-1]) for r in gsm8k_test[:1]]
    train += [row("What is the capital of France?", "Paris")] * 2
    train.append(row("Story: " + ARC_EASY[0]["question"].lower(), "state"))
    write_rows(paths.cleaned_root / "gsm8k_train.jsonl", train)

    result = dg.materialize(EVAL_ASSETS, resources={"data_paths": paths})
    assert result.success
    gsm8k = result.asset_materializations_for_node("eval__gsm8k_test")[0].metadata
    assert gsm8k["dagster/row_count"].value == 1319
    assert gsm8k["loaded_from"].value == str(eval_mirror)
    assert (paths.root / "eval" / "gsm8k_test.jsonl").is_file()

    materialization = result.asset_materializations_for_node("eval__contamination")[0]
    metadata = materialization.metadata
    assert metadata["rows_hit"].value == 2
    sources = {r.data["source"]: r.data for r in metadata["sources"].value.records}
    assert sources["gsm8k_train"]["rows_hit"] == 2
    assert sources["gsm8k_train"]["gsm8k_test"] == 1
    assert sources["gsm8k_train"]["arc_easy_test"] == 1
    pairs = [r.data for r in metadata["duplicate_pairs"].value.records]
    assert pairs == [{"first": "gsm8k_train", "later": "gsm8k_train", "rows": 1}]
    examples = [r.data for r in metadata["examples"].value.records]
    assert [(e["row"], e["eval_set"]) for e in examples] == [
        (1, "gsm8k_test"),
        (4, "arc_easy_test"),
    ]

    job = dg.define_asset_job("checks", selection=dg.AssetSelection.checks(contamination_checks))
    definitions = dg.Definitions(
        asset_checks=[contamination_checks], jobs=[job], resources={"data_paths": paths}
    )
    run = definitions.resolve_job_def("checks").execute_in_process()
    assert run.success
    evaluations = {e.asset_key.path[-1]: e for e in run.get_asset_check_evaluations()}
    hit = evaluations["gsm8k_train"]
    assert not hit.passed and hit.severity == dg.AssetCheckSeverity.WARN
    assert hit.metadata["rows_hit"].value == 2 and hit.metadata["duplicate_rows"].value == 1
    assert evaluations["math_train"].passed
    assert CONTAMINATION_KEY in {key for a in eval_defs.assets for key in a.keys}


def test_adopted_cleaned_roots_are_scanned(tmp_path, monkeypatch, eval_mirror, eval_sets):
    """With HRM_ADOPT_CLEANED the adopted roots are the cleaned corpus; a missing cleaned root
    is named."""
    from hrm_assets.contamination.evalsets import write_eval_set
    from hrm_assets.defs.eval.assets import contamination

    adopted = tmp_path / "adopted"
    question = eval_sets[0].texts["question"][3]
    write_rows(adopted / "gsm8k_train.jsonl", [row(question, "x"), row("Hello there.", "Hi.")])
    sources = contamination_by_source(paths_adopting(tmp_path, str(adopted)), eval_sets)
    assert (sources["gsm8k_train"]["rows"], sources["gsm8k_train"]["rows_hit"]) == (2, 1)

    bare = DataPaths(
        data_root=str(tmp_path / "empty"), prefix_config_path=str(tmp_path / "prefix_config.yaml")
    )
    for loaded in eval_sets:
        write_eval_set(loaded, bare.root / "eval" / f"{loaded.spec.name}.jsonl")
    failed = dg.materialize([contamination], resources={"data_paths": bare}, raise_on_error=False)
    assert not failed.success
    assert "does not exist: materialize cleaned/* first" in str(
        failed.get_step_failure_events()[0].event_specific_data.error
    )


def test_a_hub_cache_corpus_is_scanned_through_its_links(tmp_path, eval_sets):
    """An adopted Hub download keeps every file as a link into ``blobs/``: the scan follows the
    links as adoption does (adopted ``s3://`` roots: test_report_on_object_storage.py)."""

    repo = tmp_path / "hub" / "datasets--org--cleaned"
    blob = repo / "blobs" / "0123abcd"
    question = eval_sets[0].texts["question"][5]
    write_rows(blob, [row("Hello there.", "Hi."), row(question, "y")])
    snapshot = repo / "snapshots" / "f00d" / "data"
    snapshot.mkdir(parents=True)
    (snapshot / "gsm8k_train.jsonl").symlink_to(blob)
    sources = contamination_by_source(paths_adopting(tmp_path, str(snapshot)), eval_sets)
    assert (sources["gsm8k_train"]["rows"], sources["gsm8k_train"]["rows_hit"]) == (2, 1)
