"""Delayed-delivery views: where each held message sits (queue, time buckets, mutable bucket, sealed buckets and their
segments), what falls due as the clock moves, a restart and the rebuild, and what each tracker costs in memory.

Usage::

    from pulsarlab_widgets.views.delayed import DELAYED_VIEW_KINDS, delayed_memory_view, delayed_timeline_view
    rec = Recorder(lab, every=DELAYED_VIEW_KINDS)
    ...
    Player(rec, [delayed_timeline_view, delayed_memory_view])
    memory_comparison_figure(sweep_table)        # whole-run comparison from pulsarlab.scenarios.delayed_workload / Spark

Draws a subscription's `pulsarlab.snapshot.delayed.DelayedTrackerSnap` (docs/guide/delayed-delivery.md). The timeline's x
axis is the delivery time (deliverAt, ms); the solid line is now, the dashed one the cutoff (now + tick, or now in
strict mode): what is left of the cutoff is due. One row per structure: the in-memory priority queue (3.x/4.0),
the time buckets (4.1, each 2^floor(log2 tick) ms wide), or for the bucket tracker the shared queue and the mutable
bucket (in memory) and one row per sealed bucket with its segments coloured by where they are: delivered, loaded
(in the shared queue) or stored only (in the snapshot ledger). Messages released this step are marked at now.
Functions ``(snapshot, events) -> go.Figure``.

Simplifies: at most `pulsarlab.snapshot.delayed.MAX_ITEMS` queued indexes are drawn (the earliest).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pulsarlab.snapshot.delayed import DELIVERED, LOADED, STORED, DelayedTrackerSnap
from pulsarlab.snapshot.lab import LabSnapshot
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, empty_figure, events_of, pick, plural
from pulsarlab_widgets.views.style import legend_below

DELAYED_VIEW_KINDS = frozenset(
    {
        "consumer_subscribed",
        "consumer_closed",
        "flow",
        "entries_read",
        "dispatched",
        "received",
        "ack_applied",
        "delayed_tracker_created",
        "delayed_tracked",
        "delayed_released",
        "delayed_requeued",
        "delayed_paused",
        "bucket_sealed",
        "segment_loaded",
        "buckets_merged",
        "bucket_deleted",
        "bucket_recovered",
        "snapshot_failed",
        "broker_restarting",
        "subscription_unloaded",
        "cursor_recovered",
        "broker_restarted",
        "consumer_reconnecting",
    }
)

SEGMENT_COLORS = {DELIVERED: "#c7c7c7", LOADED: "#ff9f1c", STORED: "#1f77b4"}
SEGMENT_LABELS = {
    DELIVERED: "segment delivered",
    LOADED: "segment loaded (in memory)",
    STORED: "segment stored only (snapshot ledger)",
}
QUEUE_COLOR = "#ff7f0e"
MUTABLE_COLOR = "#9467bd"
RELEASED_COLOR = "#2ca02c"
TRACKER_COLORS = {"in-memory": "#d62728", "bucket": "#1f77b4", "bucket (stored)": "#9ecae1"}
_STEP_KINDS = (
    "delayed_released",
    "bucket_sealed",
    "segment_loaded",
    "buckets_merged",
    "bucket_deleted",
    "bucket_recovered",
    "snapshot_failed",
    "broker_restarting",
    "delayed_paused",
    "delayed_requeued",
)


def _tracker(
    snapshot: Any, topic: str | None, subscription: str | None, view: str
) -> tuple[LabSnapshot, Any, DelayedTrackerSnap | None]:
    snap = check_lab_snapshot(snapshot, view)
    picked = pick(snap, topic, subscription)
    if picked is None:
        return snap, None, None
    _t, sub = picked
    d = sub.dispatcher
    return snap, sub, d.delayed if d is not None else None


def _no_tracker_text(sub: Any, events: Sequence[Any]) -> str:
    if sub is None:
        return "no subscription yet: subscribe a consumer first"
    if sub.dispatcher is None:
        return "no consumer connected: the dispatcher (and its tracker) comes with the first consumer"
    if sub.dispatcher.type in ("Exclusive", "Failover"):
        return f"{sub.dispatcher.type} subscriptions deliver delayed messages at once: no tracker"
    if events_of(events, "broker_restarting", "broker_restarted"):
        return "the broker restarted: a new tracker is built when the first delayed message is read again"
    return "no delayed message read yet: the tracker is built on the first one"


def _step_lines(events: Sequence[Any]) -> list[str]:
    out = []
    released = [f for k, f in events_of(events, "delayed_released")]
    if released:
        shown = ", ".join(f"{f['ledger']}:{f['entry']}" for f in released[:6]) + (" …" if len(released) > 6 else "")
        out.append(f"released {shown}")
    for kind, f in events_of(events, *_STEP_KINDS[1:]):
        if kind == "bucket_sealed":
            out.append(
                f"sealed bucket [{f['start']}, {f['end']}] ({f['messages']} indexes, "
                f"{plural(f['segments'], 'segment')})"
            )
        elif kind == "segment_loaded":
            out.append(f"loaded segment {f['segment']}/{f['segments']} of [{f['start']}, {f['end']}]")
        elif kind == "buckets_merged":
            out.append(f"merged {f['buckets']} buckets into [{f['start']}, {f['end']}]")
        elif kind == "bucket_deleted":
            out.append(f"deleted bucket [{f['start']}, {f['end']}] ({f['reason']})")
        elif kind == "bucket_recovered":
            out.append(
                f"recovered bucket [{f['start']}, {f['end']}]: {f['messages']} indexes, "
                f"{f['skipped']} segment(s) skipped"
            )
        elif kind == "snapshot_failed":
            out.append(f"snapshot {f['op']} failed")
        elif kind == "broker_restarting":
            out.append("BROKER RESTART: queues and the mutable bucket are lost, stored buckets stay")
        elif kind == "delayed_paused":
            out.append("reads paused (fixed delays)" if f["paused"] else "reads resumed")
        elif kind == "delayed_requeued":
            out.append(f"{f['ledger']}:{f['entry']} held again until t = {f['until']} ms")
    return out


def delayed_timeline_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
) -> go.Figure:
    """Rows of held messages over their delivery time, with now and the cutoff; released ones marked at now."""
    snap, sub, tr = _tracker(snapshot, topic, subscription, "delayed_timeline_view")
    head = title or "Delayed delivery: what is held, where, until when"
    if tr is None:
        return empty_figure(head, _no_tracker_text(sub, events))
    fig = go.Figure()
    rows: list[str] = []
    shown_legend: set[str] = set()

    def legend(name: str) -> bool:
        first = name not in shown_legend
        shown_legend.add(name)
        return first

    released = [f for _k, f in events_of(events, "delayed_released")]
    if released:
        rows.append("released now")
        fig.add_trace(
            go.Scatter(
                x=[snap.time] * len(released),
                y=["released now"] * len(released),
                mode="markers",
                marker=dict(color=RELEASED_COLOR, size=11, symbol="star"),
                name="released this step",
                hovertext=[f"{f['ledger']}:{f['entry']} joins the replay set" for f in released],
                hoverinfo="text",
            )
        )
    if tr.form == "time_bitmap":
        label = f"time buckets, {tr.precision_ms} ms wide (memory)"
        rows.append(label)
        fig.add_trace(
            go.Bar(
                x=[tr.precision_ms] * len(tr.time_buckets),
                base=[b.timestamp for b in tr.time_buckets],
                y=[label] * len(tr.time_buckets),
                orientation="h",
                marker=dict(color=QUEUE_COLOR, opacity=0.7),
                text=[str(b.messages) for b in tr.time_buckets],
                textposition="inside",
                name="time bucket",
                hovertext=[f"bucket {b.timestamp} ms: {plural(b.messages, 'message')}" for b in tr.time_buckets],
                hoverinfo="text",
            )
        )
    else:
        label = "shared queue (memory)" if tr.form == "bucket" else "priority queue (memory)"
        rows.append(label)
        fig.add_trace(
            go.Scatter(
                x=[i[0] for i in tr.queue],
                y=[label] * len(tr.queue),
                mode="markers",
                marker=dict(color=QUEUE_COLOR, size=8, symbol="line-ns-open", line=dict(width=2)),
                name=label,
                hovertext=[f"{l}:{e} due at {t} ms" for t, l, e in tr.queue],
                hoverinfo="text",
            )
        )
    if tr.form == "bucket":
        rng = tr.mutable_range
        label = f"mutable bucket [{rng[0]}, {rng[1]}] (memory)" if rng else "mutable bucket (empty, memory)"
        rows.append(label)
        fig.add_trace(
            go.Scatter(
                x=[i[0] for i in tr.mutable],
                y=[label] * len(tr.mutable),
                mode="markers",
                marker=dict(color=MUTABLE_COLOR, size=8, symbol="line-ns-open", line=dict(width=2)),
                name="mutable bucket",
                hovertext=[f"{l}:{e} due at {t} ms" for t, l, e in tr.mutable],
                hoverinfo="text",
            )
        )
        for b in tr.buckets:
            where = f"snapshot ledger {b.snapshot_ledger}" if b.snapshot_ledger is not None else "not stored"
            label = f"bucket [{b.start_ledger}, {b.end_ledger}] ({where})"
            rows.append(label)
            for seg in b.segments:
                width = max(seg.max_deliver_at - seg.min_deliver_at, 1)
                fig.add_trace(
                    go.Bar(
                        x=[width],
                        base=[seg.min_deliver_at],
                        y=[label],
                        orientation="h",
                        marker=dict(color=SEGMENT_COLORS[seg.state], line=dict(color="#333333", width=0.5)),
                        name=SEGMENT_LABELS[seg.state],
                        legendgroup=seg.state,
                        showlegend=legend(seg.state),
                        text=[str(seg.indexes)],
                        textposition="inside",
                        hovertext=[
                            f"{label}<br>segment {seg.segment}/{b.last_segment}: {plural(seg.indexes, 'index', 'indexes')}"
                            f", due {seg.min_deliver_at}..{seg.max_deliver_at} ms, {seg.state}"
                        ],
                        hoverinfo="text",
                    )
                )
    fig.add_vline(x=snap.time, line=dict(color="#111111", width=2))
    fig.add_vline(x=tr.cutoff, line=dict(color="#111111", width=1, dash="dash"))
    fig.add_annotation(x=snap.time, y=1.0, yref="paper", text=f"now {snap.time}", showarrow=False, yanchor="bottom")
    if tr.cutoff != snap.time:
        fig.add_annotation(
            x=tr.cutoff, y=1.0, yref="paper", text="cutoff", showarrow=False, yanchor="bottom", xanchor="left"
        )
    timer = f"timer at {tr.timer_deadline} ms" if tr.timer_deadline is not None else "no timer armed"
    line1 = (
        f"{tr.kind} · {plural(tr.messages, 'message')} held · {tr.memory_bytes:,} B in memory"
        + (f" · {tr.stored_bytes:,} B stored" if tr.form == "bucket" else "")
        + f" · {timer}"
        + (" · READS PAUSED" if tr.paused else "")
    )
    steps = _step_lines(events)
    sub_text = line1 + (f"<br>this step: {'; '.join(steps)}" if steps else "")
    height, top, bottom = max(340, 230 + 42 * len(rows)), 110, 120
    fig.update_layout(
        title=dict(text=f"{head}<br><sup>{sub_text}</sup>"),
        barmode="overlay",
        plot_bgcolor="white",
        height=height,
        margin=dict(l=60, r=20, t=top, b=bottom),
        legend=legend_below(height, top, bottom, gap_px=60),
        hovermode="closest",
    )
    fig.update_yaxes(categoryorder="array", categoryarray=list(reversed(rows)), automargin=True)
    fig.update_xaxes(title_text="delivery time (deliverAt, ms)", showgrid=True, gridcolor="#eeeeee")
    return fig


def delayed_memory_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
) -> go.Figure:
    """This tracker's memory by structure next to what the in-memory priority queue needs for as many messages."""
    snap, sub, tr = _tracker(snapshot, topic, subscription, "delayed_memory_view")
    head = title or "Delayed-delivery tracker memory"
    if tr is None:
        return empty_figure(head, _no_tracker_text(sub, events))
    names = [name.replace("_", " ") for name, _b in tr.memory_breakdown]
    fig = go.Figure()
    for (name, value), label in zip(tr.memory_breakdown, names):
        fig.add_trace(
            go.Bar(
                x=[f"this {tr.form.replace('_', ' ')} tracker"],
                y=[value],
                name=label,
                hovertext=f"{label}: {value:,} B",
                hoverinfo="text",
            )
        )
    pq = tr.priority_queue_bytes
    fig.add_trace(
        go.Bar(
            x=["in-memory priority queue, same messages"],
            y=[pq],
            name="priority queue (3.x/4.0)",
            marker=dict(color=TRACKER_COLORS["in-memory"]),
            hovertext=f"{pq:,} B",
            hoverinfo="text",
        )
    )
    if tr.form == "bucket":
        fig.add_trace(
            go.Bar(
                x=["stored snapshots"],
                y=[tr.stored_bytes],
                name="snapshot ledgers (BookKeeper)",
                marker=dict(color=TRACKER_COLORS["bucket (stored)"]),
            )
        )
    fig.update_layout(
        title=dict(
            text=f"{head}<br><sup>{plural(tr.messages, 'message')} held · {tr.memory_bytes:,} B in memory · "
            f"stats delayedMessageIndexSizeInBytes = {tr.index_size_bytes:,}</sup>"
        ),
        barmode="stack",
        plot_bgcolor="white",
        height=400,
        margin=dict(l=60, r=20, t=90, b=130),
        legend=legend_below(400, 90, 130, gap_px=40),
        yaxis=dict(title="bytes (JVM estimate)", gridcolor="#eeeeee"),
    )
    return fig


