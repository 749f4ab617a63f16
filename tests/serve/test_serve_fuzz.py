"""Every command `pulsarlab serve` handles, with extreme values in each numeric field, over raw frames.

Issue 21: a legal wire value (the C++ client's entry id -1, sent as uint64 2**64 - 1) once reached the event log
unconverted, failed the log's flush on a later, unrelated command, killed that connection and made a message
arrive twice. Here a raw connection sends each command serve reads - with 0, 1, 2**31 - 1, 2**31, 2**32 - 1,
2**63 - 1, 2**63 and 2**64 - 1 (-1 as a uint64) in each numeric field in turn, nested message ids included, and
with empty and oversized repeated fields - while a real pulsar-client producer and consumer run alongside on
another topic. Each command is followed by a PING, so its replies are read before the next one. It checks:

* a command carrying a request id gets an answer with that id (Java's reading of it: a signed long), and a
  SEND gets its receipt or a SEND_ERROR; no command makes the server log an internal error;
* the only connections the server closes are those Pulsar's broker closes too (a SEND for a producer the
  connection does not have); then the fuzzing goes on over a new connection;
* the real pair's connection is never closed, every message arrives exactly once, the subscription ends with
  nothing unacknowledged, and the event log still flushes and reads back.

Deterministic (the values are fixed, the order is fixed, one seeded generator picks payload bytes), bounded
(about 700 commands), loopback only.
"""

from __future__ import annotations

import copy
import logging
import random
import re
from typing import Any, Iterator

import pulsar
import pytest
from serve_support import RawClient, client_for, served_lab, wait_until

from pulsarlab.protocol.acks import AckType
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.subscription import ConsumerType, InitialPosition, KeySharedMode
from pulsarlab.serve import codec
from pulsarlab.serve.codec import MASK64, REPEATED, as_signed64, encode_varint, tag
from pulsarlab.serve.commands import (
    BODY_TYPES,
    Ack,
    CloseConsumer,
    CloseProducer,
    CommandType,
    Connect,
    ConsumerStats,
    Flow,
    GetLastMessageId,
    GetOrCreateSchema,
    GetSchema,
    GetTopicsOfNamespace,
    IntRange,
    KeyLongValue,
    KeySharedMeta,
    KeyValue,
    LookupRequest,
    MsgId,
    PartitionMetadataRequest,
    Ping,
    Pong,
    ProducerRequest,
    RedeliverUnacked,
    SchemaInfo,
    SchemaKind,
    Seek,
    Send,
    Subscribe,
    Unsubscribe,
    WireMetadata,
)
from pulsarlab.serve.frames import payload_frame, simple_frame, wire_section

pytestmark = pytest.mark.serve

FUZZ_TOPIC = "persistent://public/default/fuzz"
PAIR_TOPIC = "persistent://public/default/fuzz-pair"
EXTREMES = (0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1)
PRODUCER, CONSUMER = 7, 7  # the fuzz connection's own ids (not among EXTREMES, so fuzzed ids never close them)
PAIR_MESSAGES = 120
OVERSIZED = 2000
HANG_GUARD_S = 120  # a reply that never comes fails the test after this long; nothing here is timed
_VARINTS = {codec.UINT64, codec.INT64, codec.UINT32, codec.INT32}


# --- encoding any value into any varint field -------------------------------------------------------
def raw_encode(obj: Any) -> bytes:
    """``obj`` encoded as the codec does, except that a varint field's value is written as given (masked to 64
    bits), not as its declared type would write it: 2**64 - 1 in a uint32 field goes out as 10 bytes."""
    out = bytearray()
    for f in type(obj).FIELDS:
        v = getattr(obj, f.name)
        items = v if f.label is REPEATED else ([] if v is None else [v])
        for item in items:
            if f.kind is codec.MESSAGE:
                data = raw_encode(item)
                out += tag(f.number, 2) + encode_varint(len(data)) + data
            elif f.kind in _VARINTS:
                out += tag(f.number, 0) + encode_varint(int(item) & MASK64)
            else:
                codec._encode_scalar(f, item, out)
    return bytes(out)


