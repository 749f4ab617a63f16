"""Presenter mode inside the lab's kernel: every plotly FigureWidget loads one shared copy of plotly's widget code.

Models no Pulsar class. plotly's `go.FigureWidget` is an anywidget whose ``_esm`` is plotly's whole widget bundle
(about 5 MB: plotly.js and its glue). anywidget sends that text in every figure's state and the page imports it as
a separate module per figure, so a page with four to six figures parses plotly.js four to six times at once;
anywidget gives a model 2 s to load its module and afterwards drops every message to a model that missed it
("[anywidget] Failed to initialize model."): the figure keeps its first picture while the player steps on.
`pulsarlab present` serves the bundle once as a static file (`pulsarlab_widgets.present`), preloads it in the
page (the presenter template) and starts kernels with this file as ``PYTHONSTARTUP``: each figure's ``_esm``
becomes a few lines that reuse the page's one copy of that module. A static ``fig.show()`` is drawn the same way
(a FigureWidget): plotly's own mime renderer in a Voilà page draws, then fails storing a PNG of the figure back
into the output ("setData is not a function"). Outside presenter mode nothing changes.
"""

from __future__ import annotations

import json
import os

MODULE_ENV = "PULSARLAB_PLOTLY_MODULE"
# set by the presenter template before the widgets load: the promise of the shared module
PRELOAD = "globalThis.pulsarlabPlotlyWidget"


def shared_module_esm(path: str) -> str:
    """An ES module standing for plotly's widget module served at ``path`` (relative to the page's base URL)."""
    url = json.dumps(path)
    return (
        f"{PRELOAD} ??= import(new URL({url}, document.baseURI).href);\n"
        f"const shared = await {PRELOAD};\n"
        "export default shared.default;\n"
    )


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
            bundle = go.FigureWidget(fig_dict)._repr_mimebundle_()
            return bundle[0] if isinstance(bundle, tuple) else bundle

    go.FigureWidget._esm = shared_module_esm(path)
    pio.renderers[RENDERER] = FigureWidgetRenderer()
    pio.renderers.default = RENDERER


if os.environ.get(MODULE_ENV):
    share_plotly_module(os.environ[MODULE_ENV])
