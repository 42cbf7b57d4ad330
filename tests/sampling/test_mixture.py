"""Token-budget mixtures (issue 20, part 3): the ``mixture:`` section of prefix_config.yaml.

Rows within a task all have the same length here, so a task's tokens are its rows times one
number and achieved token figures can be checked exactly against the allocation.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from support.mixture_config import RULES, TASKS, write_config
from support.tokenized_trees import tree_bytes, write_tokenized

from hrm_assets.sampling.analytics import render_data_io_report, render_report
from hrm_assets.sampling.mixture.allocation import (
    MixtureAllocationError,
    TaskSupply,
    allocate_mixture,
    largest_remainders,
    temperature_shares,
)
from hrm_assets.sampling.mixture.config import (
    OTHERS_GROUP,
    MixtureConfigError,
    Phase,
    effective_phases,
    load_mixture,
)
from hrm_assets.sampling.mixture.draw import phase_seed
from hrm_assets.sampling.prefix_config import load_prefix_rules
from hrm_assets.sampling.sampler import SamplingError, make_config, sample_tokenized

# Rows per epoch each task's rule allows, and its tokens per row.
CAPACITY = {"a__1.jsonl": 30, "a__2.jsonl": 20, "b.jsonl": 60, "c.jsonl": 10}
ROW_TOKENS = {name: inst + resp for name, (_, inst, resp) in TASKS.items()}
GROUP_OF = {"a__1.jsonl": "a__", "a__2.jsonl": "a__", "b.jsonl": "b.jsonl", "c.jsonl": "c.jsonl"}


@pytest.fixture
def tokenized(tmp_path) -> Path:
    return write_tokenized(
        tmp_path / "tok",
        {name: [(inst, resp)] * rows for name, (rows, inst, resp) in TASKS.items()},
    )


def run(tmp_path: Path, tokenized: Path, mixture: dict | None, name="out", **settings):
    config = make_config(
        tokenized_path=tokenized,
        output_path=tmp_path / name,
        prefix_config_path=write_config(tmp_path / f"{name}.yaml", mixture),
        **{"epochs": 4, "context_size": 64, **settings},
    )
    return sample_tokenized(config)


def epoch_task_rows(output: Path, epoch: int) -> dict[str, int]:
    """Rows of each task in ``epoch_N``, told apart by where their spans start in tokens.npy."""
    starts = np.load(output / f"epoch_{epoch}" / "inst_start.npy")
    offsets, names, position = [], [], 0
    for name, (rows, inst, resp) in sorted(TASKS.items()):
        offsets.append(position)
        names.append(name)
        position += rows * (inst + resp)
    task_index = np.searchsorted(offsets, starts, side="right") - 1
    return {name: int(np.count_nonzero(task_index == i)) for i, name in enumerate(names)}


def exact_quotas(weights: dict[str, float], temperature: float, budget: int) -> dict[str, float]:
    """The allocation's exact rows per task, computed here independently of it."""
    powered = {group: weight ** (1 / temperature) for group, weight in weights.items()}
    total = sum(powered.values())
    quotas = {}
    for group, value in powered.items():
        target = budget * value / total
        members = [name for name in TASKS if GROUP_OF[name] == group]
        capacity = sum(CAPACITY[name] * ROW_TOKENS[name] for name in members)
        scale = min(1.0, target / capacity)
        for name in members:
            quotas[name] = scale * CAPACITY[name]
    return quotas


