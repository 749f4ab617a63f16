"""The producer: sequence ids, batching through the containers, the batch timer, partition routing.

Models the Python ``pulsar.Producer`` over the C++ `ProducerImpl` / `PartitionedProducerImpl`
(docs/guide/sticky-key-hashing.md#sticky-key, docs/guide/producer-batching.md#default-batching; routing and container
rules in `client.routing` and `client.batching`):

* Each partition has its own producer with its own sequence-id counter, starting at
  ``initial_sequence_id + 1`` (0 by default); a ``sequence_id=`` given to ``send`` is used as is and does not
  move the counter. All partitions share the producer name.
* With batching on, a message goes to the partition's container; the container is flushed when it is full,
  when a message does not fit (flush, then add), when ``flush()`` is called, or by the batch timer armed
  ``batching_max_publish_delay_ms`` after the message that opened the batch (the C++ rule).
* ``send`` blocks like the real client: with batching on it waits, in virtual time, for the batch timer
  (so back-to-back ``send`` calls each make a batch of one, exactly the real client's behaviour);
  ``send_async`` does not wait.

Chunking (docs/guide/chunked-messages.md#chunk-count; rules in `client.chunking`): with ``chunking_enabled`` (batching
off) every message
is planned against the broker's ``maxMessageSize`` the client learnt on connect and sent as one entry or as
chunk entries, each its own SEND; the send completes with a `ChunkMessageId` when the last chunk is stored.
Without chunking an oversize message fails as the client fails it (`MessageTooBig` for the Python client,
``InvalidMessageException`` for Java); ``send`` raises it, ``send_async`` hands its result name to the callback.
Lab extras: ``lab_chunk_send_interval_ms`` spaces a producer's SENDs of chunks in virtual time (standing in for
the time it takes to write each chunk to the wire), so chunks of several producers interleave at the broker
as they do on a real cluster; ``crash()`` kills the producer with chunks still unsent.

Simplifies: no send timeout, pending-queue limits, compression, schemas, or deduplication; the
broker persists an entry synchronously (no network latency). ``deliver_at`` (lab-clock ms) and ``deliver_after``
(a ``timedelta``) set the entry's ``deliver_at_time``; such a message is never batched (C++ ``canAddToBatch``).
A send the broker refuses (a delay above ``delayedDeliveryMaxDelayInMillis``) fails: ``send`` raises
`NotAllowedException`, ``send_async`` calls back with ``"NotAllowedError"``.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from datetime import timedelta
from typing import TYPE_CHECKING

from pulsarlab.client.batching import Flushed, OutgoingMessage, SendCallback, make_container, non_batched_entry
from pulsarlab.client.chunking import (
    MessageTooBig,
    check_send_size,
    metadata_size_bound,
    plan_for_message,
    producer_name_field_size,
    sent_message_id,
    split_into_chunks,
)
from pulsarlab.client.configuration import ProducerConfiguration
from pulsarlab.client.library import ClientLibrary
from pulsarlab.client.routing import HashingScheme, MessageRouter
from pulsarlab.client.schemas import IncompatibleSchema
from pulsarlab.clock import Timer
from pulsarlab.errors import IllegalStateException, InvalidMessageException, PulsarClientException
from pulsarlab.errors import IncompatibleSchemaException as BrokerIncompatibleSchema
from pulsarlab.errors import NotAllowedException as BrokerNotAllowedException
from pulsarlab.errors import ProducerBusyException as BrokerProducerBusy
from pulsarlab.errors import ProducerFencedException as BrokerProducerFenced
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue.chunking import CHUNK_PUBLISHED, MESSAGE_TOO_BIG_EVENT, PRODUCER_CRASHED
from pulsarlab.events import UNDECLARED
from pulsarlab.ids import MessageId, trusted_message_id
from pulsarlab.messages import EntryData
from pulsarlab.protocol.handles import RegisteredProducer

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.client import Client


# send_async builds OutgoingMessage positionally (about twice as fast as by keyword): keep this order in step.
_OUTGOING_FIELDS = (
    "payload",
    "sequence_id",
    "properties",
    "partition_key",
    "ordering_key",
    "event_time",
    "deliver_at",
    "callback",
    "publish_time",
)
if tuple(f.name for f in dataclasses.fields(OutgoingMessage))[: len(_OUTGOING_FIELDS)] != _OUTGOING_FIELDS:
    raise ImportError("OutgoingMessage's fields changed order; update Producer.send_async")


def _deliver_at_time(now: int, deliver_at: int | None, deliver_after: timedelta | None) -> int:
    """The message's ``deliver_at_time``: ``deliver_at`` as given, or now + ``deliver_after``, which wins when both
    are given (the Python client sets ``deliver_after`` last on its ``MessageBuilder``)."""
    when = None
    if deliver_at is not None:
        if not isinstance(deliver_at, int) or isinstance(deliver_at, bool):
            raise TypeError(f"deliver_at must be an int timestamp in ms, not {type(deliver_at).__name__}")
        when = deliver_at
    if deliver_after is not None:
        if not isinstance(deliver_after, timedelta):
            raise TypeError(f"deliver_after must be a datetime.timedelta, not {type(deliver_after).__name__}")
        when = now + deliver_after // timedelta(milliseconds=1)  # exact (float seconds lose a ms)
    assert when is not None
    return when


class AlreadyClosedException(PulsarClientException):
    """``pulsar.AlreadyClosed``."""

    java_class = "org.apache.pulsar.client.api.PulsarClientException$AlreadyClosedException"


class NotAllowedException(PulsarClientException):
    """The broker refused the send (``ServerError.NotAllowed``): ``pulsar.NotAllowedError``."""

    java_class = "org.apache.pulsar.client.api.PulsarClientException$NotAllowedException"


class ProducerBusy(PulsarClientException):
    """The broker refused the producer (``ServerError.ProducerBusy``): ``pulsar.ProducerBusy``."""

    java_class = "org.apache.pulsar.client.api.PulsarClientException$ProducerBusyException"


class ProducerFenced(PulsarClientException):
    """The topic has (or took over with) an exclusive producer (``ServerError.ProducerFenced``):
    ``pulsar.ProducerFenced``."""

    java_class = "org.apache.pulsar.client.api.PulsarClientException$ProducerFencedException"


class _SendResult:
    """``send``'s callback: keeps the id; a failed send raises in ``send`` instead of reaching it."""

    __slots__ = ("ids",)
    raise_errors = True

    def __init__(self) -> None:
        self.ids: list[MessageId | None] = []

    def __call__(self, result: str, msg_id: MessageId | None) -> None:
        self.ids.append(msg_id)


