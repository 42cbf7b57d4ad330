"""Packed sequences (``hrm_assets.export.packing``, ``packed_writer``): unpacking every sequence
gives back exactly the sampled rows; loss masks, position ids and segment ids; the plan is
first-fit-decreasing and deterministic by seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.sampled_corpus import CONTEXT_SIZE, corpus_rows, make_sampled, sampled_rows
from support.tokenized_trees import write_tokenized

from hrm_assets.common.manifest import verify_folder
from hrm_assets.export.cli import main
from hrm_assets.export.export_runs import export_packed, fill_buckets
from hrm_assets.export.packed_writer import ARRAY_DTYPES, chunk_layout, row_arrays, write_packed
from hrm_assets.export.packing import pack_rows
from hrm_assets.export.row_source import sampled_epoch_rows

ARRAYS = ("tokens", "loss_mask", "position_ids", "segment_ids")
IGNORE_LABEL_ID = -100  # HRM-Text's models.common.IGNORE_LABEL_ID


@pytest.fixture
def sampled(tmp_path) -> Path:
    return make_sampled(tmp_path)


def load_packed(folder: Path) -> dict[str, np.ndarray]:
    names = (*ARRAYS, "row_index", "sequence_offsets", "overlong_rows")
    return {name: np.load(folder / f"{name}.npy") for name in names}


def unpack(packed: dict[str, np.ndarray]) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """(source row, tokens, loss mask, position ids) of every packed row, in output order,
    found from the segment ids alone; checks the layout of every sequence on the way."""
    found = []
    sequences, capacity = packed["tokens"].shape
    for sequence in range(sequences):
        segments = packed["segment_ids"][sequence]
        count = int(segments.max())
        filled = int(np.count_nonzero(segments))
        # Rows back to back from the first token, numbered 1..count, then padding.
        assert (segments[:filled] > 0).all() and (segments[filled:] == 0).all()
        assert (np.diff(segments[:filled]) >= 0).all()
        for name in ("tokens", "loss_mask", "position_ids"):
            assert (packed[name][sequence][filled:] == 0).all()
        first = packed["sequence_offsets"][sequence]
        assert packed["sequence_offsets"][sequence + 1] - first == count
        for segment in range(1, count + 1):
            where = np.flatnonzero(segments == segment)
            assert len(where) and (np.diff(where) == 1).all()
            found.append(
                (
                    int(packed["row_index"][first + segment - 1]),
                    packed["tokens"][sequence][where],
                    packed["loss_mask"][sequence][where],
                    packed["position_ids"][sequence][where],
                )
            )
    return found


def assert_unpacks_to(packed: dict[str, np.ndarray], rows, expected_rows: set[int]) -> None:
    unpacked = unpack(packed)
    assert sorted(row for row, *_ in unpacked) == sorted(expected_rows)  # each exactly once
    for row, tokens, loss_mask, position_ids in unpacked:
        instruction, response = rows[row]
        np.testing.assert_array_equal(tokens, np.concatenate([instruction, response]))
        np.testing.assert_array_equal(loss_mask, [0] * len(instruction) + [1] * len(response))
        np.testing.assert_array_equal(position_ids, np.arange(len(tokens)))


@pytest.mark.parametrize("epoch", [0, 1])
def test_unpacking_gives_back_exactly_the_sampled_rows(sampled, tmp_path, epoch):
    summary = export_packed(tmp_path / "out", sampled_dir=sampled, epoch=epoch, seed=5)
    packed = load_packed(tmp_path / "out")
    rows = sampled_rows(sampled, epoch)
    assert packed["tokens"].shape[1] == CONTEXT_SIZE  # the sampled folder's context_size
    assert_unpacks_to(packed, rows, set(range(len(rows))))
    assert len(packed["overlong_rows"]) == 0
    filled = sum(len(i) + len(r) for i, r in rows)
    assert summary.tokens == filled == int(np.count_nonzero(packed["segment_ids"]))
    assert summary.packing_efficiency == filled / (summary.sequences * CONTEXT_SIZE)
    assert summary.rows == len(rows)
    assert summary.response_tokens == int(packed["loss_mask"].sum())
    assert sum(summary.fill_buckets.values()) == summary.sequences
    assert verify_folder(tmp_path / "out").ok
    described = json.loads((tmp_path / "out" / "export.json").read_text())
    assert described["packing_efficiency"] == summary.packing_efficiency
    assert described["settings"] == {"context_size": CONTEXT_SIZE, "seed": 5}


def test_loss_mask_gives_hrm_texts_target_only_labels(sampled, tmp_path):
    """Next-token labels from a packed sequence (target ``tokens[t]`` where ``loss_mask[t]``)
    are, row by row, HRM-Text's ``target_only`` labels (dataset_new.py ``_load_batch``): the
    instruction's positions ignored, then the whole response, EOA included."""
    export_packed(tmp_path / "out", sampled_dir=sampled, epoch=0)
    packed = load_packed(tmp_path / "out")
    rows = sampled_rows(sampled, 0)
    for row, packed_tokens, loss_mask, _ in unpack(packed):
        tokens = packed_tokens.astype(np.int32)  # as HRM-Text's loader casts them
        inputs = tokens[:-1]
        labels = np.where(loss_mask[1:] == 1, tokens[1:], IGNORE_LABEL_ID)
        instruction, response = rows[row]
        hrm_inputs = np.concatenate([instruction, response[:-1]])
        hrm_labels = np.concatenate([np.full(len(instruction) - 1, IGNORE_LABEL_ID), response])
        np.testing.assert_array_equal(inputs, hrm_inputs)
        np.testing.assert_array_equal(labels, hrm_labels)
    # Across a row boundary nothing is learned: a row's first token is never a target.
    starts = packed["position_ids"] == 0
    assert (packed["loss_mask"][starts] == 0).all()


