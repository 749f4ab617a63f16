"""Key_Shared blocking: which hashes wait, for which consumer, and why.

Usage::

    from pulsarlab_widgets.views.key_shared_blocking import blocking_rows, key_shared_blocking_view
    key_shared_blocking_view(snapshot(lab)).show()                   # the first Key_Shared subscription
    Player(rec, [functools.partial(key_shared_blocking_view, subscription="sub")])
    pd.DataFrame(blocking_rows(snapshot(lab)))                        # the same as a table

Draws the ordering rules of a Key_Shared dispatcher (docs/guide/key-shared-ordering.md): one row per consumer with the hash
ranges its selector gives it (pale), and on top the hashes whose messages wait in the replay set, at
the row of the consumer the hash selects, coloured by the reason they wait:

* **draining** (4.x, PIP-379): the hash moved to this consumer while its previous owner still has
  unacknowledged messages of it; a diamond on the previous owner's row and a dashed line show who must
  acknowledge first (``drainingHashes`` in the consumer stats);
* **recently joined** (3.0 / classic): the owner joined with read position P and gets only entries
  before P until the mark-delete position passes it (``consumersAfterMarkDeletePosition``);
* **replay set**: older messages of the hash are waiting to be replayed, so a normal read may not send
  newer ones first;
* **no permits** / **no consumer**: the owner's receiver queue is full, or no consumer owns the hash.

Stars mark the ``hash_blocked`` events of the last step with the reason of that dispatch attempt. A
function ``(snapshot, events) -> go.Figure``. Simplifies: the reason drawn for a waiting hash is derived
from the state now (`KeySharedDispatcher.blocked_hash_reason`, through the snapshot), one per hash.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import plotly.graph_objects as go

from pulsarlab.snapshot.base import fmt_pos
from pulsarlab.snapshot.lab import REASON_TEXT, LabSnapshot, SubscriptionSnap
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, consumer_names, empty_figure, events_of, pick, plural
from pulsarlab_widgets.views.style import HIGHLIGHT_COLOR, consumer_color, legend_below

REASON_COLORS = {
    "hash_draining": "#d62728",
    "recently_joined": "#9467bd",
    "hash_in_replay_set": "#ff7f0e",
    "no_permits": "#8c564b",
    "no_consumer": "#7f7f7f",
    "hash_already_blocked_in_this_read": "#bcbd22",
}
REASON_LABELS = {
    "hash_draining": "draining for another consumer",
    "recently_joined": "recently joined consumer waits",
    "hash_in_replay_set": "older messages in the replay set",
    "no_permits": "owner has no permits",
    "no_consumer": "no consumer owns the hash",
    "hash_already_blocked_in_this_read": "blocked earlier in the same read",
}
NOBODY_ROW = "no consumer"
JOINED_LINE_PX = 16  # one line of the joined-at notes above the plot area


def _pick_key_shared(snap: LabSnapshot, topic: str | None, subscription: str | None) -> SubscriptionSnap | None:
    if topic is None and subscription is None:
        for _t, s in snap.subscriptions():
            if s.type == "Key_Shared":
                return s
    chosen = pick(snap, topic, subscription)
    return chosen[1] if chosen is not None else None


def blocking_rows(
    snapshot: LabSnapshot, topic: str | None = None, subscription: str | None = None
) -> list[dict[str, Any]]:
    """One dict per waiting hash: hash, key, waiting messages, owner, reason (and its explanation)."""
    snap = check_lab_snapshot(snapshot, "blocking_rows")
    sub = _pick_key_shared(snap, topic, subscription)
    if sub is None or sub.dispatcher is None:
        return []
    names = consumer_names(snap)
    rows = []
    for b in sub.dispatcher.blocked_hashes:
        rows.append(
            {
                "hash": b.hash,
                "key": b.key,
                "waiting": len(b.positions),
                "first": fmt_pos(b.positions[0]),
                "consumer": names.get(b.consumer) if b.consumer is not None else None,
                "reason": b.reason,
                "draining_from": names.get(b.draining_from) if b.draining_from is not None else None,
                "why": REASON_TEXT.get(b.reason, b.reason),
            }
        )
    return rows


def key_shared_blocking_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
) -> go.Figure:
    """The figure for one Key_Shared subscription of ``snapshot``; ``hash_blocked`` events are starred."""
    snap = check_lab_snapshot(snapshot, "key_shared_blocking_view")
    head = title or "Key_Shared: which hashes wait and why"
    sub = _pick_key_shared(snap, topic, subscription)
    if sub is None:
        return empty_figure(head, "no Key_Shared subscription yet")
    d = sub.dispatcher
    if d is None or d.type != "Key_Shared":
        return empty_figure(head, f"{sub.name} is a {sub.type or 'consumer-less'} subscription, not Key_Shared")
    names = consumer_names(snap)
    lo, hi = d.key_hash_range or (0, 65535)

    def row(cid: int | None) -> str:
        return f"{names.get(cid, cid)} (id {cid})" if cid is not None else NOBODY_ROW

    consumer_rows = [row(c.id) for c in sub.consumers]
    traces: list[go.BaseTraceType] = []
    by_owner: dict[int, list[tuple[int, int]]] = {}
    for a in d.assignments:
        by_owner.setdefault(a.consumer, []).append((a.start, a.end))
    # one Bar trace for every consumer's owned ranges (coloured per bar), so a consumer joining or leaving changes
    # the trace's values, not the number of traces
    owned = [(c, s, e) for c in sub.consumers for s, e in by_owner.get(c.id, [])]
    traces.append(
        go.Bar(
            orientation="h",
            y=[row(c.id) for c, _s, _e in owned],
            base=[s for _c, s, _e in owned],
            x=[e - s + 1 for _c, s, e in owned],
            name="owned hashes",
            showlegend=False,
            marker=dict(color=[consumer_color(c.id) for c, _s, _e in owned], opacity=0.25, line=dict(width=0)),
            hovertext=[f"{c.name} owns [{s}, {e}]" for c, s, e in owned],
            hoverinfo="text",
        )
    )

    rows_needed = list(consumer_rows)
    blocked = list(d.blocked_hashes)
    if any(b.consumer is None for b in blocked) and NOBODY_ROW not in rows_needed:
        rows_needed.append(NOBODY_ROW)
    # every reason and the draining traces are drawn in every frame (empty when nothing waits for that reason), so
    # the figure keeps its traces from frame to frame and a player's step restyles them instead of adding traces
    for reason, color in REASON_COLORS.items():
        group = [b for b in blocked if b.reason == reason]
        hover = []
        for b in group:
            text = (
                f"hash {b.hash}"
                + (f" (key {b.key!r})" if b.key is not None else "")
                + f": {plural(len(b.positions), 'message')} wait in the replay set, first {fmt_pos(b.positions[0])}"
                + f"<br>owner {names.get(b.consumer, NOBODY_ROW) if b.consumer is not None else NOBODY_ROW}: "
                + REASON_TEXT.get(reason, reason)
            )
            if b.draining_from is not None:
                text += f"<br>{names.get(b.draining_from, b.draining_from)} must acknowledge its messages of it first"
            if b.joined_at is not None:
                text += f"<br>joined at read position {fmt_pos(b.joined_at)}"
            hover.append(text)
        traces.append(
            go.Scatter(
                x=[b.hash for b in group],
                y=[row(b.consumer) for b in group],
                mode="markers",
                name=REASON_LABELS.get(reason, reason),
                marker=dict(
                    symbol="circle",
                    color=color,
                    line=dict(color="white", width=1),
                    size=[10 + 4 * math.log2(len(b.positions)) for b in group],
                ),
                hovertext=hover,
                hoverinfo="text",
                showlegend=bool(group),
            )
        )

    drain = list(d.draining)
    xs: list[float | None] = []
    ys: list[str | None] = []
    for h in drain:
        waiting = next((b for b in blocked if b.hash == h.hash), None)
        if waiting is not None and waiting.consumer is not None and waiting.consumer != h.consumer:
            xs += [h.hash, h.hash, None]
            ys += [row(h.consumer), row(waiting.consumer), None]
    traces.append(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line=dict(color=REASON_COLORS["hash_draining"], dash="dash", width=1.5),
            name="waits for the draining consumer",
            hoverinfo="skip",
            showlegend=bool(xs),
        )
    )
    traces.append(
        go.Scatter(
            x=[h.hash for h in drain],
            y=[row(h.consumer) for h in drain],
            mode="markers",
            name="draining hash (previous owner)",
            marker=dict(
                symbol="diamond", size=12, color="white", line=dict(color=REASON_COLORS["hash_draining"], width=2.5)
            ),
            hovertext=[
                f"hash {h.hash} draining from {names.get(h.consumer, h.consumer)}: {h.ref_count} unacked, "
                f"blocked {h.blocked} dispatch attempt(s)"
                for h in drain
            ],
            hoverinfo="text",
            showlegend=bool(drain),
        )
    )

    attempts = [f for _k, f in events_of(events, "hash_blocked") if _event_on(f, sub)]
    traces.append(
        go.Scatter(
            x=[f["hash"] for f in attempts],
            y=[row(f["consumer"] if f["consumer"] is not None and f["consumer"] >= 0 else None) for f in attempts],
            mode="markers",
            name="held back this step",
            marker=dict(
                symbol="star",
                size=16,
                color=[REASON_COLORS.get(f["reason"], HIGHLIGHT_COLOR) for f in attempts],
                line=dict(color=HIGHLIGHT_COLOR, width=1),
            ),
            hovertext=[
                f"{fmt_pos((f['ledger'], f['entry']))} hash {f['hash']} held back: "
                f"{REASON_TEXT.get(f['reason'], f['reason'])}"
                for f in attempts
            ],
            hoverinfo="text",
            showlegend=bool(attempts),
        )
    )
    if any(y == NOBODY_ROW for y in traces[-1].y or ()) and NOBODY_ROW not in rows_needed:
        rows_needed.append(NOBODY_ROW)

    # one line per recently joined consumer above the plot area: inside it the text would lie across the bars of
    # its own row or of the row above (a bar fills most of its row's height)
    annotations = [
        dict(
            text=f"{names.get(cid, cid)} joined at {fmt_pos(at)}: only entries before it until mark-delete "
            f"{fmt_pos(sub.cursor.mark_delete)} passes it",
            x=0,
            xref="paper",
            xanchor="left",
            y=1,
            yref="paper",
            yanchor="bottom",
            yshift=JOINED_LINE_PX * (len(d.recently_joined) - 1 - i) + 4,  # in the order they joined
            showarrow=False,
            font=dict(size=11, color=REASON_COLORS["recently_joined"]),
        )
        for i, (cid, at) in enumerate(d.recently_joined)
    ]
    top = 90 + JOINED_LINE_PX * len(annotations)

    form = "classic (recently joined consumers)" if d.classic else "PIP-379 (draining hashes)"
    if d.allow_out_of_order:
        form += ", out-of-order allowed"
    waiting_msgs = sum(len(b.positions) for b in blocked)
    counts = {}
    for b in blocked:
        counts[REASON_LABELS.get(b.reason, b.reason)] = counts.get(REASON_LABELS.get(b.reason, b.reason), 0) + 1
    detail = ", ".join(f"{n} {label}" for label, n in counts.items()) or "nothing waits"
    t = snap.topic(sub.topic)
    header = (
        f"{head}<br><sup>{t.short_name} / {sub.name} · Pulsar {snap.version}, {form} · "
        f"{plural(len(blocked), 'hash', 'hashes')} wait ({plural(waiting_msgs, 'message')}): {detail}"
        f"{' · ' + plural(len(drain), 'draining hash', 'draining hashes') if drain else ''}</sup>"
    )
    height = 280 + 60 * max(len(rows_needed), 1)
    fig = go.Figure(
        data=traces,
        layout=go.Layout(
            title=dict(text=header),
            barmode="overlay",
            xaxis=dict(title=f"sticky key hash [{lo}, {hi}]", range=[lo, hi + 1], showgrid=False),
            yaxis=dict(categoryorder="array", categoryarray=list(reversed(rows_needed)), fixedrange=True),
            annotations=annotations,
            height=height + top - 90,
            margin=dict(l=120, r=20, t=top, b=120),
            legend=legend_below(height + top - 90, top, 120, gap_px=60),
            plot_bgcolor="white",
        ),
    )
    if not sub.consumers:
        fig.add_annotation(
            text="no consumer attached",
            x=(lo + hi) / 2,
            y=0.5,
            yref="paper",
            showarrow=False,
            font=dict(color="#555555", size=14),
        )
        if not rows_needed:  # no row to name: plotly would number an empty axis
            fig.update_xaxes(visible=False)
            fig.update_yaxes(visible=False)
    return fig


def _event_on(fields: dict[str, Any], sub: SubscriptionSnap) -> bool:
    """hash_blocked events carry a consumer id; keep those of this subscription's consumers (or nobody)."""
    cid = fields.get("consumer")
    return cid is None or cid < 0 or any(c.id == cid for c in sub.consumers)


__all__ = ["REASON_COLORS", "REASON_LABELS", "blocking_rows", "key_shared_blocking_view"]
