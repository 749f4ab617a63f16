"""The cursor view: ledgers x entries, what is acknowledged, the holes, batch bits, and where the cursor stands.

Usage::

    from pulsarlab_widgets.views.cursor import cursor_view
    cursor_view(snapshot(lab), subscription="sub").show()                 # static
    Player(recorder, [functools.partial(cursor_view, subscription="sub")]) # stepping through a run

Draws one subscription's `ManagedCursor` over its topic's managed ledger (docs/guide/cursor.md): one row
per ledger, one square per entry, coloured by state - acknowledged up to the mark-delete position,
individually deleted (a range of ``individuallyDeletedMessages``), a hole (unacknowledged but behind an
acknowledged entry: the mark-delete position cannot pass it), delivered but not acknowledged (between the
mark-delete and read positions), not read yet. Batch entries that are not fully acknowledged get one dot
per message: acknowledged at the broker (``batchDeletedIndexes``, only with
``acknowledgmentAtBatchIndexLevelEnabled``), acknowledged by the application but known only to its
client (the grouping tracker's ack set: what 3.x/4.0 redeliver), or not acknowledged. Open squares mark
acks still waiting in a client's grouping tracker; a black bar over a run of entries, those the last step
acknowledged. A function
``(snapshot, events) -> go.Figure``.

Simplifies: more than ``max_entries`` entries are shown as a window that starts a little before the first
unacknowledged entry.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from pulsarlab.snapshot.base import Pos, fmt_pos
from pulsarlab.snapshot.lab import LabSnapshot, SubscriptionSnap, TopicSnap
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, empty_figure, events_of, pick, plural

ACKED = "acknowledged (≤ mark-delete)"
DELETED = "acknowledged individually"
HOLE = "hole: not acknowledged, behind an acked entry"
DELIVERED = "delivered, not acknowledged"
UNREAD = "not read yet"
STATES = (ACKED, DELETED, HOLE, DELIVERED, UNREAD)
STATE_COLORS = {ACKED: "#1a7f37", DELETED: "#7fd17f", HOLE: "#d62728", DELIVERED: "#ff9f1c", UNREAD: "#d9d9d9"}

BIT_BROKER = "batch message acked (broker knows)"
BIT_CLIENT = "batch message acked by the app (client only)"
BIT_OPEN = "batch message not acked"
BIT_COLORS = {BIT_BROKER: "#1a7f37", BIT_CLIENT: "#1f77b4", BIT_OPEN: "#ffffff"}

PENDING_COLOR = "#1f77b4"
CHANGED_COLOR = "#111111"
ROW_PX = 92
IDM_CHARS = 110  # longer individuallyDeletedMessages strings are cut in the title (hover shows each entry)
_ACK_EVENTS = ("ack_applied", "individually_deleted", "mark_delete_moved", "batch_index_deleted")


def entry_states(topic: TopicSnap, sub: SubscriptionSnap) -> dict[Pos, str]:
    """The state of every entry of the topic for one subscription's cursor (one of `STATES`)."""
    cur = sub.cursor
    last_deleted = max(((l, b) for l, _a, _ul, b in cur.individually_deleted), default=None)
    out: dict[Pos, str] = {}
    for pos in topic.positions():
        if pos <= cur.mark_delete:
            out[pos] = ACKED
        elif cur.is_deleted(*pos):
            out[pos] = DELETED
        elif last_deleted is not None and pos < last_deleted:
            out[pos] = HOLE
        elif pos < cur.read_position:
            out[pos] = DELIVERED
        else:
            out[pos] = UNREAD
    return out


def client_batch_bits(sub: SubscriptionSnap) -> dict[Pos, int]:
    """Position -> unacked mask of the batches the subscription's applications are part way through."""
    out: dict[Pos, int] = {}
    for c in sub.consumers:
        if c.ack_grouping is None:
            continue
        for bits in c.ack_grouping.batch_ack_sets:
            out[(bits.ledger, bits.entry)] = (
                out.get((bits.ledger, bits.entry), (1 << bits.size) - 1) & bits.unacked_mask
            )
        for l, e, mask in c.ack_grouping.pending_batch_index:
            out[(l, e)] = out.get((l, e), mask) & mask
    return out


