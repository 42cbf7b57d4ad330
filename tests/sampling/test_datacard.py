"""The data card of a sampled folder (``hrm_assets.sampling.datacard``): byte-identical for the same
inputs in any output folder, totals equal to the analytics report's, every file's SHA-256 the
file's own, the Hub ids of Hub sources, an optional mixture section, and the sampled asset's
metadata."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import types
from pathlib import Path

import dagster as dg
import pytest
from support.sampled_asset import OP_NAME, data_paths, materialize  # noqa: F401 (a fixture)
from support.tokenized_trees import MIXED, MIXED_RULES, write_rules, write_tokenized

from hrm_assets.cleaning.sources import SOURCES, get_source
from hrm_assets.common.hashing import file_sha256
from hrm_assets.common.layout import safe_name
from hrm_assets.common.manifest import array_files, read_manifest
from hrm_assets.sampling import cli
from hrm_assets.sampling import sampler as sampling
from hrm_assets.sampling.analytics import epoch_records, summary_figures, task_records
from hrm_assets.sampling.datacard import (
    CARD_FILES,
    DATACARD_JSON,
    DATACARD_MARKDOWN,
    DataCardError,
    build_data_card,
    canonical_json_bytes,
    read_prefix_config,
    render_markdown,
    share_chart_png,
    write_data_card,
)
from hrm_assets.sampling.datacard.code_version import sampling_code_version
from hrm_assets.sampling.datacard.task_sources import sources_of_tasks
from hrm_assets.sampling.datacard.verification import verify_sampled_folder
from hrm_assets.sampling.output_folder import unproven_paths
from hrm_assets.sampling.prefix_config import load_prefix_rules
from hrm_assets.sampling.sampler import SamplingError, make_config, sample_tokenized
from hrm_assets.tokenization.partitioning import relative_paths_for

SETTINGS = dict(epochs=3, context_size=60, seed=5)


@pytest.fixture
def inputs(tmp_path) -> tuple[Path, Path]:
    """A tokenized root whose task names include Hub sources' files (gsm8k, FLAN, SYNTH) and
    files no source writes, and the rules of tests/sampling/test_sampling.py's mixed case."""
    tokenized = write_tokenized(tmp_path / "tokenized", MIXED, 1000)
    return tokenized, write_rules(tmp_path / "prefix_config.yaml", MIXED_RULES)


def sample(inputs: tuple[Path, Path], output: Path, **settings) -> sampling.SamplingResult:
    tokenized, rules = inputs
    config = make_config(
        tokenized_path=tokenized,
        output_path=output,
        prefix_config_path=rules,
        **{**SETTINGS, **settings},
    )
    return sample_tokenized(config)


def read_card(folder: Path) -> dict:
    return json.loads((folder / DATACARD_JSON).read_bytes())


def card_bytes(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in CARD_FILES}


def test_the_card_is_byte_identical_across_runs_and_output_folders(tmp_path, inputs):
    sample(inputs, tmp_path / "first")
    sample(inputs, tmp_path / "elsewhere" / "second")
    sample(inputs, tmp_path / "first")  # replaces its own output, card included
    first, second = card_bytes(tmp_path / "first"), card_bytes(tmp_path / "elsewhere" / "second")
    assert first == second
    for data in first.values():
        assert str(tmp_path).encode() not in data  # no machine path
    # Another seed gives another card (its figures are the run's own).
    sample(inputs, tmp_path / "seed6", seed=6)
    assert card_bytes(tmp_path / "seed6") != first


