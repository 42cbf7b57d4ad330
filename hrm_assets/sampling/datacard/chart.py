"""A PNG bar chart of the share of the mix per source, for the Dagster UI.

It is kept out of the sampled folder: matplotlib writes the same bytes for the same card only
under the same matplotlib, FreeType and font files, while ``DATACARD.md`` and
``datacard.json`` depend on the inputs and the code alone (``DATACARD.md`` draws the same
shares as text bars). The PNG carries no creation time or software version, so on one machine
the same card still gives the same image.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from hrm_assets.sampling.datacard.markdown import UNREGISTERED


def share_chart_png(card: Mapping[str, Any]) -> bytes:
    """Horizontal bars: each source's share of the sampled tokens, largest on top."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    labelled = [(UNREGISTERED if s["name"] is None else s["name"], s) for s in card["sources"]]
    # barh draws the first bar at the bottom: reversed, the largest share is on top.
    ordered = sorted(labelled, key=lambda item: (-item[1]["sampled_tokens"], item[0]))[::-1]
    names = [name for name, _ in ordered]
    sources = [source for _, source in ordered]
    shares = [100.0 * s["token_share"] for s in sources]
    figure = Figure(figsize=(7.0, 0.8 + 0.32 * max(1, len(names))), dpi=100)
    axes = figure.add_subplot()
    bars = axes.barh(range(len(names)), shares, color="#4c78a8")
    axes.set_yticks(range(len(names)), labels=names, fontsize=8)
    axes.bar_label(bars, labels=[f"{share:.1f}%" for share in shares], fontsize=7, padding=2)
    axes.set_xlim(0, max([*shares, 1.0]) * 1.15)
    axes.set_xlabel("share of sampled tokens (%)")
    axes.set_title("Share of the mix per source")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
