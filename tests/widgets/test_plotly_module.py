"""The lab's FigureWidgets load plotly's widget module once per page from a file the server serves
(pulsarlab_widgets.plotly_module, pulsarlab_widgets.plotly_server); the browser side is checked by tests/browser/test_browser.py
(every figure drawn, one plotly.js copy per subplot type, no anywidget start-up failure, in every lab, throttled too)."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import importlib
import json
import logging
import re
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.testing import bind_unused_port
from tornado.web import Application

from pulsarlab_widgets.fit import responsive
from pulsarlab_widgets.plotly_module import (
    REPLY,
    REQUEST,
    RESYNC,
    SharedFigureWidget,
    answer_front_end,
    bundle_bytes,
    bundle_path,
    bundle_sha,
    module_esm,
)
from pulsarlab_widgets.plotly_server import PAGE_CONFIG_KEY, bundle_route, handlers, page_config_entry

PAGE_LIMIT = 200_000  # issue 20: no figure sends more than 200 kB to draw its first frame


def _bundle_constants(esm: str) -> dict:
    first = esm.split("\n", 1)[0]
    assert first.startswith("const BUNDLE = ") and first.endswith(";")
    return json.loads(first[len("const BUNDLE = ") : -1])


def test_figures_send_a_small_loader_that_names_the_bundle_by_its_hash_not_the_bundle():
    widget = responsive(go.Figure(go.Scatter(x=[1, 2], y=[3, 4])))
    assert isinstance(widget, SharedFigureWidget)
    state = widget.get_state()
    assert state["_esm"] == module_esm()
    assert len(json.dumps(state["_esm"])) < 20_000 < PAGE_LIMIT
    constants = _bundle_constants(module_esm())
    assert constants["sha"] == hashlib.sha256(bundle_path().read_bytes()).hexdigest()[:20] == bundle_sha()
    assert {constants["request"], constants["reply"], constants["resync"]} == {REQUEST, REPLY, RESYNC}
    # no top-level import or await: the module resolves at once, plotly loads in the background
    body = module_esm().split("\n", 1)[1]
    assert not any(line.startswith(("import ", "await ")) for line in body.splitlines())
    assert go.FigureWidget(go.Figure())._esm != module_esm()  # plotly's own class is left alone


class _Sent:
    def __init__(self, widget):
        self.messages = []
        widget.send = lambda content, buffers=None: self.messages.append((content, buffers))


def test_the_kernel_sends_the_bundle_to_a_front_end_without_the_server_piece():
    widget = SharedFigureWidget(go.Figure())
    sent = _Sent(widget)
    answer_front_end(widget, {"type": REQUEST, "sha": bundle_sha()}, [])
    [(content, buffers)] = sent.messages
    assert content == {"type": REPLY, "sha": bundle_sha()}
    assert buffers == [bundle_bytes()]
    answer_front_end(widget, {"type": REQUEST, "sha": "0" * 20}, [])
    assert "another plotly version" in sent.messages[-1][0]["error"]
    answer_front_end(widget, {"type": "something else"}, [])
    answer_front_end(widget, "not a dict", [])
    assert len(sent.messages) == 2


def test_a_resync_sends_the_full_state_only_where_the_front_ends_copy_is_stale():
    widget = SharedFigureWidget(go.Figure(go.Bar(x=[1], y=[1]), layout={"title": {"text": "a"}}))
    changes = []
    widget.observe(lambda change: changes.append(change["name"]), names=["_widget_data", "_widget_layout"])
    answer_front_end(widget, {"type": RESYNC}, [])
    assert changes == []  # the front end's copy is the figure: nothing to send
    with widget.batch_update():
        widget.data[0].y = [5]
        widget.layout.title.text = "b"
    assert widget._widget_data[0]["y"] == [1]  # updates travel as deltas; the traits keep the displayed state
    answer_front_end(widget, {"type": RESYNC}, [])
    assert sorted(changes) == ["_widget_data", "_widget_layout"]
    assert list(widget._widget_data[0]["y"]) == [5] and widget._widget_layout["title"]["text"] == "b"


def test_the_server_piece_serves_the_bundle_at_its_hashed_url_gzipped_and_cached_for_a_year():
    async def fetch_all():
        sock, port = bind_unused_port()
        server = HTTPServer(Application(handlers("/base/")))
        server.add_sockets([sock])
        client = AsyncHTTPClient()
        url = f"http://127.0.0.1:{port}" + page_config_entry("/base/")["url"]
        try:
            plain = await client.fetch(url, decompress_response=False, headers={"Accept-Encoding": "identity"})
            zipped = await client.fetch(url, decompress_response=False, headers={"Accept-Encoding": "gzip"})
            other = await client.fetch(url.replace(bundle_sha(), "0" * 20), raise_error=False)
        finally:
            server.stop()
        return plain, zipped, other

    plain, zipped, other = asyncio.run(fetch_all())
    assert plain.body == bundle_bytes()
    assert gzip.decompress(zipped.body) == bundle_bytes()
    assert zipped.headers["Content-Encoding"] == "gzip" and len(zipped.body) < len(bundle_bytes()) / 2
    for response in (plain, zipped):
        assert response.headers["Content-Type"].startswith("text/javascript")
        assert "max-age=31536000" in response.headers["Cache-Control"]
    assert other.code == 404
    assert page_config_entry("/base/") == {"url": f"/base/{bundle_route()}", "sha": bundle_sha()}
    assert PAGE_CONFIG_KEY in module_esm()  # the front end looks the URL up under the key the server writes


def test_the_jupyter_server_extension_is_enabled_for_the_environment():
    """`make install` (and Binder's postBuild) put the enabling config where every Jupyter server of the prefix
    reads it."""
    import sys
    from pathlib import Path

    from jupyter_core.paths import jupyter_config_path

    installed = Path(sys.prefix) / "etc/jupyter/jupyter_server_config.d/pulsarlab.json"
    assert str(installed.parent.parent) in jupyter_config_path(), "the prefix's etc/jupyter is a config path"
    if not installed.exists():
        pytest.fail(f"{installed} is missing: run make install", pytrace=False)
    config = json.loads(installed.read_text())
    name = "pulsarlab_widgets.plotly_server"
    assert config["ServerApp"]["jpserver_extensions"][name] is True
    # the extension the config names, loaded as the Jupyter server loads it: the route and the page's config entry
    [point] = importlib.import_module(name)._jupyter_server_extension_points()
    web_app = SimpleNamespace(settings={"base_url": "/lab-base/"}, routes=[])
    web_app.add_handlers = lambda host, routes: web_app.routes.extend(routes)
    server_app = SimpleNamespace(web_app=web_app, log=logging.getLogger("test"))
    importlib.import_module(point["module"])._load_jupyter_server_extension(server_app)
    [(pattern, _handler)] = web_app.routes
    assert re.fullmatch(pattern, "/lab-base/" + bundle_route())
    assert web_app.settings["page_config_data"][PAGE_CONFIG_KEY] == page_config_entry("/lab-base/")
