"""Schemas between the wire and the broker's registry: a `Schema` of PRODUCER, SUBSCRIBE or GET_OR_CREATE_SCHEMA as
the registry's `SchemaData`, and back for GET_SCHEMA; a schema version as the wire carries it.

Models `ServerCnx`'s schema conversions (`SchemaInfoUtil`, `Commands.getSchemaType`, and the 8-byte big-endian
`LongSchemaVersion`). Simplifies: a schema type the registry does not name travels as ``TYPE_<n>`` and comes back
as NONE.
"""

from __future__ import annotations

from pulsarlab.broker.schema_registry import SCHEMA_TYPES, SchemaData
from pulsarlab.serve.commands import KeyValue, SchemaInfo, SchemaKind


def model_schema(schema: SchemaInfo) -> SchemaData:
    """A wire `Schema` as the registry's `SchemaData` (type by Pulsar's name)."""
    kind = int(schema.type)
    name = SCHEMA_TYPES[kind] if 0 <= kind < len(SCHEMA_TYPES) else f"TYPE_{kind}"
    return SchemaData(name, bytes(schema.schema_data), {p.key: p.value for p in schema.properties})


def wire_schema(schema: SchemaData) -> SchemaInfo:
    kind = SCHEMA_TYPES.index(schema.type) if schema.type in SCHEMA_TYPES else 0
    return SchemaInfo(
        name=schema.type.lower(),
        schema_data=schema.data,
        type=SchemaKind(kind),
        properties=[KeyValue(k, v) for k, v in schema.properties.items()],
    )


def schema_version(number: int) -> bytes:
    """A schema version on the wire: 8 bytes, big-endian."""
    return number.to_bytes(8, "big", signed=True)


__all__ = ["model_schema", "schema_version", "wire_schema"]
