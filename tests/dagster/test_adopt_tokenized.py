"""A tokenized root written by data_io's own ``tokenizer`` binary (tests/golden/tokenized/) is
adopted after one hashing pass: recorded as the tokenized partitions, kept by every later run
and by automation, never re-tokenized or modified; a cleaned file that changes afterwards fails
its partition in one line instead of replacing data_io's folder (issue 29)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import dagster as dg
import pytest
from conftest import REPO_ROOT
from support.project_commands import commands_in

from hrm_assets.common import settings
from hrm_assets.common.hashing import file_sha256
from hrm_assets.definitions import build_definitions
from hrm_assets.defs.common.keys import tokenized_key
from hrm_assets.defs.common.resources import DataPaths

pytestmark = pytest.mark.slow

GOLDEN = REPO_ROOT / "tests" / "golden" / "tokenized"
ADOPTED = {
    "arb": "Platypus__arb_math.jsonl",
    "dmmath": "dmmath__train-easy__algebra__linear_1d.parquet",
    "flan": "flan__cot_fsopt_data__task.parquet",
    "gsm8k_train": "gsm8k_train.jsonl",
}


def tree_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(path): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def data_io_user(tmp_path):
    """data_io's folders: the cleaned files, its tokenizer, and what its binary wrote."""
    shutil.copytree(GOLDEN / "input" / "cleaned", tmp_path / "data", symlinks=True)
    shutil.copytree(GOLDEN / "data_io" / "default", tmp_path / "data_tokenized_bpe_65k")
    (tmp_path / "bpe").mkdir()
    shutil.copy(GOLDEN / "input" / "tokenizer.json", tmp_path / "bpe" / "tokenizer.json")
    return tmp_path, commands_in(tmp_path)


