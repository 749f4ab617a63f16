"""The protocol as a raw client sees it: handshake, lookups, replies, and Pulsar's error codes and texts."""

from __future__ import annotations

import pytest
from serve_support import raw_client, served_lab, wait_until

import pulsarlab as pl
from pulsarlab.errors import ConsumerBusyException
from pulsarlab.protocol.acks import AckType
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.protocol.subscription import ConsumerType, KeySharedMode
from pulsarlab.serve.commands import (
    Ack,
    CloseConsumer,
    CommandType,
    ConsumerStats,
    Flow,
    GetLastMessageId,
    GetSchema,
    GetTopicsOfNamespace,
    IntRange,
    KeySharedMeta,
    LookupKind,
    LookupRequest,
    MetadataLookupKind,
    MsgId,
    PartitionMetadataRequest,
    Ping,
    ProducerRequest,
    RedeliverUnacked,
    Seek,
    Subscribe,
    Unsubscribe,
)

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/proto"


def _subscribe(raw, consumer_id: int, sub: str, sub_type: ConsumerType, request_id: int, **kw):
    raw.send(
        Subscribe(
            topic=TOPIC,
            subscription=sub,
            sub_type=sub_type,
            consumer_id=consumer_id,
            request_id=request_id,
            consumer_name=f"c{consumer_id}",
            **kw,
        )
    )
    return raw.recv()


def test_handshake_and_lookups():
    with served_lab(broker_config={"maxMessageSize": 4096}) as (lab, server), raw_client(server.url) as raw:
        connected = raw.handshake()
        assert connected.protocol_version == 20 and connected.max_message_size == 4096
        assert connected.server_version == "Pulsar Server 4.0 (pulsarlab)"
        raw.send(Ping())
        raw.expect(CommandType.PONG)
        server.call(lab.admin.topics.create_partitioned_topic, "parted", 4)
        raw.send(PartitionMetadataRequest(topic="persistent://public/default/parted", request_id=0))
        meta = raw.expect(CommandType.PARTITIONED_METADATA_RESPONSE)
        assert (meta.partitions, meta.response, meta.request_id) == (4, MetadataLookupKind.Success, 0)
        raw.send(PartitionMetadataRequest(topic="plain", request_id=1))
        assert raw.expect(CommandType.PARTITIONED_METADATA_RESPONSE).partitions == 0
        raw.send(LookupRequest(topic=TOPIC, request_id=1))  # ids of another kind may repeat
        look = raw.expect(CommandType.LOOKUP_RESPONSE)
        assert (look.broker_service_url, look.response, look.request_id) == (server.url, LookupKind.Connect, 1)
        raw.send(LookupRequest(topic="a/b", request_id=2))
        bad = raw.expect(CommandType.LOOKUP_RESPONSE)
        assert (bad.response, bad.error) == (LookupKind.Failed, ServerError.InvalidTopicName)
        assert (
            bad.message
            == "Invalid short topic name 'a/b', it should be in the format of <tenant>/<namespace>/<topic> or <topic>"
        )
        raw.send(GetTopicsOfNamespace(request_id=3, namespace="public/default"))
        topics = raw.expect(CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE).topics
        assert topics == server.call(lab.admin.topics.list)
        raw.send(GetSchema(request_id=4, topic=TOPIC))
        schema = raw.expect(CommandType.GET_SCHEMA_RESPONSE)
        assert (schema.error_code, schema.error_message) == (ServerError.TopicNotFound, "Topic not found or no-schema")


def test_subscription_errors_carry_pulsars_codes_and_texts():
    with served_lab() as (lab, server), raw_client(server.url) as raw:
        raw.handshake()
        assert _subscribe(raw, 1, "ex", ConsumerType.Exclusive, 10)[0] is CommandType.SUCCESS
        kind, err, _ = _subscribe(raw, 2, "ex", ConsumerType.Exclusive, 11)
        assert (kind, err.request_id, err.error, err.message) == (
            CommandType.ERROR,
            11,
            ServerError.ConsumerBusy,
            "Exclusive consumer is already connected",
        )
        kind, err, _ = _subscribe(raw, 3, "ex", ConsumerType.Shared, 12)
        assert (err.error, err.message) == (
            ServerError.ConsumerBusy,
            (
                "Subscription is of different type. Active subscription type of 'Exclusive' is different than the "
                "connecting consumer's type 'Shared'."
            ),
        )
        sticky = KeySharedMeta(mode=KeySharedMode.Sticky, hash_ranges=[IntRange(0, 100)])
        assert _subscribe(raw, 4, "st", ConsumerType.KeyShared, 13, key_shared_meta=sticky)[0] is CommandType.SUCCESS
        overlap = KeySharedMeta(mode=KeySharedMode.Sticky, hash_ranges=[IntRange(50, 200)])
        kind, err, _ = _subscribe(raw, 5, "st", ConsumerType.KeyShared, 14, key_shared_meta=overlap)
        assert (kind, err.error) == (CommandType.ERROR, ServerError.ConsumerAssignError)
        assert err.message.startswith("Range conflict with consumer Consumer{") and "consumerName=c4" in err.message
        kind, err, _ = _subscribe(
            raw, 6, "st", ConsumerType.KeyShared, 15, key_shared_meta=KeySharedMeta(mode=KeySharedMode.Sticky)
        )
        assert (err.error, err.message) == (
            ServerError.ConsumerAssignError,
            "Ranges for KeyShared policy must not be empty.",
        )
        # the model raises the same texts in process
        lab2 = pl.Lab()
        lab2.client().subscribe(TOPIC, "ex")
        with pytest.raises(ConsumerBusyException, match="^Exclusive consumer is already connected$"):
            lab2.client().subscribe(TOPIC, "ex")
        # a consumer id already subscribed on this connection is answered SUCCESS again
        assert _subscribe(raw, 1, "ex", ConsumerType.Exclusive, 16)[0] is CommandType.SUCCESS


