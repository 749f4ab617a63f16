"""The broker's admin REST API and HTTP lookup on loopback, in the binary server's event loop.

Models the broker's web service (``webServicePort``, 8080 by default): the ``/admin/v2`` resources of
`PersistentTopics`, `Clusters`, `Tenants` and `Namespaces` that pulsar-admin and the clients call, and
`TopicLookup` (``/lookup/v2/topic/...``) so ``pulsar.Client("http://127.0.0.1:8080")`` finds the binary port.
Every handler calls ``lab.admin`` (the broker's command surface) under the server's ``lock``, catching the clock
up first, exactly as a binary connection handles its frames; answers are ``lab.admin``'s JSON. Errors are
Pulsar's statuses with a ``{"reason": ...}`` body: 404 not found, 409 conflict, 412 precondition failed (also an
invalid topic name), 400 bad JSON, 405 wrong method, 413 a body over `MAX_BODY`.

Library: aiohttp.web. It is asyncio-native (an `AppRunner` + `TCPSite` joins the loop the binary listener
already runs, with no second server object, no thread and no signal handling of its own), it parses HTTP itself
(llhttp) with limits on line, header and body sizes, routes by method with 405 built in, and it is widely used
and maintained. An ASGI stack (Starlette + uvicorn) would work too, but needs uvicorn's ``Server`` driven by
hand inside a foreign loop and two packages for what aiohttp does alone.

Simplifies: persistent topics only, v2 paths only, no authentication, no tenant/namespace creation or policies
(the lab knows the namespaces its topics live in), no ``force`` on topic deletion.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from aiohttp import web

from pulsarlab.broker.service import ConflictException, NotFoundException, PreconditionFailedException
from pulsarlab.errors import IllegalArgumentException

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.server import LabServer

log = logging.getLogger("pulsarlab.serve.admin")

MAX_BODY = 1024 * 1024  # bytes; a larger request body is answered 413
SHUTDOWN_S = 1.0
TOPIC = "/admin/v2/persistent/{tenant}/{namespace}/{topic}"
LONG_MAX = 2**63 - 1

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _status_of(error: BaseException) -> int | None:
    """The HTTP status Pulsar's `RestException` gives a model exception (None: not a client error)."""
    if isinstance(error, NotFoundException):
        return 404
    if isinstance(error, ConflictException):
        return 409
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


async def _json_body(request: web.Request) -> Any:
    """The request body as JSON (None when empty); 400 for anything that is not JSON."""
    text = await request.text()  # over MAX_BODY: aiohttp raises 413
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        raise web.HTTPBadRequest(reason=f"Cannot parse the request body as JSON: {e}") from None


