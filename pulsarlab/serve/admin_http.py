"""The broker's admin REST API and HTTP lookup on loopback, in the binary server's event loop.

Models the broker's web service (``webServicePort``, 8080 by default): the ``/admin/v2`` resources of
`PersistentTopics`, `Clusters`, `Tenants` and `Namespaces` that pulsar-admin and the clients call, and
`TopicLookup` (``/lookup/v2/topic/...``) so ``pulsar.Client("http://127.0.0.1:8080")`` finds the binary port.
Every handler calls ``lab.admin`` (the broker's command surface) under the server's ``lock``, catching the clock
up first, exactly as a binary connection handles its frames; answers are ``lab.admin``'s JSON. Errors are
Pulsar's statuses with a ``{"reason": ...}`` body: 404 not found, 409 conflict, 412 precondition failed (also an
invalid topic name), 400 bad JSON (and an invalid retention policy, as Pulsar's `BadRequestException`), 405 wrong
method (or an operation Pulsar refuses on that resource), 413 a body
over `MAX_BODY`.

Library: aiohttp.web. It is asyncio-native (an `AppRunner` + `TCPSite` joins the loop the binary listener
already runs, with no second server object, no thread and no signal handling of its own), it parses HTTP itself
(llhttp) with limits on line, header and body sizes, routes by method with 405 built in, and it is widely used
and maintained. An ASGI stack (Starlette + uvicorn) would work too, but needs uvicorn's ``Server`` driven by
hand inside a foreign loop and two packages for what aiohttp does alone.

The resources, one class each as Pulsar has them, in their own modules: `Clusters`, `Tenants` and `Namespaces`
(`admin_namespaces`), `PersistentTopics` and `TopicLookup` (`admin_topics`); what they share, from paths to
reading a body, is `admin_requests`. Simplifies: persistent topics only, v2 paths only, no authentication.
"""

from __future__ import annotations

import logging
import socket
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from aiohttp import web

from pulsarlab.errors import (
    BadRequestException,
    ConflictException,
    IllegalArgumentException,
    MethodNotAllowedException,
    NotFoundException,
    PreconditionFailedException,
)
from pulsarlab.serve.admin_namespaces import Clusters, Namespaces, Tenants
from pulsarlab.serve.admin_topics import PersistentTopics, TopicLookup

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.server import LabServer

log = logging.getLogger("pulsarlab.serve.admin")

MAX_BODY = 1024 * 1024  # bytes; a larger request body is answered 413
SHUTDOWN_S = 1.0

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _status_of(error: BaseException) -> int | None:
    """The HTTP status Pulsar's `RestException` gives a model exception (None: not a client error)."""
    if isinstance(error, NotFoundException):
        return 404
    if isinstance(error, ConflictException):
        return 409
    if isinstance(error, MethodNotAllowedException):
        return 405
    if isinstance(error, BadRequestException):
        return 400
    if isinstance(error, (PreconditionFailedException, IllegalArgumentException)):
        return 412
    return None


def _reason(status: int, reason: str) -> web.Response:
    return web.json_response({"reason": reason}, status=status)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every error as Pulsar's ``{"reason": ...}`` JSON; an unexpected one is logged and answered 500."""
    try:
        return await handler(request)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        return _reason(e.status, e.reason)
    except Exception as e:
        status = _status_of(e)
        if status is not None:
            return _reason(status, str(e))
        log.exception("admin request %s %s failed", request.method, request.path)
        return _reason(500, f"{type(e).__name__}: {e}")


class AdminHttp:
    """The admin REST listener of one `LabServer` (``start``/``stop`` from its loop)."""

    def __init__(self, server: "LabServer") -> None:
        self.server = server
        self.admin = server.lab.admin
        self.url: str | None = None
        self.port: int | None = None
        self._runner: web.AppRunner | None = None
        self.app = web.Application(client_max_size=MAX_BODY, middlewares=[_errors])
        self._routes()

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self, host: str, port: int, sock: socket.socket | None = None) -> None:
        """Listen on ``host:port``, or serve on ``sock``, a listening socket bound before this module loaded."""
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None, shutdown_timeout=SHUTDOWN_S)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port) if sock is None else web.SockSite(runner, sock)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        host = self.server.advertised_host
        self.url = f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # --- calling the model ----------------------------------------------------------------------
    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` under the server's lock with the clock caught up, as a connection's frames are."""
        server = self.server
        with server.lock:
            server.clock.catch_up()
            try:
                return fn(*args)
            finally:
                server.rearm()

    # --- routes ---------------------------------------------------------------------------------
    def _routes(self) -> None:
        for resource in (Clusters, Tenants, Namespaces, PersistentTopics, TopicLookup):
            resource(self).add_routes(self.app.router)


__all__ = ["AdminHttp", "MAX_BODY"]