def _result_name(error: PulsarClientException) -> str:
    """The ``pulsar.Result`` name a failed send reports to its callback."""
    return "MessageTooBig" if isinstance(error, MessageTooBig) else "InvalidMessage"


class _PartitionProducer:
    """`ProducerImpl` of one topic (or one partition): its sequence ids, container and batch timer."""

    def __init__(self, owner: "Producer", topic: str, partition: int) -> None:
        self.owner = owner
        self.topic = topic
        self.partition = partition
        self.next_sequence_id = owner._initial_sequence_id + 1
        self.last_sequence_id_published = owner._initial_sequence_id
        self.container = (
            make_container(
                owner.config.batching_type,
                owner._name,
                owner.config.batching_max_messages,
                owner.config.batching_max_allowed_size_in_bytes,
                client=owner._client_library,
                max_message_size=owner._max_message_size,
            )
            if owner._batching_enabled
            else None
        )
        self.timer: Timer | None = None
        # chunking: the SENDs not yet on the wire, (entry, message, ids of its stored chunks, last chunk?)
        self.outbound: deque[tuple[EntryData, OutgoingMessage, list[MessageId], bool]] = deque()
        self.wire_timer: Timer | None = None
        self.handle = self._register(None)
        # ProducerImpl.handleCreateProducer: with no initial sequence id, continue the broker's (deduplication)
        last = self.handle.last_published_sequence_id()
        if owner._initial_sequence_id == -1 and last >= 0:
            self.last_sequence_id_published = last
            self.next_sequence_id = last + 1

    def _register(self, topic_epoch: int | None) -> RegisteredProducer:
        owner = self.owner
        if owner._schema_data is not None:  # PRODUCER's schema: kept by the broker, or refused
            try:
                owner._service.add_schema(self.topic, owner._schema_data)
            except BrokerIncompatibleSchema as e:
                raise IncompatibleSchema(str(e)) from None
        try:
            return owner._service.register_producer(
                owner._id,
                owner._name,
                self.topic,
                access_mode=owner.config.access_mode,
                topic_epoch=topic_epoch,
                on_ready=owner._got_topic,
                on_fenced=owner._fenced_out,
                created_on=owner._topic,
                batching=owner._batching_enabled,
            )
        except BrokerProducerFenced as e:
            raise ProducerFenced(str(e)) from None
        except BrokerProducerBusy as e:
            raise ProducerBusy(str(e)) from None

    def send(self, msg: OutgoingMessage) -> None:
        container = self.container
        owner = self.owner
        if container is None or msg.deliver_at is not None:
            owner._check_size(msg)
            self._persist_one(
                non_batched_entry(owner._name, msg, owner._scheduler.now_ms, client=owner._client_library), msg
            )
            return
        if not container.has_space_for(msg):
            self.flush()
        first, full = container.add_and_check_first(msg)
        if full:
            self.flush()
        elif first and self.timer is None:
            delay = self.owner.config.batching_max_publish_delay_ms
            self.timer = self.owner._scheduler.call_later(delay, self._on_timer, "producer batch timer")

    def _on_timer(self) -> None:
        self.timer = None
        self.flush()

    def flush(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.container is not None and not self.container.is_empty():
            self._persist(self.container.flush(self.owner._now()))

    def send_chunked(self, msg: OutgoingMessage, sequence_id_by_application: bool) -> None:
        """A chunking producer's send: plan, split, queue the SENDs and put them on the wire."""
        owner = self.owner
        now = owner._now()
        plan = plan_for_message(
            owner._name,
            self.topic,
            msg,
            now,
            max_message_size=owner._max_message_size,
            chunk_max_message_size=owner.config.lab_chunk_max_message_size,
            sequence_id_set_by_application=sequence_id_by_application,
            client=owner._client_library,
        )
        entries = split_into_chunks(owner._name, msg, now, plan, client=owner._client_library)
        ids: list[MessageId] = []
        last = len(entries) - 1
        for i, entry in enumerate(entries):
            self.outbound.append((entry, msg, ids, i == last))
        if self.wire_timer is None:
            self._pump()

    def _pump(self) -> None:
        """Put the queued SENDs on the wire: all now, or one per ``lab_chunk_send_interval_ms``."""
        self.wire_timer = None
        interval = self.owner.config.lab_chunk_send_interval_ms
        outbound = self.outbound
        while outbound:
            entry, msg, ids, last = outbound.popleft()
            self._persist_chunk(entry, msg, ids, last)
            if interval > 0 and outbound:
                self.wire_timer = self.owner._scheduler.call_later(interval, self._pump, "producer chunk SEND")
                return

    def _persist_chunk(self, entry: EntryData, msg: OutgoingMessage, ids: list[MessageId], last: bool) -> None:
        owner = self.owner
        meta = entry.metadata
        events = owner._events
        if events.enabled and meta.uuid is not None:  # CHUNK_PUBLISHED's fields, in order
            assert meta.chunk_id is not None and meta.num_chunks_from_msg is not None
            events.append_row(
                CHUNK_PUBLISHED,
                owner._now(),
                owner._id,
                events.text_id(meta.uuid),
                meta.chunk_id,
                meta.num_chunks_from_msg,
                entry.size,
                self.partition,
            )
        pos = owner._service.publish(self.handle, entry)
        ids.append(trusted_message_id(pos.ledger_id, pos.entry_id, self.partition, -1))
        if last:
            if msg.sequence_id > self.last_sequence_id_published:
                self.last_sequence_id_published = msg.sequence_id
            if msg.callback is not None:
                msg.callback("Ok", sent_message_id(ids))

    def drop_unsent(self) -> tuple[int, int]:
        """A crash: forget the open batch and the SENDs not yet on the wire; returns (chunks, messages)."""
        chunks = len(self.outbound)
        messages = len({id(msg) for _, msg, _, _ in self.outbound})
        self.outbound.clear()
        for timer in (self.wire_timer, self.timer):
            if timer is not None:
                timer.cancel()
        self.wire_timer = self.timer = None
        if self.container is not None and not self.container.is_empty():
            self.container.flush(self.owner._now())
        return chunks, messages

    def _persist_one(self, entry: EntryData, msg: OutgoingMessage) -> None:
        """`_persist` of one non-batch entry holding ``msg`` (the unbatched send), without the list it takes."""
        try:
            pos = self.owner._service.publish(self.handle, entry)
        except BrokerNotAllowedException as refused:
            self.owner._refused = NotAllowedException(refused.message)
            if msg.callback is not None:
                msg.callback("NotAllowedError", None)
            return
        if msg.sequence_id > self.last_sequence_id_published:
            self.last_sequence_id_published = msg.sequence_id
        cb = msg.callback
        if cb is not None:
            cb("Ok", trusted_message_id(pos.ledger_id, pos.entry_id, self.partition, -1))

    def _persist(self, flushed: Flushed) -> None:
        svc = self.owner._service
        partition = self.partition
        for entry, msgs in flushed:
            try:  # CommandSend's highest_sequence_id: the batch's last message
                pos = svc.publish(self.handle, entry, msgs[-1].sequence_id if len(msgs) > 1 else None)
            except BrokerNotAllowedException as refused:
                self.owner._refused = NotAllowedException(refused.message)
                for m in msgs:
                    if m.callback is not None:
                        m.callback("NotAllowedError", None)
                continue
            ledger, entry_id = pos.ledger_id, pos.entry_id
            batched = entry.metadata.num_messages_in_batch is not None
            for i, m in enumerate(msgs):
                if m.sequence_id > self.last_sequence_id_published:
                    self.last_sequence_id_published = m.sequence_id
                cb = m.callback
                if cb is not None:
                    cb("Ok", trusted_message_id(ledger, entry_id, partition, i if batched else -1))


class Producer:
    """``pulsar.Producer``: made by ``client.create_producer``."""

    def __init__(self, client: "Client", topic: str, config: ProducerConfiguration) -> None:
        config.check_for(client.client_library, client.lab.profile)
        lab = client.lab
        commands = client.commands
        self.config = config
        self._client = client
        self._lab = lab
        self._service = commands
        self._scheduler = lab.scheduler
        self._events = lab.events
        self._client_library = client.client_library
        self._id = commands.new_producer_id()
        self._name = config.producer_name if config.producer_name is not None else f"standalone-0-{self._id}"
        self._initial_sequence_id = config.first_sequence_id
        self._batching_enabled = bool(config.batching_enabled)
        self._closed = False
        self._schema = config.schema
        self._schema_data = config.schema_data
        self._fenced = False
        self._waiting = 0  # partitions still waiting for exclusive access (WaitForExclusive)
        self._max_message_size = client.max_message_size  # learnt from the broker on connect
        # both clients size-check a message sent on its own; a batch is checked when it is sent (not modelled)
        java = self._client_library is ClientLibrary.JAVA
        self._check_size = self._check_size_java if java else self._check_size_cpp
        self._topic = commands.normalize(topic)
        partitions = commands.ensure_topic(self._topic)
        names = (
            [(self._topic, -1)] if partitions == 0 else [(f"{self._topic}-partition-{i}", i) for i in range(partitions)]
        )
        self._partitions: list[_PartitionProducer] = []
        try:
            for name, index in names:
                self._partitions.append(_PartitionProducer(self, name, index))
        except (ProducerBusy, ProducerFenced, IncompatibleSchema):
            for p in self._partitions:
                commands.unregister_producer(p.handle)
            raise
        self._waiting = sum(1 for p in self._partitions if not p.handle.ready)
        self._router: MessageRouter | None = None
        if partitions:
            self._router = MessageRouter(
                config.message_routing_mode,
                HashingScheme.BoostHash,
                partitions,
                seed=lab.derive_seed("router", self._id),
                batching_enabled=self._batching_enabled,
                batching_max_publish_delay_ms=config.batching_max_publish_delay_ms,
                custom_router=config.message_router,
                batching_max_messages=config.batching_max_messages,
                batching_max_allowed_size_in_bytes=config.batching_max_allowed_size_in_bytes,
                created_at_ms=self._now(),
            )
        self._published_ev = ev.MESSAGE_PUBLISHED
        self._refused: NotAllowedException | None = None  # the broker's last refusal, raised by send()
        self._name_field = producer_name_field_size(self._name)

    def _now(self) -> int:
        return self._scheduler.now_ms

    def _check_size_java(self, msg: OutgoingMessage) -> None:
        if len(msg.payload) > self._max_message_size:
            check_send_size(ClientLibrary.JAVA, self._name, self._topic, msg, self._now(), self._max_message_size)

    def _check_size_cpp(self, msg: OutgoingMessage) -> None:
        key = msg.partition_key  # metadata_size_bound inlined for the common message: no properties or ordering key
        if msg.properties or msg.ordering_key is not None:
            bound = metadata_size_bound(self._name_field, msg)
        else:
            bound = self._name_field + 48 + (7 + 4 * len(key) if key is not None else 0)
        if len(msg.payload) + bound > self._max_message_size:
            check_send_size(ClientLibrary.CPP, self._name, self._topic, msg, self._now(), self._max_message_size)

    def _send_failed(
        self, msg: OutgoingMessage, part: _PartitionProducer, error: PulsarClientException, sequence_id_given: bool
    ) -> None:
        """A send the client refused: log it, give the sequence id back (Java assigns it after the check),
        then raise in ``send`` or report the result name to the callback of ``send_async``."""
        if (
            self._client_library is ClientLibrary.JAVA
            and not sequence_id_given
            and part.next_sequence_id == msg.sequence_id + 1
        ):
            part.next_sequence_id = msg.sequence_id
        if self._events.enabled:
            self._events.append(
                MESSAGE_TOO_BIG_EVENT,
                self._now(),
                producer=self._id,
                sequence_id=msg.sequence_id,
                size=len(msg.payload),
                max_message_size=self._max_message_size,
                error=f"{type(error).__name__}: {error}",
            )
        callback = msg.callback
        if callback is None or getattr(callback, "raise_errors", False):
            raise error
        callback(_result_name(error), None)

    # --- pulsar.Producer API ---------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def producer_name(self) -> str:
        return self._name

    def last_sequence_id(self) -> int:
        """The highest sequence id the broker has persisted (per partition, the largest one)."""
        return max(p.last_sequence_id_published for p in self._partitions)

    def is_connected(self) -> bool:
        return not self._closed and not self._fenced and not self._waiting

    def _got_topic(self, handle: RegisteredProducer) -> None:
        """A ``WaitForExclusive`` partition producer got the topic (its second PRODUCER_SUCCESS)."""
        self._waiting = max(0, self._waiting - 1)

    def _fenced_out(self, handle: RegisteredProducer, reason: str) -> None:
        """Another producer fenced this one out (``ExclusiveWithFencing``): later sends fail."""
        self._fenced = True

    def send(
        self,
        content: bytes,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | bytes | None = None,
        sequence_id: int | None = None,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: timedelta | None = None,
    ) -> MessageId:
        """Publish and wait (in virtual time) until the broker persisted it; returns its MessageId."""
        sent = _SendResult()
        result = sent.ids
        self.send_async(
            content,
            sent,
            properties=properties,
            partition_key=partition_key,
            ordering_key=ordering_key,
            sequence_id=sequence_id,
            event_timestamp=event_timestamp,
            deliver_at=deliver_at,
            deliver_after=deliver_after,
        )
        if not result:
            self._lab.wait_for(lambda: bool(result), None, what="the producer's batch to be sent")
        sent_id = result[0]
        if sent_id is None and self._refused is not None:
            refused, self._refused = self._refused, None
            raise refused
        assert sent_id is not None, "a send that fails raises (or reports NotAllowedError)"
        return sent_id

    def send_async(
        self,
        content: bytes,
        callback: SendCallback | None,
        properties: dict[str, str] | None = None,
        partition_key: str | None = None,
        ordering_key: str | bytes | None = None,
        sequence_id: int | None = None,
        event_timestamp: int | None = None,
        deliver_at: int | None = None,
        deliver_after: timedelta | None = None,
    ) -> None:
        """Publish without waiting; ``callback(result, msg_id)`` runs when the entry is persisted."""
        if self._closed:
            raise AlreadyClosedException("Producer already closed")
        if self._fenced:
            raise ProducerFenced("Producer was fenced out by an exclusive producer")
        if self._waiting:
            raise IllegalStateException(
                "The producer is waiting for exclusive access to the topic (WaitForExclusive); the real client's "
                "create_producer blocks until then, the lab's returns at once: check is_connected()"
            )
        if self._schema is not None and content is not None:
            content = self._schema.encode(content)
        if content is None:
            content = b""
        if not isinstance(content, (bytes, bytearray)):
            raise TypeError(f"content must be bytes, not {type(content).__name__}")
        if properties is not None:
            for k, v in properties.items():
                if not isinstance(k, str) or not isinstance(v, str):
                    raise TypeError(f"message properties must map str to str, got {k!r}: {v!r}")
        if partition_key is not None and not isinstance(partition_key, str):
            raise TypeError(f"partition_key must be a str, not {type(partition_key).__name__}")
        if isinstance(ordering_key, str):
            ordering_key = ordering_key.encode("utf-8")
        now = self._scheduler.now_ms
        when = (
            None if deliver_at is None and deliver_after is None else _deliver_at_time(now, deliver_at, deliver_after)
        )
        # OutgoingMessage(payload, sequence_id, properties, partition_key, ordering_key, event_time, deliver_at,
        # callback, publish_time)
        msg = OutgoingMessage(
            content if type(content) is bytes else bytes(content),
            0,
            dict(properties) if properties else {},
            partition_key,
            ordering_key,
            int(event_timestamp) if event_timestamp is not None else 0,
            when,
            callback,
            now,
        )
        part = (
            self._partitions[self._router.choose_partition(msg, now)]
            if self._router is not None
            else self._partitions[0]
        )
        if sequence_id is None:
            msg.sequence_id = seq = part.next_sequence_id
            part.next_sequence_id = seq + 1
        else:
            msg.sequence_id = seq = int(sequence_id)
        events = self._events
        if events.enabled:
            events.append_row(
                self._published_ev, now, self._id, seq, part.partition, len(msg.payload), UNDECLARED, UNDECLARED
            )
        try:
            if self.config.chunking_enabled:
                part.send_chunked(msg, sequence_id is not None)
            else:
                part.send(msg)
        except (InvalidMessageException, MessageTooBig) as error:
            self._send_failed(msg, part, error, sequence_id is not None)

    def _reconnect(self) -> None:
        """Lab extension: register with the broker again after a restart (``ProducerImpl.connectionOpened``);
        messages in open batches are sent when their batch is flushed, as before."""
        if self._closed:
            return
        for p in self._partitions:
            p.handle = p._register(p.handle.topic_epoch)

    def flush(self) -> None:
        """Send every open batch now; with chunks still waiting for the wire, wait (in virtual time) for them."""
        for p in self._partitions:
            p.flush()
        if self.config.lab_chunk_send_interval_ms and any(p.outbound for p in self._partitions):
            self._lab.wait_for(
                lambda: not any(p.outbound for p in self._partitions), None, what="the producer's chunks to be sent"
            )

    def close(self) -> None:
        """Flush pending batches (and chunks), then close."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        for p in self._partitions:
            self._service.unregister_producer(p.handle)

    def crash(self) -> None:
        """Lab extension: the producer's process dies. The open batch and the chunks not yet on the wire are
        lost (their sends never complete); a chunked message cut short stays incomplete on the topic."""
        if self._closed:
            return
        self._closed = True
        chunks = messages = 0
        for p in self._partitions:
            c, m = p.drop_unsent()
            chunks += c
            messages += m
            self._service.unregister_producer(p.handle)
        if self._events.enabled:
            self._events.append(PRODUCER_CRASHED, self._now(), producer=self._id, chunks=chunks, messages=messages)

    def __repr__(self) -> str:
        return f"<Producer {self._name!r} on {self._topic}>"
