"""The admin REST API of `pulsarlab serve` through plain HTTP, against ``lab.admin``, and the real client's HTTP
lookup. Loopback only: every server binds free ports on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, quiet_client, served_lab, wait_until

from pulsarlab.serve import start
from pulsarlab.serve.admin_http import MAX_BODY

pytestmark = pytest.mark.serve

NS = "/admin/v2/persistent/public/default"


def http(server: Any, method: str, path: str, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    """(status, decoded JSON body or None) of one request to the server's admin port."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    req = urllib.request.Request(server.admin_url + path, method=method, data=data)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            status, text = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read()
    return status, json.loads(text) if text else None


def rest_and_admin(server: Any, path: str, call: Any, *args: Any) -> tuple[Any, Any]:
    """The REST answer and ``lab.admin``'s for one quiet moment: read REST, the model (locked), REST again, until
    the two REST reads agree (in-flight acks may land between reads); bounded."""
    for _ in range(50):
        status, first = http(server, "GET", path)
        assert status == 200, first
        with server.lock:
            expected = json.loads(json.dumps(call(*args)))
        if http(server, "GET", path)[1] == first:
            return first, expected
    raise AssertionError(f"{path} never stood still")


@pytest.fixture
def served():
    with served_lab() as (lab, server):
        yield lab, server


def test_admin_url_is_on_loopback_and_refuses_other_addresses() -> None:
    with served_lab() as (_, server):
        assert server.admin_url.startswith("http://127.0.0.1:")
        assert server.admin_url != server.url.replace("pulsar", "http")
    import pulsarlab as pl

    with pytest.raises(PermissionError):
        start(pl.Lab(), "0.0.0.0", 0, admin_port=0)
    off = start(pl.Lab(), "127.0.0.1", 0, admin_port=None)
    try:
        assert off.admin_url is None
    finally:
        off.stop()


def test_clusters_tenants_namespaces(served) -> None:
    lab, server = served
    assert http(server, "GET", "/admin/v2/clusters") == (200, ["standalone"])
    assert http(server, "GET", "/admin/v2/tenants") == (200, ["public"])
    assert http(server, "GET", "/admin/v2/namespaces/public") == (200, ["public/default"])
    assert http(server, "GET", "/admin/v2/namespaces/nobody") == (404, {"reason": "Tenant does not exist"})
    assert http(server, "PUT", "/admin/v2/persistent/acme/orders/t1") == (404, {"reason": "Namespace does not exist"})
    with server.lock:
        lab.admin.tenants.create_tenant("acme")
        lab.admin.namespaces.create_namespace("acme/orders")
    assert http(server, "PUT", "/admin/v2/persistent/acme/orders/t1")[0] == 204
    assert http(server, "GET", "/admin/v2/tenants") == (200, ["acme", "public"])
    assert http(server, "GET", "/admin/v2/namespaces/acme") == (200, ["acme/orders"])
    assert http(server, "GET", "/admin/v2/namespaces/acme/orders/topics") == (
        200,
        ["persistent://acme/orders/t1"],
    )
    assert http(server, "GET", "/admin/v2/persistent/acme/missing") == (404, {"reason": "Namespace does not exist"})
    with server.lock:
        assert lab.admin.tenants.list() == ["acme", "public"]


def test_non_partitioned_topic_create_list_delete(served) -> None:
    lab, server = served
    assert http(server, "PUT", f"{NS}/orders") == (204, None)
    assert http(server, "PUT", f"{NS}/orders") == (409, {"reason": "This topic already exists"})
    assert http(server, "GET", NS) == (200, ["persistent://public/default/orders"])
    assert http(server, "GET", f"{NS}/orders/partitions") == (200, {"partitions": 0})
    assert http(server, "DELETE", f"{NS}/orders") == (204, None)
    assert http(server, "DELETE", f"{NS}/orders") == (404, {"reason": "Topic not found"})
    assert http(server, "GET", NS) == (200, [])
    with server.lock:
        assert lab.admin.topics.list() == []


