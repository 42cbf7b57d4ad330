"""The ``sampled/<node>`` asset: its run config is the sampler's settings, and what HRM-Text
needs to know (rows truncated to too short a response, where the tokenizer folder is) shows in
its metadata and in a warning check."""

# ruff: noqa: F401, F811  (the shared fixtures are imported by name)
from __future__ import annotations

import threading
import time
from pathlib import Path

import dagster as dg
import transformers
from support.sampled_asset import NODE, OP_NAME, data_paths, materialize

from hrm_assets.common.atomic import exclusive_lock, lock_path_for
from hrm_assets.common.manifest import verify_folder
from hrm_assets.defs.sampled.checks import SHORT_RESPONSES


def test_short_truncated_responses_warn_and_drop_on_request(data_paths):
    kept = materialize(data_paths, context_size=40)
    assert kept.success
    metadata = {
        k: v.value for k, v in kept.asset_materializations_for_node(OP_NAME)[0].metadata.items()
    }
    assert metadata["rows_short_after_truncate"] == 1
    assert metadata["rows_dropped_short_after_truncate"] == 0
    assert metadata["drop_short_after_truncate"] is False
    assert metadata["warning_count"] >= 1
    assert "truncated to a response shorter than min_resp_length=2" in metadata["warnings"]
    (check,) = kept.get_asset_check_evaluations()
    assert check.check_name == SHORT_RESPONSES
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
    assert check.metadata["rows_kept_short"].value == 1

    # The tokenizer folder HRM-Text's inference and export load.
    tokenizer_dir = metadata["tokenizer_dir"]
    assert tokenizer_dir == str(NODE.output_dir(data_paths.root) / "tokenizer")
    assert transformers.AutoTokenizer.from_pretrained(tokenizer_dir)

    dropped = materialize(data_paths, context_size=40, drop_short_after_truncate=True)
    assert dropped.success
    metadata = {
        k: v.value for k, v in dropped.asset_materializations_for_node(OP_NAME)[0].metadata.items()
    }
    assert metadata["rows_dropped_short_after_truncate"] == 1
    assert "min_resp_length" not in metadata["warnings"]
    (check,) = dropped.get_asset_check_evaluations()
    assert check.passed


def test_no_short_rows_pass_the_check(data_paths):
    result = materialize(data_paths)  # the default context holds every row whole
    (check,) = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["rows_short_after_truncate"].value == 0


def _waiting_on(lock: Path) -> bool:
    """Whether a process waits for a flock on ``lock`` (a ``->`` line of /proc/locks)."""
    inode = f":{lock.stat().st_ino}"
    lines = Path("/proc/locks").read_text().splitlines()
    return any("->" in line and any(f.endswith(inode) for f in line.split()) for line in lines)


def test_the_asset_waits_for_a_tokenizer_writing_a_folder_it_reads(data_paths):
    # The sampled asset reads the tokenized root as hrm-sample does: one snapshot, so it waits
    # while a tokenization step holds a folder's lock rather than reading it half-replaced.
    folder = sorted(p for p in data_paths.tokenized_root.iterdir() if p.is_dir())[0]
    lock = lock_path_for(folder)
    results: list[dg.ExecuteInProcessResult] = []
    output = NODE.output_dir(data_paths.root)
    with exclusive_lock(lock):  # as hrm-tokenize and the tokenized assets hold it
        run = threading.Thread(target=lambda: results.append(materialize(data_paths)))
        run.start()
        while not _waiting_on(lock):
            assert run.is_alive(), "the run ended without waiting for the lock"
            time.sleep(0.05)
        assert not output.exists()
    run.join(timeout=600)
    assert results and results[0].success
    assert verify_folder(output).ok
