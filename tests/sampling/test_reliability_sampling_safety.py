"""Issue 16, the sampler's side: outputs readable under the user's umask, a consistent snapshot
of a tokenized root that is being re-tokenized, nothing deleted that hrm-data did not write,
verify covering what HRM-Text reads, strict sampling rules, spans checked by the sampler."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT
from support.tokenized_trees import MIXED, MIXED_RULES, write_rules, write_tokenized
from support.tokenizer_reference import gsm8k_rows, write_jsonl

from hrm_assets.checks.cli import main as verify_main
from hrm_assets.checks.consistency import check_tokenized_folder
from hrm_assets.common.atomic import exclusive_lock, lock_path_for, shared_lock
from hrm_assets.common.manifest import MANIFEST_FILE, manifest_bytes, verify_folder
from hrm_assets.sampling import cli as sample
from hrm_assets.sampling import epoch_writing
from hrm_assets.sampling import sampler as sampling
from hrm_assets.sampling.epoch_budget import EpochBudgetError, TaskDemand, check_epoch_budget
from hrm_assets.sampling.prefix_config import DEFAULT_RULE, PrefixRule
from hrm_assets.sampling.sampler import SamplingError, make_config, sample_tokenized
from hrm_assets.tokenization.snapshot import (
    SnapshotError,
    TokenizedSnapshot,
    identity,
    tokenized_snapshot,
)


def _modes(root: Path) -> dict[str, str]:
    """Permission bits of ``root`` and of everything under it, by relative path."""
    found = {".": oct(stat.S_IMODE(root.stat().st_mode))}
    for path in sorted(root.rglob("*")):
        found[path.relative_to(root).as_posix()] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def _run_with_umask(umask: int, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(umask),
        check=False,
    )


# --------------------------------------------------------------------------- permissions


@pytest.mark.parametrize(
    ("umask", "file_mode", "dir_mode"), [(0o022, "0o644", "0o755"), (0o027, "0o640", "0o750")]
)
def test_outputs_follow_the_umask_like_ordinary_writes(
    tmp_path, real_raw, small_tokenizer_path, umask, file_mode, dir_mode
):
    # The sampled root was a mkdtemp folder (0700) and tokenizer_info.json a mkstemp file
    # (0600): unreadable by a training job running as another user.
    write_jsonl(tmp_path / "cleaned" / "gsm8k_train.jsonl", gsm8k_rows(real_raw, "train", 40))
    tokenized, sampled = tmp_path / "tokenized", tmp_path / "sampled"
    tokenize = _run_with_umask(
        umask, sys.executable, "-m", "hrm_assets.tokenization", str(tmp_path / "cleaned"),
        "-o", str(tokenized), "--tokenizer-path", str(small_tokenizer_path),
    )  # fmt: skip
    assert tokenize.returncode == 0, tokenize.stderr
    rules = write_rules(tmp_path / "rules.yaml", [])
    sample = _run_with_umask(
        umask, sys.executable, "-m", "hrm_assets.sampling", f"tokenized_path={tokenized}",
        f"output_path={sampled}", f"prefix_config_path={rules}", "epochs=2",
    )  # fmt: skip
    assert sample.returncode == 0, sample.stderr
    assert (sampled / "tokenizer" / "tokenizer.json").is_file()  # the shipped tokenizer too
    for root in (sampled, tokenized):
        modes = _modes(root)
        expected = {
            name: dir_mode if (root / name).is_dir() else file_mode
            for name in modes
            if not (root / name).name.endswith(".lock")
        }
        assert {name: modes[name] for name in expected} == expected, root


# --------------------------------------------------------------------------- the shared lock


def test_readers_share_the_lock_and_exclude_the_writer(tmp_path):
    lock = tmp_path / ".x.lock"
    events: list[str] = []
    with shared_lock(lock), shared_lock(lock):  # two readers at once
        writer = threading.Thread(
            target=lambda: _hold(exclusive_lock(lock), events, "writer"), daemon=True
        )
        writer.start()
        writer.join(timeout=0.5)
        assert writer.is_alive() and events == []  # the writer waits for both readers
        events.append("readers done")
    writer.join(timeout=60)
    assert events == ["readers done", "writer"]
    assert not lock.exists()  # the writer deleted it; readers leave none behind either
    with shared_lock(lock):
        pass
    assert not lock.exists()


def _hold(lock, events: list[str], name: str) -> None:
    with lock:
        events.append(name)


def test_a_reader_waits_for_the_writer_and_never_overlaps_it(tmp_path):
    # Writers delete the file on release while readers wait on it: the inode re-check is what
    # keeps a reader that wins a deleted file from reading beside the next writer.
    lock = tmp_path / ".x.lock"
    writing: list[int] = []
    overlaps: list[str] = []
    done: list[str] = []

    def writer() -> None:
        for _ in range(150):
            with exclusive_lock(lock):
                writing.append(1)
                time.sleep(0)
                writing.pop()
        done.append("writer")

    def reader() -> None:
        for _ in range(150):
            with shared_lock(lock):
                if writing:
                    overlaps.append("reader beside a writer")
                time.sleep(0)
        done.append("reader")

    threads = [threading.Thread(target=target) for target in (writer, writer, reader, reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(done) == ["reader", "reader", "writer", "writer"]
    assert overlaps == []


# --------------------------------------------------------------------------- sampling rules


def test_a_repeat_beyond_memory_and_disk_is_one_line_naming_the_rule(tmp_path, capsys):
    # numpy used to fail with "Unable to allocate 255. TiB" after the copy had started.
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(
        tmp_path / "rules.yaml", [*MIXED_RULES[:4], {"prefix": "Platypus__", "repeat": 10**11}]
    )
    out = tmp_path / "sampled"
    status = sample.main(
        [f"tokenized_path={tokenized}", f"output_path={out}", f"prefix_config_path={rules}"]
    )
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert status == 1
    assert errors == [errors[0]] and errors[0].startswith(
        f"hrm-sample: error: {rules}: rule 4 (prefix 'Platypus__'): repeat: 100000000000 asks "
        f"for 500,000,000,000 rows per epoch; the 10 epoch(s) of 500,000,"
    )
    assert "free for" in errors[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rules.yaml", "tok"]


def test_the_budget_names_what_runs_out_first():
    demands = [
        TaskDemand("a.jsonl", DEFAULT_RULE, 1_000),
        TaskDemand("b.jsonl", RULE_B, 3_000_000),
    ]
    common = dict(epochs=2, token_bytes=10, output_path=Path("/out"), rules_path=Path("r.yaml"))
    check_epoch_budget(demands, [RULE_B], free_bytes=10**9, memory_bytes=10**9, **common)
    with pytest.raises(EpochBudgetError, match=re.escape(
        "r.yaml: rule 0 (prefix 'b'): repeat: 3 asks for 3,000,000 rows per epoch; the 2 "
        "epoch(s) of 3,001,000 rows would take 192.1 MB, more than the 100.0 MB free for /out"
    )):  # fmt: skip
        check_epoch_budget(demands, [RULE_B], free_bytes=10**8, memory_bytes=10**9, **common)
    with pytest.raises(EpochBudgetError, match=re.escape(
        "drawing an epoch of 3,001,000 rows takes 168.1 MB of memory, more than the 100.0 MB "
        "available"
    )):  # fmt: skip
        check_epoch_budget(demands, [RULE_B], free_bytes=10**9, memory_bytes=10**8, **common)
    defaults = [TaskDemand("a.jsonl", DEFAULT_RULE, 5_000_000)]
    with pytest.raises(EpochBudgetError, match="the tasks no rule matches .the defaults. ask"):
        check_epoch_budget(defaults, [RULE_B], free_bytes=10**6, memory_bytes=10**9, **common)


RULE_B = PrefixRule(prefix="b", repeat=3)


# --------------------------------------------------------------------------- span consistency


def test_overlapping_spans_with_the_right_total_are_refused_by_the_sampler_and_the_check(
    tmp_path,
):
    # Row 1 of a task moved back into row 0: every span inside tokens.npy, the lengths still
    # adding up to its token count. The sampler took it unless hrm-verify ran first.
    tokenized = write_tokenized(tmp_path / "tok", {"a.jsonl": [(5, 4), (6, 3), (2, 2)]})
    task = tokenized / "a.jsonl"
    for name in ("inst_start", "resp_start"):
        starts = np.load(task / f"{name}.npy")
        starts[1] -= 2
        np.save(task / f"{name}.npy", starts)
    (task / "metadata.json").write_text("{}")
    expected = (
        "row 1: starts at 7 but row 0 ends at 9 (it overlaps the previous row); rows lie back "
        "to back in tokens.npy"
    )
    config = make_config(
        tokenized_path=tokenized,
        output_path=tmp_path / "sampled",
        prefix_config_path=write_rules(tmp_path / "rules.yaml", []),
    )
    with pytest.raises(SamplingError) as raised:
        sample_tokenized(config)
    assert str(raised.value) == f"{task}: {expected}"
    assert check_tokenized_folder(task, 1000).problems == [f"a.jsonl: {expected}"]
    assert not config.output_path.exists()


# --------------------------------------------------------------------------- verify


def _sampled_for_verify(tmp_path: Path) -> Path:
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    out = tmp_path / "sampled"
    sample_tokenized(
        make_config(
            tokenized_path=tokenized,
            output_path=out,
            prefix_config_path=write_rules(tmp_path / "rules.yaml", MIXED_RULES),
            epochs=2,
        )
    )
    assert verify_main([str(out)]) == 0
    return out


def _edit_vocab_size(out: Path) -> str:
    # HRM-Text picks the token dtype from it: 100,000 would read uint16 tokens as int32.
    metadata = json.loads((out / "metadata.json").read_text())
    metadata["tokenizer_info"]["vocab_size"] = 100_000
    (out / "metadata.json").write_text(json.dumps(metadata))
    return "metadata.json: "


def _unlist_metadata(out: Path) -> str:
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    del manifest["files"]["metadata.json"]
    (out / MANIFEST_FILE).write_bytes(manifest_bytes(manifest))
    return "metadata.json: HRM-Text reads it but manifest.json does not list it (made by an older"


HRM_TEXT_READS = {
    "deleted-metadata": lambda out: (
        (out / "metadata.json").unlink() or "metadata.json: listed in manifest.json but missing"
    ),
    "edited-vocab-size": _edit_vocab_size,
    "manifest-of-an-older-sampler": _unlist_metadata,
}


@pytest.mark.parametrize("kind", sorted(HRM_TEXT_READS))
def test_verify_covers_the_metadata_hrm_text_reads(tmp_path, capsys, kind):
    out = _sampled_for_verify(tmp_path)
    capsys.readouterr()
    expected = HRM_TEXT_READS[kind](out)
    assert verify_main([str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"{out / expected}" in printed, printed
    assert not verify_folder(out).ok


# --------------------------------------------------------------------------- ownership


def _sampled_once(tmp_path: Path, **values) -> tuple[dict, Path]:
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    base = dict(
        tokenized_path=tokenized,
        output_path=tmp_path / "sampled",
        prefix_config_path=write_rules(tmp_path / "rules.yaml", MIXED_RULES),
        epochs=2,
        **values,
    )
    sample_tokenized(make_config(**base))
    return base, tmp_path / "sampled"


def _user_file_in_an_epoch(out: Path) -> Path:
    (out / "epoch_7").mkdir()
    (out / "epoch_7" / "notes.txt").write_text("mine")
    return out / "epoch_7"  # the folder is named: nothing proves any of it ours


def _user_file_beside_listed_arrays(out: Path) -> Path:
    (out / "epoch_1" / "notes.txt").write_text("mine")
    return out / "epoch_1" / "notes.txt"


def _user_symlink(out: Path) -> Path:
    (out / "data").symlink_to(out.parent / "tok")
    return out / "data"


def _array_replaced_by_a_link(out: Path) -> Path:
    target = out / "epoch_0" / "inst_len.npy"
    kept = out.parent / "kept.npy"
    target.rename(kept)
    target.symlink_to(kept)
    return target


def _written_by_data_io(out: Path) -> Path:
    (out / "manifest.json").unlink()  # data_io's folder: the same files, no manifest
    return out / "epoch_0"


FOREIGN = {
    "user-file-in-an-unlisted-epoch": _user_file_in_an_epoch,
    "user-file-beside-listed-arrays": _user_file_beside_listed_arrays,
    "user-symlink": _user_symlink,
    "listed-array-now-a-symlink": _array_replaced_by_a_link,
    "folder-without-manifest": _written_by_data_io,
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_the_sampler_replaces_only_what_it_can_prove_it_wrote(tmp_path, kind):
    base, out = _sampled_once(tmp_path)
    named = FOREIGN[kind](out)
    before = _tree(out)
    with pytest.raises(SamplingError) as raised:
        sample_tokenized(make_config(**{**base, "seed": 7}))
    assert str(raised.value).startswith(f"{out}: output_path holds what is not a sampled output")
    assert str(named) in str(raised.value)
    assert _tree(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_something_put_into_the_output_during_a_run_is_refused_not_deleted(tmp_path, monkeypatch):
    base, out = _sampled_once(tmp_path)
    real_draw = epoch_writing.draw_epochs

    def draw_while_a_user_writes(*args, **kwargs):
        _user_file_beside_listed_arrays(out)
        return real_draw(*args, **kwargs)

    monkeypatch.setattr(epoch_writing, "draw_epochs", draw_while_a_user_writes)
    with pytest.raises(SamplingError, match=re.escape(str(out / "epoch_1" / "notes.txt"))):
        sample_tokenized(make_config(**{**base, "seed": 7}))
    assert (out / "epoch_1" / "notes.txt").read_text() == "mine"
    assert verify_folder(out).problems == []  # the previous output, as it was (plus the note)


def test_an_empty_folder_and_an_earlier_output_are_replaced(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    out = tmp_path / "sampled"
    out.mkdir()
    config = make_config(tokenized_path=tokenized, output_path=out, prefix_config_path=rules)
    sample_tokenized(config.model_copy(update={"epochs": 3}))
    # An output of an older hrm-sample (metadata.json not in its manifest) is still ours.
    manifest = json.loads((out / MANIFEST_FILE).read_text())
    del manifest["files"]["metadata.json"]
    (out / MANIFEST_FILE).write_bytes(manifest_bytes(manifest))
    sample_tokenized(config.model_copy(update={"epochs": 2}))
    assert sorted(p.name for p in out.glob("epoch_*")) == ["epoch_0", "epoch_1"]
    assert verify_folder(out).ok


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_output_path_is_written_through(tmp_path, dangling):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    real = tmp_path / "shm" / "real"
    link = tmp_path / "sampled"
    link.symlink_to(real, target_is_directory=True)
    config = make_config(tokenized_path=tokenized, output_path=link, prefix_config_path=rules)
    if not dangling:
        sample_tokenized(config.model_copy(update={"epochs": 3}))
    result = sample_tokenized(config.model_copy(update={"epochs": 2}))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert result.output_path == real
    assert sorted(p.name for p in real.glob("epoch_*")) == ["epoch_0", "epoch_1"]
    assert verify_folder(link).ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rules.yaml", "sampled", "shm", "tok"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["real"]


def test_a_symlink_into_the_tokenized_root_is_refused(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    link = tmp_path / "sampled"
    link.symlink_to(tokenized / "inside", target_is_directory=True)
    config = make_config(
        tokenized_path=tokenized,
        output_path=link,
        prefix_config_path=write_rules(tmp_path / "rules.yaml", []),
    )
    with pytest.raises(SamplingError, match="must not contain each other"):
        sample_tokenized(config)
    assert not (tokenized / "inside").exists()


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root``: a file's bytes, a link's target, ``dir`` for a folder."""
    found: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = path.read_bytes()
    return found


