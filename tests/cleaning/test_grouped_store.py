"""The store of grouped rows (``hrm_assets.cleaning.grouped_store``, Rust core
``grouped_rows``): every group comes back with its rows in the order given, from memory within
the run's budget or from the spill file past it, joined across groups and stores; the spill
file is removed on close and the memory given back; rows it cannot keep are refused."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

from hrm_assets.cleaning.grouped_store import GroupStore, StoreBudget, gathered, group_bytes


def _table(rows: int, tag: str) -> pa.Table:
    return pa.table(
        {
            "condition": ["direct"] * rows,
            "instruction": [f"{tag} question {i} ü" for i in range(rows)],
            "response": [f"{tag} answer {i} ✓" * (i % 3) for i in range(rows)],
        }
    )


def _stored_bytes(table: pa.Table) -> int:
    text = sum(len(value.encode()) for row in table.to_pylist() for value in row.values())
    return group_bytes(table.num_rows, [text]) + 8 * table.num_rows * (table.num_columns - 1)


def _expected(table: pa.Table, rows) -> pa.Table:
    return pa.Table.from_pylist([table.slice(row, 1).to_pylist()[0] for row in rows], table.schema)


def test_each_group_comes_back_in_its_order_from_memory_or_the_spill_file(tmp_path):
    first, second = _table(40, "first"), _table(30, "second")
    budget = StoreBudget(_stored_bytes(first))  # the first batch fits, the second spills
    store = GroupStore(tmp_path / "out" / "task.parquet", budget)
    # The first batch in three groups of rows picked out of order, the second in batch order.
    order = np.array([39, 0, 5, *range(1, 5), *range(6, 39)], dtype=np.int64)
    kept = store.add(first, order, np.array([0, 2, 3, 40]))
    assert store.path is None and isinstance(kept[0].source, bytes)
    spilled = store.add(second, None, np.array([0, 10, 10, 30]))
    assert store.path is not None and store.path.exists() and store.path.parent == tmp_path / "out"
    assert [group.rows for group in kept] == [2, 1, 37] and [g.rows for g in spilled] == [10, 0, 20]
    wanted = [
        (kept[0], _expected(first, [39, 0])),
        (kept[1], _expected(first, [5])),
        (kept[2], _expected(first, [*range(1, 5), *range(6, 39)])),
        (spilled[0], second.slice(0, 10)),
        (spilled[2], second.slice(10, 20)),
    ]
    for group, expected in reversed(wanted):  # any order, as the writers ask
        assert store.rows(group).equals(expected)
        text = sum(len(value.encode()) for row in expected.to_pylist() for value in row.values())
        assert group.text_bytes == text
    # A file's groups from memory and from the spill file, joined in the order given.
    joined = gathered([spilled[2], kept[0], spilled[0]], store.names)
    assert joined.equals(pa.concat_tables([wanted[4][1], wanted[0][1], wanted[3][1]]))
    assert all(column.num_chunks == 1 for column in joined.columns)
    assert budget.held > 0
    spill = store.path
    store.close()
    assert not spill.exists() and budget.held == 0 and store.blocks == []


def test_groups_of_several_stores_and_chunks_join_without_joining_the_batches(tmp_path):
    """Batches stored together come as a table of several chunks (and large strings from some
    rules); they are read as they are and the gathered columns are plain strings."""
    budget = StoreBudget(0)  # every group spills
    a = GroupStore(tmp_path / "a.parquet", budget)
    b = GroupStore(tmp_path / "b.parquet", budget)
    two_chunks = pa.concat_tables([_table(7, "x"), _table(5, "y")])
    assert two_chunks.column("instruction").num_chunks == 2
    large = _table(6, "z").cast(
        pa.schema([(n, pa.large_string()) for n in two_chunks.column_names])
    )
    order = np.array([11, 2, 7, 0], dtype=np.int64)
    from_a = a.add(two_chunks, order, np.array([0, 4]))
    from_b = b.add(large.slice(1), None, np.array([0, 5]))
    joined = gathered([from_b[0], from_a[0]], a.names)
    expected = pa.concat_tables(
        [large.slice(1).cast(two_chunks.schema), _expected(two_chunks, order)]
    )
    assert joined.equals(expected) and joined.schema == two_chunks.schema
    a.close()
    b.close()


def test_rows_with_a_null_or_other_columns_are_refused(tmp_path):
    budget = StoreBudget(1 << 20)
    store = GroupStore(tmp_path / "task.parquet", budget)
    table = _table(3, "n")
    with_null = table.set_column(1, "instruction", pa.array(["a", None, "c"]))
    with pytest.raises(ValueError, match="null in instruction"):
        store.add(with_null, None, np.array([0, 3]))
    store.add(table, None, np.array([0, 3]))
    with pytest.raises(ValueError, match="columns"):
        store.add(table.select(["instruction", "response"]), None, np.array([0, 3]))
    with pytest.raises(ValueError, match="row"):
        store.add(table, np.array([0, 7, 1], dtype=np.int64), np.array([0, 3]))
    store.close()
    assert budget.held == 0  # what a refused batch took is given back too


def test_a_spill_file_cut_short_is_an_error_not_short_rows(tmp_path):
    store = GroupStore(tmp_path / "task.parquet", StoreBudget(0))
    group = store.add(_table(20, "t"), None, np.array([0, 20]))[0]
    with open(store.path, "r+b") as spill:
        spill.truncate(100)
    with pytest.raises(OSError, match="reading back the cleaning spill file"):
        store.rows(group)
    store.close()


def test_a_failed_spill_write_names_the_spill_file(tmp_path):
    store = GroupStore(tmp_path / "task.parquet", StoreBudget(0))
    store.add(_table(5, "w"), None, np.array([0, 5]))
    os.close(store._fd)  # the descriptor gone under the store: its next write fails
    with pytest.raises(OSError, match=f"{store.path}: writing the cleaning spill file"):
        store.add(_table(5, "w"), None, np.array([0, 5]))
    store._fd = None
    store.close()
    assert not list(tmp_path.iterdir())
