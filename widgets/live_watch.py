"""Live views of a real cluster: the player's views over a `pulsarlab.watch.Watcher`, redrawn at each poll.

Usage (a notebook)::

    from pulsarlab.watch import AdminClient, Watcher
    from pulsarlab_widgets.live_watch import WatchViews
    watcher = Watcher(AdminClient("http://127.0.0.1:8080"), "orders", interval_s=2)
    live = WatchViews(watcher)        # display it: it polls in the background and redraws after each poll
    live.stop(); live.player()        # step back through the polls; watcher.save(FILE) records them

Models no Pulsar class (docs/architecture.md, "Above the model"). Shows the poll's status line (errors and back-off included), the
findings of `pulsarlab.importers.diagnose` with how long each has held and which cleared, the backlog of each
subscription over the polls, and the views given (by default the cursor with its ack holes, the Key_Shared hash
ranges with draining hashes and blocked consumers, and each consumer's permits and unacked messages over time),
each a function ``view(snapshot, events)`` of the ordinary player. The watcher polls on its own thread and calls
back there; in a kernel the redraw is handed to the kernel's event loop (the main thread: figure updates sent from
another thread did not reach JupyterLab's page), where `sync_figure` sends only what changed. A failed poll keeps the last good
figures and says why in the status line.

Simplifies: the views draw what the admin API shows (`pulsarlab.watch.observed`): no message keys, no replay
positions, no client-side queues.
"""

from __future__ import annotations

import asyncio
import html
import threading
from functools import partial
from typing import Any, Sequence

import ipywidgets as widgets
import plotly.graph_objects as go

from pulsarlab.snapshot.base import short_topic
from pulsarlab.snapshot.frame import Frame
from pulsarlab.watch.findings import format_duration
from pulsarlab.watch.watcher import Watcher, WatchState
from pulsarlab_widgets.fit import FIT_CLASS, FigureFit, responsive
from pulsarlab_widgets.player import Player, View, sync_figure
from pulsarlab_widgets.views.cursor import cursor_view
from pulsarlab_widgets.views.dispatch_timeline import dispatch_timeline_view
from pulsarlab_widgets.views.key_shared_blocking import key_shared_blocking_view
from pulsarlab_widgets.views.style import consumer_color, count_axis, legend_below

SEVERITY_COLORS = {"CRITICAL": "#b00020", "WARNING": "#c77700", "INFO": "#2f6db5"}


def default_views(topic: str | None = None, subscription: str | None = None) -> list[View]:
    """The cursor, the Key_Shared blocking picture and the per-consumer timeline, for one subscription."""
    pick = dict(topic=topic, subscription=subscription)
    return [
        partial(cursor_view, **pick),
        partial(key_shared_blocking_view, **pick),
        partial(dispatch_timeline_view, **pick, title="Permits and unacked messages per consumer over the polls"),
    ]


def backlog_figure(frames: Sequence[Frame]) -> go.Figure:
    """Each subscription's backlog (``msgBacklog``) at each good poll, against the watch's time in seconds."""
    lines: dict[str, tuple[list[float], list[int]]] = {}
    for f in frames:
        if f.event is None or f.event.kind != "admin_polled":
            continue
        for t, s in f.snapshot.subscriptions():
            xs, ys = lines.setdefault(f"{short_topic(t.name)} / {s.name}", ([], []))
            xs.append(f.snapshot.time / 1000)
            ys.append(s.cursor.backlog)
    fig = go.Figure()
    for i, (name, (xs, ys)) in enumerate(sorted(lines.items())):
        fig.add_scatter(x=xs, y=ys, name=name, mode="lines+markers", line=dict(color=consumer_color(i), shape="hv"))
    height, top, bottom = 300, 50, 110
    fig.update_layout(
        title="Backlog per subscription over the polls (msgBacklog)",
        height=height,
        margin=dict(l=50, r=20, t=top, b=bottom),
        xaxis_title="watch time (s)",
        yaxis=count_axis([y for _xs, ys in lines.values() for y in ys]),
        legend=legend_below(height, top, bottom),
    )
    return fig