# --------------------------------------------------------------------------- torn reads

# Re-tokenizes the cleaned root in a loop, both files alternating between two versions (a.jsonl
# every round, b.jsonl every other round), and counts the rounds done in a file.
RETOKENIZER = """
import os, sys
from pathlib import Path
from hrm_assets.tokenization.tokenize import tokenize_tree
versions, cleaned, tokenized, tokenizer, rounds_file, stop_file = map(Path, sys.argv[1:7])
for round_ in range(1, 10_000):
    if stop_file.exists():
        break
    for name, period in (("a.jsonl", 1), ("b.jsonl", 2)):
        source = versions / f"{name}.v{(round_ // period) % 2}"
        staged = cleaned / f".staged-{name}"
        staged.write_bytes(source.read_bytes())
        os.replace(staged, cleaned / name)
    tokenize_tree([cleaned], tokenized, tokenizer, progress=False)
    rounds_file.with_suffix(".tmp").write_text(str(round_))
    os.replace(rounds_file.with_suffix(".tmp"), rounds_file)
"""

# Samples the tokenized root RUNS times, each into its own folder, and prints per run a JSON
# line: the error (or null) and the re-tokenizer's rounds done before and after the run.
SAMPLER = """
import json, sys, time
from pathlib import Path
from hrm_assets.sampling.sampler import SamplingError, make_config, sample_tokenized
tokenized, rules, outputs, rounds_file = map(Path, sys.argv[1:5])
runs = int(sys.argv[5])
def rounds():
    try:
        return int(rounds_file.read_text())
    except (FileNotFoundError, ValueError):
        return 0
while rounds() < 1:  # the re-tokenizer is under way
    time.sleep(0.01)
for run in range(runs):
    before = rounds()
    config = make_config(tokenized_path=tokenized, output_path=outputs / f"run{run}",
                         prefix_config_path=rules, epochs=2)
    try:
        sample_tokenized(config)
        error = None
    except SamplingError as exc:
        error = str(exc)
    print(json.dumps({"error": error, "before": before, "after": rounds()}), flush=True)
"""


