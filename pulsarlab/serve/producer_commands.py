"""The producer commands of one connection: PRODUCER, SEND and CLOSE_PRODUCER.

Models `ServerCnx.handleProducer`, `handleSend` with `Producer.publishMessage`, and `handleCloseProducer`, with
`ServerCnx.recentlyClosedProducers`: PRODUCER goes through the topic's access modes (a ``WaitForExclusive``
producer is answered twice, ``producer_ready`` false then true; a fenced producer gets CLOSE_PRODUCER) and reports
the name's last sequence id when deduplication is on (a duplicate SEND is acknowledged with message id -1:-1);
its schema goes to the broker's registry (an incompatible one is refused with IncompatibleSchema) and
PRODUCER_SUCCESS carries its version; a SEND is verified (checksum, metadata) and stored through the
broker's command surface, answered with SEND_RECEIPT or SEND_ERROR; a SEND for a producer closed within one
keepalive interval is ignored, for any other unknown producer it is a protocol violation.

Simplifies: no transactions (a SEND in one is refused with NotAllowedError).
"""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any

import google_crc32c

from pulsarlab.broker.service import client_error_code
from pulsarlab.errors import PulsarError
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.serve.bridge import RemoteProducer
from pulsarlab.serve.codec import CodecError
from pulsarlab.serve.commands import (
    CloseProducer,
    ProducerAccessMode,
    ProducerRequest,
    ProducerSuccess,
    SendError,
    Success,
)
from pulsarlab.serve.entries import WireEntry, read_metadata
from pulsarlab.serve.frames import ChecksumMismatch, Frame, FrameError, ProtocolViolation, read_payload_section
from pulsarlab.serve.hot_commands import producer_prefix, send_receipt_frame
from pulsarlab.serve.schema_wire import model_schema, schema_version

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.connection import ServerConnection


