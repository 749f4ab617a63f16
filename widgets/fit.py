"""Figures that fill their cell: plotly FigureWidgets resized to the width of the player or live view around them,
and in presenter mode to the height of the screen.

Models no Pulsar class. A FigureWidget draws itself when its view is created, often before JupyterLab or Voilà has
attached it to the page, and then keeps plotly's fallback width of 700 px: half a wide cell, a third of a projector.
`responsive` marks a FigureWidget so plotly.js resizes it with the window; `FigureFit`, a zero-size anywidget placed
inside a container with the class ``pulsarlab-fit``, watches its figures and fires a window resize when one is drawn
at another width than its box (drawn while detached, or the cell changed width), so each responsive figure takes the
container's width; it asks once per figure and width, so it cannot loop.

In presenter mode (`pulsarlab present`) the page also fits the container into the window: knowing the heights the
views drew (``natural``, sent by Python) and what the controls and text above the figures take, it asks for the
heights the figures are drawn at (``heights``; empty: their own) and, on a landscape screen where stacked figures
would shrink a lot, puts them side by side. The owner (`Player`, `LiveViews`) draws each frame at those heights
(`fit_height`). `present_figures` gives the kernel's figures projector-sized text. In JupyterLab nothing changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import anywidget
import ipywidgets as widgets
import plotly.graph_objects as go
import plotly.io as pio
import traitlets

from pulsarlab_widgets.plotly_module import SharedFigureWidget

FIT_CLASS = "pulsarlab-fit"
# presenter mode: the smallest text a figure draws (ticks, axis titles, legend), against the page's 22 px body text
PRESENT_FONT_PX = 18
# titles: a step over the rest, but not plotly's 1.4 times (25 px), which overflows the views' top margins
PRESENT_TITLE_PX = 22
PRESENT_TEMPLATE = "pulsarlab_present"


def responsive(fig: go.Figure) -> go.FigureWidget:
    """A FigureWidget of ``fig`` whose width follows its container (plotly's ``responsive`` config)."""
    widget = SharedFigureWidget(fig)
    widget._config = {**widget._config, "responsive": True}
    return widget


class FigureFit(anywidget.AnyWidget):
    """Resizes the responsive plotly figures of the enclosing ``pulsarlab-fit`` container to its width (and, in
    presenter mode, asks for the heights that fit the window)."""

    _esm = Path(__file__).with_name("static") / "figure_fit.js"
    # the heights the views drew the frame shown at (None: the figure has none, plotly's default)
    natural = traitlets.List(traitlets.Int(allow_none=True)).tag(sync=True)
    # the heights the page asks the figures to be drawn at (presenter mode); empty: the views' own
    heights = traitlets.List(traitlets.Int()).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(layout=widgets.Layout(width="0px", height="0px", overflow="hidden"), **kwargs)

    def show(self, figures: Sequence[go.Figure]) -> None:
        """Tell the page the heights of the frame about to be drawn."""
        natural = [fig.layout.height for fig in figures]
        if natural != self.natural:
            self.natural = natural

    def fit_height(self, k: int, fig: go.Figure) -> int | None:
        """The height figure ``k`` is drawn at: what the page asked for, else None (its own)."""
        if k >= len(self.heights) or fig.layout.height is None:
            return None
        return min(int(fig.layout.height), self.heights[k])


def present_figures() -> None:
    """Projector-sized text for every figure made from now on: plotly's default template with a layout font of
    `PRESENT_FONT_PX` (ticks, axis titles and legends take it; titles `PRESENT_TITLE_PX`). For presenter kernels only.
    Merged once into one named template: a ``"plotly+..."`` default would be merged again for every figure."""
    base = pio.templates.default
    if base == PRESENT_TEMPLATE:
        return
    template = go.layout.Template(pio.templates[base]) if base else go.layout.Template()
    template.layout.font.size = PRESENT_FONT_PX
    template.layout.title.font.size = PRESENT_TITLE_PX
    pio.templates[PRESENT_TEMPLATE] = template
    pio.templates.default = PRESENT_TEMPLATE


__all__ = ["FIT_CLASS", "PRESENT_FONT_PX", "FigureFit", "present_figures", "responsive"]
