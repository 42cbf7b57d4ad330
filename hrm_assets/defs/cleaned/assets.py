"""Cleaned sources: ``cleaned/<source>`` writes data_io's rows at data_io's relative paths."""

import json
import tempfile
from pathlib import Path

import dagster as dg

from hrm_assets.cleaning.clean import ProgressLog, clean_source, source_code_version
from hrm_assets.cleaning.raw_versions import observe_raw
from hrm_assets.cleaning.sources import SOURCES, SourceSpec
from hrm_assets.common.build_record import is_current, read_record, write_record
from hrm_assets.common.hashing import file_sha256, tree_sha256, value_sha256
from hrm_assets.common.layout import CleanedFile
from hrm_assets.common.storage import ObjectRoot, cache_root, remote_tree_sha256
from hrm_assets.defs.cleaned.adopted import record_adopted_source
from hrm_assets.defs.cleaned.checks import (
    ROWS_VALID,
    rows_valid_from_summary,
    rows_valid_result,
    rows_valid_spec,
    rows_valid_summary,
)
from hrm_assets.defs.common.automation import freshness_policy, on_upstream_data_change
from hrm_assets.defs.common.keys import CLEANED_PREFIX, cleaned_key, raw_key
from hrm_assets.defs.common.metadata import table
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.tokenized.partitions import sync_partitions
from hrm_assets.tokenization.partitioning import files_of_source
from hrm_assets.tokenization.remote import RemoteCleaned

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
        # records/s, raw MB/s, engine and threads of the run that wrote the files
        **{
            f"speed/{key}": value
            for key, value in summary.get("speed", {}).items()
            if value is not None
        },
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
        if data_paths.adopted_cleaned_roots:  # an adopted corpus is recorded, never cleaned
            return record_adopted_source(context, spec, data_paths)
        raw_path = data_paths.raw_path
        observation = observe_raw(spec, raw_path)
        inputs = value_sha256({"raw": observation.version, "code": source_code_version(spec)})
        location = data_paths.cleaned_location
        if isinstance(location, ObjectRoot):
            return clean_into_object_storage(
                context, spec, location, data_paths, raw_path, observation, inputs
            )
        cleaned_root = data_paths.cleaned_root
        record_path = cleaned_root / BUILD_RECORDS / f"{spec.name}.json"
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
            meter = ProgressLog(context.log.info, spec.name)
            report = clean_source(
                spec, cleaned_root, raw_path, progress=meter.records, progress_bytes=meter.raw_bytes
            )
            context.log.info(report.summary())
            for item in before:
                if item.relative not in report.files:
                    context.log.info(f"removing {item.relative}: {spec.name} no longer writes it")
                    item.path.unlink(missing_ok=True)
            summary = {**report.as_dict(), "speed": report.speed()}
        outputs = files_of_source(spec, cleaned_root)
        version = _content_version(cleaned_root, outputs)
        if not unchanged:
            write_record(record_path, inputs, version, report=summary)
        _sync_partitions(context, spec, cleaned_root, data_paths.tokenized_root, outputs)
        return _result(version, summary, observation.version, unchanged, rows_valid_result(outputs))

    return cleaned


def clean_into_object_storage(
    context: dg.AssetExecutionContext,
    spec: SourceSpec,
    location: ObjectRoot,
    data_paths: DataPaths,
    raw_path,
    observation,
    inputs: str,
) -> dg.MaterializeResult:
    """The cleaned asset on a remote root: decide from one listing, the objects' stored
    SHA-256 (HEADs) and the build record (a small GET), never by reading the data; clean into
    a local staging folder, then upload each file with one PUT (its SHA-256 stored with it).
    The data version is the local one: ``tree_sha256`` of the same bytes."""
    remote = RemoteCleaned.scan(location)
    store = remote.store
    record_key = f"{BUILD_RECORDS}/{spec.name}.json"
    before = files_of_source(spec, remote.local, remote.files())
    heads = remote.heads(before)
    record = read_record_bytes(store.get_bytes(record_key))
    ours = all(info.sha256 for info in heads.values())
    unchanged = (
        observation.problem is None
        and bool(before)
        and ours
        and is_current(record, inputs, remote_tree_sha256(heads.values()))
        and isinstance(record.get(ROWS_VALID), dict)
    )
    if unchanged:
        context.log.info(f"raw data and code of {spec.name} unchanged: nothing rewritten")
        summary, rows_valid = record["report"], record[ROWS_VALID]
        version = record["outputs"]
    else:
        cache_root().mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".tmp-cleaned-", dir=cache_root()) as staging:
            staging = Path(staging)
            meter = ProgressLog(context.log.info, spec.name)
            report = clean_source(
                spec, staging, raw_path, progress=meter.records, progress_bytes=meter.raw_bytes
            )
            context.log.info(report.summary())
            staged = files_of_source(spec, staging)
            rows_valid = rows_valid_summary(staged)
            version = _content_version(staging, staged)
            uploaded = 0
            for item in staged:
                digest = file_sha256(item.path)
                known = heads.get(item.relative)
                if known is None or known.sha256 != digest:
                    store.put_file(item.relative, item.path, sha256=digest)
                    uploaded += 1
            context.log.info(f"{uploaded} of {len(staged)} file(s) uploaded to {location}")
        for item in before:
            if item.relative not in report.files and heads[item.relative].sha256:
                # Only objects carrying our SHA-256 metadata: files this asset wrote.
                context.log.info(f"removing {item.relative}: {spec.name} no longer writes it")
                store.delete([item.relative])
        summary = {**report.as_dict(), "speed": report.speed()}
        record_text = json.dumps(
            {"inputs": inputs, "outputs": version, "report": summary, ROWS_VALID: rows_valid},
            sort_keys=True,
            indent=1,
        )
        store.put_bytes(record_key, record_text.encode("utf-8"))
        remote = RemoteCleaned.scan(location)
    outputs = files_of_source(spec, remote.local, remote.files())
    _sync_partitions(context, spec, remote.local, data_paths.tokenized_location, outputs)
    return _result(
        version,
        summary,
        observation.version,
        unchanged,
        rows_valid_from_summary(rows_valid),
        location=str(location),
    )


def _sync_partitions(context, spec: SourceSpec, cleaned_root: Path, tokenized_at, outputs) -> None:
    """A tokenized partition for each of the source's cleaned files, and none for files gone."""
    added, removed = sync_partitions(context.instance, spec, cleaned_root, tokenized_at, outputs)
    if added or removed:
        context.log.info(f"tokenized partitions: +{len(added)} -{len(removed)}")


def _result(
    version: str,
    summary: dict,
    raw_version: str,
    unchanged: bool,
    rows_valid: dg.AssetCheckResult,
    **extra_metadata,
) -> dg.MaterializeResult:
    """The cleaned asset's record: its content version, the cleaning figures and the check."""
    return dg.MaterializeResult(
        data_version=dg.DataVersion(version),
        metadata={
            **cleaning_metadata(summary),
            "content_sha256": version,
            "raw_version": raw_version,
            "rebuilt": not unchanged,
            **extra_metadata,
        },
        check_results=[rows_valid],
    )


def read_record_bytes(data: bytes | None) -> dict | None:
    try:
        record = json.loads(data) if data is not None else None
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


CLEANED_ASSETS = [build_cleaned_asset(spec) for spec in SOURCES.values()]
