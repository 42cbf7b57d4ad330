"""Cleaned sources: ``cleaned/<source>`` writes data_io's rows at data_io's relative paths."""

import dagster as dg

from hrm_assets.cleaning.clean import clean_source, source_code_version
from hrm_assets.cleaning.raw_versions import observe_raw
from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.common.build_record import is_current, read_record, write_record
from hrm_assets.common.hashing import tree_sha256, value_sha256
from hrm_assets.common.layout import CleanedFile
from hrm_assets.defs.cleaned.checks import rows_valid_result, rows_valid_spec
from hrm_assets.defs.common.automation import freshness_policy, on_upstream_data_change
from hrm_assets.defs.common.keys import CLEANED_PREFIX, cleaned_key, raw_key
from hrm_assets.defs.common.metadata import table
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import sync_partitions
from hrm_assets.tokenization.partitioning import files_of_source

BUILD_RECORDS = ".hrm-build"  # hidden: the cleaned-file scan ignores it


def _content_version(cleaned_root, files: list[CleanedFile]) -> str:
    return tree_sha256(cleaned_root, [item.path for item in files])


def cleaning_metadata(summary: dict) -> dict:
    """Rows per file, skips by reason with examples, tag histogram, preview, bytes.

    ``summary`` is :meth:`CleaningReport.as_dict` (also kept in the build record, so a skipped
    rebuild shows the figures of the run that wrote the files).
    """
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
        "dagster/row_count": summary["rows_written"],
        "records_read": summary["records_read"],
        "rows_written": summary["rows_written"],
        "rows_skipped": summary["rows_skipped"],
        "bytes_written": summary["bytes_written"],
        "files": table(files, ["file", "rows", "bytes"]),
        "tags": table([{"tag": tag, "rows": n} for tag, n in summary["tags"].items()]),
        "conditions": table(
            [{"condition": c or "(empty)", "rows": n} for c, n in summary["conditions"].items()]
        ),
        "skipped": table(skipped, ["reason", "count", "example", "where"]),
        "skipped_examples": dg.MetadataValue.json(summary["skipped"]),
        "preview": table(preview, ["file", "condition", "instruction", "response"]),
        "seconds": summary["seconds"],
    }


def build_cleaned_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    @dg.asset(
        key=cleaned_key(spec.name),
        group_name=CLEANED_PREFIX,
        deps=[raw_key(spec.name)],
        # A declared source's rules are its sources.yaml entry: the UI can filter on kind yaml.
        kinds={"yaml" if spec.rules_version else "python", spec.format},
        description=spec.description or f"data_io's cleaned rows of {spec.name}",
        code_version="1",
        automation_condition=on_upstream_data_change(),
        freshness_policy=freshness_policy("cleaned"),
        check_specs=[rows_valid_spec(spec)],
    )
    def cleaned(context: dg.AssetExecutionContext, data_paths: DataPaths) -> dg.MaterializeResult:
        cleaned_root = data_paths.cleaned_root
        record_path = cleaned_root / BUILD_RECORDS / f"{spec.name}.json"
        observation = observe_raw(spec, data_paths.raw_path)
        inputs = value_sha256({"raw": observation.version, "code": source_code_version(spec)})
        before = files_of_source(spec, cleaned_root)
        record = read_record(record_path)
        unchanged = (
            observation.problem is None
            and bool(before)
            and is_current(record, inputs, _content_version(cleaned_root, before))
        )
        if unchanged:
            context.log.info(f"raw data and code of {spec.name} unchanged: nothing rewritten")
            summary = record["report"]
        else:
            report = clean_source(spec, cleaned_root, raw_root=data_paths.raw_path)
            context.log.info(report.summary())
            for item in before:
                if item.relative not in report.files:
                    context.log.info(f"removing {item.relative}: {spec.name} no longer writes it")
                    item.path.unlink(missing_ok=True)
            summary = report.as_dict()
        outputs = files_of_source(spec, cleaned_root)
        version = _content_version(cleaned_root, outputs)
        if not unchanged:
            write_record(record_path, inputs, version, report=summary)
        added, removed = sync_partitions(
            context.instance, spec, cleaned_root, data_paths.tokenized_root, outputs
        )
        if added or removed:
            context.log.info(f"tokenized partitions: +{len(added)} -{len(removed)}")
        return dg.MaterializeResult(
            data_version=dg.DataVersion(version),
            metadata={
                **cleaning_metadata(summary),
                "content_sha256": version,
                "raw_version": observation.version,
                "rebuilt": not unchanged,
            },
            check_results=[rows_valid_result(outputs)],
        )

    return cleaned


CLEANED_ASSETS = [build_cleaned_asset(spec) for spec in SOURCES.values()]
