"""One copy of plotly's widget code per page, however many FigureWidgets a lab draws.

Models no Pulsar class. plotly's `go.FigureWidget` is an anywidget whose ``_esm`` is plotly's whole widget bundle
(about 5 MB: plotly.js and its glue). anywidget imports a module given as text from a new blob URL per widget, so a
page with twelve figures evaluates plotly.js twelve times and each figure redraws with its own copy: a copy that has
drawn a few frames is still running cold code, so each step of a player costs two to three times what one warmed
copy takes. `SharedFigureWidget` sends a few lines instead that import the bundle once per page and bundle version
(keyed by its SHA-256 under ``globalThis``) and hand every figure the same module. The bundle text still travels in
each widget's state (the page may have been reloaded, so no figure can count on another having sent it), but it is
parsed as one string literal, not run. In presenter mode the bundle is a static file the page preloads
(`pulsarlab_widgets.present`), and the lines import that file instead. Either way the shared module's figure views
do not send plotly.js's computed defaults back to Python after each update (`QUIET_VIEWS_JS`): Python keeps what it
set, and reading a property it never set (an autorange, say) gives None instead of the browser's value.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import plotly
import plotly.graph_objects as go

# set by `pulsarlab present` for its kernels: the page-relative path the presenter serves the bundle at
SERVED_ENV = "PULSARLAB_PLOTLY_MODULE"
# the presenter template starts importing the served bundle into this global before the widgets load
SERVED_GLOBAL = "globalThis.pulsarlabPlotlyWidget"


def bundle_path() -> Path:
    """The file plotly's FigureWidget takes its front end from (plotly ships it as package data)."""
    return Path(plotly.__file__).with_name("package_data") / "widgetbundle.js"


# After each update plotly's figure view works out every trace's and the layout's full defaults and sends them to
# Python (``_sendTraceDeltas``, ``_sendLayoutDelta``), where they answer reads of properties nobody set. The lab reads
# only what it set, and those messages, their echoes and the kernel's busy/idle for each cost the page and the
# kernel CPU in every step; the shared module's views send none.
QUIET_VIEWS_JS = (
    "const view = plotlyWidget.FigureView && plotlyWidget.FigureView.prototype;\n"
    "if (view && !view.pulsarlabQuiet) {\n"
    "  view._sendTraceDeltas = view._sendLayoutDelta = function () {};\n"
    "  view.pulsarlabQuiet = true;\n"
    "}\n"
    "export default plotlyWidget.default;\n"
)


def served_module_esm(path: str) -> str:
    """An ES module standing for plotly's widget module served at ``path`` (relative to the page's base URL)."""
    return (
        f"{SERVED_GLOBAL} ??= import(new URL({json.dumps(path)}, document.baseURI).href);\n"
        f"const plotlyWidget = await {SERVED_GLOBAL};\n" + QUIET_VIEWS_JS
    )


@functools.cache
def inline_module_esm() -> str:
    """An ES module carrying plotly's widget bundle as text that imports it only if no figure of the page has."""
    text = bundle_path().read_text(encoding="utf-8")
    key = json.dumps("pulsarlabPlotly-" + hashlib.sha256(text.encode()).hexdigest()[:20])
    return (
        f"globalThis[{key}] ??= import(URL.createObjectURL(new Blob([{json.dumps(text)}], "
        '{type: "text/javascript"})));\n'
        f"const plotlyWidget = await globalThis[{key}];\n" + QUIET_VIEWS_JS
    )


def module_esm() -> str:
    """The front-end module a `SharedFigureWidget` sends: the presenter's served bundle, or the inline one."""
    served = os.environ.get(SERVED_ENV)
    return served_module_esm(served) if served else inline_module_esm()


class SharedFigureWidget(go.FigureWidget):
    """A plotly FigureWidget that shares the page's one copy of plotly's widget module."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._esm = module_esm()
        super().__init__(*args, **kwargs)


__all__ = ["SERVED_ENV", "SharedFigureWidget", "bundle_path", "inline_module_esm", "module_esm", "served_module_esm"]