def test_same_seed_same_bytes_other_seed_other_order(sampled, tmp_path):
    export_packed(tmp_path / "a", sampled_dir=sampled, epoch=0, seed=1)
    export_packed(tmp_path / "b", sampled_dir=sampled, epoch=0, seed=1)
    export_packed(tmp_path / "c", sampled_dir=sampled, epoch=0, seed=2)
    manifest = {n: (tmp_path / n / "manifest.json").read_bytes() for n in "abc"}
    assert manifest["a"] == manifest["b"]
    assert manifest["a"] != manifest["c"]
    rows = sampled_rows(sampled, 0)
    assert_unpacks_to(load_packed(tmp_path / "c"), rows, set(range(len(rows))))


def test_small_chunks_write_the_same_bytes(sampled, tmp_path):
    table = sampled_epoch_rows(sampled, 1)
    plan = pack_rows(table.row_lengths, CONTEXT_SIZE, seed=0)
    (tmp_path / "one").mkdir()
    (tmp_path / "many").mkdir()
    one = write_packed(table, plan, tmp_path / "one")
    many = write_packed(table, plan, tmp_path / "many", chunk_tokens=1)
    assert one.files == many.files


def test_overlong_rows_of_a_corpus_are_counted_listed_and_not_packed(sampled, tmp_path):
    tokenized = sampled.parent / "tokenized"
    warnings: list[str] = []
    summary = export_packed(
        tmp_path / "out", tokenized_dir=tokenized, context_size=CONTEXT_SIZE, warn=warnings.append
    )
    rows = corpus_rows(tokenized)
    lengths = np.array([len(i) + len(r) for i, r in rows])
    overlong = set(np.flatnonzero(lengths > CONTEXT_SIZE).tolist())
    assert overlong, "the fixture has rows longer than the context"
    packed = load_packed(tmp_path / "out")
    assert set(packed["overlong_rows"].tolist()) == overlong
    assert summary.overlong_rows == len(overlong)
    assert_unpacks_to(packed, rows, set(range(len(rows))) - overlong)
    assert len(warnings) == 1 and f"{len(overlong)} row(s) longer than context_size" in warnings[0]


