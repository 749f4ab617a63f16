"""The chunk reassembly view: chunks of several producers arriving interleaved, and each consumer's pending map.

Usage::

    from pulsarlab_widgets.views.chunk_reassembly import chunk_reassembly_view
    rec = Recorder(lab)                                       # before producers and consumers start
    ...                                                       # chunking producers, consumers receiving
    Player(rec, [chunk_reassembly_view])                      # or functools.partial(..., subscription="sub")
    chunk_reassembly_view(snapshot(lab)).show()               # the state now

Draws one subscription of a topic (docs/guide/chunked-messages.md). Top: the topic's entries in ledger order, one square per
chunk (a circle for a message that is not chunked), coloured by producer and labelled with the chunk id, so
interleaved chunks of several producers show as a mixed run; entries the subscription has acknowledged are
faded. Bottom: every consumer's ``chunkedMessagesMap`` (the client's `ChunkedMessageTracker`), one row per
incomplete message, one cell per chunk - filled when stored, open while missing - in the order the pending
uuid queue will evict or expire them; the title counts the pending messages against
``max_pending_chunked_message`` and gives the expiry time. The step's chunk events are marked: chunks
received (outlined), discarded (a red cross, with the reason), messages assembled, evicted (queue full) or
expired. A function ``(snapshot, events) -> go.Figure``.

Simplifies: more than ``max_entries`` entries are shown as a window ending at the newest entry.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from pulsarlab.snapshot.base import Pos, fmt_pos
from pulsarlab.snapshot.chunks import ChunkInfo
from pulsarlab.snapshot.lab import LabSnapshot, SubscriptionSnap, TopicSnap
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, empty_figure, events_of, pick, plural
from pulsarlab_widgets.views.style import PALETTE, legend_below

MISSING_COLOR = "#ffffff"
PLAIN_COLOR = "#bdbdbd"
DISCARD_COLOR = "#d62728"
RECEIVED_COLOR = "#111111"
_CHUNK_EVENTS = (
    "chunk_received",
    "chunk_discarded",
    "chunked_message_assembled",
    "chunked_message_evicted",
    "chunked_message_expired",
    "chunk_held",
    "chunk_pinned",
    "chunked_message_acked",
    "chunk_published",
)


def producer_colors(topic: TopicSnap) -> dict[str, str]:
    """Producer name -> colour, in the order their first chunk was stored (stable across frames)."""
    out: dict[str, str] = {}
    for led in topic.ledgers:
        for info in led.chunks:
            if info is not None and info.producer not in out:
                out[info.producer] = PALETTE[len(out) % len(PALETTE)]
    return out


def topic_chunks(topic: TopicSnap) -> list[tuple[Pos, ChunkInfo | None]]:
    """Every entry of the topic in ledger order with its chunk fields (None: not a chunk)."""
    out: list[tuple[Pos, ChunkInfo | None]] = []
    for led in topic.ledgers:
        chunks = led.chunks
        for e in range(led.entries):
            out.append(((led.ledger_id, e), chunks[e] if e < len(chunks) else None))
    return out


def pending_rows(sub: SubscriptionSnap) -> list[tuple[str, Any]]:
    """``(consumer name, PendingChunkedSnap)`` for every incomplete message, consumer by consumer, in the
    order the consumer's uuid queue reaches them."""
    rows = []
    for c in sub.consumers:
        if c.chunks is None:
            continue
        order = {u: i for i, u in reversed(list(enumerate(c.chunks.uuid_queue)))}
        for p in sorted(c.chunks.pending, key=lambda p: order.get(p.uuid, len(order))):
            rows.append((c.name, p))
    return rows


def step_lines(events: Sequence[Any], names: dict[int, str]) -> list[str]:
    """One short line per chunk event of the step (what the explanation line does not say for earlier events)."""
    lines = []
    for kind, f in events_of(events, *_CHUNK_EVENTS):
        who = names.get(f.get("consumer"), f"consumer {f.get('consumer')}")
        if kind == "chunk_discarded":
            lines.append(f"{who} discarded chunk {f['chunk_id']} of {f['uuid']} ({f['reason']}, {f['action']})")
        elif kind == "chunked_message_assembled":
            lines.append(f"{who} assembled {f['uuid']} from {f['chunks']} chunks as {f['message_id']}")
        elif kind == "chunked_message_evicted":
            lines.append(f"{who} dropped {f['uuid']} ({f['cause']}), chunks {f['action']}")
        elif kind == "chunked_message_expired":
            lines.append(f"{who} expired {f['uuid']} after {f['age']} ms, chunks acked")
        elif kind == "chunk_held":
            lines.append(f"chunk {f['chunk_id']} of {f['uuid']} held in the replay set")
        elif kind == "chunk_pinned":
            lines.append(f"{f['uuid']} pinned to {who}")
        elif kind == "chunked_message_acked":
            lines.append(f"{who} acked {f['message_id']}: {f['positions']}")
    return lines


