"""Live views of a served lab: the player's views, redrawn as real clients' traffic arrives.

Usage (a notebook, with ``server = pulsarlab.serve.start(lab, port=0)``)::

    live = LiveViews(server, [partial(cursor_view, subscription="workers"), dispatch_timeline_view], max_fps=2)
    live                      # display it; it follows the lab while the app runs
    ...
    live.stop()               # or leave it running; live.refresh() redraws now
    live.player()             # step back through what just happened (one frame per refresh)

Models no Pulsar class (docs/architecture.md). A background thread wakes at most ``max_fps`` times a second; when
the lab logged events since the last frame it takes a `LabSnapshot` with the server's model lock held (only for
the snapshot and the new events), then renders and updates the figures outside the lock, so the network loop is
never held up by plotting. Each refresh is kept as a frame (the last ``keep_frames``), with the per-consumer
samples the dispatch timeline draws, so `player` gives the ordinary `Player` over them.

Simplifies: frames are taken at refresh granularity, not per event (a `pulsarlab.snapshot.recorder.Recorder` attached to
the lab records every event, at the cost of a snapshot per event on the network loop); a frame passes the views
its last ``max_events`` events.
"""

from __future__ import annotations

import html
import logging
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Sequence

import ipywidgets as widgets

from pulsarlab.events import Event
from pulsarlab.snapshot.base import History, Sample
from pulsarlab.snapshot.lab import LabSnapshot, SnapshotBuilder
from pulsarlab_widgets.fit import FIT_CLASS, FigureFit, responsive
from pulsarlab_widgets.player import Player, View, sync_figure

log = logging.getLogger("pulsarlab_widgets.live")


@dataclass(frozen=True)
class LiveFrame:
    """One refresh: the snapshot, the events logged since the previous frame (the last ``max_events``), the
    last of them (``event``, for the player's jump-to-kind) and a one-line explanation."""

    index: int
    snapshot: LabSnapshot
    events: tuple[Event, ...]
    event: Event | None
    explanation: str


class LiveViews(widgets.VBox):
    """Figures of ``views`` that follow a served lab (``server``: what `pulsarlab.serve.start` / ``lab.serve``
    returns), redrawn at most ``max_fps`` times a second while events arrive."""

    def __init__(
        self,
        server: Any,
        views: View | Sequence[View],
        *,
        max_fps: float = 2.0,
        keep_frames: int = 300,
        max_events: int = 500,
        title: str | None = None,
        start: bool = True,
    ) -> None:
        views = [views] if callable(views) else list(views)
        if not views or not all(callable(v) for v in views):
            raise TypeError("views must be a view function or a list of them: view(snapshot, events) -> go.Figure")
        if max_fps <= 0:
            raise ValueError(f"max_fps must be > 0, got {max_fps}")
        self.server = server
        self.lab = server.lab
        self.views = views
        self.max_fps = float(max_fps)
        self.max_events = max_events
        self._builder = SnapshotBuilder(self.lab)
        self._samples: list[Sample] = []
        self._frames: deque[LiveFrame] = deque(maxlen=keep_frames)
        self._count = 0
        self._seen = -1  # events logged when the last frame was taken (-1: none taken yet)
        self._render_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[Exception] = []
        frame = self.capture(force=True)
        assert frame is not None
        self._drawn = [v(frame.snapshot, frame.events) for v in views]
        self.figures = [responsive(fig) for fig in self._drawn]
        self.fit = FigureFit()
        self.fit.show(self._drawn)
        self.fit.observe(lambda _change: self._refit(), names="heights")
        self.label = widgets.HTML(self._label(frame))
        rows: list[widgets.Widget] = []
        if title:
            rows.append(widgets.HTML(f"<b>{html.escape(title)}</b>"))
        rows.append(self.label)
        rows.extend(self.figures)
        rows.append(self.fit)
        super().__init__(rows)
        self.add_class(FIT_CLASS)
        if start:
            self.start()

    # --- frames ---------------------------------------------------------------------------------
    def capture(self, force: bool = False) -> LiveFrame | None:
        """Take a frame now if the lab logged events since the last one (or always, with ``force``)."""
        lab = self.lab
        with self.server.lock:
            n = len(lab.events)
            if n == self._seen and not force:
                return None
            start = max(self._seen + 1 if self._seen >= 0 else n, n - self.max_events, lab.events.first_seq)
            events = tuple(lab.events[i] for i in range(start, n)) if self._seen >= 0 else ()
            snap = self._builder.build()
        self._seen = n
        self._samples.extend(snap.consumer_samples())
        snap = replace(snap, history=History(self._samples, len(self._samples)))
        last = events[-1] if events else None
        if last is None:
            text = f"t = {snap.time} ms: the lab as the live views start"
        else:
            text = f"t = {snap.time} ms: {len(events)} event(s) since the last frame; last: {last.explain()}"
        frame = LiveFrame(self._count, snap, events, last, text)
        self._count += 1
        self._frames.append(frame)
        return frame

    @property
    def frames(self) -> list[LiveFrame]:
        """The kept frames, oldest first (a copy)."""
        return list(self._frames)

    def refresh(self, force: bool = False) -> bool:
        """Take a frame and redraw every figure; False when nothing happened since the last frame."""
        with self._render_lock:
            frame = self.capture(force)
            if frame is None:
                return False
            self._drawn = [view(frame.snapshot, frame.events) for view in self.views]
            self.fit.show(self._drawn)
            self._sync_figures()
            self.label.value = self._label(frame)
            return True

    def _sync_figures(self) -> None:
        for k, (widget, fig) in enumerate(zip(self.figures, self._drawn)):
            sync_figure(widget, fig, self.fit.fit_height(k, fig))

    def _refit(self) -> None:
        """Redraw the figures at the heights the page fits them to (presenter mode)."""
        with self._render_lock:
            self._sync_figures()

    def _label(self, frame: LiveFrame) -> str:
        return f"<b>live · frame {frame.index}</b> · {html.escape(frame.explanation)}"

    # --- the refresher thread -------------------------------------------------------------------
    def start(self) -> None:
        """Follow the lab in the background (at most ``max_fps`` redraws a second)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pulsarlab-live-views", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop following the lab (the figures keep their last state)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        interval = 1.0 / self.max_fps
        while not self._stop.wait(interval):
            try:
                self.refresh()
            except Exception as e:  # a view that fails must not stop the others from updating later
                self.errors.append(e)
                log.warning("live views: refresh failed: %s: %s", type(e).__name__, e)
                if len(self.errors) > 20:
                    return

    # --- stepping back --------------------------------------------------------------------------
    def player(self, views: View | Sequence[View] | None = None, **kwargs: Any) -> Player:
        """A `Player` over the frames kept so far (a fixed copy), starting at the last one."""
        frames = self.frames
        return Player(frames, views if views is not None else self.views, start=len(frames) - 1, **kwargs)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<LiveViews {len(self.views)} view(s), {len(self._frames)} frame(s), {state}>"


__all__ = ["LiveFrame", "LiveViews"]
