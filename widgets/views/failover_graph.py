"""The failover assignment graph: each partition, its active consumer and its standbys, by priority.

Usage::

    from pulsarlab_widgets.views.failover_graph import failover_graph, failover_graph_view
    failover_graph_view(snapshot(lab), topic="orders").show()          # every partition of "orders"
    Player(rec, [functools.partial(failover_graph_view, topic="orders")])
    G = failover_graph(snapshot(lab), "orders")                         # the networkx DiGraph itself

Draws who reads each partition of a Failover (or Exclusive) subscription (docs/guide/subscription-types.md,
`AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer`): partitions on the left,
consumers on the right sorted by (priority level, name) - 0 is the highest priority - and an edge from
every partition to every consumer attached to it. The thick edge is the active consumer: on a partitioned
topic ``partition % n`` over the ``n`` consumers of the highest priority level; on a non-partitioned
topic (3.0+) the consumer whose ring point follows the topic name's hash. Dashed edges are standbys that
could take over at the same level, dotted ones wait at a lower priority. While
``activeConsumerFailoverDelayTimeMillis`` runs the new active edge is orange: the broker has picked it,
but the rewind, the ACTIVE_CONSUMER_CHANGE notifications and the first read come at the end of the delay.
Consumers told "active" / "inactive" in the last step are ringed. The graph is a networkx ``DiGraph``;
plotly draws it with networkx's multipartite layout. A function ``(snapshot, events) -> go.Figure``.
"""

from __future__ import annotations

from typing import Any, Sequence

import networkx as nx
import plotly.graph_objects as go

from pulsarlab.snapshot.base import short_topic
from pulsarlab.snapshot.lab import LabSnapshot, TopicSnap
from pulsarlab_widgets.views.lab_common import check_lab_snapshot, consumer_names, empty_figure, events_of, plural
from pulsarlab_widgets.views.style import HIGHLIGHT_COLOR, consumer_color

ACTIVE = "active"
PENDING = "active after the failover delay"
STANDBY = "standby, same priority"
LOWER = "standby, lower priority"
EDGE_STYLE = {
    ACTIVE: dict(width=5, dash="solid"),
    PENDING: dict(width=5, dash="dash", color="#ff7f0e"),
    STANDBY: dict(width=1.6, dash="dash", color="#888888"),
    LOWER: dict(width=1.2, dash="dot", color="#bbbbbb"),
}
SINGLE_ACTIVE = ("Failover", "Exclusive")


def _family(snap: LabSnapshot, topic: str | None, subscription: str | None) -> tuple[tuple[TopicSnap, ...], str] | None:
    """The partitions (or the one topic) and the subscription name the graph draws."""
    if topic is not None:
        parts = snap.partitions(topic)
        if subscription is None:
            for p in parts:
                for s in p.subscriptions:
                    subscription = s.name
                    break
                if subscription is not None:
                    break
        return (parts, subscription) if subscription is not None else None
    candidates = [
        (t, s)
        for t, s in snap.subscriptions()
        if (subscription is None or s.name == subscription) and s.type in SINGLE_ACTIVE
    ]
    if not candidates:
        candidates = [(t, s) for t, s in snap.subscriptions() if subscription is None or s.name == subscription]
    if not candidates:
        return None
    t, s = candidates[0]
    base = t.name.rsplit("-partition-", 1)[0] if t.partition_index >= 0 else t.name
    return snap.partitions(base) if t.partition_index >= 0 else (t,), s.name


def failover_graph(snapshot: LabSnapshot, topic: str | None = None, subscription: str | None = None) -> nx.DiGraph:
    """The assignment graph: nodes ``("partition", i)`` and ``("consumer", id)``, an edge per attachment.

    Node attributes: ``layer`` (0 partitions, 1 consumers), ``label``; partitions also ``rule``,
    ``pending_until``, ``sub_type``; consumers ``priority``. Edge attributes: ``kind`` (one of `ACTIVE`,
    `PENDING`, `STANDBY`, `LOWER`) and ``rank`` (the consumer's place in the sorted list).
    """
    snap = check_lab_snapshot(snapshot, "failover_graph")
    G = nx.DiGraph()
    found = _family(snap, topic, subscription)
    if found is None:
        return G
    parts, sub_name = found
    G.graph.update(
        topic=short_topic(parts[0].name.rsplit("-partition-", 1)[0])
        if parts[0].partition_index >= 0
        else parts[0].short_name,
        subscription=sub_name,
        partitioned=parts[0].partition_index >= 0,
    )
    consumers: dict[int, Any] = {}
    for p in parts:
        i = max(p.partition_index, 0)
        sub = next((s for s in p.subscriptions if s.name == sub_name), None)
        d = sub.dispatcher if sub is not None else None
        label = f"partition {p.partition_index}" if p.partition_index >= 0 else p.short_name
        G.add_node(
            ("partition", i),
            layer=0,
            label=label,
            topic=p.name,
            rule=d.failover_rule if d is not None else None,
            pending_until=d.failover_pending_until if d is not None else None,
            sub_type=sub.type if sub is not None else None,
        )
        if sub is None:
            continue
        ordered = sorted(sub.consumers, key=lambda c: (c.priority, c.name.encode("utf-16-be", "surrogatepass")))
        top = ordered[0].priority if ordered else 0
        for rank, c in enumerate(ordered):
            consumers.setdefault(c.id, c)
            if d is not None and d.active_consumer == c.id:
                kind = PENDING if d.failover_pending_until is not None else ACTIVE
            elif c.priority == top:
                kind = STANDBY
            else:
                kind = LOWER
            G.add_edge(("partition", i), ("consumer", c.id), kind=kind, rank=rank)
    for cid, c in sorted(consumers.items(), key=lambda kv: (kv[1].priority, kv[1].name)):
        G.add_node(("consumer", cid), layer=1, label=c.name, priority=c.priority)
    return G


