"""What the UI shows of a sampling run: its figures, category and task tables, the mixture's
shares, the analytics report and the warnings."""

import dagster as dg

from hrm_assets.defs.common.metadata import share_bars, table


def warnings_markdown(warnings: list[str]) -> str:
    """The run's warnings as a Markdown list (``(none)`` without any)."""
    return "\n".join(f"- {warning}" for warning in warnings) if warnings else "(none)"


def analytics_metadata(summary: dict) -> dict:
    """Figures, tables and the Markdown report of a sampling run (as kept in its record)."""
    figures, categories = dict(summary["figures"]), summary["categories"]
    figures["task_count"] = figures.pop("tasks")  # "tasks" is the per-task table below
    return {
        "dagster/row_count": int(figures["sampled_rows"]),
        **figures,
        "category_token_share": dg.MetadataValue.md(
            share_bars(
                {c["category"]: c["sampled_token_share"] for c in categories},
                title="Sampled tokens",
            )
        ),
        "categories": table(categories),
        "tasks": table(summary["tasks"]),
        # Target against achieved shares per phase and group, only with a mixture.
        **({"mixture": table(summary["mixture"])} if summary.get("mixture") else {}),
        "analytics": dg.MetadataValue.md(summary["analytics"]),
    }
