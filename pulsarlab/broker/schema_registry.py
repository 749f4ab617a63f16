"""Topic schemas: the versions a topic has, and whether a new one is compatible.

Models `SchemaRegistryServiceImpl` with the broker's ``schemaCompatibilityStrategy`` (``FULL`` by default): a
producer (or GET_OR_CREATE_SCHEMA) with a schema the topic already has gets that version; a new one is checked
against the latest version (every version for the ``*_TRANSITIVE`` strategies) and stored as the next version,
or refused with `IncompatibleSchemaException` - "Incompatible schema: exists schema type X, new schema type Y"
for another type, Avro's "Unable to read schema" for a record that cannot be read. A consumer's schema is
checked the same way once the topic has one, and becomes the topic's first schema if the topic is idle
(`addSchemaIfIdleOrCheckCompatible`). Schemas belong to the topic name without its ``-partition-N`` suffix,
so the partitions of a topic share them. Versions count from 0 (8 bytes big-endian on the wire).

Simplifies: the AVRO/JSON check compares record fields (added or removed fields need defaults, a field keeps
its type up to Avro's promotions and unions) instead of running Avro's full resolver; other types of the same
kind are always compatible (Pulsar's default check); schemas are never deleted.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pulsarlab.errors import IncompatibleSchemaException
from pulsarlab.protocol.schema import SCHEMA_TYPES, SchemaData

STRATEGIES = frozenset(
    {
        "ALWAYS_COMPATIBLE",
        "ALWAYS_INCOMPATIBLE",
        "BACKWARD",
        "FORWARD",
        "FULL",
        "BACKWARD_TRANSITIVE",
        "FORWARD_TRANSITIVE",
        "FULL_TRANSITIVE",
    }
)
_PROMOTIONS = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"), ("long", "double")}
_PROMOTIONS |= {("float", "double"), ("string", "bytes"), ("bytes", "string")}
_PARTITION = re.compile(r"-partition-\d+$")


def schema_id(topic: str) -> str:
    """The registry key of a topic: its name without the partition suffix."""
    return _PARTITION.sub("", topic)


def _record(schema: SchemaData) -> dict[str, Any] | None:
    if schema.type not in ("AVRO", "JSON"):
        return None
    try:
        parsed = json.loads(schema.data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return parsed if isinstance(parsed, dict) and parsed.get("type") == "record" else None


def _type_key(t: Any) -> Any:
    return json.dumps(t, sort_keys=True)


def _type_readable(reader: Any, writer: Any) -> bool:
    """Whether data written as ``writer`` reads as ``reader`` (Avro's rules, for the common cases)."""
    if _type_key(reader) == _type_key(writer):
        return True
    if isinstance(reader, str) and isinstance(writer, str):
        return (writer, reader) in _PROMOTIONS
    if isinstance(writer, list):
        return all(_type_readable(reader, w) for w in writer)
    if isinstance(reader, list):
        return any(_type_readable(r, writer) for r in reader)
    if isinstance(reader, dict) and isinstance(writer, dict):
        if reader.get("type") == writer.get("type") == "record":
            return _record_readable(reader, writer) is None
    return False


def _record_readable(reader: dict[str, Any], writer: dict[str, Any]) -> str | None:
    """None if records written with ``writer`` read with ``reader``, else why not."""
    written = {f.get("name"): f for f in writer.get("fields", []) if isinstance(f, dict)}
    for f in reader.get("fields", []):
        if not isinstance(f, dict):
            continue
        w = written.get(f.get("name"))
        if w is None:
            if "default" not in f:
                return f"field {f.get('name')!r} is missing and has no default"
        elif not _type_readable(f.get("type"), w.get("type")):
            return f"field {f.get('name')!r} changed type"
    return None


def _unreadable(reader: SchemaData, writer: SchemaData) -> str | None:
    r, w = _record(reader), _record(writer)
    if r is None or w is None:
        return None
    why = _record_readable(r, w)
    if why is None:
        return None
    return (
        "org.apache.avro.SchemaValidationException: Unable to read schema: \n"
        f"{writer.data.decode('utf-8', 'replace')}\nusing schema:\n{reader.data.decode('utf-8', 'replace')} ({why})"
    )


def check_compatible(existing: SchemaData, new: SchemaData, strategy: str) -> None:
    """`checkCompatible` of one existing version; raises `IncompatibleSchemaException`."""
    if new.type != existing.type:
        raise IncompatibleSchemaException(
            f"Incompatible schema: exists schema type {existing.type}, new schema type {new.type}"
        )
    if new.data == existing.data or strategy == "ALWAYS_COMPATIBLE":
        return
    if strategy == "ALWAYS_INCOMPATIBLE":
        raise IncompatibleSchemaException(f"Schema compatibility strategy is {strategy}")
    base = strategy.removesuffix("_TRANSITIVE")
    problem = None
    if base in ("BACKWARD", "FULL"):
        problem = _unreadable(new, existing)  # the new schema reads what was written
    if problem is None and base in ("FORWARD", "FULL"):
        problem = _unreadable(existing, new)  # readers with the old schema read what will be written
    if problem is not None:
        raise IncompatibleSchemaException(problem)


class SchemaRegistry:
    """Every topic's schema versions (`SchemaRegistryService`)."""

    def __init__(self, strategy: str = "FULL") -> None:
        if strategy not in STRATEGIES:
            raise ValueError(
                f"unknown schemaCompatibilityStrategy {strategy!r}; one of {', '.join(sorted(STRATEGIES))}"
            )
        self.strategy = strategy
        self._versions: dict[str, list[SchemaData]] = {}

    def delete(self, topic: str) -> None:
        """`deleteSchema`: the topic is deleted, and its schema versions with it."""
        self._versions.pop(schema_id(topic), None)

    def versions(self, topic: str) -> list[SchemaData]:
        return list(self._versions.get(schema_id(topic), ()))

    def get(self, topic: str, version: int | None = None) -> tuple[int, SchemaData] | None:
        """The latest version (or ``version``) of the topic's schema, None if there is none."""
        found = self._versions.get(schema_id(topic))
        if not found:
            return None
        if version is None:
            return len(found) - 1, found[-1]
        if 0 <= version < len(found):
            return version, found[version]
        return None

    def _check(self, found: list[SchemaData], schema: SchemaData) -> None:
        against = found if self.strategy.endswith("_TRANSITIVE") else found[-1:]
        for existing in reversed(against):
            check_compatible(existing, schema, self.strategy)

    def put_if_absent(self, topic: str, schema: SchemaData) -> int:
        """`putSchemaIfAbsent`: the version of ``schema`` on the topic, stored as a new one if compatible."""
        found = self._versions.setdefault(schema_id(topic), [])
        for i, existing in enumerate(found):
            if existing.type == schema.type and existing.data == schema.data:
                return i
        if found:
            self._check(found, schema)
        found.append(schema)
        return len(found) - 1

    def check_consumer(self, topic: str, schema: SchemaData, idle: bool) -> None:
        """`addSchemaIfIdleOrCheckCompatible` for a consumer's schema."""
        found = self._versions.get(schema_id(topic))
        if not found:
            if idle:
                self.put_if_absent(topic, schema)
            return
        if any(e.type == schema.type and e.data == schema.data for e in found):
            return
        self._check(found, schema)


__all__ = ["SCHEMA_TYPES", "STRATEGIES", "SchemaData", "SchemaRegistry", "check_compatible", "schema_id"]