# --------------------------------------------------------------------------- shares


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0, 1e6])
def test_rows_within_one_of_the_exact_targets(tmp_path, tokenized, temperature):
    weights = {"a__": 5.0, "b.jsonl": 2.0, "c.jsonl": 1.0}
    budget = 500
    result = run(
        tmp_path,
        tokenized,
        {"tokens_per_epoch": budget, "weights": weights, "temperature": temperature},
    )
    quotas = exact_quotas(weights, temperature, budget)
    for epoch in range(4):
        rows = epoch_task_rows(result.output_path, epoch)
        for name, quota in quotas.items():
            assert abs(rows[name] - quota) < 1, (name, rows[name], quota)
            assert rows[name] <= CAPACITY[name]
    # Tokens are rows times the task's row length here, so the groups' achieved tokens are
    # within one row of their targets too (none of these budgets is short).
    phase = result.mixture.phases[0]
    for group in phase.groups:
        longest = max(ROW_TOKENS[n] for n in TASKS if GROUP_OF[n] == group.group)
        assert group.shortfall_tokens == 0
        assert abs(group.achieved_tokens - group.target_tokens) <= longest
        assert group.target_share == pytest.approx(
            weights[group.group] ** (1 / temperature)
            / sum(w ** (1 / temperature) for w in weights.values())
        )


def test_large_temperature_is_flat_and_small_is_peaked():
    flat = temperature_shares([8.0, 1.0, 0.0], 1e6)
    assert flat[0] == pytest.approx(0.5, abs=1e-5) and flat[2] == 0.0
    assert temperature_shares([8.0, 1.0], 1.0) == pytest.approx([8 / 9, 1 / 9])
    # T = 1/3 cubes the weights; a tiny T does not overflow.
    assert temperature_shares([2.0, 1.0], 1 / 3) == pytest.approx([8 / 9, 1 / 9])
    assert temperature_shares([1e30, 1.0], 1e-3) == pytest.approx([1.0, 0.0])


def test_largest_remainders_rounds_each_quota_up_or_down():
    assert largest_remainders([1.5, 1.5, 1.0], 4) == [2, 1, 1]  # tie: the earlier one
    assert largest_remainders([0.2, 0.7, 2.1], 3) == [0, 1, 2]
    assert largest_remainders([0.0, 3.0], 3) == [0, 3]


def test_unfillable_budget_is_reported_with_its_shortfall(tmp_path, tokenized):
    # c can give 10 rows of 20 tokens per epoch (repeat 1): 200 of its 500 target.
    result = run(
        tmp_path,
        tokenized,
        {"tokens_per_epoch": 1000, "weights": {"b.jsonl": 1, "c.jsonl": 1}, "others": 0},
    )
    groups = {g.group: g for g in result.mixture.phases[0].groups}
    c = groups["c.jsonl"]
    assert (c.target_tokens, c.capacity_tokens, c.achieved_tokens) == (500, 200, 200)
    assert c.shortfall_tokens == 300
    assert c.achieved_rows == 10  # all of it, never repeated: the rule has repeat 1
    b = groups["b.jsonl"]
    assert (b.achieved_rows, b.shortfall_tokens) == (50, 0)  # repeat 2: up to 60 of 30 rows
    assert groups[OTHERS_GROUP].achieved_rows == 0
    assert any("'c.jsonl' can give 200 tokens" in w for w in result.warnings)
    report = render_report(result)
    assert "### Mixture" in report
    assert "| **c.jsonl** | 1 | 50.00% |" in report and "| 300 |" in report


# --------------------------------------------------------------------------- phases


def test_phases_change_the_mix_at_exactly_their_epoch(tmp_path, tokenized):
    mixture = {
        "tokens_per_epoch": 400,
        "weights": {"a__": 1, "b.jsonl": 1, "c.jsonl": 0},
        "phases": [
            {"from_epoch": 2, "weights": {"c.jsonl": 2}},
            {"from_epoch": 4, "temperature": 1e6, "tokens_per_epoch": 300},
        ],
    }
    result = run(tmp_path, tokenized, mixture, epochs=6)
    rows = [epoch_task_rows(result.output_path, epoch) for epoch in range(6)]
    first, second, third = (
        exact_quotas({"a__": 1, "b.jsonl": 1, "c.jsonl": 0}, 1.0, 400),
        exact_quotas({"a__": 1, "b.jsonl": 1, "c.jsonl": 2}, 1.0, 400),
        exact_quotas({"a__": 1, "b.jsonl": 1, "c.jsonl": 2}, 1e6, 300),
    )
    for epoch, quotas in enumerate([first, first, second, second, third, third]):
        for name, quota in quotas.items():
            assert abs(rows[epoch][name] - quota) < 1, (epoch, name)
    assert rows[1]["c.jsonl"] == 0 and rows[2]["c.jsonl"] == 10  # its whole capacity
    summaries = result.mixture.phases
    assert [(p.first_epoch, p.last_epoch) for p in summaries] == [(0, 1), (2, 3), (4, 5)]
    assert result.epoch_rows == [sum(r.values()) for r in rows]
    assert result.mixture.phase_of_epoch(3).index == 1


