"""``lab.admin`` tenants, namespaces and the deduplication policy; subscription cursor moves (skip, skip all,
expire, reset by time and by message id) on the model, read back through ``stats-internal``."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.admin import ConflictException, NotFoundException, PreconditionFailedException
from pulsarlab.broker.service import MethodNotAllowedException


def _cursor(lab: pl.Lab, topic: str, sub: str) -> dict:
    return lab.admin.topics.stats_internal(topic)["cursors"][sub]


def _backlog(lab: pl.Lab, topic: str, sub: str) -> int:
    return lab.admin.topics.stats(topic)["subscriptions"][sub]["msgBacklog"]


def _published(lab: pl.Lab, topic: str, n: int, gap_ms: int = 0) -> list:
    producer = lab.client().create_producer(topic)
    ids = []
    for i in range(n):
        ids.append(producer.send(f"m{i}".encode()))
        if gap_ms:
            lab.advance(gap_ms)
    return ids


def test_tenants_create_get_delete() -> None:
    lab = pl.Lab()
    tenants = lab.admin.tenants
    assert tenants.list() == ["public"]
    tenants.create_tenant("acme", admin_roles=["ops"], allowed_clusters=["standalone"])
    assert tenants.list() == ["acme", "public"]
    assert tenants.get_tenant_info("acme") == {"adminRoles": ["ops"], "allowedClusters": ["standalone"]}
    assert lab.admin.namespaces.list("acme") == []
    with pytest.raises(ConflictException, match="Tenant already exist"):
        tenants.create_tenant("acme")
    with pytest.raises(PreconditionFailedException, match="Clusters can not be empty"):
        tenants.create_tenant("x", allowed_clusters=[])
    with pytest.raises(PreconditionFailedException, match="Clusters do not exist"):
        tenants.create_tenant("x", allowed_clusters=["elsewhere"])
    with pytest.raises(PreconditionFailedException, match="Tenant name is not valid"):
        tenants.create_tenant("a/b")
    with pytest.raises(NotFoundException, match="Tenant does not exist"):
        tenants.get_tenant_info("nobody")
    lab.admin.namespaces.create_namespace("acme/orders")
    with pytest.raises(ConflictException, match="still has active namespaces"):
        tenants.delete_tenant("acme")
    lab.admin.namespaces.delete_namespace("acme/orders")
    tenants.delete_tenant("acme")
    assert tenants.list() == ["public"]
    with pytest.raises(NotFoundException, match="Tenant doesn't exist"):
        tenants.delete_tenant("acme")


def test_namespaces_create_delete_and_deduplication_policy() -> None:
    lab = pl.Lab()
    ns = lab.admin.namespaces
    with pytest.raises(NotFoundException, match="Tenant does not exist"):
        ns.create_namespace("nobody/x")
    ns.create_namespace("public/orders")
    assert ns.list("public") == ["public/default", "public/orders"]
    with pytest.raises(ConflictException, match="Namespace already exists"):
        ns.create_namespace("public/orders")
    with pytest.raises(PreconditionFailedException, match="Namespace name is not valid"):
        ns.create_namespace("public/a b")
    assert ns.get_deduplication_status("public/orders") is None
    ns.set_deduplication_status("public/orders", True)
    assert ns.get_deduplication_status("public/orders") is True
    ns.remove_deduplication_status("public/orders")
    assert ns.get_deduplication_status("public/orders") is None
    lab.admin.topics.create_non_partitioned_topic("public/orders/t")
    with pytest.raises(ConflictException, match="Cannot delete non empty namespace"):
        ns.delete_namespace("public/orders")
    lab.admin.topics.delete("public/orders/t")
    ns.delete_namespace("public/orders")
    assert ns.list("public") == ["public/default"]
    with pytest.raises(NotFoundException, match="Namespace does not exist"):
        ns.delete_namespace("public/orders")
    with pytest.raises(NotFoundException, match="Namespace does not exist"):
        ns.get_deduplication_status("public/orders")


def test_skip_passes_over_individually_acked_entries_and_keeps_consumers() -> None:
    lab = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": 4})
    consumer = lab.client().subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, lab_ack_group_time_ms=0)
    ids = _published(lab, "t", 10)
    got = [consumer.receive(timeout_millis=0) for _ in range(10)]
    consumer.acknowledge(got[1])  # entries 1 and 2 acked individually: a hole after the mark-delete position
    consumer.acknowledge(got[2])
    lab.run_until_idle()
    assert _backlog(lab, "t", "s") == 8
    lab.admin.topics.skip_messages("t", "s", 3)  # entries 0, 3 and 4 (1 and 2 are already deleted)
    assert _cursor(lab, "t", "s")["markDeletePosition"] == f"{ids[4].ledger}:{ids[4].entry}"
    assert _backlog(lab, "t", "s") == 5
    assert lab.admin.topics.stats("t")["subscriptions"]["s"]["consumers"]  # still connected
    lab.admin.topics.skip_messages("t", "s", 1000)  # more than the backlog: up to the last entry
    assert _backlog(lab, "t", "s") == 0
    assert _cursor(lab, "t", "s")["markDeletePosition"] == f"{ids[-1].ledger}:{ids[-1].entry}"
    with pytest.raises(NotFoundException, match="Subscription not found"):
        lab.admin.topics.skip_messages("t", "nope", 1)
    with pytest.raises(NotFoundException, match="Topic not found"):
        lab.admin.topics.skip_messages("missing", "s", 1)


def test_skip_all_and_partitioned_rules() -> None:
    lab = pl.Lab()
    lab.admin.topics.create_partitioned_topic("p", 2)
    lab.admin.topics.create_subscription("p", "s", (-1, -1))
    producer = lab.client().create_producer("p", message_routing_mode=pl.PartitionsRoutingMode.RoundRobinDistribution)
    for i in range(6):
        producer.send(f"m{i}".encode())
    assert sum(_backlog(lab, f"p-partition-{i}", "s") for i in range(2)) == 6
    with pytest.raises(MethodNotAllowedException, match="Skip messages on a partitioned topic is not allowed"):
        lab.admin.topics.skip_messages("p", "s", 1)
    lab.admin.topics.skip_messages("p-partition-0", "s", 1)  # one partition is a topic of its own
    assert sum(_backlog(lab, f"p-partition-{i}", "s") for i in range(2)) == 5
    lab.admin.topics.skip_all_messages("p", "s")
    assert [_backlog(lab, f"p-partition-{i}", "s") for i in range(2)] == [0, 0]
    with pytest.raises(MethodNotAllowedException, match="not allowed for partitioned-topic"):
        lab.admin.topics.reset_cursor("p", "s", message_id=(-1, -1))


def test_expire_messages_acknowledges_what_is_older_than_the_ttl() -> None:
    lab = pl.Lab()
    lab.admin.topics.create_non_partitioned_topic("t")
    lab.admin.topics.create_subscription("t", "s", (-1, -1))
    ids = _published(lab, "t", 5, gap_ms=1000)  # published at 0, 1000, ..., 4000; now is 5000
    lab.admin.topics.expire_messages("t", "s", 10)
    assert _backlog(lab, "t", "s") == 5
    lab.admin.topics.expire_messages("t", "s", 2)  # expired: published before 3000, i.e. 0, 1000 and 2000
    assert _cursor(lab, "t", "s")["markDeletePosition"] == f"{ids[2].ledger}:{ids[2].entry}"
    lab.admin.topics.expire_messages("t", "s", 4)  # never moves back
    assert _backlog(lab, "t", "s") == 2
    lab.admin.topics.expire_messages("t", "s", 0)
    assert _backlog(lab, "t", "s") == 0


def test_reset_cursor_by_time_and_by_message_id_redelivers() -> None:
    lab = pl.Lab()
    consumer = lab.client().subscribe("t", "s", lab_ack_group_time_ms=0)
    ids = _published(lab, "t", 5, gap_ms=1000)
    for _ in range(5):
        consumer.acknowledge(consumer.receive(timeout_millis=0))
    lab.run_until_idle()
    assert _backlog(lab, "t", "s") == 0
    consumer.close()
    lab.admin.topics.reset_cursor("t", "s", 2000)  # the first message published at or after 2000 is m2
    assert _backlog(lab, "t", "s") == 3
    assert _cursor(lab, "t", "s")["readPosition"] == f"{ids[2].ledger}:{ids[2].entry}"
    lab.admin.topics.reset_cursor("t", "s", message_id=(ids[1].ledger, ids[1].entry))
    assert _backlog(lab, "t", "s") == 4
    lab.admin.topics.reset_cursor("t", "s", message_id=(ids[1].ledger, ids[1].entry), is_excluded=True)
    assert _backlog(lab, "t", "s") == 3
    again = lab.client().subscribe("t", "s")
    assert [again.receive(timeout_millis=0).data() for _ in range(3)] == [b"m2", b"m3", b"m4"]
    with pytest.raises(TypeError):
        lab.admin.topics.reset_cursor("t", "s")


def test_reset_cursor_with_a_grouped_ack_pending_lets_the_lab_idle() -> None:
    # the broker disconnects the consumer; its grouped ack cannot be sent, and the flush timer stops rather than
    # re-arming every group time (run_until_idle never returned); the ack stays pending, nothing is lost
    lab = pl.Lab()
    consumer = lab.client().subscribe("t", "s")
    ids = _published(lab, "t", 3, gap_ms=10)
    consumer.acknowledge(consumer.receive(timeout_millis=0))
    tracker = consumer.ack_tracker()
    assert len(tracker.pending_individual_acks) == 1
    lab.admin.topics.reset_cursor("t", "s", message_id=(ids[0].ledger, ids[0].entry))
    lab.scheduler.run_until_idle(max_timers=100)
    assert lab.scheduler.pending() == 0
    assert tracker.pending_individual_acks == (ids[0],) and tracker.lost_acks == 0
    assert _backlog(lab, "t", "s") == 3
