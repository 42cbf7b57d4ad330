"""hrm-sample on a training node whose data root is a bucket: the tokenized root is read
through its working copy and the epochs are those of a local run, byte for byte."""

from __future__ import annotations

from pathlib import Path

from support.object_storage import upload_tree, write_cleaned_tree

from hrm_assets.common.storage import ObjectRoot, ObjectStore
from hrm_assets.sampling import cli
from hrm_assets.tokenization.remote import RemoteCleaned, RemoteTokenized, tokenize_remote
from hrm_assets.tokenization.tokenize import TokenizeFailure, TokenizerSetup, tokenize_tree


def arrays(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*.npy")
    }


def test_hrm_sample_reads_a_tokenized_root_in_a_bucket(
    s3_bucket, small_tokenizer_path, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("HRM_CACHE_DIR", str(tmp_path / "cache"))
    cleaned = write_cleaned_tree(tmp_path / "cleaned")
    local_tokenized = tmp_path / "tokenized"
    setup = TokenizerSetup.load(small_tokenizer_path)
    tokenize_tree([cleaned], local_tokenized, small_tokenizer_path, progress=False)
    data = ObjectRoot.parse(f"s3://{s3_bucket}/data")
    upload_tree(cleaned, ObjectStore(data / "cleaned"))
    ObjectStore(data / "tokenizer").put_file("tokenizer.json", small_tokenizer_path)
    remote_cleaned = RemoteCleaned.scan(data / "cleaned")
    RemoteTokenized(data / "tokenized").write_tokenizer_info(setup)
    written = list(
        tokenize_remote(
            remote_cleaned.files(),
            remote_cleaned,
            RemoteTokenized(data / "tokenized"),
            setup,
        )
    )
    assert not [result for result in written if isinstance(result, TokenizeFailure)]

    settings = ["epochs=2", "seed=3", "context_size=64"]
    local_out = tmp_path / "sampled_local"
    assert (
        cli.main([f"tokenized_path={local_tokenized}", f"output_path={local_out}", *settings]) == 0
    )
    local_report = capsys.readouterr().out

    # The node's environment names the bucket; hrm-sample's default tokenized_path follows it.
    monkeypatch.setenv("HRM_DATA_ROOT", str(data))
    node_out = tmp_path / "shm" / "sampled"
    assert cli.main([f"output_path={node_out}", *settings]) == 0
    captured = capsys.readouterr()
    assert f"tokenized folders of {data / 'tokenized'} refreshed into" in captured.err
    assert arrays(node_out) == arrays(local_out)
    assert len(arrays(node_out)) == 1 + 2 * 4
    assert captured.out.count("\n") == local_report.count("\n")
    # The tokenizer shipped for HRM-Text is the bucket's.
    shipped = node_out / "tokenizer" / "tokenizer.json"
    assert shipped.read_bytes() == small_tokenizer_path.read_bytes()

    # Given explicitly, a URL that does not parse is a usage error.
    assert cli.main(["tokenized_path=ftp://nowhere/x", f"output_path={node_out}"]) == 2
    assert "expected <protocol>://<bucket>" in capsys.readouterr().err