def _write_versions(versions: Path, real_raw: Path) -> None:
    """Two versions of each cleaned file, of different row counts and text."""
    train = gsm8k_rows(real_raw, "train", 2400)
    test = gsm8k_rows(real_raw, "test", 900)
    write_jsonl(versions / "a.jsonl.v0", train[:1500])
    write_jsonl(versions / "a.jsonl.v1", train[1500:])
    write_jsonl(versions / "b.jsonl.v0", test[:500])
    write_jsonl(versions / "b.jsonl.v1", test[500:])


def _expected_manifests(tmp_path: Path, versions: Path, tokenizer: Path, rules: Path) -> set:
    """The sampled manifest of every combination of one version of each file."""
    from hrm_assets.tokenization.tokenize import tokenize_tree

    manifests = set()
    for a in (0, 1):
        for b in (0, 1):
            cleaned = tmp_path / f"cleaned-{a}{b}"
            cleaned.mkdir()
            (cleaned / "a.jsonl").write_bytes((versions / f"a.jsonl.v{a}").read_bytes())
            (cleaned / "b.jsonl").write_bytes((versions / f"b.jsonl.v{b}").read_bytes())
            tokenized = tmp_path / f"tokenized-{a}{b}"
            tokenize_tree([cleaned], tokenized, tokenizer, progress=False)
            out = tmp_path / f"expected-{a}{b}"
            sample_tokenized(
                make_config(
                    tokenized_path=tokenized, output_path=out, prefix_config_path=rules, epochs=2
                )
            )
            manifests.add((out / MANIFEST_FILE).read_bytes())
    assert len(manifests) == 4
    return manifests