def _int_body(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise web.HTTPBadRequest(reason=f"{what} must be a JSON integer, got {json.dumps(value)}")
    return value


def _message_id(body: Any) -> tuple[int, int]:
    """A ``MessageIdImpl`` / ``ResetCursorData`` body (``ledgerId``, ``entryId``) as a message id; none: latest."""
    if body is None:
        return (LONG_MAX, LONG_MAX)
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(reason='The body must be a message id: {"ledgerId": L, "entryId": E}')
    return (_int_body(body.get("ledgerId"), "ledgerId"), _int_body(body.get("entryId"), "entryId"))


def _flag(request: web.Request, name: str, default: bool) -> bool:
    value = request.query.get(name)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise web.HTTPBadRequest(reason=f"Query parameter {name} must be true or false, got {value!r}")
    return value.lower() == "true"


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
    async def start(self, host: str, port: int) -> None:
        runner = web.AppRunner(self.app, handle_signals=False, access_log=None, shutdown_timeout=SHUTDOWN_S)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
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
    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` under the server's lock with the clock caught up, as a connection's frames are."""
        server = self.server
        with server.lock:
            server.clock.catch_up()
            try:
                return fn(*args)
            finally:
                server.rearm()

    @staticmethod
    def _topic(request: web.Request) -> str:
        m = request.match_info
        return f"persistent://{m['tenant']}/{m['namespace']}/{m['topic']}"

    @staticmethod
    def _namespace(request: web.Request) -> str:
        return f"{request.match_info['tenant']}/{request.match_info['namespace']}"

    def _existing_namespace(self, request: web.Request) -> str:
        ns = self._namespace(request)
        if not self._call(self.admin.namespaces.exists, ns):
            raise NotFoundException("Namespace does not exist")
        return ns

    # --- routes ---------------------------------------------------------------------------------
    def _routes(self) -> None:
        r = self.app.router
        r.add_get("/admin/v2/clusters", self.clusters)
        r.add_get("/admin/v2/tenants", self.tenants)
        r.add_get("/admin/v2/namespaces/{tenant}", self.namespaces)
        r.add_get("/admin/v2/namespaces/{tenant}/{namespace}/topics", self.namespace_topics)
        r.add_get("/admin/v2/persistent/{tenant}/{namespace}", self.topics)
        r.add_get("/admin/v2/persistent/{tenant}/{namespace}/partitioned", self.partitioned_topics)
        r.add_put(TOPIC, self.create_topic)
        r.add_delete(TOPIC, self.delete_topic)
        r.add_get(TOPIC + "/partitions", self.partitions)
        r.add_put(TOPIC + "/partitions", self.create_partitioned)
        r.add_post(TOPIC + "/partitions", self.update_partitions)
        r.add_delete(TOPIC + "/partitions", self.delete_partitioned)
        r.add_get(TOPIC + "/stats", self.stats)
        r.add_get(TOPIC + "/partitioned-stats", self.partitioned_stats)
        r.add_get(TOPIC + "/internalStats", self.internal_stats)
        r.add_get(TOPIC + "/subscriptions", self.subscriptions)
        r.add_put(TOPIC + "/subscription/{subscription}", self.create_subscription)
        r.add_delete(TOPIC + "/subscription/{subscription}", self.delete_subscription)
        r.add_get("/lookup/v2/topic/persistent/{tenant}/{namespace}/{topic}", self.lookup)

    # --- clusters, tenants, namespaces ----------------------------------------------------------
    async def clusters(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.clusters.list))

    async def tenants(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.tenants.list))

    async def namespaces(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.namespaces.list, request.match_info["tenant"]))

    async def namespace_topics(self, request: web.Request) -> web.Response:
        """``GET /admin/v2/namespaces/{t}/{ns}/topics?mode=``: what the C++ client's HTTP pattern consumer asks."""
        mode = request.query.get("mode", "PERSISTENT")
        if mode not in ("PERSISTENT", "NON_PERSISTENT", "ALL"):
            raise web.HTTPBadRequest(reason=f"Invalid mode {mode!r}: PERSISTENT, NON_PERSISTENT or ALL")
        ns = self._existing_namespace(request)
        found = [] if mode == "NON_PERSISTENT" else self._call(self.admin.topics.list, ns)
        return web.json_response(found)

    # --- topics ---------------------------------------------------------------------------------
    async def topics(self, request: web.Request) -> web.Response:
        ns = self._existing_namespace(request)
        return web.json_response(self._call(self.admin.topics.list, ns))

    async def partitioned_topics(self, request: web.Request) -> web.Response:
        ns = self._existing_namespace(request)
        return web.json_response(self._call(self.admin.topics.list_partitioned_topics, ns))

    async def create_topic(self, request: web.Request) -> web.Response:
        await _json_body(request)  # topic properties: accepted, not modelled
        self._call(self.admin.topics.create_non_partitioned_topic, self._topic(request))
        return web.Response(status=204)

    async def delete_topic(self, request: web.Request) -> web.Response:
        self._call(self.admin.topics.delete, self._topic(request))
        return web.Response(status=204)

    async def partitions(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.topics.get_partitioned_topic_metadata, self._topic(request)))

    async def create_partitioned(self, request: web.Request) -> web.Response:
        n = _int_body(await _json_body(request), "The number of partitions")
        self._call(self.admin.topics.create_partitioned_topic, self._topic(request), n)
        return web.Response(status=204)

    async def update_partitions(self, request: web.Request) -> web.Response:
        n = _int_body(await _json_body(request), "The number of partitions")
        self._call(self.admin.topics.update_partitioned_topic, self._topic(request), n)
        return web.Response(status=204)

    async def delete_partitioned(self, request: web.Request) -> web.Response:
        self._call(self.admin.topics.delete_partitioned_topic, self._topic(request))
        return web.Response(status=204)

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.topics.stats, self._topic(request)))

    async def partitioned_stats(self, request: web.Request) -> web.Response:
        per_partition = _flag(request, "perPartition", True)
        body = self._call(self.admin.topics.partitioned_stats, self._topic(request), per_partition)
        return web.json_response(body)

    async def internal_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.topics.stats_internal, self._topic(request)))

    # --- subscriptions --------------------------------------------------------------------------
    async def subscriptions(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.topics.subscriptions, self._topic(request)))

    async def create_subscription(self, request: web.Request) -> web.Response:
        message_id = _message_id(await _json_body(request))
        sub = request.match_info["subscription"]
        self._call(self.admin.topics.create_subscription, self._topic(request), sub, message_id)
        return web.Response(status=204)

    async def delete_subscription(self, request: web.Request) -> web.Response:
        force = _flag(request, "force", False)
        sub = request.match_info["subscription"]
        self._call(self.admin.topics.delete_subscription, self._topic(request), sub, force)
        return web.Response(status=204)

    # --- lookup ---------------------------------------------------------------------------------
    async def lookup(self, request: web.Request) -> web.Response:
        """`TopicLookup`'s `LookupData`: this broker owns every topic (the C++ client needs both broker URLs)."""
        self._call(self.server.lab.service.normalize, self._topic(request))
        broker = self.server.url
        return web.json_response(
            {
                "brokerUrl": broker,
                "brokerUrlTls": "",
                "httpUrl": self.url,
                "httpUrlTls": "",
                "nativeUrl": broker,
            }
        )


__all__ = ["AdminHttp", "MAX_BODY"]
