"""The epoch draw: the Rust core's restatement of numpy's Philox permutations, and its epochs,
against numpy's own (docs/CONTRACTS.md section 3: sampled arrays are data_io's byte for byte)."""

from __future__ import annotations

import hashlib
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hrm_assets import _core
from hrm_assets.sampling import epoch_draw
from hrm_assets.sampling.epoch_draw import (
    draw_epochs,
    philox_state,
    rust_draw_matches_numpy,
)


def test_the_check_passes_with_this_numpy():
    assert rust_draw_matches_numpy()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**63),
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=6),
    warm_up=st.integers(0, 9),
)
def test_permutations_and_states_equal_numpys(seed, sizes, warm_up):
    rng = np.random.Generator(np.random.Philox(seed))
    rng.integers(0, 2**32, size=warm_up, dtype=np.uint32)  # any buffer position, half words
    state = philox_state(rng)
    for size in sizes:
        permutation, state = _core.philox_permutation(state, size)
        assert permutation == rng.permutation(size).tolist()
        assert state == philox_state(rng)


def set_philox_state(rng: np.random.Generator, values: tuple) -> None:
    """The inverse of ``philox_state``."""
    counter, key, buffer, buffer_pos, has_uint32, uinteger = values
    rng.bit_generator.state = {
        "bit_generator": "Philox",
        "state": {
            "counter": np.array(counter, dtype=np.uint64),
            "key": np.array(key, dtype=np.uint64),
        },
        "buffer": np.array(buffer, dtype=np.uint64),
        "buffer_pos": buffer_pos,
        "has_uint32": int(has_uint32),
        "uinteger": uinteger,
    }


def test_state_round_trips_through_numpy():
    rng = np.random.Generator(np.random.Philox(7))
    rng.random(3)
    state = philox_state(rng)
    other = np.random.Generator(np.random.Philox(0))
    set_philox_state(other, state)
    assert other.permutation(50).tolist() == rng.permutation(50).tolist()


def test_a_bad_state_is_refused():
    counter, key, buffer, _, has_uint32, uinteger = philox_state(
        np.random.Generator(np.random.Philox(1))
    )
    with pytest.raises(ValueError, match="buffer_pos"):
        _core.philox_permutation((counter, key, buffer, 5, has_uint32, uinteger), 3)


def _table(rng: np.random.Generator, task_rows: list[int]) -> tuple[dict, np.ndarray]:
    rows = sum(task_rows)
    fields = {
        name: rng.integers(-(2**40), 2**40, size=rows, dtype=np.int64)
        for name in ("inst_start", "inst_len", "resp_start", "resp_len")
    }
    lengths = rng.integers(0, 5000, size=rows, dtype=np.int64)
    return fields, lengths


def _tree(root) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*.npy"))
    }


@settings(max_examples=40, deadline=None)
@given(
    tasks=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 90)), min_size=1, max_size=6),
    epochs=st.integers(0, 4),
    seed=st.integers(0, 2**32),
)
def test_rust_and_numpy_draw_the_same_epochs(tmp_path_factory, tasks, epochs, seed):
    # A task with no rows takes none; otherwise any cap or repeat (more rows than it has).
    tasks = [(rows, per_epoch if rows else 0) for rows, per_epoch in tasks]
    fields, lengths = _table(np.random.default_rng(seed), [rows for rows, _ in tasks])
    outputs = {}
    engines = {"rust": epoch_draw._draw_in_rust, "numpy": epoch_draw._draw_with_numpy}
    for engine, draw in engines.items():
        out = tmp_path_factory.mktemp(engine)
        calls: list[int] = []
        draws = draw(out, fields, lengths, tasks, epochs, seed, partial(calls.append, 1))
        assert draws.engine == engine
        assert len(calls) == epochs
        outputs[engine] = (draws, _tree(out))
    (rust, rust_files), (numpy, numpy_files) = outputs["rust"], outputs["numpy"]
    assert rust_files == numpy_files
    assert len(rust_files) == 4 * epochs
    assert rust.tokens == numpy.tokens
    assert rust.hits.tolist() == numpy.hits.tolist()
    assert rust.entries == numpy.entries
    for relative, digest in rust_files.items():
        assert rust.entries[relative]["sha256"] == digest


def test_draw_uses_rust_unless_it_differs_from_numpy(tmp_path, monkeypatch):
    fields, lengths = _table(np.random.default_rng(0), [5, 3])
    tasks = [(5, 2), (3, 7)]
    draws = draw_epochs(tmp_path / "a", fields, lengths, tasks, 0, 1)
    assert draws.engine == "rust"
    monkeypatch.setattr(epoch_draw, "rust_draw_matches_numpy", lambda: False)
    assert draw_epochs(tmp_path / "b", fields, lengths, tasks, 0, 1).engine == "numpy"


def test_too_many_rows_for_the_rust_draw_go_to_numpy(tmp_path, monkeypatch):
    fields, lengths = _table(np.random.default_rng(0), [5, 3])
    monkeypatch.setattr(epoch_draw, "RUST_MAX_ROWS", 8)
    assert draw_epochs(tmp_path, fields, lengths, [(5, 2), (3, 3)], 0, 1).engine == "rust"
    assert draw_epochs(tmp_path, fields, lengths, [(5, 2), (3, 7)], 0, 1).engine == "numpy"


def test_a_progress_exception_stops_the_rust_draw(tmp_path):
    fields, lengths = _table(np.random.default_rng(0), [4])

    def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        epoch_draw._draw_in_rust(tmp_path, fields, lengths, [(4, 4)], 3, 0, interrupted)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["epoch_0"]


@pytest.mark.parametrize("draw", [epoch_draw._draw_in_rust, epoch_draw._draw_with_numpy])
def test_mismatched_tables_are_refused(tmp_path, draw):
    fields, lengths = _table(np.random.default_rng(0), [4])
    with pytest.raises(ValueError, match="no rows"):
        draw(tmp_path, fields, lengths, [(4, 1), (0, 2)], 1, 0, None)


def test_an_io_error_is_an_oserror_naming_the_file(tmp_path):
    fields, lengths = _table(np.random.default_rng(0), [4])
    (tmp_path / "epoch_0").write_text("a file where the epoch's folder goes")
    with pytest.raises(FileExistsError) as caught:
        epoch_draw._draw_in_rust(tmp_path, fields, lengths, [(4, 4)], 1, 0, None)
    assert caught.value.filename == str(tmp_path / "epoch_0")
    assert caught.value.strerror == "File exists"