def _positions(G: nx.DiGraph) -> dict[Any, tuple[float, float]]:
    """networkx's multipartite layout (its vertical spacing), partitions at x = 0 and consumers at x = 1, each
    layer ordered top to bottom: partitions by index, consumers by (priority, name)."""
    raw = nx.multipartite_layout(G, subset_key="layer", align="vertical")
    pos: dict[Any, tuple[float, float]] = {}
    for layer in (0, 1):
        nodes = [n for n, a in G.nodes(data=True) if a["layer"] == layer]
        if layer == 0:
            nodes.sort(key=lambda n: n[1])
        else:
            nodes.sort(key=lambda n: (G.nodes[n]["priority"], G.nodes[n]["label"]))
        ys = sorted((raw[n][1] for n in nodes), reverse=True) if len(nodes) > 1 else [0.0]
        for n, y in zip(nodes, ys):
            pos[n] = (float(layer), float(y))
    return pos


def failover_graph_view(
    snapshot: LabSnapshot,
    events: Sequence[Any] = (),
    topic: str | None = None,
    subscription: str | None = None,
    title: str | None = None,
) -> go.Figure:
    """The figure of `failover_graph`; ACTIVE_CONSUMER_CHANGE notifications in ``events`` are ringed."""
    snap = check_lab_snapshot(snapshot, "failover_graph_view")
    G = failover_graph(snap, topic, subscription)
    head = title or "Failover assignment"
    if G.number_of_nodes() == 0:
        return empty_figure(head, "no subscription yet: subscribe a Failover consumer first")
    pos = _positions(G)
    names = consumer_names(snap)
    traces: list[go.BaseTraceType] = []
    for kind, style in EDGE_STYLE.items():
        edges = [(u, v) for u, v, a in G.edges(data=True) if a["kind"] == kind]
        if kind in (ACTIVE,):
            # one trace per consumer (empty while it is active nowhere), in its colour: the same traces in the same
            # order from frame to frame, so a step restyles them instead of removing and adding traces
            first = True
            for c in [n for n, a in G.nodes(data=True) if a["layer"] == 1]:
                mine = [(u, v) for u, v in edges if v == c]
                traces.append(
                    _edge_trace(
                        mine, pos, dict(style, color=consumer_color(c[1])), kind, showlegend=first and bool(mine)
                    )
                )
                first = first and not mine
        else:
            traces.append(_edge_trace(edges, pos, style, kind, showlegend=bool(edges)))
    traces.append(_edge_hover(G, pos, names))

    parts = [n for n, a in G.nodes(data=True) if a["layer"] == 0]
    part_hover = []
    for n in parts:
        a = G.nodes[n]
        active = [v for _u, v, e in G.out_edges(n, data=True) if e["kind"] in (ACTIVE, PENDING)]
        line = f"{a['label']} ({a['sub_type'] or 'no consumer'})"
        if active:
            line += f"<br>active: {names.get(active[0][1], active[0][1])}"
        if a["rule"]:
            line += f"<br>{a['rule']}"
        if a["pending_until"] is not None:
            line += (
                f"<br>rewind, notify and read at t = {a['pending_until']} ms (activeConsumerFailoverDelayTimeMillis)"
            )
        part_hover.append(line)
    traces.append(
        go.Scatter(
            x=[pos[n][0] for n in parts],
            y=[pos[n][1] for n in parts],
            mode="markers+text",
            name="partitions",
            text=[G.nodes[n]["label"] for n in parts],
            textposition="middle left",
            marker=dict(symbol="square", size=22, color="#4c78a8", line=dict(color="white", width=1)),
            hovertext=part_hover,
            hoverinfo="text",
            showlegend=False,
        )
    )

    cons = [n for n, a in G.nodes(data=True) if a["layer"] == 1]
    told = _notified(events)
    traces.append(
        go.Scatter(
            x=[pos[n][0] for n in cons],
            y=[pos[n][1] for n in cons],
            mode="markers+text",
            name="consumers",
            text=[f"{G.nodes[n]['label']} · priority {G.nodes[n]['priority']}" for n in cons],
            textposition="middle right",
            marker=dict(size=24, color=[consumer_color(n[1]) for n in cons], line=dict(color="white", width=1)),
            hovertext=[_consumer_hover(G, n) for n in cons],
            hoverinfo="text",
            showlegend=False,
        )
    )
    rings = [n for n in cons if n[1] in told]
    traces.append(
        go.Scatter(
            x=[pos[n][0] for n in rings],
            y=[pos[n][1] for n in rings],
            mode="markers",
            name="told active / inactive this step",
            marker=dict(symbol="circle-open", size=38, color=HIGHLIGHT_COLOR, line=dict(width=2.5)),
            hovertext=[
                f"ACTIVE_CONSUMER_CHANGE to {G.nodes[n]['label']}: "
                + ", ".join("active" if a else "inactive" for a in told[n[1]])
                for n in rings
            ],
            hoverinfo="text",
            showlegend=bool(rings),
        )
    )

    n_parts, n_cons = len(parts), len(cons)
    partitioned = G.graph.get("partitioned")
    if partitioned:
        rule = "partition i → active = i % n over the n consumers of the highest priority level"
    else:
        rule = G.nodes[parts[0]]["rule"] or "no active consumer"
    sub_type = next((G.nodes[n]["sub_type"] for n in parts if G.nodes[n]["sub_type"]), None)
    header = (
        f"{head}: {G.graph['topic']} / {G.graph['subscription']} ({sub_type or 'no consumer'}) — "
        f"{plural(n_parts, 'partition') if partitioned else 'non-partitioned'}, {plural(n_cons, 'consumer')}"
    )
    note = ""
    if told:
        note = "<br>ACTIVE_CONSUMER_CHANGE: " + ", ".join(
            f"{names.get(c, c)} {'active' if a else 'inactive'}" for c, acts in told.items() for a in acts
        )
    rows = max(n_parts, n_cons, 1)
    fig = go.Figure(
        data=traces,
        layout=go.Layout(
            title=dict(text=f"{header}<br><sup>{rule}{note}</sup>"),
            xaxis=dict(visible=False, range=[-0.55, 1.55]),
            yaxis=dict(visible=False, range=[-1.25, 1.25]),
            height=max(320, 110 + 46 * rows),
            margin=dict(l=20, r=20, t=90, b=40),
            legend=dict(orientation="h", y=-0.05),
            plot_bgcolor="white",
            hovermode="closest",
        ),
    )
    return fig


