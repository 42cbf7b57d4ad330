"""Sampling: byte-identical to data_io's sample_tokenized.py (docs/CONTRACTS.md section 3).

``reference_sample`` (``support.reference_sampler``) is an independent, deliberately plain
re-implementation of the contract (Python lists and loops, sharing no code with
hrm_assets.sampling) that also renders data_io's report lines. Every output file of the real
sampler must match it byte for byte.
"""

from __future__ import annotations

import fcntl
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.reference_sampler import (
    reference_sample,
    without_data_card,
)
from support.tokenized_trees import (
    MIXED,
    MIXED_RULES,
    SPAN_NAMES,
    random_rows,
    tree_bytes,
    write_rules,
    write_tokenized,
)

from hrm_assets.sampling import arrays as sampled_arrays
from hrm_assets.sampling import epoch_draw, epoch_writing, task_folders
from hrm_assets.sampling import sampler as sampling
from hrm_assets.sampling.analytics import (
    category_records,
    epoch_records,
    render_data_io_report,
    render_report,
    summary_figures,
    task_records,
)
from hrm_assets.sampling.datacard import CARD_FILES
from hrm_assets.sampling.prefix_config import SamplingRule
from hrm_assets.sampling.sampler import (
    SamplingConfig,
    SamplingError,
    Spans,
    filter_rows,
    make_config,
    rows_per_epoch,
    sample_tokenized,
    token_dtype,
)
from hrm_assets.sampling.span_table import (
    bounds_of,
    epoch_span_problem,
    segment_sums,
    span_layout_problem,
)

# --------------------------------------------------------------------------- fixtures


# --------------------------------------------------------------------------- the reference


def run_both(tmp_path: Path, tasks, rules, vocab_size=1000, data_seed=0, **kwargs):
    tokenized = write_tokenized(tmp_path / "tokenized", tasks, vocab_size, data_seed)
    rules_path = write_rules(tmp_path / "prefix_config.yaml", rules)
    expected = reference_sample(tokenized, rules, tmp_path / "expected", **kwargs)
    config = SamplingConfig(
        tokenized_path=tokenized,
        output_path=tmp_path / "sampled",
        prefix_config_path=rules_path,
        **kwargs,
    )
    if not len(np.load(tmp_path / "expected" / "epoch_0" / "inst_len.npy")):
        # data_io writes empty epochs; hrm-sample refuses them (issue 30), writing nothing.
        with pytest.raises(SamplingError, match="every epoch would be empty"):
            sample_tokenized(config)
        assert not (tmp_path / "sampled").exists()
        return None, expected
    result = sample_tokenized(config)
    assert without_data_card(tree_bytes(tmp_path / "sampled")) == tree_bytes(tmp_path / "expected")
    assert render_data_io_report(result) == expected["report"]
    return result, expected


# --------------------------------------------------------------------------- byte identity


CASES = {
    "caps-repeat-drop-truncate-empty": (MIXED, MIXED_RULES, 1000, dict(epochs=3, context_size=60)),
    "uint8-tokens": (MIXED, MIXED_RULES, 200, dict(epochs=2, context_size=60, seed=3)),
    "int32-tokens": (MIXED, MIXED_RULES, 70_000, dict(epochs=2, context_size=60, seed=11)),
    "vocab-unknown-int32": (MIXED, MIXED_RULES, None, dict(epochs=2, context_size=60)),
    "default-config": (MIXED, MIXED_RULES, 1000, {}),
    "repeat-without-caps": (
        {"a.jsonl": random_rows(7, 9), "b.jsonl": random_rows(8, 4)},
        [{"prefix": "a", "repeat": 5}, {"prefix": "b", "repeat": 2}],
        1000,
        dict(epochs=4, seed=5),
    ),
    "all-short-kept-min0": (
        MIXED,
        MIXED_RULES,
        1000,
        dict(epochs=3, context_size=30, min_resp_length=0),
    ),
    "cap-zero": (
        MIXED,
        [{"prefix": "SYNTH__", "max_per_file": 0}, {"prefix": "flan__", "max_per_file": 0}],
        1000,
        dict(epochs=2, seed=1),
    ),
    "cap-above-rows-and-many-epochs": (
        {"x__1.jsonl": random_rows(9, 6), "x__2.jsonl": random_rows(10, 3)},
        [{"prefix": "x__", "max_per_file": 4, "repeat": 3}],
        300,
        dict(epochs=7, seed=123456789),
    ),
}


