"""A misbehaving connection is closed with a reason; the server and every other client keep running."""

from __future__ import annotations

import random
import struct

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, raw_client, served_lab, wait_until

import pulsarlab as pl
import pulsarlab.serve
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.protocol.subscription import ConsumerType
from pulsarlab.serve.commands import CommandType, Flow, ProducerRequest, Send, Subscribe, WireMetadata, encode_command
from pulsarlab.serve.frames import payload_frame, simple_frame, wire_section

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/robust"


def _round_trip(server, tag: str) -> None:
    """A real client produces and consumes one message: the server still works."""
    with client_for(server) as client:
        c = client.subscribe(TOPIC, f"check-{tag}", initial_position=pulsar.InitialPosition.Latest)
        client.create_producer(TOPIC).send(tag.encode())
        assert c.receive(RECEIVE_MS).data() == tag.encode()


def _closed_reasons(server) -> list[str]:
    return [c.reason for c in server.closed_connections]


def _send_frame(producer_id: int, sequence_id: int, payload: bytes, corrupt: bool = False) -> bytes:
    meta = WireMetadata(producer_name="raw", sequence_id=sequence_id, publish_time=1).encode()
    wire = wire_section(meta, payload)
    frame = payload_frame(encode_command(Send(producer_id=producer_id, sequence_id=sequence_id)), wire)
    return frame[:-1] + bytes([frame[-1] ^ 0xFF]) if corrupt else frame


@pytest.fixture
def served():
    with served_lab() as (lab, server):
        yield lab, server


BAD_STREAMS = {
    "random bytes": bytes(random.Random(7).getrandbits(8) for _ in range(300)),
    "oversized frame": struct.pack(">I", 50 * 1024 * 1024) + b"\0" * 16,
    "command larger than its frame": struct.pack(">II", 12, 400) + b"\0" * 8,
    "unknown command type": simple_frame(b"\x08\x63"),
    "no command type": simple_frame(b"\x12\x00"),
    "undecodable command": simple_frame(b"\x08\x04\x22\x05\x0a\xff"),
    "subscribe before connect": simple_frame(
        encode_command(
            Subscribe(topic=TOPIC, subscription="s", sub_type=ConsumerType.Shared, consumer_id=1, request_id=1)
        )
    ),
}
EXPECTED_REASON = {
    "random bytes": "protocol error",
    "oversized frame": "exceeds the limit",
    "command larger than its frame": "does not fit",
    "unknown command type": "unknown command type 99",
    "no command type": "has no type",
    "undecodable command": "malformed",
    "subscribe before connect": "SUBSCRIBE before CONNECT",
}


@pytest.mark.parametrize("name", list(BAD_STREAMS))
def test_a_bad_stream_closes_only_its_connection(served, name):
    lab, server = served
    with client_for(server) as bystander:
        c = bystander.subscribe(TOPIC, "bystander")
        p = bystander.create_producer(TOPIC)
        p.send(b"before")
        with raw_client(server.url) as raw:
            if name != "subscribe before connect":
                raw.handshake()
            raw.send_raw(BAD_STREAMS[name])
            assert raw.closed_by_server()
        wait_until(lambda: any(EXPECTED_REASON[name] in r for r in _closed_reasons(server)), what="the close")
        p.send(b"after")
        assert [c.receive(RECEIVE_MS).data() for _ in range(2)] == [b"before", b"after"]
    _round_trip(server, name.replace(" ", "-"))


def test_a_client_that_disconnects_mid_frame_is_cleaned_up(served):
    lab, server = served
    with raw_client(server.url) as raw:
        raw.handshake()
        raw.send(Subscribe(topic=TOPIC, subscription="half", sub_type=ConsumerType.Shared, consumer_id=1, request_id=1))
        raw.expect(CommandType.SUCCESS)
        raw.send_raw(simple_frame(encode_command(Flow(consumer_id=1, message_permits=10)))[:7])
        wait_until(
            lambda: any(c.decoder.buffered == 7 for c in list(server.server.connections)),
            what="the partial frame to be held",
        )
    wait_until(
        lambda: server.call(lambda: not lab.service.topics[TOPIC].subscriptions["half"].consumers()),
        what="the consumer of the dropped connection to close",
    )
    assert any(r == "closed by the client" for r in _closed_reasons(server))
    _round_trip(server, "after-half-frame")


def test_a_partial_frame_is_held_only_up_to_the_frame_limit(served):
    lab, server = served
    limit = server.server.max_frame_size
    with raw_client(server.url) as raw:
        raw.handshake()
        raw.send_raw(struct.pack(">I", limit) + b"\0" * 4096)  # announces the largest allowed frame
        wait_until(
            lambda: any(c.decoder.buffered == 4100 for c in list(server.server.connections)), what="the partial frame"
        )
        held = max(c.decoder.buffered for c in list(server.server.connections))
        assert held <= limit + 4
        raw.send_raw(struct.pack(">I", limit + 1))  # never arrives: the frame above is still incomplete
    _round_trip(server, "after-partial")


def test_a_wrong_checksum_is_answered_with_send_error_and_the_connection_stays(served):
    lab, server = served
    with raw_client(server.url) as raw:
        raw.handshake()
        raw.send(ProducerRequest(topic=TOPIC, producer_id=0, request_id=1))
        raw.expect(CommandType.PRODUCER_SUCCESS)
        raw.send_raw(_send_frame(0, 0, b"corrupted", corrupt=True))
        err = raw.expect(CommandType.SEND_ERROR)
        assert (err.error, err.message) == (ServerError.ChecksumError, "Checksum failed on the broker")
        raw.send_raw(_send_frame(0, 1, b"fine"))
        receipt = raw.expect(CommandType.SEND_RECEIPT)
        assert (receipt.sequence_id, receipt.message_id.ledger_id, receipt.message_id.entry_id) == (1, 3, 0)
    assert server.call(lambda: len(lab.service.topics[TOPIC].ledger.entries_of(3))) == 1