def _edge_trace(edges: list, pos: dict, style: dict, name: str, showlegend: bool) -> go.Scatter:
    xs: list[float | None] = []
    ys: list[float | None] = []
    for u, v in edges:
        xs += [pos[u][0], pos[v][0], None]
        ys += [pos[u][1], pos[v][1], None]
    return go.Scatter(
        x=xs, y=ys, mode="lines", name=name, line=style, hoverinfo="skip", showlegend=showlegend, legendgroup=name
    )


def _edge_hover(G: nx.DiGraph, pos: dict, names: dict[int, str]) -> go.Scatter:
    xs, ys, texts = [], [], []
    for u, v, a in G.edges(data=True):
        xs.append(pos[u][0] * 0.35 + pos[v][0] * 0.65)
        ys.append(pos[u][1] * 0.35 + pos[v][1] * 0.65)
        texts.append(
            f"{G.nodes[u]['label']} → {names.get(v[1], v[1])}: {a['kind']} (place {a['rank']} in "
            "(priority, name) order)"
        )
    return go.Scatter(
        x=xs,
        y=ys,
        mode="markers",
        marker=dict(size=8, opacity=0),
        hovertext=texts,
        hoverinfo="text",
        showlegend=False,
        name="edges",
    )


def _consumer_hover(G: nx.DiGraph, n: Any) -> str:
    a = G.nodes[n]
    active = [G.nodes[u]["label"] for u, _v, e in G.in_edges(n, data=True) if e["kind"] in (ACTIVE, PENDING)]
    standby = [G.nodes[u]["label"] for u, _v, e in G.in_edges(n, data=True) if e["kind"] not in (ACTIVE, PENDING)]
    line = f"{a['label']} (priority {a['priority']})"
    if active:
        line += f"<br>active for: {', '.join(active)}"
    if standby:
        line += f"<br>standby for: {', '.join(standby)}"
    return line


def _notified(events: Sequence[Any]) -> dict[int, list[bool]]:
    out: dict[int, list[bool]] = {}
    for _k, f in events_of(events, "active_consumer_change"):
        out.setdefault(f["consumer"], []).append(bool(f["is_active"]))
    return out


__all__ = ["ACTIVE", "LOWER", "PENDING", "STANDBY", "failover_graph", "failover_graph_view"]
