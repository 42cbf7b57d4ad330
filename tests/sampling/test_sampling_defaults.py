"""The sampler's settings live in hrm_assets.sampling.defaults; every reader agrees with it."""

from __future__ import annotations

import re

import pytest
from conftest import REPO_ROOT

from hrm_assets.defs.sampled.run_settings import SamplingRunConfig
from hrm_assets.sampling import cli as sample
from hrm_assets.sampling import defaults as sampling_defaults
from hrm_assets.sampling.sampler import SamplingConfig, SamplingError, make_config

SETTINGS = sampling_defaults.SETTINGS
DOC = REPO_ROOT / "docs" / "SAMPLING.md"


def test_data_io_defaults():
    assert sampling_defaults.default_values() == {
        "seed": 0,
        "epochs": 10,
        "context_size": 4097,
        "min_resp_length": 2,
        "drop_short_after_truncate": False,
        # hrm-data's own, off: docs/CONTAMINATION.md.
        "decontaminate": False,
        "dedup": False,
    }


@pytest.mark.parametrize("model", [SamplingConfig, SamplingRunConfig])
def test_configs_take_defaults_bounds_and_help_from_the_module(model):
    fields = model.model_fields
    for setting in SETTINGS:
        field = fields[setting.name]
        assert field.default == setting.default, setting.name
        assert field.description == setting.help, setting.name
        bounds = [m.ge for m in field.metadata if hasattr(m, "ge")]
        # The Dagster config leaves bounds to SamplingConfig (one message naming the key).
        bounded = model is SamplingConfig and setting.minimum is not None
        assert bounds == ([setting.minimum] if bounded else []), setting.name
    if model is SamplingRunConfig:  # the settings and nothing else: paths come from resources
        assert list(fields) == [setting.name for setting in SETTINGS]


def test_bounds_are_enforced_with_the_settings_name(tmp_path):
    paths = dict(tokenized_path=tmp_path, output_path=tmp_path / "o", prefix_config_path=tmp_path)
    for setting in SETTINGS:
        if setting.minimum is None:
            continue
        with pytest.raises(SamplingError, match=f"^{setting.name}: .*greater than or equal"):
            make_config(**paths, **{setting.name: setting.minimum - 1})


def test_command_line_defaults_and_help_come_from_the_module():
    values = sample.default_values()
    for setting in SETTINGS:
        assert values[setting.name] == setting.default
    assert set(sample.INT_KEYS + sample.BOOL_KEYS) == {setting.name for setting in SETTINGS}
    usage = " ".join(sample.USAGE.split())  # help lines are wrapped
    for setting in SETTINGS:
        shown = sampling_defaults.shown_default(setting)
        assert f"{setting.name}=" in usage
        assert f"{' '.join(setting.help.split())} (default {shown})" in usage


def test_docs_table_is_the_modules():
    text = DOC.read_text(encoding="utf-8")
    match = re.search(
        r"<!-- sampling-defaults:start -->\n(.*?)<!-- sampling-defaults:end -->", text, re.S
    )
    assert match, f"{DOC}: the sampling-defaults markers are missing"
    assert match.group(1) == sampling_defaults.markdown_table(), (
        f"{DOC} is out of date; paste the output of sampling_defaults.markdown_table()"
    )
