"""Presenter mode inside the lab's kernel: every plotly FigureWidget loads the page's one served copy of plotly's widget code.

Models no Pulsar class. plotly's `go.FigureWidget` is an anywidget whose ``_esm`` is plotly's whole widget bundle
(about 5 MB); a page that imports it once per figure parses plotly.js four to six times at once, and anywidget gives
a model 2 s to load its module and afterwards drops every message to a model that missed it ("[anywidget] Failed
to initialize model."): the figure keeps its first picture while the player steps on. `pulsarlab present` serves
the bundle once as a static file (`pulsarlab_widgets.present`), preloads it in the page (the presenter template) and
starts kernels with this file as ``PYTHONSTARTUP``: each figure's ``_esm`` becomes a few lines that reuse the page's
copy (`pulsarlab_widgets.plotly_module`; the lab's own figures already do that through the environment variable,
this makes any other FigureWidget do it too). A static ``fig.show()`` is drawn the same way (a FigureWidget):
plotly's own mime renderer in a Voilà page draws, then fails storing a PNG of the figure back into the output
("setData is not a function"). Outside presenter mode nothing changes.
"""

from __future__ import annotations

import os

from pulsarlab_widgets.plotly_module import SERVED_ENV, SharedFigureWidget, served_module_esm

RENDERER = "pulsarlab_present"


def share_plotly_module(path: str) -> None:
    """Make every FigureWidget created from now on load plotly's widget module from ``path``, once per page, and
    draw ``fig.show()`` as such a FigureWidget (plotly's default renderer becomes ``pulsarlab_present``)."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    class FigureWidgetRenderer(MimetypeRenderer):
        """``fig.show()`` as a FigureWidget: drawn by the page's shared plotly module, no PNG written back."""

        def to_mimebundle(self, fig_dict: dict) -> dict:
            bundle = SharedFigureWidget(fig_dict)._repr_mimebundle_()
            return bundle[0] if isinstance(bundle, tuple) else bundle

    go.FigureWidget._esm = served_module_esm(path)
    pio.renderers[RENDERER] = FigureWidgetRenderer()
    pio.renderers.default = RENDERER


if os.environ.get(SERVED_ENV):
    share_plotly_module(os.environ[SERVED_ENV])
