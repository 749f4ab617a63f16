"""What the broker-model views share: checking the snapshot, picking a subscription, names and events.

Models no Pulsar class. The views of `dispatch_timeline`, `cursor`, `failover_graph` and
`key_shared_blocking` draw a `pulsarlab.snapshot.lab.LabSnapshot`; each takes ``topic=`` and
``subscription=`` keywords (default: the first subscription of the snapshot), so a player gets them with
``functools.partial(cursor_view, subscription="sub")``.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import plotly.graph_objects as go

from pulsarlab.snapshot.lab import LabSnapshot, SubscriptionSnap, TopicSnap
from pulsarlab_widgets.views.style import event_fields, event_kind, plural


def check_lab_snapshot(snapshot: Any, view: str) -> LabSnapshot:
    """Fail clearly when a view gets something that is not a `LabSnapshot`."""
    if not isinstance(snapshot, LabSnapshot):
        hint = (
            " (a Key_Shared selector snapshot: use hash_range_view / ring_view)" if isinstance(snapshot, dict) else ""
        )
        raise TypeError(
            f"{view} draws a pulsarlab.snapshot.lab.LabSnapshot (snapshot(lab) or a Recorder frame), "
            f"not {type(snapshot).__name__}{hint}"
        )
    return snapshot


def pick(
    snapshot: LabSnapshot, topic: str | None, subscription: str | None
) -> tuple[TopicSnap, SubscriptionSnap] | None:
    """The topic and subscription a view draws; None when the snapshot has no subscription (yet)."""
    try:
        sub = snapshot.subscription(topic, subscription)
    except KeyError:
        if topic is not None and subscription is None:
            snapshot.topic(topic)  # a wrong topic name is an error; a topic without subscriptions is not
        if subscription is not None and any(True for _ in snapshot.subscriptions()):
            raise
        return None
    return snapshot.topic(sub.topic), sub


def consumer_names(snapshot: LabSnapshot) -> dict[int, str]:
    """Consumer id -> name over every subscription of the snapshot."""
    out: dict[int, str] = {}
    for _t, s in snapshot.subscriptions():
        for c in s.consumers:
            out[c.id] = c.name
    return out


def events_of(events: Sequence[Any], *kinds: str) -> list[tuple[str, dict[str, Any]]]:
    """``(kind, fields)`` of the events of the given kinds, in order."""
    wanted = set(kinds)
    out = []
    for e in events:
        kind = event_kind(e)
        if kind in wanted:
            out.append((kind, event_fields(e)))
    return out


def empty_figure(title: str, text: str, height: int = 260) -> go.Figure:
    """A figure with only a message (nothing to draw yet), same shape for every view."""
    fig = go.Figure(
        layout=go.Layout(
            title=dict(text=title),
            height=height,
            plot_bgcolor="white",
            xaxis=dict(visible=False),
            yaxis=dict(visible=False),
        )
    )
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font=dict(size=14))
    return fig


def join_names(ids: Iterable[int], names: dict[int, str]) -> str:
    return ", ".join(names.get(i, str(i)) for i in ids)


__all__ = ["check_lab_snapshot", "consumer_names", "empty_figure", "events_of", "join_names", "pick", "plural"]
