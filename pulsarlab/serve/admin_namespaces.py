"""The admin REST resources of clusters, tenants and namespaces: list, create, delete, and the namespace policies
the lab models (``deduplication``, ``retention``).

Models Pulsar's `Clusters`, `Tenants` and `Namespaces` (v2) resources over ``lab.admin``: a ``GET`` of a policy
the namespace does not set answers 204 with no body (JAX-RS's answer to null), a ``POST`` of ``retention`` takes
`RetentionPolicies` JSON and a ``DELETE`` goes back to the broker's defaults. Simplifies: one cluster; ``force``
deletion of a tenant or namespace is refused (405), as a broker without ``forceDeleteTenantAllowed`` /
``forceDeleteNamespaceAllowed`` does; the initial `Policies` of a namespace creation are accepted and ignored; no
backlog quotas (so no 412 "Retention Quota must exceed configured backlog quota").
"""

from __future__ import annotations

import json

from aiohttp import web

from pulsarlab.errors import MethodNotAllowedException
from pulsarlab.serve.admin_requests import (
    NAMESPACE,
    AdminResource,
    flag,
    int_body,
    json_body,
    namespace_of_request,
    string_list,
)


class Clusters(AdminResource):
    """``/admin/v2/clusters``: the one cluster of the lab."""

    def add_routes(self, r: web.UrlDispatcher) -> None:
        r.add_get("/admin/v2/clusters", self.clusters)

    async def clusters(self, request: web.Request) -> web.Response:
        return web.json_response(self.call(self.admin.clusters.list))


class Tenants(AdminResource):
    """``/admin/v2/tenants``: list, get, create (a `TenantInfo` body) and delete."""

    def add_routes(self, r: web.UrlDispatcher) -> None:
        r.add_get("/admin/v2/tenants", self.tenants)
        r.add_get("/admin/v2/tenants/{tenant}", self.tenant_info)
        r.add_put("/admin/v2/tenants/{tenant}", self.create_tenant)
        r.add_delete("/admin/v2/tenants/{tenant}", self.delete_tenant)

    async def tenants(self, request: web.Request) -> web.Response:
        return web.json_response(self.call(self.admin.tenants.list))

    async def tenant_info(self, request: web.Request) -> web.Response:
        info = self.call(self.admin.tenants.get_tenant_info, request.match_info["tenant"])
        return web.json_response(info)

    async def create_tenant(self, request: web.Request) -> web.Response:
        """``PUT /admin/v2/tenants/{t}`` with a `TenantInfo` body; none or no clusters: 412 as Pulsar."""
        body = await json_body(request)
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(
                reason='The body must be a TenantInfo: {"adminRoles": [...], "allowedClusters": [...]}'
            )
        roles = string_list(body.get("adminRoles"), "adminRoles")
        clusters = string_list(body.get("allowedClusters"), "allowedClusters")
        self.call(self.admin.tenants.create_tenant, request.match_info["tenant"], roles, clusters)
        return web.Response(status=204)

    async def delete_tenant(self, request: web.Request) -> web.Response:
        if flag(request, "force", False):
            raise MethodNotAllowedException("Broker doesn't allow forced deletion of tenants")
        self.call(self.admin.tenants.delete_tenant, request.match_info["tenant"])
        return web.Response(status=204)