def test_sampling_while_re_tokenizing_reads_one_version_of_each_file(
    tmp_path, real_raw, small_tokenizer_path
):
    # Spans of one version with tokens of another passed hrm-verify; other runs failed with
    # a spurious "shorter than its header says". Two real processes: one re-tokenizes the
    # root it samples from, round after round, while the other samples it again and again.
    versions = tmp_path / "versions"
    _write_versions(versions, real_raw)
    rules = write_rules(tmp_path / "rules.yaml", [{"prefix": "b", "repeat": 2}])
    expected = _expected_manifests(tmp_path, versions, small_tokenizer_path, rules)

    cleaned, tokenized, outputs = tmp_path / "cleaned", tmp_path / "tokenized", tmp_path / "runs"
    cleaned.mkdir()
    outputs.mkdir()
    rounds_file, stop_file = tmp_path / "rounds", tmp_path / "stop"
    retokenizer = subprocess.Popen(
        [sys.executable, "-c", RETOKENIZER, str(versions), str(cleaned), str(tokenized),
         str(small_tokenizer_path), str(rounds_file), str(stop_file)],
        cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        sampler = subprocess.run(
            [sys.executable, "-c", SAMPLER, str(tokenized), str(rules), str(outputs),
             str(rounds_file), "12"],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
    finally:
        stop_file.touch()
        _, retokenizer_errors = retokenizer.communicate(timeout=600)
    assert sampler.returncode == 0, sampler.stderr
    assert retokenizer.returncode == 0, retokenizer_errors
    runs = [json.loads(line) for line in sampler.stdout.splitlines()]
    assert len(runs) == 12
    assert [run["error"] for run in runs] == [None] * 12
    # The root was rewritten while it was being sampled, not only before or after.
    assert runs[-1]["after"] - runs[0]["before"] >= 2, runs
    for index in range(12):
        out = outputs / f"run{index}"
        assert (out / MANIFEST_FILE).read_bytes() in expected, index
        assert verify_folder(out).ok, index
    assert not [p.name for p in tokenized.iterdir() if p.name.endswith(".lock")]


def test_the_sampler_waits_for_a_tokenizer_writing_a_folder(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    config = make_config(
        tokenized_path=tokenized,
        output_path=tmp_path / "sampled",
        prefix_config_path=write_rules(tmp_path / "rules.yaml", MIXED_RULES),
        epochs=2,
    )
    waiting = threading.Event()
    messages: list[str] = []
    failures: list[BaseException] = []

    def log(message: str) -> None:
        messages.append(message)
        waiting.set()

    def run() -> None:
        try:
            sample_tokenized(config, log=log)
        except BaseException as exc:
            failures.append(exc)

    with exclusive_lock(lock_path_for(tokenized / "flan__y.parquet")):  # as hrm-tokenize does
        sampler = threading.Thread(target=run)
        sampler.start()
        assert waiting.wait(timeout=120)
        assert not config.output_path.exists()
    sampler.join(timeout=300)
    assert failures == []
    assert messages == [f"waiting for {tokenized / 'flan__y.parquet'}: a tokenizer is writing it"]
    assert verify_folder(config.output_path).ok
    assert not [p.name for p in tokenized.iterdir() if p.name.endswith(".lock")]


def test_a_read_only_root_is_sampled_without_locks(tmp_path):
    # A shared root mounted read-only for the sampler (its own mount namespace, so the mount
    # ends with it): lock files cannot be created, each folder's identity is compared instead.
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    sample = (
        f"mount --bind -o ro {shlex.quote(str(tokenized))} {shlex.quote(str(tokenized))} && "
        f"touch {shlex.quote(str(tokenized / 'probe'))} 2>/dev/null && exit 9; exec "
        + shlex.join(
            [sys.executable, "-m", "hrm_assets.sampling", f"tokenized_path={tokenized}",
             f"output_path={tmp_path / 'sampled'}", f"prefix_config_path={rules}", "epochs=2"]
        )
    )  # fmt: skip
    read_only = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", sample],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert read_only.returncode == 0, read_only.stderr
    expected = tmp_path / "expected"
    sample_tokenized(
        make_config(tokenized_path=tokenized, output_path=expected, prefix_config_path=rules,
                    epochs=2)
    )  # fmt: skip
    assert (tmp_path / "sampled" / MANIFEST_FILE).read_bytes() == (
        expected / MANIFEST_FILE
    ).read_bytes()
    assert not [p.name for p in tokenized.iterdir() if p.name.endswith(".lock")]


def test_a_folder_no_lock_held_that_changed_is_an_error_naming_it(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    folder = tokenized / "gsm8k_train.jsonl"
    snapshot = TokenizedSnapshot([folder], contextlib.ExitStack(), {folder: identity(folder)})
    replacement = tokenized / ".tmp-new"
    shutil.copytree(folder, replacement)
    shutil.rmtree(folder)
    replacement.rename(folder)  # a tokenizer's replacement: same name, same bytes, new folder
    with pytest.raises(SnapshotError, match=re.escape(f"{folder}: changed while being read")):
        snapshot.release()
    TokenizedSnapshot([folder], contextlib.ExitStack(), {folder: identity(folder)}).release()


def test_a_listing_that_changes_under_the_locks_starts_over(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", {"a.jsonl": [(3, 2)]})
    listings: list[list[str]] = []

    def list_while_a_tokenizer_adds_one(root: Path) -> list[Path]:
        if len(listings) == 1:  # between the first listing and its check under the locks
            write_tokenized(tmp_path / "new", {"b.jsonl": [(2, 2)]})
            (tmp_path / "new" / "b.jsonl").rename(root / "b.jsonl")
        found = sampling.task_directories(root)
        listings.append([path.name for path in found])
        return found

    with tokenized_snapshot(tokenized, list_while_a_tokenizer_adds_one) as snapshot:
        assert [path.name for path in snapshot.task_dirs] == ["a.jsonl", "b.jsonl"]
    assert listings == [["a.jsonl"], ["a.jsonl", "b.jsonl"], ["a.jsonl", "b.jsonl"],
                        ["a.jsonl", "b.jsonl"]]  # fmt: skip

    def never_the_same(root: Path) -> list[Path]:
        listings.append([])
        (root / f"c{len(listings)}.jsonl").mkdir()
        return sampling.task_directories(root)

    with pytest.raises(SnapshotError, match="kept appearing or disappearing"):
        with tokenized_snapshot(tokenized, never_the_same):
            pass
    assert not [p.name for p in tokenized.iterdir() if p.name.endswith(".lock")]
