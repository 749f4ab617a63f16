"""Advertised listeners: a real client's ``listener_name`` against ``pulsarlab serve``."""

from __future__ import annotations

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab

from pulsarlab.serve.server import parse_advertised_listeners

pytestmark = pytest.mark.serve


def test_an_unknown_listener_name_fails_the_lookup():
    with served_lab() as (lab, server), client_for(server, listener_name="test") as client:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer("persistent://public/default/l")
        with server.lock:
            assert "persistent://public/default/l" not in lab.service.topics  # no PRODUCER reached the broker


def test_a_known_listener_name_gets_its_url():
    with served_lab() as (lab, server):
        server.server.advertised_listeners["internal"] = server.url  # the port is known once listening
        with client_for(server, listener_name="internal") as client:
            p = client.create_producer("persistent://public/default/l")
            c = client.subscribe("persistent://public/default/l", "s")
            p.send(b"via the internal listener")
            assert c.receive(RECEIVE_MS).data() == b"via the internal listener"


def test_parse_advertised_listeners():
    assert parse_advertised_listeners("a:pulsar://h:1, b:pulsar://k:2") == {"a": "pulsar://h:1", "b": "pulsar://k:2"}
    assert parse_advertised_listeners(None) == {}
    with pytest.raises(ValueError, match="pulsar:// URL"):
        parse_advertised_listeners("a:http://h:1")
    with pytest.raises(ValueError, match="name:pulsar://host:port"):
        parse_advertised_listeners("nocolon")


def test_the_serve_command_refuses_a_bad_listener_before_listening(capsys):
    from pulsarlab.cli import main

    code = main(["serve", "--port", "0", "--no-admin", "--advertised-listeners", "internal:http://127.0.0.1:1"])
    assert code == 1
    assert "advertised listener 'internal': a pulsar:// URL" in capsys.readouterr().err
