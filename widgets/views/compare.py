"""Side by side: the three Key_Shared selectors on the same keys — load per consumer and keys that move.

Draws the metrics of `pulsarlab.scenarios.distribution` (docs/guide/key-shared-selectors.md: auto-split, consistent hashing,
sticky): keys per consumer, imbalance (max / mean) and the fraction of keys that change consumer when
c{N+1} joins or c1 leaves; `scale_figure` draws the same metrics from the Spark pipeline's DataFrame.
These are whole-run comparisons, not per-frame views, so they take keys or a DataFrame, not a snapshot.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pulsarlab.scenarios.distribution import SELECTOR_KINDS, distribution_metrics
from pulsarlab_widgets.views.style import legend_below

KIND_COLORS = {"auto_split": "#636efa", "consistent_hashing": "#ef553b", "sticky": "#00cc96"}


def selector_metrics(
    keys: Sequence[str | bytes],
    kinds: Sequence[str] = SELECTOR_KINDS,
    n_consumers: int = 4,
    version: str = "4.0",
    points: int = 100,
) -> dict[str, dict[str, Any]]:
    """``distribution_metrics`` for each selector kind on the same keys."""
    if isinstance(kinds, str):
        kinds = (kinds,)
    return {kind: distribution_metrics(keys, kind, n_consumers, version=version, points=points) for kind in kinds}


def compare_figure(
    keys: Sequence[str | bytes],
    kinds: Sequence[str] = SELECTOR_KINDS,
    n_consumers: int = 4,
    version: str = "4.0",
    points: int = 100,
    metrics: dict[str, dict[str, Any]] | None = None,
) -> go.Figure:
    """Three panels: keys per consumer, imbalance, and keys moved on a join / a leave."""
    metrics = metrics or selector_metrics(keys, kinds, n_consumers, version, points)
    ideal = 1 / (n_consumers + 1)
    fig = make_subplots(
        rows=1,
        cols=3,
        column_widths=[0.45, 0.2, 0.35],
        horizontal_spacing=0.07,
        subplot_titles=(
            "keys per consumer",
            "imbalance (max / mean)<br><sup>dotted: 1 = perfect balance</sup>",
            f"keys that change consumer<br><sup>dotted: ideal join {ideal:.1%}</sup>",
        ),
    )
    # bar labels stand upright above their bars (textangle -90): side by side they never run into each other,
    # however narrow the bars
    label = dict(textposition="outside", textangle=-90, cliponaxis=False, textfont=dict(size=12))
    for kind, m in metrics.items():
        color = KIND_COLORS.get(kind)
        per = m["keys_per_consumer"]
        fig.add_trace(
            go.Bar(x=list(per), y=list(per.values()), name=kind, legendgroup=kind, marker_color=color), row=1, col=1
        )
        fig.add_trace(
            go.Bar(
                x=[kind],
                y=[m["imbalance"]],
                name=kind,
                legendgroup=kind,
                showlegend=False,
                marker_color=color,
                text=[f"{m['imbalance']:.3f}"],
                **label,
            ),
            row=1,
            col=2,
        )
        fig.add_trace(
            go.Bar(
                x=[f"c{n_consumers + 1} joins", "c1 leaves"],
                y=[m["moved_on_join"], m["moved_on_leave"]],
                name=kind,
                legendgroup=kind,
                showlegend=False,
                marker_color=color,
                text=[f"{m['moved_on_join']:.1%}", f"{m['moved_on_leave']:.1%}"],
                **label,
            ),
            row=1,
            col=3,
        )
    fig.add_hline(y=ideal, line_dash="dot", row=1, col=3)
    fig.add_hline(y=1.0, line_dash="dot", row=1, col=2)
    # room above the tallest bar for its upright label
    top_imbalance = max([1.0, *(m["imbalance"] for m in metrics.values())])
    top_moved = max([ideal, *(max(m["moved_on_join"], m["moved_on_leave"]) for m in metrics.values())])
    fig.update_yaxes(range=[0, top_imbalance * 1.3], row=1, col=2)
    fig.update_yaxes(tickformat=".0%", range=[0, top_moved * 1.35], row=1, col=3)
    fig.update_xaxes(showticklabels=False, row=1, col=2)  # three narrow bars: the legend names them
    n_keys = next(iter(metrics.values()))["total_keys"] if metrics else len(keys)
    height, top, bottom = 460, 100, 110
    fig.update_layout(
        title=f"Selector comparison — {n_keys:,} keys, {n_consumers} consumers, Pulsar {version}",
        barmode="group",
        height=height,
        margin=dict(l=60, r=20, t=top, b=bottom),
        legend=legend_below(height, top, bottom, gap_px=55),
        uniformtext=dict(minsize=10, mode="show"),
    )
    return fig


def scale_figure(df: Any) -> go.Figure:
    """Imbalance and keys moved on a join per selector and consumer count, from `key_distribution`'s DataFrame."""
    missing = {"selector", "consumers", "imbalance", "moved_on_join"} - set(df.columns)
    if missing:
        raise ValueError(
            f"scale_figure needs the columns of pulsarlab.spark.key_distribution; missing {sorted(missing)}"
        )
    fig = make_subplots(rows=1, cols=2, subplot_titles=("imbalance (max / mean)", "keys moved when one consumer joins"))
    for kind, part in df.sort_values("consumers").groupby("selector", sort=False):
        color = KIND_COLORS.get(kind)
        fig.add_trace(
            go.Scatter(
                x=part["consumers"],
                y=part["imbalance"],
                mode="lines+markers",
                name=kind,
                legendgroup=kind,
                line_color=color,
            ),
            row=1,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=part["consumers"],
                y=part["moved_on_join"],
                mode="lines+markers",
                name=kind,
                legendgroup=kind,
                showlegend=False,
                line_color=color,
            ),
            row=1,
            col=2,
        )
    fig.update_xaxes(title="consumers")
    fig.update_yaxes(tickformat=".0%", row=1, col=2)
    total = int(df["total_keys"].iloc[0]) if "total_keys" in df.columns and len(df) else None
    versions = ", ".join(sorted(set(map(str, df["version"])))) if "version" in df.columns else ""
    fig.update_layout(
        title=f"Selector comparison at scale — {total:,} keys per run, Pulsar {versions} (Spark)"
        if total is not None
        else "Selector comparison at scale (Spark)",
        height=460,
        margin=dict(t=100, b=120),
        legend=legend_below(460, 100, 120, gap_px=65),
    )
    return fig


__all__ = ["KIND_COLORS", "compare_figure", "scale_figure", "selector_metrics"]
