"""A producer's or consumer's schema on the lab's client: the real client's schema objects, duck-typed.

Models what the Python client does with ``schema=`` (``pulsar.schema.StringSchema()``, ``JsonSchema(Record)``,
``AvroSchema(Record)``, ...): PRODUCER and SUBSCRIBE carry the schema's info (type, definition), the broker keeps
it or refuses an incompatible one (`broker.schema_registry`: ``IncompatibleSchema``), ``send`` encodes values
with ``schema.encode`` and ``Message.value()`` decodes with ``schema.decode``. The lab imports no pulsar module:
any object with ``schema_info()`` (whose ``schema_type().name`` and ``schema()`` give the type and definition),
``encode`` and ``decode`` works. ``BytesSchema`` (the default) sends no schema, as the real client does.
"""

from __future__ import annotations

from typing import Protocol, TypeVar, cast

from pulsarlab.errors import PulsarClientException
from pulsarlab.protocol.schema import SchemaData

M = TypeVar("M", bound="HasData")


class HasData(Protocol):
    """A received message: ``data()`` is its payload."""

    def data(self) -> bytes: ...


_STRUCTURED = frozenset({"JSON", "AVRO", "PROTOBUF", "PROTOBUF_NATIVE", "KEY_VALUE"})


class SchemaInfo(Protocol):
    """What a schema's ``schema_info()`` gives: its type (an enum member, or anything whose ``str`` names it)
    and its definition."""

    def schema_type(self) -> object: ...

    def schema(self) -> str | bytes | None: ...


class Schema(Protocol):
    """A pulsar-client schema object (``pulsar.schema.Schema``): the lab uses these three methods."""

    def schema_info(self) -> SchemaInfo: ...

    def encode(self, obj: object) -> bytes: ...

    def decode(self, data: bytes) -> object: ...


class IncompatibleSchema(PulsarClientException):
    """The broker refused the schema (``ServerError.IncompatibleSchema``): ``pulsar.IncompatibleSchema``."""

    java_class = "org.apache.pulsar.client.api.PulsarClientException$IncompatibleSchemaException"


def schema_data(schema: object) -> SchemaData | None:
    """The `SchemaData` a client sends for ``schema``, None for no schema (None or BYTES)."""
    if schema is None:
        return None
    info_of = getattr(schema, "schema_info", None)
    if (
        info_of is None
        or not callable(getattr(schema, "encode", None))
        or not callable(getattr(schema, "decode", None))
    ):
        raise TypeError(f"schema must be a pulsar schema (schema_info, encode, decode), not {schema!r}")
    info: SchemaInfo = info_of()
    kind = getattr(info.schema_type(), "name", str(info.schema_type())).upper()
    if kind in ("BYTES", "NONE"):
        return None
    definition = info.schema()
    data = definition.encode("utf-8") if isinstance(definition, str) else bytes(definition or b"")
    if kind not in _STRUCTURED:
        data = b""  # primitive schemas carry no definition on the wire
    return SchemaData(kind, data)


def message_class(base: type[M], schema: Schema) -> type[M]:
    """A subclass of the client's Message whose ``value()`` decodes with ``schema`` (same slots, so a received
    message's class can be switched to it)."""

    def value(self: M) -> object:
        return schema.decode(self.data())

    return cast("type[M]", type(base.__name__, (base,), {"__slots__": (), "value": value}))


__all__ = ["IncompatibleSchema", "Schema", "SchemaInfo", "message_class", "schema_data"]