def test_later_phase_draws_from_its_own_seed(tmp_path, tokenized):
    # The same mix in both phases: phase 0 is data_io's draw from the seed, phase 1 draws
    # from a seed derived from (seed, 1), so epoch 2 is not epoch 2 of a run without phases.
    mix = {"tokens_per_epoch": 300, "weights": {"a__": 1, "b.jsonl": 1, "c.jsonl": 1}}
    single = run(tmp_path, tokenized, mix, name="single")
    phased = run(tmp_path, tokenized, {**mix, "phases": [{"from_epoch": 2}]}, name="phased")
    for epoch in (0, 1):
        assert (single.output_path / f"epoch_{epoch}" / "inst_start.npy").read_bytes() == (
            phased.output_path / f"epoch_{epoch}" / "inst_start.npy"
        ).read_bytes()
    assert epoch_task_rows(single.output_path, 2) == epoch_task_rows(phased.output_path, 2)
    assert phase_seed(0, 0) == 0 and phase_seed(0, 1) != phase_seed(1, 1)


# --------------------------------------------------------------------------- no mixture


# The data card quotes the rules file verbatim and names the run's paths: it differs between
# runs from differently written rules files by design. Every other file is compared.
DATA_CARD_FILES = {"DATACARD.md", "datacard.json"}


def sha256_tree(root: Path) -> str:
    digest = hashlib.sha256()
    for name, data in sorted(tree_bytes(root).items()):
        if name in DATA_CARD_FILES:
            continue
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()


def test_without_mixture_every_byte_is_todays(tmp_path, tokenized):
    """A rules file without ``mixture:``, as data_io's list or as a mapping with only
    ``rules``, samples exactly what the plain list sampled: the same bytes in every file."""
    plain = run(tmp_path, tokenized, None, name="plain")
    as_mapping = tmp_path / "mapping.yaml"
    as_mapping.write_text(yaml.safe_dump({"rules": RULES}), encoding="utf-8")
    mapped = sample_tokenized(
        make_config(
            tokenized_path=tokenized,
            output_path=tmp_path / "mapped",
            prefix_config_path=as_mapping,
            epochs=4,
            context_size=64,
        )
    )
    assert plain.mixture is None and mapped.mixture is None
    assert sha256_tree(plain.output_path) == sha256_tree(mapped.output_path)
    assert "### Mixture" not in render_report(plain)
    # data_io's own draw, task by task: min(max_per_file, rows) * repeat rows.
    assert epoch_task_rows(plain.output_path, 0) == CAPACITY


def test_data_io_part_of_the_report_is_unchanged_by_a_mixture(tmp_path, tokenized):
    result = run(
        tmp_path, tokenized, {"tokens_per_epoch": 300, "weights": {"b.jsonl": 1}, "others": 1}
    )
    report = render_report(result)
    assert report.startswith(render_data_io_report(result))
    assert report.index("### Mixture") > report.index("### Epochs")


# --------------------------------------------------------------------------- determinism