def chunk_reassembly_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
    max_entries: int = 48,
) -> go.Figure:
    """The figure for one subscription's chunks in ``snapshot``; ``events`` (since the last frame) are marked."""
    snap = check_lab_snapshot(snapshot, "chunk_reassembly_view")
    if not isinstance(max_entries, int) or max_entries < 1:
        raise ValueError(f"max_entries must be an int >= 1, got {max_entries!r}")
    chosen = pick(snap, topic, subscription)
    if chosen is None:
        return empty_figure(title or "Chunk reassembly", "no subscription yet: subscribe a consumer first")
    t, sub = chosen
    names = {c.id: c.name for c in sub.consumers}
    colors = producer_colors(t)
    entries = topic_chunks(t)[-max_entries:]
    rows = pending_rows(sub)
    received, discarded = _step_marks(events)
    lines = step_lines(events, names)
    shown_lines = lines[:3] + ([f"… {len(lines) - 3} more"] if len(lines) > 3 else [])
    # pixel budget: the entries row, the gap for its tick labels and the pending map's title, the pending map
    top, bottom = 86 + 16 * max(len(shown_lines), 1), 120
    entries_px, gap_px, pending_px = 60, 110 if len(entries) > 12 else 90, max(90, 40 * len(rows))
    plot_px = entries_px + gap_px + pending_px
    fig = make_subplots(
        rows=2,
        cols=1,
        row_heights=[entries_px / (entries_px + pending_px), pending_px / (entries_px + pending_px)],
        vertical_spacing=gap_px / plot_px,
        subplot_titles=(f"entries of {t.short_name} (colour: producer, label: chunk id)", _pending_title(sub)),
    )
    fig.update_annotations(font=dict(size=13))
    _topic_traces(fig, entries, sub, colors, received)
    _pending_traces(fig, rows, colors, received, discarded, snap.time, names)
    head = title or f"Chunk reassembly on {t.short_name} / {sub.name} ({sub.type or 'no consumer'})"
    widest = max((p.total_chunks for _c, p in rows), default=1)
    height = top + plot_px + bottom
    fig.update_layout(
        title=dict(
            text=f"{head}<br><sup>{'<br>'.join(shown_lines) or 'no chunk event in this step'}</sup>",
        ),
        height=height,
        margin=dict(l=150, r=20, t=top, b=bottom),
        plot_bgcolor="white",
        legend=legend_below(height, top, bottom, gap_px=60),
    )
    fig.update_xaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(showgrid=False, zeroline=False)
    fig.update_yaxes(visible=False, range=[-1, 1], row=1, col=1)
    fig.update_xaxes(
        tickvals=list(range(len(entries))),
        ticktext=[fmt_pos(p) for p, _i in entries],
        tickangle=-45 if len(entries) > 12 else 0,
        range=[-0.6, max(len(entries), 12) - 0.4],
        row=1,
        col=1,
    )
    fig.update_xaxes(title_text="chunk id", dtick=1, range=[-0.6, max(widest, 6) - 0.4], row=2, col=1)
    fig.update_yaxes(autorange="reversed", row=2, col=1)
    if not entries:
        fig.add_annotation(
            text=f"no entry in {t.short_name} yet",
            x=0.5,
            y=1 - entries_px / 2 / plot_px,
            xref="paper",
            yref="paper",
            showarrow=False,
            font=dict(size=13),
        )
    if not rows:
        fig.update_yaxes(showticklabels=False, row=2, col=1)
        fig.add_annotation(
            text="no incomplete chunked message in any consumer's pending map",
            x=0.5,
            y=pending_px / 2 / plot_px,
            xref="paper",
            yref="paper",
            showarrow=False,
            font=dict(size=13),
        )
    return fig


def _pending_title(sub: SubscriptionSnap) -> str:
    parts = []
    for c in sub.consumers:
        ch = c.chunks
        if ch is None:
            continue
        limit = ch.max_pending if ch.max_pending > 0 else "no limit"
        expiry = f"expire after {ch.expire_time_ms} ms" if ch.expire_time_ms > 0 else "no expiry"
        parts.append(f"{c.name}: {len(ch.pending)} pending, count {ch.pending_count} of {limit}, {expiry}")
    return "pending map per consumer · " + (" · ".join(parts) if parts else "no chunk received yet")


def _step_marks(events: Sequence[Any]) -> tuple[set[Pos], dict[tuple[str, int], tuple[int, str]]]:
    received: set[Pos] = set()
    discarded: dict[tuple[str, int], tuple[int, str]] = {}
    for kind, f in events_of(events, "chunk_received", "chunk_discarded"):
        pos = tuple(int(x) for x in str(f.get("position", "")).split(":")) if f.get("position") else None
        if pos is not None and len(pos) == 2:
            received.add(pos)  # type: ignore[arg-type]
        if kind == "chunk_discarded":
            discarded[(f["uuid"], f["chunk_id"])] = (f["consumer"], f"{f['reason']}, {f['action']}")
    return received, discarded


