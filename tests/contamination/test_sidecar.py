"""Both passes inside tokenization's read (``hrm_assets/contamination/sidecar.py``).

Evaluation questions are planted into cleaned files of real GSM8K train rows (as they are, with
case, punctuation and whitespace changed, embedded in a longer instruction or response), with a
row repeated across two sources. Tokenizing them with the evaluation sets saved writes sidecars
that find every plant per file, whose report equals the separate pass's, while the arrays,
``metadata.json`` and ``manifest.json`` are byte for byte those of a run without sidecars and
the folder passes the manifest and identity checks. Changed evaluation sets re-tokenize
nothing: the report rescans the files.
"""

from __future__ import annotations

from pathlib import Path

from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.common.manifest import verify_folder
from hrm_assets.contamination.evalsets import write_eval_set
from hrm_assets.contamination.scan import analyze
from hrm_assets.contamination.sidecar import (
    KEYS_FILE,
    OBSERVE_ENV,
    SCAN_FILE,
    folder_summary,
    index_label,
    read_sidecar,
)
from hrm_assets.defs.eval.partition_metadata import contamination_metadata
from hrm_assets.tokenization.identity import folder_identity_problems
from hrm_assets.tokenization.tokenize import tokenize_files

SIDECARS = {SCAN_FILE, KEYS_FILE}


def saved_eval_sets(data_root: Path, eval_sets) -> list[tuple[str, str]]:
    return [
        (s.spec.name, write_eval_set(s, data_root / "eval" / f"{s.spec.name}.jsonl"))
        for s in eval_sets
    ]


def tokenize(cleaned: Path, out: Path, tokenizer: Path):
    files = scan_cleaned_files(cleaned)
    results = list(tokenize_files(files, out, tokenizer))
    assert all(not hasattr(result, "error") for result in results), results
    return files


def test_tokenization_scans_in_its_read_and_leaves_the_arrays_as_they_were(
    tmp_path, monkeypatch, corpus, eval_sets, small_tokenizer_path
):
    cleaned, planted = corpus
    data_root = tmp_path / "data"
    monkeypatch.setenv("HRM_DATA_ROOT", str(data_root))
    digests = saved_eval_sets(data_root, eval_sets)
    files = tokenize(cleaned, tmp_path / "scanned", small_tokenizer_path)
    monkeypatch.setenv(OBSERVE_ENV, "0")
    tokenize(cleaned, tmp_path / "plain", small_tokenizer_path)

    folders = {}
    for item in files:
        scanned, plain = tmp_path / "scanned" / item.safe_name, tmp_path / "plain" / item.safe_name
        folders[str(item.path)] = scanned
        names = {p.name for p in scanned.iterdir()}
        assert names - {p.name for p in plain.iterdir()} == SIDECARS
        for name in names - SIDECARS:
            assert (scanned / name).read_bytes() == (plain / name).read_bytes(), name
        assert verify_folder(scanned).ok, verify_folder(scanned).problems
        assert folder_identity_problems(scanned) == []
        hit_rows = [hit[0] for hit in read_sidecar(scanned).hits]
        assert set(planted[item.safe_name]) <= set(hit_rows), (item.safe_name, hit_rows)

    summary = folder_summary(tmp_path / "scanned" / "gsm8k__train.jsonl")
    assert summary["rows"] == 200
    assert summary["scanned_against"] == [name for name, _ in digests]
    for eval_set in ("gsm8k_test", "math_test", "mmlu_test", "arc_challenge_test"):
        assert summary["hits_by_set"][eval_set] >= 1
    assert summary["examples"][0]["row"] <= 10
    metadata = contamination_metadata(tmp_path / "scanned" / "gsm8k__train.jsonl")
    assert metadata["contamination/rows_hit"] == summary["rows_hit"]
    assert contamination_metadata(tmp_path / "plain" / "gsm8k__train.jsonl") == {}

    by_source = {"gsm8k": [cleaned / "gsm8k" / "train.jsonl"]}
    by_source["synth"] = [cleaned / "synth" / "part_0.parquet"]
    separate, _ = analyze(by_source, eval_sets)
    label = index_label(digests, 13, 8)
    from_sidecars, scans = analyze(by_source, eval_sets, tokenized=folders, label=label)
    assert from_sidecars.to_dict() == separate.to_dict()
    assert from_sidecars.duplicates.pairs == {("gsm8k", "synth"): 1}
    assert scans[1].duplicate_rows == [2]
    assert from_sidecars.files[1].rows_hit == 1

    # Evaluation sets changed since tokenization (one dropped, so the label differs): the
    # files are rescanned against them; the sidecars' duplicate keys still serve.
    fewer = [s for s in eval_sets if s.spec.name != "mmlu_test"]
    fewer_label = index_label([d for d in digests if d[0] != "mmlu_test"], 13, 8)
    rescanned, _ = analyze(by_source, fewer, tokenized=folders, label=fewer_label)
    assert rescanned.to_dict() == analyze(by_source, fewer)[0].to_dict()
    assert "mmlu_test" not in rescanned.sources["gsm8k"].hits_by_set


def test_sidecars_of_a_file_changed_since_are_not_used(tmp_path, monkeypatch, corpus, eval_sets):
    cleaned, _ = corpus
    folder = tmp_path / "folder"
    folder.mkdir()
    source = cleaned / "gsm8k" / "train.jsonl"
    (folder / "metadata.json").write_text('{"source_size": 1, "source_mtime": 0, "rows": 0}')
    (folder / SCAN_FILE).write_text('{"format": "hrm-data-row-scan/1", "rows": 0, "hits": []}')
    (folder / KEYS_FILE).write_bytes(b"")
    assert read_sidecar(folder) is not None
    report, _ = analyze({"gsm8k": [source]}, eval_sets, tokenized={str(source): folder})
    assert report.to_dict() == analyze({"gsm8k": [source]}, eval_sets)[0].to_dict()
    assert report.files[0].rows == 200
    assert file_sha256(source)  # the file was read, not the stale sidecar
