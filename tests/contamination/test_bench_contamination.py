"""``bench/contamination.py`` at a small size: both passes and tokenization see the same rows,
the figures agree with each other (no wall-time assertions), and the runner knows the stage."""

from __future__ import annotations

import pytest

from bench import __main__ as runner
from bench.contamination import OVERHEAD_TARGET, run_contamination_benchmark, stage_report


@pytest.fixture(scope="module")
def figures(tmp_path_factory, real_raw):
    return run_contamination_benchmark(0.3, repeats=1, work_dir=tmp_path_factory.mktemp("c"))


def test_figures_are_consistent(figures):
    assert figures["rows"] == figures["tokenized_rows"] == figures["rows_scanned"] > 0
    # The corpus resamples the GSM8K and MATH test rows: the scan finds some of them.
    assert 0 < figures["rows_hit"] < figures["rows"]
    assert sum(figures["hits_by_set"].values()) == figures["rows_hit"]
    assert set(figures["eval_sets"]) == {"gsm8k_test", "math_test"}
    best = figures["seconds"]
    assert best["tokenize"] > 0 and best["passes"] > 0
    assert figures["overhead"] == pytest.approx(best["passes"] / best["tokenize"])
    assert 0 < figures["index_seconds"]
    assert figures["overhead_without_index"] == pytest.approx(
        (best["passes"] - figures["index_seconds"]) / best["tokenize"]
    )


def test_the_runner_has_the_stage(tmp_path):
    assert "contamination" in runner.STAGE_NAMES and "contamination" in runner.STAGES
    report = stage_report(0.01, tmp_path, lambda message: None)
    ratio, without_index = report.ratios
    assert ratio.target == f"<= {OVERHEAD_TARGET:.0%}"
    assert ratio.met == (report.figures["overhead"] <= OVERHEAD_TARGET)
    assert without_index.ratio == report.figures["overhead_without_index"]
    assert "| passes |" in report.section