def _rows(table: Any) -> list[Mapping[str, Any]]:
    if hasattr(table, "to_dict"):
        return list(table.to_dict("records"))
    return [dict(r) for r in table]


def memory_comparison_figure(table: Any, title: str | None = None) -> go.Figure:
    """In-memory bytes (and the bucket tracker's stored bytes) against held messages, log-log, one line per
    tracker and delay spread; ``table`` rows carry ``tracker, messages, spread_ms, memory_bytes, stored_bytes``
    (`pulsarlab.scenarios.delayed_workload` or the Spark sweep)."""
    rows = _rows(table)
    if not rows:
        raise ValueError("memory_comparison_figure needs at least one row (tracker, messages, memory_bytes, ...)")
    fig = go.Figure()
    for key in sorted({(r["tracker"], r["spread_ms"]) for r in rows}):
        pts = sorted((r for r in rows if (r["tracker"], r["spread_ms"]) == key), key=lambda r: r["messages"])
        tracker, spread = key
        dash = None if spread == max(r["spread_ms"] for r in rows) else "dot"
        fig.add_trace(
            go.Scatter(
                x=[r["messages"] for r in pts],
                y=[r["memory_bytes"] for r in pts],
                mode="lines+markers",
                line=dict(color=TRACKER_COLORS.get(tracker, "#555555"), dash=dash),
                name=f"{tracker} tracker: memory, delays over {spread / 60_000:g} min",
            )
        )
        if tracker == "bucket":
            fig.add_trace(
                go.Scatter(
                    x=[r["messages"] for r in pts],
                    y=[r["stored_bytes"] for r in pts],
                    mode="lines+markers",
                    line=dict(color=TRACKER_COLORS["bucket (stored)"], dash=dash),
                    name=f"bucket tracker: stored snapshots, delays over {spread / 60_000:g} min",
                )
            )
    fig.update_layout(
        title=dict(text=title or "Tracker memory as delayed messages grow"),
        plot_bgcolor="white",
        height=500,
        legend=legend_below(500, 60, 160, gap_px=65),
        margin=dict(l=60, r=20, t=60, b=160),
    )
    fig.update_xaxes(type="log", title_text="delayed messages held", gridcolor="#eeeeee")
    fig.update_yaxes(type="log", title_text="bytes", gridcolor="#eeeeee")
    return fig


