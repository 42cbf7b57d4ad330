"""Issue 6, safety: ownership before pruning, one writer per output (locks), stale epochs and
stale tokenizers never survive, killed writers' leftovers are cleaned up only when safe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT
from support.tokenized_rows import rows_of
from support.tokenized_trees import MIXED, MIXED_RULES, tree_bytes, write_rules, write_tokenized
from support.tokenizer_reference import gsm8k_rows, reference_arrays, write_jsonl

from hrm_assets.common.atomic import (
    STALE_AFTER_SECONDS,
    exclusive_lock,
    leftovers_of,
    lock_path_for,
    remove_leftovers,
    remove_leftovers_of_many,
    remove_stale_temporaries,
)
from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.common.manifest import MANIFEST_FILE, verify_folder
from hrm_assets.sampling.sampler import SamplingError, make_config, sample_tokenized
from hrm_assets.tokenization.tokenize import (
    OWNER_MARKER,
    prune_orphans,
    read_metadata,
    remove_owned_output,
    tokenize_file,
    tokenize_tree,
)
from hrm_assets.tokenizer.train import train_tokenizer


@pytest.fixture
def cleaned(tmp_path, real_raw) -> Path:
    root = tmp_path / "cleaned"
    write_jsonl(root / "a.jsonl", gsm8k_rows(real_raw, "train", 300))
    write_jsonl(root / "b" / "c.jsonl", gsm8k_rows(real_raw, "test", 60))
    return root


def hidden_entries(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("."))


# --------------------------------------------------------------------------- ownership


def test_pruning_never_deletes_what_it_does_not_own(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    foreign = {
        # data_io's folder for a file that is gone: data_io would delete it, we do not.
        "old_data_io.jsonl": {"tokens.npy": b"data_io", "metadata.json": b"{}"},
        # A look-alike: the marker's name, but a folder rather than our file.
        "fake_marker.jsonl": {".hrm-data/x": b"not a marker file"},
        "notes": {"README": b"someone's notes"},
    }
    for folder, files in foreign.items():
        for name, data in files.items():
            (out / folder / name).parent.mkdir(parents=True, exist_ok=True)
            (out / folder / name).write_bytes(data)
    (out / "loose_file.txt").write_text("a file in the root")
    before = {name: tree_bytes(out / name) for name in foreign}

    assert prune_orphans(out, []) == ["a.jsonl", "b__c.jsonl"]
    for name in foreign:
        assert remove_owned_output(out, name) is False
        assert tree_bytes(out / name) == before[name]
    assert (out / "loose_file.txt").read_text() == "a file in the root"
    assert not (out / "a.jsonl").exists()
    # Pruning takes each folder's lock and leaves no lock file behind.
    assert hidden_entries(out) == []


def test_prune_waits_for_a_writer_of_that_folder(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    with exclusive_lock(lock_path_for(out / "a.jsonl")):
        with pytest.raises(BlockingIOError):
            with exclusive_lock(lock_path_for(out / "a.jsonl"), wait=False):
                pass
        assert (out / "a.jsonl" / OWNER_MARKER).is_file()
    assert remove_owned_output(out, "a.jsonl")


# --------------------------------------------------------------------------- locks


def _blocked_flock_waiters(path: Path) -> int:
    """Blocked flock requests on ``path``'s inode, from /proc/locks ("->" lines)."""
    inode = os.stat(path).st_ino
    count = 0
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and "FLOCK" in fields and fields[-3].endswith(f":{inode}"):
            count += 1
    return count


def _wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


TOKENIZE_ONE = """
import json, sys
from pathlib import Path
from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.tokenization.tokenize import tokenize_file
cleaned, out, tokenizer, name = sys.argv[1:]
item = next(f for f in scan_cleaned_files(Path(cleaned)) if f.safe_name == name)
outcome = tokenize_file(item, Path(out), tokenizer, threads=1)
print(json.dumps({"skipped": outcome.skipped, "version": outcome.data_version}))
"""


