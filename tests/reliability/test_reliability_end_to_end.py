"""Issue 30, integrity end to end: what is read is what is hashed, every consumer checks its
input, no command replaces another's output. One test per case of the adversarial pass, named
after the behaviour (docs/RELIABILITY.md lists them with what the user sees)."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.sampled_corpus import make_sampled
from support.tokenized_trees import write_rules, write_tokenized
from support.tokenizer_reference import gsm8k_rows, write_jsonl

from hrm_assets.checks.cli import main as verify_main
from hrm_assets.checks.consistency import check_tokenized_folders
from hrm_assets.common.manifest import (
    MANIFEST_FILE,
    MEGATRON_KIND,
    SAMPLED_KIND,
    manifest_kind,
    read_manifest,
    verify_folder,
)
from hrm_assets.export.cli import main as export_main
from hrm_assets.sampling import arrays as sampled_arrays
from hrm_assets.sampling import sampled_files
from hrm_assets.sampling import sampler as sampler_module
from hrm_assets.sampling.cli import main as sample_main
from hrm_assets.sampling.sampler import SamplingError, make_config, sample_tokenized
from hrm_assets.tokenization import chunks
from hrm_assets.tokenization.cli import main as tokenize_main
from hrm_assets.tokenization.tokenize import read_metadata, tokenize_tree


@pytest.fixture
def cleaned(tmp_path, real_raw) -> Path:
    """Two cleaned files of different row counts."""
    root = tmp_path / "cleaned"
    write_jsonl(root / "alpha.jsonl", gsm8k_rows(real_raw, "train", 40))
    write_jsonl(root / "beta.jsonl", gsm8k_rows(real_raw, "test", 25))
    return root


def _tokenize(cleaned: Path, out: Path, tokenizer: Path) -> list[str]:
    report = tokenize_tree([cleaned], out, tokenizer, progress=False)
    assert not report.failures, report.failures
    return [outcome.safe_name for outcome in report.outcomes if not outcome.skipped]


def _sample_config(tokenized: Path, output: Path, tmp_path: Path, **values):
    rules = write_rules(tmp_path / "rules.yaml", [])
    return make_config(
        tokenized_path=tokenized,
        output_path=output,
        prefix_config_path=rules,
        epochs=1,
        context_size=4096,
        **values,
    )


# ------------------------------------------------------------------ 1: hash, then read again


def test_a_file_rewritten_while_tokenized_fails_its_file_and_is_redone_next_run(
    cleaned, tmp_path, small_tokenizer_path, monkeypatch, capsys
):
    """``cp`` or ``rsync --inplace`` over a cleaned file while it is tokenized: the file is
    hashed whole, then truncated before the encoder reads it. The bytes encoded are not the
    bytes hashed, so the file fails; nothing claims the full file's hash with 0 rows."""
    target = cleaned / "alpha.jsonl"
    original = target.read_bytes()
    real_sha256 = chunks.file_sha256

    def hash_then_truncate(path):
        digest = real_sha256(path)
        if Path(path) == target:
            target.write_bytes(b"")  # cp opens its target with O_TRUNC, then refills it
        return digest

    monkeypatch.setattr(chunks, "file_sha256", hash_then_truncate)
    out = tmp_path / "tokenized"
    code = tokenize_main(
        [str(cleaned), "-o", str(out), "-t", str(small_tokenizer_path), "--no-progress"]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert f"error: {target}: changed while it was tokenized: 0 bytes" in err
    assert not (out / "alpha.jsonl").exists()
    assert (out / "beta.jsonl").is_dir()

    # The copy finished: the next run tokenizes the whole file.
    monkeypatch.setattr(chunks, "file_sha256", real_sha256)
    target.write_bytes(original)
    assert _tokenize(cleaned, out, small_tokenizer_path) == ["alpha.jsonl"]
    assert read_metadata(out / "alpha.jsonl")["rows"] == 40
    assert verify_main([str(out)]) == 0


# ------------------------------------------------------------------ 2: wrapped ids


def test_ids_past_the_token_dtype_fail_hrm_sample_and_keep_the_previous_output(tmp_path, capsys):
    """``tokenizer_info.json``'s ``vocab_size`` edited below the ids: uint16 cannot hold id
    70535. data_io stores it as 4999; hrm-sample exits 1 naming the file and the setting."""
    tokenized = write_tokenized(
        tmp_path / "tokenized", {"a.jsonl": [(3, 4)] * 5, "b.jsonl": [(2, 2)] * 3}, vocab_size=5000
    )
    rules = write_rules(tmp_path / "rules.yaml", [])
    output = tmp_path / "sampled"
    arguments = [
        f"tokenized_path={tokenized}",
        f"output_path={output}",
        f"prefix_config_path={rules}",
        "epochs=1",
        "context_size=64",
    ]
    assert sample_main(arguments) == 0
    before = (output / MANIFEST_FILE).read_bytes()
    tokens = np.load(tokenized / "a.jsonl" / "tokens.npy")
    tokens[2] = 70_535
    np.save(tokenized / "a.jsonl" / "tokens.npy", tokens)
    capsys.readouterr()
    assert sample_main(arguments) == 1
    err = capsys.readouterr().err
    assert f"{tokenized / 'tokenizer_info.json'}: vocab_size 5000 stores tokens as uint16" in err
    assert "token id 70,535; ids are never wrapped" in err
    assert (output / MANIFEST_FILE).read_bytes() == before
    assert verify_folder(output).ok


# ------------------------------------------------------------------ 3: an export certifies


def test_an_export_refuses_a_sampled_input_that_fails_its_manifest(tmp_path, capsys):
    sampled = make_sampled(tmp_path)
    tokens = sampled / "tokens.npy"
    data = bytearray(tokens.read_bytes())
    data[-1] ^= 0xFF
    tokens.write_bytes(bytes(data))
    output = tmp_path / "megatron"
    assert export_main(["--sampled", str(sampled), "-o", str(output)], command="megatron") == 1
    err = capsys.readouterr().err
    assert f"{tokens}: SHA-256" in err and "differs from manifest.json" in err
    assert "nothing was exported" in err
    assert not output.exists()


# ------------------------------------------------------------------ 4: one tool's output


def test_no_command_replaces_an_output_of_another_kind(tmp_path, capsys):
    sampled = make_sampled(tmp_path)
    export = tmp_path / "megatron"
    assert export_main(["--sampled", str(sampled), "-o", str(export)], command="megatron") == 0
    assert read_manifest(export)["kind"] == MEGATRON_KIND
    assert read_manifest(sampled)["kind"] == SAMPLED_KIND
    sampled_before = (sampled / MANIFEST_FILE).read_bytes()
    export_before = (export / MANIFEST_FILE).read_bytes()

    # An export into a sampled folder.
    other = make_sampled(tmp_path / "other")
    capsys.readouterr()
    assert export_main(["--sampled", str(other), "-o", str(sampled)], command="megatron") == 1
    err = capsys.readouterr().err
    assert f"{sampled}: holds a sampled output (its manifest.json), not a megatron one" in err
    # A packed export into a Megatron export.
    assert export_main(["--sampled", str(other), "-o", str(export)], command="packed") == 1
    assert "holds a megatron output (its manifest.json), not a packed one" in (
        capsys.readouterr().err
    )
    # A sampling run into an export.
    config = _sample_config(tmp_path / "tokenized", export, tmp_path)
    with pytest.raises(SamplingError, match="holds a megatron output .* not a sampled one"):
        sample_tokenized(config)

    assert (sampled / MANIFEST_FILE).read_bytes() == sampled_before
    assert (export / MANIFEST_FILE).read_bytes() == export_before
    assert verify_folder(sampled).ok and verify_folder(export).ok


def test_hrm_tokenize_refuses_an_output_folder_as_its_root(
    cleaned, tmp_path, small_tokenizer_path, capsys
):
    sampled = make_sampled(tmp_path)
    before = (sampled / MANIFEST_FILE).read_bytes()
    args = [str(cleaned), "-o", str(sampled), "-t", str(small_tokenizer_path), "--no-progress"]
    assert tokenize_main(args) == 1
    assert capsys.readouterr().err == (
        f"error: {sampled}: an output folder of kind 'sampled' (it holds manifest.json), not a "
        "tokenized root: hrm-tokenize writes one folder per cleaned file under -o; choose "
        "another -o\n"
    )
    assert (sampled / MANIFEST_FILE).read_bytes() == before
    assert verify_folder(sampled).ok


def test_manifests_from_before_the_kind_field_are_read_by_what_they_list(tmp_path):
    sampled = make_sampled(tmp_path)
    export = tmp_path / "megatron"
    assert export_main(["--sampled", str(sampled), "-o", str(export)], command="megatron") == 0
    for folder, kind in ((sampled, SAMPLED_KIND), (export, MEGATRON_KIND)):
        legacy = {key: value for key, value in read_manifest(folder).items() if key != "kind"}
        assert manifest_kind(folder, legacy) == kind
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    assert manifest_kind(unknown, {"files": {"x.npy": {}}, "format": "hrm-data-manifest/1"}) is None


# ------------------------------------------------------------------ 5: swapped folders


def test_swapped_tokenized_folders_fail_verify_and_the_sampler_and_are_redone(
    cleaned, tmp_path, small_tokenizer_path, capsys
):
    out = tmp_path / "tokenized"
    _tokenize(cleaned, out, small_tokenizer_path)
    (out / "alpha.jsonl").rename(out / "swap")
    (out / "beta.jsonl").rename(out / "alpha.jsonl")
    (out / "swap").rename(out / "beta.jsonl")

    assert verify_main([str(out)]) == 1
    printed = capsys.readouterr().out
    assert (
        f"{out / 'alpha.jsonl' / 'metadata.json'}: source_path: 'beta.jsonl' is the cleaned "
        f"file of folder 'beta.jsonl', not of 'alpha.jsonl'"
    ) in printed
    # The tokenized asset check (blocking) says the same.
    vocab_size = json.loads((out / "tokenizer_info.json").read_text())["vocab_size"]
    checked = check_tokenized_folders([out / "alpha.jsonl", out / "beta.jsonl"], vocab_size)
    assert all(any("source_path" in problem for problem in report.problems) for report in checked)
    config = _sample_config(out, tmp_path / "sampled", tmp_path)
    with pytest.raises(SamplingError, match="source_path: 'alpha.jsonl' is the cleaned file"):
        sample_tokenized(config)
    assert not (tmp_path / "sampled").exists()
    export = tmp_path / "megatron"
    capsys.readouterr()
    assert export_main(["--tokenized", str(out), "-o", str(export)], command="megatron") == 1
    assert "source_path: 'alpha.jsonl' is the cleaned file" in capsys.readouterr().err
    assert not export.exists()

    assert sorted(_tokenize(cleaned, out, small_tokenizer_path)) == ["alpha.jsonl", "beta.jsonl"]
    assert verify_main([str(out)]) == 0


# ------------------------------------------------------------------ 6: metadata of another


def test_another_files_arrays_under_this_files_metadata_fail_verify_and_are_redone(
    cleaned, tmp_path, small_tokenizer_path, capsys
):
    out = tmp_path / "tokenized"
    _tokenize(cleaned, out, small_tokenizer_path)
    alpha, beta = out / "alpha.jsonl", out / "beta.jsonl"
    for entry in beta.iterdir():
        if entry.name != "metadata.json":
            shutil.copy2(entry, alpha / entry.name)
    assert verify_folder(alpha).ok  # the manifest alone cannot tell

    assert verify_main([str(alpha)]) == 1
    printed = capsys.readouterr().out
    assert f"{alpha / 'metadata.json'}: rows: records 40 but" in printed
    assert "holds 25 (another file's arrays: tokenize again)" in printed

    assert _tokenize(cleaned, out, small_tokenizer_path) == ["alpha.jsonl"]
    assert verify_main([str(out)]) == 0
    metadata = json.loads((alpha / "metadata.json").read_text())
    assert metadata["rows"] == 40


# ------------------------------------------------------------------ WEAK: one clear line each


def _tokenize_args(cleaned: Path, out: Path, tokenizer: Path, *extra: str) -> list[str]:
    return [str(cleaned), "-o", str(out), "-t", str(tokenizer), "--no-progress", *extra]


def test_an_input_with_no_cleaned_files_prunes_nothing_unless_asked(
    cleaned, tmp_path, small_tokenizer_path, capsys
):
    """An unmounted disk looks like an empty cleaned root: every folder would be pruned."""
    out = tmp_path / "tokenized"
    _tokenize(cleaned, out, small_tokenizer_path)
    empty = tmp_path / "mnt"
    empty.mkdir()
    capsys.readouterr()
    assert tokenize_main(_tokenize_args(empty, out, small_tokenizer_path)) == 1
    err = capsys.readouterr().err
    assert err == (
        f"error: {empty}: no cleaned files (.jsonl, .parquet) in the input (an unmounted disk? "
        f"a wrong path?); nothing was pruned or written. To prune every tokenized folder of "
        f"{out}, pass --allow-empty-input\n"
    )
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["alpha.jsonl", "beta.jsonl"]
    args = _tokenize_args(empty, out, small_tokenizer_path, "--allow-empty-input")
    assert tokenize_main(args) == 0
    assert not [p for p in out.iterdir() if p.is_dir()]


def test_a_file_name_that_is_not_utf8_fails_that_file_and_the_others_are_tokenized(
    cleaned, tmp_path, small_tokenizer_path, capsys
):
    bad = cleaned / os.fsdecode(b"caf\xe9.jsonl")
    shutil.copy(cleaned / "beta.jsonl", bad)
    out = tmp_path / "tokenized"
    assert tokenize_main(_tokenize_args(cleaned, out, small_tokenizer_path)) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"error: {os.fsencode(bad)!r}: the file name is not UTF-8" in err
    assert verify_main([str(out / "alpha.jsonl"), str(out / "beta.jsonl")]) == 0


def test_a_symlink_loop_as_the_input_root_is_one_line(tmp_path, small_tokenizer_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    out = tmp_path / "tokenized"
    assert tokenize_main(_tokenize_args(loop, out, small_tokenizer_path)) == 1
    assert capsys.readouterr().err == (
        f"error: {loop}: not a directory: Too many levels of symbolic links\n"
    )
    assert not out.exists()


def _sampled_args(tokenized: Path, output: Path, rules: Path, *extra: str) -> list[str]:
    return [
        f"tokenized_path={tokenized}",
        f"output_path={output}",
        f"prefix_config_path={rules}",
        "epochs=1",
        *extra,
    ]


def test_a_context_size_that_empties_every_epoch_exits_1_and_keeps_the_output(tmp_path, capsys):
    tokenized = write_tokenized(tmp_path / "tokenized", {"a.jsonl": [(3, 4)] * 5})
    rules = write_rules(tmp_path / "rules.yaml", [{"prefix": "a", "long_context": "drop"}])
    output = tmp_path / "sampled"
    assert sample_main(_sampled_args(tokenized, output, rules, "context_size=64")) == 0
    before = (output / MANIFEST_FILE).read_bytes()
    capsys.readouterr()
    assert sample_main(_sampled_args(tokenized, output, rules, "context_size=4")) == 1
    err = capsys.readouterr().err
    assert (
        "every epoch would be empty: of 5 rows none is left to sample (5 longer than "
        "context_size=4 (long_context: drop)); nothing was written, any previous output is kept"
    ) in err
    assert (output / MANIFEST_FILE).read_bytes() == before


def test_a_prefix_rule_that_matches_no_task_is_warned(tmp_path):
    tokenized = write_tokenized(tmp_path / "tokenized", {"flan__a.jsonl": [(3, 4)] * 5})
    rules = write_rules(
        tmp_path / "rules.yaml",
        [
            {"prefix": "faln__", "max_per_file": 2},
            {"prefix": "flan__", "max_per_file": 2},
            {"prefix": "gsm8k_", "max_per_file": 2},
        ],
    )
    config = make_config(
        tokenized_path=tokenized,
        output_path=tmp_path / "sampled",
        prefix_config_path=rules,
        epochs=1,
        context_size=64,
    )
    result = sample_tokenized(config)
    assert (
        f"{rules}: rule 0 (prefix 'faln__'), rule 2 (prefix 'gsm8k_') match no task folder of "
        f"{tokenized} (a typo?): applied to nothing"
    ) in result.warnings


def test_a_full_disk_while_sampling_names_the_file_and_keeps_the_output(
    tmp_path, monkeypatch, capsys
):
    tokenized = write_tokenized(tmp_path / "tokenized", {"a.jsonl": [(3, 4)] * 5})
    rules = write_rules(tmp_path / "rules.yaml", [])
    output = tmp_path / "sampled"
    arguments = _sampled_args(tokenized, output, rules, "context_size=64")
    assert sample_main(arguments) == 0
    before = (output / MANIFEST_FILE).read_bytes()

    def disk_full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as os.write raises it

    # Where the epochs are written in Python (the Rust writers name their files themselves),
    # and the fsync of metadata.json.
    monkeypatch.setattr(sampled_arrays, "_write_all", disk_full)
    monkeypatch.setattr(sampled_files, "fsync_file", disk_full)
    capsys.readouterr()
    assert sample_main(arguments) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] in (
        f"hrm-sample: error: No space left on device: {output}",
        *(
            f"hrm-sample: error: No space left on device: {path}"
            for path in re.findall(r"\S+\.npy", err)
        ),
    ), err
    assert (output / MANIFEST_FILE).read_bytes() == before


def test_the_free_space_is_measured_before_the_copy_of_tokens_begins(tmp_path, monkeypatch):
    """Measured while ``tokens.npy`` is being copied, the same fill level was refused once and
    accepted once (the copy's own bytes counted or not)."""
    tokenized = write_tokenized(tmp_path / "tokenized", {"a.jsonl": [(3, 4)] * 50})
    config = _sample_config(tokenized, tmp_path / "sampled", tmp_path)
    events: list[str] = []
    real_free_space, real_copy = sampler_module.free_space, sampler_module.concatenate_tokens

    def free_space(path):
        events.append("free space")
        return real_free_space(path)

    def concatenate_tokens(*args, **kwargs):
        events.append("copy")
        return real_copy(*args, **kwargs)

    monkeypatch.setattr(sampler_module, "free_space", free_space)
    monkeypatch.setattr(sampler_module, "concatenate_tokens", concatenate_tokens)
    sample_tokenized(config)
    assert events == ["free space", "copy"]


def test_a_bad_sources_yaml_reached_from_hrm_sample_is_one_line(tmp_path):
    """The sources registry loads ``sources.yaml`` when first imported; hrm-sample imports it
    only when it checks it, so the error is its one line (a fresh process: the registry of
    this one is loaded already)."""
    tokenized = write_tokenized(tmp_path / "tokenized", {"a.jsonl": [(3, 4)] * 5})
    rules = write_rules(tmp_path / "rules.yaml", [])
    bad = tmp_path / "sources.yaml"
    bad.write_text("sources:\n  - name: s\n    bogus: 1\n", encoding="utf-8")
    output = tmp_path / "sampled"
    done = subprocess.run(
        [sys.executable, "-m", "hrm_assets.sampling", *_sampled_args(tokenized, output, rules)],
        env={**os.environ, "HRM_SOURCES_YAML": str(bad)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert done.stderr == (
        f"hrm-sample: error: {bad}: sources[0] (source 's'): bogus: unknown key\n"
    ), done.stderr
    assert not output.exists()
