"""The consistent-hash ring: every consumer's points around a circle, the arcs they serve, keys landing.

Draws a `ConsistentHashingStickyKeyConsumerSelector` snapshot (PIP-119): the key-hash range
([1, 65535] in 4.x, every 31-bit hash in 3.x) runs clockwise from the top; each point sits on the outer
circle in its consumer's colour and serves the arc just before it; points shared by several consumers
(collisions) are crosses. Keys selected in the events since the last frame travel clockwise along an
inner circle to the point that serves them. A function ``(snapshot, events) -> go.Figure``.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from pulsarlab.scenarios.key_shared import consumer_names, fmt_range, snapshot_assignments
from pulsarlab_widgets.views.style import (
    HIGHLIGHT_COLOR,
    check_snapshot,
    consumer_color,
    consumer_label,
    event_fields,
    event_kind,
    plural,
)

ARC_R = 1.0
POINT_R = 1.1
KEY_R = 0.72
_STEP_DEG = 1.5
_POINT_EVENTS = (
    "ring_point_added",
    "ring_point_removed",
    "ring_point_collision",
    "ring_point_taken_over",
    "ring_point_collision_cleared",
)


def _angle(h: float, lo: int, hi: int) -> float:
    return 360.0 * (h - lo) / (hi - lo + 1)


def _arc_thetas(t0: float, t1: float) -> list[float]:
    n = max(2, int((t1 - t0) / _STEP_DEG) + 2)
    return [t0 + (t1 - t0) * k / (n - 1) for k in range(n)]


def _ticks(lo: int, hi: int) -> tuple[list[float], list[str]]:
    size = hi - lo + 1
    values = [lo + size * k // 8 for k in range(8)]
    return [_angle(v, lo, hi) for v in values], [f"{v:,}" for v in values]


# with the hash-range bar under it (lab 01) the player fits a 720 px screen; the ring's diameter is 270 px
RING_HEIGHT_PX = 340


def ring_view(snapshot: dict[str, Any], events: Sequence[Any] = (), title: str | None = None) -> go.Figure:
    """The figure for one consistent-hashing snapshot; ``events`` (since the last frame) add keys and marks."""
    check_snapshot(snapshot, "ring", "ring_view")
    names = consumer_names(snapshot)
    lo, hi = snapshot["key_hash_range"]
    ring = snapshot["ring"]
    traces: list[go.BaseTraceType] = []

    arcs: dict[int | None, tuple[list, list]] = {}
    for s, e, cid in snapshot_assignments(snapshot):
        thetas, hover = arcs.setdefault(cid, ([], []))
        ts = _arc_thetas(_angle(s, lo, hi), _angle(e + 1, lo, hi))
        thetas.extend(ts + [None])
        hover.extend([f"{consumer_label(cid, names)} serves {fmt_range(s, e)}"] * len(ts) + [None])
    for cid in sorted(arcs, key=lambda c: (c is None, c or 0)):
        thetas, hover = arcs[cid]
        traces.append(
            go.Scatterpolar(
                r=[ARC_R if t is not None else None for t in thetas],
                theta=thetas,
                mode="lines",
                line=dict(color=consumer_color(cid), width=12),
                name=consumer_label(cid, names),
                legendgroup=str(cid),
                hovertext=hover,
                hoverinfo="text",
            )
        )

    by_owner: dict[int, list[tuple[int, tuple]]] = {}
    shared = []
    for point, selected, others in ring:
        by_owner.setdefault(selected, []).append((point, tuple(others)))
        if others:
            shared.append((point, selected, tuple(others)))
    for cid in sorted(by_owner):
        pts = by_owner[cid]
        traces.append(
            go.Scatterpolar(
                r=[POINT_R] * len(pts),
                theta=[_angle(p, lo, hi) for p, _o in pts],
                mode="markers",
                marker=dict(color=consumer_color(cid), size=7, line=dict(color="white", width=0.5)),
                name=f"{names.get(cid, cid)} points",
                legendgroup=str(cid),
                showlegend=False,
                hovertext=[f"point {p} of {names.get(cid, cid)}" for p, _o in pts],
                hoverinfo="text",
            )
        )
    traces.append(
        go.Scatterpolar(
            r=[POINT_R] * len(shared),
            theta=[_angle(p, lo, hi) for p, _s, _o in shared],
            mode="markers",
            marker=dict(
                symbol="x",
                size=13,
                color=[consumer_color(s) for _p, s, _o in shared],
                line=dict(color=HIGHLIGHT_COLOR, width=1.5),
            ),
            name=f"collisions ({len(shared)})",
            hovertext=[
                f"point {p}: {names.get(s, s)} selected; also listed: {', '.join(str(names.get(o, o)) for o in others)}"
                for p, s, others in shared
            ],
            hoverinfo="text",
        )
    )

    changed = [event_fields(ev)["point"] for ev in events if event_kind(ev) in _POINT_EVENTS]
    traces.append(
        go.Scatterpolar(
            r=[POINT_R] * len(changed),
            theta=[_angle(p, lo, hi) for p in changed],
            mode="markers",
            marker=dict(symbol="circle-open", size=20, color=HIGHLIGHT_COLOR, line=dict(width=2)),
            name="changed this step",
            hovertext=[f"point {p} changed" for p in changed],
            hoverinfo="text",
        )
    )
    traces.extend(_key_traces([event_fields(ev) for ev in events if event_kind(ev) == "key_selected"], lo, hi))

    ticks, labels = _ticks(lo, hi)
    n_points = len(ring)
    n = len(names)
    fig = go.Figure(
        data=traces,
        layout=go.Layout(
            title=dict(
                text=title
                or f"Consistent-hash ring — Pulsar {snapshot.get('version', '?')}: {plural(n, 'consumer')}, "
                f"{n_points} points, hashes [{lo:,}, {hi:,}]"
            ),
            polar=dict(
                angularaxis=dict(direction="clockwise", rotation=90, tickvals=ticks, ticktext=labels, showgrid=False),
                radialaxis=dict(visible=False, range=[0, 1.25]),
                bgcolor="white",
            ),
            showlegend=True,
            height=RING_HEIGHT_PX,
            margin=dict(l=30, r=30, t=50, b=20),
        ),
    )
    return fig


def _key_traces(keys: list[dict[str, Any]], lo: int, hi: int) -> list[go.Scatterpolar]:
    paths_t: list[float | None] = []
    paths_r: list[float | None] = []
    for k in keys:
        if k.get("point") is None:
            continue
        t0, t1 = _angle(k["hash"], lo, hi), _angle(k["point"], lo, hi)
        if t1 < t0:
            t1 += 360.0  # wraps past the top
        ts = _arc_thetas(t0, t1)
        paths_t.extend(ts + [ts[-1], None])
        paths_r.extend([KEY_R] * len(ts) + [POINT_R, None])
    return [
        go.Scatterpolar(
            r=paths_r,
            theta=paths_t,
            mode="lines",
            line=dict(color=HIGHLIGHT_COLOR, width=1.5, dash="dot"),
            name="key → its point (clockwise)",
            hoverinfo="skip",
        ),
        go.Scatterpolar(
            r=[KEY_R] * len(keys),
            theta=[_angle(k["hash"], lo, hi) for k in keys],
            mode="markers+text",
            marker=dict(
                symbol="star",
                size=14,
                color=[consumer_color(k.get("consumer")) for k in keys],
                line=dict(color=HIGHLIGHT_COLOR, width=1),
            ),
            text=[k["key"] for k in keys],
            textposition="bottom center",
            name="keys",
            hovertext=[f"key {k['key']}: hash {k['hash']} → point {k['point']} → {k['name']}" for k in keys],
            hoverinfo="text",
        ),
    ]


__all__ = ["ring_view"]
