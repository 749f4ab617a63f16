"""The typed seams of issue 23 on the broker's side: broker settings read through `BrokerConfig`'s typed accessors
with each profile's default, and the client consumers a snapshot reaches through `ClientConsumerConnection`."""

from __future__ import annotations

import pytest

import pulsarlab as pl
from pulsarlab.profiles import BROKER_DEFAULTS, PROFILES, BrokerConfig
from pulsarlab.protocol.handles import ClientConsumerConnection
from pulsarlab.protocol.subscription import ConsumerType
from pulsarlab.snapshot.lab import snapshot

BATCH_INDEX = "acknowledgmentAtBatchIndexLevelEnabled"


def _accessor(config: BrokerConfig, key: str) -> object:
    default = BROKER_DEFAULTS[key]
    if isinstance(default, bool):
        return config.flag(key)
    if isinstance(default, int):
        return config.integer(key)
    if isinstance(default, float):
        return config.number(key)
    if isinstance(default, str):
        return config.text(key)
    return config.optional_integer(key)


@pytest.mark.parametrize("version", sorted(PROFILES))
def test_every_setting_reads_through_its_accessor_with_the_profiles_default(version: str) -> None:
    profile = PROFILES[version]
    config = profile.broker_config()
    for key in BROKER_DEFAULTS:
        want = profile.broker_defaults.get(key, BROKER_DEFAULTS[key])
        assert _accessor(config, key) == want, key


def test_a_setting_of_the_wrong_type_is_refused_with_its_name() -> None:
    config = PROFILES["4.0"].broker_config({BATCH_INDEX: "yes", "dispatcherMaxReadBatchSize": 1.5})
    with pytest.raises(TypeError, match=f"{BATCH_INDEX} must be true or false, got str 'yes'"):
        config.flag(BATCH_INDEX)
    with pytest.raises(TypeError, match="dispatcherMaxReadBatchSize must be an integer, got float 1.5"):
        config.integer("dispatcherMaxReadBatchSize")
    with pytest.raises(TypeError, match="schemaCompatibilityStrategy must be a string"):
        PROFILES["4.0"].broker_config({"schemaCompatibilityStrategy": 3}).text("schemaCompatibilityStrategy")
    with pytest.raises(KeyError, match="unknown broker setting 'noSuchSetting'"):
        config.flag("noSuchSetting")


def test_a_lab_with_a_bad_batch_index_setting_fails_when_a_cursor_reads_it() -> None:
    lab = pl.Lab(version="4.0", broker_config={BATCH_INDEX: 1})
    with pytest.raises(TypeError, match=f"broker setting {BATCH_INDEX} must be true or false"):
        lab.client().subscribe("t", "s")


@pytest.mark.parametrize(
    "version, overrides, expected",
    [("4.0", {}, False), ("4.1", {}, True), ("4.0", {BATCH_INDEX: True}, True), ("4.1", {BATCH_INDEX: False}, False)],
)
def test_the_cursor_and_the_subscription_read_batch_index_acks_alike(
    version: str, overrides: dict[str, object], expected: bool
) -> None:
    lab = pl.Lab(version=version, broker_config=overrides)
    lab.client().subscribe("t", "s", consumer_type=ConsumerType.Shared)
    sub = lab.service.get_topic(lab.service.normalize("t")).subscriptions["s"]
    assert lab.config.flag(BATCH_INDEX) is expected
    assert sub.batch_index_level is expected
    assert sub.cursor.batch_index_level is expected


def test_a_snapshot_reaches_client_consumers_through_their_connection() -> None:
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    producer = client.create_producer("orders")
    first = client.subscribe("orders", "s", consumer_type=ConsumerType.Shared, negative_ack_redelivery_delay_ms=700)
    second = client.subscribe("orders", "s", consumer_type=ConsumerType.Shared, consumer_name="b")
    producer.send(b"x")
    lab.advance(10)
    broker_consumers = lab.service.get_topic(lab.service.normalize("orders")).subscriptions["s"].consumers()
    connections = [c.cnx for c in broker_consumers]
    assert all(isinstance(cnx, ClientConsumerConnection) for cnx in connections)
    apps = sorted((cnx.application_consumer() for cnx in connections), key=lambda a: a.consumer_id)
    assert apps == [first, second]
    assert [t.topic for t in first.topic_consumers()] == ["persistent://public/default/orders"]
    trackers = snapshot(lab).redelivery.trackers
    assert [(t.consumer, t.name, t.nack_delay_ms) for t in trackers] == [
        (first.consumer_id, first.consumer_name(), 700),
        (second.consumer_id, "b", second.negative_ack_redelivery_delay_ms),
    ]
    first.close()
    assert [t.consumer for t in snapshot(lab).redelivery.trackers] == [second.consumer_id]


def test_a_remote_consumer_of_serve_is_no_client_connection() -> None:
    from pulsarlab.serve.bridge import RemoteConsumer

    assert not issubclass(RemoteConsumer, ClientConsumerConnection)