def scheduling_work_figure(
    table: Any, metrics: Iterable[str] = ("timer_fires", "segment_loads", "snapshot_ops"), title: str | None = None
) -> go.Figure:
    """Scheduling work against the delay spread for each tracker (largest message count), one panel per metric."""
    rows = _rows(table)
    if not rows:
        raise ValueError("scheduling_work_figure needs at least one row")
    metrics = list(metrics)
    biggest = max(r["messages"] for r in rows)
    rows = [r for r in rows if r["messages"] == biggest]
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[m.replace("_", " ") for m in metrics])
    for col, metric in enumerate(metrics, start=1):
        for tracker in sorted({r["tracker"] for r in rows}):
            pts = sorted((r for r in rows if r["tracker"] == tracker), key=lambda r: r["spread_ms"])
            fig.add_trace(
                go.Scatter(
                    x=[r["spread_ms"] / 60_000 for r in pts],
                    y=[r[metric] for r in pts],
                    mode="lines+markers",
                    line=dict(color=TRACKER_COLORS.get(tracker, "#555555")),
                    name=tracker,
                    legendgroup=tracker,
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="delay spread (min)", row=1, col=col)
    fig.update_layout(
        title=dict(text=title or f"Scheduling work for {biggest:,} delayed messages"),
        plot_bgcolor="white",
        height=420,
        margin=dict(l=60, r=20, t=80, b=120),
        legend=legend_below(420, 80, 120, gap_px=65),
    )
    return fig


__all__ = [
    "DELAYED_VIEW_KINDS",
    "delayed_memory_view",
    "delayed_timeline_view",
    "memory_comparison_figure",
    "scheduling_work_figure",
]