def _topic_traces(
    fig: go.Figure, entries: list, sub: SubscriptionSnap, colors: dict[str, str], received: set[Pos]
) -> None:
    cursor = sub.cursor
    by_producer: dict[str, tuple[list, list, list, list, list]] = {}
    for x, (pos, info) in enumerate(entries):
        acked = cursor.is_deleted(*pos)
        key = info.producer if info is not None else ""
        xs, texts, hovers, opacities, outline = by_producer.setdefault(key, ([], [], [], [], []))
        xs.append(x)
        texts.append(str(info.chunk_id) if info is not None else "")
        state = "acknowledged" if acked else ("delivered" if pos < cursor.read_position else "not read yet")
        what = (
            f"chunk {info.chunk_id} of {info.num_chunks} of {info.uuid}"
            if info is not None
            else "a message that is not chunked"
        )
        hovers.append(f"{fmt_pos(pos)}: {what}<br>{state}")
        opacities.append(0.3 if acked else 1.0)
        outline.append(RECEIVED_COLOR if pos in received else "white")
    for producer, (xs, texts, hovers, opacities, outline) in by_producer.items():
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[0] * len(xs),
                mode="markers+text",
                text=texts,
                textposition="middle center",
                name=f"producer {producer}" if producer else "not chunked",
                marker=dict(
                    symbol="square" if producer else "circle",
                    size=22,
                    color=colors.get(producer, PLAIN_COLOR),
                    opacity=opacities,
                    line=dict(color=outline, width=2),
                ),
                hovertext=hovers,
                hoverinfo="text",
            ),
            row=1,
            col=1,
        )


def _pending_traces(
    fig: go.Figure,
    rows: list,
    colors: dict[str, str],
    received: set[Pos],
    discarded: dict[tuple[str, int], tuple[int, str]],
    now: int,
    names: dict[int, str],
) -> None:
    stored_x, stored_y, stored_color, stored_hover, stored_line = [], [], [], [], []
    missing_x, missing_y, missing_hover = [], [], []
    for consumer, p in rows:
        label = f"{consumer} · {p.uuid}"
        producer = p.uuid.rsplit("-", 1)[0]
        age = f"chunk 0 arrived at t = {p.received_time} ms ({now - p.received_time} ms ago)"
        for i in range(p.total_chunks):
            pos = p.chunk_positions[i] if i < len(p.chunk_positions) else None
            if pos is not None:
                stored_x.append(i)
                stored_y.append(label)
                stored_color.append(colors.get(producer, PLAIN_COLOR))
                stored_line.append(RECEIVED_COLOR if pos in received else "white")
                stored_hover.append(
                    f"{p.uuid} chunk {i} from {fmt_pos(pos)}<br>{p.bytes} of "
                    f"{p.total_chunk_msg_size} bytes so far; {age}"
                )
            else:
                missing_x.append(i)
                missing_y.append(label)
                missing_hover.append(f"{p.uuid} chunk {i}: not received yet<br>{age}")
    fig.add_trace(
        go.Scatter(
            x=stored_x,
            y=stored_y,
            mode="markers",
            name="chunk stored",
            marker=dict(symbol="square", size=20, color=stored_color, line=dict(color=stored_line, width=2)),
            hovertext=stored_hover,
            hoverinfo="text",
            showlegend=bool(stored_x),
        ),
        row=2,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=missing_x,
            y=missing_y,
            mode="markers",
            name="chunk missing",
            marker=dict(symbol="square-open", size=20, color="#7f7f7f", line=dict(width=1.5)),
            hovertext=missing_hover,
            hoverinfo="text",
            showlegend=bool(missing_x),
        ),
        row=2,
        col=1,
    )
    labels = {p.uuid: f"{c} · {p.uuid}" for c, p in rows}
    bad_x, bad_y, bad_hover = [], [], []
    for (uuid, chunk_id), (consumer, why) in discarded.items():
        bad_x.append(chunk_id)
        bad_y.append(labels.get(uuid, f"{names.get(consumer, consumer)} · {uuid} (no context)"))
        bad_hover.append(f"{uuid} chunk {chunk_id} discarded: {why}")
    fig.add_trace(
        go.Scatter(
            x=bad_x,
            y=bad_y,
            mode="markers",
            name="chunk discarded this step",
            marker=dict(symbol="x", size=16, color=DISCARD_COLOR),
            hovertext=bad_hover,
            hoverinfo="text",
            showlegend=bool(bad_x),
        ),
        row=2,
        col=1,
    )


def summary(snapshot: LabSnapshot, topic: str | None = None, subscription: str | None = None) -> str:
    """One line per consumer: pending uuids and the count against the limit (for a notebook print)."""
    chosen = pick(check_lab_snapshot(snapshot, "summary"), topic, subscription)
    if chosen is None:
        return "no subscription yet"
    _t, sub = chosen
    out = []
    for c in sub.consumers:
        ch = c.chunks
        if ch is None:
            out.append(f"{c.name}: no chunk received yet")
            continue
        pending = ", ".join(f"{p.uuid} ({p.stored}/{p.total_chunks})" for p in ch.pending) or "nothing"
        out.append(
            f"{c.name}: pending {pending}; {plural(ch.pending_count, 'pending message')} counted, "
            f"limit {ch.max_pending}"
        )
    return "\n".join(out)


__all__ = ["chunk_reassembly_view", "pending_rows", "producer_colors", "step_lines", "summary", "topic_chunks"]
