"""The player: step, go back, play/pause, change speed and jump through any timeline, redrawing every view.

Models no Pulsar class (docs/architecture.md). A timeline is anything with ``len(timeline)`` and
``timeline[i]`` returning a frame with ``.snapshot`` and ``.explanation`` (and optionally ``.event``,
whose ``.kind`` enables jump-by-kind). A view is a function ``view(snapshot, events) -> go.Figure``:
``events`` are the frames' events since the frame shown before (the frame itself after a step back).
The player builds each `go.FigureWidget` complete from its start frame and afterwards only changes it
in callbacks, which is what a live JupyterLab view needs; `render` gives the same figure statically.
"""

from __future__ import annotations

import html
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Protocol, Sequence

import ipywidgets as widgets
import plotly.graph_objects as go

from pulsarlab_widgets.fit import FIT_CLASS, FigureFit, responsive
from pulsarlab_widgets.keys import PlayerKeys


class FrameLike(Protocol):
    """One step of a timeline."""

    @property
    def snapshot(self) -> Any: ...

    @property
    def explanation(self) -> str: ...


class TimelineLike(Protocol):
    """What the player steps through."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> FrameLike: ...


View = Callable[[Any, Sequence[Any]], go.Figure]

# One worker for every player of the kernel: draws the frames next to the one shown while the user looks at it.
_AHEAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pulsarlab-player-ahead")
# How long after a step the worker waits before drawing ahead: the browser redraws the step's figures meanwhile, and
# drawing ahead at once took the CPU (and the kernel's GIL, which sends the step's messages) it needed.
AHEAD_DELAY_S = 0.15

SPEEDS = (("0.25×", 0.25), ("0.5×", 0.5), ("1×", 1.0), ("2×", 2.0), ("4×", 4.0), ("8×", 8.0))


def frame_event(frame: Any) -> Any:
    """The event a frame carries (the frame itself when it has none)."""
    return getattr(frame, "event", frame)


def frame_kind(frame: Any) -> str | None:
    return getattr(frame_event(frame), "kind", None)


def events_between(timeline: TimelineLike, shown: int | None, i: int) -> list[Any]:
    """The events a view gets when frame ``i`` follows frame ``shown``: those of frames (shown, i],
    or only frame i's when going back, jumping to the same frame or starting."""
    if shown is None or i <= shown:
        return [frame_event(timeline[i])]
    return [frame_event(timeline[j]) for j in range(shown + 1, i + 1)]


def render(view: View, timeline: TimelineLike, i: int, since: int | None = None) -> go.Figure:
    """Frame ``i`` of ``timeline`` drawn by ``view`` as a static figure (``since``: the frame shown before)."""
    _check_timeline(timeline)
    i = _index(timeline, i)
    return view(timeline[i].snapshot, events_between(timeline, since, i))


_SKIP = frozenset({"type", "uid"})


def _changed(old: dict[str, Any], new: dict[str, Any], skip: frozenset[str] = _SKIP) -> dict[str, Any]:
    """The top-level properties of ``new`` that differ from ``old``, and None for those ``new`` no longer has."""
    out = {k: v for k, v in new.items() if k not in skip and (k not in old or old[k] != v)}
    out.update({k: None for k in old if k not in new and k not in skip})
    return out


def spare_trace(trace_type: str) -> dict[str, Any]:
    """A trace slot the frame does not use: hidden, empty, kept for a later frame that draws this type there."""
    return {"type": trace_type, "visible": False}


