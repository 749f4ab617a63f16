"""The broker's schema registry (`broker.schema_registry`): versions and compatibility strategies."""

from __future__ import annotations

import json

import pytest

import pulsarlab as pl
from pulsarlab.broker.schema_registry import SchemaData, SchemaRegistry, schema_id
from pulsarlab.broker.service import NotFoundException
from pulsarlab.errors import IncompatibleSchemaException

T = "persistent://public/default/t"


def _avro(*fields: dict, name: str = "User") -> SchemaData:
    return SchemaData("AVRO", json.dumps({"type": "record", "name": name, "fields": list(fields)}).encode())


NAME = {"name": "name", "type": ["null", "string"]}
AGE = {"name": "age", "type": "int"}
AGE_LONG = {"name": "age", "type": "long"}
EMAIL_DEFAULT = {"name": "email", "type": ["null", "string"], "default": None}
EMAIL = {"name": "email", "type": ["null", "string"]}


def test_same_schema_same_version_new_compatible_schema_next_version():
    reg = SchemaRegistry()
    assert reg.put_if_absent(T, _avro(NAME, AGE)) == 0
    assert reg.put_if_absent(T + "-partition-3", _avro(NAME, AGE)) == 0  # partitions share the topic's schemas
    assert reg.put_if_absent(T, _avro(NAME, AGE, EMAIL_DEFAULT)) == 1
    assert reg.put_if_absent(T, _avro(NAME, AGE)) == 0
    assert reg.get(T) == (1, _avro(NAME, AGE, EMAIL_DEFAULT))
    assert reg.get(T, 0)[1] == _avro(NAME, AGE)
    assert reg.get(T, 7) is None and reg.get("persistent://public/default/none") is None
    assert schema_id(T + "-partition-3") == T


def test_another_type_is_incompatible_with_pulsars_text():
    reg = SchemaRegistry()
    reg.put_if_absent(T, SchemaData("STRING"))
    with pytest.raises(
        IncompatibleSchemaException, match="Incompatible schema: exists schema type STRING, new schema type AVRO"
    ):
        reg.put_if_absent(T, _avro(NAME))


@pytest.mark.parametrize(
    ("strategy", "new", "ok"),
    [
        ("FULL", (NAME, AGE, EMAIL), False),  # a new field without a default: old data cannot be read
        ("BACKWARD", (NAME, AGE, EMAIL), False),
        ("FORWARD", (NAME, AGE, EMAIL), True),  # old readers ignore the new field
        ("BACKWARD", (NAME, AGE_LONG), True),  # int -> long is an Avro promotion
        ("FORWARD", (NAME, AGE_LONG), False),
        ("FULL", (NAME,), False),  # a removed field without a default: old readers miss it
        ("BACKWARD", (NAME,), True),
        ("ALWAYS_COMPATIBLE", ({"name": "x", "type": "int"},), True),
        ("ALWAYS_INCOMPATIBLE", (NAME, AGE, EMAIL_DEFAULT), False),
    ],
)
def test_strategies(strategy, new, ok):
    reg = SchemaRegistry(strategy)
    reg.put_if_absent(T, _avro(NAME, AGE))
    if ok:
        assert reg.put_if_absent(T, _avro(*new)) == 1
    else:
        with pytest.raises(IncompatibleSchemaException):
            reg.put_if_absent(T, _avro(*new))


def test_transitive_checks_every_version():
    reg = SchemaRegistry("BACKWARD_TRANSITIVE")
    reg.put_if_absent(T, _avro(NAME, AGE))
    reg.put_if_absent(T, _avro(NAME, AGE, EMAIL_DEFAULT))
    reg.put_if_absent(T, _avro(NAME, EMAIL_DEFAULT))  # drops age: readable by BACKWARD
    with pytest.raises(IncompatibleSchemaException):  # a required age, missing from version 2's data
        reg.put_if_absent(T, _avro(NAME, AGE, EMAIL_DEFAULT, name="Again"))
    assert SchemaRegistry("BACKWARD").put_if_absent(T, _avro(NAME)) == 0


def test_consumer_schema_is_the_first_only_on_an_idle_topic():
    lab = pl.Lab(version="4.0", seed=1)
    svc = lab.service
    svc.check_consumer_schema(T, SchemaData("STRING"))
    assert svc.get_schema(T) == (0, SchemaData("STRING"))
    with pytest.raises(IncompatibleSchemaException):
        svc.check_consumer_schema(T, SchemaData("JSON", b"{}"))
    other = "persistent://public/default/busy"
    lab.client().create_producer(other).send(b"bytes")
    svc.check_consumer_schema(other, SchemaData("STRING"))
    assert svc.get_schema(other) is None
    with pytest.raises(NotFoundException):
        svc.add_schema("persistent://nowhere/ns/t", SchemaData("STRING"))
    with pytest.raises(ValueError, match="unknown schemaCompatibilityStrategy"):
        SchemaRegistry("SOMETIMES")


def test_the_lab_client_takes_the_real_clients_schema_objects():
    from pulsar.schema import Integer, JsonSchema, Record, String, StringSchema

    from pulsarlab.client.schemas import IncompatibleSchema

    class User(Record):
        name = String()
        age = Integer()

    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    p = client.create_producer("t", schema=JsonSchema(User))
    c = client.subscribe("t", "s", schema=JsonSchema(User), initial_position=pl.InitialPosition.Earliest)
    p.send(User(name="ada", age=36))
    m = c.receive(1000)
    assert (m.value().name, m.value().age) == ("ada", 36)
    assert b'"ada"' in m.data()  # JSON on the topic, as the real client encodes it
    assert lab.service.get_schema(T)[1].type == "JSON"
    with pytest.raises(IncompatibleSchema, match="exists schema type JSON, new schema type STRING"):
        client.create_producer("t", schema=StringSchema())
    with pytest.raises(IncompatibleSchema):
        client.subscribe("t", "other", schema=StringSchema())
    client.create_producer("t").send(b"no schema: let in (schemaValidationEnforced is off)")
    with pytest.raises(TypeError, match="pulsar schema"):
        client.create_producer("t", schema="JSON")
