"""Figures that fill their cell: plotly FigureWidgets resized to the width of the player or live view around them.

Models no Pulsar class. A FigureWidget draws itself when its view is created, often before JupyterLab or Voilà has
attached it to the page, and then keeps plotly's fallback width of 700 px: half a wide cell, a third of a projector.
`responsive` marks a FigureWidget so plotly.js resizes it with the window; `FigureFit`, a zero-size anywidget placed
inside a container with the class ``pulsarlab-fit``, watches its figures and fires a window resize when one is drawn
at another width than its box (drawn while detached, or the cell changed width), so each responsive figure takes the
container's width (its height stays what the view set); it asks once per figure and width, so it cannot loop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as widgets
import plotly.graph_objects as go

from pulsarlab_widgets.plotly_module import SharedFigureWidget

FIT_CLASS = "pulsarlab-fit"


def responsive(fig: go.Figure) -> go.FigureWidget:
    """A FigureWidget of ``fig`` whose width follows its container (plotly's ``responsive`` config)."""
    widget = SharedFigureWidget(fig)
    widget._config = {**widget._config, "responsive": True}
    return widget


class FigureFit(anywidget.AnyWidget):
    """Resizes the responsive plotly figures of the enclosing ``pulsarlab-fit`` container to its width."""

    _esm = Path(__file__).with_name("static") / "figure_fit.js"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(layout=widgets.Layout(width="0px", height="0px", overflow="hidden"), **kwargs)


__all__ = ["FIT_CLASS", "FigureFit", "responsive"]