def sync_figure(widget: go.FigureWidget, fig: go.Figure, height: int | None = None) -> None:
    """Make a displayed FigureWidget show ``fig`` by sending only what differs: the changed properties of each
    trace and of the layout, removed ones included (a stale annotation, axis setting or template is cleared), in
    one ``batch_update``, so plotly.js redraws once. Traces keep their slots: one of the same type is updated in
    place, one the frame no longer draws becomes a `spare_trace` (deleting it would cost the browser a redraw of
    its own, and the next frame that draws it again another); from the first change of type on, traces are
    replaced. Afterwards the widget holds ``fig``'s data, then its spares, and ``fig``'s layout (drawn ``height``
    px high instead of its own, if given: the presenter's fit, `pulsarlab_widgets.fit.FigureFit`).

    It reads plotly's private ``_data``, ``_props`` and ``_layout`` and wraps ``_send_update_msg`` because plotly
    (7.1) has no public way to do either. The public reads, ``to_plotly_json()`` of each trace and of the layout,
    deep-copy every property of both figures on every step: measured on lab 06's players (40 steps, three rounds,
    load ~50), the dispatch timeline's sync went from a median of 54-116 ms to 63-331 ms and the cursor view's, whose
    figure rarely changes, from 0.13-0.19 ms to 5.5-9.8 ms. And a relayout that sets the height must carry a null
    width (plotly.js pins the width it has otherwise), but `plotly_update`, `plotly_relayout` and ``update`` all
    drop a null for a property the Python side never set, so no public call sends one."""
    new_data = fig._data  # plotly's validated property dicts: compared as plain JSON values, no re-validation
    shared = min(len(widget.data), len(new_data))
    keep = 0
    while keep < shared and widget._data[keep].get("type") == new_data[keep].get("type"):
        keep += 1
    if keep < shared:
        widget.data = widget.data[:keep]
    specs = list(new_data[: len(widget.data)]) + [spare_trace(t.type) for t in widget.data[len(new_data) :]]
    edits = [(t, _changed(t._props, spec)) for t, spec in zip(widget.data, specs)]
    layout = fig._layout if height is None else {**fig._layout, "height": height}
    layout_edits = _changed(widget._layout, layout, skip=frozenset())
    if any(e for _t, e in edits) or layout_edits:
        free_width = "height" in layout_edits and "width" not in fig._layout
        if free_width:
            # plotly.js fixes the width it has when a relayout sets the height; a null width in the same message
            # keeps it following the cell (plotly's Python side sends no null for a width it never had)
            send = widget._send_update_msg

            def send_with_free_width(restyle_data: dict, relayout_data: dict, **kwargs: Any) -> None:
                send(restyle_data=restyle_data, relayout_data={**relayout_data, "width": None}, **kwargs)

            widget._send_update_msg = send_with_free_width
        try:
            with widget.batch_update():
                for trace, edit in edits:
                    for key, value in edit.items():
                        trace[key] = value
                for key, value in layout_edits.items():
                    widget.layout[key] = value
        finally:
            if free_width:
                del widget._send_update_msg
    if len(widget.data) < len(new_data):
        widget.add_traces(list(fig.data[len(widget.data) :]))


def _check_timeline(timeline: Any) -> None:
    if not hasattr(timeline, "__len__") or not hasattr(timeline, "__getitem__"):
        raise TypeError(f"a timeline needs len() and [i]; got {type(timeline).__name__}")
    if len(timeline) == 0:
        raise ValueError("the timeline has no frames yet: run the scenario (add consumers, select keys) first")


def _index(timeline: TimelineLike, i: Any) -> int:
    if isinstance(i, bool) or not isinstance(i, int):
        raise TypeError(f"a frame index must be an int, not {type(i).__name__} ({i!r})")
    n = len(timeline)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"frame {i} is outside the timeline (0..{n - 1})")
    return i