def _tokenize_process(cleaned: Path, out: Path, tokenizer: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", TOKENIZE_ONE, str(cleaned), str(out), str(tokenizer), "a.jsonl"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )


def test_a_second_writer_of_a_tokenized_folder_waits_for_the_lock(
    cleaned, tmp_path, small_tokenizer_path
):
    out = tmp_path / "out"
    out.mkdir()
    lock = lock_path_for(out / "a.jsonl")
    with exclusive_lock(lock):
        process = _tokenize_process(cleaned, out, small_tokenizer_path)
        try:
            blocked = _wait_for(lambda: _blocked_flock_waiters(lock) == 1)
            # Blocked before deciding anything: nothing staged, nothing written.
            listing = sorted(p.name for p in out.iterdir())
        except BaseException:
            process.kill()
            raise
    stdout, stderr = process.communicate(timeout=300)
    assert blocked, stderr
    assert listing == [lock.name]
    assert process.returncode == 0, stderr
    assert json.loads(stdout)["skipped"] is False
    assert verify_folder(out / "a.jsonl").ok
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl"]


def test_two_processes_on_one_output_are_serialized(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    processes = [_tokenize_process(cleaned, out, small_tokenizer_path) for _ in range(2)]
    results = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        results.append(json.loads(stdout))
    # One wrote the folder; the other, serialized behind it, found it current (never both
    # writing, never one replacing the other's folder midway).
    assert sorted(r["skipped"] for r in results) == [False, True]
    assert results[0]["version"] == results[1]["version"]
    folder = out / "a.jsonl"
    assert verify_folder(folder).ok
    expected = reference_arrays(small_tokenizer_path, rows_of(cleaned / "a.jsonl"))
    assert np.array_equal(np.load(folder / "tokens.npy"), expected["tokens"])
    assert sorted(p.name for p in out.iterdir()) == ["a.jsonl"]


def test_lock_excludes_under_contention_and_leaves_no_file(tmp_path):
    # Holders delete the file on release while others wait on it: the inode re-check is what
    # keeps a waiter that wins a deleted file from running beside the next holder.
    lock = tmp_path / ".x.lock"
    inside: list[int] = []
    overlaps: list[int] = []
    entries = []

    def worker() -> None:
        for _ in range(150):
            with exclusive_lock(lock):
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(1)
                time.sleep(0)
                entries.append(1)
                inside.pop()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(entries) == 600
    assert overlaps == []
    assert not lock.exists()


def test_concurrent_sampling_run_is_refused_and_leaves_both_outputs(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    config = make_config(
        tokenized_path=tokenized, output_path=tmp_path / "sampled", prefix_config_path=rules,
        epochs=2,
    )  # fmt: skip
    sample_tokenized(config)
    before = tree_bytes(config.output_path)
    with exclusive_lock(lock_path_for(config.output_path)):
        with pytest.raises(SamplingError, match="another sampling run"):
            sample_tokenized(config.model_copy(update={"seed": 3}))
    assert tree_bytes(config.output_path) == before
    assert hidden_entries(tmp_path) == []


# --------------------------------------------------------------------------- stale outputs


def test_resampling_with_fewer_epochs_leaves_no_stale_epoch(tmp_path, capsys):
    from hrm_assets.checks.cli import main as verify_main
    from hrm_assets.sampling import cli as sample

    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    out = tmp_path / "sampled"
    common = [f"tokenized_path={tokenized}", f"output_path={out}", f"prefix_config_path={rules}"]
    assert sample.main([*common, "epochs=6"]) == 0
    assert sample.main([*common, "epochs=2"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.glob("epoch_*")) == ["epoch_0", "epoch_1"]
    listed = json.loads((out / MANIFEST_FILE).read_text())["files"]
    assert sorted({name.split("/")[0] for name in listed}) == [
        "epoch_0",
        "epoch_1",
        "metadata.json",
        "tokens.npy",
    ]
    assert verify_main([str(out)]) == 0
    # A stale epoch_k put back by hand is caught by verify (it is not in the manifest).
    (out / "epoch_5").mkdir()
    np.save(out / "epoch_5" / "inst_start.npy", np.zeros(1, dtype=np.int64))
    assert verify_main([str(out)]) == 1
    assert "epoch_5/inst_start.npy: not listed" in capsys.readouterr().out


def test_folder_of_another_tokenizer_is_redone_never_mixed(cleaned, tmp_path, small_tokenizer_path):
    other = tmp_path / "other.json"
    texts = [row["instruction"] for row in rows_of(cleaned / "a.jsonl")]
    train_tokenizer(texts, vocab_size=700).save(str(other))
    out = tmp_path / "out"
    tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    item = next(f for f in scan_cleaned_files(cleaned) if f.safe_name == "a.jsonl")

    outcome = tokenize_file(item, out, other)
    assert not outcome.skipped
    fresh = tmp_path / "fresh"
    tokenize_file(item, fresh, other)
    assert tree_bytes(out / "a.jsonl") == tree_bytes(fresh / "a.jsonl")
    assert (
        read_metadata(out / "a.jsonl")["tokenizer_sha256"]
        != read_metadata(out / "b__c.jsonl")["tokenizer_sha256"]
    )

    # The root now mixes two tokenizers (as after a re-tokenization that failed midway):
    # sampling refuses rather than concatenating ids of different vocabularies.
    rules = write_rules(tmp_path / "rules.yaml", [])
    config = make_config(
        tokenized_path=out, output_path=tmp_path / "sampled", prefix_config_path=rules, epochs=1
    )
    with pytest.raises(SamplingError, match="different tokenizers or framings") as caught:
        sample_tokenized(config)
    assert "a.jsonl" in str(caught.value) and "b__c.jsonl" in str(caught.value)
    assert not config.output_path.exists()
    # Re-tokenizing everything with one tokenizer makes it consistent again.
    tokenize_tree([cleaned], out, other, progress=False)
    sample_tokenized(config)
    assert verify_folder(config.output_path).ok


# --------------------------------------------------------------------------- leftovers


def test_leftover_names_match_only_their_own_output(tmp_path):
    names = [
        ".tmp-a.jsonl.0a1b2c3d4e5f",  # atomic_file / atomic_directory
        ".tmp-retired-a.jsonl.0a1b2c3d4e5f",  # replace_directory
        ".tmp-retired-a.jsonl-4242",  # replace_directory of earlier versions
        ".tmp-a.jsonl.4242.1700000000000000000.3",  # Rust StagedDir
        ".tmp-retired-a.jsonl.4242.1700000000000000000.4",  # Rust retired folder
    ]
    others = [
        ".tmp-a.jsonl.parquet.4242.17.1",  # a.jsonl.parquet's staging
        ".tmp-a.jsonl.parquet.0a1b2c3d4e5f",
        ".tmp-ab.jsonl.0a1b2c3d4e5f",
        ".tmp-a.jsonl.notes",  # a user's, not a 12-hex suffix
        ".tmp-tokenizer_info.json.0a1b2c3d4e5f",
        "a.jsonl",
    ]
    for name in names + others:
        (tmp_path / name).mkdir()
    assert [p.name for p in leftovers_of(tmp_path / "a.jsonl")] == sorted(names)
    remove_leftovers(tmp_path / "a.jsonl")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others)


def test_leftovers_of_many_outputs_are_their_own_only(tmp_path):
    mine = [
        ".tmp-a.jsonl.4242.1700000000000000000.1",
        ".tmp-retired-b.jsonl-4242",
        ".tmp-b.jsonl.0a1b2c3d4e5f",
    ]
    others = [".tmp-notes", ".tmp-ab.jsonl.4242.17.1", ".tmp-c.jsonl.0a1b2c3d4e5f", "a.jsonl"]
    for name in mine + others:
        (tmp_path / name).mkdir()
    targets = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    removed = remove_leftovers_of_many(targets)
    assert [p.name for p in removed] == sorted(mine)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(others)
    assert remove_leftovers_of_many([tmp_path / "gone" / "x.jsonl"]) == []


def test_stale_temporaries_are_swept_by_age_of_their_last_write(tmp_path):
    now = time.time()
    old = tmp_path / ".tmp-x.jsonl.1.1700000000000000000.3"
    old.mkdir()
    (old / "tokens.npy").write_bytes(b"half")
    busy = tmp_path / ".tmp-y.jsonl.1.1700000000000000000.3"
    busy.mkdir()
    (busy / "tokens.npy").write_bytes(b"still growing")
    stale_file = tmp_path / ".tmp-tokenizer_info.json.0a1b2c3d4e5f"
    stale_file.write_text("{")
    keep = tmp_path / "z.jsonl"
    keep.mkdir()
    day_ago = now - STALE_AFTER_SECONDS - 60
    for path in (old, old / "tokens.npy", busy, stale_file, keep):
        os.utime(path, (day_ago, day_ago))
    # busy's folder is old, but a file in it was written just now: a live writer.
    assert remove_stale_temporaries(tmp_path, now=now) == sorted([old, stale_file])
    assert sorted(p.name for p in tmp_path.iterdir()) == [busy.name, "z.jsonl"]


def test_tokenize_removes_leftovers_of_killed_writers(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    expected = tree_bytes(out)
    # What kill -9 leaves: a staged folder, a retired folder, a metadata temp, a lock file.
    (out / ".tmp-a.jsonl.999999.1700000000000000123.0").mkdir()
    (out / ".tmp-a.jsonl.999999.1700000000000000123.0" / "tokens.npy").write_bytes(b"partial")
    (out / ".tmp-retired-b__c.jsonl.999999.1700000000000000124.1").mkdir()
    (out / "a.jsonl" / ".tmp-metadata.json.0a1b2c3d4e5f").write_text("{")
    (out / ".a.jsonl.lock").write_text("")
    report = tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    assert all(outcome.skipped for outcome in report.outcomes)
    assert hidden_entries(out) == []
    assert tree_bytes(out) == expected
