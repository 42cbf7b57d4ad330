"""A PNG bar chart of how full the packed sequences are, for the packed asset's metadata."""

from __future__ import annotations

import io
from collections.abc import Mapping


def fill_chart_png(fill_buckets: Mapping[str, int], efficiency: float) -> bytes:
    """Sequences per fill bucket (labels in the given order, e.g. ``100%``, ``99%-100%``),
    titled with the packing efficiency; PNG bytes."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    labels = list(fill_buckets)
    counts = [fill_buckets[label] for label in labels]
    figure = Figure(figsize=(6, 3), dpi=100)
    axes = figure.add_subplot()
    bars = axes.bar(range(len(labels)), counts, color="#4c72b0")
    axes.bar_label(bars, labels=[f"{count:,}" for count in counts], fontsize=8)
    axes.set_xticks(range(len(labels)), labels, fontsize=8)
    axes.set_xlabel("filled tokens / context_size")
    axes.set_ylabel("sequences")
    axes.set_title(f"Packed sequences by fill (efficiency {efficiency:.2%})", fontsize=10)
    axes.margins(y=0.15)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
