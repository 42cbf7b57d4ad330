"""data_io's tokenizer, byte for byte: our outputs on the golden inputs have the SHA-256 of the
files data_io's own binary wrote (tests/golden/tokenized/README.md says how they were made),
and the edge behaviours decided to match it (hidden files are data, symlinked files are skipped
and reported, Parquet nulls are empty strings).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import numpy as np
import pytest
from conftest import REPO_ROOT
from support.tokenized_trees import tree_bytes

from hrm_assets import _core
from hrm_assets.checks.consistency import check_tokenized_folder
from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.common.layout import scan_cleaned_tree
from hrm_assets.common.npy_files import load_integers_quickly, npy_layout_quickly
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.sensors import cleaned_files_sensor
from hrm_assets.sampling.sampler import SPAN_FIELDS, make_config, sample_tokenized, task_directories
from hrm_assets.tokenization.partitioning import files_of_source, partition_file

GOLDEN = Path(__file__).parent.parent / "golden" / "tokenized"
INPUT = GOLDEN / "input"
DATA_IO = GOLDEN / "data_io"
# The tokenizer folder of the custom run: its name exercises the JSON escapes of
# tokenizer_info.json (quote, backslash, tab, a control character, non-ASCII).
CUSTOM_TOKENIZER_DIR = 'tok é"\\\t\x01'
CUSTOM_FRAMING = [
    "--boq", "<|vision_start|>", "--eoq", "<|vision_end|>", "--eoa", "<|fim_pad|>",
    "--conditions", "cot=<think>",
]  # fmt: skip


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def recorded_sha256s() -> dict[str, str]:
    """``SHA256SUMS``: the digest of every file data_io wrote, by path under ``data_io/``."""
    lines = (GOLDEN / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    return {
        name.removeprefix("data_io/"): digest for digest, name in (ln.split("  ") for ln in lines)
    }


def data_io_files(root: Path) -> dict[str, str]:
    """SHA-256 of the files of a tokenized root that data_io also writes (arrays and
    ``tokenizer_info.json``; not ``metadata.json``, whose mtime differs), by relative path."""
    return {
        path.relative_to(root).as_posix(): sha256(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and (path.suffix == ".npy" or path.name == "tokenizer_info.json")
    }


def stage_inputs(tmp_path: Path) -> Path:
    """The golden inputs as data_io read them, with what is made here rather than committed
    (not every checkout keeps it): a linked file and a linked folder (both skipped by data_io)
    and the custom tokenizer folder."""
    stage = tmp_path / "stage"
    shutil.copytree(INPUT, stage)
    (stage / "cleaned" / "linked.jsonl").symlink_to("gsm8k_train.jsonl")
    (stage / "cleaned" / "linked_dir").symlink_to("Platypus")
    custom = stage / CUSTOM_TOKENIZER_DIR
    custom.mkdir()
    shutil.copy(stage / "tokenizer.json", custom / "tokenizer.json")
    return stage


def run_hrm_tokenize(stage: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hrm_assets.tokenization", *args, "--no-progress"],
        cwd=stage,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_golden_files_are_as_recorded():
    """The committed outputs of data_io are the ones the README lists."""
    recorded = recorded_sha256s()
    assert data_io_files(DATA_IO) == recorded
    readme = (GOLDEN / "README.md").read_text(encoding="utf-8")
    for name, digest in recorded.items():
        assert f"{digest}  data_io/{name}" in readme, name


@pytest.mark.parametrize(
    ("run", "args"),
    [
        ("default", ["cleaned", "-o", "default", "-t", "tokenizer.json"]),
        ("custom", ["cleaned_custom", "-o", "custom", "-t", CUSTOM_TOKENIZER_DIR, *CUSTOM_FRAMING]),
    ],
)
def test_hrm_tokenize_writes_data_io_bytes(tmp_path, run, args):
    stage = stage_inputs(tmp_path)
    result = run_hrm_tokenize(stage, *args)
    assert result.returncode == 0, result.stderr
    expected = {
        name.removeprefix(f"{run}/"): digest
        for name, digest in recorded_sha256s().items()
        if name.startswith(f"{run}/")
    }
    assert expected, run
    # The same files (so the same folders: hidden files in, symlinks and ".jsonl" out) with
    # the same bytes.
    assert data_io_files(stage / run) == expected


def test_symlinks_are_skipped_and_reported_nulls_counted(tmp_path):
    stage = stage_inputs(tmp_path)
    result = run_hrm_tokenize(stage, "cleaned", "-o", "out", "-t", "tokenizer.json")
    assert result.returncode == 0, result.stderr
    assert "warning: skipped cleaned/linked.jsonl: a symlink (data_io skips them too)" in (
        result.stderr
    )
    # A symlinked folder is not entered, as with data_io, but said so (issue 16).
    assert (
        "warning: skipped cleaned/linked_dir: a symlinked folder, not followed (data_io skips "
        "them too)" in result.stderr
    )
    assert "skipped 0 unchanged and 2 symlinked" in result.stderr
    assert (
        "warning: flan__cot_fsopt_data__task.parquet: 4 Parquet null(s) read as empty strings"
        in result.stderr
    )
    assert "4 Parquet null(s) read as empty strings in " in result.stderr

    # A hidden file's folder is pruned like any other once its file is gone.
    (stage / "cleaned" / ".hidden.jsonl").unlink()
    again = run_hrm_tokenize(stage, "cleaned", "-o", "out", "-t", "tokenizer.json")
    assert again.returncode == 0, again.stderr
    assert "pruned .hidden.jsonl (its cleaned file is gone)" in again.stderr
    assert not (stage / "out" / ".hidden.jsonl").exists()
    assert (stage / "out" / ".hidden_dir__inner.jsonl" / "tokens.npy").is_file()


def test_partitions_see_the_files_the_command_sees(tmp_path, capfd):
    """Dagster's partitions follow the same rules: a hidden file is a partition, a symlinked
    file is not (and the sensor says so), a ``.tmp-`` leftover is not."""
    cleaned = tmp_path / "data" / "cleaned"
    flan = cleaned / "flan"
    flan.mkdir(parents=True)
    shutil.copy(INPUT / "cleaned" / "flan" / "cot_fsopt_data__task.parquet", flan / "a.parquet")
    shutil.copy(flan / "a.parquet", flan / ".hidden.parquet")
    (flan / "linked.parquet").symlink_to("a.parquet")
    (flan / ".tmp-b.parquet.k2j_9xq1").write_bytes(b"being written")
    spec = SOURCES["flan"]

    scan = scan_cleaned_tree(cleaned)
    assert [item.safe_name for item in scan.files] == ["flan__.hidden.parquet", "flan__a.parquet"]
    assert scan.symlinks == [flan / "linked.parquet"]
    assert [item.safe_name for item in files_of_source(spec, cleaned)] == [
        "flan__.hidden.parquet",
        "flan__a.parquet",
    ]
    assert partition_file(spec, cleaned, "flan__.hidden.parquet").path == flan / ".hidden.parquet"
    assert partition_file(spec, cleaned, "flan__linked.parquet") is None

    paths = DataPaths(data_root=str(tmp_path / "data"), prefix_config_path=str(tmp_path / "p.yaml"))
    with (
        dg.DagsterInstance.ephemeral() as instance,
        dg.build_sensor_context(instance=instance, resources={"data_paths": paths}) as context,
    ):
        result = cleaned_files_sensor(context)
    added = {
        key
        for request in result.dynamic_partitions_requests
        if isinstance(request, dg.AddDynamicPartitionsRequest)
        for key in request.partition_keys
    }
    assert added == {"flan__.hidden.parquet", "flan__a.parquet"}
    logged = capfd.readouterr().err
    assert "1 link(s) in the cleaned tree skipped" in logged
    assert "as data_io skips them: flan/linked.parquet" in logged


def tokenized_root_with_numpy_headers(golden: Path, copy: Path) -> None:
    """``golden``'s arrays saved again by ``numpy.save``: the same values, numpy's headers."""
    shutil.copytree(golden, copy)
    for path in copy.rglob("*.npy"):
        np.save(path, np.load(path))


def test_every_reader_takes_data_io_headers_as_it_takes_numpys(tmp_path, monkeypatch):
    """The tokenized arrays data_io writes (ndarray-npy headers) and the same arrays with
    numpy's headers are read alike: on the fast paths, by the checks and by the sampler."""
    roots = {"data_io": tmp_path / "data_io", "numpy": tmp_path / "numpy"}
    shutil.copytree(DATA_IO / "default", roots["data_io"])
    tokenized_root_with_numpy_headers(DATA_IO / "default", roots["numpy"])
    for root in roots.values():
        for folder in task_directories(root):
            # data_io also writes metadata.json; the checks read it.
            (folder / "metadata.json").write_text('{"source_mtime":0,"source_size":0}')
    resaved = roots["numpy"] / "gsm8k_train.jsonl" / "tokens.npy"
    original = roots["data_io"] / "gsm8k_train.jsonl" / "tokens.npy"
    assert resaved.read_bytes()[128:] == original.read_bytes()[128:]
    assert resaved.read_bytes()[:128] != original.read_bytes()[:128]

    def numpy_parser(*_args):
        raise AssertionError("a plain header went to numpy's parser")

    with monkeypatch.context() as patched:
        patched.setattr(np.lib.format, "read_magic", numpy_parser)
        for root in roots.values():
            for path in sorted(root.rglob("*.npy")):
                array = load_integers_quickly(str(path))
                assert npy_layout_quickly(str(path)).length == len(array)

    vocab_size = 512
    tables = {}
    for form, root in roots.items():
        folders = task_directories(root)
        assert len(folders) == 9
        for folder in folders:
            report = check_tokenized_folder(folder, vocab_size)
            assert report.passed, (form, folder.name, report.problems)
        # The Rust span reader takes both forms itself (None would mean "read them in Python").
        tables[form] = _core.read_span_columns(folders, list(SPAN_FIELDS))
        assert tables[form] is not None, form
    assert tables["data_io"] == tables["numpy"]

    sampled = {}
    for form, root in roots.items():
        config = make_config(
            tokenized_path=root,
            output_path=tmp_path / f"sampled_{form}",
            prefix_config_path=REPO_ROOT / "prefix_config.yaml",
            epochs=2,
        )
        sample_tokenized(config)
        sampled[form] = tree_bytes(tmp_path / f"sampled_{form}")
    assert sampled["data_io"] == sampled["numpy"]
