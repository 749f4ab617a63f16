"""One client connection: the handshake, the command handlers, and the bytes going back.

Models `ServerCnx` (with `PulsarDecoder` dispatching the commands): CONNECT must come first and is answered by
CONNECTED; lookups answer with this server as the broker; PRODUCER / SEND / CLOSE_PRODUCER, SUBSCRIBE / FLOW /
ACK / REDELIVER_UNACKNOWLEDGED_MESSAGES / SEEK / UNSUBSCRIBE / CLOSE_CONSUMER, GET_LAST_MESSAGE_ID,
GET_TOPICS_OF_NAMESPACE, GET_SCHEMA and CONSUMER_STATS call the broker's command surface (`BrokerService`) with
the command's fields, and nothing else of the broker; failures are answered with the `ServerError` codes the broker
maps its exceptions to (`client_error_code`) and the model's texts (which are Pulsar's). Client ids are per
connection, so each producer and consumer also gets a lab-wide id. Closing the connection closes its consumers
(their unacknowledged messages go back for redelivery; a reader's non-durable subscription goes with its last
consumer) and producers.

A frame that breaks the protocol - one that is too large, truncated lengths, a command that does not decode,
an unknown command type, anything before CONNECT, a SEND for a producer that does not exist - closes the
connection, as Pulsar's broker does (`exceptionCaught` -> close); the reason is kept in
`LabServer.closed_connections`. A SEND whose checksum is wrong is answered with SEND_ERROR(ChecksumError), as
`Producer.publishMessage` does, and the connection stays. Known requests the lab does not model (transactions,
topic watchers) get ERROR(NotAllowedError).

Lookups, PRODUCER and SUBSCRIBE on a topic of a namespace that does not exist fail with TopicNotFound. PRODUCER
goes through the topic's access modes (a ``WaitForExclusive`` producer is answered twice, ``producer_ready`` false
then true; a fenced producer gets CLOSE_PRODUCER) and reports the name's last sequence id when deduplication is
on; a duplicate SEND is acknowledged with message id -1:-1.

Schemas of PRODUCER, SUBSCRIBE and GET_OR_CREATE_SCHEMA go to the broker's registry (an incompatible one is
refused with IncompatibleSchema); PRODUCER_SUCCESS and GET_SCHEMA carry versions.

Simplifies: no authentication or authorization, readers'
non-durable cursors are modelled as subscriptions deleted when their consumer goes, a seek to a batch index
resets to its entry, no broker entry metadata on MESSAGE, no topic migration.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

import google_crc32c

from pulsarlab.broker.schema_registry import SCHEMA_TYPES, SchemaData
from pulsarlab.broker.service import client_error_code, namespace_of
from pulsarlab.errors import PulsarError
from pulsarlab.protocol.acks import AckCommand, AckType
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, KeySharedMode
from pulsarlab.serve import topic_list
from pulsarlab.serve.bridge import RemoteConsumer, RemoteProducer
from pulsarlab.serve.codec import CodecError, decode_varint
from pulsarlab.serve.commands import (
    Ack,
    AckResponse,
    CloseConsumer,
    CloseProducer,
    CommandType,
    Connect,
    Connected,
    ConsumerStats,
    ConsumerStatsResponse,
    Error,
    Flow,
    GetLastMessageId,
    GetLastMessageIdResponse,
    GetOrCreateSchema,
    GetOrCreateSchemaResponse,
    GetSchema,
    GetSchemaResponse,
    GetTopicsOfNamespace,
    GetTopicsOfNamespaceResponse,
    KeyValue,
    LookupKind,
    LookupRequest,
    LookupResponse,
    MetadataLookupKind,
    MsgId,
    PartitionMetadataRequest,
    PartitionMetadataResponse,
    Ping,
    Pong,
    ProducerAccessMode,
    ProducerRequest,
    ProducerSuccess,
    RawCommand,
    RedeliverUnacked,
    SchemaInfo,
    SchemaKind,
    Seek,
    SendError,
    Subscribe,
    Success,
    UnknownCommand,
    Unsubscribe,
    encode_command,
    read_envelope,
    request_id_of,
)
from pulsarlab.serve.entries import WireEntry, read_metadata
from pulsarlab.serve.frames import ChecksumMismatch, Frame, FrameDecoder, FrameError, read_payload_section, simple_frame
from pulsarlab.serve.hot_commands import producer_prefix, read_ack, read_send, send_receipt_frame

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.server import LabServer

log = logging.getLogger("pulsarlab.serve")

CLOSE_GRACE_S = 5.0
SERVER_PROTOCOL_VERSION = 21  # what a 3.x/4.x broker announces; CONNECTED carries min(client's, this)
# commands a client may send that the lab answers with ERROR(NotAllowedError) instead of closing
_NOT_MODELLED = frozenset(
    {
        CommandType.NEW_TXN,
        CommandType.ADD_PARTITION_TO_TXN,
        CommandType.ADD_SUBSCRIPTION_TO_TXN,
        CommandType.END_TXN,
        CommandType.END_TXN_ON_PARTITION,
        CommandType.END_TXN_ON_SUBSCRIPTION,
        CommandType.TC_CLIENT_CONNECT_REQUEST,
        CommandType.WATCH_TOPIC_LIST,
        CommandType.WATCH_TOPIC_LIST_CLOSE,
    }
)


class ProtocolViolation(Exception):
    """The client broke the protocol; the connection is closed with this reason."""


class State(enum.Enum):
    START = "start"
    CONNECTED = "connected"
    CLOSED = "closed"


class ServerConnection(asyncio.Protocol):
    """`ServerCnx` of one TCP connection to a `LabServer`."""

    def __init__(self, server: "LabServer") -> None:
        self.server = server
        self.lab = server.lab
        self.service = server.lab.service
        self.decoder = FrameDecoder(server.max_frame_size)
        self.state = State.START
        self.transport: asyncio.Transport | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.peer = "?"
        self.client_version: str | None = None
        self.protocol_version = 0
        self.producers: dict[int, RemoteProducer] = {}
        self.consumers: dict[int, RemoteConsumer] = {}
        # client producer id -> when it was closed (`ServerCnx.recentlyClosedProducers`): a SEND already in flight
        # for it is ignored for one keepalive interval, then forgotten
        self._recently_closed_producers: dict[int, float] = {}
        self._closing_order: deque[tuple[int, float]] = deque()
        self._now = time.monotonic
        self._out: list[bytes] = []
        self._out_lock = threading.Lock()
        self._flush_pending = False
        self._seen_since_ping = True
        self._waiting_for_pong = False
        self._keepalive: asyncio.TimerHandle | None = None
        self.close_reason: str | None = None
        self._closing = False
        self.frames_in = 0
        self.bytes_in = 0
        self.opened_at = time.time()
        self._handlers: dict[CommandType, Callable[[Any, Frame], None]] = {
            CommandType.CONNECT: self._on_connect,
            CommandType.PING: self._on_ping,
            CommandType.PONG: self._on_pong,
            CommandType.PARTITIONED_METADATA: self._on_partition_metadata,
            CommandType.LOOKUP: self._on_lookup,
            CommandType.PRODUCER: self._on_producer,
            CommandType.SEND: self._on_send,
            CommandType.CLOSE_PRODUCER: self._on_close_producer,
            CommandType.SUBSCRIBE: self._on_subscribe,
            CommandType.FLOW: self._on_flow,
            CommandType.ACK: self._on_ack,
            CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES: self._on_redeliver,
            CommandType.UNSUBSCRIBE: self._on_unsubscribe,
            CommandType.CLOSE_CONSUMER: self._on_close_consumer,
            CommandType.SEEK: self._on_seek,
            CommandType.GET_LAST_MESSAGE_ID: self._on_get_last_message_id,
            CommandType.GET_TOPICS_OF_NAMESPACE: self._on_get_topics,
            CommandType.GET_SCHEMA: self._on_get_schema,
            CommandType.GET_OR_CREATE_SCHEMA: self._on_get_or_create_schema,
            CommandType.CONSUMER_STATS: self._on_consumer_stats,
        }

    # --- asyncio --------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.loop = asyncio.get_running_loop()
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.server.connection_opened(self)
        self._arm_keepalive()

    def data_received(self, data: bytes) -> None:
        if self.state is State.CLOSED or self._closing:
            return
        self._seen_since_ping = True
        self.bytes_in += len(data)
        try:
            frames = self.decoder.feed(data)
        except FrameError as e:
            self.close(f"protocol error: {e}")
            return
        if not frames:
            return
        server = self.server
        with server.lock:
            server.clock.catch_up()
            try:
                for frame in frames:
                    if self.state is State.CLOSED or self._closing:
                        break
                    self.frames_in += 1
                    self._handle(frame)
            except ProtocolViolation as e:
                self.close(f"protocol error: {e}")
            finally:
                server.rearm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.close_reason is None:
            self.close_reason = "closed by the client" if exc is None else f"connection lost: {exc}"
        self.state = State.CLOSED
        if self._keepalive is not None:
            self._keepalive.cancel()
            self._keepalive = None
        with self.server.lock:
            self._release_all()
            self.server.rearm()
        self.server.connection_closed(self)

    # --- writing --------------------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Queue bytes for the client; they go out once the current network-loop step ends (any thread)."""
        if self.state is State.CLOSED or self._closing:
            return
        with self._out_lock:
            self._out.append(data)
            if self._flush_pending:
                return
            self._flush_pending = True
        loop = self.loop
        if loop is None:
            return
        if self.server.in_loop_thread():
            loop.call_soon(self._flush)
        else:
            loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._out_lock:
            out = self._out
            self._out = []
            self._flush_pending = False
        transport = self.transport
        if not out or transport is None or self.state is State.CLOSED or transport.is_closing():
            return
        transport.write(out[0] if len(out) == 1 else b"".join(out))
        if transport.get_write_buffer_size() > self.server.max_write_buffer:
            self.close(
                f"the client does not read: more than {self.server.max_write_buffer} bytes waiting to be sent",
                abort=True,
            )

    def send(self, body: Any) -> None:
        self.write(simple_frame(encode_command(body)))

    def error(self, request_id: int, code: ServerError, message: str) -> None:
        self.send(Error(request_id, code, message))

    def close(self, reason: str, *, abort: bool = False) -> None:
        """Close the connection and remember why: pending bytes are still sent (for at most ``CLOSE_GRACE_S``),
        or dropped with ``abort``."""
        if self.state is State.CLOSED or self._closing:
            return
        self._closing = True
        if self.close_reason is None:
            self.close_reason = reason
        if reason.startswith("protocol error") or reason.startswith("the client does not read"):
            log.warning("closing connection from %s: %s", self.peer, reason)
        else:
            log.info("closing connection from %s: %s", self.peer, reason)
        transport = self.transport
        if transport is None:
            return
        if abort:
            transport.abort()
            return
        if self._out:
            self._flush()
        transport.close()
        if self.loop is not None:  # a peer that never reads would keep a closing transport open
            self.loop.call_later(CLOSE_GRACE_S, transport.abort)

    # --- keepalive (ServerCnx.handleKeepAliveTimeout) -------------------------------------------
    def _arm_keepalive(self) -> None:
        interval = self.server.keepalive_s
        if interval and self.loop is not None and self.state is not State.CLOSED:
            self._keepalive = self.loop.call_later(interval, self._on_keepalive)

    def _on_keepalive(self) -> None:
        self._keepalive = None
        if self.state is State.CLOSED:
            return
        if self._waiting_for_pong and not self._seen_since_ping:
            self.close("keepalive: no reply to PING")
            return
        if not self._seen_since_ping and self.state is State.CONNECTED:
            self._waiting_for_pong = True
            self.send(Ping())
        self._seen_since_ping = False
        self._arm_keepalive()

    # --- dispatch -------------------------------------------------------------------------------
    def _handle(self, frame: Frame) -> None:
        buf = frame.buf
        cs, ce = frame.command_start, frame.command_end
        # the hot paths: SEND (type 6, body in field 6) and ACK (type 10, body in field 10), written type first
        if (
            ce - cs > 3
            and buf[cs] == 0x08
            and (buf[cs + 1] == 0x06 and buf[cs + 2] == 0x32 or buf[cs + 1] == 0x0A and buf[cs + 2] == 0x52)
        ):
            send = buf[cs + 1] == 0x06
            try:
                n, p = decode_varint(buf, cs + 3, ce)
                if p + n > ce:
                    raise CodecError("the command body runs past the command")
                fields = read_send(buf, p, p + n) if send else read_ack(buf, p, p + n)
            except CodecError as e:
                raise ProtocolViolation(f"malformed {'SEND' if send else 'ACK'}: {e}") from None
            if self.state is not State.CONNECTED:
                raise ProtocolViolation(f"{'SEND' if send else 'ACK'} before CONNECT")
            try:
                if send:
                    self._publish(frame, *fields)
                else:
                    self._apply_ack(*fields)
            except ProtocolViolation:
                raise
            except Exception as e:  # a model bug: this command fails, the connection stays (as below)
                log.exception("error handling %s from %s", "SEND" if send else "ACK", self.peer)
                if send:
                    self._send_error(fields[0], fields[1], ServerError.UnknownError, f"{type(e).__name__}: {e}")
                elif fields[4] is not None:
                    self.send(
                        AckResponse(
                            consumer_id=fields[0],
                            error=ServerError.UnknownError,
                            message=f"{type(e).__name__}: {e}",
                            request_id=fields[4],
                        )
                    )
            return
        try:
            raw = read_envelope(buf, cs, ce)
        except UnknownCommand as e:
            raise ProtocolViolation(str(e)) from None
        except CodecError as e:
            raise ProtocolViolation(f"malformed command: {e}") from None
        if self.state is State.START and raw.type is not CommandType.CONNECT:
            raise ProtocolViolation(f"{raw.type.name} before CONNECT")
        handler = self._handlers.get(raw.type)
        if handler is None:
            self._not_handled(raw, buf)
            return
        try:
            body = raw.decode_body(buf)
        except CodecError as e:
            raise ProtocolViolation(f"malformed {raw.type.name}: {e}") from None
        try:
            handler(body, frame)
        except ProtocolViolation:
            raise
        except Exception as e:  # a model bug must not take the server down; the client hears about it
            log.exception("error handling %s from %s", raw.type.name, self.peer)
            request_id = getattr(body, "request_id", None)
            if request_id is not None:
                self.error(request_id, ServerError.UnknownError, f"{type(e).__name__}: {e}")

    def _not_handled(self, raw: RawCommand, buf: bytes) -> None:
        if raw.type in _NOT_MODELLED:
            request_id = request_id_of(buf, raw.body_start, raw.body_end)
            if request_id is not None:
                self.error(
                    request_id, ServerError.NotAllowedError, f"{raw.type.name} is not supported by the pulsarlab broker"
                )
                return
        raise ProtocolViolation(f"unexpected command {raw.type.name} from a client")

    # --- handshake ------------------------------------------------------------------------------
    def _on_connect(self, cmd: Connect, frame: Frame) -> None:
        if self.state is not State.START:
            raise ProtocolViolation("CONNECT after the handshake")
        self.client_version = cmd.client_version
        self.protocol_version = cmd.value("protocol_version")
        self.state = State.CONNECTED
        self.send(
            Connected(
                server_version=self.server.server_version,
                protocol_version=min(self.protocol_version, SERVER_PROTOCOL_VERSION),
                max_message_size=self.server.max_message_size,
            )
        )

    def _on_ping(self, cmd: Ping, frame: Frame) -> None:
        self.send(Pong())

    def _on_pong(self, cmd: Pong, frame: Frame) -> None:
        self._waiting_for_pong = False

    # --- lookups --------------------------------------------------------------------------------
    def _topic_name(self, name: str) -> str:
        return self.service.normalize(name)

    def _lookup_topic(self, name: str) -> tuple[str, None] | tuple[None, tuple[ServerError, str]]:
        """A lookup's topic, or why the lookup fails: an invalid name, or a namespace that does not exist."""
        try:
            topic = self._topic_name(name)
        except PulsarError as e:
            return None, (ServerError.InvalidTopicName, str(e))
        if not self.service.namespace_exists(namespace_of(topic)):
            return None, (ServerError.TopicNotFound, "Namespace does not exist")
        return topic, None

    def _on_partition_metadata(self, cmd: PartitionMetadataRequest, frame: Frame) -> None:
        topic, failure = self._lookup_topic(cmd.topic)
        if failure is not None:
            error, message = failure
            self.send(
                PartitionMetadataResponse(
                    request_id=cmd.request_id, response=MetadataLookupKind.Failed, error=error, message=message
                )
            )
            return
        self.send(
            PartitionMetadataResponse(
                partitions=self.service.partition_count(topic),
                request_id=cmd.request_id,
                response=MetadataLookupKind.Success,
            )
        )

    def _on_lookup(self, cmd: LookupRequest, frame: Frame) -> None:
        _, failure = self._lookup_topic(cmd.topic)
        if failure is not None:
            error, message = failure
            self.send(
                LookupResponse(request_id=cmd.request_id, response=LookupKind.Failed, error=error, message=message)
            )
            return
        url = self.server.url
        listener = cmd.advertised_listener_name
        if listener:  # NamespaceService: a listener name the broker does not advertise fails the lookup
            url = self.server.advertised_listeners.get(listener)
            if url is None:
                self.send(
                    LookupResponse(
                        request_id=cmd.request_id,
                        response=LookupKind.Failed,
                        error=ServerError.ServiceNotReady,
                        message=f"the broker do not have {listener} listener",
                    )
                )
                return
        self.send(
            LookupResponse(
                broker_service_url=url,
                response=LookupKind.Connect,
                request_id=cmd.request_id,
                authoritative=True,
            )
        )

    def _on_get_topics(self, cmd: GetTopicsOfNamespace, frame: Frame) -> None:
        topics = self.service.topics_of_namespace(cmd.namespace, cmd.value("mode").name)
        found = topic_list.answer(topics, cmd.topics_pattern, cmd.topics_hash)
        self.send(
            GetTopicsOfNamespaceResponse(
                request_id=cmd.request_id,
                topics=found.topics,
                filtered=found.filtered,
                topics_hash=found.topics_hash,
                changed=found.changed,
            )
        )

    def _on_get_schema(self, cmd: GetSchema, frame: Frame) -> None:
        """`ServerCnx.handleGetSchema`: the topic's latest schema, or the version asked for."""
        version = int.from_bytes(cmd.schema_version, "big", signed=True) if cmd.schema_version else None
        try:
            found = self.service.get_schema(self._topic_name(cmd.topic), version)
        except PulsarError:
            found = None
        if found is None:
            self.send(
                GetSchemaResponse(
                    request_id=cmd.request_id,
                    error_code=ServerError.TopicNotFound,
                    error_message="Topic not found or no-schema",
                )
            )
            return
        number, schema = found
        self.send(
            GetSchemaResponse(request_id=cmd.request_id, schema=_wire_schema(schema), schema_version=_version(number))
        )

    def _on_get_or_create_schema(self, cmd: GetOrCreateSchema, frame: Frame) -> None:
        try:
            version = self.service.add_schema(self._topic_name(cmd.topic), _model_schema(cmd.schema))
        except PulsarError as e:
            self.send(
                GetOrCreateSchemaResponse(
                    request_id=cmd.request_id, error_code=client_error_code(e), error_message=str(e)
                )
            )
            return
        self.send(GetOrCreateSchemaResponse(request_id=cmd.request_id, schema_version=_version(version)))

    # --- producers ------------------------------------------------------------------------------
    def _on_producer(self, cmd: ProducerRequest, frame: Frame) -> None:
        """`ServerCnx.handleProducer`: the access mode may refuse the producer, or queue it (``WaitForExclusive``:
        PRODUCER_SUCCESS with ``producer_ready`` false now, a second one when it gets the topic)."""
        existing = self.producers.get(cmd.producer_id)
        if existing is not None:
            self._producer_success(cmd.request_id, existing)
            return
        try:
            topic = self._topic_name(cmd.topic)
        except PulsarError as e:
            self.error(cmd.request_id, ServerError.InvalidTopicName, str(e))
            return
        svc = self.service
        lab_id = svc.new_producer_id()
        name = cmd.producer_name if cmd.producer_name else f"standalone-0-{lab_id}"
        mode = ProducerAccessMode(int(cmd.value("producer_access_mode")))
        try:
            schema_version = svc.add_schema(topic, _model_schema(cmd.schema)) if cmd.schema is not None else None
            handle = svc.register_producer(
                lab_id,
                name,
                topic,
                cmd.initial_subscription_name,
                access_mode=mode,
                topic_epoch=cmd.topic_epoch,
                on_ready=self._producer_got_topic,
                on_fenced=self._producer_fenced,
            )
        except PulsarError as e:
            self.error(cmd.request_id, client_error_code(e), str(e))
            return
        producer = RemoteProducer(cmd.producer_id, handle, name, topic, producer_prefix(cmd.producer_id))
        producer.request_id = cmd.request_id
        producer.schema_version = schema_version
        self.producers[cmd.producer_id] = producer
        self._recently_closed_producers.pop(cmd.producer_id, None)
        self._producer_success(cmd.request_id, producer)

    def _producer_success(self, request_id: int, producer: RemoteProducer) -> None:
        handle = producer.handle
        self.send(
            ProducerSuccess(
                request_id=request_id,
                producer_name=producer.name,
                last_sequence_id=handle.last_published_sequence_id(),
                schema_version=None if producer.schema_version is None else _version(producer.schema_version),
                topic_epoch=handle.topic_epoch,
                producer_ready=None if handle.ready else False,
            )
        )

    def _remote_producer(self, handle: Any) -> RemoteProducer | None:
        for p in self.producers.values():
            if p.handle is handle:
                return p
        return None

    def _producer_got_topic(self, handle: Any) -> None:
        """A queued ``WaitForExclusive`` producer got the topic: its PRODUCER completes now."""
        producer = self._remote_producer(handle)
        if producer is not None:
            self._producer_success(producer.request_id, producer)

    def _producer_fenced(self, handle: Any, reason: str) -> None:
        """Fenced out by an ``ExclusiveWithFencing`` producer: a waiting PRODUCER fails with ProducerFenced; a
        producer that was producing is closed (CLOSE_PRODUCER; the client's reconnect is then refused)."""
        producer = self._remote_producer(handle)
        if producer is None:
            return
        del self.producers[producer.client_id]
        self._closed_producer(producer.client_id)
        if handle.topic_epoch is None and handle.access_mode is ProducerAccessMode.WaitForExclusive:
            self.error(producer.request_id, ServerError.ProducerFenced, reason)
        else:
            self.send(CloseProducer(producer.client_id, 0))

    def _on_send(self, cmd: Any, frame: Frame) -> None:  # only when the fast path did not recognise the frame
        self._publish(
            frame,
            cmd.producer_id,
            cmd.sequence_id,
            cmd.highest_sequence_id,
            bool(cmd.txnid_least_bits or cmd.txnid_most_bits),
        )

    def _publish(self, frame: Frame, producer_id: int, sequence_id: int, highest: int | None, txn: bool) -> None:
        """`ServerCnx.handleSend` + `Producer.publishMessage`: verify, store, answer SEND_RECEIPT."""
        producer = self.producers.get(producer_id)
        if producer is None:
            closed_at = self._recently_closed_producers.get(producer_id)
            if closed_at is not None and self._now() - closed_at <= self.server.keepalive_s:
                return
            raise ProtocolViolation(f"Received message, but the producer is not ready : {producer_id}")
        if txn:
            self._send_error(
                producer_id,
                sequence_id,
                ServerError.NotAllowedError,
                "transactions are not modelled by the pulsarlab broker",
            )
            return
        try:
            section = read_payload_section(frame.buf, frame.payload_start, frame.end)
        except ChecksumMismatch:
            self._send_error(producer_id, sequence_id, ServerError.ChecksumError, "Checksum failed on the broker")
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
            self._send_error(producer_id, sequence_id, client_error_code(e), str(e))
            return
        self.write(send_receipt_frame(producer.prefix, sequence_id, highest, pos.ledger_id, pos.entry_id))

    def _send_error(self, producer_id: int, sequence_id: int, code: ServerError, message: str) -> None:
        self.send(SendError(producer_id, sequence_id, code, message))

    def _on_close_producer(self, cmd: CloseProducer, frame: Frame) -> None:
        producer = self.producers.pop(cmd.producer_id, None)
        if producer is not None:
            self._release_producer(producer)
            self._closed_producer(cmd.producer_id)
        self.send(Success(cmd.request_id))

    def _closed_producer(self, producer_id: int) -> None:
        """Remember a closed producer for one keepalive interval (Pulsar schedules its removal after
        ``keepAliveIntervalSeconds``); the ones closed longer ago are forgotten now, oldest first."""
        closed, order = self._recently_closed_producers, self._closing_order
        now = self._now()
        closed[producer_id] = now
        order.append((producer_id, now))
        horizon = now - self.server.keepalive_s
        while order[0][1] < horizon:
            oldest, closed_at = order.popleft()
            if closed.get(oldest) == closed_at:  # not closed again since (`remove(producerId, epoch)`)
                del closed[oldest]

    def _release_producer(self, producer: RemoteProducer) -> None:
        self.service.unregister_producer(producer.handle)

    # --- consumers ------------------------------------------------------------------------------
    def _on_subscribe(self, cmd: Subscribe, frame: Frame) -> None:
        if cmd.consumer_id in self.consumers:
            self.send(Success(cmd.request_id))  # "Consumer with the same id is already created"
            return
        try:
            topic = self._topic_name(cmd.topic)
        except PulsarError as e:
            self.error(cmd.request_id, ServerError.InvalidTopicName, str(e))
            return
        sub_type = cmd.sub_type
        policy = None
        if sub_type is ConsumerType.KeyShared:
            meta = cmd.key_shared_meta
            try:
                if meta is not None and meta.mode is KeySharedMode.Sticky:
                    policy = ConsumerKeySharedPolicy(
                        KeySharedMode.Sticky,
                        bool(meta.allow_out_of_order_delivery),
                        [(r.start, r.end) for r in meta.hash_ranges],
                    )
                else:
                    policy = ConsumerKeySharedPolicy(
                        KeySharedMode.AutoSplit, bool(meta is not None and meta.allow_out_of_order_delivery)
                    )
            except PulsarError as e:
                self.error(cmd.request_id, ServerError.ConsumerAssignError, str(e))
                return
        initial = cmd.value("initial_position")
        durable = cmd.value("durable")
        svc = self.service
        lab_id = svc.new_consumer_id()
        name = cmd.consumer_name if cmd.consumer_name else f"consumer-{lab_id}"
        cnx = RemoteConsumer(self, cmd.consumer_id, topic, cmd.subscription, name, svc.partition_index(topic))
        start = cmd.start_message_id
        try:
            if cmd.schema is not None:
                svc.check_consumer_schema(topic, _model_schema(cmd.schema))
            consumer = svc.subscribe(
                cnx,
                consumer_id=lab_id,
                topic=topic,
                subscription=cmd.subscription,
                sub_type=sub_type,
                name=name,
                priority=cmd.value("priority_level") or 0,
                initial_position=initial,
                key_shared_policy=policy,
                partition_index=cnx.partition,
                durable=durable,
                start_message_id=start.ids() if start is not None else None,
                read_compacted=bool(cmd.read_compacted),
            )
        except PulsarError as e:
            self.error(cmd.request_id, client_error_code(e), str(e))
            return
        cnx.broker_consumer = consumer
        self.consumers[cmd.consumer_id] = cnx
        self.send(Success(cmd.request_id))

    def _consumer(self, consumer_id: int) -> RemoteConsumer | None:
        return self.consumers.get(consumer_id)

    def forget_consumer(self, cnx: RemoteConsumer) -> None:
        if self.consumers.get(cnx.consumer_id) is cnx:
            del self.consumers[cnx.consumer_id]

    def _on_flow(self, cmd: Flow, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is not None and cmd.message_permits > 0:
            self.service.flow(cnx.broker_consumer, cmd.message_permits)

    def _on_ack(self, cmd: Ack, frame: Frame) -> None:  # only when the fast path did not recognise the frame
        ids = tuple((m.ledger_id, m.entry_id, tuple(m.ack_set) if m.ack_set else None) for m in cmd.message_ids)
        self._apply_ack(
            cmd.consumer_id, int(cmd.ack_type), ids, {p.key: p.value for p in cmd.properties}, cmd.request_id
        )

    def _apply_ack(
        self, consumer_id: int, ack_type: int, ids: tuple, props: dict[str, int], request_id: int | None
    ) -> None:
        """`Consumer.messageAcked`; an ACK_RESPONSE when the client asked for a receipt (``request_id``)."""
        cnx = self.consumers.get(consumer_id)
        if cnx is None:
            if request_id is not None:
                self.send(
                    AckResponse(
                        consumer_id=consumer_id,
                        error=ServerError.ConsumerNotFound,
                        message=f"Consumer {consumer_id} not found",
                        request_id=request_id,
                    )
                )
            return
        kind = AckType.CUMULATIVE if ack_type == 1 else AckType.INDIVIDUAL  # CommandAck.AckType's numbers
        try:
            self.service.ack(cnx.broker_consumer, AckCommand(kind, ids, props))
        except PulsarError as e:
            if request_id is not None:
                self.send(
                    AckResponse(
                        consumer_id=consumer_id, error=client_error_code(e), message=str(e), request_id=request_id
                    )
                )
            return
        if request_id is not None:
            self.send(AckResponse(consumer_id=consumer_id, request_id=request_id))

    def _on_redeliver(self, cmd: RedeliverUnacked, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            return
        positions = [(m.ledger_id, m.entry_id) for m in cmd.message_ids] if cmd.message_ids else None
        self.service.redeliver_unacknowledged(cnx.broker_consumer, positions)

    def _on_unsubscribe(self, cmd: Unsubscribe, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.error(cmd.request_id, ServerError.MetadataError, "Consumer not found")
            return
        try:
            self.service.unsubscribe(cnx.broker_consumer)
        except PulsarError as e:
            self.error(cmd.request_id, client_error_code(e), str(e))
            return
        self.forget_consumer(cnx)
        self.send(Success(cmd.request_id))

    def _on_close_consumer(self, cmd: CloseConsumer, frame: Frame) -> None:
        cnx = self.consumers.pop(cmd.consumer_id, None)
        if cnx is not None:
            self._release_consumer(cnx, "closed")
        self.send(Success(cmd.request_id))

    def _release_consumer(self, cnx: RemoteConsumer, reason: str) -> None:
        consumer = cnx.broker_consumer
        if consumer is None:
            return
        self.service.close_consumer(consumer, reason)

    def _on_seek(self, cmd: Seek, frame: Frame) -> None:
        if cmd.message_id is None and cmd.message_publish_time is None:
            self.error(
                cmd.request_id, ServerError.MetadataError, "Message id and message publish time were not present"
            )
            return
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.error(cmd.request_id, ServerError.MetadataError, "Consumer not found")
            return
        try:
            if cmd.message_id is not None:
                self.service.reset_cursor(cnx.broker_consumer, cmd.message_id.ids())
            else:
                self.service.reset_cursor(
                    cnx.broker_consumer, publish_time=self.server.clock.to_virtual(cmd.message_publish_time)
                )
        except PulsarError as e:
            prefix = (
                "Error when resetting subscription: "
                if cmd.message_id is not None
                else "Reset subscription to publish time error: "
            )
            self.error(cmd.request_id, ServerError.UnknownError, prefix + str(e))
            return
        self.send(Success(cmd.request_id))

    def _on_get_last_message_id(self, cmd: GetLastMessageId, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.error(cmd.request_id, ServerError.MetadataError, "Consumer not found")
            return
        last = self.service.get_last_message_id(cnx.broker_consumer)
        last_id = MsgId(
            ledger_id=last.ledger_id, entry_id=last.entry_id, partition=last.partition, batch_index=last.batch_index
        )
        self.send(
            GetLastMessageIdResponse(
                last_message_id=last_id,
                request_id=cmd.request_id,
                consumer_mark_delete_position=MsgId(
                    ledger_id=last.mark_delete_ledger_id, entry_id=last.mark_delete_entry_id
                ),
            )
        )

    def _on_consumer_stats(self, cmd: ConsumerStats, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.send(
                ConsumerStatsResponse(
                    request_id=cmd.request_id,
                    error_code=ServerError.ConsumerNotFound,
                    error_message=f"Consumer {cmd.consumer_id} not found",
                )
            )
            return
        stats = self.service.consumer_stats(cnx.broker_consumer)
        self.send(
            ConsumerStatsResponse(
                request_id=cmd.request_id,
                msg_rate_out=0.0,
                msg_throughput_out=0.0,
                msg_rate_redeliver=0.0,
                consumer_name=stats.consumer_name,
                available_permits=stats.available_permits,
                unacked_messages=stats.unacked_messages,
                blocked_consumer_on_unacked_msgs=stats.blocked_consumer_on_unacked_msgs,
                address=self.peer,
                connected_since=stats.connected_since,
                type=stats.type,
                msg_rate_expired=0.0,
                msg_backlog=stats.msg_backlog,
                message_ack_rate=0.0,
            )
        )

    # --- teardown -------------------------------------------------------------------------------
    def _release_all(self) -> None:
        consumers = list(self.consumers.values())
        self.consumers.clear()
        for cnx in consumers:
            self._release_consumer(cnx, "disconnected")
        producers = list(self.producers.values())
        self.producers.clear()
        for p in producers:
            self._release_producer(p)

    def encoded_entry(self, data: Any) -> tuple[bytes, bytes]:
        return self.server.encoded.get(data, self.server.clock.offset_ms)

    def __repr__(self) -> str:
        return (
            f"<ServerConnection {self.peer} {self.state.value} producers={len(self.producers)} "
            f"consumers={len(self.consumers)}>"
        )


def _model_schema(schema: SchemaInfo) -> SchemaData:
    """A wire `Schema` as the registry's `SchemaData` (type by Pulsar's name)."""
    kind = int(schema.type)
    name = SCHEMA_TYPES[kind] if 0 <= kind < len(SCHEMA_TYPES) else f"TYPE_{kind}"
    return SchemaData(name, bytes(schema.schema_data), {p.key: p.value for p in schema.properties})


def _wire_schema(schema: SchemaData) -> SchemaInfo:
    kind = SCHEMA_TYPES.index(schema.type) if schema.type in SCHEMA_TYPES else 0
    return SchemaInfo(
        name=schema.type.lower(),
        schema_data=schema.data,
        type=SchemaKind(kind),
        properties=[KeyValue(k, v) for k, v in schema.properties.items()],
    )


def _version(number: int) -> bytes:
    """A schema version on the wire: 8 bytes, big-endian."""
    return number.to_bytes(8, "big", signed=True)


__all__ = ["ProtocolViolation", "ServerConnection", "State"]
