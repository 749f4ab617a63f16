"""The redelivery trackers' internals: the ack-timeout ring turning and the negative-ack deadlines or buckets.

Usage::

    from pulsarlab_widgets.views.redelivery_trackers import redelivery_trackers_view
    Player(rec, [functools.partial(redelivery_trackers_view, consumer="c1")])
    redelivery_trackers_view(snapshot(lab), consumer="c1").show()

Left (ack timeout): the client's `UnAckedMessageTracker`, a ring of ``ceil(ackTimeout / tick) + 1`` sets of
message ids, head first. A received message enters the newest set; every tick the head set is redelivered and
re-joins empty as the newest, so the bar at position k times out at the (k+1)-th next tick - a message times
out between ``ceil(ackTimeout/tick)·tick`` and one tick later. Right (negative acks): the `NegativeAcksTracker` entries
over time: 3.x keeps a deadline per id and checks every delay/3 (dotted lines: the next checks), 4.0.2+ puts
each id in a 2^8 = 256 ms bucket rounded down (shaded) and redelivers a bucket when its timer reaches it, so up
to 255 ms early. The dashed line is now, the red one the armed timer. Candidates for the dead-letter topic
are listed in the title. A function ``(snapshot, events) -> go.Figure``.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pulsarlab.snapshot.base import short_topic
from pulsarlab.snapshot.lab import LabSnapshot
from pulsarlab.snapshot.redelivery import ClientTrackersSnap
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, empty_figure, events_of

HEAD_COLOR = "#d62728"
RING_COLOR = "#9ecae1"
NACK_COLOR = "#ff7f0e"
BUCKET_COLOR = "rgba(255, 127, 14, 0.12)"
MAX_IDS_IN_BAR = 6


def pick_tracker(snapshot: LabSnapshot, consumer: int | str | None) -> ClientTrackersSnap | None:
    """The consumer's trackers (by name or id); by default the first consumer with an ack timeout, negative
    acks or a dead-letter policy, else the first consumer."""
    red = snapshot.redelivery
    if red is None or not red.trackers:
        return None
    if consumer is not None:
        return red.tracker(consumer)
    for t in red.trackers:
        if t.ack_timeout_ms is not None or t.nacks or t.max_redeliver_count is not None:
            return t
    return red.trackers[0]


def _ids_text(ids: Sequence[tuple[int, int, int]]) -> str:
    shown = [f"{l}:{e}" for l, e, _p in ids[:MAX_IDS_IN_BAR]]
    if len(ids) > MAX_IDS_IN_BAR:
        shown.append(f"+{len(ids) - MAX_IDS_IN_BAR}")
    return "<br>".join(shown)


def _ring(fig: go.Figure, t: ClientTrackersSnap, now: int) -> None:
    if t.ack_timeout_ms is None:
        fig.add_annotation(
            text="ack timeout off<br>(unacked_messages_timeout_ms)",
            x=sum(fig.layout.xaxis.domain) / 2,  # paper: plotly draws no axes for a subplot without a trace
            xanchor="center",
            y=0.5,
            showarrow=False,
            xref="paper",
            yref="paper",
            font=dict(size=13),
        )
        fig.update_xaxes(visible=False, row=1, col=1)
        fig.update_yaxes(visible=False, row=1, col=1)
        return
    tick = t.tick_ms or 0
    first = t.next_tick_ms
    xs, ys, texts, hovers, colors = [], [], [], [], []
    for k, ids in enumerate(t.ring):
        when = f"t = {first + k * tick} ms" if first is not None else f"{k + 1} tick(s) after the next add"
        xs.append("head" if k == 0 else f"+{k}")
        ys.append(len(ids))
        texts.append(_ids_text(ids))
        hovers.append(
            f"set {k} (times out at the {k + 1}. next tick, {when}): "
            + (", ".join(f"{l}:{e}:{p}" for l, e, p in ids) or "empty")
        )
        colors.append(HEAD_COLOR if k == 0 else RING_COLOR)
    fig.add_trace(
        go.Bar(
            x=xs,
            y=ys,
            text=texts,
            textposition="inside",
            insidetextanchor="start",
            marker=dict(color=colors),
            hovertext=hovers,
            hoverinfo="text",
            name="ring set",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    fig.update_yaxes(
        title_text="ids in the set", rangemode="tozero", dtick=1 if max(ys, default=0) <= 10 else None, row=1, col=1
    )
    fig.update_xaxes(title_text=f"ring sets, head first (tick {tick} ms)", row=1, col=1)


def _nacks(fig: go.Figure, t: ClientTrackersSnap, now: int) -> None:
    buckets = t.nack_form == "time_buckets"
    if not t.nacks:
        fig.add_annotation(
            text="no negative ack held",
            x=0.5,
            y=0.5,
            showarrow=False,
            xref="x2 domain",
            yref="y2 domain",
            font=dict(size=13),
        )
        # an invisible point at now: plotly draws no axes (nor the now line) for a subplot without a trace
        fig.add_trace(
            go.Scatter(x=[now], y=[0], mode="markers", marker=dict(opacity=0), hoverinfo="skip", showlegend=False),
            row=1,
            col=2,
        )
        fig.update_yaxes(showticklabels=False, showgrid=False, row=1, col=2)
    labels = [
        f"{n.ledger}:{n.entry}" + (f" ({short_topic(n.topic)})" if len({m.topic for m in t.nacks}) > 1 else "")
        for n in t.nacks
    ]
    if t.nacks:
        fig.add_trace(
            go.Scatter(
                x=[n.due_ms for n in t.nacks],
                y=labels,
                mode="markers",
                name="due",
                marker=dict(symbol="triangle-right" if not buckets else "square", size=12, color=NACK_COLOR),
                hovertext=[
                    f"{lab} due at t = {n.due_ms} ms ({'bucket' if buckets else 'deadline'})"
                    for lab, n in zip(labels, t.nacks)
                ],
                hoverinfo="text",
                showlegend=False,
            ),
            row=1,
            col=2,
        )
        if buckets:
            for due in sorted({n.due_ms for n in t.nacks}):
                fig.add_vrect(
                    x0=due,
                    x1=due + t.nack_step_ms,
                    fillcolor=BUCKET_COLOR,
                    line_width=1,
                    line_color="rgba(255, 127, 14, 0.5)",
                    row=1,
                    col=2,
                )
    if not buckets and t.next_nack_ms is not None:
        for k in range(1, 4):
            fig.add_vline(
                x=t.next_nack_ms + k * t.nack_step_ms, line=dict(color="#bbbbbb", dash="dot", width=1), row=1, col=2
            )
    fig.add_vline(x=now, line=dict(color="#555555", dash="dash", width=1), row=1, col=2)
    if t.next_nack_ms is not None:
        fig.add_vline(x=t.next_nack_ms, line=dict(color=HEAD_COLOR, width=2), row=1, col=2)
    lo = min([now] + [n.due_ms for n in t.nacks])
    hi = max(
        [now + t.nack_delay_ms]
        + [n.due_ms + t.nack_step_ms for n in t.nacks]
        + ([t.next_nack_ms] if t.next_nack_ms is not None else [])
    )
    fig.update_xaxes(title_text="virtual time (ms)", range=[lo - 50, hi + 50], row=1, col=2)


def redelivery_trackers_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    consumer: int | str | None = None,
    title: str | None = None,
) -> go.Figure:
    """One consumer's ack-timeout ring and negative-ack entries at this snapshot."""
    snap = check_lab_snapshot(snapshot, "redelivery_trackers_view")
    head = title or "Redelivery trackers"
    t = pick_tracker(snap, consumer)
    if t is None:
        return empty_figure(head, "no consumer yet: subscribe a consumer first")
    form = (
        "3.x deadline map, checked every delay/3"
        if t.nack_form == "deadline_map"
        else f"4.x time buckets of {t.nack_step_ms} ms"
    )
    ring_title = (
        "ack-timeout ring<br>(UnAckedMessageTracker)"
        if t.ack_timeout_ms is None
        else f"ack-timeout ring: {len(t.ring)} sets<br>timeout {t.ack_timeout_ms} ms, tick {t.tick_ms} ms"
    )
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.42, 0.58],
        horizontal_spacing=0.12,
        subplot_titles=[ring_title, f"negative acks, delay {t.nack_delay_ms} ms<br>{form}"],
    )
    fig.update_annotations(font=dict(size=13))
    _ring(fig, t, snap.time)
    _nacks(fig, t, snap.time)
    parts = [
        f"{t.name} on {', '.join(short_topic(x) for x in t.topics)} / {t.subscription} ({t.type})",
        f"t = {snap.time} ms",
    ]
    if t.next_tick_ms is not None:
        parts.append(f"next tick t = {t.next_tick_ms} ms")
    elif t.ack_timeout_ms is not None:
        parts.append("ring idle (nothing tracked)")
    if t.next_nack_ms is not None:
        parts.append(f"nack timer t = {t.next_nack_ms} ms")
    if t.max_redeliver_count is not None:
        cands = ", ".join(f"{l}:{e}" for l, e in t.dlq_candidates) or "none"
        parts.append(f"maxRedeliverCount {t.max_redeliver_count}, DLQ candidates: {cands}")
    fired = [
        f for _k, f in events_of(events, "ack_timeout_tick") if f.get("consumer") == t.consumer and f.get("timed_out")
    ]
    if fired:
        parts.append(f"this step: {sum(f['timed_out'] for f in fired)} timed out")
    fig.update_layout(
        title=dict(
            text=f"{head}<br><sup>{' · '.join(parts[:2])}<br>{' · '.join(parts[2:])}</sup>",
            yref="container",
            y=1 - 16 / 420,  # 16 px from the top: the subplot titles (two lines) need the rest of the margin
            yanchor="top",
        ),
        height=420,
        margin=dict(l=60, r=20, t=150, b=60),
        plot_bgcolor="white",
        showlegend=False,
    )
    return fig


__all__ = ["pick_tracker", "redelivery_trackers_view"]
