"""The columnar engine never imports pandas (nor ``datasets``): pyarrow imports pandas on its
first conversion of a Python or numpy value (``pa.array``, ``to_numpy``, a Python scalar in a
compute call), 0.4 to 0.7 s of a process, more than SYNTH's rule costs for a file; the engine
converts through buffers (``hrm_assets.cleaning.arrow_buffers``). Each source is cleaned in a
fresh process, on raw data with the records its rule skips (nulls, unselected tasks, answers
that do not split, null texts), at 1 and 2 threads, with a memory budget small enough that
rows spill. Fixtures are SYNTHETIC (the writers of the columnar tests)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

from tests.cleaning.test_columnar import REPO_ROOT, write_flan, write_synth
from tests.cleaning.test_columnar_sources import (
    write_dmmath,
    write_gsm8k,
    write_openmathinstruct2,
    write_tasksource,
)

LIBRARIES = ("pandas", "datasets", "polars")

WRITERS = {
    "synth": write_synth,
    "flan": write_flan,
    "tasksource": write_tasksource,
    "gsm8k_train": write_gsm8k,
    "openmathinstruct2": write_openmathinstruct2,
    "dmmath": write_dmmath,
}


def _run(code: str, *arguments: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *arguments],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_importing_the_cleaning_code_imports_none_of_them():
    loaded = _run(
        f"""
        import json, sys
        import hrm_assets.cleaning.cli, hrm_assets.cleaning.clean
        from hrm_assets.cleaning.sources import get_source
        for name in {sorted(WRITERS)!r}:
            get_source(name)
        print(json.dumps([name for name in {LIBRARIES!r} if name in sys.modules]))
        """
    )
    assert loaded == []


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_cleaning_on_columns_imports_none_of_them(tmp_path, name):
    WRITERS[name](tmp_path / "raw", random.Random(7))
    result = _run(
        f"""
        import json, sys
        from hrm_assets.cleaning import columnar, columnar_clean
        from hrm_assets.cleaning.clean import clean_source
        from hrm_assets.cleaning.sources import get_source

        columnar.COLUMNAR_BATCH_ROWS = 500  # many batches: skips in several of them
        columnar_clean.DEFAULT_BUFFER_BYTES = 40_000  # grouped batches and row groups spill
        reports = [
            clean_source(get_source({name!r}), sys.argv[1] + f"/{{threads}}", sys.argv[2],
                         threads=threads)
            for threads in (1, 2)
        ]
        print(json.dumps({{
            "engines": [report.engine for report in reports],
            "rows": [report.rows_written for report in reports],
            "skipped": sorted(reports[0].skipped),
            "loaded": [name for name in {LIBRARIES!r} if name in sys.modules],
        }}))
        """,
        str(tmp_path / "out"),
        str(tmp_path / "raw"),
    )
    assert result["engines"] == ["columnar", "columnar"]
    assert result["rows"][0] == result["rows"][1] > 500
    assert result["skipped"]
    assert result["loaded"] == []
