"""data_io's tokenizer command (`python -m hrm_assets.tokenization`) and the functions behind it:
layout, tokenizer_info.json bytes, incremental skipping by content, pruning, error reporting."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT, TRICKY_TEXTS
from support.tokenized_rows import rows_of
from support.tokenizer_reference import (
    assert_folder_matches,
    gsm8k_rows,
    reference_arrays,
    write_jsonl,
    write_parquet,
)

from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import scan_cleaned_files, scan_cleaned_tree
from hrm_assets.contracts.framing import Framing
from hrm_assets.tokenization import chunks
from hrm_assets.tokenization.cli import main
from hrm_assets.tokenization.tokenize import (
    CODE_VERSION,
    OWNER_MARKER,
    TokenizeFailure,
    TokenizerSetup,
    expected_data_version,
    prune_orphans,
    read_metadata,
    remove_owned_output,
    tokenize_file,
    tokenize_files,
    tokenize_tree,
    write_tokenizer_info,
)
from hrm_assets.tokenizer.train import train_tokenizer

DMMATH = Path("dmmath") / "mathematics_dataset-v1.0" / "train-easy" / "algebra__linear_1d.txt"
SAFE_NAMES = [
    "Platypus__arb_math.jsonl",
    "dmmath__train-easy__algebra__linear_1d.parquet",
    "gsm8k_train.jsonl",
]


def dmmath_rows(real_raw: Path, limit: int) -> list[dict]:
    lines = (real_raw / DMMATH).read_text(encoding="utf-8").splitlines()
    pairs = list(zip(lines[0::2], lines[1::2], strict=True))[:limit]
    return [{"condition": "direct", "instruction": q, "response": a} for q, a in pairs]


@pytest.fixture
def cleaned(tmp_path, real_raw) -> Path:
    """A cleaned tree of real rows: JSONL at the root and in a folder, Parquet in another."""
    root = tmp_path / "cleaned"
    write_jsonl(root / "gsm8k_train.jsonl", gsm8k_rows(real_raw, "train", 120))
    tricky = [{"condition": "noisy", "instruction": t, "response": t} for t in TRICKY_TEXTS]
    write_jsonl(root / "Platypus" / "arb_math.jsonl", gsm8k_rows(real_raw, "test", 40) + tricky)
    write_parquet(
        root / "dmmath" / "train-easy__algebra__linear_1d.parquet", dmmath_rows(real_raw, 150)
    )
    return root


@pytest.fixture(scope="module")
def other_tokenizer_path(tmp_path_factory, real_raw) -> Path:
    """A second tokenizer (different vocabulary) to prove a new tokenizer redoes everything."""
    docs = list(TRICKY_TEXTS)
    for row in gsm8k_rows(real_raw, "train", 500):
        docs += [row["instruction"], row["response"]]
    path = tmp_path_factory.mktemp("other") / "tokenizer.json"
    train_tokenizer(docs, vocab_size=1024).save(str(path))
    return path


def run_cli(capsys, *args) -> tuple[int, str]:
    code = main([*map(str, args), "--no-progress"])
    return code, capsys.readouterr().err


def stamps(out: Path) -> dict[str, tuple[int, int]]:
    """(inode, mtime_ns) of each folder's tokens.npy: equal stamps mean the folder was kept."""
    result = {}
    for name in SAFE_NAMES:
        stat = (out / name / "tokens.npy").stat()
        result[name] = (stat.st_ino, stat.st_mtime_ns)
    return result


