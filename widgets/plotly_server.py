"""plotly's widget bundle as a static file of the Jupyter server (JupyterLab) and of `pulsarlab present`'s Voilà.

Models no Pulsar class. The same tornado handler serves both: the Jupyter server loads this module as a server
extension (``jupyter/jupyter_server_config.d/pulsarlab.json``, installed into ``etc/jupyter`` by the package's data
files), and `pulsarlab present` runs Voilà through `main`, a Voilà that adds the handler. The file's URL carries the
bundle's hash (``pulsarlab/static/plotly-widget.<sha>.js`` under the server's base URL) and is cached for a year; it
is sent gzipped to browsers that accept it (about 1.5 MB instead of 5 MB). Each page names the URL and hash in its
``#jupyter-config-data`` (key ``pulsarlabPlotly``), where the figures' front end (`pulsarlab_widgets.plotly_module`)
looks for it.
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import sys
from typing import Any

from pulsarlab_widgets.plotly_module import bundle_bytes, bundle_sha

ROUTE = "pulsarlab/static/"
PAGE_CONFIG_KEY = "pulsarlabPlotly"
YEAR_S = 365 * 24 * 3600


def bundle_route() -> str:
    """The bundle's path under a server's base URL, named by its hash."""
    return f"{ROUTE}plotly-widget.{bundle_sha()}.js"


def page_config_entry(base_url: str) -> dict[str, str]:
    """What the page's ``#jupyter-config-data`` says about the served bundle."""
    return {"url": base_url.rstrip("/") + "/" + bundle_route(), "sha": bundle_sha()}


@functools.cache
def gzipped_bundle() -> bytes:
    return gzip.compress(bundle_bytes(), compresslevel=6, mtime=0)


def handlers(base_url: str) -> list[tuple[str, Any]]:
    """The tornado route of the bundle under ``base_url``."""
    from tornado import web

    class PlotlyBundleHandler(web.RequestHandler):
        """plotly's widget bundle at its content-hashed URL; any other hash is not found."""

        async def get(self, sha: str) -> None:
            if sha != bundle_sha():
                raise web.HTTPError(404, f"no plotly widget bundle {sha}; this server has {bundle_sha()}")
            gzipped = "gzip" in self.request.headers.get("Accept-Encoding", "")
            # compressing 5 MB takes a moment once: off the server's event loop
            body = await asyncio.get_running_loop().run_in_executor(None, gzipped_bundle if gzipped else bundle_bytes)
            self.set_header("Content-Type", "text/javascript; charset=utf-8")
            self.set_header("Cache-Control", f"public, max-age={YEAR_S}, immutable")
            self.set_header("Vary", "Accept-Encoding")
            if gzipped:
                self.set_header("Content-Encoding", "gzip")
            self.finish(body)

    pattern = base_url.rstrip("/") + "/" + ROUTE + r"plotly-widget\.([0-9a-f]{20})\.js"
    return [(pattern, PlotlyBundleHandler)]


# -- the Jupyter server extension (JupyterLab) -------------------------------------------------------------------
def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "pulsarlab_widgets.plotly_server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    web_app = serverapp.web_app
    base_url = web_app.settings.get("base_url", "/")
    web_app.add_handlers(".*$", handlers(base_url))
    web_app.settings.setdefault("page_config_data", {})[PAGE_CONFIG_KEY] = page_config_entry(base_url)
    serverapp.log.info("pulsarlab: plotly's widget bundle at %s", base_url + bundle_route())


# -- Voilà with the bundle (pulsarlab present) ------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """Run Voilà (same arguments) with the bundle served and named in every page's config."""
    from voila.app import Voila

    class VoilaWithPlotly(Voila):
        def initialize(self, argv: Any = None) -> None:
            super().initialize(argv)
            hook = self.voila_configuration.page_config_hook

            def page_config(page_config: dict, **kwargs: Any) -> dict:
                page_config = hook(page_config, **kwargs) if hook else page_config
                return {**page_config, PAGE_CONFIG_KEY: page_config_entry(kwargs["base_url"])}

            self.voila_configuration.page_config_hook = page_config

        def init_handlers(self) -> list:
            # before Voilà's own routes: its last one takes every path
            return handlers(self.server_url) + super().init_handlers()

    VoilaWithPlotly.launch_instance(argv)


if __name__ == "__main__":
    main(sys.argv[1:])


__all__ = ["PAGE_CONFIG_KEY", "ROUTE", "bundle_route", "handlers", "main", "page_config_entry"]
