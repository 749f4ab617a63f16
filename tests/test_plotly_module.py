"""The lab's FigureWidgets share one copy of plotly's widget module per page (pulsarlab_widgets.plotly_module);
the browser side is checked by tests/test_browser.py (one plotly.js copy per subplot type in every lab)."""

from __future__ import annotations

import hashlib
import json

import plotly.graph_objects as go

from pulsarlab_widgets.fit import responsive
from pulsarlab_widgets.plotly_module import (
    QUIET_VIEWS_JS,
    SERVED_ENV,
    SharedFigureWidget,
    bundle_path,
    inline_module_esm,
    module_esm,
    served_module_esm,
)


def _string_literals(esm: str) -> list[str]:
    """The JSON string literals of the module's first line, decoded."""
    decoder, out, i = json.JSONDecoder(), [], 0
    line = esm.split("\n", 1)[0]
    while (i := line.find('"', i)) != -1:
        value, i = decoder.raw_decode(line, i)
        out.append(value)
    return out


def test_the_inline_module_carries_plotlys_bundle_once_under_a_key_of_its_hash(monkeypatch):
    monkeypatch.delenv(SERVED_ENV, raising=False)
    bundle = bundle_path().read_text(encoding="utf-8")
    esm = inline_module_esm()
    key, text, mime = _string_literals(esm)
    assert text == bundle
    assert key == "pulsarlabPlotly-" + hashlib.sha256(bundle.encode()).hexdigest()[:20]
    assert mime == "text/javascript"
    # imported only when no figure of the page has, and every figure exports what that one import gave
    assert esm.startswith(f"globalThis[{json.dumps(key)}] ??= import(")
    assert f"const plotlyWidget = await globalThis[{json.dumps(key)}];" in esm
    assert esm.rstrip().endswith(QUIET_VIEWS_JS.rstrip())
    assert esm.count("import(") == 1 + bundle.count("import(")


def test_player_figures_send_the_shared_module_not_plotlys_bundle(monkeypatch):
    monkeypatch.delenv(SERVED_ENV, raising=False)
    widget = responsive(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])))
    assert isinstance(widget, SharedFigureWidget)
    assert widget._esm == inline_module_esm()
    assert widget.get_state()["_esm"] == inline_module_esm()
    assert go.FigureWidget(go.Figure())._esm != inline_module_esm()  # plotly's own class is left alone


def test_in_presenter_mode_figures_import_the_served_bundle(monkeypatch):
    monkeypatch.setenv(SERVED_ENV, "voila/templates/pulsarlab-present/static/plotly-widget.js")
    widget = SharedFigureWidget(go.Figure())
    assert widget._esm == module_esm() == served_module_esm("voila/templates/pulsarlab-present/static/plotly-widget.js")
    assert '"voila/templates/pulsarlab-present/static/plotly-widget.js"' in widget._esm
    assert len(widget._esm) < 1000


def test_the_shared_modules_views_send_no_defaults_back_to_python():
    """plotly's view has the two methods the shared module silences, under these names."""
    bundle = bundle_path().read_text(encoding="utf-8")
    assert "_sendTraceDeltas(" in bundle and "_sendLayoutDelta(" in bundle
    assert "FigureView" in bundle
    assert "view._sendTraceDeltas = view._sendLayoutDelta = function () {};" in QUIET_VIEWS_JS
    assert QUIET_VIEWS_JS in served_module_esm("x.js")
