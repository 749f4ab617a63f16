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

Tenants (create, get, delete), namespaces (create, delete, the ``deduplication`` and ``retention`` policies:
``GET`` answers 204 with no body when the namespace sets none, ``POST`` takes `RetentionPolicies` JSON, ``DELETE``
goes back to the broker's defaults), subscription cursor
moves (``skip/{n}``, ``skip_all``, ``expireMessages/{seconds}`` for one or ``all_subscription``,
``resetcursor/{timestamp}`` and by message id)
and ``compaction`` (trigger, status) call ``lab.admin`` the same way (over the broker's admin resources,
`pulsarlab.broker.admin`). Simplifies: persistent topics only, v2 paths only, no authentication, no ``force`` on
deletions (tenant/namespace ``force`` is refused as a broker without ``forceDeleteTenantAllowed`` does), no
backlog quotas (so no 412 "Retention Quota must exceed configured backlog quota").
"""

from __future__ import annotations

import json
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

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.server import LabServer

log = logging.getLogger("pulsarlab.serve.admin")

MAX_BODY = 1024 * 1024  # bytes; a larger request body is answered 413
SHUTDOWN_S = 1.0
TOPIC = "/admin/v2/persistent/{tenant}/{namespace}/{topic}"
NAMESPACE = "/admin/v2/namespaces/{tenant}/{namespace}"
SUBSCRIPTION = TOPIC + "/subscription/{subscription}"
LONG_MAX = 2**63 - 1

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


def _string_list(value: Any, what: str) -> list[str]:
    """A JSON list of strings from a body field (absent: empty)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise web.HTTPBadRequest(reason=f"{what} must be a JSON list of strings, got {json.dumps(value)}")
    return value


def _long_running_status(status: Any) -> dict[str, Any]:
    """A compaction status as `LongRunningProcessStatus` JSON, from a dict or an object with ``status``."""
    if isinstance(status, dict):
        return status
    state = getattr(status, "status", status)
    name = getattr(state, "name", state)
    return {"status": str(name), "lastError": getattr(status, "last_error", "") or ""}


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
        r.add_post(SUBSCRIPTION + r"/skip/{n:\d+}", self.skip)
        r.add_post(SUBSCRIPTION + "/skip_all", self.skip_all)
        r.add_post(SUBSCRIPTION + r"/expireMessages/{seconds:\d+}", self.expire_messages)
        r.add_post(TOPIC + r"/all_subscription/expireMessages/{seconds:\d+}", self.expire_all_subscriptions)
        r.add_post(SUBSCRIPTION + r"/resetcursor/{timestamp:\d+}", self.reset_cursor_to_time)
        r.add_post(SUBSCRIPTION + "/resetcursor", self.reset_cursor_to_position)
        r.add_put(TOPIC + "/compaction", self.trigger_compaction)
        r.add_get(TOPIC + "/compaction", self.compaction_status)
        r.add_get("/admin/v2/tenants/{tenant}", self.tenant_info)
        r.add_put("/admin/v2/tenants/{tenant}", self.create_tenant)
        r.add_delete("/admin/v2/tenants/{tenant}", self.delete_tenant)
        r.add_put(NAMESPACE, self.create_namespace)
        r.add_delete(NAMESPACE, self.delete_namespace)
        r.add_get(NAMESPACE + "/deduplication", self.deduplication)
        r.add_post(NAMESPACE + "/deduplication", self.set_deduplication)
        r.add_delete(NAMESPACE + "/deduplication", self.remove_deduplication)
        r.add_get(NAMESPACE + "/retention", self.retention)
        r.add_post(NAMESPACE + "/retention", self.set_retention)
        r.add_delete(NAMESPACE + "/retention", self.remove_retention)
        r.add_get("/lookup/v2/topic/persistent/{tenant}/{namespace}/{topic}", self.lookup)

    # --- clusters, tenants, namespaces ----------------------------------------------------------
    async def clusters(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.clusters.list))

    async def tenants(self, request: web.Request) -> web.Response:
        return web.json_response(self._call(self.admin.tenants.list))

    async def tenant_info(self, request: web.Request) -> web.Response:
        info = self._call(self.admin.tenants.get_tenant_info, request.match_info["tenant"])
        return web.json_response(info)

    async def create_tenant(self, request: web.Request) -> web.Response:
        """``PUT /admin/v2/tenants/{t}`` with a `TenantInfo` body; none or no clusters: 412 as Pulsar."""
        body = await _json_body(request)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(
                reason='The body must be a TenantInfo: {"adminRoles": [...], "allowedClusters": [...]}'
            )
        roles = _string_list(body.get("adminRoles"), "adminRoles")
        clusters = _string_list(body.get("allowedClusters"), "allowedClusters")
        self._call(self.admin.tenants.create_tenant, request.match_info["tenant"], roles, clusters)
        return web.Response(status=204)

    async def delete_tenant(self, request: web.Request) -> web.Response:
        if _flag(request, "force", False):
            raise MethodNotAllowedException("Broker doesn't allow forced deletion of tenants")
        self._call(self.admin.tenants.delete_tenant, request.match_info["tenant"])
        return web.Response(status=204)

    async def create_namespace(self, request: web.Request) -> web.Response:
        await _json_body(request)  # initial Policies: accepted, only the modelled ones are kept (none here)
        self._call(self.admin.namespaces.create_namespace, self._namespace(request))
        return web.Response(status=204)

    async def delete_namespace(self, request: web.Request) -> web.Response:
        if _flag(request, "force", False):
            raise MethodNotAllowedException("Broker doesn't allow forced deletion of namespaces")
        self._call(self.admin.namespaces.delete_namespace, self._namespace(request))
        return web.Response(status=204)

    async def deduplication(self, request: web.Request) -> web.Response:
        """``GET .../deduplication``: the Boolean policy; unset (null) is 204 with no body, as JAX-RS answers."""
        value = self._call(self.admin.namespaces.get_deduplication_status, self._namespace(request))
        return web.Response(status=204) if value is None else web.json_response(value)

    async def set_deduplication(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        if not isinstance(body, bool):
            raise web.HTTPBadRequest(reason=f"The body must be true or false, got {json.dumps(body)}")
        self._call(self.admin.namespaces.set_deduplication_status, self._namespace(request), body)
        return web.Response(status=204)

    async def remove_deduplication(self, request: web.Request) -> web.Response:
        self._call(self.admin.namespaces.remove_deduplication_status, self._namespace(request))
        return web.Response(status=204)

    async def retention(self, request: web.Request) -> web.Response:
        """``GET .../retention``: `RetentionPolicies` JSON; unset (null) is 204 with no body, as JAX-RS answers."""
        value = self._call(self.admin.namespaces.get_retention, self._namespace(request))
        return web.Response(status=204) if value is None else web.json_response(value)

    async def set_retention(self, request: web.Request) -> web.Response:
        """``POST .../retention``: a `RetentionPolicies` body (a missing field is 0, unknown fields are ignored, as
        Jackson reads it); no body sets none, as `internalSetRetention(null)` does."""
        body = await _json_body(request)
        namespace = self._namespace(request)
        if body is None:
            self._call(self.admin.namespaces.remove_retention, namespace)
            return web.Response(status=204)
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(reason=f"The body must be a RetentionPolicies object, got {json.dumps(body)}")
        minutes = _int_body(body.get("retentionTimeInMinutes", 0), "retentionTimeInMinutes")
        size = _int_body(body.get("retentionSizeInMB", 0), "retentionSizeInMB")
        self._call(self.admin.namespaces.set_retention, namespace, minutes, size)
        return web.Response(status=204)

    async def remove_retention(self, request: web.Request) -> web.Response:
        self._call(self.admin.namespaces.remove_retention, self._namespace(request))
        return web.Response(status=204)

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

    async def skip(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        if n > 2**31 - 1:
            raise web.HTTPNotFound()  # not an int path parameter: JAX-RS does not match the resource
        self._call(self.admin.topics.skip_messages, self._topic(request), request.match_info["subscription"], n)
        return web.Response(status=204)

    async def skip_all(self, request: web.Request) -> web.Response:
        self._call(self.admin.topics.skip_all_messages, self._topic(request), request.match_info["subscription"])
        return web.Response(status=204)

    async def expire_messages(self, request: web.Request) -> web.Response:
        seconds = int(request.match_info["seconds"])
        if seconds > 2**31 - 1:
            raise web.HTTPNotFound()
        sub = request.match_info["subscription"]
        self._call(self.admin.topics.expire_messages, self._topic(request), sub, seconds)
        return web.Response(status=204)

    async def expire_all_subscriptions(self, request: web.Request) -> web.Response:
        """``.../all_subscription/expireMessages/{seconds}``: every subscription of the topic (or its partitions)."""
        seconds = int(request.match_info["seconds"])
        if seconds > 2**31 - 1:
            raise web.HTTPNotFound()
        topic = self._topic(request)
        topics = self.admin.topics

        def expire_all() -> None:
            for sub in topics.subscriptions(topic):
                topics.expire_messages(topic, sub, seconds)

        self._call(expire_all)
        return web.Response(status=204)

    async def reset_cursor_to_time(self, request: web.Request) -> web.Response:
        """``.../resetcursor/{timestamp}``: a wall-clock time (ms since the epoch), moved onto the lab clock."""
        wall = int(request.match_info["timestamp"])
        if wall > LONG_MAX:
            raise web.HTTPNotFound()
        sub = request.match_info["subscription"]
        topic = self._topic(request)
        self._call(lambda: self.admin.topics.reset_cursor(topic, sub, self.server.clock.to_virtual(wall)))
        return web.Response(status=204)

    async def reset_cursor_to_position(self, request: web.Request) -> web.Response:
        """``.../resetcursor`` with a `ResetCursorData` body (``ledgerId``, ``entryId``, ``isExcluded``)."""
        body = await _json_body(request)
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(reason='The body must be a message id: {"ledgerId": L, "entryId": E}')
        message_id = _message_id(body)
        excluded = body.get("isExcluded", False)
        if not isinstance(excluded, bool):
            raise web.HTTPBadRequest(reason=f"isExcluded must be true or false, got {json.dumps(excluded)}")
        sub = request.match_info["subscription"]
        topic = self._topic(request)
        self._call(lambda: self.admin.topics.reset_cursor(topic, sub, message_id=message_id, is_excluded=excluded))
        return web.Response(status=204)

    # --- compaction -----------------------------------------------------------------------------
    async def trigger_compaction(self, request: web.Request) -> web.Response:
        """``PUT .../compaction`` (`PersistentTopicsBase.internalTriggerCompaction`): 204 once started."""
        self._call(self.admin.topics.trigger_compaction, self._topic(request))
        return web.Response(status=204)

    async def compaction_status(self, request: web.Request) -> web.Response:
        """``GET .../compaction``: `LongRunningProcessStatus` ``{"status": ..., "lastError": ...}``."""
        status = self._call(self.admin.topics.compaction_status, self._topic(request))
        return web.json_response(_long_running_status(status))

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
