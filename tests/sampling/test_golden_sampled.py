"""data_io's sampler, byte for byte: ``hrm-sample`` on data_io's own tokenized output writes
every file data_io's ``sample_tokenized.py`` wrote with the same SHA-256, for two seeds, and its
report begins with data_io's report (tests/golden/sampled/README.md says how they were made).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent.parent / "golden" / "sampled"
TOKENIZED = Path(__file__).parent.parent / "golden" / "tokenized" / "data_io" / "default"
SEEDS = (0, 7)


def sha256_of_tree(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_hrm_sample_writes_data_io_samplers_bytes(tmp_path, seed):
    # A copy: the sampler takes its shared locks (lock files) in the tokenized root.
    tokenized = tmp_path / "tok"
    shutil.copytree(TOKENIZED, tokenized)
    output = tmp_path / f"seed{seed}"
    done = subprocess.run(
        [
            sys.executable, "-m", "hrm_assets.sampling",
            f"tokenized_path={tokenized}",
            f"output_path={output}",
            f"prefix_config_path={GOLDEN / 'prefix_config.yaml'}",
            f"seed={seed}", "epochs=3", "context_size=129",
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr

    golden = sha256_of_tree(GOLDEN / f"seed{seed}")
    ours = sha256_of_tree(output)
    assert len(golden) == 14  # tokens.npy, metadata.json, 3 epochs x 4 arrays
    assert {name: ours.get(name) for name in golden} == golden
    # hrm-data's additions: the manifest and the data card (hrm_assets.sampling.datacard).
    assert set(ours) - set(golden) == {"manifest.json", "DATACARD.md", "datacard.json"}

    data_io_report = (GOLDEN / f"report_seed{seed}.md").read_text(encoding="utf-8").splitlines()
    assert done.stdout.splitlines()[: len(data_io_report)] == data_io_report


def test_golden_files_are_the_ones_listed():
    listed = {}
    for line in (GOLDEN / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name] = digest
    actual = {
        name: digest
        for name, digest in sha256_of_tree(GOLDEN).items()
        if name not in {"SHA256SUMS", "README.md"}
    }
    assert actual == listed