def findings_html(state: WatchState | None) -> str:
    """The status line and the findings (most severe first, with how long each has held) as HTML."""
    if state is None:
        return "<i>no poll yet</i>"
    st = state.status
    color = "#1b5e20" if st.ok else "#b00020"
    rows = [f"<div style='color:{color}'><b>poll {st.poll}</b> · {html.escape(st.message)}</div>"]
    if not state.findings:
        rows.append("<div>no findings: nothing in these stats breaks a rule the lab checks</div>")
    for t in state.findings:
        f = t.finding
        held = "new" if t.polls == 1 else f"for {format_duration(t.duration_ms)} ({t.polls} polls)"
        rows.append(
            f"<div><b style='color:{SEVERITY_COLORS[f.severity.name]}'>{f.severity.name}</b> "
            f"{html.escape(f.subject)} · <code>{f.rule}</code> <i>({held})</i>: {html.escape(f.message)}</div>"
        )
    for t in state.changes.cleared:
        f = t.finding
        rows.append(
            f"<div style='color:#555'>cleared: {html.escape(f.subject)} · <code>{f.rule}</code> after "
            f"{format_duration(t.duration_ms)}</div>"
        )
    return "<div class='pulsarlab-watch-findings'>" + "".join(rows) + "</div>"


class WatchViews(widgets.VBox):
    """The live picture of ``watcher``: status and findings, backlog over time, and ``views`` (default
    `default_views`). ``start``: poll in the background now (``duration_s``: for that long)."""

    def __init__(
        self,
        watcher: Watcher,
        views: View | Sequence[View] | None = None,
        *,
        start: bool = True,
        duration_s: float | None = None,
        title: str | None = None,
    ) -> None:
        views = default_views() if views is None else ([views] if callable(views) else list(views))
        if not views or not all(callable(v) for v in views):
            raise TypeError("views must be a view function or a list of them: view(snapshot, events) -> go.Figure")
        self.watcher = watcher
        self.views = views
        self._lock = threading.Lock()
        self.errors: list[Exception] = []
        self.redraws = 0
        if not watcher.frames:
            watcher.poll()  # the first state to draw (a refusal that will not heal is raised here)
        state = watcher.state
        assert state is not None
        snap = state.snapshot
        self.status = widgets.HTML(findings_html(state))
        self.backlog = responsive(backlog_figure(watcher.frames))
        self.figures = [responsive(v(snap, [watcher.frames[-1].event])) for v in views]
        rows: list[widgets.Widget] = []
        head = title or f"watching {watcher.selection.text} on {watcher.client.url}"
        rows.append(widgets.HTML(f"<b>{html.escape(head)}</b>"))
        rows += [self.status, self.backlog, *self.figures, FigureFit()]
        super().__init__(rows)
        self.add_class(FIT_CLASS)
        self.add_class("pulsarlab-watch")
        try:  # in a kernel: redraw on its event loop (the main thread), where widget updates reach the page
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        watcher.listen(self._on_poll)
        if start:
            watcher.start(duration_s)

    def _on_poll(self, frame: Frame, state: WatchState) -> None:
        """After a poll: redraw on the kernel's loop when there is one (the watcher polls on its own thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed() and threading.current_thread() is not threading.main_thread():
            loop.call_soon_threadsafe(self._redraw, frame, state)
        else:
            self._redraw(frame, state)

    def _redraw(self, frame: Frame, state: WatchState) -> None:
        """Show one poll; a view that fails must not stop the others (its error is kept in ``errors``)."""
        with self._lock:
            try:
                self.status.value = findings_html(state)
                if state.status.ok:
                    sync_figure(self.backlog, backlog_figure(self.watcher.frames))
                    for view, fig in zip(self.views, self.figures):
                        sync_figure(fig, view(state.snapshot, [frame.event]))
                self.redraws += 1
            except Exception as e:  # shown in errors; the watch goes on
                self.errors.append(e)

    def stop(self) -> None:
        """Stop polling (the figures keep the last state)."""
        self.watcher.stop()

    def player(self, views: View | Sequence[View] | None = None, **kwargs: Any) -> Player:
        """A `Player` over the polls so far (a fixed copy), starting at the last one."""
        frames = list(self.watcher.frames)
        return Player(frames, views if views is not None else self.views, start=len(frames) - 1, **kwargs)

    def __repr__(self) -> str:
        state = "running" if self.watcher.running else "stopped"
        return f"<WatchViews {len(self.views)} view(s), {len(self.watcher.frames)} poll(s), {state}>"


__all__ = ["WatchViews", "backlog_figure", "default_views", "findings_html"]