def raw_command(body: Any) -> bytes:
    n = int(BODY_TYPES[type(body)])
    data = raw_encode(body)
    return b"\x08" + encode_varint(n) + encode_varint((n << 3) | 2) + encode_varint(len(data)) + data


def numeric_paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every numeric field of ``obj`` and of the messages in it (the first item of a repeated field)."""
    for f in type(obj).FIELDS:
        v = getattr(obj, f.name)
        if f.kind is codec.MESSAGE:
            if f.label is REPEATED:
                if v:
                    yield from numeric_paths(v[0], (*prefix, f.name, 0))
            elif v is not None:
                yield from numeric_paths(v, (*prefix, f.name))
        elif f.kind in _VARINTS:
            yield (*prefix, f.name, 0) if f.label is REPEATED and v else (*prefix, f.name)


def with_value(obj: Any, path: tuple, value: int) -> Any:
    out = copy.deepcopy(obj)
    target = out
    for step in path[:-1]:
        target = target[step] if isinstance(step, int) else getattr(target, step)
    last = path[-1]
    if isinstance(last, int):
        target[last] = value
    else:
        f = type(target)._BY_NAME[last]
        setattr(target, last, [value] if f.label is REPEATED else value)
    return out


# --- the commands ------------------------------------------------------------------------------------
def mid(**kw: Any) -> MsgId:
    base = dict(ledger_id=1, entry_id=0, partition=-1, batch_index=-1, ack_set=[-1], batch_size=1)
    return MsgId(**{**base, **kw})


def metadata(seq: int = 0) -> WireMetadata:
    return WireMetadata(
        producer_name="fuzz",
        sequence_id=seq,
        publish_time=1_700_000_000_000,
        num_messages_in_batch=1,
        event_time=1,
        uncompressed_size=4,
        deliver_at_time=1,
        highest_sequence_id=seq,
    )


def templates(n: int) -> list[Any]:
    """One of each command with every optional numeric field set, so each one can be fuzzed. ``n`` makes
    subscription names fresh."""
    return [
        PartitionMetadataRequest(topic=FUZZ_TOPIC, request_id=1),
        LookupRequest(topic=FUZZ_TOPIC, request_id=1),
        ProducerRequest(
            topic=FUZZ_TOPIC,
            producer_id=100,
            request_id=1,
            epoch=0,
            topic_epoch=None,
            metadata=[KeyValue("k", "v")],
            producer_access_mode=ProducerAccessMode.Shared,
        ),
        Send(
            producer_id=PRODUCER,
            sequence_id=1,
            num_messages=1,
            txnid_least_bits=0,
            txnid_most_bits=0,
            highest_sequence_id=1,
            message_id=mid(),
        ),
        metadata(),  # the SEND's MessageMetadata: its numbers fuzzed one by one
        Subscribe(
            topic=FUZZ_TOPIC,
            subscription=f"fz-{n}",
            sub_type=ConsumerType.Shared,
            consumer_id=100,
            request_id=1,
            priority_level=0,
            start_message_id=mid(),
            initial_position=InitialPosition.Earliest,
            start_message_rollback_duration_sec=0,
            consumer_epoch=0,
        ),
        Subscribe(
            topic=FUZZ_TOPIC,
            subscription=f"fz-ks-{n}",
            sub_type=ConsumerType.KeyShared,
            consumer_id=100,
            request_id=1,
            key_shared_meta=KeySharedMeta(mode=KeySharedMode.Sticky, hash_ranges=[IntRange(0, 65535)]),
        ),
        Flow(consumer_id=CONSUMER, message_permits=10),
        Ack(
            consumer_id=CONSUMER,
            ack_type=AckType.INDIVIDUAL,
            message_ids=[mid()],
            properties=[KeyLongValue("p", 1)],
            txnid_least_bits=0,
            txnid_most_bits=0,
            request_id=1,
        ),
        Ack(consumer_id=CONSUMER, ack_type=AckType.CUMULATIVE, message_ids=[mid(ack_set=[])], request_id=1),
        RedeliverUnacked(consumer_id=CONSUMER, message_ids=[mid(ack_set=[])], consumer_epoch=0),
        Seek(consumer_id=CONSUMER, request_id=1, message_id=mid(ack_set=[])),
        Seek(consumer_id=CONSUMER, request_id=1, message_publish_time=1),
        GetLastMessageId(consumer_id=CONSUMER, request_id=1),
        GetTopicsOfNamespace(request_id=1, namespace="public/default"),
        GetSchema(request_id=1, topic=FUZZ_TOPIC),
        GetOrCreateSchema(
            request_id=1, topic=FUZZ_TOPIC, schema=SchemaInfo(name="s", schema_data=b"", type=SchemaKind.String)
        ),
        ConsumerStats(request_id=1, consumer_id=CONSUMER),
        Unsubscribe(consumer_id=100, request_id=1),
        CloseConsumer(consumer_id=100, request_id=1),
        CloseProducer(producer_id=100, request_id=1),
    ]


def oversized_and_empty(n: int) -> list[Any]:
    """Repeated fields empty and far longer than any client sends."""
    many = [mid(entry_id=i, ack_set=[]) for i in range(OVERSIZED)]
    return [
        Ack(consumer_id=CONSUMER, ack_type=AckType.INDIVIDUAL, message_ids=[], request_id=1),
        Ack(consumer_id=CONSUMER, ack_type=AckType.INDIVIDUAL, message_ids=many, request_id=2),
        Ack(consumer_id=CONSUMER, ack_type=AckType.INDIVIDUAL, message_ids=[mid(ack_set=[-1] * OVERSIZED)]),
        Ack(consumer_id=CONSUMER, ack_type=AckType.INDIVIDUAL, message_ids=[mid(ack_set=[])]),
        Ack(
            consumer_id=CONSUMER,
            ack_type=AckType.CUMULATIVE,
            message_ids=[mid(ack_set=[]), mid(entry_id=1, ack_set=[])],
            request_id=3,
        ),
        RedeliverUnacked(consumer_id=CONSUMER, message_ids=[]),
        RedeliverUnacked(consumer_id=CONSUMER, message_ids=many),
        Subscribe(
            topic=FUZZ_TOPIC,
            subscription=f"fz-big-{n}",
            sub_type=ConsumerType.Shared,
            consumer_id=101,
            request_id=4,
            metadata=[KeyValue(f"k{i}", "v") for i in range(OVERSIZED)],
            subscription_properties=[KeyValue(f"p{i}", "v") for i in range(OVERSIZED)],
        ),
        Subscribe(
            topic=FUZZ_TOPIC,
            subscription=f"fz-ks-empty-{n}",
            sub_type=ConsumerType.KeyShared,
            consumer_id=102,
            request_id=5,
            key_shared_meta=KeySharedMeta(mode=KeySharedMode.Sticky, hash_ranges=[]),
        ),
        Subscribe(
            topic=FUZZ_TOPIC,
            subscription=f"fz-ks-big-{n}",
            sub_type=ConsumerType.KeyShared,
            consumer_id=103,
            request_id=6,
            key_shared_meta=KeySharedMeta(
                mode=KeySharedMode.Sticky, hash_ranges=[IntRange(i, i) for i in range(OVERSIZED)]
            ),
        ),
        ProducerRequest(
            topic=FUZZ_TOPIC,
            producer_id=104,
            request_id=7,
            metadata=[KeyValue(f"k{i}", "v") for i in range(OVERSIZED)],
        ),
    ]


# --- the fuzzing connection --------------------------------------------------------------------------
_PYTHON_ERROR = re.compile(r"^\w+(Error|Exception): ")  # how serve words a model bug it caught
ALLOWED_CLOSES = ("Received message, but the producer is not ready",)  # ServerCnx.handleSend closes too


class FuzzConnection:
    """A raw connection with a producer and a consumer of its own on the fuzz topic."""

    def __init__(self, url: str, rng: random.Random) -> None:
        self.url = url
        self.rng = rng
        self.raw: RawClient | None = None
        self.opened = 0
        self.seq = 0

    def open(self) -> RawClient:
        self.raw = RawClient(self.url, timeout_s=HANG_GUARD_S)
        host, port = self.raw.sock.getsockname()[:2]
        self.peer = f"{host}:{port}"
        self.raw.handshake()
        self.opened += 1
        self.exchange(ProducerRequest(topic=FUZZ_TOPIC, producer_id=PRODUCER, request_id=1))
        self.subscribe()
        return self.raw

    def close_reason(self, server: Any) -> str | None:
        """Why the server closed this connection (None while it has not recorded the close)."""
        return next((c.reason for c in server.closed_connections if c.peer == self.peer), None)

    def subscribe(self) -> None:
        self.exchange(
            Subscribe(
                topic=FUZZ_TOPIC,
                subscription="fz-own",
                sub_type=ConsumerType.Shared,
                consumer_id=CONSUMER,
                request_id=2,
                initial_position=InitialPosition.Earliest,
            )
        )
        self.exchange(Flow(consumer_id=CONSUMER, message_permits=1000))

    def frame(self, body: Any, meta: WireMetadata | None = None) -> bytes:
        if isinstance(body, Send):
            payload = self.rng.randbytes(4)
            return payload_frame(
                raw_command(body), wire_section(raw_encode(meta or metadata(body.sequence_id)), payload)
            )
        return simple_frame(raw_command(body))

    def exchange(self, body: Any, meta: WireMetadata | None = None) -> list[tuple[CommandType, Any]] | None:
        """Send ``body`` and a PING; the replies before the PONG, or None if the server closed the connection."""
        if self.raw is None:
            self.open()
        raw = self.raw
        raw.send_raw(self.frame(body, meta) + simple_frame(raw_command(Ping())))
        replies = []
        try:
            while True:
                kind, reply, _ = raw.recv()
                if kind is CommandType.PONG:
                    break
                if kind is CommandType.PING:
                    raw.send(Pong())
                    continue
                replies.append((kind, reply))
        except (ConnectionError, BrokenPipeError):  # a timeout is not a close: it fails the test
            raw.close()
            self.raw = None
            return None
        if any(k is CommandType.CLOSE_CONSUMER and r.consumer_id == CONSUMER for k, r in replies):
            self.subscribe()  # a seek closes the consumer; the client subscribes again, as the real one does
        return replies


def check_answered(body: Any, replies: list[tuple[CommandType, Any]]) -> None:
    """A request is answered with its id; a SEND with a receipt or an error for its producer and sequence."""
    leaked = [
        r for k, r in replies if k in (CommandType.ERROR, CommandType.SEND_ERROR) and _PYTHON_ERROR.match(r.message)
    ]
    assert not leaked, f"{type(body).__name__}: an internal error reached the client: {leaked}"
    if isinstance(body, Send):
        answers = [
            r
            for k, r in replies
            if k in (CommandType.SEND_RECEIPT, CommandType.SEND_ERROR)
            and r.producer_id == as_signed64(body.producer_id)
        ]
        assert answers and answers[0].sequence_id == as_signed64(body.sequence_id), f"{body}: {replies}"
        return
    request_id = getattr(body, "request_id", None)
    if request_id is None:
        return
    answered = [r for _, r in replies if getattr(r, "request_id", None) == as_signed64(request_id)]
    assert answered, f"{type(body).__name__} with request id {request_id} got no answer: {replies}"


def fuzz_cases(n: int) -> Iterator[tuple[Any, WireMetadata | None, str]]:
    """``(command, SEND metadata or None, description)``: each template with each extreme in each field."""
    for template in templates(n):
        if isinstance(template, WireMetadata):
            for path in numeric_paths(template):
                for value in EXTREMES:
                    body = Send(producer_id=PRODUCER, sequence_id=1)
                    yield body, with_value(template, path, value), f"SEND metadata {'.'.join(map(str, path))}={value}"
            continue
        for path in numeric_paths(template):
            for value in EXTREMES:
                yield with_value(template, path, value), None, f"{type(template).__name__} {path}={value}"
    for body in oversized_and_empty(n):
        yield body, None, f"{type(body).__name__} with empty or oversized repeated fields"


def test_extreme_values_in_every_numeric_field_leave_serve_whole(caplog):
    rng = random.Random(21)
    caplog.set_level(logging.WARNING, logger="pulsarlab.serve")
    with served_lab() as (lab, server), client_for(server) as client:
        pair_consumer = client.subscribe(PAIR_TOPIC, "pair", consumer_type=pulsar.ConsumerType.Shared)
        pair_producer = client.create_producer(PAIR_TOPIC, batching_enabled=False)
        fuzz = FuzzConnection(server.url, rng)
        fuzz.open()
        # CONNECT itself, on connections of their own
        for field_name in ("protocol_version", "auth_method"):
            for value in EXTREMES:
                raw = RawClient(server.url)
                try:
                    raw.send_raw(simple_frame(raw_command(Connect(client_version="fz", **{field_name: value}))))
                    assert raw.expect(CommandType.CONNECTED).server_version
                finally:
                    raw.close()
        # transactions and topic watchers: answered NotAllowed with the request id, whatever its value
        for value in EXTREMES:
            body = b"\x08" + encode_varint(value)  # field 1: request_id (CommandNewTxn)
            cmd = b"\x08" + encode_varint(50) + encode_varint((50 << 3) | 2) + encode_varint(len(body)) + body
            fuzz.raw.send_raw(simple_frame(cmd))
            err = fuzz.raw.expect(CommandType.ERROR)
            assert err.request_id == as_signed64(value) and err.error.name == "NotAllowedError"
        sent = 0
        cases = list(fuzz_cases(0))
        assert len(cases) > 500
        for i, (body, meta, what) in enumerate(cases):
            replies = fuzz.exchange(body, meta)
            if replies is None:  # closed: only where Pulsar's broker closes too
                wait_until(lambda: fuzz.close_reason(server) is not None, what="the server to record the close")
                reason = fuzz.close_reason(server)
                assert any(a in reason for a in ALLOWED_CLOSES), f"{what}: closed ({reason})"
                fuzz.open()
            else:
                check_answered(body, replies)
            if i % 6 == 0 and sent < PAIR_MESSAGES:
                pair_producer.send(f"pair-{sent}".encode())
                sent += 1
        while sent < PAIR_MESSAGES:
            pair_producer.send(f"pair-{sent}".encode())
            sent += 1

        got: list[str] = []
        while len(set(got)) < PAIR_MESSAGES:
            m = pair_consumer.receive(5000)
            assert m.redelivery_count() == 0, f"{m.data()} redelivered"
            got.append(m.data().decode())
            pair_consumer.acknowledge(m)
        assert sorted(got) == sorted(f"pair-{i}" for i in range(PAIR_MESSAGES)), "a message was lost or duplicated"
        wait_until(
            lambda: server.stats(PAIR_TOPIC)["subscriptions"]["pair"]["unackedMessages"] == 0,
            what="the pair's acks to reach the broker",
        )
        stats = server.stats(PAIR_TOPIC)["subscriptions"]["pair"]
        assert stats["msgBacklog"] == 0
        real = [c for c in server.closed_connections if c.client_version and c.client_version.startswith("Pulsar-CPP")]
        assert real == [], f"the real client's connection was closed: {real}"
        # the event log flushes and reads back whole
        n, last, digest = server.call(lambda: (len(lab.events), lab.events[-1], lab.events.digest()))
        assert n > len(cases) and last.kind and len(digest) == 64
        assert server.call(lambda: sum(1 for _ in lab.events.since(n - 5000))) == min(n, 5000)
        fuzz.raw.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR and r.name == "pulsarlab.serve"]
    assert errors == [], [r.getMessage() for r in errors]