class Player(widgets.VBox):
    """Controls plus one live figure per view, all showing the same frame of ``timeline``.

    ``Player(scenario.timeline, [hash_range_view])``; ``step()``, ``back()``, ``jump(i)``,
    ``jump_to_kind("range_split")`` do from Python what the buttons do, ``press(key)`` what the keyboard does
    (→ / ← step, space play/pause, Home / End). While a frame is shown, the frames before and after it are drawn
    in a background thread (``prefetch=False``: only on demand), so a step sends the changes at once.
    `pulsarlab_widgets.classroom.animation.player_html` draws it for a page without a kernel.
    """

    def __init__(
        self,
        timeline: TimelineLike,
        views: View | Sequence[View],
        start: int = 0,
        interval_ms: int = 800,
        title: str | None = None,
        prefetch: bool = True,
    ) -> None:
        _check_timeline(timeline)
        views = [views] if callable(views) else list(views)
        if not views or not all(callable(v) for v in views):
            raise TypeError("views must be a view function or a list of them: view(snapshot, events) -> go.Figure")
        self.timeline = timeline
        self.views = views
        self.title = title
        self.base_interval = int(interval_ms)
        start = _index(timeline, start)
        self._shown = start
        self.prefetch = prefetch
        self._ahead: dict[tuple[int, int | None], Future] = {}
        self._drawing: set[tuple[int, int | None]] = set()
        # guards _ahead and _drawing: the worker claims a frame (in _ahead, not taken) in one step, and a step
        # takes or cancels it in one step, so neither acts on what the other has half done
        self._claim = threading.Lock()
        self._moved = threading.Event()
        last = len(timeline) - 1

        self._drawn = [render(v, timeline, start) for v in views]
        self.figures = [responsive(fig) for fig in self._drawn]
        for widget in self.figures:
            widget.shown_frame = start
        self.fit = FigureFit()
        self.fit.show(self._drawn)
        self.fit.observe(lambda _change: self._sync_figures(), names="heights")
        self.play = widgets.Play(
            value=start, min=0, max=last, step=1, interval=self.base_interval, description="play", show_repeat=False
        )
        self.slider = widgets.IntSlider(
            value=start,
            min=0,
            max=last,
            description="frame",
            continuous_update=False,
            layout=widgets.Layout(width="360px"),
        )
        widgets.link((self.play, "value"), (self.slider, "value"))
        self.back_button = widgets.Button(
            description="◀ back", tooltip="previous frame", layout=widgets.Layout(width="80px")
        )
        self.step_button = widgets.Button(
            description="step ▶", tooltip="next frame", layout=widgets.Layout(width="80px")
        )
        self.speed = widgets.Dropdown(
            options=SPEEDS, value=1.0, description="speed", layout=widgets.Layout(width="150px")
        )
        kinds = self.kinds()
        self.kind = widgets.Dropdown(
            options=kinds,
            value=kinds[0] if kinds else None,
            description="jump to",
            layout=widgets.Layout(width="300px"),
        )
        self.prev_kind_button = widgets.Button(
            description="◀", tooltip="previous frame of this kind", layout=widgets.Layout(width="40px")
        )
        self.next_kind_button = widgets.Button(
            description="▶", tooltip="next frame of this kind", layout=widgets.Layout(width="40px")
        )
        self.label = widgets.HTML()
        self.slider.observe(self._on_index, names="value")
        self.speed.observe(self._on_speed, names="value")
        self.back_button.on_click(lambda _b: self.back())
        self.step_button.on_click(lambda _b: self.step())
        self.prev_kind_button.on_click(lambda _b: self._jump_kind_clicked(-1))
        self.next_kind_button.on_click(lambda _b: self._jump_kind_clicked(+1))
        self._update_label()
        self.keyboard = PlayerKeys(self.press)

        rows: list[widgets.Widget] = []
        if title:
            rows.append(widgets.HTML(f"<b>{html.escape(title)}</b>"))
        rows.append(widgets.HBox([self.back_button, self.play, self.step_button, self.slider, self.speed]))
        if kinds:
            rows.append(widgets.HBox([self.kind, self.prev_kind_button, self.next_kind_button]))
        rows.append(self.label)
        rows.extend(self.figures)
        rows.append(self.keyboard)
        rows.append(self.fit)
        super().__init__(rows)
        self.add_class("pulsarlab-player")
        self.add_class(FIT_CLASS)
        self._draw_ahead()

    # -- navigation ---------------------------------------------------------------------------
    @property
    def index(self) -> int:
        """The frame shown now."""
        return self._shown

    @property
    def explanation(self) -> str:
        return self.timeline[self._shown].explanation

    def jump(self, i: int) -> None:
        """Show frame ``i`` (negative counts from the end)."""
        self.slider.value = _index(self.timeline, i)

    def step(self) -> None:
        if self._shown < len(self.timeline) - 1:
            self.jump(self._shown + 1)

    def back(self) -> None:
        if self._shown > 0:
            self.jump(self._shown - 1)

    def press(self, key: str) -> None:
        """What a key does: ``ArrowRight`` / ``ArrowLeft`` step, ``" "`` plays or pauses (from the first frame
        when at the last), ``Home`` / ``End`` jump to the first / last frame."""
        if key == "ArrowRight":
            self.step()
        elif key == "ArrowLeft":
            self.back()
        elif key == " ":
            if self.play.playing:
                self.play.playing = False
            else:
                if self._shown >= len(self.timeline) - 1:
                    self.jump(0)
                self.play.playing = True
        elif key == "Home":
            self.jump(0)
        elif key == "End":
            self.jump(self.slider.max)
        else:
            raise ValueError(f"the player knows the keys ArrowRight, ArrowLeft, ' ', Home and End; got {key!r}")

    def kinds(self) -> list[str]:
        """Event kinds in the timeline, in order of first appearance."""
        seen: dict[str, None] = {}
        for j in range(len(self.timeline)):
            kind = frame_kind(self.timeline[j])
            if kind is not None:
                seen.setdefault(kind, None)
        return list(seen)

    def find_kind(self, kind: str, direction: int = 1) -> int | None:
        """The nearest frame after (direction +1) or before (-1) the current one whose event is ``kind``."""
        step = 1 if direction >= 0 else -1
        j = self._shown + step
        while 0 <= j < len(self.timeline):
            if frame_kind(self.timeline[j]) == kind:
                return j
            j += step
        return None

    def jump_to_kind(self, kind: str, direction: int = 1) -> int | None:
        """Show the next (or previous) frame of ``kind``; returns its index, or None if there is none."""
        kinds = self.kinds()
        if kind not in kinds:
            raise ValueError(f"no event of kind {kind!r} in this timeline; kinds: {', '.join(kinds)}")
        j = self.find_kind(kind, direction)
        if j is not None:
            self.jump(j)
        return j

    def refresh(self) -> None:
        """Pick up frames appended to the timeline since the player was built."""
        last = len(self.timeline) - 1
        self.slider.max = last
        self.play.max = last
        self.kind.options = self.kinds()
        self._update_label()

    # -- callbacks ----------------------------------------------------------------------------
    def _draw(self, i: int, shown: int | None) -> list[go.Figure]:
        """Every view's figure of frame ``i`` reached from frame ``shown``."""
        events = events_between(self.timeline, shown, i)
        snapshot = self.timeline[i].snapshot
        return [view(snapshot, events) for view in self.views]

    @staticmethod
    def _key(i: int, shown: int | None) -> tuple[int, int | None]:
        # the events a view gets depend on the frame shown before only when stepping forward
        return (i, shown if shown is not None and i > shown else None)

    def _figures(self, i: int, shown: int | None) -> list[go.Figure]:
        key = self._key(i, shown)
        with self._claim:
            ahead = self._ahead.pop(key, None)
            taken = ahead is not None and (ahead.done() or key in self._drawing)
        # a frame drawn ahead, or being drawn: take it; one still waiting for its turn gives up (it is no longer
        # in _ahead) and is drawn here, now
        if taken:
            try:
                figures = ahead.result()
            except Exception:  # drawn again below, so the error surfaces here, in the step that shows it
                figures = None
            if figures is not None:
                return figures
        elif ahead is not None:
            ahead.cancel()
        return self._draw(i, shown)

    def _draw_later(
        self, key: tuple[int, int | None], not_before: float, moved: threading.Event
    ) -> list[go.Figure] | None:
        """Frame ``key`` drawn ahead from ``not_before`` (monotonic seconds) on, or as soon as the player moves
        (``moved``) if it still wants the frame then; None if it no longer does."""
        moved.wait(max(0.0, not_before - time.monotonic()))
        with self._claim:
            if key not in self._ahead:
                return None
            self._drawing.add(key)
        try:
            return self._draw(*key)
        finally:
            with self._claim:
                self._drawing.discard(key)

    def _draw_ahead(self) -> None:
        """Draw the next and the previous frame in the background (views are pure functions of a snapshot and
        events), `AHEAD_DELAY_S` after the step, so a later step or back only sends what changed."""
        if not self.prefetch:
            return
        i, wanted = self._shown, {}
        moved, self._moved = self._moved, threading.Event()
        not_before = time.monotonic() + AHEAD_DELAY_S
        with self._claim:  # the worker looks a frame up in _ahead: it finds the new one, not the one left
            for j in (i + 1, i - 1):
                if 0 <= j < len(self.timeline):
                    key = self._key(j, i)
                    wanted[key] = self._ahead.get(key) or _AHEAD.submit(self._draw_later, key, not_before, self._moved)
            for key, future in self._ahead.items():
                if key not in wanted:
                    future.cancel()
            self._ahead = wanted
        moved.set()  # what still waits to be drawn for the frame shown before: wake up and give up

    def _on_index(self, change: dict) -> None:
        i = change["new"]
        figures = self._figures(i, self._shown)
        self._shown = i
        self._update_label()
        self._drawn = figures
        self.fit.show(figures)
        self._sync_figures()
        self._draw_ahead()

    def _sync_figures(self) -> None:
        """Show the frame's figures at the heights the page fits them to, each then marked with the frame shown."""
        for k, (widget, fig) in enumerate(zip(self.figures, self._drawn)):
            sync_figure(widget, fig, self.fit.fit_height(k, fig))
            widget.shown_frame = self._shown

    def _on_speed(self, change: dict) -> None:
        self.play.interval = max(20, int(self.base_interval / change["new"]))

    def _jump_kind_clicked(self, direction: int) -> None:
        if self.kind.value is None:
            return
        if self.jump_to_kind(self.kind.value, direction) is None:
            where = "after" if direction > 0 else "before"
            self.label.value = self._label_html() + f"<br><i>no {html.escape(self.kind.value)} {where} this frame</i>"

    def _label_html(self, i: int | None = None) -> str:
        """The label over the figures for frame ``i`` (the frame shown when None)."""
        i = self._shown if i is None else i
        frame = self.timeline[i]
        event = frame_event(frame)
        when = f" · t = {event.time} ms" if hasattr(event, "time") else ""
        kind = frame_kind(frame)
        kind_text = f" · <code>{html.escape(kind)}</code>" if kind else ""
        return f"<b>frame {i} of 0–{self.slider.max}</b>{when}{kind_text}<br>{html.escape(frame.explanation)}"

    def _update_label(self) -> None:
        self.label.value = self._label_html()


__all__ = ["FrameLike", "Player", "TimelineLike", "View", "events_between", "render", "spare_trace", "sync_figure"]
