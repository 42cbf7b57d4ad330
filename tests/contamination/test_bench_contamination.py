"""``bench/contamination.py`` at a small size: both passes and tokenization see the same rows,
the report from the tokenized folders' sidecars is the separate pass's (the bench raises
otherwise), the figures agree with each other (no wall-time assertions), and the runner knows
the stage."""

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
    assert min(best.values()) > 0
    added = best["tokenize_scanned"] - best["tokenize"] + best["report"]
    assert figures["overhead"] == pytest.approx(added / best["tokenize"])
    assert figures["separate_overhead"] == pytest.approx(best["passes"] / best["tokenize"])
    cpu = figures["cpu_seconds"]
    assert figures["overhead_cpu"] == pytest.approx(
        (cpu["tokenize_scanned"] - cpu["tokenize"] + cpu["report"]) / cpu["tokenize"]
    )
    assert 0 < figures["index_seconds"] and 0 < figures["tokenization_index_seconds"]
    assert figures["overhead_with_index"] == pytest.approx(
        (added + figures["tokenization_index_seconds"]) / best["tokenize"]
    )
    assert figures["overhead_without_index"] == pytest.approx(
        (added - figures["index_seconds"]) / best["tokenize"]
    )


def test_the_runner_has_the_stage(tmp_path):
    assert "contamination" in runner.STAGE_NAMES and "contamination" in runner.STAGES
    report = stage_report(0.01, tmp_path, lambda message: None)
    ratio, cpu, separate = report.ratios
    assert ratio.target == f"<= {OVERHEAD_TARGET:.0%}"
    assert ratio.met == (report.figures["overhead"] <= OVERHEAD_TARGET)
    assert cpu.ratio == report.figures["overhead_cpu"]
    assert separate.ratio == report.figures["separate_overhead"]
    for step in ("tokenize", "tokenize_scanned", "report", "passes"):
        assert f"| {step} |" in report.section
