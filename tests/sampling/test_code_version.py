"""The sampled asset's code version covers every module that decides a sampled folder's bytes:
an edit to any of them (Python or the Rust core's sampling sources) changes it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hrm_assets import _core
from hrm_assets.common.source_version import closure_sha256, module_closure, package_folder
from hrm_assets.sampling.datacard.code_version import (
    NOT_IN_SAMPLER_VERSION,
    SAMPLER_MODULE,
    sampling_code_version,
)

# Modules whose edits changed epoch or data card bytes without changing the old version, which
# hashed sampler.py alone.
BYTE_DECIDING = [
    "hrm_assets.sampling.sampler",
    "hrm_assets.sampling.epoch_draw",
    "hrm_assets.sampling.span_table",
    "hrm_assets.sampling.arrays",
    "hrm_assets.sampling.prefix_config",
    "hrm_assets.sampling.datacard.writer",
    "hrm_assets.tokenization.snapshot",
    "hrm_assets.common.manifest",
]


@pytest.fixture()
def package_copy(tmp_path) -> Path:
    """A copy of the package's Python sources, to edit without touching the real one."""
    copy = tmp_path / "hrm_assets"
    shutil.copytree(package_folder(), copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    return copy


def _version(package_dir: Path | None = None) -> str:
    return closure_sha256(
        SAMPLER_MODULE, package_dir, NOT_IN_SAMPLER_VERSION, (_core.SAMPLE_SOURCE_SHA256,)
    )


def test_every_module_the_sampler_loads_is_in_its_version():
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys; import hrm_assets.sampling.sampler; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('hrm_assets.'))))",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    hashed = module_closure(SAMPLER_MODULE, exclude=NOT_IN_SAMPLER_VERSION)
    missing = [
        name
        for name in json.loads(loaded.stdout)
        if name != "hrm_assets._core"
        and not any(name.startswith(prefix) for prefix in NOT_IN_SAMPLER_VERSION)
        and name not in hashed
    ]
    assert missing == []
    assert set(BYTE_DECIDING) <= hashed.keys()


def test_the_version_is_the_installed_packages_closure():
    assert sampling_code_version() == _version()
    assert len(sampling_code_version()) == 64


@pytest.mark.parametrize("module", BYTE_DECIDING)
def test_an_edit_to_a_byte_deciding_module_changes_the_version(package_copy, module):
    before = _version(package_copy)
    assert before == _version()  # names are relative to the package: a copy hashes the same
    path = package_copy.joinpath(*module.split(".")[1:]).with_suffix(".py")
    path.write_text(path.read_text(encoding="utf-8") + "\nEDITED = True\n", encoding="utf-8")
    assert _version(package_copy) != before


def test_a_module_added_and_imported_joins_the_version(package_copy):
    before = _version(package_copy)
    (package_copy / "sampling" / "new_rule.py").write_text("LIMIT = 3\n", encoding="utf-8")
    epoch_draw = package_copy / "sampling" / "epoch_draw.py"
    epoch_draw.write_text(
        epoch_draw.read_text(encoding="utf-8")
        + "\n\ndef _limit():\n    from hrm_assets.sampling.new_rule import LIMIT\n\n"
        "    return LIMIT\n",
        encoding="utf-8",
    )
    assert "hrm_assets.sampling.new_rule" in module_closure(
        SAMPLER_MODULE, package_copy, NOT_IN_SAMPLER_VERSION
    )
    edited = _version(package_copy)
    assert edited != before
    (package_copy / "sampling" / "new_rule.py").write_text("LIMIT = 4\n", encoding="utf-8")
    assert _version(package_copy) != edited


def test_an_edit_outside_the_samplers_imports_keeps_the_version(package_copy):
    """The exports and the mixture (versioned on its own, only when configured) are not part of
    the sampler's version, so editing them does not resample every node."""
    before = _version(package_copy)
    for path in (package_copy / "export" / "cli.py", package_copy / "sampling/mixture/draw.py"):
        path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    assert _version(package_copy) == before


def test_the_rust_cores_sampling_sources_are_part_of_the_version():
    assert len(_core.SAMPLE_SOURCE_SHA256) == 64
    other_core = closure_sha256(SAMPLER_MODULE, None, NOT_IN_SAMPLER_VERSION, ("0" * 64,))
    assert other_core != sampling_code_version()


def test_relative_imports_are_followed(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "sub" / "__init__.py").write_text("from . import leaf\n", encoding="utf-8")
    (package / "sub" / "leaf.py").write_text("from ..top import VALUE\n", encoding="utf-8")
    (package / "top.py").write_text("VALUE = 1\n", encoding="utf-8")
    (package / "unused.py").write_text("VALUE = 2\n", encoding="utf-8")
    closure = module_closure("pkg.sub.leaf", package)
    assert sorted(closure) == ["pkg.sub", "pkg.sub.leaf", "pkg.top"]


def test_a_root_module_without_source_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="pkg.missing"):
        module_closure("pkg.missing", tmp_path)
