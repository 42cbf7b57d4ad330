"""The Megatron export (``hrm_assets.export.megatron``): every row of a sampled epoch, or of a
whole tokenized root, comes back from the ``.bin``/``.idx`` pair as the sampled arrays define
it; the slow test reads the export with megatron-core's own ``IndexedDataset``."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from support.sampled_corpus import CONTEXT_SIZE, EPOCHS, corpus_rows, make_sampled, sampled_rows
from support.tokenized_trees import write_tokenized

from hrm_assets.common.manifest import verify_folder
from hrm_assets.export import megatron as megatron_format
from hrm_assets.export.cli import main
from hrm_assets.export.export_runs import export_megatron
from hrm_assets.export.megatron import (
    megatron_token_dtype,
    read_megatron,
    row_chunks,
    write_megatron,
)
from hrm_assets.export.output_folder import ExportError
from hrm_assets.export.row_source import RowSourceError, sampled_epoch_rows


@pytest.fixture
def sampled(tmp_path) -> Path:
    return make_sampled(tmp_path)


def assert_export_holds(prefix: Path, rows: list[tuple[np.ndarray, np.ndarray]]) -> None:
    dataset = read_megatron(prefix)
    response_start = np.load(f"{prefix}.response_start.npy")
    assert len(dataset) == len(rows) == len(response_start)
    np.testing.assert_array_equal(dataset.document_indices, np.arange(len(rows) + 1))
    for index, (instruction, response) in enumerate(rows):
        sequence = dataset[index]
        np.testing.assert_array_equal(sequence, np.concatenate([instruction, response]))
        assert response_start[index] == len(instruction)
        np.testing.assert_array_equal(sequence[response_start[index] :], response)


@pytest.mark.parametrize("epoch", range(EPOCHS))
def test_every_row_of_an_epoch_round_trips(sampled, tmp_path, epoch):
    summary = export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=epoch)
    rows = sampled_rows(sampled, epoch)
    assert_export_holds(tmp_path / "out" / "text_document", rows)
    assert summary.rows == summary.sequences == len(rows)
    assert summary.tokens == sum(len(i) + len(r) for i, r in rows)
    assert summary.response_tokens == sum(len(r) for _, r in rows)
    assert summary.token_dtype == "uint16"
    assert verify_folder(tmp_path / "out").ok
    described = json.loads((tmp_path / "out" / "export.json").read_text())
    assert described["source"] == {"kind": "sampled", "path": str(sampled), "epoch": epoch}
    assert described["rows"] == len(rows)


def test_truncated_responses_are_exported_as_sampled(sampled, tmp_path):
    rows = sampled_rows(sampled, 0)
    assert max(len(i) + len(r) for i, r in rows) <= CONTEXT_SIZE
    export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)
    assert_export_holds(tmp_path / "out" / "text_document", rows)


def test_whole_tokenized_corpus_in_task_order(sampled, tmp_path):
    tokenized = sampled.parent / "tokenized"
    summary = export_megatron(tmp_path / "out", tokenized_dir=tokenized, prefix="corpus")
    rows = corpus_rows(tokenized)
    assert_export_holds(tmp_path / "out" / "corpus", rows)
    assert summary.source == {"kind": "tokenized", "path": str(tokenized)}
    assert max(len(i) + len(r) for i, r in rows) > CONTEXT_SIZE  # untruncated


def test_index_layout_is_megatrons(sampled, tmp_path):
    export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)
    data = (tmp_path / "out" / "text_document.idx").read_bytes()
    rows = sampled_rows(sampled, 0)
    lengths = np.array([len(i) + len(r) for i, r in rows])
    assert data[:9] == b"MMIDIDX\x00\x00"
    assert struct.unpack_from("<QBQQ", data, 9) == (1, 8, len(rows), len(rows) + 1)
    body = 9 + 8 + 1 + 8 + 8
    np.testing.assert_array_equal(np.frombuffer(data, "<i4", len(rows), body), lengths)
    pointers = np.frombuffer(data, "<i8", len(rows), body + 4 * len(rows))
    np.testing.assert_array_equal(pointers, np.concatenate([[0], np.cumsum(lengths)[:-1]]) * 2)
    assert len(data) == body + 12 * len(rows) + 8 * (len(rows) + 1)
    assert (tmp_path / "out" / "text_document.bin").stat().st_size == lengths.sum() * 2


def test_dtype_follows_megatrons_vocabulary_rule(tmp_path):
    assert megatron_token_dtype(1000) == np.uint16
    assert megatron_token_dtype(65499) == np.uint16
    assert megatron_token_dtype(65500) == np.int32
    assert megatron_token_dtype(None) == np.int32
    sampled = make_sampled(tmp_path, vocab_size=70_000)
    summary = export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=1)
    assert summary.token_dtype == "int32"
    assert_export_holds(tmp_path / "out" / "text_document", sampled_rows(sampled, 1))


def test_small_chunks_write_the_same_bytes(sampled, tmp_path):
    table = sampled_epoch_rows(sampled, 0)
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    one = write_megatron(table, tmp_path / "one")
    many = write_megatron(table, tmp_path / "many", chunk_tokens=7)
    assert one.files == many.files
    for name in one.files:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes()


def test_row_chunks_cover_every_row_once():
    lengths = np.array([5, 1, 9, 3, 3, 20, 2])
    chunks = row_chunks(lengths, 8)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(lengths)
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(end > first for first, end in chunks)
    assert row_chunks(np.zeros(0, dtype=np.int64), 8) == []


def test_a_missing_epoch_names_those_present(sampled, tmp_path):
    with pytest.raises(RowSourceError, match=r"epoch_5: no such epoch .*\[0, 1\]"):
        export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=5)
    assert not (tmp_path / "out").exists()


def test_a_span_past_the_tokens_names_file_row_and_field(sampled, tmp_path):
    path = sampled / "epoch_0" / "resp_len.npy"
    values = np.load(path)
    values[3] = 10**9
    np.save(path, values)
    # hrm-sample's folder: its manifest no longer matches, and the export says so first.
    with pytest.raises(RowSourceError, match=r"resp_len\.npy: SHA-256 .* differs from manifest"):
        export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)
    # data_io's folder (no manifest, no data card): the spans themselves are checked.
    for name in ("manifest.json", "DATACARD.md", "datacard.json"):
        (sampled / name).unlink()
    with pytest.raises(
        RowSourceError, match=r"epoch_0/resp_len\.npy: row 3: resp_start \+ resp_len"
    ):
        export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)
    values[3] = -1
    np.save(path, values)
    with pytest.raises(RowSourceError, match=r"resp_len\.npy: row 3: resp_len is negative"):
        export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)


def test_token_ids_past_the_dtype_name_the_row(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", {"a.jsonl": [(3, 4), (2, 2)]}, vocab_size=1000)
    tokens = np.load(tokenized / "a.jsonl" / "tokens.npy")
    tokens[8] = 70_000  # row 1's first token; vocab_size says uint16 is enough
    np.save(tokenized / "a.jsonl" / "tokens.npy", tokens)
    with pytest.raises(ValueError, match=r"row 1: token id 70000 does not fit uint16"):
        export_megatron(tmp_path / "out", tokenized_dir=tokenized)
    assert not (tmp_path / "out").exists()


def test_outputs_that_would_hurt_inputs_or_others_files_are_refused(sampled, tmp_path):
    with pytest.raises(ExportError, match="must not be, hold or lie inside the input"):
        export_megatron(sampled / "megatron", sampled_dir=sampled, epoch=0)
    foreign = tmp_path / "theirs"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    with pytest.raises(ExportError, match=r"notes\.txt"):
        export_megatron(foreign, sampled_dir=sampled, epoch=0)
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_a_failed_export_leaves_the_previous_one(sampled, tmp_path, monkeypatch):
    export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(megatron_format, "index_bytes", disk_full)
    with pytest.raises(OSError, match="No space"):
        export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=1)
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []
    monkeypatch.undo()
    export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=1)  # an export replaces its own
    assert_export_holds(tmp_path / "out" / "text_document", sampled_rows(sampled, 1))


def test_cli(sampled, tmp_path, capsys):
    assert (
        main(
            [
                "megatron",
                "--sampled",
                str(sampled),
                "--epoch",
                "1",
                "-o",
                str(tmp_path / "o"),
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "rows:" in out and "text_document.bin" in out
    assert_export_holds(tmp_path / "o" / "text_document", sampled_rows(sampled, 1))
    assert main(["megatron", "--sampled", str(tmp_path / "nope"), "-o", str(tmp_path / "p")]) == 1
    assert "nope/metadata.json: missing" in capsys.readouterr().err
    assert main(["megatron", "-o", str(tmp_path / "p")]) == 2
    assert (
        main(["megatron", "--tokenized", str(sampled), "--epoch", "1", "-o", str(tmp_path / "p")])
        == 2
    )
    assert (
        main(["megatron", "--sampled", str(sampled), "--epoch", "-1", "-o", str(tmp_path / "p")])
        == 2
    )
    assert main(["megatron", "--help"]) == 0


@pytest.mark.slow
# megatron-core's import warns that NVIDIA's optional kernels are missing and about its own
# module layout: neither concerns the dataset reader.
@pytest.mark.filterwarnings("ignore:Transformer Engine and Apex are not installed:UserWarning")
@pytest.mark.filterwarnings("ignore:The following imports from `dynamic_context.py`")
def test_megatron_core_reads_every_sequence(sampled, tmp_path):
    """megatron-core's own reader (PyPI ``megatron-core``, installed by ``make test``) on our
    export of an epoch and of the whole corpus: every sequence equals our arrays."""
    from megatron.core.datasets.indexed_dataset import IndexedDataset

    export_megatron(tmp_path / "epoch", sampled_dir=sampled, epoch=1)
    export_megatron(tmp_path / "corpus", tokenized_dir=sampled.parent / "tokenized")
    cases = {
        "epoch": sampled_rows(sampled, 1),
        "corpus": corpus_rows(sampled.parent / "tokenized"),
    }
    for name, rows in cases.items():
        for mmap in (True, False):
            dataset = IndexedDataset(str(tmp_path / name / "text_document"), mmap=mmap)
            assert len(dataset) == len(rows)
            np.testing.assert_array_equal(dataset.document_indices, np.arange(len(rows) + 1))
            np.testing.assert_array_equal(
                dataset.sequence_lengths, [len(i) + len(r) for i, r in rows]
            )
            assert dataset.index.dtype == np.uint16
            for index, (instruction, response) in enumerate(rows):
                np.testing.assert_array_equal(
                    dataset[index], np.concatenate([instruction, response])
                )
                # A slice, as Megatron's GPTDataset reads a sample: the response alone.
                np.testing.assert_array_equal(dataset.get(index, offset=len(instruction)), response)


def test_a_second_writer_of_the_same_output_is_refused(sampled, tmp_path):
    from hrm_assets.common.atomic import exclusive_lock, lock_path_for

    with (
        exclusive_lock(lock_path_for(tmp_path / "out")),
        pytest.raises(ExportError, match="another export is writing it now"),
    ):
        export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)
    assert not (tmp_path / "out").exists()


def test_a_sampled_folder_replaced_during_the_export_fails_it(sampled, tmp_path, monkeypatch):
    from hrm_assets.export import export_runs

    real_write = export_runs.write_megatron

    def write_while_resampled(table, folder, **kwargs):
        written = real_write(table, folder, **kwargs)
        (sampled / "manifest.json").write_text('{"files": {}, "format": "another run"}')
        return written

    monkeypatch.setattr(export_runs, "write_megatron", write_while_resampled)
    with pytest.raises(RowSourceError, match="replaced by another sampling run.*export again"):
        export_megatron(tmp_path / "out", sampled_dir=sampled, epoch=0)
    assert not (tmp_path / "out").exists()


def test_a_prefix_must_be_a_plain_file_name(sampled, tmp_path):
    for prefix in ("../escape", "", "a/b", ".."):
        with pytest.raises(ValueError, match="plain file name"):
            export_megatron(tmp_path / "out", sampled_dir=sampled, prefix=prefix)
    assert not (tmp_path / "escape.bin").exists() and not (tmp_path / "out").exists()
