"""Tenants and namespaces the broker knows, with the namespace policies the lab models.

Models the configuration store's ``/admin/policies`` tree as `TenantResources` and `NamespaceResources` keep it:
a tenant's `TenantInfo` (``adminRoles``, ``allowedClusters``) and a namespace's `Policies`, of which the lab
models ``deduplicationEnabled`` (None: not set, the broker's ``brokerDeduplicationEnabled`` applies) and
``retention_policies`` (None: not set, the broker's ``defaultRetentionTimeInMinutes`` / ``defaultRetentionSizeInMB``
apply). Names are
checked as `NamedEntity.checkName` does (letters, digits, ``_ - = : .``). Simplifies: one cluster; a standalone
broker's ``public`` tenant and ``public/default`` namespace exist from the start; a topic is only created in a
registered namespace (else ``TopicNotFound``, `BrokerService.check_namespace`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pulsarlab.managed_ledger.retention import RetentionPolicies

_NAME = re.compile(r"^[-=:.\w]+$")
STANDALONE_CLUSTER = "standalone"


def valid_name(name: Any) -> bool:
    """`NamedEntity.checkName`: a non-empty name of letters, digits and ``_ - = : .``."""
    return isinstance(name, str) and bool(_NAME.match(name))


@dataclass(frozen=True)
class TenantInfo:
    """`TenantInfoImpl`: who administers a tenant and which clusters its namespaces may use."""

    admin_roles: tuple[str, ...] = ()
    allowed_clusters: tuple[str, ...] = ()

    def to_json(self) -> dict[str, list[str]]:
        return {"adminRoles": list(self.admin_roles), "allowedClusters": list(self.allowed_clusters)}


@dataclass
class NamespacePolicies:
    """The `Policies` fields of a namespace that the lab models."""

    deduplication_enabled: bool | None = None
    retention_policies: RetentionPolicies | None = None


@dataclass
class Tenancy:
    """The registered tenants (name -> `TenantInfo`) and namespaces (``tenant/ns`` -> `NamespacePolicies`)."""

    tenants: dict[str, TenantInfo] = field(default_factory=dict)
    namespaces: dict[str, NamespacePolicies] = field(default_factory=dict)

    @classmethod
    def standalone(cls, cluster: str) -> "Tenancy":
        """What `PulsarStandalone` creates at start: the ``public`` tenant and its ``default`` namespace."""
        return cls({"public": TenantInfo((), (cluster,))}, {"public/default": NamespacePolicies()})


__all__ = ["STANDALONE_CLUSTER", "NamespacePolicies", "TenantInfo", "Tenancy", "valid_name"]