@pytest.mark.parametrize("engine", ["rust", "numpy"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_byte_identical_to_reference(tmp_path, monkeypatch, case, engine):
    # The Rust epoch draw, and numpy's (used when the Rust one does not reproduce this numpy).
    if engine == "numpy":
        monkeypatch.setattr(epoch_draw, "rust_draw_matches_numpy", lambda: False)
    tasks, rules, vocab, kwargs = CASES[case]
    run_both(tmp_path, tasks, rules, vocab, **kwargs)


@pytest.mark.parametrize("seed", [0, 1, 42])
@pytest.mark.parametrize("epochs", [1, 5])
def test_seeds_and_epochs(tmp_path, seed, epochs):
    run_both(
        tmp_path,
        MIXED,
        MIXED_RULES,
        1000,
        data_seed=seed,
        seed=seed,
        epochs=epochs,
        context_size=50,
    )


def test_chunked_copy_is_identical(tmp_path, monkeypatch):
    # Tiny chunks so every task is copied in several pieces by several threads.
    monkeypatch.setattr(sampled_arrays, "COPY_BLOCK", 7)
    run_both(tmp_path, MIXED, MIXED_RULES, 1000, epochs=2, context_size=60)


@pytest.mark.parametrize("span_dtype", [">u8", "<i8", "<u4", ">i4"])
def test_span_arrays_of_any_integer_type_sample_alike(tmp_path, span_dtype):
    # data_io writes <u8 spans; other integer types (byte orders) must give the same sample.
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    base = dict(tokenized_path=tokenized, prefix_config_path=rules, epochs=3, context_size=60)
    sample_tokenized(make_config(**base, output_path=tmp_path / "as_written"))
    for path in tokenized.glob("*/*_*.npy"):
        np.save(path, np.load(path).astype(span_dtype))
    assert np.load(next(tokenized.glob("*/inst_len.npy"))).dtype == np.dtype(span_dtype)
    sample_tokenized(make_config(**base, output_path=tmp_path / "converted"))
    assert tree_bytes(tmp_path / "converted") == tree_bytes(tmp_path / "as_written")


def _span_tables(task_dirs, counts):
    """(table, bounds) from the Rust reader and from the task-by-task reader, with the folders
    each reported as read."""
    rust_seen, python_seen = [], []
    rust = sampling.read_span_table(task_dirs, counts, rust_seen.append)
    table, bounds = task_folders._read_span_table_by_task(
        task_dirs, counts, python_seen.append, skip=0
    )
    assert sum(rust_seen) == sum(python_seen) == len(task_dirs)
    return rust, (table, bounds)


def test_span_readers_agree_on_every_integer_type(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    task_dirs = sampling.task_directories(tokenized)
    for index, path in enumerate(sorted(tokenized.glob("*/*_*.npy"))):
        dtype = [">u8", "<i8", "<u4", ">i4", "<u2", "|u1"][index % 6]
        values = np.load(path)
        if values.max(initial=0) <= np.iinfo(dtype).max:
            np.save(path, values.astype(dtype))
    counts = [sampling.token_count(task_dir) for task_dir in task_dirs]
    (rust, rust_bounds), (python, python_bounds) = _span_tables(task_dirs, counts)
    assert np.array_equal(rust_bounds, python_bounds)
    for name in SPAN_NAMES:
        assert getattr(rust, name).dtype == np.int64
        assert np.array_equal(getattr(rust, name), getattr(python, name)), name


def test_an_exception_in_the_span_progress_callback_is_raised(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    task_dirs = sampling.task_directories(tokenized)
    counts = [sampling.token_count(task_dir) for task_dir in task_dirs]

    def refuse(tasks):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sampling.read_span_table(task_dirs, counts, refuse)


def test_span_files_the_rust_reader_does_not_take_are_read_in_python(tmp_path):
    # A version 2.0 header (numpy writes one for very long headers) is not numpy.save's usual
    # header: the Rust reader declines the whole table and Python reads it, with the same result.
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    task_dirs = sampling.task_directories(tokenized)
    counts = [sampling.token_count(task_dir) for task_dir in task_dirs]
    (expected, _), _ = _span_tables(task_dirs, counts)
    path = task_dirs[-1] / "resp_len.npy"
    values = np.load(path)
    with open(path, "wb") as handle:
        np.lib.format.write_array(handle, values, version=(2, 0))
    assert task_folders._core.read_span_columns(task_dirs, list(SPAN_NAMES)) is None
    (table, _), _ = _span_tables(task_dirs, counts)
    assert np.array_equal(table.resp_len, expected.resp_len)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(0, 12), min_size=1, max_size=4),
    caps=st.lists(st.one_of(st.none(), st.integers(0, 8)), min_size=4, max_size=4),
    repeats=st.lists(st.integers(1, 4), min_size=4, max_size=4),
    modes=st.lists(st.sampled_from(["drop", "truncate"]), min_size=4, max_size=4),
    seed=st.integers(0, 2**32),
    epochs=st.integers(1, 4),
    context_size=st.integers(2, 40),
    min_resp_length=st.integers(0, 4),
    data_seed=st.integers(0, 1000),
)
def test_random_configs_match_reference(
    tmp_path_factory,
    sizes,
    caps,
    repeats,
    modes,
    seed,
    epochs,
    context_size,
    min_resp_length,
    data_seed,
):
    tmp_path = tmp_path_factory.mktemp("prop")
    tasks = {f"t{i}__f.jsonl": random_rows(data_seed + i, n, 30, 30) for i, n in enumerate(sizes)}
    rules = [
        {"prefix": f"t{i}", "max_per_file": caps[i], "repeat": repeats[i], "long_context": modes[i]}
        for i in range(len(sizes))
    ]
    run_both(
        tmp_path,
        tasks,
        rules,
        500,
        data_seed,
        seed=seed,
        epochs=epochs,
        context_size=context_size,
        min_resp_length=min_resp_length,
    )


# --------------------------------------------------------------------------- result analytics


def test_result_stats_match_reference(tmp_path):
    result, expected = run_both(tmp_path, MIXED, MIXED_RULES, 1000, epochs=3, context_size=60)
    by_name = {task["name"]: task for task in expected["tasks"]}
    assert [t.name for t in result.tasks] == sorted(MIXED)
    for task in result.tasks:
        ref = by_name[task.name]
        assert task.stats.source_rows == ref["source_rows"] == len(MIXED[task.name])
        assert task.stats.rows == len(ref["rows"])
        assert task.stats.rows_dropped == ref["dropped"]
        assert task.stats.rows_truncated == ref["truncated"]
        assert task.stats.rows + task.stats.rows_dropped == task.stats.source_rows
        assert task.stats.covered_rows == sum(ref["hits"]) == 3 * task.rows_per_epoch
        hits = np.array(ref["hits"], dtype=np.int64)
        inst, resp = (np.array([row[i] for row in ref["rows"]], dtype=np.int64) for i in (1, 3))
        assert task.stats.covered_inst_tokens == int((inst * hits).sum())
        assert task.stats.covered_resp_tokens == int((resp * hits).sum())
        assert task.stats.covered_tokens == int(((inst + resp) * hits).sum())
        assert task.stats.unique_rows == int((hits > 0).sum())
        assert task.stats.unique_tokens == int((inst + resp)[hits > 0].sum())
    flan = next(t for t in result.tasks if t.name == "flan__y.parquet")
    assert flan.matched_prefix == "flan__" and flan.rule.long_context == "drop"
    assert flan.stats.rows_dropped_long > 0 and flan.stats.rows_truncated == 0
    synth = next(t for t in result.tasks if t.name == "SYNTH__a.parquet")
    assert synth.rows_per_epoch == 20 and synth.stats.rows_truncated > 0
    empty = next(t for t in result.tasks if t.name == "empty.jsonl")
    assert empty.matched_prefix is None and empty.rows_per_epoch == 0 and empty.token_count == 0
    assert set(result.categories) == {
        "SYNTH",
        "flan",
        "gsm8k_train.jsonl",
        "Platypus",
        "empty.jsonl",
        "zz_long.jsonl",
    }
    for name, category in result.categories.items():
        members = [t.stats for t in result.tasks if t.category == name]
        for figure, value in vars(category).items():
            assert value == sum(vars(stats)[figure] for stats in members), (name, figure)
    for figure, value in vars(result.global_stats).items():
        assert value == sum(vars(t.stats)[figure] for t in result.tasks), figure

    tokens = np.load(tmp_path / "sampled" / "tokens.npy")
    assert result.total_tokens == len(tokens)
    assert result.token_dtype == "uint16"
    offsets = [t.token_offset for t in result.tasks]
    assert offsets == list(np.cumsum([0] + [t.token_count for t in result.tasks])[:-1])
    for epoch, tokens_in_epoch in enumerate(result.epoch_tokens):
        folder = tmp_path / "sampled" / f"epoch_{epoch}"
        lens = np.load(folder / "inst_len.npy") + np.load(folder / "resp_len.npy")
        assert tokens_in_epoch == int(lens.sum())
        assert result.epoch_rows[epoch] == len(lens) == sum(t.rows_per_epoch for t in result.tasks)
    assert result.total_length == round(sum(result.epoch_tokens) / 3)


def test_report_sections_and_records(tmp_path):
    result, expected = run_both(tmp_path, MIXED, MIXED_RULES, 1000, epochs=2, context_size=60)
    report = render_report(result)
    assert report.startswith(expected["report"])
    for section in (
        "### Category Coverage Stats",
        "### Task Coverage Stats",
        "### Global Summary",
        "### Filtering Stats",
        "### Epochs",
    ):
        assert section in report
    assert "| **flan__y.parquet** | cap 15, x1, drop | 40 |" in report

    figures = summary_figures(result)
    assert figures["rows"] == result.global_stats.rows
    assert figures["tokens_npy_tokens"] == result.total_tokens
    assert figures["rows_per_epoch"] == result.epoch_rows[0]
    assert figures["total_length"] == result.total_length
    assert 0 < figures["unique_rows_fraction"] <= 1
    json.dumps(figures)

    categories = category_records(result)
    assert [c["category"] for c in categories] == sorted(result.categories)
    assert sum(c["sampled_token_share"] for c in categories) == pytest.approx(1.0)
    assert sum(c["token_share"] for c in categories) == pytest.approx(1.0)
    assert sum(c["tasks"] for c in categories) == len(result.tasks)
    tasks = task_records(result)
    assert [t["task"] for t in tasks] == [t.name for t in result.tasks]
    assert sum(t["rows_dropped"] for t in tasks) == result.global_stats.rows_dropped
    assert tasks[0]["prefix"] == "Platypus__" and tasks[0]["repeat"] == 3
    epochs = epoch_records(result)
    assert [e["tokens"] for e in epochs] == result.epoch_tokens
    json.dumps([categories, tasks, epochs])


def test_ambiguous_prefixes_warn_once_per_group(tmp_path):
    seen = []
    tokenized = write_tokenized(
        tmp_path / "tok",
        {
            "flan__cot_1.parquet": random_rows(1, 3),
            "flan__cot_2.parquet": random_rows(2, 3),
            "flan__x.parquet": random_rows(3, 3),
        },
    )
    rules = write_rules(tmp_path / "rules.yaml", [{"prefix": "flan__cot_"}, {"prefix": "flan__"}])
    result = sample_tokenized(
        make_config(
            tokenized_path=tokenized,
            output_path=tmp_path / "out",
            prefix_config_path=rules,
            epochs=1,
        ),
        warn=seen.append,
    )
    assert seen == result.warnings
    prefix_warnings = [message for message in seen if "several prefixes" in message]
    assert len(prefix_warnings) == 1
    assert "2 task(s)" in prefix_warnings[0] and "'flan__cot_'" in prefix_warnings[0]


# --------------------------------------------------------------------------- HRM-Text's reader


def test_output_loads_with_hrm_text_rules(tmp_path):
    context_size = 60
    result, _ = run_both(tmp_path, MIXED, MIXED_RULES, 1000, epochs=3, context_size=context_size)
    out = tmp_path / "sampled"
    metadata = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    # HRM-Text's V1DatasetMeta: vocab_size must be null, tokenizer_info.vocab_size present.
    assert list(metadata) == ["tokenizer_info", "vocab_size", "max_seq_len", "total_length"]
    assert metadata["vocab_size"] is None
    assert metadata["tokenizer_info"]["vocab_size"] == 1000
    assert metadata["max_seq_len"] == context_size
    assert metadata["total_length"] == result.total_length
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["tokens.npy", "metadata.json", "manifest.json", "epoch_0", "epoch_1", "epoch_2"]
        + list(CARD_FILES)
    )

    tokens = np.load(out / "tokens.npy", mmap_mode="r")
    assert tokens.dtype == np.uint16
    source = np.concatenate(
        [np.load(tmp_path / "tokenized" / name / "tokens.npy") for name in sorted(MIXED)]
    )
    assert np.array_equal(tokens, source)
    for epoch in range(3):
        spans = {
            key: np.load(out / f"epoch_{epoch}" / f"{key}.npy", mmap_mode="r") for key in SPAN_NAMES
        }
        assert all(
            a.dtype == np.int64 and a.shape == spans["inst_len"].shape for a in spans.values()
        )
        assert len(spans["inst_len"]) > 0
        for key in ("inst", "resp"):
            start, length = spans[f"{key}_start"], spans[f"{key}_len"]
            assert (start >= 0).all() and (start + length <= len(tokens)).all()
        # HRM-Text trains on inst + resp - 1 positions and slices resp[:-1]: both must fit.
        total = spans["inst_len"] + spans["resp_len"]
        assert (total <= context_size).all() and (spans["resp_len"] >= 2).all()
        # Responses follow their instruction in tokens.npy (unless truncated, still inside).
        assert (spans["resp_start"] == spans["inst_start"] + spans["inst_len"]).all()


# --------------------------------------------------------------------------- atomic outputs


def test_resampling_with_fewer_epochs_removes_stale_epochs(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    out = tmp_path / "sampled"
    base = dict(tokenized_path=tokenized, output_path=out, prefix_config_path=rules)
    sample_tokenized(make_config(**base, epochs=5))
    assert len(list(out.glob("epoch_*"))) == 5
    sample_tokenized(make_config(**base, epochs=2))
    assert sorted(p.name for p in out.glob("epoch_*")) == ["epoch_0", "epoch_1"]
    reference_sample(tokenized, MIXED_RULES, tmp_path / "expected", epochs=2)
    assert without_data_card(tree_bytes(out)) == tree_bytes(tmp_path / "expected")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


@pytest.mark.parametrize("engine", ["rust", "numpy"])
def test_failed_run_leaves_previous_output_intact(tmp_path, monkeypatch, engine):
    tokenized = write_tokenized(tmp_path / "tok", MIXED)
    rules = write_rules(tmp_path / "rules.yaml", MIXED_RULES)
    out = tmp_path / "sampled"
    base = dict(tokenized_path=tokenized, output_path=out, prefix_config_path=rules)
    sample_tokenized(make_config(**base, epochs=2))
    before = tree_bytes(out)

    # The disk fills up after the second epoch's arrays are written.
    epochs_done = []

    def disk_full() -> None:
        epochs_done.append(1)
        if len(epochs_done) == 2:
            raise OSError(28, "No space left on device")

    real_draw = epoch_draw.draw_epochs

    def draw_until_full(*args, **kwargs):
        kwargs["progress"] = disk_full
        return real_draw(*args, **kwargs)

    monkeypatch.setattr(epoch_writing, "draw_epochs", draw_until_full)
    if engine == "numpy":
        monkeypatch.setattr(epoch_draw, "rust_draw_matches_numpy", lambda: False)
    with pytest.raises(OSError, match="No space left"):
        sample_tokenized(make_config(**base, epochs=4, seed=9))
    assert len(epochs_done) == 2
    assert tree_bytes(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_concurrent_run_on_the_same_output_is_refused(tmp_path):
    config = _good_setup(tmp_path)
    lock_path = config.output_path.parent / f".{config.output_path.name}.lock"
    with open(lock_path, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with pytest.raises(SamplingError, match="another sampling run"):
            sample_tokenized(config)
    assert not config.output_path.exists()
    sample_tokenized(config)
    assert (config.output_path / "metadata.json").is_file()


def test_leftover_staging_folders_are_removed_and_not_tasks(tmp_path):
    tokenized = write_tokenized(tmp_path / "tok", {"a.jsonl": random_rows(1, 4)})
    # An unfinished atomic write inside the tokenized root is not a task.
    write_tokenized(tokenized / ".tmp-b.jsonl.x1", {"inner": random_rows(2, 2)})
    stale = tmp_path / ".tmp-sampled.0a1b2c3d4e5f"
    stale.mkdir()
    (stale / "tokens.npy").write_bytes(b"partial")
    rules = write_rules(tmp_path / "rules.yaml", [])
    result = sample_tokenized(
        make_config(
            tokenized_path=tokenized,
            output_path=tmp_path / "sampled",
            prefix_config_path=rules,
            epochs=1,
        )
    )
    assert [t.name for t in result.tasks] == ["a.jsonl"]
    assert not stale.exists()


# --------------------------------------------------------------------------- where data_io crashes


def test_repeat_beyond_buffer_does_not_crash(tmp_path):
    # data_io sizes its epoch buffer to the rows after filtering and crashes here.
    tasks = {"a.jsonl": random_rows(1, 5), "b.jsonl": random_rows(2, 3)}
    rules = [{"prefix": "a", "repeat": 10}]
    result, _ = run_both(tmp_path, tasks, rules, 1000, epochs=2)
    kept = result.global_stats.rows
    assert result.epoch_rows[0] > kept


def test_zero_rows_after_filtering_is_an_error_naming_what_emptied_the_epochs(tmp_path):
    # data_io writes empty epochs here and exits 0; an empty output never replaces another.
    tasks = {"a.jsonl": [(30, 5), (10, 1)], "b.jsonl": []}
    tokenized = write_tokenized(tmp_path / "tok", tasks)
    rules = write_rules(tmp_path / "rules.yaml", [{"prefix": "a", "long_context": "drop"}])
    config = make_config(
        tokenized_path=tokenized,
        output_path=tmp_path / "out",
        prefix_config_path=rules,
        epochs=2,
        context_size=20,
    )
    with pytest.raises(SamplingError) as raised:
        sample_tokenized(config)
    assert str(raised.value) == (
        "every epoch would be empty: of 2 rows none is left to sample (1 longer than "
        "context_size=20 (long_context: drop); 1 with fewer than min_resp_length=2 response "
        "tokens); nothing was written, any previous output is kept"
    )
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- pure rules


def test_token_dtype_boundaries():
    assert token_dtype(1) == np.uint8
    assert token_dtype(255) == np.uint8
    assert token_dtype(256) == np.uint16
    assert token_dtype(65535) == np.uint16
    assert token_dtype(65536) == np.int32
    assert token_dtype(151_665) == np.int32
    assert token_dtype(None) == np.int32


def test_segment_sums_over_bounds_with_empty_segments():
    bounds = bounds_of([2, 0, 3, 0])
    assert bounds.tolist() == [0, 2, 2, 5, 5]
    values = np.array([1, 2, 10, 20, 30], dtype=np.int64)
    assert segment_sums(values, bounds).tolist() == [3, 0, 60, 0]
    assert segment_sums(np.array([True, False, True, True, False]), bounds).tolist() == [1, 0, 2, 0]
    assert segment_sums(np.empty(0, dtype=np.int64), bounds_of([0, 0])).tolist() == [0, 0]


def test_one_span_rule_for_tokenized_folders_and_sampled_epochs():
    """A task's rows lie back to back; a sampled epoch's rows may come in any order and end
    early (truncated), but stay within tokens.npy with each response after its instruction."""
    spans = [np.array(values, dtype=np.int64) for values in ([0, 5], [3, 2], [3, 7], [2, 1])]
    assert span_layout_problem(*spans, 8) is None
    assert epoch_span_problem(*spans, 8) is None
    shuffled_truncated = [np.array(v, dtype=np.int64) for v in ([5, 0], [2, 3], [7, 3], [1, 1])]
    assert epoch_span_problem(*shuffled_truncated, 8) is None
    assert span_layout_problem(*shuffled_truncated, 8) == (
        "row 0: starts at 5, not at 0; rows lie back to back in tokens.npy"
    )
    detached = [np.array(v, dtype=np.int64) for v in ([0, 5], [3, 2], [4, 7], [1, 1])]
    assert epoch_span_problem(*detached, 8) == (
        "row 0: the response starts at 4, not where its instruction ends (3)"
    )
    assert epoch_span_problem(*spans, 7) == (
        "row 1: resp span ends at 8, past the 7 tokens of tokens.npy"
    )


def test_rows_per_epoch():
    assert rows_per_epoch(SamplingRule(), 7) == 7
    assert rows_per_epoch(SamplingRule(max_per_file=5), 7) == 5
    assert rows_per_epoch(SamplingRule(max_per_file=50), 7) == 7
    assert rows_per_epoch(SamplingRule(max_per_file=5, repeat=3), 7) == 15
    assert rows_per_epoch(SamplingRule(max_per_file=5), 0) == 0


def test_filter_rows_truncate_and_drop():
    inst = np.array([3, 8, 10, 12, 2], dtype=np.int64)
    resp = np.array([4, 5, 1, 3, 1], dtype=np.int64)
    spans = Spans(np.arange(5) * 100, inst, np.arange(5) * 100 + inst, resp)
    kept, counts = filter_rows(spans, SamplingRule(long_context="truncate"), 10, 2)
    # row 2: resp 1 < 2 (short); row 3 and row 1... allowed = 10 - min(inst, 10)
    assert kept.resp_len.tolist() == [4, 2]
    assert kept.inst_start.tolist() == [0, 100]
    assert (counts.kept, counts.dropped_short, counts.dropped_long, counts.truncated) == (
        2,
        2,
        1,
        1,
    )
    kept, counts = filter_rows(spans, SamplingRule(long_context="drop"), 10, 2)
    assert kept.inst_start.tolist() == [0]
    assert (counts.kept, counts.dropped_short, counts.dropped_long, counts.truncated) == (
        1,
        2,
        2,
        0,
    )


# --------------------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (dict(epochs=0), "epochs"),
        (dict(context_size=1), "context_size"),
        (dict(seed=-1), "seed"),
        (dict(min_resp_length=-1), "min_resp_length"),
        (dict(epochs="3"), "epochs"),
        (dict(epochs=2.5), "epochs"),
        (dict(epoch=3), "epoch"),
        (dict(output_path=""), "output_path"),
    ],
)
def test_config_validation(tmp_path, values, message):
    base = dict(tokenized_path=tmp_path, output_path=tmp_path / "o", prefix_config_path=tmp_path)
    with pytest.raises(SamplingError, match=message):
        make_config(**{**base, **values})


def _good_setup(tmp_path):
    tokenized = write_tokenized(
        tmp_path / "tok", {"a.jsonl": random_rows(1, 4), "b.jsonl": random_rows(2, 3)}
    )
    rules = write_rules(tmp_path / "rules.yaml", [{"prefix": "a", "repeat": 2}])
    return make_config(
        tokenized_path=tokenized, output_path=tmp_path / "out", prefix_config_path=rules, epochs=1
    )


def _corrupt(kind: str, config: SamplingConfig) -> str:
    """Break a good setup in one way; return a fragment the error must contain."""
    task = config.tokenized_path / "a.jsonl"
    info = config.tokenized_path / "tokenizer_info.json"
    if kind == "missing-tokenized":
        import shutil

        shutil.rmtree(config.tokenized_path)
        return "not a directory"
    if kind == "missing-tokenizer-info":
        info.unlink()
        return "tokenizer_info.json: missing"
    if kind == "bad-tokenizer-info":
        info.write_text("{not json")
        return "not valid JSON"
    if kind == "tokenizer-info-not-object":
        info.write_text("[1, 2]")
        return "expected a JSON object"
    if kind == "vocab-size-string":
        info.write_text(json.dumps({"vocab_size": "1000"}))
        return "vocab_size must be a number"
    if kind == "missing-array":
        (task / "resp_len.npy").unlink()
        return "resp_len.npy: missing"
    if kind == "not-npy":
        (task / "inst_len.npy").write_bytes(b"garbage")
        return "inst_len.npy: not a readable .npy"
    if kind == "float-array":
        np.save(task / "inst_len.npy", np.ones(4))
        return "1-D integer array"
    if kind == "two-dimensional":
        np.save(task / "tokens.npy", np.zeros((2, 2), dtype="<u4"))
        return "1-D integer array"
    if kind == "mismatched-lengths":
        np.save(task / "resp_len.npy", np.load(task / "resp_len.npy")[:3])
        return "different lengths"
    if kind == "token-count":
        np.save(task / "tokens.npy", np.append(np.load(task / "tokens.npy"), np.uint32(1)))
        return "spans cover"
    if kind == "span-past-end":
        starts = np.load(task / "resp_start.npy")
        starts[-1] += 1
        np.save(task / "resp_start.npy", starts)
        return "past the"
    if kind == "overlapping-spans":
        # Row 1 moved back one token: the lengths still add up to the token count.
        for name in ("inst_start", "resp_start"):
            starts = np.load(task / f"{name}.npy")
            starts[1] -= 1
            np.save(task / f"{name}.npy", starts)
        return "row 1: starts at"
    if kind == "detached-response":
        starts = np.load(task / "resp_start.npy")
        starts[0] += 1
        np.save(task / "resp_start.npy", starts)
        return "row 0: the response starts at"
    if kind == "negative":
        np.save(task / "inst_start.npy", np.array([0, -1, 2, 3], dtype=np.int64))
        return "negative"
    if kind == "uint64-past-int64":
        # Read as int64 without a copy, 2**63 + 5 turns negative: still refused, by value.
        lengths = np.load(task / "inst_len.npy").astype(np.uint64)
        lengths[1] = 2**63 + 5
        np.save(task / "inst_len.npy", lengths)
        return f"value {2**63 + 5} exceeds"
    if kind == "missing-prefix-config":
        config.prefix_config_path.unlink()
        return "prefix config not found"
    if kind == "malformed-prefix-config":
        config.prefix_config_path.write_text("- prefix: a\n  repeat: lots\n")
        return "rule 0"
    if kind == "unknown-rule-field":
        config.prefix_config_path.write_text("- prefix: a\n  max_per_fil: 3\n")
        return "max_per_fil"
    if kind == "no-tasks":
        import shutil

        for child in config.tokenized_path.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
        return "no task folders"
    if kind == "foreign-output":
        config.output_path.mkdir()
        (config.output_path / "notes.txt").write_text("mine")
        return "not a sampled output"
    if kind == "output-is-file":
        config.output_path.write_text("x")
        return "not a directory"
    raise AssertionError(kind)


BAD_KINDS = [
    "missing-tokenized",
    "missing-tokenizer-info",
    "bad-tokenizer-info",
    "tokenizer-info-not-object",
    "vocab-size-string",
    "missing-array",
    "not-npy",
    "float-array",
    "two-dimensional",
    "mismatched-lengths",
    "token-count",
    "span-past-end",
    "overlapping-spans",
    "detached-response",
    "negative",
    "uint64-past-int64",
    "missing-prefix-config",
    "malformed-prefix-config",
    "unknown-rule-field",
    "no-tasks",
    "foreign-output",
    "output-is-file",
]


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_bad_inputs_give_clear_errors(tmp_path, kind):
    config = _good_setup(tmp_path)
    fragment = _corrupt(kind, config)
    with pytest.raises(SamplingError, match=re.escape(fragment)):
        sample_tokenized(config)
    if kind not in ("foreign-output", "output-is-file"):
        assert not config.output_path.exists()


def test_output_inside_tokenized_root_is_refused(tmp_path):
    config = _good_setup(tmp_path)
    nested = config.model_copy(update={"output_path": config.tokenized_path / "sampled"})
    with pytest.raises(SamplingError, match="must not contain each other"):
        sample_tokenized(nested)


def test_ids_that_do_not_fit_the_dtype_are_an_error_never_wrapped(tmp_path):
    config = _good_setup(tmp_path)
    task = config.tokenized_path / "a.jsonl"
    tokens = np.load(task / "tokens.npy")
    tokens[0] = 70_000
    np.save(task / "tokens.npy", tokens)
    with pytest.raises(SamplingError, match="token id 70,000; ids are never wrapped"):
        sample_tokenized(config)
    assert not config.output_path.exists()


def test_a_bad_span_file_stops_the_token_copy_and_leaves_nothing(tmp_path, monkeypatch):
    # The tokens are copied while the spans are read; a bad span file must stop that copy
    # rather than wait for it, and leave neither an output nor a staged folder.
    tasks = {f"t{i:02d}.jsonl": random_rows(i, 300, 60, 60) for i in range(8)}
    tokenized = write_tokenized(tmp_path / "tok", tasks)
    (tokenized / "t07.jsonl" / "inst_len.npy").write_bytes(b"garbage")
    rules = write_rules(tmp_path / "rules.yaml", [])
    monkeypatch.setattr(sampled_arrays, "COPY_BLOCK", 1)  # a slow copy: one token per block
    ended: list[BaseException | None] = []
    real_copy = sampling.concatenate_tokens

    def watched_copy(*args, **kwargs):
        try:
            result = real_copy(*args, **kwargs)
        except BaseException as exc:
            ended.append(exc)
            raise
        ended.append(None)
        return result

    monkeypatch.setattr(sampling, "concatenate_tokens", watched_copy)
    config = make_config(
        tokenized_path=tokenized, output_path=tmp_path / "out", prefix_config_path=rules
    )
    with pytest.raises(SamplingError, match=r"t07.jsonl/inst_len.npy: not a readable .npy"):
        sample_tokenized(config)
    assert len(ended) == 1 and isinstance(ended[0], sampled_arrays.CopyStopped)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rules.yaml", "tok"]
