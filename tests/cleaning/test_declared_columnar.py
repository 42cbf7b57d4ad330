"""Declared sources (sources.yaml) on the columnar engine against their row path, at 1 and 2
threads: same bytes, same report. SYNTHETIC raw Parquet files written here, with the values the
rules must handle: nulls, conditions outside the map, separators missing or doubled, texts the
filters leave out, Unicode whitespace. Rules the engine does not compile stay on the row path."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hrm_assets.cleaning import columnar
from hrm_assets.cleaning.sources.declared import specs_from_file
from tests.cleaning.test_columnar import cleaned_by_engine_and_row_path

DECLARATIONS = {
    "local": """
        sources:
          - name: local_declared
            local: {path: raw_files/*.parquet}
            fields:
              instruction: {template: "{title}\\n\\n{body}", strip: false}
              response: {column: answer, after: "#### "}
            condition: {column: kind, map: {a: direct, b: cot, c: "synth,cot"}}
            filters:
              non_empty: [response]
              min_chars: {instruction: 14}
              max_chars: {response: 40}
            output: {file: declared/local.parquet}
        """,
    "per_value": """
        sources:
          - name: per_value_declared
            local: {path: raw_files/*.parquet}
            fields:
              instruction: body
              response: {column: answer, strip: false}
            condition: direct
            filters: {non_empty: [instruction]}
            output: {folder: per_value, per_value_of: task, format: parquet}
        """,
    "hub": """
        sources:
          - name: hub_declared
            hub: {id: someone/dataset, config: main, split: train}
            fields:
              instruction: body
              response: answer
            condition: {column: tags}
            output: {file: declared/hub.jsonl}
        """,
}


# Values whose file the route refuses (empty, hidden, too long, with "..") among good ones.
TASKS = ["glue/sst2", "wmt:de-en", "task 7", "", ".hidden", "a..b", "x" * 300, "é/ü"]


def _maybe(rng: random.Random, value, rate: float = 0.02):
    return None if rng.random() < rate else value


def _records(rng: random.Random, count: int) -> list[dict]:
    answers = ["work\n#### 42", "  #### 7\u3000", "no separator", "#### a #### b", "#### "]
    return [
        {
            "title": _maybe(rng, rng.choice(["T", "Title \xa0", "  Long title here"])),
            "body": _maybe(rng, f"{rng.choice([' ', ''])}Body {i} é{rng.choice(['', ' '])}"),
            "answer": _maybe(rng, rng.choice(answers) + "x" * rng.choice([0, 0, 45])),
            "kind": _maybe(rng, rng.choice(["a", "b", "c", "z"])),
            "tags": _maybe(rng, rng.choice(["direct", "noisy,cot", "cot", "sarcastic", ""])),
            "task": _maybe(rng, rng.choice(TASKS)),
        }
        for i in range(count)
    ]


def _write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=700)


@pytest.mark.parametrize("name", sorted(DECLARATIONS))
def test_declared_columnar_equals_the_row_path_at_one_and_two_threads(tmp_path, monkeypatch, name):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(columnar, "COLUMNAR_BATCH_ROWS", 500)
    rng = random.Random(4)
    raw = tmp_path / "raw"
    for shard in range(3):
        if name in ("local", "per_value"):
            _write(tmp_path / "raw_files" / f"part{shard}.parquet", _records(rng, 1500))
        else:
            path = raw / "someone" / "dataset" / "main" / f"train-0000{shard}-of-00003.parquet"
            _write(path, _records(rng, 1500))
    yaml = tmp_path / "sources.yaml"
    yaml.write_text(textwrap.dedent(DECLARATIONS[name]), encoding="utf-8")
    [spec] = specs_from_file(yaml)
    assert spec.columnar is not None
    one = cleaned_by_engine_and_row_path(spec, raw, tmp_path)
    assert one.rows_written > 500 and len(one.skipped) >= 3


def test_rules_needing_python_per_record_stay_on_the_row_path(tmp_path):
    yaml = tmp_path / "sources.yaml"
    yaml.write_text(
        textwrap.dedent(
            """
            sources:
              - name: chat_input
                local: {path: files/*.parquet}
                chat: {column: messages}
                condition: direct
                output: {file: chat_input.jsonl}
              - name: jsonl_input
                local: {path: files/*.jsonl}
                fields: {instruction: q, response: a}
                condition: direct
                output: {file: jsonl_input.jsonl}
            """
        ),
        encoding="utf-8",
    )
    assert [spec.columnar for spec in specs_from_file(yaml)] == [None, None]