class ProducerCommands:
    """The producer handlers of one `ServerConnection`, and the producer ids it closed lately."""

    def __init__(self, connection: "ServerConnection") -> None:
        self.server = connection.server
        self.service = connection.service
        self.producers = connection.producers  # the connection's: client producer id -> its producer
        self.send = connection.send
        self.error = connection.error
        self.write = connection.write
        # client producer id -> when it was closed (`ServerCnx.recentlyClosedProducers`): a SEND already in flight
        # for it is ignored for one keepalive interval, then forgotten
        self.recently_closed: dict[int, float] = {}
        self._closing_order: deque[tuple[int, float]] = deque()
        self._now = time.monotonic

    def on_producer(self, cmd: ProducerRequest, frame: Frame) -> None:
        """`ServerCnx.handleProducer`: the access mode may refuse the producer, or queue it (``WaitForExclusive``:
        PRODUCER_SUCCESS with ``producer_ready`` false now, a second one when it gets the topic)."""
        existing = self.producers.get(cmd.producer_id)
        if existing is not None:
            self.producer_success(cmd.request_id, existing)
            return
        try:
            topic = self.service.normalize(cmd.topic)
        except PulsarError as e:
            self.error(cmd.request_id, ServerError.InvalidTopicName, str(e))
            return
        svc = self.service
        lab_id = svc.new_producer_id()
        name = cmd.producer_name if cmd.producer_name else f"standalone-0-{lab_id}"
        mode = ProducerAccessMode(int(cmd.value("producer_access_mode")))
        try:
            schema_version = svc.add_schema(topic, model_schema(cmd.schema)) if cmd.schema is not None else None
            handle = svc.register_producer(
                lab_id,
                name,
                topic,
                cmd.initial_subscription_name,
                access_mode=mode,
                topic_epoch=cmd.topic_epoch,
                on_ready=self.producer_got_topic,
                on_fenced=self.producer_fenced,
            )
        except PulsarError as e:
            self.error(cmd.request_id, client_error_code(e), str(e))
            return
        producer = RemoteProducer(cmd.producer_id, handle, name, topic, producer_prefix(cmd.producer_id))
        producer.request_id = cmd.request_id
        producer.schema_version = schema_version
        self.producers[cmd.producer_id] = producer
        self.recently_closed.pop(cmd.producer_id, None)
        self.producer_success(cmd.request_id, producer)

    def producer_success(self, request_id: int, producer: RemoteProducer) -> None:
        handle = producer.handle
        self.send(
            ProducerSuccess(
                request_id=request_id,
                producer_name=producer.name,
                last_sequence_id=handle.last_published_sequence_id(),
                schema_version=None if producer.schema_version is None else schema_version(producer.schema_version),
                topic_epoch=handle.topic_epoch,
                producer_ready=None if handle.ready else False,
            )
        )

    def remote_producer(self, handle: Any) -> RemoteProducer | None:
        for p in self.producers.values():
            if p.handle is handle:
                return p
        return None

    def producer_got_topic(self, handle: Any) -> None:
        """A queued ``WaitForExclusive`` producer got the topic: its PRODUCER completes now."""
        producer = self.remote_producer(handle)
        if producer is not None:
            self.producer_success(producer.request_id, producer)

    def producer_fenced(self, handle: Any, reason: str) -> None:
        """Fenced out by an ``ExclusiveWithFencing`` producer: a waiting PRODUCER fails with ProducerFenced; a
        producer that was producing is closed (CLOSE_PRODUCER; the client's reconnect is then refused)."""
        producer = self.remote_producer(handle)
        if producer is None:
            return
        del self.producers[producer.client_id]
        self.closed_producer(producer.client_id)
        if handle.topic_epoch is None and handle.access_mode is ProducerAccessMode.WaitForExclusive:
            self.error(producer.request_id, ServerError.ProducerFenced, reason)
        else:
            self.send(CloseProducer(producer.client_id, 0))

    def on_send(self, cmd: Any, frame: Frame) -> None:  # only when the fast path did not recognise the frame
        self.publish(
            frame,
            cmd.producer_id,
            cmd.sequence_id,
            cmd.highest_sequence_id,
            bool(cmd.txnid_least_bits or cmd.txnid_most_bits),
        )

    def publish(self, frame: Frame, producer_id: int, sequence_id: int, highest: int | None, txn: bool) -> None:
        """`ServerCnx.handleSend` + `Producer.publishMessage`: verify, store, answer SEND_RECEIPT."""
        producer = self.producers.get(producer_id)
        if producer is None:
            closed_at = self.recently_closed.get(producer_id)
            if closed_at is not None and self._now() - closed_at <= self.server.keepalive_s:
                return
            raise ProtocolViolation(f"Received message, but the producer is not ready : {producer_id}")
        if txn:
            self.send_error(
                producer_id,
                sequence_id,
                ServerError.NotAllowedError,
                "transactions are not modelled by the pulsarlab broker",
            )
            return
        try:
            section = read_payload_section(frame.buf, frame.payload_start, frame.end)
        except ChecksumMismatch:
            self.send_error(producer_id, sequence_id, ServerError.ChecksumError, "Checksum failed on the broker")
            return
        except FrameError as e:
            raise ProtocolViolation(f"SEND without a valid payload: {e}") from None
        wire = section.wire
        try:
            meta, plain = read_metadata(wire, 4, section.metadata_end, self.server.clock.offset_ms)
        except CodecError as e:
            raise ProtocolViolation(f"SEND with malformed metadata: {e}") from None
        checksum = section.checksum
        if checksum is None:
            checksum = google_crc32c.value(wire)
        entry = WireEntry.from_wire(meta, wire, checksum.to_bytes(4, "big"), plain, section.metadata_end)
        try:
            pos = self.service.publish(producer.handle, entry, highest)
        except PulsarError as e:
            self.send_error(producer_id, sequence_id, client_error_code(e), str(e))
            return
        self.write(send_receipt_frame(producer.prefix, sequence_id, highest, pos.ledger_id, pos.entry_id))

    def send_error(self, producer_id: int, sequence_id: int, code: ServerError, message: str) -> None:
        self.send(SendError(producer_id, sequence_id, code, message))

    def on_close_producer(self, cmd: CloseProducer, frame: Frame) -> None:
        producer = self.producers.pop(cmd.producer_id, None)
        if producer is not None:
            self.release_producer(producer)
            self.closed_producer(cmd.producer_id)
        self.send(Success(cmd.request_id))

    def closed_producer(self, producer_id: int) -> None:
        """Remember a closed producer for one keepalive interval (Pulsar schedules its removal after
        ``keepAliveIntervalSeconds``); the ones closed longer ago are forgotten now, oldest first."""
        closed, order = self.recently_closed, self._closing_order
        now = self._now()
        closed[producer_id] = now
        order.append((producer_id, now))
        horizon = now - self.server.keepalive_s
        while order[0][1] < horizon:
            oldest, closed_at = order.popleft()
            if closed.get(oldest) == closed_at:  # not closed again since (`remove(producerId, epoch)`)
                del closed[oldest]

    def release_producer(self, producer: RemoteProducer) -> None:
        self.service.unregister_producer(producer.handle)


__all__ = ["ProducerCommands"]