def test_a_tokenized_root_of_data_ios_binary_is_adopted_never_retokenized(data_io_user):
    tmp_path, run = data_io_user
    root = tmp_path / "data_tokenized_bpe_65k"
    before = tree_state(root)
    adopt = (sys.executable, "-m", "hrm_assets.adoption")
    arguments = ("--cleaned", "data", "--tokenized", "data_tokenized_bpe_65k", "--tokenizer", "bpe")
    done = run(*adopt, *arguments)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"adopted tokenized root {root}: 4 folder(s) recorded as they are, 0 already " in (
        done.stdout
    )
    assert run(*adopt).stdout.count("0 folder(s) recorded as they are, 4 already current") == 1

    # Every run keeps data_io's folders: nothing tokenized, nothing written.
    done = run("hrm-materialize-tokenized", *ADOPTED)
    assert done.returncode == 0, done.stderr[-3000:]
    for source in ADOPTED:
        line = next(ln for ln in done.stdout.splitlines() if ln.startswith(f"tokenized/{source}:"))
        assert line.endswith("): 0 tokenized, 1 unchanged"), line
    assert tree_state(root) == before

    # Automation has nothing to do: the partitions are recorded with the versions it expects.
    home = tmp_path / "home"
    paths = DataPaths(
        data_root=str(tmp_path / "ours"),
        tokenizer_at=str(tmp_path / "bpe"),
        tokenized_at=str(root),
        adopted_cleaned=str(tmp_path / "data"),
        prefix_config_path=str(settings.default_prefix_config_path()),
    )
    with dg.DagsterInstance.from_config(str(home)) as instance:
        result = dg.evaluate_automation_conditions(defs=build_definitions(paths), instance=instance)
        for source in ADOPTED:
            assert result.get_num_requested(tokenized_key(source)) == 0
            event = instance.get_latest_materialization_event(tokenized_key(source))
            metadata = event.asset_materialization.metadata
            assert metadata["adopted"].value is True
            arrays = metadata["arrays"].value
            folder = root / ADOPTED[source]
            assert arrays == {
                path.name: {"size": path.stat().st_size, "sha256": file_sha256(path)}
                for path in sorted(folder.glob("*.npy"))
            }

    # A cleaned file changed since: its partition fails, data_io's folder stays as it was.
    with open(tmp_path / "data" / "gsm8k_train.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"condition":"cot","instruction":"1 + 1?","response":"2"}\n')
    done = run("hrm-materialize-tokenized", "gsm8k_train")
    assert done.returncode == 1
    assert tree_state(root) == before
    assert "tokenized/gsm8k_train: 1 partition(s) FAILED" in done.stdout


def test_a_root_made_with_another_tokenizer_is_not_adopted(data_io_user):
    tmp_path, run = data_io_user
    info = tmp_path / "data_tokenized_bpe_65k" / "tokenizer_info.json"
    info.write_text(info.read_text().replace('"vocab_size":512', '"vocab_size":65536'))
    before = tree_state(tmp_path / "data_tokenized_bpe_65k")
    done = run(
        sys.executable, "-m", "hrm_assets.adoption",
        "--cleaned", "data", "--tokenized", "data_tokenized_bpe_65k", "--tokenizer", "bpe",
    )  # fmt: skip
    assert done.returncode == 1
    assert "0 folder(s) recorded as they are" in done.stdout
    assert (
        f"error: nothing adopted: {info}: vocab_size is 65536, the tokenizer in use gives 512"
    ) in done.stderr
    assert tree_state(tmp_path / "data_tokenized_bpe_65k") == before


def test_a_root_of_data_ios_binary_from_a_hub_corpus_is_credited(data_io_user):
    """The cleaned files as a Hub download: the adopted folders' records name the corpus, and
    the epochs sampled from data_io's root credit it in their data card."""
    import json

    from support.adopted_platform import tree_state as link_state
    from test_adopt_cleaned import HUB_ID, REVISION, as_hub_cache

    tmp_path, run = data_io_user
    (tmp_path / "download").mkdir()
    shutil.move(tmp_path / "data", tmp_path / "download" / "data")
    snapshot_data = as_hub_cache(tmp_path / "download", tmp_path / "hub")[0]
    root = tmp_path / "data_tokenized_bpe_65k"
    for name in ADOPTED.values():
        # data_io's binary writes these two keys (the golden folders leave the file out).
        cleaned = next(
            path
            for path in snapshot_data.rglob("*")
            if path.is_file()
            and path.relative_to(snapshot_data).as_posix().replace("/", "__") == name
        )
        stat = cleaned.stat()
        (root / name / "metadata.json").write_text(json.dumps(
            {"source_mtime": int(stat.st_mtime), "source_size": stat.st_size}
        ))  # fmt: skip
    folders = {name: tree_state(root / name) for name in ADOPTED.values()}
    users = link_state(tmp_path / "hub")
    done = run(
        sys.executable, "-m", "hrm_assets.adoption", "--cleaned", str(snapshot_data),
        "--tokenized", "data_tokenized_bpe_65k", "--tokenizer", "bpe",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    with dg.DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        for source in ADOPTED:
            event = instance.get_latest_materialization_event(tokenized_key(source))
            metadata = event.asset_materialization.metadata
            assert metadata["adopted"].value is True
            assert (metadata["hub_id"].value, metadata["hub_revision"].value) == (HUB_ID, REVISION)

    sampled = run("hrm-sample", "tokenized_path=data_tokenized_bpe_65k", "output_path=sampled")
    assert sampled.returncode == 0, sampled.stderr[-3000:]
    card = json.loads((tmp_path / "sampled" / "datacard.json").read_text())
    (credit,) = card["cleaned_corpora"]
    assert (credit["hub_id"], credit["revision"]) == (HUB_ID, REVISION)
    assert credit["tasks"] == len(ADOPTED)
    # data_io's folders are as they were; only our record is beside them.
    assert {name: tree_state(root / name) for name in ADOPTED.values()} == folders
    assert link_state(tmp_path / "hub") == users