def test_same_seed_same_bytes_other_seed_other_rows(tmp_path, tokenized):
    mix = {"tokens_per_epoch": 250, "weights": {"a__": 2, "b.jsonl": 1, "c.jsonl": 1}}
    phases = {**mix, "phases": [{"from_epoch": 1, "temperature": 3.0}]}
    one = run(tmp_path, tokenized, phases, name="one", seed=5)
    two = run(tmp_path, tokenized, phases, name="two", seed=5)
    other = run(tmp_path, tokenized, phases, name="other", seed=6)
    assert sha256_tree(one.output_path) == sha256_tree(two.output_path)
    # Another seed: the same counts per task, other rows and order.
    assert epoch_task_rows(one.output_path, 3) == epoch_task_rows(other.output_path, 3)
    assert (one.output_path / "epoch_3" / "inst_start.npy").read_bytes() != (
        other.output_path / "epoch_3" / "inst_start.npy"
    ).read_bytes()


def test_mixture_records_for_metadata_and_data_card(tmp_path, tokenized):
    result = run(
        tmp_path,
        tokenized,
        {"tokens_per_epoch": 300, "weights": {"a__": 1, "b.jsonl": 1, "c.jsonl": 1}},
    )
    records = result.mixture.records()
    assert [r["group"] for r in records] == ["a__", "b.jsonl", "c.jsonl"]
    for record in records:
        assert set(record) >= {
            "phase", "group", "target_share", "achieved_share", "target_tokens",
            "achieved_tokens", "target_rows", "achieved_rows", "shortfall_tokens",
        }  # fmt: skip
    assert sum(r["achieved_share"] for r in records) == pytest.approx(1.0)
    assert sum(r["target_share"] for r in records) == pytest.approx(1.0)


# --------------------------------------------------------------------------- validation


def mixture_error(tmp_path: Path, mixture, rules=RULES) -> str:
    path = write_config(tmp_path / "rules.yaml", mixture, rules)
    with pytest.raises(MixtureConfigError) as caught:
        load_mixture(path, load_prefix_rules(path))
    message = str(caught.value)
    assert message.startswith(f"{path}: mixture")
    return message


BASE = {"tokens_per_epoch": 9, "weights": {"a__": 1}}
INVALID = {
    "no-budget": ({"weights": {"a__": 1}}, "mixture.tokens_per_epoch: Field required"),
    "zero-budget": (
        {**BASE, "tokens_per_epoch": 0},
        "mixture.tokens_per_epoch: Input should be greater than or equal to 1 (got 0)",
    ),
    "text-budget": (
        {**BASE, "tokens_per_epoch": "9"},
        "mixture.tokens_per_epoch: Input should be a valid integer (got '9')",
    ),
    "no-weights": ({**BASE, "weights": {}}, "mixture.weights: Dictionary should have at least"),
    "negative-weight": (
        {**BASE, "weights": {"a__": -1}},
        "mixture.weights.a__: Input should be greater than or equal to 0 (got -1)",
    ),
    "bool-weight": (
        {**BASE, "weights": {"a__": True}},
        "mixture.weights.a__: Input should be a valid number (got True)",
    ),
    "unknown-prefix": (
        {**BASE, "weights": {"a_": 1}},
        "mixture.weights.a_: no rule has this prefix",
    ),
    "all-zero": ({**BASE, "weights": {"a__": 0}}, "mixture.weights: every weight is 0"),
    "zero-temperature": (
        {**BASE, "temperature": 0},
        "mixture.temperature: Input should be greater than 0 (got 0)",
    ),
    "misspelt-key": (
        {**BASE, "temprature": 2},
        "mixture.temprature: Extra inputs are not permitted",
    ),
    "bad-group-by": (
        {**BASE, "group_by": "file"},
        "mixture.group_by: Input should be 'rule' or 'source'",
    ),
    "phase-without-start": (
        {**BASE, "phases": [{"weights": {"a__": 2}}]},
        "mixture.phases[0].from_epoch: Field required",
    ),
    "phase-at-0": (
        {**BASE, "phases": [{"from_epoch": 0}]},
        "mixture.phases[0].from_epoch: Input should be greater than or equal to 1",
    ),
    "phases-out-of-order": (
        {**BASE, "phases": [{"from_epoch": 3}, {"from_epoch": 3}]},
        "mixture.phases[1].from_epoch: 3 must be after the previous phase's start",
    ),
    "phase-unknown-prefix": (
        {**BASE, "phases": [{"from_epoch": 3, "weights": {"b": 1}}]},
        "mixture.phases[0].weights.b: no rule has this prefix",
    ),
    "phase-all-zero": (
        {**BASE, "phases": [{"from_epoch": 3, "weights": {"a__": 0}}]},
        "mixture.phases[0].weights: every weight is 0",
    ),
    "not-a-mapping": ([1, 2], "mixture: expected a mapping, got list"),
}