def test_totals_equal_the_analytics_report(tmp_path, inputs):
    result = sample(inputs, tmp_path / "out")
    card = read_card(tmp_path / "out")
    figures, totals = summary_figures(result), card["totals"]
    same = {
        "source_rows": "rows_available",
        "rows": "rows_kept",
        "tokens": "tokens_kept",
        "rows_dropped": "rows_dropped",
        "rows_truncated": "rows_truncated",
        "rows_short_after_truncate": "rows_short_after_truncate",
        "rows_dropped_short_after_truncate": "rows_dropped_short_after_truncate",
        "rows_per_epoch": "rows_per_epoch",
        "sampled_rows": "sampled_rows",
        "sampled_tokens": "sampled_tokens",
        "unique_rows": "unique_rows",
        "unique_tokens": "unique_tokens",
    }
    assert {key: figures[key] for key in same} == {key: totals[name] for key, name in same.items()}
    assert totals["rows_dropped"] > 0 and totals["rows_truncated"] > 0  # the case exercises both
    assert totals["tokens_available"] == figures["tokens_npy_tokens"]
    assert card["sampling"]["total_length"] == figures["total_length"]
    assert card["epochs"] == epoch_records(result)

    # Per task: the report's records, rule and share of the mix alike.
    assert [task["name"] for task in card["tasks"]] == [r["task"] for r in task_records(result)]
    for task, record in zip(card["tasks"], task_records(result), strict=True):
        assert task["rule"] == {
            "prefix": record["prefix"],
            "max_per_file": record["max_per_file"],
            "repeat": record["repeat"],
            "long_context": record["long_context"],
        }
        for key in ("rows_per_epoch", "rows_dropped", "rows_truncated", "sampled_tokens"):
            assert task[key] == record[key], (task["name"], key)
        # Canonical JSON keeps six decimals.
        assert math.isclose(task["token_share"], record["sampled_token_share"], abs_tol=1e-6)

    # Sources partition the tasks: their figures add up to the totals, their shares to one.
    for key in ("rows_available", "tokens_available", "sampled_tokens", "rows_dropped"):
        assert sum(source[key] for source in card["sources"]) == totals[key]
    assert math.isclose(sum(s["token_share"] for s in card["sources"]), 1.0, abs_tol=1e-5)

    markdown = (tmp_path / "out" / DATACARD_MARKDOWN).read_text(encoding="utf-8")
    assert f"| Tokens sampled, all epochs | {figures['sampled_tokens']:,} |" in markdown
    assert f"| Rows dropped | {figures['rows_dropped']:,} |" in markdown
    assert markdown == render_markdown(card)


def test_every_listed_file_has_the_recorded_sha256(tmp_path, inputs):
    sample(inputs, tmp_path / "out")
    out = tmp_path / "out"
    card = read_card(out)
    files = card["outputs"]["files"]
    assert files == read_manifest(out)["files"]
    for name, entry in files.items():
        assert file_sha256(out / name) == entry["sha256"], name
        assert (out / name).stat().st_size == entry["size"], name
    assert set(array_files(out)) <= set(files)  # every array, epochs included
    assert {"tokens.npy", "metadata.json", "epoch_2/resp_len.npy"} <= set(files)
    assert card["outputs"]["manifest_sha256"] == file_sha256(out / "manifest.json")
    # The card is the sampler's own: hrm-verify passes, and the next run may replace it.
    assert verify_sampled_folder(out).ok
    assert unproven_paths(out) == []


def test_hub_sources_are_named_with_their_dataset_ids(tmp_path, inputs):
    result = sample(inputs, tmp_path / "out")
    card = read_card(tmp_path / "out")
    sources = {source["name"]: source for source in card["sources"]}
    assert sources["gsm8k_train"]["hub_id"] == "openai/gsm8k"
    assert sources["gsm8k_train"]["hub_split"] == "train"
    assert sources["gsm8k_train"]["hub_revision"] is None  # unpinned, as data_io loads
    assert sources["flan"]["hub_id"] == get_source("flan").hub_id
    assert sources["flan"]["tasks"] == 2
    assert sources[None]["hub_id"] is None  # files no source writes
    tasks = {task["name"]: task["source"] for task in card["tasks"]}
    assert tasks["gsm8k_train.jsonl"] == "gsm8k_train"
    assert tasks["zz_long.jsonl"] is None
    markdown = (tmp_path / "out" / DATACARD_MARKDOWN).read_text(encoding="utf-8")
    assert "| gsm8k_train | `openai/gsm8k` | unpinned (default branch) |" in markdown

    # A pinned revision is published.
    pinned = dataclasses.replace(get_source("gsm8k_train"), revision="e53f048")
    card = build_data_card(
        result,
        files={},
        manifest_sha256="0" * 64,
        prefix_config=read_prefix_config(inputs[1], load_prefix_rules(inputs[1])),
        tokenizer_sha256=None,
        code={"hrm_data": "test"},
        specs={**SOURCES, "gsm8k_train": pinned},
    )
    assert {s["name"]: s["hub_revision"] for s in card["sources"]}["gsm8k_train"] == "e53f048"
    assert "| gsm8k_train | `openai/gsm8k` | `e53f048` |" in render_markdown(card)


