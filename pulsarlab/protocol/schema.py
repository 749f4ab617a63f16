"""A schema as PRODUCER, SUBSCRIBE and GET_SCHEMA carry it (`Schema`): its type and definition."""

from __future__ import annotations

from dataclasses import dataclass, field

# Schema.Type's wire numbers -> Pulsar's SchemaType names
SCHEMA_TYPES = (
    "NONE",
    "STRING",
    "JSON",
    "PROTOBUF",
    "AVRO",
    "BOOLEAN",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "FLOAT",
    "DOUBLE",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "KEY_VALUE",
    "INSTANT",
    "LOCAL_DATE",
    "LOCAL_TIME",
    "LOCAL_DATE_TIME",
    "PROTOBUF_NATIVE",
)


@dataclass(frozen=True)
class SchemaData:
    """`SchemaData`: a schema's type name (``SCHEMA_TYPES``), definition and properties."""

    type: str
    data: bytes = b""
    properties: dict[str, str] = field(default_factory=dict)

    def __hash__(self) -> int:  # SchemaHash: type and data
        return hash((self.type, self.data))


__all__ = ["SCHEMA_TYPES", "SchemaData"]
