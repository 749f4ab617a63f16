"""Presenter mode inside the lab's kernel: every plotly FigureWidget loads the page's one served copy of plotly's widget code.

Models no Pulsar class. The lab's own figures are `SharedFigureWidget`s, which load plotly's widget module once per
page from the file the server serves (`pulsarlab_widgets.plotly_module`); `pulsarlab present` starts its kernels
with this file as ``PYTHONSTARTUP`` (and ``PULSARLAB_PRESENT=1``) so that any other FigureWidget does the same,
instead of carrying plotly's 5 MB bundle in its state and missing anywidget's start-up timeout. A static
``fig.show()`` is drawn the same way (a FigureWidget): plotly's own mime renderer in a Voilà page draws, then fails
storing a PNG of the figure back into the output ("setData is not a function"). Figures get projector-sized text
(`pulsarlab_widgets.fit.present_figures`). Outside presenter mode nothing changes.
"""

from __future__ import annotations

import os

from pulsarlab_widgets.fit import present_figures
from pulsarlab_widgets.plotly_module import SharedFigureWidget, answer_front_end, module_esm

RENDERER = "pulsarlab_present"
# set by `pulsarlab present` for its kernels
PRESENT_ENV = "PULSARLAB_PRESENT"


def share_plotly_module() -> None:
    """Make every FigureWidget created from now on load plotly's widget module once per page, and draw
    ``fig.show()`` as such a FigureWidget (plotly's default renderer becomes ``pulsarlab_present``)."""
    import plotly.graph_objects as go
    import plotly.io as pio
    from plotly.io._base_renderers import MimetypeRenderer

    class FigureWidgetRenderer(MimetypeRenderer):
        """``fig.show()`` as a FigureWidget: drawn by the page's shared plotly module, no PNG written back."""

        def to_mimebundle(self, fig_dict: dict) -> dict:
            bundle = SharedFigureWidget(fig_dict)._repr_mimebundle_()
            return bundle[0] if isinstance(bundle, tuple) else bundle

    init = go.FigureWidget.__init__

    def shared_init(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        if not isinstance(self, SharedFigureWidget):
            self.on_msg(answer_front_end)

    go.FigureWidget._esm = module_esm()
    go.FigureWidget.__init__ = shared_init
    pio.renderers[RENDERER] = FigureWidgetRenderer()
    pio.renderers.default = RENDERER


if os.environ.get(PRESENT_ENV) == "1":
    share_plotly_module()
    present_figures()
