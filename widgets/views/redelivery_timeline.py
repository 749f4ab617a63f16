"""The redelivery timeline: each message's life - delivered, nacked, timed out, redelivered, retried, dead-lettered.

Usage::

    from pulsarlab_widgets.views.redelivery_timeline import redelivery_timeline_view
    rec = Recorder(lab); ...                                          # drive the lab
    Player(rec, [functools.partial(redelivery_timeline_view, subscription="sub")])
    redelivery_timeline_view(snapshot(lab)).show()                    # the whole run so far

One row per entry (docs/guide/redelivery.md): x is virtual time, markers are the steps of
`pulsarlab.snapshot.redelivery.message_lives`. The middle of a row holds what the broker and the application
did with the message (stored, delivered - labelled with the redelivery count it carried -, acknowledged), just
above it what the client decided (negative ack, ack timeout, negative-ack delay over, DLQ candidate, retried,
dead-lettered), just below what the broker did about it (redelivery asked for, redelivery counted). A copy
written to a retry or dead-letter topic gets its own row under its origin, joined by a dashed line. The
row label ends with the message's outcome. A function ``(snapshot, events) -> go.Figure``.

Simplifies: at most ``max_messages`` rows (the oldest first); a batch is one row.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from pulsarlab.snapshot.base import short_topic
from pulsarlab.snapshot.lab import LabSnapshot
from pulsarlab.snapshot.redelivery import (
    ACKED,
    COUNTED,
    DEAD_LETTERED,
    DELIVERED,
    DLQ_CANDIDATE,
    NACK_DUE,
    NACKED,
    PUBLISHED,
    REDELIVERY_ASKED,
    RETRIED,
    STEP_KINDS,
    STEP_TEXT,
    TIMED_OUT,
    MessageLife,
    message_lives,
)
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, consumer_names, empty_figure, events_of
from pulsarlab_widgets.views.style import legend_below, plural

LANE = {
    PUBLISHED: 0.0,
    DELIVERED: 0.0,
    ACKED: 0.0,
    NACKED: 0.3,
    TIMED_OUT: 0.3,
    NACK_DUE: 0.3,
    DLQ_CANDIDATE: 0.3,
    RETRIED: 0.3,
    DEAD_LETTERED: 0.3,
    REDELIVERY_ASKED: -0.3,
    COUNTED: -0.3,
}
ROW_PX = 64
LINK_KINDS = (RETRIED, DEAD_LETTERED)  # the steps that write a copy: its row is joined to its origin's
STYLE = {  # kind -> (symbol, colour)
    PUBLISHED: ("circle-open", "#7f7f7f"),
    DELIVERED: ("circle", "#1f77b4"),
    ACKED: ("diamond", "#1a7f37"),
    NACKED: ("x", "#ff7f0e"),
    TIMED_OUT: ("hourglass", "#d62728"),
    NACK_DUE: ("triangle-right", "#ff7f0e"),
    REDELIVERY_ASKED: ("triangle-left", "#9467bd"),
    COUNTED: ("square", "#9467bd"),
    DLQ_CANDIDATE: ("diamond-open", "#8c1c13"),
    RETRIED: ("triangle-up", "#17becf"),
    DEAD_LETTERED: ("square-x", "#111111"),
}
OUTCOME_TEXT = {
    "waiting": "not delivered yet",
    "in flight": "in flight",
    "acked": "acked",
    "retried": "→ retry topic",
    "dead-lettered": "→ DLQ",
}
EVENT_TEXT = {
    "negative_acked": "negative ack",
    "ack_timeout_tick": "ack timeout",
    "nack_timer_fired": "nack delay over",
    "redeliver_ids": "redelivery asked",
    "redelivery_counted": "redelivery counted",
    "reconsumed_later": "retried",
    "dead_lettered": "dead-lettered",
    "dispatched": "delivery",
}


def _row_label(life: MessageLife, via: str | None) -> str:
    end = OUTCOME_TEXT.get(life.outcome, life.outcome)
    if life.origin is None:
        return f"{life.label} · {end}"
    if life.outcome == "waiting":
        end = "waits in the DLQ" if via == DEAD_LETTERED else "waits on the retry topic"
    origin = f"{life.origin[1]}:{life.origin[2]}"
    return f"↳ {life.label} (copy of {origin}) · {end}"


def _link(lives: dict[tuple[int, int], MessageLife], life: MessageLife) -> Any:
    """The retried / dead-lettered step of the origin that wrote ``life``, if the origin is shown."""
    if life.origin is None:
        return None
    src = lives.get((life.origin[1], life.origin[2]))
    if src is None:
        return None
    return next(
        (s for s in src.steps if s.target is not None and (s.target[1], s.target[2]) == (life.ledger, life.entry)), None
    )


def _hover(step: Any, names: dict[int, str]) -> str:
    who = f" · {names.get(step.consumer, f'consumer {step.consumer}')}" if step.consumer is not None else ""
    extra = ""
    if step.kind == DELIVERED:
        extra = f" · redelivery count {step.count}"
    elif step.kind == COUNTED:
        extra = f" · broker count now {step.count}"
    elif step.kind == NACKED and step.delay_ms is not None:
        extra = f" · due at t = {step.delay_ms} ms"
    elif step.kind == RETRIED:
        extra = f" · RECONSUMETIMES {step.count}, delay {step.delay_ms} ms"
    elif step.kind in (DEAD_LETTERED, DLQ_CANDIDATE):
        extra = f" · count {step.count}"
    if step.target is not None:
        extra += f" · copy {short_topic(step.target[0])} {step.target[1]}:{step.target[2]}"
    return f"{STEP_TEXT[step.kind]} at t = {step.time} ms{who}{extra} (event {step.event_index})"


def _consumer_names(snap: LabSnapshot) -> dict[int, str]:
    names = consumer_names(snap)
    if snap.redelivery is not None:
        for t in snap.redelivery.trackers:
            names.setdefault(t.consumer, t.name)
    return names


def redelivery_timeline_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
    max_messages: int = 30,
) -> go.Figure:
    """Each message's life up to this snapshot, one row per entry (copies under their origin)."""
    snap = check_lab_snapshot(snapshot, "redelivery_timeline_view")
    if not isinstance(max_messages, int) or isinstance(max_messages, bool) or max_messages < 1:
        raise ValueError(f"max_messages must be an int >= 1, got {max_messages!r}")
    head = title or "Redelivery timeline"
    if snap.redelivery is None:
        return empty_figure(head, "this snapshot has no redelivery part")
    if topic is not None:
        snap.partitions(topic)  # a wrong name fails clearly
    lives = message_lives(snap.redelivery, topic=topic, subscription=subscription)
    if not lives:
        return empty_figure(head, "no message stored yet: send some messages first")
    shown = lives[:max_messages]
    names = _consumer_names(snap)
    by_pos = {(life.ledger, life.entry): life for life in shown}
    links = {pos: _link(by_pos, life) for pos, life in by_pos.items()}
    rows = [_row_label(life, getattr(links[(life.ledger, life.entry)], "kind", None)) for life in shown]
    y_of = {(life.ledger, life.entry): len(shown) - 1 - i for i, life in enumerate(shown)}
    fig = go.Figure()
    now = snap.time
    # the same traces in every frame (one for the lifelines, one per link kind, one per step kind, empty ones
    # included), so a player's step restyles them instead of adding and deleting traces
    life_x: list[int | None] = []
    life_y: list[int | None] = []
    link_xy: dict[str, tuple[list[int | None], list[float | None]]] = {k: ([], []) for k in LINK_KINDS}
    for life in shown:
        pos = (life.ledger, life.entry)
        y = y_of[pos]
        start = life.steps[0].time
        end = now if life.outcome == "in flight" else life.steps[-1].time
        life_x += [start, max(end, start), None]
        life_y += [y, y, None]
        link = links[pos]
        if link is not None:
            origin = (life.origin[1], life.origin[2])  # type: ignore[index]
            xs, ys = link_xy.setdefault(link.kind, ([], []))
            xs += [link.time, start, None]
            ys += [y_of[origin] + LANE[link.kind], y, None]
    fig.add_trace(
        go.Scatter(
            x=life_x, y=life_y, mode="lines", line=dict(color="#d9d9d9", width=5), hoverinfo="skip", showlegend=False
        )
    )
    for kind, (xs, ys) in link_xy.items():
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line=dict(color=STYLE[kind][1], dash="dash", width=1),
                hoverinfo="skip",
                showlegend=False,
            )
        )
    for kind in STEP_KINDS:
        xs, ys, texts, hovers = [], [], [], []
        for life in shown:
            y = y_of[(life.ledger, life.entry)]
            for step in life.steps:
                if step.kind != kind:
                    continue
                xs.append(step.time)
                ys.append(y + LANE[kind])
                texts.append(str(step.count) if kind in (DELIVERED, COUNTED) and step.count is not None else "")
                hovers.append(f"{life.label}: " + _hover(step, names))
        symbol, color = STYLE[kind]
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="markers+text" if kind in (DELIVERED, COUNTED) else "markers",
                text=texts,
                textposition="bottom right",
                textfont=dict(size=9, color=color),
                marker=dict(symbol=symbol, size=9, color=color, line=dict(width=1, color=color)),
                name=STEP_TEXT[kind],
                hovertext=hovers,
                hoverinfo="text",
                showlegend=bool(xs),
            )
        )
    fig.add_vline(x=now, line=dict(color="#888888", dash="dot", width=1))
    redelivered = sum(1 for life in lives if life.deliveries > 1)
    retried = sum(1 for life in lives if life.outcome == "retried")
    dead = sum(1 for life in lives if life.outcome == "dead-lettered")
    parts = [
        plural(len(lives), "entry", "entries"),
        f"{redelivered} redelivered",
        f"{retried} retried",
        f"{dead} dead-lettered",
    ]
    if len(lives) > len(shown):
        parts.append(f"first {len(shown)} shown")
    this = ", ".join(dict.fromkeys(EVENT_TEXT[k] for k, _f in events_of(events, *EVENT_TEXT)))
    sub_line = f"t = {now} ms · " + " · ".join(parts) + (f" · this step: {this}" if this else "")
    height, top, bottom = max(360, 230 + ROW_PX * len(shown)), 90, 120
    fig.update_layout(
        title=dict(text=f"{head}<br><sup>{sub_line}</sup>"),
        height=height,
        margin=dict(l=20, r=20, t=top, b=bottom),
        plot_bgcolor="white",
        legend=legend_below(height, top, bottom, gap_px=60),
        hovermode="closest",
    )
    fig.update_yaxes(
        tickvals=list(range(len(shown))),
        ticktext=list(reversed(rows)),
        range=[-0.6, len(shown) - 0.4],
        showgrid=False,
        zeroline=False,
        automargin=True,
    )
    fig.update_xaxes(title_text="virtual time (ms)", showgrid=True, gridcolor="#eeeeee", zeroline=False)
    return fig


__all__ = ["EVENT_TEXT", "LANE", "OUTCOME_TEXT", "ROW_PX", "STYLE", "redelivery_timeline_view"]
