"""Issue 6, determinism and integrity: every output folder carries ``manifest.json`` (size and
SHA-256 of each array); ``hrm-verify`` and the ``manifest_valid`` checks recompute it; the same
inputs and seed give the same manifest across runs, processes and thread counts."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO_ROOT, TRICKY_TEXTS
from support.tokenized_trees import MIXED, MIXED_RULES, write_rules, write_tokenized
from support.tokenizer_reference import gsm8k_rows, write_jsonl, write_parquet

from hrm_assets import _core
from hrm_assets.checks.cli import main as verify_main
from hrm_assets.checks.consistency import check_sampled_folder, span_problems
from hrm_assets.checks.verify import verify_paths
from hrm_assets.common.layout import scan_cleaned_files
from hrm_assets.common.manifest import (
    MANIFEST_FILE,
    MANIFEST_FORMAT,
    build_manifest,
    manifest_bytes,
    read_manifest,
    verify_folder,
)
from hrm_assets.sampling import arrays as sampled_arrays
from hrm_assets.sampling.sampler import make_config, sample_tokenized
from hrm_assets.tokenization.tokenize import ARRAY_FILES, tokenize_file, tokenize_tree


@pytest.fixture
def cleaned(tmp_path, real_raw) -> Path:
    root = tmp_path / "cleaned"
    rows = gsm8k_rows(real_raw, "train", 200)
    rows += [{"condition": "noisy", "instruction": t, "response": t} for t in TRICKY_TEXTS]
    write_jsonl(root / "gsm8k_train.jsonl", rows)
    write_parquet(root / "Platypus" / "arb.parquet", gsm8k_rows(real_raw, "test", 80))
    return root


def independent_manifest(folder: Path, names: list[str], kind: str) -> bytes:
    """The manifest format restated with hashlib alone."""
    files = {}
    for name in names:
        data = (folder / name).read_bytes()
        files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    manifest = {"files": files, "format": "hrm-data-manifest/1", "kind": kind}
    return json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()


def manifests(root: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in sorted(root.glob(f"*/{MANIFEST_FILE}"))}


# --------------------------------------------------------------------------- tokenized


def test_tokenized_manifest_is_written_by_rust_in_the_shared_format(
    cleaned, tmp_path, small_tokenizer_path
):
    out = tmp_path / "out"
    report = tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    assert not report.failures
    assert _core.MANIFEST_FORMAT == MANIFEST_FORMAT == "hrm-data-manifest/1"
    for item in scan_cleaned_files(cleaned):
        folder = out / item.safe_name
        written = (folder / MANIFEST_FILE).read_bytes()
        assert written == independent_manifest(folder, sorted(ARRAY_FILES), "tokenized")
        assert written == manifest_bytes(build_manifest(folder, kind="tokenized"))
        result = verify_folder(folder)
        assert result.ok, result.problems
        assert result.files == 5
        assert result.bytes == sum((folder / name).stat().st_size for name in ARRAY_FILES)


def test_tokenized_manifest_same_across_runs_threads_batches_and_processes(
    cleaned, tmp_path, small_tokenizer_path
):
    item = next(f for f in scan_cleaned_files(cleaned) if f.safe_name == "gsm8k_train.jsonl")
    encoder = _core.Encoder(
        str(small_tokenizer_path),
        "<|im_start|>",
        "<|im_end|>",
        "<|box_end|>",
        {"cot": "<|object_ref_end|>", "direct": "<|object_ref_start|>",
         "noisy": "<|quad_start|>", "synth": "<|quad_end|>"},
    )  # fmt: skip
    seen = set()
    for threads, batch_rows in [(1, 7), (2, 64), (2, 100_000), (None, 1)]:
        folder = tmp_path / f"t{threads}-b{batch_rows}" / item.safe_name
        encoder.tokenize_file(
            str(item.path), str(folder), "{}", num_threads=threads, batch_rows=batch_rows
        )
        seen.add((folder / MANIFEST_FILE).read_bytes())
    assert len(seen) == 1

    # Whole runs in separate processes, with one and two threads: same manifests, same bytes.
    trees = []
    for threads in ("1", "2"):
        out = tmp_path / f"cli-{threads}"
        subprocess.run(
            [sys.executable, "-m", "hrm_assets.tokenization", str(cleaned), "-o", str(out),
             "-t", str(small_tokenizer_path), "--threads", threads, "--no-progress"],
            check=True, cwd=REPO_ROOT, capture_output=True, timeout=300,
        )  # fmt: skip
        trees.append(manifests(out))
    assert trees[0] == trees[1]
    assert trees[0]["gsm8k_train.jsonl"] in seen


def test_skip_requires_a_manifest_matching_the_arrays(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    item = next(f for f in scan_cleaned_files(cleaned) if f.safe_name == "gsm8k_train.jsonl")
    first = tokenize_file(item, out, small_tokenizer_path)
    manifest = (first.output_dir / MANIFEST_FILE).read_bytes()
    assert tokenize_file(item, out, small_tokenizer_path).skipped

    # A folder written before manifests existed (or whose manifest was lost) is redone.
    (first.output_dir / MANIFEST_FILE).unlink()
    assert not tokenize_file(item, out, small_tokenizer_path).skipped
    assert (first.output_dir / MANIFEST_FILE).read_bytes() == manifest

    # An array cut short (same name, fewer bytes) is noticed without hashing, and redone.
    tokens = first.output_dir / "tokens.npy"
    tokens.write_bytes(tokens.read_bytes()[:-4])
    assert not tokenize_file(item, out, small_tokenizer_path).skipped
    assert verify_folder(first.output_dir).ok
    assert (first.output_dir / MANIFEST_FILE).read_bytes() == manifest


# --------------------------------------------------------------------------- sampled


def _sample(tmp_path: Path, name: str, seed: int = 0, copy_workers: int = 4):
    tokenized = tmp_path / "tok"
    if not tokenized.exists():
        write_tokenized(tokenized, MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    config = make_config(
        tokenized_path=tokenized,
        output_path=tmp_path / name,
        prefix_config_path=rules,
        epochs=3,
        context_size=60,
        seed=seed,
    )
    return sample_tokenized(config, copy_workers=copy_workers)


def test_sampled_manifest_lists_every_array_and_is_deterministic(tmp_path, monkeypatch):
    _sample(tmp_path, "a", seed=5)
    out = tmp_path / "a"
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.npy"))
    assert len(names) == 1 + 3 * 4
    names.append("metadata.json")  # HRM-Text reads it too (issue 16)
    assert (out / MANIFEST_FILE).read_bytes() == independent_manifest(out, names, "sampled")
    assert verify_folder(out).ok

    # Another run, one copy thread and tiny copy chunks: the same manifest.
    monkeypatch.setattr(sampled_arrays, "COPY_BLOCK", 7)
    _sample(tmp_path, "b", seed=5, copy_workers=1)
    assert (tmp_path / "b" / MANIFEST_FILE).read_bytes() == (out / MANIFEST_FILE).read_bytes()

    # A different seed gives different epochs, so a different manifest (same tokens.npy).
    _sample(tmp_path, "c", seed=6)
    other = json.loads((tmp_path / "c" / MANIFEST_FILE).read_bytes())["files"]
    mine = json.loads((out / MANIFEST_FILE).read_bytes())["files"]
    assert other["tokens.npy"] == mine["tokens.npy"]
    assert other["epoch_0/inst_start.npy"] != mine["epoch_0/inst_start.npy"]


def test_sampled_manifest_same_across_processes(tmp_path):
    write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    seen = set()
    for name in ("p1", "p2"):
        subprocess.run(
            [sys.executable, "-m", "hrm_assets.sampling", f"tokenized_path={tmp_path / 'tok'}",
             f"output_path={tmp_path / name}", f"prefix_config_path={rules}", "epochs=2"],
            check=True, cwd=REPO_ROOT, capture_output=True, timeout=300,
        )  # fmt: skip
        seen.add((tmp_path / name / MANIFEST_FILE).read_bytes())
    assert len(seen) == 1


# --------------------------------------------------------------------------- verify


def _damage(kind: str, folder: Path) -> str:
    """Damage a verified folder one way; return what the report must say."""
    if kind == "flipped-byte":
        path = folder / "tokens.npy"
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
        return "tokens.npy: SHA-256"
    if kind == "truncated":
        path = folder / "epoch_1" / "resp_len.npy"
        path.write_bytes(path.read_bytes()[:-8])
        return "epoch_1/resp_len.npy: "
    if kind == "missing-array":
        (folder / "epoch_0" / "inst_len.npy").unlink()
        return "epoch_0/inst_len.npy: listed in manifest.json but missing"
    if kind == "stale-epoch":
        (folder / "epoch_7").mkdir()
        np.save(folder / "epoch_7" / "inst_len.npy", np.zeros(3, dtype=np.int64))
        return "epoch_7/inst_len.npy: not listed in manifest.json"
    if kind == "no-manifest":
        (folder / MANIFEST_FILE).unlink()
        return "manifest.json: missing"
    if kind == "bad-manifest":
        (folder / MANIFEST_FILE).write_text('{"files": 3}')
        return "not a hrm-data-manifest/1 manifest"
    raise AssertionError(kind)


DAMAGE = ["flipped-byte", "truncated", "missing-array", "stale-epoch", "no-manifest",
          "bad-manifest"]  # fmt: skip


@pytest.mark.parametrize("kind", DAMAGE)
def test_verify_names_the_damaged_file_and_exits_1(tmp_path, capsys, kind):
    _sample(tmp_path, "sampled")
    out = tmp_path / "sampled"
    assert verify_main([str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"ok    {out} (14 files, ")
    assert "1 of 1 folder(s) intact" in captured.err

    expected = _damage(kind, out)
    assert verify_main([str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.out.startswith(f"FAIL  {out}\n")
    assert expected in captured.out
    assert "0 of 1 folder(s) intact, 1 failed" in captured.err


def _rewrite_manifest(folder: Path) -> None:
    """A manifest recomputed over the folder's current files, as someone who edited arrays
    and re-listed them would leave it: the hashes alone no longer show the damage."""
    listed = sorted(read_manifest(folder)["files"])
    (folder / MANIFEST_FILE).write_bytes(manifest_bytes(build_manifest(folder, listed)))


def test_verify_applies_the_span_rule_behind_a_matching_manifest(
    cleaned, tmp_path, small_tokenizer_path
):
    """hrm-verify, the sampler and the asset checks share one span rule (sampling.span_table):
    arrays re-listed in their manifest still fail when their rows overlap or leave tokens.npy."""
    tokenized = tmp_path / "tokenized"
    tokenize_tree([cleaned], tokenized, small_tokenizer_path, progress=False)
    folder = sorted(p for p in tokenized.iterdir() if p.is_dir())[0]
    inst_start = np.load(folder / "inst_start.npy")
    inst_start[1] -= 1  # row 1 now overlaps row 0
    np.save(folder / "inst_start.npy", inst_start)
    _rewrite_manifest(folder)
    assert verify_folder(folder).ok  # the manifest matches the edited arrays
    resp_start = int(np.load(folder / "resp_start.npy")[1])
    inst_end = int(inst_start[1]) + int(np.load(folder / "inst_len.npy")[1])
    assert verify_paths([folder])[0].problems == [
        f"{folder}: row 1: the response starts at {resp_start}, not where its instruction "
        f"ends ({inst_end})"
    ]

    _sample(tmp_path, "sampled")
    sampled = tmp_path / "sampled"
    assert verify_paths([sampled])[0].ok
    resp_len = np.load(sampled / "epoch_1" / "resp_len.npy")
    tokens = len(np.load(sampled / "tokens.npy", mmap_mode="r"))
    resp_len[2] = tokens  # its response now ends past tokens.npy
    np.save(sampled / "epoch_1" / "resp_len.npy", resp_len)
    # (Re-listing a sampled folder's arrays would also break its data card; the rule is the
    # same one behind hrm-verify and the sampled asset's check.)
    end = int(np.load(sampled / "epoch_1" / "resp_start.npy")[2]) + tokens
    expected = f"row 2: resp span ends at {end}, past the {tokens} tokens of tokens.npy"
    assert span_problems(sampled) == [f"{sampled / 'epoch_1'}: {expected}"]
    assert check_sampled_folder(sampled).problems == [f"epoch_1: {expected}"]


def test_verify_a_tokenized_root_and_exit_codes(cleaned, tmp_path, small_tokenizer_path):
    out = tmp_path / "out"
    tokenize_tree([cleaned], out, small_tokenizer_path, progress=False)
    command = [sys.executable, "-m", "hrm_assets.checks"]
    ok = subprocess.run(
        [*command, str(out)], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count("ok    ") == 2
    assert "2 of 2 folder(s) intact" in ok.stderr

    # A foreign folder (data_io's: no manifest) in the root fails, the others still pass.
    (out / "from_data_io.jsonl").mkdir()
    np.save(out / "from_data_io.jsonl" / "tokens.npy", np.zeros(2, dtype="<u4"))
    bad = subprocess.run(
        [*command, "-q", str(out), str(tmp_path / "nowhere")],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 1
    assert "ok    " not in bad.stdout
    assert f"{out / 'from_data_io.jsonl' / MANIFEST_FILE}: missing" in bad.stdout
    assert f"{tmp_path / 'nowhere'}: not a directory" in bad.stdout
    assert "2 of 4 folder(s) intact, 2 failed" in bad.stderr

    empty = tmp_path / "empty"
    empty.mkdir()
    assert verify_main([str(empty)]) == 1
    usage = subprocess.run([*command], capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert usage.returncode == 2 and "usage: hrm-verify" in usage.stderr


def test_verify_console_script_is_declared():
    scripts = importlib.metadata.entry_points(group="console_scripts")
    assert scripts["hrm-verify"].value == "hrm_assets.checks.cli:main"


# --------------------------------------------------------------------------- the docs


def test_reliability_doc_names_only_existing_tests():
    """docs/RELIABILITY.md's table points at tests that exist (functions and parameter ids)."""
    import ast
    import re

    doc = (REPO_ROOT / "docs" / "RELIABILITY.md").read_text(encoding="utf-8")
    cited = re.findall(
        r"`(tests/(?:\w+/)?test_\w+\.py)::(\w+)(\[[\w-]+\])?`((?:, `\[[\w-]+\]`)*)", doc
    )
    assert len(cited) >= 40
    for path, name, param, more in cited:
        source = (REPO_ROOT / path).read_text(encoding="utf-8")
        functions = {
            node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)
        }
        assert name in functions, f"{path}::{name}"
        for extra in [param, *re.findall(r"\[[\w-]+\]", more)]:
            if extra:
                assert f'"{extra[1:-1]}"' in source, f"{path}::{name}{extra}"