def naive_first_fit_decreasing(lengths: np.ndarray, capacity: int, seed: int) -> list[list[int]]:
    """The textbook algorithm, one row at a time over a list of bins, in the plan's order."""
    rng = np.random.Generator(np.random.Philox(seed))
    order = rng.permutation(len(lengths))
    order = order[np.argsort(-lengths[order], kind="stable")]
    room: list[int] = []
    bins: list[list[int]] = []
    for row in order:
        if lengths[row] > capacity:
            continue
        for index, free in enumerate(room):
            if free >= lengths[row]:
                room[index] -= lengths[row]
                bins[index].append(int(row))
                break
        else:
            room.append(capacity - int(lengths[row]))
            bins.append([int(row)])
    shuffled = rng.permutation(len(bins))
    return [bins[b] for b in shuffled]


@pytest.mark.parametrize("seed", range(6))
def test_the_plan_is_first_fit_decreasing(seed):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(0, 400))
    capacity = int(rng.integers(8, 200))
    # Many equal lengths (rows placed together) and a few longer than the capacity.
    lengths = rng.integers(1, capacity + 20, count) // int(rng.integers(1, 4)) + 1
    plan = pack_rows(lengths, capacity, seed)
    sequences = [
        plan.row_order[plan.sequence_offsets[s] : plan.sequence_offsets[s + 1]].tolist()
        for s in range(plan.sequences)
    ]
    assert sequences == naive_first_fit_decreasing(lengths, capacity, seed)
    np.testing.assert_array_equal(plan.overlong_rows, np.flatnonzero(lengths > capacity))
    assert (plan.sequence_tokens <= capacity).all()
    assert plan.packed_tokens == lengths[lengths <= capacity].sum()


def test_plan_edge_cases():
    empty = pack_rows(np.zeros(0, dtype=np.int64), 10, 0)
    assert empty.sequences == 0 and empty.efficiency == 1.0
    full = pack_rows(np.array([10, 10, 5, 5]), 10, 0)
    assert full.sequences == 3 and full.efficiency == 1.0
    with pytest.raises(ValueError, match="row 1: length 0"):
        pack_rows(np.array([3, 0]), 10, 0)
    assert fill_buckets(np.array([10, 9, 1]), 10) == {
        "100%": 1,
        "99%-100%": 0,
        "95%-99%": 0,
        "90%-95%": 1,
        "75%-90%": 0,
        "50%-75%": 0,
        "0%-50%": 1,
    }


def test_many_bins_grow_the_tree():
    lengths = np.full(3000, 7)
    plan = pack_rows(lengths, 10, 0)
    assert plan.sequences == 3000 and plan.efficiency == 0.7


def test_cli(sampled, tmp_path, capsys):
    arguments = ["packed", "--sampled", str(sampled), "-o", str(tmp_path / "o"), "--no-progress"]
    assert main([*arguments, "--seed", "3", "--context-size", "200"]) == 0
    out = capsys.readouterr().out
    assert "packing:" in out and "context_size 200, seed 3" in out
    assert load_packed(tmp_path / "o")["tokens"].shape[1] == 200
    tokenized = write_tokenized(tmp_path / "tok", {"a.jsonl": [(3, 4), (50, 60)]})
    corpus = ["packed", "--tokenized", str(tokenized), "-o", str(tmp_path / "c"), "--no-progress"]
    assert main([*corpus, "--context-size", "20"]) == 0
    captured = capsys.readouterr()
    assert "not packed: 1 row(s)" in captured.out and "warning: " in captured.err


def test_row_arrays_by_hand():
    lengths, inst_lengths = np.array([2, 3, 4]), np.array([1, 2, 2])
    destinations, segment_ids = chunk_layout(lengths, np.array([2, 1]), 5)
    np.testing.assert_array_equal(destinations, [0, 2, 5])
    np.testing.assert_array_equal(segment_ids, [1, 2, 1])
    arrays = row_arrays(2, destinations, lengths, inst_lengths, segment_ids, 5)
    np.testing.assert_array_equal(arrays["position_ids"], [0, 1, 0, 1, 2, 0, 1, 2, 3, 0])
    np.testing.assert_array_equal(arrays["segment_ids"], [1, 1, 2, 2, 2, 1, 1, 1, 1, 0])
    np.testing.assert_array_equal(arrays["loss_mask"], [0, 1, 0, 0, 1, 0, 0, 1, 1, 0])
    assert {name: array.dtype for name, array in arrays.items()} == ARRAY_DTYPES