def test_unsubscribe_seek_and_unknown_consumers():
    with served_lab() as (lab, server), raw_client(server.url) as raw:
        raw.handshake()
        for cid in (1, 2):
            assert _subscribe(raw, cid, "sh", ConsumerType.Shared, cid)[0] is CommandType.SUCCESS
        raw.send(Unsubscribe(consumer_id=1, request_id=3))
        err = raw.expect(CommandType.ERROR)
        assert (err.error, err.message) == (
            ServerError.MetadataError,
            "Unconnected or shared consumer attempting to unsubscribe",
        )
        raw.send(Unsubscribe(consumer_id=9, request_id=4))
        assert raw.expect(CommandType.ERROR).message == "Consumer not found"
        raw.send(Seek(consumer_id=1, request_id=5))
        err = raw.expect(CommandType.ERROR)
        assert (err.error, err.message) == (
            ServerError.MetadataError,
            "Message id and message publish time were not present",
        )
        raw.send(GetLastMessageId(consumer_id=9, request_id=6))
        assert raw.expect(CommandType.ERROR).message == "Consumer not found"
        raw.send(GetLastMessageId(consumer_id=1, request_id=7))
        last = raw.expect(CommandType.GET_LAST_MESSAGE_ID_RESPONSE)
        assert last.last_message_id.ids() == (-1, -1)  # an empty topic
        # FLOW / ACK / REDELIVER for a consumer that does not exist are ignored, as the broker does
        raw.send(Flow(consumer_id=9, message_permits=5))
        raw.send(Ack(consumer_id=9, ack_type=AckType.INDIVIDUAL, message_ids=[MsgId(ledger_id=3, entry_id=0)]))
        raw.send(RedeliverUnacked(consumer_id=9))
        raw.send(ConsumerStats(request_id=8, consumer_id=2))
        stats = raw.expect(CommandType.CONSUMER_STATS_RESPONSE)
        assert (stats.consumer_name, stats.type, stats.available_permits) == ("c2", "Shared", 0)
        raw.send(CloseConsumer(consumer_id=2, request_id=9))
        assert raw.expect(CommandType.SUCCESS).request_id == 9
        raw.send(Unsubscribe(consumer_id=1, request_id=10))
        assert raw.expect(CommandType.SUCCESS).request_id == 10
        wait_until(lambda: server.call(lab.admin.topics.subscriptions, TOPIC) == [], what="the unsubscribe")


def test_producers_get_broker_names_and_ack_receipts_are_answered():
    with served_lab() as (lab, server), raw_client(server.url) as raw:
        raw.handshake()
        raw.send(ProducerRequest(topic=TOPIC, producer_id=0, request_id=1))
        ok = raw.expect(CommandType.PRODUCER_SUCCESS)
        assert ok.producer_name.startswith("standalone-0-") and ok.value("last_sequence_id") == -1
        raw.send(
            ProducerRequest(
                topic=TOPIC, producer_id=1, request_id=2, producer_name="mine", initial_subscription_name="first"
            )
        )
        assert raw.expect(CommandType.PRODUCER_SUCCESS).producer_name == "mine"
        assert server.call(lab.admin.topics.subscriptions, TOPIC) == ["first"]
        raw.send(ProducerRequest(topic="bogus://public/default/x", producer_id=2, request_id=3))
        err = raw.expect(CommandType.ERROR)
        assert err.request_id == 3 and err.error is ServerError.InvalidTopicName
        assert _subscribe(raw, 7, "acks", ConsumerType.Shared, 4)[0] is CommandType.SUCCESS
        raw.send(
            Ack(consumer_id=7, ack_type=AckType.INDIVIDUAL, message_ids=[MsgId(ledger_id=3, entry_id=0)], request_id=5)
        )
        resp = raw.expect(CommandType.ACK_RESPONSE)
        assert (resp.consumer_id, resp.request_id, resp.error) == (7, 5, None)


def test_priority_levels_and_key_shared_policies_reach_the_dispatcher():
    with served_lab() as (lab, server), raw_client(server.url) as raw:
        raw.handshake()
        for cid, prio in ((1, 0), (2, 1)):
            assert _subscribe(raw, cid, "prio", ConsumerType.Shared, cid, priority_level=prio)[0] is CommandType.SUCCESS
        ooo = KeySharedMeta(mode=KeySharedMode.AutoSplit, allow_out_of_order_delivery=True)
        assert _subscribe(raw, 3, "ooo", ConsumerType.KeyShared, 3, key_shared_meta=ooo)[0] is CommandType.SUCCESS
        kind, err, _ = _subscribe(
            raw, 4, "ooo", ConsumerType.KeyShared, 4, key_shared_meta=KeySharedMeta(mode=KeySharedMode.AutoSplit)
        )
        assert (kind, err.error) == (CommandType.ERROR, ServerError.ConsumerBusy)
        assert err.message == (
            "Subscription is of different type. Active subscription allows out of order delivery "
            "while the connecting consumer does not allow it."
        )
        snap = server.snapshot()
        assert [(c.name, c.priority) for c in snap.subscription(TOPIC, "prio").consumers] == [("c1", 0), ("c2", 1)]
        stats = server.stats(TOPIC)["subscriptions"]["ooo"]
        assert (stats["keySharedMode"], stats["allowOutOfOrderDelivery"]) == ("AUTO_SPLIT", True)
