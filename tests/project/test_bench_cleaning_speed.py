"""The cleaning speed benchmark in quick mode: every source and figure exists and the outputs
agree with data_io's restated scripts (byte for byte; SYNTH row for row); no timing asserted.
Its doc section and the memory benchmark's leave each other alone."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from bench import cleaning_memory
from bench import cleaning_speed as bench
from bench import cleaning_speed_raw as raw_files
from bench.doc_sections import markers, replace_section

ROWS = 2_000


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    work = tmp_path_factory.mktemp("cleaning_speed")
    return bench.run_cleaning_speed_benchmark(
        dict.fromkeys(bench.SOURCES, ROWS), work_dir=work, repeats=1
    )


def test_every_source_and_method_is_measured_with_the_same_output(result):
    assert set(result.sources) == set(bench.SOURCES)
    for name, source in result.sources.items():
        assert source.same_output, name
        assert set(source.measurements) == set(bench.METHODS)
        ours = source.measurements["ours"]
        assert ours.rows_written > 0, name
        for method, figures in source.measurements.items():
            assert figures.seconds > 0 and figures.peak_rss_bytes > 0, (name, method)
            assert figures.rounds == [figures.seconds], (name, method)
            assert figures.rows_written == ours.rows_written, (name, method)
            assert figures.files == ours.files, (name, method)
            assert figures.raw_rows == source.raw_rows and figures.raw_bytes == source.raw_bytes
        assert source.speedup > 0 and source.over_bound > 0
    measured = {name: source.measurements["ours"] for name, source in result.sources.items()}
    assert measured["flan"].rows_written == ROWS and measured["flan"].files > 300
    assert 0 < measured["synth"].rows_written < ROWS
    assert measured["synth"].files == raw_files.SYNTH_FILES
    # A cot row per problem, a direct row for the generated ones (three sources in four).
    assert ROWS < measured["openmathinstruct2"].rows_written < 2 * ROWS
    assert measured["openmathinstruct2"].files == 2
    assert 0 < measured["tasksource"].rows_written < ROWS and measured["tasksource"].files > 50
    assert measured["dmmath"].rows_written == ROWS
    assert measured["dmmath"].files == len(raw_files.DMMATH_SETS) * raw_files.DMMATH_MODULES
    assert measured["gsm8k_train"].rows_written == ROWS


def test_table_and_figures_name_every_target(result):
    table = result.table()
    for name in bench.SOURCES:
        for method in bench.METHODS:
            assert f"| {name} | " in table and f" | {method} | " in table
    assert ">= 3x" in table and ">= 5x" in table and "<= 1.5x" in table and "600 MiB" in table
    assert "best (median)" in table and "medians: data_io / ours, ours / bound" in table
    figures = result.as_dict()["sources"]["tasksource"]
    assert figures["measurements"]["ours"]["rows_per_second"] > 0
    assert isinstance(figures["meets_targets"], bool)


def test_a_saved_run_reads_back_to_the_same_table_and_summary_rows(result):
    saved = json.loads(json.dumps(result.as_dict()))
    again = bench.CleaningSpeedResult.from_dict(saved)
    assert again.table() == result.table()
    assert bench.result_stage(again).ratios == bench.result_stage(result).ratios
    assert len(bench.result_stage(again).ratios) == 3 * len(bench.SOURCES)


def test_generated_raw_files_have_the_hub_schema(tmp_path):
    flan = raw_files.write_flan_raw(tmp_path, 600)
    synth = raw_files.write_synth_raw(tmp_path, 100)
    assert len(flan) == 6 and sum(pq.ParquetFile(p).metadata.num_rows for p in flan) == 600
    assert set(pq.read_schema(flan[0]).names) == {
        "inputs",
        "targets",
        "_template_type",
        "_task_source",
        "_task_name",
        "_template_idx",
    }
    names = pq.read_schema(synth[0]).names
    assert len(names) == 14 and "synthetic_reasoning" in names
    assert set(raw_files.NEEDED_COLUMNS["synth"]) <= set(names)
    for source in ("openmathinstruct2", "tasksource", "gsm8k_train"):
        paths = raw_files.WRITERS[source](tmp_path, 50)
        assert all(p.name.startswith("train-") for p in paths)
        assert set(pq.read_schema(paths[0]).names) == set(raw_files.NEEDED_COLUMNS[source])
    lines = [p.read_text().splitlines() for p in raw_files.write_dmmath_raw(tmp_path, 100)]
    assert sum(len(file_lines) for file_lines in lines) == 200


def test_each_benchmark_writes_its_own_section_of_the_doc(tmp_path):
    doc = tmp_path / "BENCHMARKS-cleaning.md"
    doc.write_text("# Cleaning benchmarks\n\nProse that no benchmark writes.\n")
    replace_section(doc, cleaning_memory.SECTION, "memory figures 1", title="## Memory")
    replace_section(doc, bench.SECTION, "speed figures 1", title="## Speed")
    replace_section(doc, cleaning_memory.SECTION, "memory figures 2", title="## Memory")
    replace_section(doc, bench.SECTION, "speed figures 2", title="## Speed")
    text = doc.read_text()
    assert "Prose that no benchmark writes." in text
    assert "memory figures 2" in text and "speed figures 2" in text
    assert "figures 1" not in text
    assert text.count("## Memory") == 1 and text.count("## Speed") == 1
    for name in (cleaning_memory.SECTION, bench.SECTION):
        begin, end = markers(name)
        assert text.count(begin) == 1 and text.index(begin) < text.index(end)


def test_rounds_rerun_every_method_from_nothing_and_keep_the_best(tmp_path):
    # GSM8K: data_io's load_dataset would find the first round's cache if it were kept.
    result = bench.run_cleaning_speed_benchmark(
        {"gsm8k_train": 300}, ["gsm8k_train"], work_dir=tmp_path, repeats=3
    )
    source = result.sources["gsm8k_train"]
    assert source.same_output
    for figures in source.measurements.values():
        assert len(figures.rounds) == 3 and figures.seconds == min(figures.rounds)
        assert figures.seconds <= figures.median_seconds <= max(figures.rounds)
        assert figures.rows_written == 300
    assert "best of 3 rounds" in bench.result_stage(result).ratios[0].figure


def test_the_median_of_the_rounds():
    def measured(rounds):
        return bench.Measurement("dmmath", "ours", 1, 1, 1, 1, min(rounds), 1, rounds)

    assert measured([3.0, 1.0, 2.0]).median_seconds == 2.0
    assert measured([4.0, 1.0, 2.0, 3.0]).median_seconds == 2.5
    # A run saved before the rounds existed reads back with its one figure.
    assert bench.Measurement("dmmath", "ours", 1, 1, 1, 1, 0.5, 1).median_seconds == 0.5
    with pytest.raises(ValueError, match="repeats"):
        bench.run_cleaning_speed_benchmark({"dmmath": 10}, ["dmmath"], repeats=0)


def test_rows_option_names_a_source():
    assert bench._rows_option("dmmath=12") == ("dmmath", 12)
    with pytest.raises(Exception, match="SOURCE=N"):
        bench._rows_option("nope=3")