def test_partitioned_topic_create_update_metadata_delete(served) -> None:
    lab, server = served
    assert http(server, "PUT", f"{NS}/p/partitions", 2) == (204, None)
    assert http(server, "PUT", f"{NS}/p/partitions", 2) == (409, {"reason": "This topic already exists"})
    assert http(server, "GET", f"{NS}/p/partitions") == (200, {"partitions": 2})
    assert http(server, "POST", f"{NS}/p/partitions", 4) == (204, None)
    assert http(server, "GET", f"{NS}/p/partitions") == (200, {"partitions": 4})
    status, body = http(server, "POST", f"{NS}/p/partitions", 3)
    assert status == 409 and "can only be increased" in body["reason"]
    assert http(server, "POST", f"{NS}/nope/partitions", 3) == (404, {"reason": "Partitioned topic does not exist"})
    assert http(server, "PUT", f"{NS}/q/partitions", 0) == (
        412,
        {"reason": "The number of partitions must be more than 0"},
    )
    assert http(server, "GET", f"{NS}/partitioned") == (200, ["persistent://public/default/p"])
    rest, expected = rest_and_admin(server, NS, lab.admin.topics.list)
    assert rest == expected
    assert len(http(server, "GET", NS)[1]) == 4
    assert http(server, "DELETE", f"{NS}/p/partitions") == (204, None)
    assert http(server, "GET", f"{NS}/partitioned") == (200, [])
    assert http(server, "GET", NS) == (200, [])


