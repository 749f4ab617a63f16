"""The namespace retention policy over the admin REST API (``/admin/v2/namespaces/{tenant}/{namespace}/retention``)
against ``lab.admin``, and consumed ledgers trimmed under real clients. Loopback only."""

from __future__ import annotations

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab, wait_until
from test_serve_admin_http import http

from pulsarlab.lab import PULSAR_RETENTION

pytestmark = pytest.mark.serve

PATH = "/admin/v2/namespaces/public/default/retention"


def test_get_set_remove_retention_as_pulsar_answers() -> None:
    with served_lab() as (lab, server):
        assert http(server, "GET", PATH) == (204, None)  # unset: null, which JAX-RS answers with 204
        assert http(server, "POST", PATH, {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1}) == (204, None)
        assert http(server, "GET", PATH) == (200, {"retentionTimeInMinutes": 60, "retentionSizeInMB": -1})
        with server.lock:
            assert lab.admin.namespaces.get_retention("public/default") == {
                "retentionTimeInMinutes": 60,
                "retentionSizeInMB": -1,
            }
        # a missing field is 0 (Jackson's default), unknown fields are ignored
        assert http(server, "POST", PATH, {"retentionTimeInMinutes": 0, "other": 1}) == (204, None)
        assert http(server, "GET", PATH) == (200, {"retentionTimeInMinutes": 0, "retentionSizeInMB": 0})
        assert http(server, "DELETE", PATH) == (204, None)
        assert http(server, "GET", PATH) == (204, None)


def test_invalid_retention_and_unknown_namespaces() -> None:
    with served_lab() as (lab, server):
        status, body = http(server, "POST", PATH, {"retentionTimeInMinutes": 10, "retentionSizeInMB": 0})
        assert status == 400 and body["reason"].startswith("Invalid retention policy: Setting a single time")
        status, body = http(server, "POST", PATH, {"retentionTimeInMinutes": -2, "retentionSizeInMB": 1})
        assert (status, body) == (400, {"reason": "Invalid retention policy: time limit must be >= -1"})
        status, body = http(server, "POST", PATH, {"retentionTimeInMinutes": "ten"})
        assert status == 400 and "retentionTimeInMinutes" in body["reason"]
        assert http(server, "GET", PATH) == (204, None)
        for method in ("GET", "POST", "DELETE"):
            status, body = http(server, method, "/admin/v2/namespaces/public/nope/retention", {})
            assert (status, body) == (404, {"reason": "Namespace does not exist"}), method


def test_consumed_ledgers_are_trimmed_under_real_clients_with_pulsars_defaults() -> None:
    conf = {**PULSAR_RETENTION, "managedLedgerMaxEntriesPerLedger": 10}
    with served_lab(broker_config=conf) as (lab, server), client_for(server) as client:
        topic = "persistent://public/default/trim"
        consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(25):
            producer.send(f"m{i}".encode())
        got = []
        for _ in range(25):
            msg = consumer.receive(timeout_millis=RECEIVE_MS * 50)
            got.append(msg.data())
            consumer.acknowledge(msg)
        assert got == [f"m{i}".encode() for i in range(25)]

        def one_ledger_left() -> bool:
            internal = http(server, "GET", "/admin/v2/persistent/public/default/trim/internalStats")[1]
            return len(internal["ledgers"]) == 1

        wait_until(one_ledger_left, what="the consumed ledgers to be trimmed")
        internal = http(server, "GET", "/admin/v2/persistent/public/default/trim/internalStats")[1]
        assert internal["entriesAddedCounter"] == 25
        assert internal["numberOfEntries"] == 5
        # a new subscription from the earliest position starts at the first entry left
        late = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
        assert late.receive(timeout_millis=RECEIVE_MS * 50).data() == b"m20"
