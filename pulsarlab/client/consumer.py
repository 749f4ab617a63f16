"""The consumer: receiver queue, FLOW permits, receive, acknowledgements through the grouping tracker.

Models the Python ``pulsar.Consumer`` over `ConsumerImpl` (one per topic or partition; a partitioned topic
gets a `MultiTopicsConsumerImpl`-like parent whose queue merges the partitions' messages in arrival order)
and `ZeroQueueConsumerImpl` (reference §6, §7.1):

* On subscribe each partition consumer sends FLOW(receiver queue size) (per partition
  ``min(receiver_queue_size, max_total_receiver_queue_size_across_partitions / partitions)``); none with 0.
* Every message the application takes returns one permit; when the returned permits reach half the queue
  size, FLOW(returned) is sent (``increaseAvailablePermits``). A batch entry costs as many permits as it holds
  messages; messages the client drops (already acked batch indexes, ``isDuplicate``) return their permits.
* ``receiver_queue_size=0``: each ``receive()`` sends FLOW(1) and waits; a batch entry closes the consumer with
  Pulsar's text; ``receive(timeout_millis=...)`` is refused as the C++ client refuses it.
* Acks go through `AcknowledgmentsGroupingTracker` (group time, size, batch ack sets, duplicates);
  cumulative acks on Shared / Key_Shared fail with Pulsar's text.
* ``crash()`` (a lab extension): the process dies - pending acks are lost, the broker sees the connection close.
* Chunked messages (reference §9): each chunk entry goes to the partition consumer's `ChunkedMessageTracker`
  (``max_pending_chunked_message``, ``auto_ack_oldest_chunked_message_on_queue_full``, and the lab extra
  ``expire_time_of_incomplete_chunked_message_ms``); non-final chunks return their permit at once, an
  assembled message is queued under its `ChunkMessageId`, and its acks expand to every chunk: an individual
  ack acks each chunk's position, a cumulative ack goes to the last chunk's position. Ids the tracker hands to
  ack-timeout tracking go to `_ConsumerImpl.track_message`, which does nothing while the consumer has no ack
  timeout.

Simplifies: no ack timeout, negative acks, dead-letter policy, listeners, pause/resume or seek (later
issues); no reconnection (the model's connections never drop by themselves).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Iterable

from .. import model_events as ev
from ..errors import InvalidConfigurationException, InvalidMessageException, Timeout
from ..ids import MessageId, trusted_message_id
from ..messages import ROW_EVENT_TIME as _ROW_EVENT_TIME
from ..messages import ROW_ORDERING_KEY as _ROW_ORDERING_KEY
from ..messages import ROW_PARTITION_KEY as _ROW_PARTITION_KEY
from ..messages import ROW_PROPERTIES as _ROW_PROPERTIES
from .ack_grouping import AckType, AcknowledgmentsGroupingTracker
from .chunk_reassembly import (
    CHUNKED_MESSAGE_ACKED,
    DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
    DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
    ChunkedMessageTracker,
)
from .chunking import ChunkMessageId
from .policies import ConsumerKeySharedPolicy, ConsumerType, InitialPosition
from .producer import AlreadyClosedException

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client

CUMULATIVE_NOT_ALLOWED = "Cannot use cumulative acks on a non-exclusive/non-failover subscription"
_RECEIVED = ev.RECEIVED
_ACKNOWLEDGED = ev.ACKNOWLEDGED
_INDIVIDUAL = AckType.INDIVIDUAL
_ChunkMessageId = ChunkMessageId
# what trusted_message_id does, for message_received's per-message loop
_new_id = object.__new__
_set_ledger = MessageId.ledger.__set__  # type: ignore[attr-defined]
_set_entry = MessageId.entry.__set__  # type: ignore[attr-defined]
_set_partition = MessageId.partition.__set__  # type: ignore[attr-defined]
_set_batch_index = MessageId.batch_index.__set__  # type: ignore[attr-defined]


class Message:
    """``pulsar.Message``: a received message and its id.

    ``_single`` is the message's stored `SingleMessageMetadata` row (`EntryData.rows`) in a batch, else None
    (the entry's `MessageMetadata` describes the message).
    """

    __slots__ = ("_data", "_meta", "_single", "_id", "_topic", "_redelivery_count", "_batch_size")

    def __init__(self, data: bytes, meta: Any, single: Any, msg_id: MessageId, topic: str,
                 redelivery_count: int, batch_size: int) -> None:
        self._data = data
        self._meta = meta
        self._single = single
        self._id = msg_id
        self._topic = topic
        self._redelivery_count = redelivery_count
        self._batch_size = batch_size

    def data(self) -> bytes:
        return self._data

    def value(self) -> bytes:
        return self._data

    def properties(self) -> dict[str, str]:
        row = self._single
        if row is None:
            return dict(self._meta.properties)
        props = row[_ROW_PROPERTIES]
        return dict(props) if props is not None else {}

    def partition_key(self) -> str:
        row = self._single
        return (self._meta.partition_key if row is None else row[_ROW_PARTITION_KEY]) or ""

    def ordering_key(self) -> str:
        row = self._single
        key = self._meta.ordering_key if row is None else row[_ROW_ORDERING_KEY]
        return key.decode("utf-8", "replace") if isinstance(key, (bytes, bytearray)) else (key or "")

    def publish_timestamp(self) -> int:
        return self._meta.publish_time

    def event_timestamp(self) -> int:
        row = self._single
        return self._meta.event_time if row is None else row[_ROW_EVENT_TIME]

    def message_id(self) -> MessageId:
        return self._id

    def topic_name(self) -> str:
        return self._topic

    def redelivery_count(self) -> int:
        return self._redelivery_count

    def producer_name(self) -> str:
        return self._meta.producer_name

    def __repr__(self) -> str:
        return f"Message(id={self._id}, key={self.partition_key()!r}, data={self._data[:32]!r})"


class _ConsumerImpl:
    """`ConsumerImpl` of one topic or partition: permits, tracker, the broker-side handle."""

    def __init__(self, parent: "Consumer", topic: str, partition: int, queue_size: int) -> None:
        self.parent = parent
        self.topic = topic
        self.partition = partition
        self.queue_size = queue_size
        self.available_permits = 0  # returned permits not yet sent in a FLOW
        self.connected = False
        self.batch_sizes: dict[tuple[int, int], int] = {}
        lab = parent._lab
        self.tracker = AcknowledgmentsGroupingTracker(
            lab.scheduler, self._send_ack,
            group_time_ms=parent._ack_group_time_ms,
            max_group_size=parent._max_ack_group_size,
            batch_index_ack_enabled=parent._batch_index_ack_enabled,
            is_connected=lambda: self.connected,
            events=lab.events if lab.events.enabled else None,
            consumer_name=parent._name,
        )
        self.broker_consumer = None
        self.chunk_tracker: ChunkedMessageTracker | None = None  # made at the first chunk
        self.chunked_ids: dict[MessageId, tuple[MessageId, ...]] = {}  # unAckedChunkedMessageIdSequenceMap

    def _send_ack(self, cmd: Any) -> None:
        if self.broker_consumer is not None:
            self.parent._service.ack(self.broker_consumer, cmd)

    # --- commands from the broker (the model's ClientCnx) ------------------------------------------
    def message_received(self, ledger: int, entry: int, data: Any, redelivery_count: int,
                         ack_set: int | None) -> None:
        parent = self.parent
        meta = data.metadata
        n = meta.num_messages_in_batch
        events = parent._events
        if n is None:
            mid = trusted_message_id(ledger, entry, self.partition, -1)
            if self.tracker.is_duplicate(mid):
                if events is not None:
                    events.append_row(ev.DUPLICATE_DROPPED, parent._scheduler.now(), parent._id, ledger, entry, -1)
                self.increase_available_permits(1)
                return
            if meta.uuid is not None and meta.is_chunk:
                self._chunk_received(mid, data, redelivery_count)
                return
            parent._queue.append(
                Message(data.payloads[0], meta, None, mid, self.topic, redelivery_count, 0))
            return
        if parent._receiver_queue_size == 0:
            # ZeroQueueConsumerImpl: the consumer closes and the pending receive fails (see receive())
            parent._pending_error = InvalidMessageException(
                f"Unsupported Batch message with 0 size receiver queue for [{parent._subscription}]-"
                f"[{parent._name}] ")
            return
        partition = self.partition
        tracker = self.tracker
        tracker.new_ack_set(trusted_message_id(ledger, entry, partition, -1), n)
        self.batch_sizes[(ledger, entry)] = n
        skipped = 0
        queue = parent._queue
        topic = self.topic
        # isDuplicate per message only when the tracker holds something that may cover this entry
        check_duplicates = tracker.may_hold_duplicates(ledger, entry, partition)
        if ack_set is None and not check_duplicates:  # the common case: every message is queued
            append = queue.append
            i = 0
            for single, payload in zip(data.rows, data.payloads):
                mid = _new_id(MessageId)  # trusted_message_id(ledger, entry, partition, i), inlined
                _set_ledger(mid, ledger)
                _set_entry(mid, entry)
                _set_partition(mid, partition)
                _set_batch_index(mid, i)
                append(Message(payload, meta, single, mid, topic, redelivery_count, n))
                i += 1
            return
        for i, (single, payload) in enumerate(zip(data.rows, data.payloads)):
            if ack_set is not None and not (ack_set >> i) & 1:
                skipped += 1
                continue
            mid = trusted_message_id(ledger, entry, partition, i)
            if check_duplicates and tracker.is_duplicate(mid):
                skipped += 1
                if events is not None:
                    events.append_row(ev.DUPLICATE_DROPPED, parent._scheduler.now(), parent._id, ledger, entry, i)
                continue
            queue.append(Message(payload, meta, single, mid, topic, redelivery_count, n))
        if skipped:
            self.increase_available_permits(skipped)

    # --- chunks (ConsumerImpl.processMessageChunk) ----------------------------------------------------
    def _chunk_received(self, mid: MessageId, data: Any, redelivery_count: int) -> None:
        tracker = self.chunk_tracker
        if tracker is None:
            tracker = self.chunk_tracker = self._new_chunk_tracker()
        message = tracker.process_chunk(mid, data.metadata, data.payloads[0]).message
        if message is not None:
            self.chunked_ids[message.message_id] = message.chunk_ids
            self.parent._queue.append(Message(message.payload, message.metadata, None, message.message_id,
                                              self.topic, redelivery_count, 0))

    def _new_chunk_tracker(self) -> ChunkedMessageTracker:
        parent = self.parent
        return ChunkedMessageTracker(
            parent._scheduler,
            max_pending_chunked_message=parent._max_pending_chunked_message,
            auto_ack_oldest_chunked_message_on_queue_full=parent._auto_ack_oldest_chunked_message_on_queue_full,
            expire_time_of_incomplete_chunked_message_ms=parent._expire_time_of_incomplete_chunked_message_ms,
            ack=self._ack_chunks,
            return_permits=self._return_chunk_permits,
            track=self.track_message,
            events=parent._lab.events,
            consumer_id=parent._id,
        )

    def _ack_chunks(self, ids: list[MessageId]) -> None:
        """``doAcknowledge`` of dropped chunks: individual acks through the grouping tracker."""
        add = self.tracker.add_acknowledgment
        for mid in ids:
            add(mid, 0, _INDIVIDUAL)

    def _return_chunk_permits(self, n: int) -> None:
        if self.queue_size == 0:  # ZeroQueueConsumerImpl: 0 / 2 = 0, so any returned permit is flushed
            self.send_flow(n)
        else:
            self.increase_available_permits(n)

    def track_message(self, mid: MessageId) -> None:
        """``trackMessage``: the UnAckedMessageTracker takes the id when ack timeout is on. This lab's consumer
        has no ack timeout, so the id stays unacknowledged at the broker until the consumer goes away."""

    def chunk_ids_of(self, mid: MessageId) -> tuple[MessageId, ...]:
        """Every chunk's id of a chunked message not yet acked (``unAckedChunkedMessageIdSequenceMap``), or
        ``(mid,)``: what a redelivery request of ``mid`` lists (Java expands chunked ids the same way)."""
        return self.chunked_ids.get(mid, (mid,)) if type(mid) is ChunkMessageId else (mid,)

    def acknowledge_chunked(self, mid: ChunkMessageId, cumulative: bool) -> None:
        """Ack a chunked message: every chunk individually, or cumulatively up to its last chunk."""
        ids = self.chunked_ids.pop(mid, None)
        last = mid.last
        if cumulative:
            self.tracker.add_acknowledgment(last, 0, AckType.CUMULATIVE)
        else:
            self._ack_chunks(list(ids) if ids else [last])
        parent = self.parent
        if parent._events is not None:
            shown = ids if ids and not cumulative else (last,)
            parent._events.append(CHUNKED_MESSAGE_ACKED, parent._scheduler.now(), consumer=parent._id,
                                  message_id=str(mid), chunks=len(ids) if ids else 1, cumulative=cumulative,
                                  positions=",".join(f"{i.ledger}:{i.entry}" for i in shown))

    def close_chunks(self) -> None:
        if self.chunk_tracker is not None:
            self.chunk_tracker.close()

    def active_consumer_changed(self, is_active: bool) -> None:
        self.parent._active[self.partition] = is_active

    def closed_by_broker(self) -> None:
        self.connected = False

    # --- flow control ---------------------------------------------------------------------------
    def send_flow(self, n: int) -> None:
        if n > 0 and self.connected:
            self.parent._service.flow(self.broker_consumer, n)

    def increase_available_permits(self, delta: int) -> None:
        """``increaseAvailablePermits``: FLOW once half the queue has been handed back."""
        self.available_permits += delta
        if self.available_permits >= self.queue_size // 2 and self.queue_size > 0:
            n = self.available_permits
            self.available_permits = 0
            self.send_flow(n)


class Consumer:
    """``pulsar.Consumer``: made by ``client.subscribe``."""

    def __init__(
        self,
        client: "Client",
        topic: str,
        subscription_name: str,
        *,
        consumer_type: ConsumerType = ConsumerType.Exclusive,
        receiver_queue_size: int = 1000,
        max_total_receiver_queue_size_across_partitions: int = 50000,
        consumer_name: str | None = None,
        initial_position: InitialPosition = InitialPosition.Latest,
        priority_level: int = 0,
        key_shared_policy: ConsumerKeySharedPolicy | None = None,
        batch_index_ack_enabled: bool | None = None,
        properties: dict[str, str] | None = None,
        ack_group_time_ms: int = 100,
        max_ack_group_size: int = 1000,
        max_pending_chunked_message: int = DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
        expire_time_of_incomplete_chunked_message_ms: int = DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
    ) -> None:
        _check_chunk_settings(max_pending_chunked_message, auto_ack_oldest_chunked_message_on_queue_full,
                              expire_time_of_incomplete_chunked_message_ms)
        if not isinstance(consumer_type, ConsumerType):
            raise TypeError(f"consumer_type must be a pulsarlab.ConsumerType, not {consumer_type!r}")
        if not isinstance(initial_position, InitialPosition):
            raise TypeError(f"initial_position must be a pulsarlab.InitialPosition, not {initial_position!r}")
        if not isinstance(subscription_name, str) or not subscription_name:
            raise InvalidConfigurationException("Empty subscription name")
        if not isinstance(receiver_queue_size, int) or isinstance(receiver_queue_size, bool) or receiver_queue_size < 0:
            raise InvalidConfigurationException("receiverQueueSize needs to be >= 0")
        if key_shared_policy is not None and not isinstance(key_shared_policy, ConsumerKeySharedPolicy):
            raise TypeError(f"key_shared_policy must be a ConsumerKeySharedPolicy, not {key_shared_policy!r}")
        lab = client._lab
        self._client = client
        self._lab = lab
        self._service = lab.service
        self._scheduler = lab.scheduler
        self._events = lab.events if lab.events.enabled else None
        self._id = lab.service.new_consumer_id()
        self._name = consumer_name if consumer_name is not None else f"consumer-{self._id}"
        self._type = consumer_type
        self._subscription = subscription_name
        self._receiver_queue_size = receiver_queue_size
        self._priority = priority_level
        self._key_shared_policy = key_shared_policy
        self._initial_position = initial_position
        self._batch_index_ack_enabled = (
            lab.profile.batch_index_ack_enabled if batch_index_ack_enabled is None else bool(batch_index_ack_enabled)
        )
        self._ack_group_time_ms = ack_group_time_ms
        self._max_ack_group_size = max_ack_group_size
        self._max_pending_chunked_message = max_pending_chunked_message
        self._auto_ack_oldest_chunked_message_on_queue_full = auto_ack_oldest_chunked_message_on_queue_full
        self._expire_time_of_incomplete_chunked_message_ms = expire_time_of_incomplete_chunked_message_ms
        self._queue: deque[Message] = deque()
        self._closed = False
        self._pending_error: Exception | None = None
        self._active: dict[int, bool] = {}
        self._topic = lab.service.normalize(topic)
        partitions = lab.service.ensure_topic(self._topic)
        if partitions and receiver_queue_size == 0:
            raise InvalidConfigurationException(
                "Can't use receiverQueueSize=0 with a partitioned topic (ZeroQueueConsumerImpl needs a single topic)")
        if partitions:
            per = min(receiver_queue_size, max_total_receiver_queue_size_across_partitions // partitions)
            specs = [(f"{self._topic}-partition-{i}", i) for i in range(partitions)]
        else:
            per = receiver_queue_size
            specs = [(self._topic, -1)]
        self._impls = {p: _ConsumerImpl(self, t, p, per) for t, p in specs}
        subscribed: list[_ConsumerImpl] = []
        try:
            for impl in self._impls.values():
                impl.broker_consumer = self._service.subscribe(
                    impl, consumer_id=self._id, topic=impl.topic, subscription=subscription_name,
                    sub_type=consumer_type, name=self._name, priority=priority_level,
                    initial_position=initial_position, key_shared_policy=key_shared_policy,
                    partition_index=impl.partition,
                )
                impl.connected = True
                subscribed.append(impl)
        except Exception:
            for impl in subscribed:
                impl.connected = False
                self._service.close_consumer(impl.broker_consumer, "subscribe_failed")
            raise
        for impl in self._impls.values():
            if impl.queue_size > 0:
                impl.send_flow(impl.queue_size)

    # --- identity ---------------------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def subscription_name(self) -> str:
        return self._subscription

    def consumer_name(self) -> str:
        return self._name

    def is_connected(self) -> bool:
        return not self._closed

    @property
    def consumer_type(self) -> ConsumerType:
        return self._type

    @property
    def receiver_queue(self) -> list[Message]:
        """The messages waiting in the receiver queue (read-only copy, for views)."""
        return list(self._queue)

    @property
    def available_permits(self) -> int:
        """Permits handed back by the application and not yet sent in a FLOW (sum over partitions)."""
        return sum(i.available_permits for i in self._impls.values())

    @property
    def is_active(self) -> bool | None:
        """Failover: the last ACTIVE_CONSUMER_CHANGE this consumer received (None before any)."""
        if not self._active:
            return None
        return any(self._active.values())

    def ack_tracker(self, partition: int = -1) -> AcknowledgmentsGroupingTracker:
        """The grouping tracker of one partition consumer (-1 on a non-partitioned topic)."""
        return self._impls[partition].tracker

    # --- receive ---------------------------------------------------------------------------------
    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message of the receiver queue.

        ``timeout_millis=0``: only what is queued now, else ``Timeout``. ``timeout_millis=t``: virtual time
        runs up to t ms until a message arrives. ``None``: virtual time runs until one arrives; if nothing
        more can happen the call raises ``Timeout`` instead of blocking forever.
        """
        if self._closed:
            raise AlreadyClosedException("Consumer already closed")
        if timeout_millis is not None and (not isinstance(timeout_millis, int) or timeout_millis < 0):
            raise ValueError(f"timeout_millis must be an int >= 0 or None, got {timeout_millis!r}")
        queue = self._queue
        if self._receiver_queue_size == 0:
            if timeout_millis is not None:
                raise InvalidConfigurationException("Can't use receive with timeout, if the queue size is 0")
            if not queue:
                impl = next(iter(self._impls.values()))
                impl.send_flow(1)
            self._raise_pending_error()
        if not queue:
            if timeout_millis == 0:
                raise Timeout("Pulsar error: TimeOut")
            deadline = None if timeout_millis is None else self._scheduler.now() + timeout_millis
            self._lab.wait_for(lambda: bool(queue) or self._closed, deadline, what="a message",
                               raise_on_idle=False)
            self._raise_pending_error()
            self._check_open()
            if not queue:
                raise Timeout("Pulsar error: TimeOut")
        msg = queue.popleft()
        mid = msg._id
        impl = self._impls[mid.partition]
        events = self._events
        if events is not None:
            events.append_row(_RECEIVED, self._scheduler.now(), self._id, mid.ledger, mid.entry, mid.batch_index,
                              len(queue))
        if self._receiver_queue_size > 0:  # increase_available_permits(1), inlined
            permits = impl.available_permits = impl.available_permits + 1
            if permits >= impl.queue_size // 2 and impl.queue_size > 0:
                impl.available_permits = 0
                impl.send_flow(permits)
        return msg

    def _raise_pending_error(self) -> None:
        error = self._pending_error
        if error is not None:
            self._pending_error = None
            self._close("closed")
            raise error

    def _check_open(self) -> None:
        if self._closed:
            raise AlreadyClosedException("Consumer already closed")

    # --- acknowledgements ----------------------------------------------------------------------------
    def _resolve(self, message: Message | MessageId) -> tuple[MessageId, int]:
        if isinstance(message, Message):
            return message._id, message._batch_size
        if isinstance(message, MessageId):
            impl = self._impls.get(message.partition)
            size = impl.batch_sizes.get((message.ledger, message.entry), 0) if impl is not None else 0
            return message, size if message.batch_index >= 0 else 0
        raise TypeError(f"acknowledge takes a Message or a MessageId, not {type(message).__name__}")

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (grouped; sent at the next flush)."""
        if self._closed:
            raise AlreadyClosedException("Consumer already closed")
        if type(message) is Message:
            mid, batch_size = message._id, message._batch_size
        else:
            mid, batch_size = self._resolve(message)
        impl = self._impls.get(mid.partition)
        if impl is None:
            impl = self._impl_for(mid)
        events = self._events
        if events is not None:
            events.append_row(_ACKNOWLEDGED, self._scheduler.now(), self._id, mid.ledger, mid.entry, mid.batch_index,
                              0)
        if type(mid) is _ChunkMessageId:
            impl.acknowledge_chunked(mid, False)
            return
        impl.tracker.add_acknowledgment(mid, batch_size, _INDIVIDUAL)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to this one (Exclusive and Failover only)."""
        self._check_open()
        if self._type.individual_ack_mode:
            raise InvalidConfigurationException(CUMULATIVE_NOT_ALLOWED)
        mid, batch_size = self._resolve(message)
        impl = self._impl_for(mid)
        if self._events is not None:
            self._events.append_row(ev.ACKNOWLEDGED, self._scheduler.now(), self._id, mid.ledger, mid.entry,
                                    mid.batch_index, 1)
        if type(mid) is _ChunkMessageId:
            impl.acknowledge_chunked(mid, True)
            return
        impl.tracker.add_acknowledgment(mid, batch_size, AckType.CUMULATIVE)

    def _impl_for(self, mid: MessageId) -> _ConsumerImpl:
        impl = self._impls.get(mid.partition)
        if impl is None:
            raise ValueError(f"message id {mid} does not belong to a partition of {self._topic}")
        return impl

    def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to send every unacked message again; the receiver queue is cleared."""
        self._check_open()
        for impl in self._impls.values():
            dropped = sum(1 for m in self._queue if m._id.partition == impl.partition)
            self._queue = deque(m for m in self._queue if m._id.partition != impl.partition)
            self._service.redeliver_unacknowledged(impl.broker_consumer)
            if dropped and self._receiver_queue_size > 0:
                impl.increase_available_permits(dropped)

    # --- closing ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Flush pending acks, then CLOSE_CONSUMER."""
        if self._closed:
            return
        for impl in self._impls.values():
            impl.tracker.close()
        self._close("closed")

    def crash(self) -> None:
        """Lab extension: the consumer's process dies. Acks still pending in the grouping tracker are lost;
        the broker sees the connection close and hands the unacked messages to other consumers."""
        if self._closed:
            return
        for impl in self._impls.values():
            impl.tracker.abandon()
        self._close("crashed")

    def _close(self, reason: str) -> None:
        self._closed = True
        for impl in self._impls.values():
            impl.close_chunks()
            if impl.connected:
                impl.connected = False
                self._service.close_consumer(impl.broker_consumer, reason)
        self._queue.clear()

    def _reconnect(self) -> None:
        """Lab extension: connect again after the broker closed the connection (`Lab.restart_broker`).

        As ``ConsumerImpl.connectionOpened`` does on a durable subscription: the receiver queue is cleared (the
        broker sends those messages again from the cursor), returned permits start from 0, SUBSCRIBE goes out
        again with the same consumer id, then FLOW(receiver queue size). Acks pending in the grouping tracker stay
        and are flushed to the new broker at the next flush; until then the redelivered messages they cover are
        dropped as duplicates (``isDuplicate``).
        """
        if self._closed:
            return
        self._queue.clear()
        self._pending_error = None
        self._active.clear()
        for impl in self._impls.values():
            impl.available_permits = 0
            impl.broker_consumer = self._service.subscribe(
                impl, consumer_id=self._id, topic=impl.topic, subscription=self._subscription, sub_type=self._type,
                name=self._name, priority=self._priority, initial_position=self._initial_position,
                key_shared_policy=self._key_shared_policy, partition_index=impl.partition,
            )
            impl.connected = True
        for impl in self._impls.values():
            if impl.queue_size > 0:
                impl.send_flow(impl.queue_size)

    def unsubscribe(self) -> None:
        """Close and delete the subscription (only when this is its last consumer)."""
        self._check_open()
        for impl in self._impls.values():
            self._service.unsubscribe(impl.broker_consumer)
        for impl in self._impls.values():
            impl.tracker.close()
            impl.close_chunks()
        self._closed = True
        self._queue.clear()

    def __repr__(self) -> str:
        return (f"<Consumer {self._name!r} {self._type.name} on {self._topic} / {self._subscription}, "
                f"{len(self._queue)} queued>")


def _check_chunk_settings(max_pending: Any, auto_ack: Any, expire_ms: Any) -> None:
    """The Python client's type checks of the chunk settings, then the ranges the tracker accepts."""
    for name, value, kind in (("max_pending_chunked_message", max_pending, int),
                              ("auto_ack_oldest_chunked_message_on_queue_full", auto_ack, bool),
                              ("expire_time_of_incomplete_chunked_message_ms", expire_ms, int)):
        if not isinstance(value, kind):
            raise ValueError(f"Argument {name} is expected to be of type '{kind.__name__}' and not "
                             f"'{type(value).__name__}'")
    for name, value in (("max_pending_chunked_message", max_pending),
                        ("expire_time_of_incomplete_chunked_message_ms", expire_ms)):
        if value < 0:
            raise ValueError(f"{name} must be >= 0 (0 turns it off), got {value}")


def _ids(messages: Iterable[Message]) -> list[MessageId]:
    return [m.message_id() for m in messages]