def test_stats_json_equals_lab_admin_for_the_same_state(served) -> None:
    lab, server = served
    assert http(server, "PUT", f"{NS}/p/partitions", 2)[0] == 204
    with client_for(server) as client:
        consumer = client.subscribe("plain", "s1", consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer("plain")
        for i in range(5):
            producer.send(f"m{i}".encode())
        for _ in range(3):
            consumer.acknowledge(consumer.receive(RECEIVE_MS))
        pproducer = client.create_producer("p")
        for i in range(4):
            pproducer.send(f"k{i}".encode(), partition_key=f"key{i}")
        pconsumer = client.subscribe("p", "ps")
        for path, call, topic in (
            ("stats", lab.admin.topics.stats, "plain"),
            ("internalStats", lab.admin.topics.stats_internal, "plain"),
            ("partitioned-stats", lab.admin.topics.partitioned_stats, "p"),
            ("stats", lab.admin.topics.stats, "p-partition-1"),
        ):
            rest, expected = rest_and_admin(server, f"{NS}/{topic}/{path}", call, topic)
            assert rest == expected
        path = f"{NS}/p/partitioned-stats?perPartition=false"
        rest, expected = rest_and_admin(server, path, lab.admin.topics.partitioned_stats, "p", False)
        assert rest == expected and "partitions" not in rest
        assert http(server, "GET", f"{NS}/plain/stats")[1]["msgInCounter"] == 5
        pconsumer.close()
        consumer.close()
    assert http(server, "GET", f"{NS}/missing/stats") == (404, {"reason": "Topic not found"})
    assert http(server, "GET", f"{NS}/plain/partitioned-stats") == (404, {"reason": "Partitioned Topic not found"})


def test_subscriptions_list_create_at_a_position_delete(served) -> None:
    lab, server = served
    with client_for(server) as client:
        producer = client.create_producer("subs")
        ids = [producer.send(f"m{i}".encode()) for i in range(4)]
        assert http(server, "PUT", f"{NS}/subs/subscription/latest") == (204, None)
        assert http(server, "PUT", f"{NS}/subs/subscription/first", {"ledgerId": -1, "entryId": -1}) == (204, None)
        at = {"ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id()}
        assert http(server, "PUT", f"{NS}/subs/subscription/third", at) == (204, None)
        assert http(server, "PUT", f"{NS}/subs/subscription/third") == (
            409,
            {"reason": "Subscription already exists for topic"},
        )
        assert sorted(http(server, "GET", f"{NS}/subs/subscriptions")[1]) == ["first", "latest", "third"]
        backlog = {s: v["msgBacklog"] for s, v in http(server, "GET", f"{NS}/subs/stats")[1]["subscriptions"].items()}
        assert backlog == {"latest": 0, "first": 4, "third": 2}
        consumer = client.subscribe("subs", "third")
        assert consumer.receive(RECEIVE_MS).data() == b"m2"
        assert http(server, "DELETE", f"{NS}/subs/subscription/third") == (
            412,
            {"reason": "Subscription has active connected consumers"},
        )
        consumer.close()
        assert http(server, "DELETE", f"{NS}/subs/subscription/third") == (204, None)
        assert http(server, "DELETE", f"{NS}/subs/subscription/third") == (404, {"reason": "Subscription not found"})
        status, body = http(server, "DELETE", f"{NS}/subs")
        assert (status, body) == (412, {"reason": "Topic has active producers/subscriptions"})
        producer.close()
    with server.lock:
        assert sorted(lab.admin.topics.subscriptions("subs")) == ["first", "latest"]
    assert http(server, "DELETE", f"{NS}/subs") == (204, None)


def test_bad_input_gets_pulsar_statuses_and_the_server_keeps_serving(served) -> None:
    _, server = served
    assert http(server, "GET", "/admin/v2/no/such/path/at/all") == (404, {"reason": "Not Found"})
    assert http(server, "POST", "/admin/v2/clusters") == (405, {"reason": "Method Not Allowed"})
    assert http(server, "PATCH", f"{NS}/t/partitions", 2) == (405, {"reason": "Method Not Allowed"})
    status, body = http(server, "PUT", f"{NS}/t/partitions", raw=b"{not json")
    assert status == 400 and body["reason"].startswith("Cannot parse the request body as JSON")
    status, body = http(server, "PUT", f"{NS}/t/partitions", "four")
    assert status == 400 and "must be a JSON integer" in body["reason"]
    status, body = http(server, "PUT", f"{NS}/t/subscription/s", [1, 2])
    assert status == 400
    status, body = http(server, "PUT", f"{NS}/t/partitions", raw=b"1" * (MAX_BODY + 1))
    assert status == 413 and body == {"reason": "Request Entity Too Large"}
    status, body = http(server, "GET", f"{NS}/t/partitioned-stats?perPartition=maybe")
    assert status == 400
    status, body = http(server, "PUT", f"{NS}/x-partition-1/partitions", 2)
    assert status == 412 and "-partition-" in body["reason"]
    # garbage that is not HTTP at all, then a half-sent request: answered or dropped, never fatal
    host, port = server.admin_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"\x00\x01garbage\r\n\r\n")
        assert s.recv(100).split(b"\r\n")[0].endswith(b" 400 Bad Request")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"PUT " + NS.encode() + b"/t HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
    assert http(server, "GET", "/admin/v2/clusters") == (200, ["standalone"])
    assert http(server, "PUT", f"{NS}/t/partitions", 2) == (204, None)
    assert http(server, "GET", f"{NS}/t/partitions") == (200, {"partitions": 2})


def test_lookup_answers_both_broker_urls(served) -> None:
    _, server = served
    status, body = http(server, "GET", "/lookup/v2/topic/persistent/public/default/any")
    assert status == 200
    assert body == {
        "brokerUrl": server.url,
        "brokerUrlTls": "",
        "httpUrl": server.admin_url,
        "httpUrlTls": "",
        "nativeUrl": server.url,
    }


def test_the_real_client_over_http_lookup_produces_and_consumes(served) -> None:
    lab, server = served
    assert http(server, "PUT", f"{NS}/hp/partitions", 2) == (204, None)
    client = quiet_client(server.admin_url)
    try:
        consumer = client.subscribe("plain-http", "s")
        producer = client.create_producer("plain-http")
        producer.send(b"over http lookup")
        msg = consumer.receive(RECEIVE_MS)
        assert msg.data() == b"over http lookup"
        consumer.acknowledge(msg)
        assert client.get_topic_partitions("hp") == [
            "persistent://public/default/hp-partition-0",
            "persistent://public/default/hp-partition-1",
        ]
        pconsumer = client.subscribe("hp", "s")
        pproducer = client.create_producer("hp")
        for i in range(4):
            pproducer.send(f"p{i}".encode(), partition_key=f"k{i}")
        got = sorted(pconsumer.receive(RECEIVE_MS).data() for _ in range(4))
        assert got == [b"p0", b"p1", b"p2", b"p3"]
    finally:
        client.close()
    with server.lock:
        assert lab.admin.topics.stats("plain-http")["msgInCounter"] == 1
        assert lab.admin.topics.partitioned_stats("hp")["msgInCounter"] == 4


def test_tenants_and_namespaces_create_get_delete_as_lab_admin(served) -> None:
    lab, server = served
    info = {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    assert http(server, "PUT", "/admin/v2/tenants/acme", info) == (204, None)
    assert http(server, "PUT", "/admin/v2/tenants/acme", info) == (409, {"reason": "Tenant already exist"})
    assert http(server, "GET", "/admin/v2/tenants/acme") == (200, info)
    assert http(server, "GET", "/admin/v2/tenants/nobody") == (404, {"reason": "Tenant does not exist"})
    assert http(server, "PUT", "/admin/v2/tenants/x") == (412, {"reason": "Clusters can not be empty"})
    status, body = http(server, "PUT", "/admin/v2/tenants/x", {"allowedClusters": ["mars"]})
    assert status == 412 and body["reason"].startswith("Clusters do not exist")
    assert http(server, "PUT", "/admin/v2/tenants/a%20b", info) == (412, {"reason": "Tenant name is not valid"})
    assert http(server, "GET", "/admin/v2/namespaces/acme") == (200, [])
    assert http(server, "PUT", "/admin/v2/namespaces/acme/orders") == (204, None)
    assert http(server, "PUT", "/admin/v2/namespaces/acme/orders") == (409, {"reason": "Namespace already exists"})
    assert http(server, "PUT", "/admin/v2/namespaces/nobody/x") == (404, {"reason": "Tenant does not exist"})
    assert http(server, "GET", "/admin/v2/persistent/acme/orders") == (200, [])
    rest, expected = rest_and_admin(server, "/admin/v2/namespaces/acme", lab.admin.namespaces.list, "acme")
    assert rest == expected == ["acme/orders"]
    rest, expected = rest_and_admin(server, "/admin/v2/tenants/acme", lab.admin.tenants.get_tenant_info, "acme")
    assert rest == expected
    assert http(server, "DELETE", "/admin/v2/tenants/acme") == (
        409,
        {"reason": "The tenant still has active namespaces"},
    )
    assert http(server, "PUT", "/admin/v2/persistent/acme/orders/t1") == (204, None)
    assert http(server, "DELETE", "/admin/v2/namespaces/acme/orders") == (
        409,
        {"reason": "Cannot delete non empty namespace"},
    )
    assert http(server, "DELETE", "/admin/v2/persistent/acme/orders/t1") == (204, None)
    assert http(server, "DELETE", "/admin/v2/namespaces/acme/orders?force=true")[0] == 405
    assert http(server, "DELETE", "/admin/v2/namespaces/acme/orders") == (204, None)
    assert http(server, "DELETE", "/admin/v2/namespaces/acme/orders") == (404, {"reason": "Namespace does not exist"})
    assert http(server, "DELETE", "/admin/v2/tenants/acme") == (204, None)
    assert http(server, "DELETE", "/admin/v2/tenants/acme") == (404, {"reason": "Tenant doesn't exist"})
    with server.lock:
        assert lab.admin.tenants.list() == ["public"]


def test_namespace_deduplication_policy(served) -> None:
    lab, server = served
    path = "/admin/v2/namespaces/public/default/deduplication"
    assert http(server, "GET", path) == (204, None)  # not set: JAX-RS answers a null entity with 204
    assert http(server, "POST", path, True) == (204, None)
    assert http(server, "GET", path) == (200, True)
    with server.lock:
        assert lab.admin.namespaces.get_deduplication_status("public/default") is True
    assert http(server, "POST", path, False) == (204, None)
    assert http(server, "GET", path) == (200, False)
    assert http(server, "DELETE", path) == (204, None)
    assert http(server, "GET", path) == (204, None)
    status, body = http(server, "POST", path, "yes")
    assert status == 400 and "true or false" in body["reason"]
    assert http(server, "GET", "/admin/v2/namespaces/public/nope/deduplication") == (
        404,
        {"reason": "Namespace does not exist"},
    )


def _cursor_rest_and_admin(server: Any, lab: Any, topic: str, sub: str) -> tuple[Any, Any]:
    rest, expected = rest_and_admin(server, f"{NS}/{topic}/internalStats", lab.admin.topics.stats_internal, topic)
    return rest["cursors"][sub], expected["cursors"][sub]


def test_skip_skip_all_expire_and_reset_cursor_over_http(served) -> None:
    lab, server = served
    sub_path = f"{NS}/moves/subscription/s"
    with client_for(server) as client:
        consumer = client.subscribe("moves", "s", consumer_type=pulsar.ConsumerType.Shared)
        producer = client.create_producer("moves", batching_enabled=False)
        ids = [producer.send(f"m{i}".encode()) for i in range(6)]
        got = [consumer.receive(RECEIVE_MS) for _ in range(6)]
        consumer.acknowledge(got[1])
        wait_until(lambda: http(server, "GET", f"{NS}/moves/stats")[1]["subscriptions"]["s"]["msgBacklog"] == 5)
        assert http(server, "POST", f"{sub_path}/skip/2") == (204, None)  # m0 and m2 (m1 is acked)
        rest, expected = _cursor_rest_and_admin(server, lab, "moves", "s")
        assert rest == expected and rest["markDeletePosition"] == f"{ids[2].ledger_id()}:{ids[2].entry_id()}"
        assert http(server, "GET", f"{NS}/moves/stats")[1]["subscriptions"]["s"]["msgBacklog"] == 3
        assert http(server, "POST", f"{sub_path}/skip_all") == (204, None)
        assert http(server, "GET", f"{NS}/moves/stats")[1]["subscriptions"]["s"]["msgBacklog"] == 0
        # reset by publish time (wall clock ms): the consumer is disconnected, reconnects and gets m3 again
        # (several messages may share m3's millisecond: the first published at or after it comes first)
        at = got[3].publish_timestamp()
        first = next(i for i, m in enumerate(got) if m.publish_timestamp() >= at)
        assert http(server, "POST", f"{sub_path}/resetcursor/{at}") == (204, None)
        again = [consumer.receive(RECEIVE_MS).data() for _ in range(6 - first)]
        assert again == [m.data() for m in got[first:]] and first <= 3
        body = {"ledgerId": ids[4].ledger_id(), "entryId": ids[4].entry_id(), "isExcluded": True}
        assert http(server, "POST", f"{sub_path}/resetcursor", body) == (204, None)
        assert consumer.receive(RECEIVE_MS).data() == b"m5"
        rest, expected = _cursor_rest_and_admin(server, lab, "moves", "s")
        assert rest == expected and rest["readPosition"] == f"{ids[5].ledger_id()}:{ids[5].entry_id() + 1}"
        # expire: nothing is an hour old; everything published before now is expired with a TTL of 0
        assert http(server, "POST", f"{sub_path}/expireMessages/3600") == (204, None)
        assert http(server, "GET", f"{NS}/moves/stats")[1]["subscriptions"]["s"]["msgBacklog"] == 1  # m5
        time.sleep(0.005)  # the publish times must be strictly in the past
        assert http(server, "POST", f"{NS}/moves/all_subscription/expireMessages/0") == (204, None)
        assert http(server, "GET", f"{NS}/moves/stats")[1]["subscriptions"]["s"]["msgBacklog"] == 0
        rest, expected = _cursor_rest_and_admin(server, lab, "moves", "s")
        assert rest == expected
        consumer.close()
        producer.close()


def test_cursor_moves_refuse_what_pulsar_refuses(served) -> None:
    _, server = served
    assert http(server, "PUT", f"{NS}/pm/partitions", 2) == (204, None)
    assert http(server, "PUT", f"{NS}/pm/subscription/s", {"ledgerId": -1, "entryId": -1}) == (204, None)
    assert http(server, "POST", f"{NS}/pm/subscription/s/skip/1") == (
        405,
        {"reason": "Skip messages on a partitioned topic is not allowed"},
    )
    assert http(server, "POST", f"{NS}/pm/subscription/s/resetcursor", {"ledgerId": 1, "entryId": 0}) == (
        405,
        {"reason": "Reset-cursor at position is not allowed for partitioned-topic"},
    )
    assert http(server, "POST", f"{NS}/pm/subscription/s/skip_all") == (204, None)
    assert http(server, "POST", f"{NS}/pm/subscription/s/resetcursor/0") == (204, None)
    assert http(server, "POST", f"{NS}/pm/subscription/s/expireMessages/10") == (204, None)
    assert http(server, "POST", f"{NS}/pm/all_subscription/expireMessages/10") == (204, None)
    assert http(server, "POST", f"{NS}/none/all_subscription/expireMessages/10") == (404, {"reason": "Topic not found"})
    assert http(server, "POST", f"{NS}/pm/subscription/nope/skip_all") == (404, {"reason": "Subscription not found"})
    assert http(server, "POST", f"{NS}/none/subscription/s/skip/1") == (404, {"reason": "Topic not found"})
    assert http(server, "POST", f"{NS}/pm/subscription/s/skip/ten")[0] == 404  # not an int: no such resource
    assert http(server, "GET", f"{NS}/pm/subscription/s/skip_all") == (405, {"reason": "Method Not Allowed"})
    status, body = http(server, "POST", f"{NS}/pm-partition-0/subscription/s/resetcursor", raw=b"{oops")
    assert status == 400 and body["reason"].startswith("Cannot parse the request body as JSON")
    body = {"ledgerId": 1, "entryId": 0, "isExcluded": "yes"}
    assert http(server, "POST", f"{NS}/pm-partition-0/subscription/s/resetcursor", body)[0] == 400
    status, body = http(server, "PUT", "/admin/v2/tenants/big", raw=b" " * (MAX_BODY + 1))
    assert status == 413
    assert http(server, "PUT", "/admin/v2/tenants/t", ["standalone"])[0] == 400
    assert http(server, "PUT", "/admin/v2/tenants/t", {"allowedClusters": "standalone"})[0] == 400
    assert http(server, "DELETE", "/admin/v2/tenants/public?force=true") == (
        405,
        {"reason": "Broker doesn't allow forced deletion of tenants"},
    )
    assert http(server, "GET", "/admin/v2/clusters") == (200, ["standalone"])


def test_compaction_trigger_and_status(served) -> None:
    lab, server = served
    assert http(server, "PUT", f"{NS}/c") == (204, None)
    status, before = http(server, "GET", f"{NS}/c/compaction")
    assert status == 200 and set(before) == {"status", "lastError"}
    assert http(server, "PUT", f"{NS}/c/compaction") == (204, None)
    wait_until(lambda: http(server, "GET", f"{NS}/c/compaction")[1]["status"] in ("SUCCESS", "ERROR"))
    assert http(server, "GET", f"{NS}/c/compaction")[1]["status"] == "SUCCESS"


def test_a_path_number_past_javas_int_or_long_matches_no_resource(served) -> None:
    """``skip/{n}`` and ``expireMessages/{seconds}`` are Java ``int`` path parameters, ``resetcursor/{timestamp}`` a
    ``long``: one past the type's largest value matches no resource (404, as JAX-RS answers); the largest is taken."""
    _, server = served
    sub_path = f"{NS}/big/subscription/s"
    assert http(server, "PUT", f"{NS}/big") == (204, None)
    assert http(server, "PUT", sub_path) == (204, None)
    assert http(server, "POST", f"{sub_path}/skip/{2**31 - 1}") == (204, None)
    assert http(server, "POST", f"{sub_path}/skip/{2**31}")[0] == 404
    assert http(server, "POST", f"{sub_path}/expireMessages/{2**31 - 1}") == (204, None)
    assert http(server, "POST", f"{sub_path}/expireMessages/{2**31}")[0] == 404
    assert http(server, "POST", f"{NS}/big/all_subscription/expireMessages/{2**31}")[0] == 404
    assert http(server, "POST", f"{sub_path}/resetcursor/{2**63}")[0] == 404
