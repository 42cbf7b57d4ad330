"""The contamination and duplicates section of a sampled folder's data card, from the sidecars
of the tokenized folders it sampled (:mod:`.sidecar`; docs/CONTAMINATION.md).

Per source: the rows of its sampled tasks (as tokenized, before the sampler's length rules),
the rows scanned against evaluation sets, the rows hit and the rows hit per evaluation set.
Per source pair ``(first, later)``: the rows of ``later`` repeating a row first seen in
``first`` (tasks taken in the sampler's order, rows in file order; ``(a, a)`` are repeats
within ``a``). A task no registered source claims counts as a source of its own name. Tasks
without sidecars are counted, not guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from hrm_assets.contamination.duplicates import DuplicateCounter
from hrm_assets.contamination.sidecar import read_sidecar


def contamination_section(
    tokenized_root: Path, tasks: Sequence[str], task_source: Mapping[str, str | None]
) -> dict | None:
    """The section for ``tasks`` (folders of ``tokenized_root``), or None when none of them
    has sidecars."""
    found = [(task, read_sidecar(Path(tokenized_root) / task)) for task in tasks]
    if all(sidecar is None for _, sidecar in found):
        return None
    duplicates = DuplicateCounter()
    sources: dict[str, dict] = {}
    scanned_against: set[str] = set()
    sizes: set[int] = set()
    without = 0
    for task, sidecar in found:
        if sidecar is None:
            without += 1
            continue
        source = task_source.get(task) or task
        record = sources.setdefault(
            source, {"rows": 0, "rows_scanned": 0, "rows_hit": 0, "hits_by_set": {}}
        )
        record["rows"] += sidecar.rows
        label = sidecar.label if isinstance(sidecar.label, dict) else None
        if label is not None:
            names = [entry["name"] for entry in label["sets"]]
            scanned_against.update(names)
            sizes.add(int(label["n"]))
            record["rows_scanned"] += sidecar.rows
            record["rows_hit"] += len(sidecar.hits)
            for hit in sidecar.hits:
                name = names[hit[2]]
                record["hits_by_set"][name] = record["hits_by_set"].get(name, 0) + 1
        duplicates.add_keys(source, sidecar.keys())
    report = duplicates.report()
    return {
        "scanned_against": sorted(scanned_against),
        "n": sorted(sizes),
        "tasks_without_sidecars": without,
        "sources": [
            {
                "name": name,
                **{key: value for key, value in record.items() if key != "hits_by_set"},
                "hits_by_set": dict(sorted(record["hits_by_set"].items())),
                "duplicate_rows": report.duplicates.get(name, 0),
            }
            for name, record in sorted(sources.items())
        ],
        "duplicate_pairs": [
            {"first": first, "later": later, "rows": rows}
            for (first, later), rows in sorted(report.pairs.items())
        ],
    }
