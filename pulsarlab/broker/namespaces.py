"""The tenants and namespaces a broker knows, with the namespace policies the lab models.

Models the part of `NamespaceResources` / `TenantResources` the broker reads on a lookup, a PRODUCER or a
SUBSCRIBE: a topic can only be (auto-)created in an existing namespace, else the client gets ``TopicNotFound``
("Namespace does not exist"), as from a standalone Pulsar. ``public/default`` exists from the start (a
standalone creates it); other tenants and namespaces exist once created (``pulsar-admin tenants create``,
``namespaces create``). Policies: ``deduplicationEnabled`` (None: the broker's ``brokerDeduplicationEnabled``).
Simplifies: no clusters, admin roles or other policies are kept; a tenant or namespace is never deleted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NamespacePolicies:
    """`Policies` of one namespace, as far as the model reads them."""

    deduplication_enabled: bool | None = None


def namespace_of(topic: str) -> str:
    """``tenant/namespace`` of a normalised topic name (``persistent://t/ns/x`` -> ``t/ns``)."""
    rest = topic.split("://", 1)[-1]
    tenant, namespace = rest.split("/")[:2]
    return f"{tenant}/{namespace}"


def valid_name(name: str) -> bool:
    """`NamedEntity.checkName`: letters, digits and ``-_=:.``."""
    return isinstance(name, str) and bool(name) and all(c.isalnum() or c in "-_.=:" for c in name)


class NamespaceRegistry:
    """Tenants, namespaces and their policies (the checks and errors are `BrokerService`'s)."""

    def __init__(self) -> None:
        self.tenants: set[str] = {"public"}
        self.namespaces: dict[str, NamespacePolicies] = {"public/default": NamespacePolicies()}

    def exists(self, namespace: str) -> bool:
        return namespace in self.namespaces

    def add(self, namespace: str) -> None:
        self.namespaces[namespace] = NamespacePolicies()

    def policies(self, namespace: str) -> NamespacePolicies:
        """The namespace's policies (KeyError for an unknown one: check `exists` first)."""
        return self.namespaces[namespace]

    def topic_namespace_exists(self, topic: str) -> bool:
        return namespace_of(topic) in self.namespaces


__all__ = ["NamespacePolicies", "NamespaceRegistry", "namespace_of", "valid_name"]
