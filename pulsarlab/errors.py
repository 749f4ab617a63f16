"""Typed exceptions that carry Pulsar's Java exception class and message text.

Models the exceptions of `BrokerServiceException`, `PulsarClientException`, `PulsarAdminException` (what the
broker's admin resources answer, `pulsarlab.broker.admin`) and the JDK ones Pulsar throws. Each Python class
records the fully-qualified Java class it stands for (``java_class``) and how Pulsar delivered it (``via``:
thrown, or a failed future) so conformance checks and learners see the same thing a Java caller would.
"""

from __future__ import annotations


class PulsarError(Exception):
    """Base of every error the model raises on purpose; ``str(e)`` is Pulsar's message text."""

    java_class = "java.lang.RuntimeException"

    def __init__(self, message: str, *, via: str = "throw") -> None:
        super().__init__(message)
        self.message = message
        self.via = via  # "throw" or "future"

    @property
    def wrapped_in(self) -> str | None:
        """The wrapper a Java caller sees when joining a failed future."""
        return "java.util.concurrent.CompletionException" if self.via == "future" else None

    def as_java(self) -> dict:
        """The error in the golden vectors' ERROR-object form."""
        return {
            "class": self.java_class,
            "message": self.message,
            "via": self.via,
            "wrapped_in": self.wrapped_in,
        }


class IllegalArgumentException(PulsarError, ValueError):
    java_class = "java.lang.IllegalArgumentException"


class IllegalStateException(PulsarError, RuntimeError):
    java_class = "java.lang.IllegalStateException"


class NullPointerException(PulsarError):
    java_class = "java.lang.NullPointerException"


class BrokerServiceException(PulsarError):
    java_class = "org.apache.pulsar.broker.service.BrokerServiceException"


def _broker(name: str) -> str:
    return f"org.apache.pulsar.broker.service.BrokerServiceException${name}"


class ConsumerAssignException(BrokerServiceException):
    java_class = _broker("ConsumerAssignException")


class ConsumerBusyException(BrokerServiceException):
    java_class = _broker("ConsumerBusyException")


class SubscriptionBusyException(BrokerServiceException):
    java_class = _broker("SubscriptionBusyException")


class ServerMetadataException(BrokerServiceException):
    java_class = _broker("ServerMetadataException")


class NotAllowedException(BrokerServiceException):
    java_class = _broker("NotAllowedException")


class ProducerBusyException(BrokerServiceException):
    java_class = _broker("ProducerBusyException")


class ProducerFencedException(BrokerServiceException):
    java_class = _broker("ProducerFencedException")


class NamingException(BrokerServiceException):
    java_class = _broker("NamingException")


class IncompatibleSchemaException(BrokerServiceException):
    java_class = "org.apache.pulsar.broker.service.schema.exceptions.IncompatibleSchemaException"


class PulsarClientException(PulsarError):
    java_class = "org.apache.pulsar.client.api.PulsarClientException"


class InvalidConfigurationException(PulsarClientException):
    java_class = "org.apache.pulsar.client.api.PulsarClientException$InvalidConfigurationException"


class InvalidMessageException(PulsarClientException):
    java_class = "org.apache.pulsar.client.api.PulsarClientException$InvalidMessageException"


class Timeout(PulsarClientException):
    """No message arrived in time (the Python client's ``pulsar.Timeout``)."""

    java_class = "org.apache.pulsar.client.api.PulsarClientException$TimeoutException"


def _admin(name: str) -> str:
    return f"org.apache.pulsar.client.admin.PulsarAdminException${name}"


class NotFoundException(PulsarError):
    """What pulsar-admin raises for a 404 answer (and the wire's ``TopicNotFound``)."""

    java_class = _admin("NotFoundException")


class ConflictException(PulsarError):
    """pulsar-admin's 409: the resource already exists, or is still in use."""

    java_class = _admin("ConflictException")


class PreconditionFailedException(PulsarError):
    """pulsar-admin's 412: a name or value the broker refuses."""

    java_class = _admin("PreconditionFailedException")


class BadRequestException(PulsarError):
    """What pulsar-admin raises for a 400 answer (a `PulsarAdminException` caused by JAX-RS's `BadRequestException`),
    e.g. an invalid retention policy."""

    java_class = "org.apache.pulsar.client.admin.PulsarAdminException"


class MethodNotAllowedException(PulsarError):
    """An admin operation Pulsar refuses for this kind of resource (HTTP 405)."""

    java_class = _admin("NotAllowedException")


def error_from_java(java_class: str) -> type[PulsarError]:
    """The model's exception class for a Java class name (used when reading recordings)."""
    for cls in _all_subclasses(PulsarError):
        if cls.java_class == java_class:
            return cls
    return PulsarError


def _all_subclasses(cls: type) -> list[type]:
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_all_subclasses(sub))
    return out
