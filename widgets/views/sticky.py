"""Sticky (STICKY-mode) hash ranges: what each consumer owns, the gaps that select nobody, rejected requests.

Draws a `HashRangeExclusiveStickyKeyConsumerSelector` snapshot: owned ranges in each
consumer's colour; hashes no consumer owns as hatched grey (their messages wait: the broker never checks
coverage); and, from ``assign_rejected`` events, the ranges a consumer asked for and was refused, in red,
with Pulsar's error text. A function ``(snapshot, events) -> go.Figure``.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from pulsarlab.scenarios.key_shared import consumer_names, fmt_range, snapshot_assignments, unowned_hashes
from pulsarlab_widgets.views.style import (
    NOBODY_COLOR,
    REJECTED_COLOR,
    check_snapshot,
    consumer_color,
    consumer_label,
    event_fields,
    event_kind,
    legend_below,
    plural,
)

OWNED_ROW = "owned"


def rejected_requests(events: Sequence[Any]) -> list[dict[str, Any]]:
    """The ``assign_rejected`` events' fields, in order."""
    return [event_fields(ev) for ev in events if event_kind(ev) == "assign_rejected"]


def sticky_view(snapshot: dict[str, Any], events: Sequence[Any] = (), title: str | None = None) -> go.Figure:
    """The figure for one sticky snapshot; rejected requests among ``events`` get a red row each."""
    check_snapshot(snapshot, "ranges", "sticky_view")
    names = consumer_names(snapshot)
    lo, hi = snapshot["key_hash_range"]
    traces: list[go.Bar] = []
    by_owner: dict[int | None, list[tuple[int, int]]] = {}
    for s, e, cid in snapshot_assignments(snapshot):
        by_owner.setdefault(cid, []).append((s, e))
    for cid in sorted(by_owner, key=lambda c: (c is None, c or 0)):
        rows = by_owner[cid]
        gap = cid is None
        traces.append(
            go.Bar(
                orientation="h",
                y=[OWNED_ROW] * len(rows),
                base=[s for s, _e in rows],
                x=[e - s + 1 for s, e in rows],
                name="no consumer: messages wait" if gap else consumer_label(cid, names),
                marker=dict(
                    color=NOBODY_COLOR if gap else consumer_color(cid),
                    pattern=dict(shape="x", fgcolor="#999999") if gap else None,
                    line=dict(color="white", width=0.5),
                ),
                text=["" if gap else names.get(cid, "") for _ in rows],
                textposition="inside",
                hovertext=[
                    f"{fmt_range(s, e)}: "
                    + ("no consumer owns these hashes, their messages wait" if gap else consumer_label(cid, names))
                    for s, e in rows
                ],
                hoverinfo="text",
            )
        )
    rejected = rejected_requests(events)
    rows_order = [OWNED_ROW]
    annotations = []
    for k, rej in enumerate(rejected):
        row = f"rejected: {rej['name']}" + (f" #{k + 1}" if sum(r["name"] == rej["name"] for r in rejected) > 1 else "")
        rows_order.insert(0, row)
        ranges = rej.get("ranges") or []
        traces.append(
            go.Bar(
                orientation="h",
                y=[row] * len(ranges),
                base=[min(s, e) for s, e in ranges],
                x=[abs(e - s) + 1 for s, e in ranges],
                name=f"rejected {rej['name']}",
                showlegend=False,
                marker=dict(color="rgba(214,39,40,0.25)", line=dict(color=REJECTED_COLOR, width=2)),
                hovertext=[f"{rej['name']} asked for {fmt_range(s, e)}: {rej['error']}" for s, e in ranges],
                hoverinfo="text",
            )
        )
        annotations.append(
            dict(
                text=f"{rej['exception']}: {rej['error']}",
                x=lo,
                xanchor="left",
                y=row,
                yshift=16,
                showarrow=False,
                font=dict(color=REJECTED_COLOR, size=11),
            )
        )
    n = len(names)
    waiting = unowned_hashes(snapshot)
    fig = go.Figure(
        data=traces,
        layout=go.Layout(
            title=dict(
                text=title
                or f"Sticky hash ranges — {snapshot.get('version', '')} STICKY: {plural(n, 'consumer')}, "
                f"{waiting:,} of {hi - lo + 1:,} hashes owned by nobody"
            ),
            barmode="overlay",
            bargap=0.45,
            xaxis=dict(title=f"sticky key hash [{lo}, {hi}]", range=[lo, hi + 1], showgrid=False),
            yaxis=dict(categoryorder="array", categoryarray=rows_order, fixedrange=True),
            annotations=annotations,
            height=290 + 60 * len(rejected),
            margin=dict(l=140, r=20, t=60, b=110),
            legend=legend_below(290 + 60 * len(rejected), 60, 110, gap_px=55),
            plot_bgcolor="white",
        ),
    )
    return fig


__all__ = ["rejected_requests", "sticky_view"]