def test_cli_writes_data_io_layout(capsys, cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    code, err = run_cli(capsys, cleaned, "-o", out, "--tokenizer-path", small_tokenizer_path)
    assert code == 0, err
    assert "tokenized 3 file(s), skipped 0 unchanged" in err
    assert sorted(p.name for p in out.iterdir()) == sorted([*SAFE_NAMES, "tokenizer_info.json"])

    # data_io's exact bytes: compact, keys in its order, path as given, vocab with added
    # tokens; the conditions in the order data_io's command line lists its defaults.
    assert (out / "tokenizer_info.json").read_text(encoding="utf-8") == (
        f'{{"tokenizer_path":"{small_tokenizer_path}","boq":"<|im_start|>","eoq":"<|im_end|>",'
        '"eoa":"<|box_end|>","condition_mapping":{"direct":"<|object_ref_start|>",'
        '"cot":"<|object_ref_end|>","noisy":"<|quad_start|>","synth":"<|quad_end|>"},'
        '"vocab_size":2048}'
    )

    setup = TokenizerSetup.load(small_tokenizer_path)
    for item in scan_cleaned_files(cleaned):
        folder = out / item.safe_name
        assert_folder_matches(folder, reference_arrays(small_tokenizer_path, rows_of(item.path)))
        assert (folder / OWNER_MARKER).is_file()
        metadata = read_metadata(folder)
        stat = item.path.stat()
        assert metadata["source_mtime"] == int(stat.st_mtime)
        assert metadata["source_size"] == stat.st_size
        assert metadata["source_sha256"] == file_sha256(item.path)
        assert metadata["tokenizer_sha256"] == file_sha256(small_tokenizer_path)
        assert metadata["code_version"] == CODE_VERSION
        assert metadata["data_version"] == expected_data_version(item, setup)
        assert metadata["rows"] == len(rows_of(item.path))
        assert metadata["tokens"] == len(np.load(folder / "tokens.npy"))


def test_tokenizer_path_recorded_as_given(
    capsys, monkeypatch, cleaned, tmp_path, small_tokenizer_path
):
    # A folder holding tokenizer.json works too, and the path is kept exactly as typed.
    monkeypatch.chdir(small_tokenizer_path.parent.parent)
    given = f"./{small_tokenizer_path.parent.name}/"
    code, err = run_cli(capsys, cleaned, "-o", tmp_path / "out", "-t", given)
    assert code == 0, err
    info = json.loads((tmp_path / "out" / "tokenizer_info.json").read_text())
    assert info["tokenizer_path"] == given


def test_second_run_skips_everything(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    first = tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    assert [o.skipped for o in first.outcomes] == [False, False, False]
    before = stamps(out)
    second = tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    assert [o.skipped for o in second.outcomes] == [True, True, True]
    assert [(o.rows, o.tokens, o.data_version) for o in second.outcomes] == [
        (o.rows, o.tokens, o.data_version) for o in first.outcomes
    ]
    assert stamps(out) == before


def test_changed_content_redoes_only_that_file(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    before = stamps(out)
    changed = cleaned / "Platypus" / "arb_math.jsonl"
    rows = rows_of(changed)
    rows[5]["response"] += " (corrected)"
    write_jsonl(changed, rows)

    report = tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    redone = {o.safe_name for o in report.outcomes if not o.skipped}
    assert redone == {"Platypus__arb_math.jsonl"}
    after = stamps(out)
    assert after["Platypus__arb_math.jsonl"] != before["Platypus__arb_math.jsonl"]
    for name in set(SAFE_NAMES) - redone:
        assert after[name] == before[name]
    assert_folder_matches(
        out / "Platypus__arb_math.jsonl", reference_arrays(small_tokenizer_path, rows)
    )


def test_touched_but_unchanged_file_is_skipped(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    before = stamps(out)
    touched = cleaned / "gsm8k_train.jsonl"
    os.utime(touched, (2_000_000_000, 2_000_000_000))
    report = tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    assert all(o.skipped for o in report.outcomes)
    assert stamps(out) == before
    # data_io's mtime field follows the file, so data_io itself would not redo it either.
    assert read_metadata(out / "gsm8k_train.jsonl")["source_mtime"] == 2_000_000_000


def test_new_tokenizer_redoes_everything(
    capsys, cleaned, tmp_path, small_tokenizer_path, other_tokenizer_path
):
    out = tmp_path / "out"
    assert run_cli(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)[0] == 0
    before = stamps(out)
    code, err = run_cli(capsys, cleaned, "-o", out, "-t", other_tokenizer_path)
    assert code == 0, err
    assert "tokenized 3 file(s), skipped 0 unchanged" in err
    after = stamps(out)
    assert all(after[name] != before[name] for name in SAFE_NAMES)
    assert json.loads((out / "tokenizer_info.json").read_text())["vocab_size"] == 1024
    for item in scan_cleaned_files(cleaned):
        expected = reference_arrays(other_tokenizer_path, rows_of(item.path))
        assert_folder_matches(out / item.safe_name, expected)


def test_framing_change_redoes_everything(capsys, cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    assert run_cli(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)[0] == 0
    code, err = run_cli(
        capsys, cleaned, "-o", out, "-t", small_tokenizer_path, "--eoa", "<|endoftext|>"
    )
    assert code == 0, err
    assert "tokenized 3 file(s), skipped 0 unchanged" in err
    framing = Framing(eoa="<|endoftext|>")
    item = scan_cleaned_files(cleaned)[0]
    assert_folder_matches(
        out / item.safe_name, reference_arrays(small_tokenizer_path, rows_of(item.path), framing)
    )


def test_custom_conditions(capsys, tmp_path, real_raw, small_tokenizer_path):
    rows = gsm8k_rows(real_raw, "train", 12)
    for index, row in enumerate(rows):
        row["condition"] = ["think", "", "think,plain"][index % 3]
    write_jsonl(tmp_path / "cleaned" / "x.jsonl", rows)
    out = tmp_path / "out"
    code, err = run_cli(
        capsys, tmp_path / "cleaned", "-o", out, "-t", small_tokenizer_path,
        "--conditions", "think=<think>,plain=</think>",
    )  # fmt: skip
    assert code == 0, err
    info = json.loads((out / "tokenizer_info.json").read_text())
    assert info["condition_mapping"] == {"plain": "</think>", "think": "<think>"}
    framing = Framing(conditions={"think": "<think>", "plain": "</think>"})
    assert_folder_matches(out / "x.jsonl", reference_arrays(small_tokenizer_path, rows, framing))


def test_removed_file_prunes_only_owned_folders(capsys, cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    assert run_cli(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)[0] == 0
    foreign = out / "made_by_data_io.jsonl"
    foreign.mkdir()
    (foreign / "tokens.npy").write_bytes(b"not ours")
    leftover = out / ".tmp-something.123"
    leftover.mkdir()
    (cleaned / "gsm8k_train.jsonl").unlink()

    code, err = run_cli(capsys, cleaned, "-o", out, "-t", small_tokenizer_path)
    assert code == 0, err
    assert "pruned gsm8k_train.jsonl" in err
    assert not (out / "gsm8k_train.jsonl").exists()
    assert (foreign / "tokens.npy").read_bytes() == b"not ours"
    assert leftover.is_dir()
    assert (out / "Platypus__arb_math.jsonl").is_dir()
    # The pruning rule on its own.
    assert prune_orphans(out, []) == sorted(SAFE_NAMES[:2])
    assert foreign.is_dir()
    assert not remove_owned_output(out, foreign.name)


def test_bad_row_fails_its_file_and_exits_nonzero(cleaned, tmp_path, small_tokenizer_path):
    bad = write_jsonl(
        cleaned / "Platypus" / "bad.jsonl",
        [
            {"condition": "cot", "instruction": "q", "response": "a"},
            {"condition": "cot,bogus", "instruction": "q", "response": "a"},
        ],
    )
    out = tmp_path / "out"
    command = [sys.executable, "-m", "hrm_assets.tokenization", str(cleaned), "-o", str(out)]
    result = subprocess.run(
        [*command, "--tokenizer-path", str(small_tokenizer_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{bad}: row 2, field 'condition': unknown tag" in result.stderr
    assert "bogus" in result.stderr
    assert "known tags: cot, direct, noisy, synth" in result.stderr
    assert "1 file(s) failed: Platypus__bad.jsonl" in result.stderr
    # The other files were still tokenized; the bad one left nothing behind.
    assert all((out / name / "tokens.npy").is_file() for name in SAFE_NAMES)
    assert sorted(p.name for p in out.iterdir()) == sorted([*SAFE_NAMES, "tokenizer_info.json"])


def test_nulls_in_parquet_are_empty_strings_counted_and_reported(
    capsys, tmp_path, small_tokenizer_path
):
    """data_io reads a Parquet null as the empty string; so do we, and say how many."""
    rows = [{"condition": "", "instruction": "q", "response": "a"}] * 3
    rows[1] = {"condition": "", "instruction": None, "response": None}
    write_parquet(tmp_path / "cleaned" / "n.parquet", rows)
    write_parquet(tmp_path / "cleaned" / "full.parquet", rows[:1])
    out = tmp_path / "out"
    code, err = run_cli(capsys, tmp_path / "cleaned", "-o", out, "-t", small_tokenizer_path)
    assert code == 0, err
    assert "warning: n.parquet: 2 Parquet null(s) read as empty strings" in err
    assert "full.parquet:" not in err
    assert "2 Parquet null(s) read as empty strings in " in err
    assert json.loads((out / "n.parquet" / "metadata.json").read_text())["nulls"] == 2
    empty = [
        {**rows[0], "instruction": "", "response": ""} if row is rows[1] else row for row in rows
    ]
    assert_folder_matches(out / "n.parquet", reference_arrays(small_tokenizer_path, empty))
    # An unchanged file is skipped and its nulls still reported, from its metadata.
    code, err = run_cli(capsys, tmp_path / "cleaned", "-o", out, "-t", small_tokenizer_path)
    assert code == 0 and "skipped 2 unchanged" in err
    assert "warning: n.parquet: 2 Parquet null(s)" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--boq", "<|nope|>"], 'BOQ token "<|nope|>" is not in the tokenizer'),
        (["--conditions", "cot"], "bad --conditions entry 'cot'"),
    ],
)
def test_bad_framing_exits_before_writing(
    capsys, cleaned, tmp_path, small_tokenizer_path, extra, message
):
    out = tmp_path / "out"
    code, err = run_cli(capsys, cleaned, "-o", out, "-t", small_tokenizer_path, *extra)
    assert code == 1
    assert message in err
    assert not out.exists()


def test_missing_tokenizer_is_a_clear_error(cleaned, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "hrm_assets.tokenization", str(cleaned), "-o", str(tmp_path / "o"),
         "--tokenizer-path", "Qwen/Qwen3-Next-80B-A3B-Instruct"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: Qwen/Qwen3-Next-80B-A3B-Instruct: no tokenizer found (expected a tokenizer.json "
        "file or a folder holding one)"
    )


def test_two_files_with_one_safe_name_is_an_error(capsys, tmp_path, small_tokenizer_path):
    row = [{"condition": "", "instruction": "q", "response": "a"}]
    write_jsonl(tmp_path / "cleaned" / "a" / "b.jsonl", row)
    write_jsonl(tmp_path / "cleaned" / "a__b.jsonl", row)
    code, err = run_cli(
        capsys, tmp_path / "cleaned", "-o", tmp_path / "out", "-t", small_tokenizer_path
    )
    assert code == 1
    assert "both map to the tokenized folder 'a__b.jsonl'" in err


def test_threads_option_and_console_script(capsys, cleaned, tmp_path, small_tokenizer_path):
    code, err = run_cli(
        capsys, cleaned, "-o", tmp_path / "out", "-t", small_tokenizer_path, "--threads", "1"
    )
    assert code == 0, err
    assert (
        run_cli(
            capsys, cleaned, "-o", tmp_path / "o2", "-t", small_tokenizer_path, "--threads", "0"
        )[0]
        == 2
    )
    scripts = importlib.metadata.entry_points(group="console_scripts")
    assert scripts["hrm-tokenize"].value == "hrm_assets.tokenization.cli:main"


def test_python_api_for_dagster(cleaned, tmp_path, small_tokenizer_path):
    """What a tokenized partition does: version check, tokenize, tokenizer_info, removal."""
    out = tmp_path / "out"
    item = next(f for f in scan_cleaned_files(cleaned) if f.safe_name == "gsm8k_train.jsonl")
    framing = Framing()
    expected = expected_data_version(item, small_tokenizer_path, framing)

    info = write_tokenizer_info(out, small_tokenizer_path, framing)
    info_stamp = info.stat().st_mtime_ns
    outcome = tokenize_file(item, out, small_tokenizer_path, framing, threads=2)
    assert not outcome.skipped
    assert outcome.data_version == expected == read_metadata(out / item.safe_name)["data_version"]
    assert outcome.output_dir == out / item.safe_name
    assert outcome.rows == 120
    assert outcome.bytes == item.path.stat().st_size
    assert outcome.tokens == len(np.load(outcome.output_dir / "tokens.npy"))

    again = tokenize_file(item, out, TokenizerSetup.load(small_tokenizer_path, framing))
    assert again.skipped
    assert (again.rows, again.tokens, again.data_version) == (120, outcome.tokens, expected)
    assert write_tokenizer_info(out, small_tokenizer_path, framing).stat().st_mtime_ns == info_stamp

    # A folder with a missing array is not reused.
    (outcome.output_dir / "resp_len.npy").unlink()
    assert not tokenize_file(item, out, small_tokenizer_path, framing).skipped

    assert remove_owned_output(out, item.safe_name)
    assert not (out / item.safe_name).exists()
    assert not remove_owned_output(out, item.safe_name)


def test_skipped_links_are_reported_each_by_kind(capsys, tmp_path, small_tokenizer_path):
    # data_io's walk skips them all; none may be skipped silently (issue 16).
    root = tmp_path / "cleaned"
    write_jsonl(root / "real" / "a.jsonl", [{"condition": "", "instruction": "q", "response": "r"}])
    (root / "linked_dir").symlink_to("real")
    (root / "linked.jsonl").symlink_to("real/a.jsonl")
    (root / "dangling.jsonl").symlink_to("gone.jsonl")
    (root / "dangling_dir").symlink_to("gone")
    scan = scan_cleaned_tree(root)
    assert [item.safe_name for item in scan.files] == ["real__a.jsonl"]
    links = ["dangling.jsonl", "dangling_dir", "linked.jsonl", "linked_dir"]
    assert scan.symlinks == [root / name for name in links]

    code, err = run_cli(capsys, root, "-o", tmp_path / "out", "-t", small_tokenizer_path)
    assert code == 0, err
    for name, kind in [
        ("dangling.jsonl", "a dangling symlink"),
        ("dangling_dir", "a dangling symlink"),
        ("linked.jsonl", "a symlink"),
        ("linked_dir", "a symlinked folder, not followed"),
    ]:
        assert f"warning: skipped {root / name}: {kind} (data_io skips them too)" in err
    assert "and 4 symlinked" in err


def test_many_chunks_in_work_keep_name_order_and_isolate_a_bad_file(
    monkeypatch, tmp_path, small_tokenizer_path
):
    """Chunks are encoded two at a time: the outcomes still come in name order, one per file,
    a bad file in a later chunk fails alone, and a caller that stops early leaves every folder
    complete or absent (never a staged leftover)."""
    monkeypatch.setattr(chunks, "CHUNK_FILES", 2)
    cleaned = tmp_path / "cleaned"
    for index in range(7):
        rows = [
            {"condition": "cot", "instruction": f"q{index} {n}", "response": "a"} for n in range(5)
        ]
        write_jsonl(cleaned / f"task_{index}.jsonl", rows)
    write_jsonl(
        cleaned / "task_5.jsonl", [{"condition": "bogus", "instruction": "q", "response": "a"}]
    )
    files = scan_cleaned_files(cleaned)
    out = tmp_path / "out"

    results = list(tokenize_files(files, out, small_tokenizer_path))
    assert [result.safe_name for result in results] == [f"task_{i}.jsonl" for i in range(7)]
    failed = [result.safe_name for result in results if isinstance(result, TokenizeFailure)]
    assert failed == ["task_5.jsonl"]
    assert sorted(p.name for p in out.iterdir()) == [f"task_{i}.jsonl" for i in range(7) if i != 5]

    stopped = tmp_path / "stopped"
    outcomes = tokenize_files(files, stopped, small_tokenizer_path)
    next(outcomes)
    outcomes.close()  # the chunks in work finish; nothing after them starts
    names = sorted(p.name for p in stopped.iterdir())
    assert names and all(not name.startswith(".") for name in names)
    for name in names:
        assert (stopped / name / "manifest.json").is_file()
