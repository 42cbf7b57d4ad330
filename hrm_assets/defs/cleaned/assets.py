"""Cleaned sources: ``cleaned/<source>`` writes data_io's rows at data_io's relative paths."""

from __future__ import annotations

import dagster as dg

from hrm_assets.cleaning import CleaningReport, clean_source
from hrm_assets.defs.common.keys import CLEANED_PREFIX, cleaned_key, raw_key
from hrm_assets.defs.common.metadata import table
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import sync_partitions
from hrm_assets.hashing import tree_sha256
from hrm_assets.partitioning import files_of_source
from hrm_assets.sources import SOURCES, SourceSpec


def cleaning_metadata(report: CleaningReport) -> dict:
    """Rows per file, skips by reason with examples, tag histogram, preview, bytes."""
    summary = report.as_dict()
    files = [
        {"file": path, "rows": item["rows"], "bytes": item["bytes"]}
        for path, item in summary["files"].items()
    ]
    skipped = [
        {
            "reason": reason,
            "count": entry["count"],
            "example": (entry["examples"][0]["detail"] if entry["examples"] else ""),
            "where": (
                f"{entry['examples'][0]['file']} row {entry['examples'][0]['row']} "
                f"({entry['examples'][0]['raw']})"
                if entry["examples"]
                else ""
            ),
        }
        for reason, entry in summary["skipped"].items()
    ]
    preview = [
        {"file": path, **row} for path, item in summary["files"].items() for row in item["preview"]
    ][:10]
    return {
        "dagster/row_count": report.rows_written,
        "records_read": report.records_read,
        "rows_written": report.rows_written,
        "rows_skipped": report.rows_skipped,
        "bytes_written": report.bytes_written,
        "files": table(files, ["file", "rows", "bytes"]),
        "tags": table([{"tag": tag, "rows": n} for tag, n in summary["tags"].items()]),
        "conditions": table(
            [{"condition": c or "(empty)", "rows": n} for c, n in summary["conditions"].items()]
        ),
        "skipped": table(skipped, ["reason", "count", "example", "where"]),
        "skipped_examples": dg.MetadataValue.json(summary["skipped"]),
        "preview": table(preview, ["file", "condition", "instruction", "response"]),
        "seconds": round(report.seconds, 2),
    }


def build_cleaned_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=cleaned_key(spec.name),
        group_name=CLEANED_PREFIX,
        deps=[raw_key(spec.name)],
        kinds={"python", spec.format},
        description=spec.description or f"data_io's cleaned rows of {spec.name}",
        code_version="1",
    )
    def cleaned(context: dg.AssetExecutionContext, data_paths: DataPaths) -> dg.MaterializeResult:
        cleaned_root = data_paths.cleaned_root
        before = files_of_source(spec, cleaned_root)
        report = clean_source(spec, cleaned_root, raw_root=data_paths.raw_path)
        context.log.info(report.summary())
        for item in before:
            if item.relative not in report.files:
                context.log.info(f"removing {item.relative}: no longer produced by {spec.name}")
                item.path.unlink(missing_ok=True)
        outputs = files_of_source(spec, cleaned_root)
        added, removed = sync_partitions(
            context.instance, spec, cleaned_root, data_paths.tokenized_root, outputs
        )
        if added or removed:
            context.log.info(f"tokenized partitions: +{len(added)} -{len(removed)}")
        version = tree_sha256(cleaned_root, [item.path for item in outputs])
        return dg.MaterializeResult(
            data_version=dg.DataVersion(version),
            metadata={**cleaning_metadata(report), "content_sha256": version},
        )

    return cleaned


CLEANED_ASSETS = [build_cleaned_asset(spec) for spec in SOURCES.values()]
