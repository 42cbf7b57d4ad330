"""Issue 16, the sampler's side: outputs readable under the user's umask, a consistent snapshot
of a tokenized root that is being re-tokenized, nothing deleted that hrm-data did not write,
verify covering what HRM-Text reads, strict sampling rules, spans checked by the sampler."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT
from test_rust_tokenizer import gsm8k_rows, write_jsonl
from test_sampling import MIXED, MIXED_RULES, write_rules, write_tokenized

from hrm_assets import sample, sampling, verify
from hrm_assets.atomic import exclusive_lock, shared_lock
from hrm_assets.epoch_budget import EpochBudgetError, TaskDemand, check_epoch_budget
from hrm_assets.manifest import MANIFEST_FILE, manifest_bytes, verify_folder
from hrm_assets.prefix_config import DEFAULT_RULE, PrefixRule
from hrm_assets.sampling import SamplingError, make_config, sample_tokenized
from hrm_assets.validation import check_tokenized_folder


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
        umask, sys.executable, "-m", "hrm_assets.tokenize", str(tmp_path / "cleaned"),
        "-o", str(tokenized), "--tokenizer-path", str(small_tokenizer_path),
    )  # fmt: skip
    assert tokenize.returncode == 0, tokenize.stderr
    rules = write_rules(tmp_path / "rules.yaml", [])
    sample = _run_with_umask(
        umask, sys.executable, "-m", "hrm_assets.sample", f"tokenized_path={tokenized}",
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
    assert verify.main([str(out)]) == 0
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
    assert verify.main([str(out)]) == 1
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
    real_draw = sampling.draw_epochs

    def draw_while_a_user_writes(*args, **kwargs):
        _user_file_beside_listed_arrays(out)
        return real_draw(*args, **kwargs)

    monkeypatch.setattr(sampling, "draw_epochs", draw_while_a_user_writes)
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
