"""One copy of plotly's widget code per page, loaded from a file the server serves, however many figures a lab draws.

Models no Pulsar class. plotly's `go.FigureWidget` is an anywidget whose ``_esm`` is plotly's whole widget bundle
(about 5 MB: plotly.js and its glue). anywidget gives each model 2 s from its creation to import that module and run
its ``initialize``, then drops every later message to the model ("[anywidget] Failed to initialize model."); on a
slow or busy machine the 5 MB module takes longer and the figure keeps plotly's empty axes while a player steps on.
A `SharedFigureWidget` sends a few kilobytes instead (``static/plotly_figure.js``): its ``initialize`` returns at once
and plotly's module loads in the background, once per page and bundle version (keyed by its SHA-256 prefix), from
the Jupyter server or `pulsarlab present`'s Voilà (`pulsarlab_widgets.plotly_server`, which names the file's
content-hashed URL in the page's ``#jupyter-config-data``), else from the kernel, which answers a custom message with
the bundle (a front end without the server piece). Updates that arrive while plotly loads are replayed in order, every
view draws from the figure's full current state, and a figure that cannot load or draw says so in its place.
The views send plotly.js's computed defaults back to Python after no update: Python keeps what it set, and reading a
property it never set (an autorange, say) gives None instead of the browser's value.
"""

from __future__ import annotations

import functools
import hashlib
import json
from copy import deepcopy
from pathlib import Path
from typing import Any

import plotly
import plotly.graph_objects as go
import traitlets

FIGURE_JS = Path(__file__).with_name("static") / "plotly_figure.js"
# the front end's custom messages: the kernel fallback (the front end asks, the figure answers with the bundle as a
# buffer) and a request for the figure's full state
REQUEST = "pulsarlab-plotly-request"
REPLY = "pulsarlab-plotly-bundle"
RESYNC = "pulsarlab-plotly-resync"


def bundle_path() -> Path:
    """The file plotly's FigureWidget takes its front end from (plotly ships it as package data)."""
    return Path(plotly.__file__).with_name("package_data") / "widgetbundle.js"


@functools.cache
def bundle_bytes() -> bytes:
    """plotly's widget bundle, read once per process."""
    return bundle_path().read_bytes()


@functools.cache
def bundle_sha() -> str:
    """The first 20 hex digits of the bundle's SHA-256: its name in URLs and in the page's cache of modules."""
    return hashlib.sha256(bundle_bytes()).hexdigest()[:20]


@functools.cache
def module_esm() -> str:
    """The front-end module every `SharedFigureWidget` sends: the loader with this bundle's hash and messages."""
    bundle = {"sha": bundle_sha(), "request": REQUEST, "reply": REPLY, "resync": RESYNC}
    return f"const BUNDLE = {json.dumps(bundle)};\n" + FIGURE_JS.read_text(encoding="utf-8")


def answer_front_end(widget: Any, content: Any, buffers: list) -> None:
    """Answer a figure's front end: its full state when it asks for a resync (sent only where the front end's copy,
    the ``_widget_*`` traits, is older than the figure), plotly's widget bundle when it asks for that (a front end
    without the server piece)."""
    if not isinstance(content, dict):
        return
    if content.get("type") == RESYNC:
        widget._widget_layout = deepcopy(widget._layout_obj._props)
        widget._widget_data = deepcopy(widget._data)
        return
    if content.get("type") != REQUEST:
        return
    try:
        data = bundle_bytes()
    except OSError as e:
        widget.send({"type": REPLY, "sha": content.get("sha"), "error": f"plotly's widget bundle is unreadable: {e}"})
        return
    if content.get("sha") != bundle_sha():
        widget.send({"type": REPLY, "sha": content.get("sha"), "error": "the kernel has another plotly version"})
        return
    widget.send({"type": REPLY, "sha": bundle_sha()}, buffers=[data])


class SharedFigureWidget(go.FigureWidget):
    """A plotly FigureWidget that shares the page's one copy of plotly's widget module, loaded in the background.

    ``shown_frame``: the frame of its owner's timeline the figure shows (a `Player` sets it after sending each frame's
    changes, on the same comm, so the front end sees it change after plotly.js applied them; None outside a player).
    The figure's element carries it as ``data-frame`` once drawn: what a page or a test waits on."""

    shown_frame = traitlets.Int(None, allow_none=True).tag(sync=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._esm = module_esm()
        super().__init__(*args, **kwargs)
        self.on_msg(answer_front_end)


__all__ = [
    "REPLY",
    "REQUEST",
    "SharedFigureWidget",
    "RESYNC",
    "answer_front_end",
    "bundle_bytes",
    "bundle_path",
    "bundle_sha",
    "module_esm",
]