def pending_client_acks(sub: SubscriptionSnap) -> dict[Pos, list[str]]:
    """Position -> the consumers whose grouping tracker holds an ack of it (individual or batch index)."""
    out: dict[Pos, list[str]] = {}
    for c in sub.consumers:
        g = c.ack_grouping
        if g is None:
            continue
        for pos in g.pending_individual:
            out.setdefault(pos, []).append(c.name)
        for l, e, _mask in g.pending_batch_index:
            out.setdefault((l, e), []).append(c.name)
    return out


def stuck_line(topic: TopicSnap, sub: SubscriptionSnap, states: dict[Pos, str] | None = None) -> str:
    """One line on why the mark-delete position stands where it does."""
    states = states if states is not None else entry_states(topic, sub)
    holes = [p for p, s in states.items() if s == HOLE]
    cur = sub.cursor
    if holes:
        acked_after = sum(1 for p, s in states.items() if s == DELETED)
        return (
            f"mark-delete {fmt_pos(cur.mark_delete)} is stuck behind the hole at {fmt_pos(holes[0])}: "
            f"{plural(acked_after, 'entry', 'entries')} acked after it wait in individuallyDeletedMessages "
            f"({plural(len(holes), 'hole')})"
        )
    if cur.individually_deleted:
        return f"mark-delete {fmt_pos(cur.mark_delete)}; acked ahead of it: {cur.individually_deleted_messages}"
    return f"mark-delete {fmt_pos(cur.mark_delete)}: every entry up to it is acknowledged, nothing acked beyond it"


