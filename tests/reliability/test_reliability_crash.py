"""Issue 6, crashes: ``kill -9`` a tokenization or a sampling process at random moments, many
times. After every kill, each output folder in place is complete and exactly what an
uninterrupted run writes (a half-written one never looks complete: it is a hidden ``.tmp-``
sibling); the next run finishes the work, and the final tree, leftovers and lock files
included, is byte-identical to an uninterrupted run.

The kill moments are drawn between the measured start-up time of the command and the length
of an uninterrupted run, so they land in reading, encoding, hashing, renaming and cleaning up
alike; some must land mid-write (a staged copy is left), or the test proves nothing."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT
from support.tokenized_trees import tree_bytes, visible, write_rules
from support.tokenizer_reference import gsm8k_rows, write_jsonl

from hrm_assets.common.manifest import verify_folder

pytestmark = pytest.mark.slow

KILLS = 20


def run_or_kill(command: list[str], delay: float) -> int | None:
    """Run ``command``; SIGKILL it after ``delay`` seconds. None if it was killed."""
    process = subprocess.Popen(
        command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        return process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return None


def startup_seconds(module: str) -> float:
    """How long the interpreter takes to import ``module`` (no work done), once warm: the
    first import on a fresh machine reads everything from disk and is no guide."""
    return min(timed_run([sys.executable, "-c", f"import {module}"]) for _ in range(3))


def timed_run(command: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(command, cwd=REPO_ROOT, check=True, capture_output=True, timeout=600)
    return time.monotonic() - started


# --------------------------------------------------------------------------- tokenization


def test_kill_9_during_tokenization(tmp_path, real_raw, small_tokenizer_path):
    cleaned = tmp_path / "cleaned"
    rows = gsm8k_rows(real_raw, "train", 7200)
    # Files of 100 to 700 rows, tokenized as one batch (several at once, one durable sync for
    # the batch before the renames): a kill lands between files, inside a file, or between
    # the sync and the last rename.
    bounds = [0]
    while bounds[-1] < len(rows):
        bounds.append(min(len(rows), bounds[-1] + 100 * (1 + len(bounds) % 7)))
    for index, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False)):
        write_jsonl(cleaned / f"part{index:02d}.jsonl", rows[start:end])

    def command(out: Path) -> list[str]:
        return [sys.executable, "-m", "hrm_assets.tokenization", str(cleaned), "-o", str(out),
                "-t", str(small_tokenizer_path), "--threads", "1", "--no-progress"]  # fmt: skip

    reference = tmp_path / "reference"
    startup = startup_seconds("hrm_assets.tokenization.cli")
    elapsed = timed_run(command(reference))
    expected = tree_bytes(reference)
    expected_folders = {p.name: tree_bytes(p) for p in visible(reference) if p.is_dir()}

    out = tmp_path / "out"
    rng = random.Random(20261122)
    killed = mid_write = runs = 0
    status = None
    # Runs that finish before their kill show how much faster than the estimate runs are now
    # (a loaded machine when it was measured); kill moments shrink by that much.
    speed = 1.0
    while killed < KILLS:
        runs += 1
        assert runs <= 3 * KILLS, f"only {killed} of {runs} runs were killed"
        folders = [p for p in visible(out) if p.is_dir()] if out.exists() else []
        if folders and (status == 0 or rng.random() < 0.3 or len(folders) == len(expected_folders)):
            # Lose finished folders, so that the next run has work to be killed in.
            low = len(folders) // 2 if status == 0 else 1
            for folder in rng.sample(folders, k=rng.randint(max(1, low), len(folders))):
                shutil.rmtree(folder)
        # The next run redoes only the missing folders: the kill moment is drawn within the
        # time that work takes, not a whole run's (else most runs finish before their kill).
        done = len([p for p in visible(out) if p.is_dir()]) if out.exists() else 0
        work = (elapsed - startup) * (len(expected_folders) - done) / len(expected_folders)
        estimate = (startup + work) * speed
        started = time.monotonic()
        status = run_or_kill(command(out), rng.uniform(startup * 0.8 * speed, estimate * 1.05))
        if status is None:
            killed += 1
        else:
            assert status == 0
            speed = min(speed, (time.monotonic() - started) / (startup + work))
        if not out.exists():
            continue
        mid_write += any(p.name.startswith(".tmp-") for p in out.iterdir())
        for entry in visible(out):
            if entry.is_dir():
                # In place means complete: byte for byte the uninterrupted run's folder.
                assert tree_bytes(entry) == expected_folders[entry.name], entry.name
                assert verify_folder(entry).ok
            else:
                assert entry.name == "tokenizer_info.json"
                assert entry.read_bytes() == expected["tokenizer_info.json"]
    assert mid_write >= 1

    subprocess.run(command(out), cwd=REPO_ROOT, check=True, capture_output=True, timeout=600)
    # Leftovers of the killed runs (staged folders, lock files) are gone too.
    assert tree_bytes(out) == expected
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in reference.iterdir())


# --------------------------------------------------------------------------- sampling


def write_big_tokenized(root: Path, tasks: int = 6, rows: int = 40_000, seed: int = 0) -> Path:
    """A tokenized root of ``tasks`` folders of ``rows`` rows each, written with numpy."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True)
    info = {"boq": "<|im_start|>", "condition_mapping": {}, "eoa": "<|box_end|>",
            "eoq": "<|im_end|>", "tokenizer_path": "t.json", "vocab_size": 50_000}  # fmt: skip
    (root / "tokenizer_info.json").write_text(json.dumps(info, sort_keys=True))
    for index in range(tasks):
        inst_len = rng.integers(2, 60, rows).astype("<u8")
        resp_len = rng.integers(0, 80, rows).astype("<u8")
        lengths = np.stack([inst_len, resp_len], axis=1).reshape(-1)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype("<u8")
        task = root / f"task{index}.jsonl"
        task.mkdir()
        np.save(task / "tokens.npy", rng.integers(0, 50_000, int(lengths.sum())).astype("<u4"))
        np.save(task / "inst_start.npy", starts[0::2])
        np.save(task / "inst_len.npy", inst_len)
        np.save(task / "resp_start.npy", starts[1::2])
        np.save(task / "resp_len.npy", resp_len)
    return root


