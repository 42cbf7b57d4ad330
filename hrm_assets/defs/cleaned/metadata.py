"""What the UI shows of a cleaning run: rows per file, skips by reason with examples, the tag
and condition histograms, a preview, bytes and speed."""

import dagster as dg

from hrm_assets.defs.common.metadata import table


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
