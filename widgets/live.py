"""Live views of a served lab: the player's views, redrawn as real clients' traffic arrives.

Usage (a notebook, with ``server = pulsarlab.serve.start(lab, port=0)``)::

    live = LiveViews(server, [partial(cursor_view, subscription="workers"), dispatch_timeline_view], max_fps=2)
    live                      # display it; it follows the lab while the app runs
    ...
    live.stop()               # or leave it running; live.refresh() redraws now
    live.player()             # step back through what just happened (one frame per event)

Models no Pulsar class (docs/architecture.md). A `pulsarlab.snapshot.recorder.Recorder` attached to the lab takes a
frame per event on the network loop (a `LabSnapshot` with the per-consumer samples the dispatch timeline draws),
keeping the newest ``keep_frames`` (by default as many as the lab's event window, ``pulsarlab serve
--event-window``, else `DEFAULT_KEEP_FRAMES`), so `player` steps through the whole run. A background thread wakes
at most ``max_fps`` times a second; when frames were taken since the last redraw it takes the newest with the
server's model lock held (only to read the frames), then renders and updates the figures outside the lock, so the
network loop is never held up by plotting. A redraw passes the views the events since the previous redraw (the
last ``max_events``).
"""

from __future__ import annotations

import html
import logging
import threading
from typing import Any, Sequence

import ipywidgets as widgets

from pulsarlab.snapshot.frame import Frame
from pulsarlab.snapshot.recorder import VIEW_KINDS, Recorder
from pulsarlab_widgets.fit import FIT_CLASS, FigureFit, responsive
from pulsarlab_widgets.player import Player, View, sync_figure

log = logging.getLogger("pulsarlab_widgets.live")

DEFAULT_KEEP_FRAMES = 20_000  # frames kept when the lab's event log keeps every event


class LiveViews(widgets.VBox):
    """Figures of ``views`` that follow a served lab (``server``: what `pulsarlab.serve.start` / ``lab.serve``
    returns), redrawn at most ``max_fps`` times a second while events arrive."""

    def __init__(
        self,
        server: Any,
        views: View | Sequence[View],
        *,
        max_fps: float = 2.0,
        keep_frames: int | None = None,
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
        self.keep_frames = keep_frames or self.lab.events.window or DEFAULT_KEEP_FRAMES
        with server.lock:
            self.recorder = Recorder(self.lab, VIEW_KINDS, keep=self.keep_frames, initial=False)
            self.recorder.capture(f"t = {self.lab.now()} ms: the lab as the live views start")
        self._taken_drawn = 0  # frames taken when the figures were last drawn
        self._render_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[Exception] = []
        frame, events = self._newest(force=True)  # type: ignore[misc]
        self._drawn = [v(frame.snapshot, events) for v in views]
        self.figures = [responsive(fig) for fig in self._drawn]
        self.fit = FigureFit()
        self.fit.show(self._drawn)
        self.fit.observe(lambda _change: self._refit(), names="heights")
        self.label = widgets.HTML(self._label(frame, events))
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
    def _newest(self, force: bool = False) -> tuple[Frame, tuple[Any, ...]] | None:
        """The newest frame and the events since the last redraw (the last ``max_events``); None when no frame
        was taken since (unless ``force``)."""
        rec = self.recorder
        with self.server.lock:
            taken = rec.taken
            if taken == self._taken_drawn and not force:
                return None
            new = min(taken - self._taken_drawn, len(rec), self.max_events)
            recent = rec[len(rec) - new :]
            frame = rec[-1]
        self._taken_drawn = taken
        return frame, tuple(f.event for f in recent if f.event is not None)

    def capture(self, explanation: str = "") -> Frame:
        """Add a frame of the state now (no event), e.g. to mark where the app's run ended."""
        with self.server.lock:
            return self.recorder.capture(explanation or f"t = {self.lab.now()} ms: taken by hand")

    @property
    def frames(self) -> list[Frame]:
        """The kept frames (one per event, the newest ``keep_frames``), oldest first (a copy)."""
        with self.server.lock:
            frames = self.recorder[:]
        return frames[-self.keep_frames :]

    def refresh(self, force: bool = False) -> bool:
        """Redraw every figure at the newest frame; False when no frame was taken since the last redraw."""
        with self._render_lock:
            newest = self._newest(force)
            if newest is None:
                return False
            frame, events = newest
            self._drawn = [view(frame.snapshot, events) for view in self.views]
            self.fit.show(self._drawn)
            self._sync_figures()
            self.label.value = self._label(frame, events)
            return True

    def _sync_figures(self) -> None:
        for k, (widget, fig) in enumerate(zip(self.figures, self._drawn)):
            sync_figure(widget, fig, self.fit.fit_height(k, fig))

    def _refit(self) -> None:
        """Redraw the figures at the heights the page fits them to (presenter mode)."""
        with self._render_lock:
            self._sync_figures()

    def _label(self, frame: Frame, events: tuple[Any, ...]) -> str:
        since = f" · {len(events)} event(s) since the last redraw" if len(events) > 1 else ""
        return (
            f"<b>live · frame {frame.index}</b> · t = {frame.time} ms{since} · last: {html.escape(frame.explanation)}"
        )

    # --- the refresher thread -------------------------------------------------------------------
    def start(self) -> None:
        """Follow the lab in the background (at most ``max_fps`` redraws a second)."""
        if self._thread is not None and self._thread.is_alive():
            return
        if not self.recorder.recording:
            raise RuntimeError("these live views were stopped and recorded no frames since: make new LiveViews")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="pulsarlab-live-views", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop redrawing and recording (the figures keep their last state, `player` the frames so far)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        with self.server.lock:
            self.recorder.close()

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
        return f"<LiveViews {len(self.views)} view(s), {len(self.recorder)} frame(s), {state}>"


__all__ = ["DEFAULT_KEEP_FRAMES", "LiveViews"]