class Namespaces(AdminResource):
    """``/admin/v2/namespaces``: list, create, delete, the topics of one, and its modelled policies."""

    def add_routes(self, r: web.UrlDispatcher) -> None:
        r.add_get("/admin/v2/namespaces/{tenant}", self.namespaces)
        r.add_get("/admin/v2/namespaces/{tenant}/{namespace}/topics", self.namespace_topics)
        r.add_put(NAMESPACE, self.create_namespace)
        r.add_delete(NAMESPACE, self.delete_namespace)
        r.add_get(NAMESPACE + "/deduplication", self.deduplication)
        r.add_post(NAMESPACE + "/deduplication", self.set_deduplication)
        r.add_delete(NAMESPACE + "/deduplication", self.remove_deduplication)
        r.add_get(NAMESPACE + "/retention", self.retention)
        r.add_post(NAMESPACE + "/retention", self.set_retention)
        r.add_delete(NAMESPACE + "/retention", self.remove_retention)

    async def namespaces(self, request: web.Request) -> web.Response:
        return web.json_response(self.call(self.admin.namespaces.list, request.match_info["tenant"]))

    async def namespace_topics(self, request: web.Request) -> web.Response:
        """``GET /admin/v2/namespaces/{t}/{ns}/topics?mode=``: what the C++ client's HTTP pattern consumer asks."""
        mode = request.query.get("mode", "PERSISTENT")
        if mode not in ("PERSISTENT", "NON_PERSISTENT", "ALL"):
            raise web.HTTPBadRequest(reason=f"Invalid mode {mode!r}: PERSISTENT, NON_PERSISTENT or ALL")
        ns = self.existing_namespace(request)
        found = [] if mode == "NON_PERSISTENT" else self.call(self.admin.topics.list, ns)
        return web.json_response(found)

    async def create_namespace(self, request: web.Request) -> web.Response:
        await json_body(request)  # initial Policies: accepted, only the modelled ones are kept (none here)
        self.call(self.admin.namespaces.create_namespace, namespace_of_request(request))
        return web.Response(status=204)

    async def delete_namespace(self, request: web.Request) -> web.Response:
        if flag(request, "force", False):
            raise MethodNotAllowedException("Broker doesn't allow forced deletion of namespaces")
        self.call(self.admin.namespaces.delete_namespace, namespace_of_request(request))
        return web.Response(status=204)

    async def deduplication(self, request: web.Request) -> web.Response:
        """``GET .../deduplication``: the Boolean policy; unset (null) is 204 with no body, as JAX-RS answers."""
        value = self.call(self.admin.namespaces.get_deduplication_status, namespace_of_request(request))
        return web.Response(status=204) if value is None else web.json_response(value)

    async def set_deduplication(self, request: web.Request) -> web.Response:
        body = await json_body(request)
        if not isinstance(body, bool):
            raise web.HTTPBadRequest(reason=f"The body must be true or false, got {json.dumps(body)}")
        self.call(self.admin.namespaces.set_deduplication_status, namespace_of_request(request), body)
        return web.Response(status=204)

    async def remove_deduplication(self, request: web.Request) -> web.Response:
        self.call(self.admin.namespaces.remove_deduplication_status, namespace_of_request(request))
        return web.Response(status=204)

    async def retention(self, request: web.Request) -> web.Response:
        """``GET .../retention``: `RetentionPolicies` JSON; unset (null) is 204 with no body, as JAX-RS answers."""
        value = self.call(self.admin.namespaces.get_retention, namespace_of_request(request))
        return web.Response(status=204) if value is None else web.json_response(value)

    async def set_retention(self, request: web.Request) -> web.Response:
        """``POST .../retention``: a `RetentionPolicies` body (a missing field is 0, unknown fields are ignored, as
        Jackson reads it); no body sets none, as `internalSetRetention(null)` does."""
        body = await json_body(request)
        namespace = namespace_of_request(request)
        if body is None:
            self.call(self.admin.namespaces.remove_retention, namespace)
            return web.Response(status=204)
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(reason=f"The body must be a RetentionPolicies object, got {json.dumps(body)}")
        minutes = int_body(body.get("retentionTimeInMinutes", 0), "retentionTimeInMinutes")
        size = int_body(body.get("retentionSizeInMB", 0), "retentionSizeInMB")
        self.call(self.admin.namespaces.set_retention, namespace, minutes, size)
        return web.Response(status=204)

    async def remove_retention(self, request: web.Request) -> web.Response:
        self.call(self.admin.namespaces.remove_retention, namespace_of_request(request))
        return web.Response(status=204)


__all__ = ["Clusters", "Namespaces", "Tenants"]