def test_kill_9_during_sampling(tmp_path):
    tokenized = write_big_tokenized(tmp_path / "tokenized")
    rules = write_rules(
        tmp_path / "rules.yaml",
        [{"prefix": "task1", "repeat": 2}, {"prefix": "task2", "max_per_file": 500}],
    )

    def command(out: Path, seed: int) -> list[str]:
        return [sys.executable, "-m", "hrm_assets.sampling", f"tokenized_path={tokenized}",
                f"output_path={out}", f"prefix_config_path={rules}", f"seed={seed}",
                "epochs=6"]  # fmt: skip

    startup = startup_seconds("hrm_assets.sampling.cli")
    references, elapsed = {}, 0.0
    for seed in (0, 1):
        reference = tmp_path / f"reference{seed}" / "sampled"
        elapsed = max(elapsed, timed_run(command(reference, seed)))
        references[seed] = tree_bytes(reference)

    out = tmp_path / "node" / "sampled"
    rng = random.Random(6)
    killed = mid_write = runs = 0
    while killed < KILLS:
        runs += 1
        assert runs <= 3 * KILLS, f"only {killed} of {runs} runs were killed"
        seed = rng.choice([0, 1])
        status = run_or_kill(command(out, seed), rng.uniform(startup * 0.8, elapsed * 1.05))
        if status is None:
            killed += 1
        else:
            assert status == 0
        mid_write += any(p.name.startswith(".tmp-") for p in out.parent.iterdir())
        if out.exists():
            # The old complete output or the new complete one, never a mix or a partial one.
            tree = tree_bytes(out)
            matches = [s for s, expected in references.items() if tree == expected]
            assert len(matches) == 1
            assert verify_folder(out).ok
    assert mid_write >= 1

    subprocess.run(command(out, 1), cwd=REPO_ROOT, check=True, capture_output=True, timeout=600)
    assert tree_bytes(out) == references[1]
    # Staged and retired copies and the lock file of the killed runs are gone.
    assert sorted(p.name for p in out.parent.iterdir()) == ["sampled"]