@pytest.mark.parametrize("kind", sorted(INVALID))
def test_validation_errors_name_the_key(tmp_path, kind):
    mixture, expected = INVALID[kind]
    assert expected in mixture_error(tmp_path, mixture)


def test_rules_file_as_a_mapping_is_checked(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("rules: []\nmixtures: {}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="unknown top-level key 'mixtures'"):
        load_prefix_rules(path)
    path.write_text("mixture: {tokens_per_epoch: 1, weights: {x: 1}}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="a mapping needs the list of rules under 'rules'"):
        load_prefix_rules(path)
    path.write_text(yaml.safe_dump({"rules": RULES}), encoding="utf-8")
    assert [rule.prefix for rule in load_prefix_rules(path)] == ["a__", "b.jsonl", "c.jsonl"]
    assert load_mixture(path, load_prefix_rules(path)) is None


def test_phase_past_the_last_epoch_is_an_error(tmp_path, tokenized):
    mixture = {"tokens_per_epoch": 9, "weights": {"a__": 1}, "others": 1,
               "phases": [{"from_epoch": 4}]}  # fmt: skip
    with pytest.raises(
        SamplingError, match=r"mixture.phases\[0\].from_epoch: 4 is not below epochs=4"
    ):
        run(tmp_path, tokenized, mixture)
    assert not (tmp_path / "out").exists()


def test_tasks_in_no_group_are_an_error_naming_them(tmp_path, tokenized):
    with pytest.raises(SamplingError, match=r"2 task\(s\) are in no group .*: b.jsonl, c.jsonl; "):
        run(tmp_path, tokenized, {"tokens_per_epoch": 9, "weights": {"a__": 1}})
    assert not (tmp_path / "out").exists()


def test_phases_inherit_what_they_do_not_name(tmp_path):
    path = write_config(
        tmp_path / "rules.yaml",
        {
            "tokens_per_epoch": 100,
            "weights": {"a__": 1, "b.jsonl": 2},
            "temperature": 2.0,
            "phases": [
                {"from_epoch": 3, "weights": {"b.jsonl": 5}},
                {"from_epoch": 5, "others": 1},
            ],
        },
    )
    phases = effective_phases(load_mixture(path, load_prefix_rules(path)))
    assert [
        (p.first_epoch, p.tokens_per_epoch, p.temperature, p.weights, p.others) for p in phases
    ] == [
        (0, 100, 2.0, {"a__": 1, "b.jsonl": 2}, None),
        (3, 100, 2.0, {"a__": 1, "b.jsonl": 5}, None),
        (5, 100, 2.0, {"a__": 1, "b.jsonl": 5}, 1),
    ]


def test_allocation_keeps_the_rules_proportions_inside_a_group():
    phase = Phase(0, 0, 1000, 1.0, {"g": 1.0}, None)
    tasks = [
        TaskSupply("x", "g", capacity=30, rows=30, tokens=300),
        TaskSupply("y", "g", capacity=10, rows=5, tokens=100),  # repeat 2
    ]
    plan = allocate_mixture([phase], tasks, epochs=1)
    # capacity 30*10 + 10*20 = 500 tokens < 1000: all of it, the rest reported.
    assert plan.phases[0].task_rows == [30, 10]
    assert plan.phases[0].groups[0].shortfall_tokens == 500
    half = Phase(0, 0, 250, 1.0, {"g": 1.0}, None)
    plan = allocate_mixture([half], tasks, epochs=1)
    assert plan.phases[0].task_quotas == [15.0, 5.0]
    assert math.isclose(plan.phases[0].groups[0].expected_tokens, 250)
    with pytest.raises(MixtureAllocationError, match="1 task"):
        allocate_mixture([half], [*tasks, TaskSupply("z", None, 1, 1, 1)], epochs=1)


# --------------------------------------------------------------------------- Dagster


def test_sampled_asset_shows_the_mixture_table(tmp_path):
    import dagster as dg

    from hrm_assets.defs.common.resources import DataPaths
    from hrm_assets.defs.sampled.assets import build_sampled_asset
    from hrm_assets.sampling.training_nodes import TrainingNode

    mixture = {"tokens_per_epoch": 300, "weights": {"a__": 1, "b.jsonl": 1, "c.jsonl": 1}}
    paths = DataPaths(
        data_root=str(tmp_path / "data"),
        prefix_config_path=str(write_config(tmp_path / "prefix_config.yaml", mixture)),
    )
    write_tokenized(
        paths.tokenized_root,
        {name: [(inst, resp)] * rows for name, (rows, inst, resp) in TASKS.items()},
    )
    with dg.instance_for_test() as instance:
        runs = [
            dg.materialize(
                [build_sampled_asset(TrainingNode(name="mix"))],
                instance=instance,
                resources={"data_paths": paths},
                run_config={"ops": {"sampled__mix": {"config": {"epochs": 2, "context_size": 64}}}},
            )
            for _ in range(2)
        ]
    assert all(done.success for done in runs)
    first, again = (done.asset_materializations_for_node("sampled__mix")[0] for done in runs)
    # The build key (inputs, settings, sampler and mixture code) is stable: kept, not redone.
    assert (first.metadata["resampled"].value, again.metadata["resampled"].value) == (True, False)
    metadata = again.metadata
    records = metadata["mixture"].value.records
    assert [record.data["group"] for record in records] == ["a__", "b.jsonl", "c.jsonl"]
    assert sum(record.data["achieved_share"] for record in records) == pytest.approx(1.0)
    assert "### Mixture" in metadata["analytics"].value


def test_group_by_source_weights_registered_sources(tmp_path):
    # Tokenized folders of three registered sources (flan writes one file per task) and one
    # file no source writes, which falls to the others.
    tasks = {
        "flan__cot_fsopt_data__t1.parquet": (20, 3, 7),
        "flan__cot_fsopt_data__t2.parquet": (20, 3, 7),
        "gsm8k_train.jsonl": (30, 2, 8),
        "omnimath.jsonl": (10, 5, 5),
        "mine.jsonl": (10, 4, 6),
    }
    tokenized = write_tokenized(
        tmp_path / "tok", {name: [(i, r)] * rows for name, (rows, i, r) in tasks.items()}
    )
    mixture = {
        "tokens_per_epoch": 200,
        "group_by": "source",
        "weights": {"flan": 2, "gsm8k_train": 1, "omnimath": 1},
        "others": 0,
    }
    rules_path = write_config(tmp_path / "rules.yaml", mixture, rules=[])
    result = sample_tokenized(
        make_config(
            tokenized_path=tokenized,
            output_path=tmp_path / "out",
            prefix_config_path=rules_path,
            epochs=1,
            context_size=64,
        )
    )
    groups = {g.group: g for g in result.mixture.phases[0].groups}
    assert (groups["flan"].tasks, groups["flan"].achieved_tokens) == (2, 100)
    assert groups["gsm8k_train"].achieved_rows == 5
    assert groups["omnimath"].achieved_rows == 5
    assert (groups[OTHERS_GROUP].tasks, groups[OTHERS_GROUP].achieved_rows) == (1, 0)

    rules_path.write_text(
        yaml.safe_dump({"rules": [], "mixture": {**mixture, "weights": {"gsm8k": 1}}}),
        encoding="utf-8",
    )
    with pytest.raises(SamplingError, match="mixture.weights.gsm8k: no registered source"):
        sample_tokenized(
            make_config(
                tokenized_path=tokenized,
                output_path=tmp_path / "out",
                prefix_config_path=rules_path,
                epochs=1,
                context_size=64,
            )
        )


# --------------------------------------------------------------------------- command line


def test_hrm_sample_prints_the_mixture_and_verifies(tmp_path, tokenized, capsys):
    from hrm_assets.common.manifest import verify_folder
    from hrm_assets.sampling import cli as sample

    mixture = {
        "tokens_per_epoch": 300,
        "weights": {"a__": 1, "b.jsonl": 1, "c.jsonl": 1},
        "phases": [{"from_epoch": 1, "weights": {"a__": 4}}],
    }
    rules = write_config(tmp_path / "rules.yaml", mixture)
    args = [f"tokenized_path={tokenized}", f"prefix_config_path={rules}", "context_size=64"]
    status = sample.main([*args, f"output_path={tmp_path / 'out'}", "epochs=2"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "**Phase 1** (epoch_1 to epoch_1)" in captured.out
    assert verify_folder(tmp_path / "out").ok
    # A phase that would never apply: one error line, nothing written.
    status = sample.main([*args, f"output_path={tmp_path / 'short'}", "epochs=1"])
    captured = capsys.readouterr()
    assert status == 1 and captured.out == ""
    assert captured.err.startswith(f"hrm-sample: error: {rules}: mixture.phases[0].from_epoch: 1")
    assert not (tmp_path / "short").exists()


def test_mixture_code_version_only_for_rules_with_a_mixture(tmp_path):
    from hrm_assets.sampling.mixture.code_version import has_mixture, mixture_code_version

    assert not has_mixture(write_config(tmp_path / "plain.yaml", None))
    assert has_mixture(write_config(tmp_path / "mixed.yaml", dict(BASE)))
    version = mixture_code_version()
    assert len(version) == 64 and version == mixture_code_version()


def test_numpy_draw_writes_the_rust_draws_bytes(tmp_path, tokenized, monkeypatch):
    from hrm_assets.sampling import epoch_draw

    mixture = {
        "tokens_per_epoch": 350,
        "weights": {"a__": 2, "b.jsonl": 1, "c.jsonl": 1},
        "phases": [{"from_epoch": 2, "temperature": 4.0}],
    }
    rust = run(tmp_path, tokenized, mixture, name="rust", seed=3)
    monkeypatch.setattr(epoch_draw, "rust_draw_matches_numpy", lambda: False)
    numpy = run(tmp_path, tokenized, mixture, name="numpy", seed=3)
    assert sha256_tree(rust.output_path) == sha256_tree(numpy.output_path)
    assert rust.mixture == numpy.mixture


def test_budget_above_every_capacity_draws_data_ios_epochs(tmp_path, tokenized):
    """Every group at its rules' capacity asks for data_io's rows per task, and phase 0 draws
    them as data_io does: the epochs are data_io's, byte for byte (only shortfalls reported)."""
    plain = run(tmp_path, tokenized, None, name="plain")
    mixture = {"tokens_per_epoch": 10**12, "weights": {"a__": 1, "b.jsonl": 5, "c.jsonl": 9}}
    full = run(tmp_path, tokenized, mixture, name="full")
    assert epoch_task_rows(full.output_path, 0) == CAPACITY
    assert sha256_tree(full.output_path) == sha256_tree(plain.output_path)
    assert all(group.shortfall_tokens > 0 for group in full.mixture.phases[0].groups)
