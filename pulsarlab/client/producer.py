"""The producer: sequence ids, batching through the containers, the batch timer, partition routing.

Models the Python ``pulsar.Producer`` over the C++ `ProducerImpl` / `PartitionedProducerImpl` (reference §1.2,
§3.4; routing and container rules in `client.routing` and `client.batching`):

* Each partition has its own producer with its own sequence-id counter, starting at
  ``initial_sequence_id + 1`` (0 by default); a ``sequence_id=`` given to ``send`` is used as is and does not
  move the counter. All partitions share the producer name.
* With batching on, a message goes to the partition's container; the container is flushed when it is full,
  when a message does not fit (flush, then add), when ``flush()`` is called, or by the batch timer armed
  ``batching_max_publish_delay_ms`` after the message that opened the batch (the C++ rule).
* ``send`` blocks like the real client: with batching on it waits, in virtual time, for the batch timer
  (so back-to-back ``send`` calls each make a batch of one, exactly the real client's behaviour);
  ``send_async`` does not wait.

Simplifies: no send timeout, pending-queue limits, compression, chunking, schemas, or deduplication; the
broker persists an entry synchronously (no network latency). ``deliver_at`` (lab-clock ms) and ``deliver_after``
(a ``timedelta``) set the entry's ``deliver_at_time``; such a message is never batched (C++ ``canAddToBatch``).
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable

from .. import model_events as ev
from ..errors import PulsarClientException
from ..ids import MessageId, trusted_message_id
from .batching import (
    DEFAULT_BATCHING_MAX_BYTES,
    DEFAULT_BATCHING_MAX_MESSAGES,
    BatchingType,
    ClientLibrary,
    OutgoingMessage,
    make_container,
    non_batched_entry,
)
from .routing import HashingScheme, MessageRouter, PartitionsRoutingMode

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client


# send_async builds OutgoingMessage positionally (about twice as fast as by keyword): keep this order in step.
_OUTGOING_FIELDS = ("payload", "sequence_id", "properties", "partition_key", "ordering_key", "event_time",
                    "deliver_at", "callback", "publish_time")
if tuple(f.name for f in dataclasses.fields(OutgoingMessage))[:len(_OUTGOING_FIELDS)] != _OUTGOING_FIELDS:
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


class _PartitionProducer:
    """`ProducerImpl` of one topic (or one partition): its sequence ids, container and batch timer."""

    def __init__(self, owner: "Producer", topic: str, partition: int) -> None:
        self.owner = owner
        self.topic = topic
        self.partition = partition
        self.next_sequence_id = owner._initial_sequence_id + 1
        self.last_sequence_id_published = owner._initial_sequence_id
        self.container = (
            make_container(owner._batching_type, owner._name, owner._batching_max_messages,
                           owner._batching_max_bytes, client=owner._client_library)
            if owner._batching_enabled else None
        )
        self.timer = None
        self.handle = owner._service.register_producer(owner._id, owner._name, topic)

    def send(self, msg: OutgoingMessage) -> None:
        container = self.container
        if container is None or msg.deliver_at is not None:
            self._persist([(non_batched_entry(self.owner._name, msg, self.owner._now(),
                                              client=self.owner._client_library), [msg])])
            return
        if not container.has_space_for(msg):
            self.flush()
        first, full = container.add_and_check_first(msg)
        if full:
            self.flush()
        elif first and self.timer is None:
            delay = self.owner._batching_max_publish_delay_ms
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

    def _persist(self, flushed: list) -> None:
        svc = self.owner._service
        partition = self.partition
        for entry, msgs in flushed:
            pos = svc.publish(self.handle, entry)
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

    def __init__(
        self,
        client: "Client",
        topic: str,
        *,
        producer_name: str | None = None,
        initial_sequence_id: int | None = None,
        batching_enabled: bool = False,
        batching_max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES,
        batching_max_allowed_size_in_bytes: int = DEFAULT_BATCHING_MAX_BYTES,
        batching_max_publish_delay_ms: int = 10,
        batching_type: BatchingType = BatchingType.Default,
        message_routing_mode: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution,
        message_router: Callable[[Any, int], int] | None = None,
        properties: dict[str, str] | None = None,
        chunking_enabled: bool = False,
    ) -> None:
        if chunking_enabled:
            raise PulsarClientException("chunking belongs to a later issue of the lab and is not modelled yet")
        if not isinstance(batching_type, BatchingType):
            raise TypeError(f"batching_type must be a pulsarlab.BatchingType, not {batching_type!r}")
        if not isinstance(message_routing_mode, PartitionsRoutingMode):
            raise TypeError(f"message_routing_mode must be a pulsarlab.PartitionsRoutingMode, not {message_routing_mode!r}")
        for name, value in (("batching_max_publish_delay_ms", batching_max_publish_delay_ms),):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        lab = client._lab
        self._client = client
        self._lab = lab
        self._service = lab.service
        self._scheduler = lab.scheduler
        self._events = lab.events
        self._client_library = client._client_library
        self._id = lab.service.new_producer_id()
        self._name = producer_name if producer_name is not None else f"standalone-0-{self._id}"
        self._initial_sequence_id = -1 if initial_sequence_id is None else int(initial_sequence_id)
        self._batching_enabled = bool(batching_enabled)
        self._batching_type = batching_type
        self._batching_max_messages = batching_max_messages
        self._batching_max_bytes = batching_max_allowed_size_in_bytes
        self._batching_max_publish_delay_ms = batching_max_publish_delay_ms
        self._properties = dict(properties or {})
        self._closed = False
        self._topic = lab.service.normalize(topic)
        partitions = lab.service.ensure_topic(self._topic)
        if self._events.enabled:
            self._events.append(ev.PRODUCER_CREATED, self._now(), producer=self._id, name=self._name,
                                topic=self._topic, batching=self._batching_enabled)
        if partitions == 0:
            self._partitions = [_PartitionProducer(self, self._topic, -1)]
            self._router = None
        else:
            self._partitions = [
                _PartitionProducer(self, f"{self._topic}-partition-{i}", i) for i in range(partitions)
            ]
            self._router = MessageRouter(
                message_routing_mode, HashingScheme.BoostHash, partitions,
                seed=lab.derive_seed("router", self._id),
                batching_enabled=self._batching_enabled,
                batching_max_publish_delay_ms=batching_max_publish_delay_ms,
                custom_router=message_router,
                batching_max_messages=batching_max_messages,
                batching_max_allowed_size_in_bytes=batching_max_allowed_size_in_bytes,
                created_at_ms=self._now(),
            )
        self._published_ev = ev.MESSAGE_PUBLISHED

    def _now(self) -> int:
        return self._scheduler.now()

    # --- pulsar.Producer API ---------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def producer_name(self) -> str:
        return self._name

    def last_sequence_id(self) -> int:
        """The highest sequence id the broker has persisted (per partition, the largest one)."""
        return max(p.last_sequence_id_published for p in self._partitions)

    def is_connected(self) -> bool:
        return not self._closed

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
        result: list[MessageId] = []
        self.send_async(content, lambda res, mid: result.append(mid), properties=properties,
                        partition_key=partition_key, ordering_key=ordering_key, sequence_id=sequence_id,
                        event_timestamp=event_timestamp, deliver_at=deliver_at, deliver_after=deliver_after)
        if not result:
            self._lab.wait_for(lambda: bool(result), None, what="the producer's batch to be sent")
        return result[0]

    def send_async(
        self,
        content: bytes,
        callback: Callable[[str, MessageId], Any] | None,
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
        now = self._scheduler.now()
        when = None if deliver_at is None and deliver_after is None else _deliver_at_time(now, deliver_at, deliver_after)
        # OutgoingMessage(payload, sequence_id, properties, partition_key, ordering_key, event_time, deliver_at,
        # callback, publish_time)
        msg = OutgoingMessage(
            content if type(content) is bytes else bytes(content), 0, dict(properties) if properties else {},
            partition_key, ordering_key, int(event_timestamp) if event_timestamp is not None else 0, when,
            callback, now,
        )
        part = self._partitions[self._router.choose_partition(msg, now)] if self._router is not None \
            else self._partitions[0]
        if sequence_id is None:
            msg.sequence_id = seq = part.next_sequence_id
            part.next_sequence_id = seq + 1
        else:
            msg.sequence_id = seq = int(sequence_id)
        events = self._events
        if events.enabled:
            events.append_row(self._published_ev, now, self._id, seq, part.partition, len(msg.payload))
        part.send(msg)

    def flush(self) -> None:
        """Send every open batch now."""
        for p in self._partitions:
            p.flush()

    def close(self) -> None:
        """Flush pending batches, then close."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        for p in self._partitions:
            self._service.unregister_producer(p.handle)
        if self._events.enabled:
            self._events.append(ev.PRODUCER_CLOSED, self._now(), producer=self._id)

    def __repr__(self) -> str:
        return f"<Producer {self._name!r} on {self._topic}>"
