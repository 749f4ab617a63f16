"""What the admin REST resources share: their paths, reading a request (path, query, JSON body) into the model's
arguments with a 400 for what does not parse, and calling the model as a binary connection does.

Models the JAX-RS side of Pulsar's admin resources (path parameters, `@QueryParam` booleans, Jackson reading a
body; a request body that is not the type asked for is a 400 `BadRequestException`). Simplifies: persistent topics
and v2 paths only.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from aiohttp import web

from pulsarlab.errors import NotFoundException

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.admin_http import AdminHttp

TOPIC = "/admin/v2/persistent/{tenant}/{namespace}/{topic}"
NAMESPACE = "/admin/v2/namespaces/{tenant}/{namespace}"
SUBSCRIPTION = TOPIC + "/subscription/{subscription}"
LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class AdminResource:
    """One admin resource (as Pulsar's `PersistentTopics`, `Namespaces`, ...): handlers over ``lab.admin``, added to
    the listener's router by `add_routes`."""

    def __init__(self, http: "AdminHttp") -> None:
        self.http = http
        self.server = http.server
        self.admin = http.admin
        self.call: Callable[..., Any] = http.call  # fn(*args) under the server's lock with the clock caught up

    def add_routes(self, router: web.UrlDispatcher) -> None:
        raise NotImplementedError

    def existing_namespace(self, request: web.Request) -> str:
        """The request's namespace; NotFoundException (404) when it does not exist."""
        ns = namespace_of_request(request)
        if not self.call(self.admin.namespaces.exists, ns):
            raise NotFoundException("Namespace does not exist")
        return ns


def topic_of(request: web.Request) -> str:
    m = request.match_info
    return f"persistent://{m['tenant']}/{m['namespace']}/{m['topic']}"


def path_number(request: web.Request, name: str, limit: int = INT_MAX) -> int:
    """A number of the path (the route's pattern admits digits only); past ``limit`` (Java's ``int``, or ``long``)
    it is no path parameter of that type, so JAX-RS does not match the resource: 404."""
    value = int(request.match_info[name])
    if value > limit:
        raise web.HTTPNotFound()
    return value


def namespace_of_request(request: web.Request) -> str:
    return f"{request.match_info['tenant']}/{request.match_info['namespace']}"


async def json_body(request: web.Request) -> Any:
    """The request body as JSON (None when empty); 400 for anything that is not JSON."""
    text = await request.text()  # over MAX_BODY: aiohttp raises 413
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        raise web.HTTPBadRequest(reason=f"Cannot parse the request body as JSON: {e}") from None


def int_body(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise web.HTTPBadRequest(reason=f"{what} must be a JSON integer, got {json.dumps(value)}")
    return value


def message_id_of(body: Any) -> tuple[int, int]:
    """A ``MessageIdImpl`` / ``ResetCursorData`` body (``ledgerId``, ``entryId``) as a message id; none: latest."""
    if body is None:
        return (LONG_MAX, LONG_MAX)
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(reason='The body must be a message id: {"ledgerId": L, "entryId": E}')
    return (int_body(body.get("ledgerId"), "ledgerId"), int_body(body.get("entryId"), "entryId"))


def string_list(value: Any, what: str) -> list[str]:
    """A JSON list of strings from a body field (absent: empty)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise web.HTTPBadRequest(reason=f"{what} must be a JSON list of strings, got {json.dumps(value)}")
    return value


def long_running_status(status: Any) -> dict[str, Any]:
    """A compaction status as `LongRunningProcessStatus` JSON, from a dict or an object with ``status``."""
    if isinstance(status, dict):
        return status
    state = getattr(status, "status", status)
    name = getattr(state, "name", state)
    return {"status": str(name), "lastError": getattr(status, "last_error", "") or ""}


def flag(request: web.Request, name: str, default: bool) -> bool:
    value = request.query.get(name)
    if value is None:
        return default
    if value.lower() not in ("true", "false"):
        raise web.HTTPBadRequest(reason=f"Query parameter {name} must be true or false, got {value!r}")
    return value.lower() == "true"


__all__ = [
    "INT_MAX",
    "LONG_MAX",
    "NAMESPACE",
    "SUBSCRIPTION",
    "TOPIC",
    "AdminResource",
    "flag",
    "int_body",
    "json_body",
    "long_running_status",
    "message_id_of",
    "namespace_of_request",
    "path_number",
    "string_list",
    "topic_of",
]