def test_task_sources_follow_the_cleaned_layout():
    assert sources_of_tasks(
        [
            "gsm8k_train.jsonl",  # a fixed output
            "flan__cot_fsopt_data__task1.parquet",  # a routed folder's file
            "Platypus__arb_math.jsonl",  # one of a routed source's listed outputs
            "flan__x.jsonl",  # not FLAN's format
            "notes.jsonl",
        ],
        SOURCES,
    ) == {
        "gsm8k_train.jsonl": "gsm8k_train",
        "flan__cot_fsopt_data__task1.parquet": "flan",
        "Platypus__arb_math.jsonl": "arb",
        "flan__x.jsonl": None,
        "notes.jsonl": None,
    }


def source_by_spellings(name: str) -> str | None:
    """The definition, slowly: the first registered source that writes any relative path
    whose tokenized folder name is ``name``."""
    spellings = relative_paths_for(name)
    return next((spec.name for spec in SOURCES.values() if any(map(spec.writes, spellings))), None)


def test_task_sources_agree_with_every_spelling_of_the_name():
    names = {safe_name(output) for spec in SOURCES.values() for output in spec.static_outputs}
    for spec in SOURCES.values():
        folder = safe_name(spec.output.rstrip("/"))
        names |= {
            f"{folder}__x.{spec.format}",
            f"{folder}___x__y.{spec.format}",
            f"{folder}__.{spec.format}",
            f"{folder}__x.txt",
            f"{folder}.{spec.format}",
        }
    names |= {"notes.jsonl", "a____b.jsonl", "__.parquet"}
    assert sources_of_tasks(sorted(names), SOURCES) == {
        name: source_by_spellings(name) for name in sorted(names)
    }


def test_prefix_config_and_settings_are_recorded(tmp_path, inputs):
    sample(inputs, tmp_path / "out", drop_short_after_truncate=True)
    card = read_card(tmp_path / "out")
    rules_path = inputs[1]
    assert card["prefix_config"]["file"] == "prefix_config.yaml"
    assert card["prefix_config"]["text"] == rules_path.read_text(encoding="utf-8")
    assert card["prefix_config"]["sha256"] == file_sha256(rules_path)
    assert card["prefix_config"]["rules"] == [r.model_dump() for r in load_prefix_rules(rules_path)]
    assert card["sampling"] == {
        "seed": 5,
        "epochs": 3,
        "context_size": 60,
        "min_resp_length": 2,
        "drop_short_after_truncate": True,
        "decontaminate": False,
        "dedup": False,
        "token_dtype": "uint16",
        "tokens_npy_tokens": card["totals"]["tokens_available"],
        "total_length": card["sampling"]["total_length"],
    }
    assert card["tokenizer"]["vocab_size"] == 1000
    assert card["tokenizer"]["boq"] == "<|im_start|>"
    assert card["tokenizer"]["sha256"] is None  # data_io's folders record none; none shipped
    assert card["code"]["sampling_sha256"] == sampling_code_version()
    markdown = (tmp_path / "out" / DATACARD_MARKDOWN).read_text(encoding="utf-8")
    assert "```yaml\n" + rules_path.read_text(encoding="utf-8") in markdown
    # A pipe inside code is escaped, so GitHub's table keeps its cells.
    assert "| Instruction start (BOQ) | `<\\|im_start\\|>` |" in markdown


