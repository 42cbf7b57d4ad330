"""The methods the cleaning speed benchmark times, each run in a fresh child process.

- ``ours``: :func:`hrm_assets.cleaning.clean.clean_source` (the columnar engine, every core);
- ``data_io``: data_io's script for the source restated (``pipe_clustered/clean_flan.py``,
  ``clean_SYNTH.py``, ``clean_openmathinstruct2.py``, ``clean_tasksource.py``,
  ``clean_dmmath.py``, ``pipe/clean_gsm8k_train.py``): the same libraries, the same loops;
  files sorted where data_io globs (each is its own output), the Hub sources loaded from the
  local shards with ``load_dataset("parquet", ...)`` into a fresh ``datasets`` cache;
- ``bound``: reading the columns the source needs (every byte of a text file) and writing our
  output files' contents again with the same library, files in parallel on every core; the
  tables to write are loaded before the clock starts: no cleaning cost at all.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bench.cleaning_speed_raw import FLAN_SUBSETS, NEEDED_COLUMNS, RAW_FOLDERS

COLUMNS = ("instruction", "response", "condition")


def peak_rss() -> int:
    try:
        with open("/proc/self/status", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def ours(source: str, raw: Path, out: Path) -> dict:
    from hrm_assets.cleaning.clean import clean_source
    from hrm_assets.cleaning.sources import get_source

    report = clean_source(get_source(source), out, raw)
    return {"rows_written": report.rows_written, "files": len(report.files)}


# -- data_io's scripts, restated -------------------------------------------------------------------


def _lists() -> dict[str, list]:
    return {name: [] for name in COLUMNS}


def _write_lists(path: Path, lists: dict[str, list]) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pydict(lists), path)
    return len(lists["instruction"])


def _load_hub(raw: Path, folder: str):
    """``load_dataset`` of the local shards, as data_io loads the Hub dataset (no streaming)."""
    from datasets import load_dataset

    files = sorted(str(p) for p in (raw / folder).rglob("train-*.parquet"))
    return load_dataset("parquet", data_files={"train": files}, split="train")


def data_io_flan(raw: Path, out: Path) -> dict:
    import pyarrow.parquet as pq

    from hrm_assets.cleaning.sources.local_files import safe_filename

    written = files = 0
    for subset, condition in FLAN_SUBSETS.items():
        subset_data: dict[str, dict[str, list]] = {}
        for filename in sorted((raw / "FLAN" / subset).glob("*.parquet")):
            table = pq.read_table(filename)
            for task, inputs, targets in zip(
                table.column("_task_name"),
                table.column("inputs"),
                table.column("targets"),
                strict=True,
            ):
                lists = subset_data.setdefault(str(task), _lists())
                lists["instruction"].append(str(inputs))
                lists["response"].append(str(targets))
                lists["condition"].append(condition)
        for task, lists in subset_data.items():
            path = out / "flan" / f"{subset}__{safe_filename(task)}.parquet"
            written += _write_lists(path, lists)
            files += 1
        del subset_data
    return {"rows_written": written, "files": files}


def data_io_synth(raw: Path, out: Path) -> dict:
    import polars as pl

    target = out / "SYNTH"
    target.mkdir(parents=True, exist_ok=True)
    written = files = 0
    cot = ["creative writing", "rag", "memorization", "constrained writing", "editing"]
    for file_path in sorted((raw / "SYNTH").glob("*.parquet")):
        plan = (
            pl.scan_parquet(file_path)
            .filter(
                (pl.col("language") == "en")
                & (~pl.col("query_seed_url").str.contains("Pleias self-knowledge"))
                & (pl.col("exercise") != "cooking")
            )
            .select(
                [
                    pl.when(pl.col("exercise") == "rag")
                    .then(pl.col("query") + pl.col("constraints"))
                    .otherwise(pl.col("query"))
                    .alias("instruction"),
                    pl.when(pl.col("exercise").is_in(cot))
                    .then(pl.lit("synth,cot"))
                    .when(pl.col("exercise").is_in(["math mcq", "mcq"]))
                    .then(pl.lit("synth,direct"))
                    .when(pl.col("exercise") == "math exercise")
                    .then(pl.lit("synth,noisy,cot"))
                    .otherwise(pl.lit(""))
                    .alias("condition"),
                    pl.col("synthetic_answer").alias("response"),
                ]
            )
        )
        plan.sink_parquet(target / file_path.name)
        written += pl.scan_parquet(target / file_path.name).select(pl.len()).collect().item()
        files += 1
    return {"rows_written": written, "files": files}


def data_io_openmathinstruct2(raw: Path, out: Path) -> dict:
    dataset = _load_hub(raw, RAW_FOLDERS["openmathinstruct2"])
    cot, direct = _lists(), _lists()
    for row in dataset:
        cot["condition"].append("synth,cot")
        cot["instruction"].append(row["problem"])
        cot["response"].append(row["generated_solution"])
        if row["problem_source"] not in {"math", "gsm8k"}:
            direct["condition"].append("synth,direct")
            direct["instruction"].append(row["problem"])
            direct["response"].append(row["expected_answer"])
    written = _write_lists(out / "openmathinstruct2" / "cot.parquet", cot)
    written += _write_lists(out / "openmathinstruct2" / "direct.parquet", direct)
    return {"rows_written": written, "files": 2}


def data_io_tasksource(raw: Path, out: Path) -> dict:
    from hrm_assets.cleaning.sources.tasksource import TASKS, safe_task_filename

    dataset = _load_hub(raw, RAW_FOLDERS["tasksource"])
    task_set = set(TASKS)
    data = {task: _lists() for task in task_set}
    for item in dataset:
        task = item["task"]
        if task not in task_set:
            continue
        data[task]["instruction"].append(item["inputs"])
        data[task]["response"].append(item["targets"].removesuffix("."))
        data[task]["condition"].append("direct")
    written = files = 0
    for task, lists in data.items():
        if lists["instruction"]:
            path = out / "tasksource" / f"{safe_task_filename(task)}.parquet"
            written += _write_lists(path, lists)
            files += 1
    return {"rows_written": written, "files": files}


def data_io_dmmath(raw: Path, out: Path) -> dict:
    from hrm_assets.cleaning.sources.local_files import safe_filename

    written = files = 0
    for set_name in ("train-easy", "train-medium", "train-hard"):
        for filename in sorted((raw / RAW_FOLDERS["dmmath"] / set_name).glob("*.txt")):
            result = _lists()
            task = safe_filename(f"{set_name}__{filename.name.removesuffix('.txt')}")
            with open(filename, encoding="utf-8") as handle:
                lines = [line.strip() for line in handle.readlines()]
            assert len(lines) % 2 == 0
            for x, y in zip(lines[::2], lines[1::2], strict=True):
                result["instruction"].append(x)
                result["response"].append(y)
                result["condition"].append("direct")
            written += _write_lists(out / "dmmath" / f"{task}.parquet", result)
            files += 1
    return {"rows_written": written, "files": files}


def data_io_gsm8k(raw: Path, out: Path) -> dict:
    import orjson

    dataset = _load_hub(raw, RAW_FOLDERS["gsm8k_train"])
    result = []
    for row in dataset:
        answer = row["answer"].split("#### ")
        assert len(answer) == 2
        result.append(
            {
                "condition": "direct",
                "instruction": row["question"].strip(),
                "response": answer[-1].strip(),
            }
        )
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "gsm8k_train.jsonl", "wb") as handle:
        for item in result:
            handle.write(orjson.dumps(item) + b"\n")
    return {"rows_written": len(result), "files": 1}


DATA_IO = {
    "flan": data_io_flan,
    "synth": data_io_synth,
    "openmathinstruct2": data_io_openmathinstruct2,
    "tasksource": data_io_tasksource,
    "dmmath": data_io_dmmath,
    "gsm8k_train": data_io_gsm8k,
}


# -- the bound -------------------------------------------------------------------------------------


def bound(source: str, raw: Path, out: Path, reference: Path) -> dict:
    """Read what the source needs of every raw file, write ``reference``'s files again (their
    contents loaded before the clock): both in parallel over files on every core."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.parquet as pq

    folder = raw / RAW_FOLDERS[source]
    raw_files = sorted(p for p in folder.rglob("*") if p.suffix in (".parquet", ".txt"))
    outputs = sorted(p for p in reference.rglob("*") if p.suffix in (".parquet", ".jsonl"))
    loaded = [
        (p.relative_to(reference), pq.read_table(p) if p.suffix == ".parquet" else p.read_bytes())
        for p in outputs
    ]
    threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2
    columns = list(NEEDED_COLUMNS[source])

    def read(path: Path) -> int:
        if path.suffix == ".txt":
            return path.read_bytes().count(b"\n") // 2
        rows = 0
        for batch in pq.ParquetFile(path).iter_batches(
            batch_size=65_536, columns=columns, use_threads=False
        ):
            rows += batch.num_rows
        return rows

    def write(item) -> int:
        relative, content = item
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
            return content.count(b"\n")
        pq.write_table(content, path)
        return content.num_rows

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        read_rows = sum(pool.map(read, raw_files))
        written = sum(pool.map(write, loaded))
    seconds = time.perf_counter() - started
    return {"rows_written": written, "files": len(loaded), "read_rows": read_rows, "timed": seconds}


def child(method: str, source: str, raw: Path, out: Path, reference: str) -> None:
    """Run one method once and print its figures as one JSON line."""
    # Imports before the clock (polars and datasets only where used: their pages count in RSS).
    # pyarrow.compute and numpy.ma are library modules imported lazily on first use (the
    # engine's first compute call, numpy's first np.unique): 0.05 to 0.15 s of import inside
    # the clock otherwise, as polars' would be for data_io's SYNTH plan.
    import numpy.ma  # noqa: F401
    import pyarrow.compute  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    if method == "data_io" and source == "synth":
        import polars  # noqa: F401
    if method == "data_io" and source in ("openmathinstruct2", "tasksource", "gsm8k_train"):
        import datasets  # noqa: F401

    import hrm_assets.cleaning.clean  # noqa: F401
    from hrm_assets.cleaning.sources import get_source

    get_source(source)
    started = time.perf_counter()
    if method == "ours":
        result = ours(source, raw, out)
    elif method == "data_io":
        result = DATA_IO[source](raw, out)
    else:
        result = bound(source, raw, out, Path(reference))
    seconds = result.pop("timed", time.perf_counter() - started)
    print(json.dumps({**result, "seconds": seconds, "peak_rss_bytes": peak_rss()}))
