"""Both branches of a fork side by side: the recorded timeline and the branch, stepped together, opened at the
first frame where they differ, which the label marks.

Models no Pulsar class. Takes a `pulsarlab.scenarios.fork.ForkResult` and the views to draw; each side is a
`Player`, and moving either moves the other to the same frame (the shorter branch stops at its last frame).
"""

from __future__ import annotations

import html
from typing import Any, Sequence

import ipywidgets as widgets

from pulsarlab_widgets.player import Player, View


class ForkView(widgets.VBox):
    """``ForkView(fork(rec, n, Change("consumer_leaves")), [cursor_view])``: base on the left, branch on the right."""

    def __init__(self, result: Any, views: View | Sequence[View]) -> None:
        self.result = result
        start = result.first_divergence if result.first_divergence is not None else result.change_frame
        self.base = Player(result.base, views, start=min(start, len(result.base) - 1), title="as recorded")
        self.branch = Player(result.branch, views, start=min(start, len(result.branch) - 1), title="the branch")
        self._syncing = False
        self.base.slider.observe(lambda ch: self._follow(self.branch, ch["new"]), names="value")
        self.branch.slider.observe(lambda ch: self._follow(self.base, ch["new"]), names="value")
        self.to_divergence = widgets.Button(description="go to the divergence", layout=widgets.Layout(width="200px"))
        self.to_divergence.on_click(lambda _b: self.jump(start))
        self.label = widgets.HTML()
        self._update_label()
        super().__init__([self.label, self.to_divergence, widgets.HBox([self.base, self.branch])])
        self.add_class("pulsarlab-fork")

    def jump(self, i: int) -> None:
        """Show frame ``i`` on both sides (each clamped to its own last frame)."""
        self.base.jump(min(i, len(self.result.base) - 1))

    def _follow(self, other: Player, i: int) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            other.jump(min(i, len(other.timeline) - 1))
        finally:
            self._syncing = False
        self._update_label()

    def _update_label(self) -> None:
        r = self.result
        summary = html.escape(r.summary())
        shown = self.base.index
        mark = ""
        if r.first_divergence is not None and shown >= r.first_divergence:
            mark = " · <b style='color:#c0392b'>the branches differ here</b>" if shown == r.first_divergence else ""
        elif shown < r.change_frame:
            mark = " · identical (before the change)"
        self.label.value = f"{summary}{mark}"


__all__ = ["ForkView"]
