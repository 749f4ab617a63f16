"""Topic schemas with the real pulsar-client against ``pulsarlab serve``: the first schema is stored, a compatible
one becomes a new version, an incompatible producer is refused (IncompatibleSchema), consumers decode with it."""

from __future__ import annotations

import pulsar
import pytest
from pulsar.schema import AvroSchema, Float, Integer, JsonSchema, Record, String, StringSchema
from serve_support import RECEIVE_MS, client_for, served_lab

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/typed"


class User(Record):
    name = String()
    age = Integer()


class UserWithEmail(Record):  # a field with a default (null): FULL-compatible with User
    name = String()
    age = Integer()
    email = String(required_default=True)


class UserNoAge(Record):  # drops a field without a default: not readable by User readers
    name = String(required=True)
    score = Float(required=True)


def test_first_schema_is_stored_and_consumers_decode_with_it():
    with served_lab() as (lab, server), client_for(server) as client:
        p = client.create_producer(TOPIC, schema=JsonSchema(User))
        c = client.subscribe(TOPIC, "s", schema=JsonSchema(User))
        p.send(User(name="ada", age=36))
        m = c.receive(RECEIVE_MS)
        assert (m.value().name, m.value().age) == ("ada", 36)
        with server.lock:
            version, stored = lab.service.get_schema(TOPIC)
        assert version == 0 and stored.type == "JSON"
        assert b'"name": "User"' in stored.data or b'"name":"User"' in stored.data


def test_another_schema_type_is_refused_with_incompatible_schema():
    with served_lab() as (lab, server), client_for(server) as client:
        client.create_producer(TOPIC, schema=StringSchema())
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(TOPIC, schema=JsonSchema(User))
        with pytest.raises(pulsar.IncompatibleSchema):
            client.subscribe(TOPIC, "s", schema=JsonSchema(User))
        client.create_producer(TOPIC).send(b"a producer without a schema is let in")


def test_compatible_evolution_is_a_new_version_incompatible_is_refused():
    with served_lab() as (lab, server), client_for(server) as client:
        p1 = client.create_producer(TOPIC, schema=AvroSchema(User))
        p2 = client.create_producer(TOPIC, schema=AvroSchema(UserWithEmail))
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(TOPIC, schema=AvroSchema(UserNoAge))
        with server.lock:
            assert [s.type for s in lab.service.schemas.versions(TOPIC)] == ["AVRO", "AVRO"]
        c = client.subscribe(
            TOPIC, "s", schema=AvroSchema(UserWithEmail), initial_position=pulsar.InitialPosition.Earliest
        )
        p1.send(User(name="old", age=1))
        p2.send(UserWithEmail(name="new", age=2, email="n@x"))
        got = [c.receive(RECEIVE_MS).value() for _ in range(2)]
        assert [(u.name, u.email) for u in got] == [("old", None), ("new", "n@x")]


def test_schemas_belong_to_the_partitioned_topic():
    with served_lab() as (lab, server), client_for(server) as client:
        with server.lock:
            lab.admin.topics.create_partitioned_topic("persistent://public/default/parts", 2)
        client.create_producer("persistent://public/default/parts", schema=StringSchema())
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer("persistent://public/default/parts-partition-1", schema=JsonSchema(User))