def test_a_send_for_an_unknown_producer_closes_the_connection(served):
    lab, server = served
    with raw_client(server.url) as raw:
        raw.handshake()
        raw.send_raw(_send_frame(42, 0, b"who?"))
        assert raw.closed_by_server()
    assert any("producer is not ready : 42" in r for r in _closed_reasons(server))


def test_a_client_that_does_not_read_is_closed_and_memory_stays_bounded():
    with served_lab(max_write_buffer=256 * 1024) as (lab, server):
        with raw_client(server.url) as raw:
            raw.handshake()
            raw.send(
                Subscribe(
                    topic=TOPIC, subscription="slow", sub_type=ConsumerType.Exclusive, consumer_id=1, request_id=1
                )
            )
            raw.expect(CommandType.SUCCESS)
            raw.send(Flow(consumer_id=1, message_permits=100_000))
            wait_until(
                lambda: (
                    server.call(
                        lambda: lab.service.topics[TOPIC].subscriptions["slow"].consumers()[0].available_permits
                    )
                    > 0
                ),
                what="the permits",
            )
            producer = server.call(lambda: lab.client().create_producer(TOPIC))
            payload = b"x" * (256 * 1024)
            for _ in range(200):  # 50 MiB that the raw client never reads
                server.call(producer.send, payload)
                if any("does not read" in r for r in _closed_reasons(server)):
                    break
            wait_until(lambda: any("does not read" in r for r in _closed_reasons(server)), what="the close")
        _round_trip(server, "after-slow-reader")


def test_not_modelled_requests_get_an_error_reply():
    with served_lab() as (lab, server), raw_client(server.url) as raw:
        raw.handshake()
        raw.send_raw(simple_frame(b"\x08\x32\x92\x03\x02\x08\x09"))  # NEW_TXN{request_id 9}
        err = raw.expect(CommandType.ERROR)
        assert (err.request_id, err.error) == (9, ServerError.NotAllowedError)
        assert "NEW_TXN" in err.message
        raw.send_raw(
            simple_frame(encode_command(Send(producer_id=1, sequence_id=1)).replace(b"\x08\x06", b"\x08\x07", 1))
        )
        assert raw.closed_by_server()  # a SEND_RECEIPT from a client breaks the protocol
    assert any("unexpected command SEND_RECEIPT" in c.reason for c in server.closed_connections)


def test_random_streams_never_stop_the_server():
    rng = random.Random(11)
    with served_lab() as (lab, server):
        for i in range(25):
            with raw_client(server.url) as raw:
                if i % 2:
                    raw.handshake()
                data = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 400)))
                if i % 3 == 0:  # a plausible header in front of the garbage
                    data = struct.pack(">II", len(data) + 4, rng.randint(0, len(data))) + data
                raw.send_raw(data)
        _round_trip(server, "after-random")
        assert server.running


def test_the_lab_refuses_non_loopback_addresses_unless_asked():
    lab = pl.Lab()
    with pytest.raises(PermissionError, match="not a loopback address"):
        pl.serve.start(lab, "0.0.0.0", 0)
    with pytest.raises(PermissionError, match="allow_remote=True"):
        pl.serve.start(lab, "", 0)
    server = pl.serve.start(lab, "0.0.0.0", 0, allow_remote=True)
    try:
        assert server.url == f"pulsar://127.0.0.1:{server.port}"
        with raw_client(server.url) as raw:
            assert raw.handshake().server_version.startswith("Pulsar Server")
    finally:
        server.stop()
    assert not server.running


def test_closed_producer_ids_are_forgotten_after_one_keepalive_interval():
    # ServerCnx.recentlyClosedProducers: a SEND in flight for a just-closed producer is ignored, and the id is
    # removed after keepAliveIntervalSeconds; a connection whose client makes and closes a producer per request
    # kept every id it ever closed (one entry per producer, for the connection's life)
    from pulsarlab.serve.commands import CloseProducer
    from pulsarlab.serve.connection import ProtocolViolation, ServerConnection, State
    from pulsarlab.serve.frames import FrameDecoder
    from pulsarlab.serve.server import LabServer

    server = LabServer(pl.Lab(), port=0, keepalive_s=30.0)
    conn = ServerConnection(server)
    conn.state = State.CONNECTED
    producers = conn.producer_commands
    now = [0.0]
    producers._now = lambda: now[0]
    for producer_id in range(500):
        producers.on_producer(ProducerRequest(topic=TOPIC, producer_id=producer_id, request_id=producer_id), None)
        producers.on_close_producer(CloseProducer(producer_id=producer_id, request_id=1000 + producer_id), None)
        now[0] += 1.0  # one producer a second
    assert len(producers.recently_closed) == 31  # the ones closed in the last 30 s

    (frame,) = FrameDecoder(1 << 20).feed(_send_frame(499, 0, b"late"))
    conn._handle(frame)  # closed 1 s ago: ignored
    assert 499 in producers.recently_closed
    (frame,) = FrameDecoder(1 << 20).feed(_send_frame(0, 0, b"late"))
    with pytest.raises(ProtocolViolation, match="producer is not ready : 0"):
        conn._handle(frame)  # closed 499 s ago: forgotten, a protocol error as for any unknown producer
