"""The hash-range bar: which consumer each key hash goes to, and what moved in the last step.

Draws a Key_Shared selector snapshot (docs/guide/key-shared-selectors.md: auto-split's range map, the 4.x assignments of a
consistent-hash ring, sticky ranges) as one horizontal bar over the key-hash range, one colour per
consumer; a second row shows the ranges that changed owner in the events since the last frame. A view
is a function ``(snapshot, events) -> go.Figure`` so the player can show it live and ``to_html`` can
render it statically.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from pulsarlab.scenarios.key_shared import consumer_names, fmt_range, snapshot_assignments
from pulsarlab_widgets.views.style import (
    check_snapshot,
    consumer_color,
    consumer_label,
    event_fields,
    event_kind,
    kind_label,
    legend_below,
    plural,
)

OWNER_ROW = "assignments"
MOVED_ROW = "moved this step"


def moved_ranges(events: Sequence[Any]) -> list[tuple[int, int, str, int | None, str]]:
    """``(start, end, from_name, to_id, to_name)`` for every range that changed owner in ``events``."""
    out: dict[tuple[int, int, int | None], tuple[int, int, str, int | None, str]] = {}
    for ev in events:
        kind, f = event_kind(ev), event_fields(ev)
        if kind == "hash_ranges_moved":
            for s, e in f["ranges"]:
                out[(s, e, f["to_id"])] = (s, e, f["from_name"], f["to_id"], f["to_name"])
        elif kind == "range_split":
            s, e = f["taken"]
            out.setdefault((s, e, f["consumer"]), (s, e, f["donor_name"], f["consumer"], f["name"]))
        elif kind == "range_merged":
            s, e = f["freed"]
            out.setdefault((s, e, f["into"]), (s, e, f["name"], f["into"], f["into_name"]))
    return sorted(out.values())


def _bars(
    items, y: str, names: dict[int, str], legend: bool, pattern: str = "", nobody: str = "no consumer (messages wait)"
) -> list[go.Bar]:
    by_owner: dict[int | None, list[tuple[int, int, str]]] = {}
    for start, end, cid, hover in items:
        by_owner.setdefault(cid, []).append((start, end, hover))
    traces = []
    for cid in sorted(by_owner, key=lambda c: (c is None, c or 0)):
        rows = by_owner[cid]
        label = consumer_label(cid, names)
        traces.append(
            go.Bar(
                orientation="h",
                y=[y] * len(rows),
                base=[s for s, _e, _h in rows],
                x=[e - s + 1 for s, e, _h in rows],
                name=label if cid is not None else nobody,
                legendgroup=str(cid),
                showlegend=legend,
                marker=dict(
                    color=consumer_color(cid),
                    line=dict(color="white", width=0.5),
                    pattern=dict(shape=pattern) if pattern else None,
                ),
                hovertext=[h for _s, _e, h in rows],
                hoverinfo="text",
                text=[names.get(cid, "") if cid is not None else "" for _ in rows],
                textposition="inside",
                insidetextanchor="middle",
            )
        )
    return traces


def _moved_bar(items, names: dict[int, str]) -> go.Bar:
    """The ranges that moved this step, hatched, each in the colour of the consumer it moved to."""
    return go.Bar(
        orientation="h",
        y=[MOVED_ROW] * len(items),
        base=[s for s, _e, _c, _h in items],
        x=[e - s + 1 for s, e, _c, _h in items],
        name="moved this step",
        showlegend=False,
        marker=dict(
            color=[consumer_color(c) for _s, _e, c, _h in items],
            line=dict(color="white", width=0.5),
            pattern=dict(shape="/"),
        ),
        hovertext=[h for _s, _e, _c, h in items],
        hoverinfo="text",
        text=[names.get(c, "") if c is not None else "" for _s, _e, c, _h in items],
        textposition="inside",
        insidetextanchor="middle",
    )


def hash_range_view(snapshot: dict[str, Any], events: Sequence[Any] = (), title: str | None = None) -> go.Figure:
    """The figure for one snapshot; ``events`` (since the previous frame) mark what moved."""
    check_snapshot(snapshot, "consumers", "hash_range_view")
    names = consumer_names(snapshot)
    lo, hi = snapshot["key_hash_range"]
    assignments = snapshot_assignments(snapshot)
    owner_items = [
        (s, e, cid, f"{consumer_label(cid, names)}: {fmt_range(s, e)}, {e - s + 1} hashes") for s, e, cid in assignments
    ]
    # a consumer that joined in this step and owns no range yet: auto-split and consistent hashing place it in
    # the next step (auto-split's first consumer joins, then gets the whole range); sticky may reject it
    owners = {cid for _s, _e, cid in assignments}
    added = {event_fields(ev).get("consumer") for ev in events if event_kind(ev) == "consumer_added"}
    placed_next = snapshot.get("kind") in ("auto_split", "consistent_hashing")
    joining = [cid for cid in names if cid not in owners and cid in added] if placed_next else []
    nobody = "no consumer (messages wait)"
    if joining and None in owners:
        who = ", ".join(names[c] for c in joining)
        nobody = f"not assigned yet: {who} joined, placed in the next step"
        owner_items = [
            (s, e, cid, h if cid is not None else f"{fmt_range(s, e)}: not assigned yet ({who} joined)")
            for s, e, cid, h in owner_items
        ]
    traces = _bars(owner_items, OWNER_ROW, names, legend=True, nobody=nobody)
    moved = moved_ranges(events)
    moved_items = [(s, e, to, f"{fmt_range(s, e)} moved from {frm} to {to_name}") for s, e, frm, to, to_name in moved]
    rows = [OWNER_ROW]
    # the moved ranges are one trace in every frame (empty when nothing moved): a step restyles it instead of
    # adding and deleting traces
    traces.append(_moved_bar(moved_items, names))
    if moved_items:
        rows = [MOVED_ROW, OWNER_ROW]
    top = max([hi] + [e for s, e, _c in assignments])
    n = len(names)
    # compact enough that lab 01's ring player (controls, ring and this bar) fits a 720 px screen
    height = 190 if len(rows) == 1 else 230
    margin = dict(l=120, r=20, t=45, b=95)
    fig = go.Figure(
        data=traces,
        layout=go.Layout(
            title=dict(
                text=title or f"Hash ranges — {kind_label(snapshot)}: {plural(n, 'consumer')}",
            ),
            barmode="overlay",
            xaxis=dict(title=f"sticky key hash [{lo}, {hi}]", range=[lo, top + 1], showgrid=False),
            yaxis=dict(categoryorder="array", categoryarray=rows, fixedrange=True),
            height=height,
            margin=margin,
            legend=legend_below(height, margin["t"], margin["b"], gap_px=50),
            uniformtext=dict(minsize=9, mode="hide"),
            plot_bgcolor="white",
        ),
    )
    if not names:
        fig.add_annotation(text="no consumer attached", x=(lo + top) / 2, y=OWNER_ROW, showarrow=False)
    elif joining and None in owners:
        fig.add_annotation(text=nobody, x=(lo + top) / 2, y=OWNER_ROW, showarrow=False)
    return fig


__all__ = ["hash_range_view", "moved_ranges"]
