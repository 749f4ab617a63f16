"""The dispatch timeline: per consumer, over the recorded steps, its permits, receiver queue and messages in flight.

Usage::

    from pulsarlab_widgets.views.dispatch_timeline import dispatch_timeline_view
    rec = Recorder(lab)                                   # history=True (the default) records the samples
    ...
    Player(rec, [dispatch_timeline_view])                 # or functools.partial(..., subscription="sub")
    dispatch_timeline_view(rec[-1].snapshot).show()       # the whole run so far

Shows flow control at work (docs/guide/flow-control.md): the broker's ``availablePermits`` of each consumer (FLOW
adds the receiver queue size, each dispatched message takes one, a batch entry takes its size and can
drive it below zero), the client's receiver queue filling as MESSAGE commands arrive and emptying as the
application calls ``receive()`` (FLOW again at half the queue), and the messages in flight - delivered
and not yet acknowledged at the broker. A blocked consumer (``maxUnackedMessagesPerConsumer``) gets a band
along its permits while blocked, with a cross where the block starts, changes and ends. The x axis is the
event index (many steps happen in the same virtual millisecond); hover shows the time. Each line is a step
line (``line_shape="hv"``) drawn through its change points only, with a marker where its value changes:
the same line as one point per sample, but a long history sends tens of points per step, not thousands.
A function ``(snapshot, events) -> go.Figure`` over the snapshot's `History`; a snapshot without history
(``snapshot(lab)``) shows the current values only.

Simplifies: a consumer on a partitioned topic is one line per subscription (its partitions summed).
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pulsarlab.snapshot.base import Sample, short_topic
from pulsarlab.snapshot.lab import LabSnapshot
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, empty_figure, events_of, pick, plural
from pulsarlab_widgets.views.style import (
    consumer_color,
    count_axis,
    index_axis,
    legend_below,
    step_points,
    translucent,
)

# a served lab's consumers are real clients: their receiver queues live in the application's process
CLIENT_QUEUE_UNKNOWN = (
    "the receiver queue is in the client's process: the broker sees only the FLOW permits it grants (above)<br>"
    "and the messages it dispatched and awaits acks for (below); count receive() calls in the app to see it"
)
PANELS = (
    ("permits", "broker permits (availablePermits)"),
    ("receiver_queue", "client receiver queue"),
    ("in_flight", "in flight (delivered, not acked)"),
)


def _base_topic(name: str) -> str:
    return name.rsplit("-partition-", 1)[0] if "-partition-" in name else name


def series(
    snapshot: LabSnapshot, topic: str | None = None, subscription: str | None = None
) -> dict[tuple[str, str, int], list[Sample]]:
    """The samples per (topic, subscription, consumer id), partitions summed, in frame order.

    Without history, one sample per consumer from the snapshot itself.
    """
    samples: list[Sample]
    if snapshot.history is not None:
        samples = list(snapshot.history)
    else:
        samples = [
            Sample(
                snapshot.event_index,
                snapshot.time,
                t.name,
                s.name,
                c.id,
                c.name,
                c.permits,
                c.receiver_queue,
                c.in_flight,
                c.blocked,
            )
            for t, s in snapshot.subscriptions()
            for c in s.consumers
        ]
    want_topic = None
    if topic is not None:
        want_topic = _base_topic(snapshot.partitions(topic)[0].name)
    out: dict[tuple[str, str, int], dict[int, Sample]] = {}
    for smp in samples:
        base = _base_topic(smp.topic)
        if want_topic is not None and base != want_topic:
            continue
        if subscription is not None and smp.subscription != subscription:
            continue
        per_frame = out.setdefault((base, smp.subscription, smp.consumer), {})
        prev = per_frame.get(smp.event_index)
        if prev is None:
            per_frame[smp.event_index] = smp
        else:  # another partition of the same consumer at the same frame: sum
            per_frame[smp.event_index] = Sample(
                smp.event_index,
                smp.time,
                base,
                smp.subscription,
                smp.consumer,
                smp.name,
                prev.permits + smp.permits,
                _add(prev.receiver_queue, smp.receiver_queue),
                prev.in_flight + smp.in_flight,
                prev.blocked or smp.blocked,
            )
    return {k: list(v.values()) for k, v in out.items()}


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def dispatch_timeline_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
) -> go.Figure:
    """Three panels (permits, receiver queue, in flight), one line per consumer, up to this snapshot."""
    snap = check_lab_snapshot(snapshot, "dispatch_timeline_view")
    if topic is not None or subscription is not None:
        pick(snap, topic, subscription)  # fail on a wrong name
    lines = series(snap, topic, subscription)
    head = title or "Dispatch timeline"
    if not lines:
        return empty_figure(head, "no consumer yet: subscribe a consumer first")
    several_subs = len({(t, s) for t, s, _c in lines}) > 1
    fig = make_subplots(
        rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07, subplot_titles=[label for _f, label in PANELS]
    )
    for (t, s, cid), pts in sorted(lines.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        name = pts[-1].name + (f" ({short_topic(t)}/{s})" if several_subs else "")
        color = consumer_color(cid)
        group = f"{t}/{s}/{cid}"
        for row, (field, _label) in enumerate(PANELS, start=1):
            values = [getattr(p, field) for p in pts]
            keep = step_points(values)
            changed = [k == 0 or values[k] != values[k - 1] for k in keep]
            fig.add_trace(
                go.Scatter(
                    x=[pts[k].event_index for k in keep],
                    y=[values[k] for k in keep],
                    mode="lines+markers" if sum(changed) < 60 else "lines",
                    line=dict(color=color, shape="hv"),
                    marker=dict(size=[5 if c else 0 for c in changed]),
                    name=name,
                    legendgroup=group,
                    showlegend=row == 1,
                    hovertext=[_hover(name, pts[k]) for k in keep],
                    hoverinfo="text",
                    cliponaxis=False,
                ),
                row=row,
                col=1,
            )
        fig.add_trace(_blocked_trace(pts, name, color, group), row=1, col=1)
    now = snap.event_index
    for row in (1, 2, 3):
        fig.add_vline(x=now, line=dict(color="#888888", dash="dot", width=1), row=row, col=1)
    flows = [f for _k, f in events_of(events, "flow")]
    dispatched = events_of(events, "dispatched")
    step = []
    if flows:
        step.append(f"FLOW +{sum(f['permits'] for f in flows)}")
    if dispatched:
        step.append(f"{plural(len(dispatched), 'entry', 'entries')} dispatched")
    sub_line = f"t = {snap.time} ms, event {now}" + (f" · this step: {', '.join(step)}" if step else "")
    height, top, bottom = 600, 90, 120
    fig.update_layout(
        title=dict(text=f"{head}<br><sup>{sub_line}</sup>"),
        height=height,
        margin=dict(l=60, r=20, t=top, b=bottom),
        plot_bgcolor="white",
        legend=legend_below(height, top, bottom, gap_px=62),
        hovermode="closest",
    )
    xs_all = [p.event_index for pts in lines.values() for p in pts]
    fig.update_xaxes(index_axis(min(xs_all), max([now, *xs_all])), showgrid=False)
    fig.update_xaxes(title_text="event index", row=3, col=1)
    fig.update_yaxes(zeroline=True, zerolinecolor="#bbbbbb", showgrid=True, gridcolor="#eeeeee")
    for row, (field, _label) in enumerate(PANELS, start=1):
        values = [getattr(p, field) for pts in lines.values() for p in pts]
        fig.update_yaxes(count_axis(values), row=row, col=1)
    if all(p.receiver_queue is None for pts in lines.values() for p in pts):
        fig.update_yaxes(visible=False, row=2, col=1)
        fig.add_annotation(text=CLIENT_QUEUE_UNKNOWN, x=0.5, y=0.5, xref="x2 domain", yref="y2 domain", showarrow=False)
    return fig


def _hover(name: str, p: Sample) -> str:
    return (
        f"{name} · event {p.event_index} · t = {p.time} ms<br>permits {p.permits} · queue "
        f"{'-' if p.receiver_queue is None else p.receiver_queue} · in flight {p.in_flight}"
        + (" · BLOCKED on unacked" if p.blocked else "")
    )


def _blocked_trace(pts: list[Sample], name: str, color: str, group: str) -> go.Scatter:
    """On the permits panel, a band along each run of blocked samples with a cross where the run starts, where its
    permits change and where it ends (not one cross per sample: a run can last thousands of events)."""
    xs: list[int | None] = []
    ys: list[int | None] = []
    hover: list[str] = []
    k = 0
    while k < len(pts):
        if not pts[k].blocked:
            k += 1
            continue
        run_end = k
        while run_end + 1 < len(pts) and pts[run_end + 1].blocked:
            run_end += 1
        run = pts[k : run_end + 1]
        if xs:
            xs.append(None)
            ys.append(None)
            hover.append("")
        for j in step_points([p.permits for p in run]):
            xs.append(run[j].event_index)
            ys.append(run[j].permits)
            hover.append(_hover(name, run[j]))
        k = run_end + 1
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines+markers",
        line=dict(color=translucent(color, 0.3), width=7, shape="hv"),
        marker=dict(symbol="x", size=9, color=color, line=dict(width=1)),
        name=f"{name} blocked",
        legendgroup=group,
        showlegend=False,
        hovertext=hover,
        hoverinfo="text",
        cliponaxis=False,
    )


__all__ = ["PANELS", "dispatch_timeline_view", "series"]
