"""A materialized demo graph shared by the incremental and automation tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.instance.ref import InstanceRef

from hrm_assets.common.settings import default_prefix_config_path
from hrm_assets.contracts.framing import Framing
from hrm_assets.definitions import build_definitions
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.demo import write_demo_corpus
from hrm_assets.quickstart import materialize_graph
from hrm_assets.tokenization.tokenize import write_tokenizer_info

VOCAB = 1024
EPOCHS = 2


class Graph:
    """A materialized demo graph in ``root`` (data, raw corpus and Dagster home)."""

    def __init__(self, root: Path):
        self.root = root
        self.data = root / "data"
        self.raw = root / "raw"
        self.home = root / "home"
        self.paths = DataPaths(
            data_root=str(self.data),
            raw_root=str(self.raw),
            prefix_config_path=str(default_prefix_config_path()),
        )
        self.defs = build_definitions(self.paths)
        self.instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(self.home)))

    def materialize(self) -> bool:
        return materialize_graph(self.defs, self.instance, VOCAB, EPOCHS, log=lambda m: None)

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """(mtime_ns, size) of every output file: a rewrite changes the mtime."""
        return {
            str(path.relative_to(self.data)): (path.stat().st_mtime_ns, path.stat().st_size)
            for path in self.data.rglob("*")
            if path.is_file()
        }

    def latest_metadata(self, key: dg.AssetKey, partition: str | None = None) -> dict:
        records = self.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=key, asset_partitions=[partition] if partition else None
            ),
            limit=1,
        ).records
        materialization = records[0].event_log_entry.asset_materialization
        return {name: value.value for name, value in materialization.metadata.items()}

    def materialization_count(self, key: dg.AssetKey) -> int:
        return len(
            self.instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=key), limit=10_000
            ).records
        )


@pytest.fixture(scope="session")
def built_graph(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("graph")
    (root / "home").mkdir()
    (root / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    write_demo_corpus(root / "raw")
    graph = Graph(root)
    assert graph.materialize(), "the demo graph must materialize"
    graph.instance.dispose()
    return root


@pytest.fixture
def graph(built_graph, tmp_path) -> Graph:
    copy = tmp_path / "graph"
    shutil.copytree(built_graph, copy, symlinks=True)
    graph = Graph(copy)
    # tokenizer_info.json records the tokenizer's absolute path (as data_io records the path it
    # was given); the copy moved it, so write it for the new place as the assets would.
    write_tokenizer_info(graph.paths.tokenized_root, graph.paths.tokenizer_json, Framing())
    yield graph
    graph.instance.dispose()


def append_gsm8k_row(graph: Graph) -> None:
    raw_file = next((graph.raw / "openai" / "gsm8k" / "main").iterdir())
    record = {"question": "What is 20 + 22?", "answer": "20 + 22 = 42.\n#### 42"}
    if raw_file.suffix == ".jsonl":
        with open(raw_file, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(raw_file)
        extra = pa.Table.from_pylist([record], schema=table.schema)
        pq.write_table(pa.concat_tables([table, extra]), raw_file)
