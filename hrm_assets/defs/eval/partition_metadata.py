"""The contamination found while a file was tokenized, as metadata of its tokenized partition
(``hrm_assets.contamination.sidecar.folder_summary``; docs/CONTAMINATION.md)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from hrm_assets.defs.common.metadata import table

EXAMPLE_COLUMNS = ["row", "field", "eval_set", "eval_item", "windows", "span"]


def contamination_metadata(folder: Path | None) -> dict[str, dg.MetadataValue | int | str]:
    """``contamination/*`` entries for a tokenized partition's record, from the sidecars in
    ``folder`` (its folder, or for a bucket folder their copy); empty without sidecars
    (tokenized with them turned off)."""
    from hrm_assets.contamination.sidecar import folder_summary

    summary = None if folder is None else folder_summary(Path(folder))
    if summary is None:
        return {}
    if summary["scanned_against"] is None:
        return {"contamination/scanned_against": "no evaluation set was saved when tokenized"}
    return {
        "contamination/scanned_against": ", ".join(summary["scanned_against"]),
        "contamination/n": summary["n"],
        "contamination/rows_hit": summary["rows_hit"],
        "contamination/hits_by_set": dg.MetadataValue.json(summary["hits_by_set"]),
        "contamination/examples": table(summary["examples"], EXAMPLE_COLUMNS),
    }