def test_rules_edited_while_sampling_fail_the_run_and_leave_nothing(tmp_path, inputs, monkeypatch):
    rules_path = inputs[1]
    applied = load_prefix_rules(rules_path)
    with pytest.raises(DataCardError, match="changed while sampling"):
        read_prefix_config(rules_path, applied[:-1])

    fill = sampling.fill_coverage

    def edit_rules_meanwhile(*args):
        write_rules(rules_path, [{"prefix": "SYNTH__", "max_per_file": 1}])
        return fill(*args)

    monkeypatch.setattr(sampling, "fill_coverage", edit_rules_meanwhile)
    with pytest.raises(SamplingError, match=f"{rules_path}: prefix_config changed"):
        sample(inputs, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


MIXTURE = {
    "group_by": "source",
    "phases": [
        {
            "index": 0,
            "first_epoch": 0,
            "last_epoch": 2,
            "tokens_per_epoch": 3000,
            "temperature": 1.0,
            "achieved_tokens": 2990.5,
            "achieved_rows": 80,
            "groups": [
                {
                    "phase": 0,
                    "group": "flan",
                    "weight": 2.0,
                    "target_share": 0.6,
                    "achieved_share": 0.55,
                    "target_tokens": 1800.0,
                    "achieved_tokens": 1650.0,
                    "target_rows": 40.4,
                    "achieved_rows": 37,
                    "shortfall_tokens": 150.0,
                }
            ],
        }
    ],
    "warnings": ["flan cannot fill its target"],
}


def test_the_mixture_section_appears_only_with_a_mixture(tmp_path, inputs):
    result = sample(inputs, tmp_path / "out")
    card = read_card(tmp_path / "out")
    assert "mixture" not in card
    assert "## Mixture" not in render_markdown(card)

    # A result carrying the sampler's mixture report (a dataclass there, plain data here).
    with_mixture = types.SimpleNamespace(
        **{field.name: getattr(result, field.name) for field in dataclasses.fields(result)},
        total_length=result.total_length,
    )
    with_mixture.mixture = MIXTURE
    card = build_data_card(
        with_mixture,
        files={},
        manifest_sha256="0" * 64,
        prefix_config=read_prefix_config(inputs[1], load_prefix_rules(inputs[1])),
        tokenizer_sha256=None,
        code={"hrm_data": "test"},
        specs=SOURCES,
    )
    assert card["mixture"] == MIXTURE
    markdown = render_markdown(card)
    assert "## Mixture targets" in markdown
    assert "### Phase 0 (epoch_0 to epoch_2)" in markdown
    assert "| flan | 2 | 60.00% | 55.00% | 1,800 | 1,650 | 40.40 | 37 | 150 |" in markdown
    assert "- flan cannot fill its target" in markdown
    assert b'"target_share": 0.600000' in canonical_json_bytes(card)


def test_canonical_json_is_sorted_with_fixed_float_digits():
    value = {"b": [1, 0.5, -0.0, True, None], "a": {"z": "é", "y": 1 / 3}}
    assert canonical_json_bytes(value).decode() == (
        '{\n  "a": {\n    "y": 0.333333,\n    "z": "é"\n  },\n'
        '  "b": [\n    1,\n    0.500000,\n    0.000000,\n    true,\n    null\n  ]\n}\n'
    )
    with pytest.raises(ValueError, match=r"\$\.b\[1\]"):
        canonical_json_bytes({"b": [0, float("nan")]})
    with pytest.raises(TypeError, match=r"\$\.a: set"):
        canonical_json_bytes({"a": {1}})


def test_a_card_json_cannot_hold_is_an_error_naming_the_file(tmp_path):
    with pytest.raises(DataCardError, match=r"datacard.json: cannot be written: \$\.share"):
        write_data_card(tmp_path, {"share": float("inf")})
    assert list(tmp_path.iterdir()) == []


def test_the_chart_is_a_reproducible_png(tmp_path, inputs):
    sample(inputs, tmp_path / "out")
    card = read_card(tmp_path / "out")
    first, second = share_chart_png(card), share_chart_png(card)
    assert first.startswith(b"\x89PNG\r\n\x1a\n")
    assert first == second
    assert b"matplotlib" not in first  # no software version (nor a date) in the PNG


def test_the_sampled_asset_shows_the_card(data_paths):  # noqa: F811 (the fixture)
    output = None
    for run in range(2):  # the second run keeps the output as it is and shows the same card
        result = materialize(data_paths)
        assert result.success
        metadata = result.asset_materializations_for_node(OP_NAME)[0].metadata
        output = Path(metadata["output_path"].value)
        assert metadata["resampled"].value is (run == 0)
        assert metadata["data_card"].value == (output / DATACARD_MARKDOWN).read_text("utf-8")
        assert isinstance(metadata["source_shares"], dg.TableMetadataValue)
        shares = metadata["source_shares"].value.records
        assert (
            sum(row.data["sampled_tokens"] for row in shares)
            == (read_card(output)["totals"]["sampled_tokens"])
        )
        assert "data:image/png;base64," in metadata["source_share_chart"].value
    tokenizer_json = output / "tokenizer" / "tokenizer.json"
    assert (
        metadata["tokenizer_sha256"].value
        == hashlib.sha256(tokenizer_json.read_bytes()).hexdigest()
    )
    assert read_card(output)["tokenizer"]["shipped"] is True
    # Its command names the tokenizer, so sampling again ships it too.
    assert " tokenizer_path=TOKENIZER_JSON\n```" in metadata["data_card"].value


def test_a_sampled_mixture_is_in_the_card(tmp_path):
    from support.mixture_config import TASKS, write_config

    tokenized = write_tokenized(
        tmp_path / "tok",
        {name: [(inst, resp)] * rows for name, (rows, inst, resp) in TASKS.items()},
    )
    mixture = {"tokens_per_epoch": 300, "weights": {"a__": 1, "b.jsonl": 2, "c.jsonl": 1}}
    rules = write_config(tmp_path / "rules.yaml", mixture)
    result = sample((tokenized, rules), tmp_path / "out", epochs=4, context_size=64)
    card = read_card(tmp_path / "out")
    assert card["prefix_config"]["text"] == rules.read_text(encoding="utf-8")
    groups = card["mixture"]["phases"][0]["groups"]
    assert [g["group"] for g in groups] == [r["group"] for r in result.mixture.records()]
    for group, record in zip(groups, result.mixture.records(), strict=True):
        assert math.isclose(group["target_share"], record["target_share"], abs_tol=1e-6)
        assert math.isclose(group["achieved_share"], record["achieved_share"], abs_tol=1e-6)
    markdown = (tmp_path / "out" / DATACARD_MARKDOWN).read_text(encoding="utf-8")
    assert "## Mixture targets" in markdown and "### Phase 0 (epoch_0 to epoch_3)" in markdown
    # The epochs and totals are the mixture's draw, as the report has them.
    assert card["epochs"] == epoch_records(result)
    assert card["totals"]["sampled_tokens"] == summary_figures(result)["sampled_tokens"]


def test_hrm_verify_finds_a_card_that_does_not_describe_its_folder(tmp_path, inputs):
    out, other = tmp_path / "out", tmp_path / "other"
    sample(inputs, out)
    sample(inputs, other, seed=6)
    assert verify_sampled_folder(out).ok

    # The card of another run.
    original = card_bytes(out)
    for name in CARD_FILES:
        (out / name).write_bytes((other / name).read_bytes())
    (problem,) = verify_sampled_folder(out).problems
    assert problem.startswith(f"{out / DATACARD_JSON}: its files and SHA-256 are not those")

    # DATACARD.md edited by hand.
    for name, data in original.items():
        (out / name).write_bytes(data)
    markdown = out / DATACARD_MARKDOWN
    markdown.write_text(markdown.read_text(encoding="utf-8").replace("seed 5", "seed 4"))
    assert verify_sampled_folder(out).problems == [
        f"{markdown}: differs from what {DATACARD_JSON} renders"
    ]

    # One file of the two gone.
    (out / DATACARD_JSON).unlink()
    assert verify_sampled_folder(out).problems == [
        f"{out / DATACARD_JSON}: missing beside DATACARD.md"
    ]


def test_the_cards_command_samples_the_same_card_again(tmp_path, inputs, capsys):
    sample(inputs, tmp_path / "out", drop_short_after_truncate=True)
    markdown = (tmp_path / "out" / DATACARD_MARKDOWN).read_text(encoding="utf-8")
    command = markdown.split("```\n")[1].strip()
    program, *arguments = command.split()
    assert program == "hrm-sample"
    paths = {
        "tokenized_path=TOKENIZED": f"tokenized_path={inputs[0]}",
        "output_path=OUT": f"output_path={tmp_path / 'again'}",
        "prefix_config_path=prefix_config.yaml": f"prefix_config_path={inputs[1]}",
    }
    assert set(paths) <= set(arguments)
    assert cli.main([paths.get(argument, argument) for argument in arguments]) == 0
    capsys.readouterr()
    assert card_bytes(tmp_path / "again") == card_bytes(tmp_path / "out")


def test_the_markdown_renders_the_json_figures_not_the_unrounded_ones(tmp_path, inputs):
    # A share whose two roundings disagree: 0.01434999 is 1.43%, its JSON 0.014350 is 1.44%.
    sample(inputs, tmp_path / "out")
    card = read_card(tmp_path / "out")
    for entry in card["sources"]:
        entry["token_share"] = 0.01434999
    write_data_card(tmp_path / "out", card)
    assert "| 1.44% |" in (tmp_path / "out" / "DATACARD.md").read_text()
    assert verify_sampled_folder(tmp_path / "out").ok
