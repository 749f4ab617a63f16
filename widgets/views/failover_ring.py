"""The Failover hash ring of a non-partitioned topic, drawn as a ring: each consumer's 100 points and the topic.

Usage::

    from pulsarlab_widgets.views.failover_ring import failover_ring_view, failover_ring_owner
    failover_ring_view(snapshot(lab), topic="my-topic").show()

Draws the ring `AbstractDispatcherSingleActiveConsumer` builds for a Failover subscription on a non-partitioned
topic (3.0+, apache/pulsar#19502): point j of consumer ``name`` sits at ``murmur3(name + j)``, j = 0..99 (Pulsar's
Murmur3 with the sign bit cleared, so the circle spans [0, 2^31) clockwise from the top). The black diamond is
the hash of the full topic name; the active consumer owns the first point at or after it, wrapping around. Only
the consumers of the highest priority level are on the ring. Snapshot-only: the points are recomputed from the
names the snapshot lists, with that rule (a later equal name overwrites a shared point, as the broker's map
does). A function ``(snapshot, events) -> go.Figure``.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from typing import Any, Sequence

import plotly.graph_objects as go

from pulsarlab.hashing import murmur3_32
from pulsarlab.snapshot.base import short_topic
from pulsarlab.snapshot.lab import LabSnapshot, SubscriptionSnap, TopicSnap
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, empty_figure
from pulsarlab_widgets.views.style import consumer_color

POINTS_PER_CONSUMER = 100
HASH_SPACE = 2**31


def ring_points(name: str) -> list[int]:
    """The 100 points of a consumer name on the Failover ring."""
    return [murmur3_32(f"{name}{j}".encode("utf-8", "replace")) for j in range(POINTS_PER_CONSUMER)]


def failover_ring_owner(names: Sequence[str], topic: str) -> tuple[int, str]:
    """``(ring point, consumer name)`` that serves the full ``topic`` name among ``names``."""
    ring: dict[int, str] = {}
    for name in names:
        for point in ring_points(name):
            ring[point] = name
    points = sorted(ring)
    h = murmur3_32(topic.encode("utf-8", "replace"))
    at = bisect_left(points, h)
    point = points[at] if at < len(points) else points[0]
    return point, ring[point]


def _find(snap: LabSnapshot, topic: str | None, subscription: str | None) -> tuple[TopicSnap, SubscriptionSnap] | None:
    for t, s in snap.subscriptions():
        if t.partition_index >= 0 or s.type != "Failover":
            continue
        if topic is not None and short_topic(t.name) != short_topic(topic) and t.name != topic:
            continue
        if subscription is None or s.name == subscription:
            return t, s
    return None


def _xy(h: float, r: float) -> tuple[float, float]:
    angle = 2 * math.pi * h / HASH_SPACE
    return r * math.sin(angle), r * math.cos(angle)


def failover_ring_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    title: str | None = None,
    topic: str | None = None,
    subscription: str | None = None,
) -> go.Figure:
    """The ring of a Failover subscription on a non-partitioned topic, with the topic's hash and its owner."""
    snap = check_lab_snapshot(snapshot, "failover_ring_view")
    found = _find(snap, topic, subscription)
    heading = title or "Failover on a non-partitioned topic: the hash ring"
    if found is None:
        return empty_figure(heading, "no Failover subscription on a non-partitioned topic")
    t, s = found
    consumers = [c for c in s.consumers if c.connected]
    if not consumers:
        return empty_figure(heading, f"{short_topic(t.name)} / {s.name} has no consumer")
    top = min(c.priority for c in consumers)
    on_ring = [c for c in consumers if c.priority == top]
    owner_point, owner = failover_ring_owner([c.name for c in on_ring], t.name)
    h = murmur3_32(t.name.encode("utf-8", "replace"))
    fig = go.Figure()
    circle = [_xy(HASH_SPACE * i / 360, 1.0) for i in range(361)]
    fig.add_trace(
        go.Scatter(
            x=[p[0] for p in circle],
            y=[p[1] for p in circle],
            mode="lines",
            line=dict(color="#dddddd"),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    for c in on_ring:
        pts = ring_points(c.name)
        xy = [_xy(p, 1.0) for p in pts]
        fig.add_trace(
            go.Scatter(
                x=[p[0] for p in xy],
                y=[p[1] for p in xy],
                mode="markers",
                marker=dict(size=7, color=consumer_color(c.id)),
                name=f"{c.name} (100 points)" + (" - active" if c.name == owner else ""),
                text=[f"{c.name} + {j}: {p:,}" for j, p in enumerate(pts)],
                hoverinfo="text",
            )
        )
    tx, ty = _xy(h, 1.0)
    ox, oy = _xy(owner_point, 1.0)
    fig.add_trace(
        go.Scatter(
            x=[0, tx * 1.25],
            y=[0, ty * 1.25],
            mode="lines+markers",
            marker=dict(symbol="diamond", size=[1, 13], color="black"),
            line=dict(color="black", dash="dot"),
            name=f"hash of {short_topic(t.name)}: {h:,}",
            hoverinfo="name",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[ox],
            y=[oy],
            mode="markers",
            marker=dict(size=18, symbol="circle-open", color="black", line=dict(width=3)),
            name=f"first point at or after it: {owner} ({owner_point:,})",
            hoverinfo="name",
        )
    )
    lower = sorted(c.name for c in consumers if c.priority != top)
    note = f"; not on the ring (lower priority): {', '.join(lower)}" if lower else ""
    fig.update_layout(
        title=dict(text=f"{heading}<br><sub>{short_topic(t.name)} / {s.name}: active {owner}{note}</sub>"),
        height=460,
        xaxis=dict(visible=False, range=[-1.4, 1.4]),
        yaxis=dict(visible=False, range=[-1.4, 1.4], scaleanchor="x"),
        legend=dict(orientation="v", x=1.02, y=1),
        margin=dict(l=20, r=20, t=70, b=20),
        plot_bgcolor="white",
    )
    return fig