def _window(positions: list[Pos], states: dict[Pos, str], max_entries: int) -> list[Pos]:
    if len(positions) <= max_entries:
        return positions
    first_open = next((i for i, p in enumerate(positions) if states[p] not in (ACKED,)), len(positions) - 1)
    start = max(0, min(first_open - max_entries // 10, len(positions) - max_entries))
    return positions[start : start + max_entries]


def cursor_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
    max_entries: int = 240,
) -> go.Figure:
    """The figure for one subscription's cursor in ``snapshot``; ``events`` (since the last frame) mark what
    the step acknowledged."""
    snap = check_lab_snapshot(snapshot, "cursor_view")
    chosen = pick(snap, topic, subscription)
    if chosen is None:
        return empty_figure(title or "Cursor", "no subscription yet: subscribe a consumer first")
    t, sub = chosen
    cur = sub.cursor
    states = entry_states(t, sub)
    all_positions = list(t.positions())
    shown = _window(all_positions, states, max_entries)
    shown_set = set(shown)
    first_l = shown[0][0] if shown else t.ledgers[-1].ledger_id
    last_l = shown[-1][0] if shown and shown[-1] != all_positions[-1] else t.ledgers[-1].ledger_id
    rows = [led for led in t.ledgers if first_l <= led.ledger_id <= last_l]
    row_of = {led.ledger_id: i for i, led in enumerate(rows)}
    by_ledger = {led.ledger_id: led for led in t.ledgers}
    xs = [p[1] for p in shown]
    lo = min(xs + [0, cur.mark_delete[1] if cur.mark_delete[0] in row_of else 0])
    hi = max(xs + [0, cur.read_position[1] if cur.read_position[0] in row_of else 0])
    ncols = max(hi - lo + 1, 1)
    cell = max(6, min(ROW_PX * 0.5, 900 * 0.8 / ncols))

    broker_bits = {(b.ledger, b.entry): b.unacked_mask for b in cur.batch_acks}
    client_bits = client_batch_bits(sub)
    pending = pending_client_acks(sub)
    traces: list[go.BaseTraceType] = []

    for state in STATES:
        pts = [p for p in shown if states[p] == state]
        hover = []
        for p in pts:
            led = by_ledger[p[0]]
            size = led.batch_sizes[p[1]]
            what = f"batch of {size}" if size is not None else "1 message"
            key = led.keys[p[1]]
            hover.append(f"{fmt_pos(p)}: {what}" + (f", key {key!r}" if key is not None else "") + f"<br>{state}")
        traces.append(
            go.Scatter(
                x=[p[1] for p in pts],
                y=[row_of[p[0]] for p in pts],
                mode="markers",
                name=state,
                marker=dict(symbol="square", size=cell, color=STATE_COLORS[state], line=dict(color="white", width=1)),
                hovertext=hover,
                hoverinfo="text",
            )
        )

    bit_pts: dict[str, tuple[list[float], list[float], list[str]]] = {k: ([], [], []) for k in BIT_COLORS}
    for p in shown:
        led = by_ledger[p[0]]
        size = led.batch_sizes[p[1]]
        if size is None or states[p] in (ACKED, DELETED):
            continue
        if p not in broker_bits and p not in client_bits:
            continue
        full = (1 << size) - 1
        bmask = broker_bits.get(p, full)
        cmask = client_bits.get(p, full) & bmask
        for i in range(size):
            if not (bmask >> i) & 1:
                kind = BIT_BROKER
            elif not (cmask >> i) & 1:
                kind = BIT_CLIENT
            else:
                kind = BIT_OPEN
            xs_, ys_, hs_ = bit_pts[kind]
            xs_.append(p[1] - 0.4 + 0.8 * (i + 0.5) / size)
            ys_.append(row_of[p[0]] + 0.36)
            hs_.append(f"{fmt_pos(p)} batch index {i}: {kind}")
    max_batch = max((by_ledger[p[0]].batch_sizes[p[1]] or 1 for p in shown), default=1)
    bit_size = max(4, min(9, cell * 0.8 / max_batch))
    for kind, (bx, by, bh) in bit_pts.items():
        traces.append(
            go.Scatter(
                x=bx,
                y=by,
                mode="markers",
                name=kind,
                marker=dict(
                    symbol="circle", size=bit_size, color=BIT_COLORS[kind], line=dict(color="#444444", width=1)
                ),
                hovertext=bh,
                hoverinfo="text",
                showlegend=bool(bx),
            )
        )

    pend = [p for p in pending if p in shown_set]
    traces.append(
        go.Scatter(
            x=[p[1] for p in pend],
            y=[row_of[p[0]] for p in pend],
            mode="markers",
            name="ack waiting in the client's grouping tracker",
            marker=dict(symbol="square-open", size=cell + 2, color=PENDING_COLOR, line=dict(width=2.5)),
            hovertext=[
                f"{fmt_pos(p)}: acked by {', '.join(pending[p])}, held until the next flush (group time / size)"
                for p in pend
            ],
            hoverinfo="text",
            showlegend=bool(pend),
        )
    )

    changed = _acked_this_step(events, t, sub)
    ch = [p for p in changed if p in shown_set]
    run_x: list[float | None] = []
    run_y: list[float | None] = []
    run_hover: list[str | None] = []
    for a, b in _runs(ch, shown):
        text = f"{fmt_pos(a)}..{fmt_pos(b)} acknowledged in this step" if a != b else f"{fmt_pos(a)} acknowledged"
        run_x += [a[1] - 0.45, b[1] + 0.45, None]
        run_y += [row_of[a[0]] - 0.31] * 2 + [None]
        run_hover += [text, text, None]
    traces.append(
        go.Scatter(
            x=run_x,
            y=run_y,
            mode="lines",
            name="acked this step",
            line=dict(color=CHANGED_COLOR, width=4),
            hovertext=run_hover,
            hoverinfo="text",
            showlegend=bool(ch),
        )
    )

    traces.extend(_position_markers(cur.mark_delete, cur.read_position, row_of))

    n_rows = len(rows)
    ticktext = [f"ledger {led.ledger_id}" + (" (open)" if led.open else "") for led in rows]
    head = title or f"Cursor of {t.short_name} / {sub.name} ({sub.type or 'no consumer'})"
    idm = cur.individually_deleted_messages
    if len(idm) > IDM_CHARS:
        idm = idm[: idm.rfind("],", 0, IDM_CHARS) + 2] + f"… ({plural(len(cur.individually_deleted), 'range')})"
    subtitle = (
        f"mark-delete {fmt_pos(cur.mark_delete)} · read {fmt_pos(cur.read_position)} · "
        f"individuallyDeletedMessages {idm}"
    )
    fig = go.Figure(
        data=traces,
        layout=go.Layout(
            title=dict(text=f"{head}<br><sup>{subtitle}<br>{stuck_line(t, sub, states)}</sup>"),
            xaxis=dict(
                title="entry id",
                range=[lo - 1.2, hi + 1.2],
                dtick=1 if ncols <= 40 else None,
                zeroline=False,
                showgrid=False,
            ),
            yaxis=dict(
                tickvals=list(range(n_rows)),
                ticktext=ticktext,
                range=[n_rows - 0.2, -0.8],
                zeroline=False,
                showgrid=False,
                fixedrange=True,
            ),
            height=260 + ROW_PX * n_rows,
            margin=dict(l=110, r=20, t=110, b=150),
            legend=dict(orientation="h", yanchor="top", y=-60 / (ROW_PX * n_rows)),
            plot_bgcolor="white",
        ),
    )
    if len(shown) < len(all_positions):
        fig.add_annotation(
            text=f"showing {len(shown)} of {len(all_positions)} entries",
            x=1,
            y=1.02,
            xref="paper",
            yref="paper",
            showarrow=False,
            xanchor="right",
            font=dict(size=10),
        )
    return fig


def _position_markers(md: Pos, rp: Pos, row_of: dict[int, int]) -> list[go.Scatter]:
    out = []
    for pos, label, symbol, dy, color in (
        (md, "mark-delete", "triangle-down", -0.5, "#1a7f37"),
        (rp, "read position", "triangle-up", 0.55, "#9467bd"),
    ):
        shown = pos[0] in row_of
        out.append(
            go.Scatter(
                x=[pos[1]] if shown else [],
                y=[row_of[pos[0]] + dy] if shown else [],
                mode="markers",
                name=f"{label} {fmt_pos(pos)}",
                marker=dict(symbol=symbol, size=14, color=color),
                hoverinfo="name",
                cliponaxis=False,
            )
        )
    return out


def _runs(positions: list[Pos], shown: list[Pos]) -> list[tuple[Pos, Pos]]:
    """``positions`` (sorted, all in ``shown``) as runs of entries that are neighbours in ``shown`` and one ledger."""
    index = {p: i for i, p in enumerate(shown)}
    out: list[tuple[Pos, Pos]] = []
    for p in positions:
        if out and out[-1][1][0] == p[0] and index[out[-1][1]] + 1 == index[p]:
            out[-1] = (out[-1][0], p)
        else:
            out.append((p, p))
    return out


def _acked_this_step(events: Sequence[Any], t: TopicSnap, sub: SubscriptionSnap) -> list[Pos]:
    cursor_name = f"{t.name}/{sub.name}"
    out: list[Pos] = []
    for kind, f in events_of(events, *_ACK_EVENTS):
        if kind == "ack_applied":
            if f.get("subscription") == sub.id and f.get("ledger", -1) >= 0:
                out.append((f["ledger"], f["entry"]))
        elif f.get("cursor") == cursor_name:
            if kind == "mark_delete_moved":
                start, end = (f["from_ledger"], f["from_entry"]), (f["to_ledger"], f["to_entry"])
                out.extend(p for p in t.positions() if start < p <= end)
            else:
                out.append((f["ledger"], f["entry"]))
    return sorted(set(out))


__all__ = ["STATES", "client_batch_bits", "cursor_view", "entry_states", "pending_client_acks", "stuck_line"]
