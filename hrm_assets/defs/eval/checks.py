"""``contamination`` on each ``cleaned/<source>``: a warning when rows of the source share an
n-gram with an evaluation set, from the last ``eval/contamination`` report (its per-set counts
and examples as metadata). A warning, not a failure: a user decides whether to leave the rows
out (``hrm-sample decontaminate=...``)."""

import dagster as dg

from hrm_assets.cleaning.sources import SOURCES
from hrm_assets.defs.common.keys import cleaned_key
from hrm_assets.defs.common.metadata import table
from hrm_assets.defs.common.resources import DataPaths
from hrm_assets.defs.eval.assets import CONTAMINATION_KEY, report_path

CHECK_NAME = "contamination"


def check_result(source: str, result, duplicates) -> dg.AssetCheckResult:
    """The check of one source from its :class:`hrm_assets.contamination.scan.Result`."""
    metadata = {
        "rows": result.rows,
        "rows_hit": result.rows_hit,
        "rate": float(result.rate),
        "hits_by_set": dg.MetadataValue.json(result.hits_by_set),
        "examples": table(
            [
                {
                    "row": e.row,
                    "field": e.field,
                    "eval_set": e.eval_set,
                    "span": e.span,
                    "eval_text": e.eval_text,
                }
                for e in result.examples
            ],
            ["row", "field", "eval_set", "span", "eval_text"],
        ),
    }
    if duplicates is not None:
        metadata["duplicate_rows"] = duplicates.duplicates.get(source, 0)
        metadata["duplicate_pairs"] = table(
            [
                {"first": first, "later": later, "rows": count}
                for (first, later), count in sorted(duplicates.pairs.items())
                if source in (first, later)
            ],
            ["first", "later", "rows"],
        )
    return dg.AssetCheckResult(
        asset_key=cleaned_key(source),
        check_name=CHECK_NAME,
        passed=result.rows_hit == 0,
        severity=dg.AssetCheckSeverity.WARN,
        description=None
        if result.rows_hit == 0
        else f"{result.rows_hit} of {result.rows} rows share an n-gram with an evaluation set",
        metadata=metadata,
    )


def not_checked_result(source: str, report: object) -> dg.AssetCheckResult:
    """A source's check before any ``eval/contamination`` report exists: a warning saying so."""
    return dg.AssetCheckResult(
        asset_key=cleaned_key(source),
        check_name=CHECK_NAME,
        passed=False,
        severity=dg.AssetCheckSeverity.WARN,
        description=f"not checked: no contamination report yet ({report}); "
        "materialize eval/contamination",
        metadata={"report": str(report), "checked": False},
    )


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(
            CHECK_NAME,
            asset=cleaned_key(name),
            additional_deps=[CONTAMINATION_KEY],
            description="Rows sharing a word n-gram with an evaluation set (warning).",
        )
        for name in SOURCES
    ],
    can_subset=True,
)
def contamination_checks(context: dg.AssetCheckExecutionContext, data_paths: DataPaths):
    from hrm_assets.contamination.scan import Report

    path = report_path(data_paths)
    if not path.is_file():
        # Checks of the cleaned assets run with every cleaned materialization, which must not
        # fail for want of a report nobody asked for yet: each says it is not checked.
        for check_key in context.selected_asset_check_keys:
            yield not_checked_result(check_key.asset_key.path[-1], path)
        return
    report = Report.read(path)
    for check_key in context.selected_asset_check_keys:
        source = check_key.asset_key.path[-1]
        result = report.sources.get(source)
        if result is None:
            from hrm_assets.contamination.scan import Result

            result = Result(source)
        yield check_result(source, result, report.duplicates)
