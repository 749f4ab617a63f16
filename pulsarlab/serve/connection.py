"""One client connection: the handshake, the dispatch of its commands, keepalive, and the bytes going back.

Models `ServerCnx` (with `PulsarDecoder` dispatching the commands): CONNECT must come first and is answered by
CONNECTED; PING and PONG keep it alive. The other commands go to the handlers of what they concern, one object each
per connection, over the connection's producers and consumers: lookups, partitioned metadata, topics of a namespace
and schemas (`lookup_commands`), PRODUCER / SEND / CLOSE_PRODUCER (`producer_commands`), SUBSCRIBE / FLOW / ACK /
REDELIVER_UNACKNOWLEDGED_MESSAGES / SEEK / UNSUBSCRIBE / CLOSE_CONSUMER / GET_LAST_MESSAGE_ID / CONSUMER_STATS
(`consumer_commands`). They call the broker's command surface (`BrokerService`) with the command's fields, and
nothing else of the broker; failures are answered with the `ServerError` codes the broker maps its exceptions to
(`client_error_code`) and the model's texts (which are Pulsar's). Client ids are per connection, so each producer
and consumer also gets a lab-wide id. Closing the connection closes its consumers (their unacknowledged messages go
back for redelivery; a reader's non-durable subscription goes with its last consumer) and producers.

A frame that breaks the protocol - one that is too large, truncated lengths, a command that does not decode,
an unknown command type, anything before CONNECT, a SEND for a producer that does not exist - closes the
connection, as Pulsar's broker does (`exceptionCaught` -> close); the reason is kept in
`LabServer.closed_connections`. A SEND whose checksum is wrong is answered with SEND_ERROR(ChecksumError), as
`Producer.publishMessage` does, and the connection stays. Known requests the lab does not model (transactions,
topic watchers) get ERROR(NotAllowedError). SEND and ACK, the commands of every message, are recognised from their
first bytes and decoded by `hot_commands` without building a command object.

Simplifies: no authentication or authorization, no broker entry metadata on MESSAGE, no topic migration.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.serve.bridge import RemoteConsumer, RemoteProducer
from pulsarlab.serve.codec import CodecError, decode_varint
from pulsarlab.serve.commands import (
    AckResponse,
    CommandType,
    Connect,
    Connected,
    Error,
    Ping,
    Pong,
    RawCommand,
    UnknownCommand,
    encode_command,
    read_envelope,
    request_id_of,
)
from pulsarlab.serve.consumer_commands import ConsumerCommands
from pulsarlab.serve.frames import Frame, FrameDecoder, FrameError, ProtocolViolation, simple_frame
from pulsarlab.serve.hot_commands import read_ack, read_send
from pulsarlab.serve.lookup_commands import LookupCommands
from pulsarlab.serve.producer_commands import ProducerCommands

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
        # the command handlers, by what they concern (each reads and changes the producers and consumers above)
        self.lookup_commands = lookups = LookupCommands(self)
        self.producer_commands = producers = ProducerCommands(self)
        self.consumer_commands = consumers = ConsumerCommands(self)
        self._publish = producers.publish  # the hot paths' handlers, bound once
        self._send_error = producers.send_error
        self._apply_ack = consumers.apply_ack
        self._handlers: dict[CommandType, Callable[[Any, Frame], None]] = {
            CommandType.CONNECT: self._on_connect,
            CommandType.PING: self._on_ping,
            CommandType.PONG: self._on_pong,
            CommandType.PARTITIONED_METADATA: lookups.on_partition_metadata,
            CommandType.LOOKUP: lookups.on_lookup,
            CommandType.GET_TOPICS_OF_NAMESPACE: lookups.on_get_topics,
            CommandType.GET_SCHEMA: lookups.on_get_schema,
            CommandType.GET_OR_CREATE_SCHEMA: lookups.on_get_or_create_schema,
            CommandType.PRODUCER: producers.on_producer,
            CommandType.SEND: producers.on_send,
            CommandType.CLOSE_PRODUCER: producers.on_close_producer,
            CommandType.SUBSCRIBE: consumers.on_subscribe,
            CommandType.FLOW: consumers.on_flow,
            CommandType.ACK: consumers.on_ack,
            CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES: consumers.on_redeliver,
            CommandType.UNSUBSCRIBE: consumers.on_unsubscribe,
            CommandType.CLOSE_CONSUMER: consumers.on_close_consumer,
            CommandType.SEEK: consumers.on_seek,
            CommandType.GET_LAST_MESSAGE_ID: consumers.on_get_last_message_id,
            CommandType.CONSUMER_STATS: consumers.on_consumer_stats,
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

    def forget_consumer(self, cnx: RemoteConsumer) -> None:
        if self.consumers.get(cnx.consumer_id) is cnx:
            del self.consumers[cnx.consumer_id]

    # --- teardown -------------------------------------------------------------------------------
    def _release_all(self) -> None:
        consumers = list(self.consumers.values())
        self.consumers.clear()
        for cnx in consumers:
            self.consumer_commands.release_consumer(cnx, "disconnected")
        producers = list(self.producers.values())
        self.producers.clear()
        for p in producers:
            self.producer_commands.release_producer(p)

    def encoded_entry(self, data: Any) -> tuple[bytes, bytes]:
        return self.server.encoded.get(data, self.server.clock.offset_ms)

    def __repr__(self) -> str:
        return (
            f"<ServerConnection {self.peer} {self.state.value} producers={len(self.producers)} "
            f"consumers={len(self.consumers)}>"
        )


__all__ = ["ProtocolViolation", "ServerConnection", "State"]
