"""Inactive topic deletion (`broker.inactive_topics`: `BrokerService.checkGC`, `PersistentTopic.checkGC`)."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.broker.service import NotFoundException
from pulsarlab.lab import PULSAR_RETENTION, SERVE_BROKER_CONFIG
from pulsarlab.protocol.schema import SchemaData

NS = "public/default"


def _lab(**config):
    lab = pl.Lab(version="4.0", seed=1, broker_config={**PULSAR_RETENTION, **config})
    return lab, lab.client()


def _deleted(lab):
    return [(e.time, e.fields["name"].rsplit("/", 1)[1]) for e in lab.events if e.kind == "topic_deleted_inactive"]


def test_a_topic_without_producers_or_subscriptions_is_deleted_at_the_sweep_after_the_inactive_time():
    lab, client = _lab()
    p = client.create_producer("orders")
    p.send(b"x")
    lab.advance(90_000)  # the sweep at 60 s saw the producer: lastActive = 60 s
    p.close()  # at 90 s
    assert lab.admin.topics.list(NS) == ["persistent://public/default/orders"]
    lab.advance(29_999)
    assert lab.admin.topics.list(NS) == ["persistent://public/default/orders"]
    lab.advance(1)  # the sweep at 120 s: inactive for 120 - 60 s = the frequency
    assert lab.admin.topics.list(NS) == []
    with pytest.raises(NotFoundException, match="Topic not found"):
        lab.admin.topics.stats("orders")
    assert _deleted(lab) == [(120_000, "orders")]
    event = next(e for e in lab.events if e.kind == "topic_deleted_inactive")
    assert "deleted due to inactivity" in event.explain() and "delete_when_no_subscriptions" in event.explain()
    # used again, the topic is created anew, empty
    again = client.create_producer("orders")
    assert str(again.send(b"y")).endswith(":0:-1")
    assert lab.admin.topics.stats("orders")["msgInCounter"] == 1


def test_the_inactive_duration_is_its_own_setting():
    lab, client = _lab(brokerDeleteInactiveTopicsMaxInactiveDurationSeconds=150)
    client.create_producer("t").close()  # at 0: lastActive is the topic's load time
    lab.advance(120_000)
    assert lab.admin.topics.list(NS) == ["persistent://public/default/t"]
    lab.advance(60_000)  # the sweep at 180 s is the first 150 s or more after 0
    assert _deleted(lab) == [(180_000, "t")]


def test_a_subscription_keeps_the_topic_in_the_default_mode():
    lab, client = _lab()
    c = client.subscribe("kept", "s")
    c.close()  # the durable subscription stays
    client.create_producer("gone").close()
    lab.advance(600_000)
    assert lab.admin.topics.list(NS) == ["persistent://public/default/kept"]
    assert _deleted(lab) == [(60_000, "gone")]


def test_caught_up_mode_deletes_a_topic_whose_subscriptions_have_no_backlog():
    lab, client = _lab(brokerDeleteInactiveTopicsMode="delete_when_subscriptions_caught_up")
    c = client.subscribe("t", "s")
    p = client.create_producer("t")
    p.send(b"unread")
    p.close()
    c.close()
    lab.advance(300_000)
    assert lab.admin.topics.list(NS) == ["persistent://public/default/t"]  # the backlog keeps it
    c = client.subscribe("t", "s")
    c.acknowledge(c.receive(1000))
    c.close()
    lab.advance(120_000)
    assert lab.admin.topics.list(NS) == []
    assert [f for _t, f in _deleted(lab)] == ["t"]
    assert (
        "delete_when_subscriptions_caught_up"
        in next(e for e in lab.events if e.kind == "topic_deleted_inactive").explain()
    )


def test_a_connected_consumer_keeps_the_topic_in_either_mode():
    for mode in ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"):
        lab, client = _lab(brokerDeleteInactiveTopicsMode=mode)
        client.subscribe("t", "s")
        lab.advance(600_000)
        assert lab.admin.topics.list(NS) == ["persistent://public/default/t"], mode


def test_disabled_or_kept_by_retention():
    lab, client = _lab(brokerDeleteInactiveTopicsEnabled=False)
    client.create_producer("t").close()
    lab.advance(3_600_000)
    assert lab.admin.topics.list(NS) == ["persistent://public/default/t"]
    # the in-process lab keeps every ledger (retention -1/-1), and with it every topic, as Pulsar's
    # shouldTopicBeRetained does for a negative retention time
    lab = pl.Lab(version="4.0")
    lab.client().create_producer("t").close()
    lab.advance(3_600_000)
    assert lab.admin.topics.list(NS) == ["persistent://public/default/t"]
    # a retention time keeps the topic that long after it was last active
    lab, client = _lab(defaultRetentionTimeInMinutes=10, defaultRetentionSizeInMB=1)
    client.create_producer("t").close()
    lab.advance(599_999)
    assert lab.admin.topics.list(NS) == ["persistent://public/default/t"]
    lab.advance(1)
    assert _deleted(lab) == [(600_000, "t")]


def test_housekeeping_does_not_keep_the_model_busy():
    lab, client = _lab()
    c = client.subscribe("t", "s")
    assert lab.run_until_idle() >= 0 and lab.now() < 60_000
    with pytest.raises(pl.Timeout):
        c.receive()  # nothing could arrive: the broker's next sweep is no reason to wait
    assert lab.now() < 60_000


def test_deleting_frees_the_ledgers_cache_and_bookie_files():
    lab = pl.Lab(version="4.0", broker_config={**SERVE_BROKER_CONFIG, "managedLedgerCacheSizeMB": 1})
    client = lab.client()
    for i in range(3):
        c = client.subscribe(f"tmp-{i}", "s")  # the backlog is kept, partly in bookie files beyond the 1 MB cache
        p = client.create_producer(f"tmp-{i}")
        for _ in range(600):
            p.send(b"x" * 1000)
        p.close()
        c.close()
    cache = lab.service.entry_cache
    assert cache.size > 0 and len(cache.storage.ledgers) == 3
    lab.service.schemas.put_if_absent("persistent://public/default/tmp-0", SchemaData("STRING"))
    lab.advance(600_000)
    assert len(lab.service.topics) == 3  # the subscriptions keep them
    for i in range(3):
        lab.admin.topics.delete_subscription(f"tmp-{i}", "s")
    lab.advance(60_000)
    assert lab.service.topics == {} and cache.size == 0 and cache.storage.ledgers == []
    assert lab.service.schemas.get("persistent://public/default/tmp-0") is None
    assert len(_deleted(lab)) == 3


def test_partitions_go_and_the_partitioned_metadata_stays_unless_asked():
    lab, client = _lab()
    lab.admin.topics.create_partitioned_topic("p", 2)
    client.create_producer("p").close()
    lab.advance(60_000)
    assert lab.admin.topics.list(NS) == []
    assert lab.admin.topics.list_partitioned_topics(NS) == ["persistent://public/default/p"]
    assert lab.admin.topics.partitioned_stats("p")["metadata"] == {"partitions": 2}
    assert lab.admin.topics.subscriptions("p") == []
    client.create_producer("p").send(b"x")  # the partitions are created again on use
    assert len(lab.admin.topics.list(NS)) == 2

    lab, client = _lab(brokerDeleteInactivePartitionedTopicMetadataEnabled=True)
    lab.admin.topics.create_partitioned_topic("p", 2)
    lab.advance(60_000)
    assert lab.admin.topics.list(NS) == [] and lab.admin.topics.list_partitioned_topics(NS) == []


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError, match="brokerDeleteInactiveTopicsMode must be one of"):
        _lab(brokerDeleteInactiveTopicsMode="sometimes")
    with pytest.raises(ValueError, match="FrequencySeconds must be a positive integer"):
        _lab(brokerDeleteInactiveTopicsFrequencySeconds=0)
    with pytest.raises(ValueError, match="MaxInactiveDurationSeconds must be an integer >= 0 or unset"):
        _lab(brokerDeleteInactiveTopicsMaxInactiveDurationSeconds=-1)
