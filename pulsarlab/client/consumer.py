"""The consumer: receiver queue, FLOW permits, receive, acknowledgements, ack timeout, negative acks, retry, DLQ.

Models the Python ``pulsar.Consumer`` over `ConsumerImpl` (one per topic or partition; a partitioned topic,
or a topic with its retry topic, gets a `MultiTopicsConsumerImpl`-like parent whose queue merges the inner
consumers' messages in arrival order) and `ZeroQueueConsumerImpl` (docs/guide/flow-control.md#flow-permits,
docs/guide/acknowledgements.md#ack-grouping, docs/guide/redelivery.md#ack-timeout):

* On subscribe each partition consumer sends FLOW(receiver queue size) (per partition
  ``min(receiver_queue_size, max_total_receiver_queue_size_across_partitions / partitions)``); none with 0.
* Every message the application takes returns one permit; when the returned permits reach half the queue
  size, FLOW(returned) is sent (``increaseAvailablePermits``). A batch entry costs as many permits as it holds
  messages; messages the client drops (already acked batch indexes, ``isDuplicate``) return their permits.
* ``receiver_queue_size=0``: each ``receive()`` sends FLOW(1) and waits; a batch entry closes the consumer with
  Pulsar's text; ``receive(timeout_millis=...)`` is refused as the C++ client refuses it.
* Acks go through `AcknowledgmentsGroupingTracker` (group time, size, batch ack sets, duplicates);
  cumulative acks on Shared / Key_Shared fail with Pulsar's text.
* Ack timeout (``unacked_messages_timeout_ms``, tick ``lab_tick_duration_ms``): a received message enters the
  `UnAckedMessageTracker` (the parent's on a multi-topic consumer) until it is acked or nacked; when it times
  out, Shared and Key_Shared ask the broker to redeliver those ids (in commands of at most 1000), Exclusive and
  Failover redeliver everything unacked (the broker rewinds the cursor).
* ``negative_acknowledge``: the inner consumer's `NegativeAcksTracker` (3.x deadline map or 4.x time buckets, by
  profile; optional `MultiplierRedeliveryBackoff`) redelivers after ``negative_ack_redelivery_delay_ms``; the
  id leaves the ack-timeout tracker (not on a multi-topic consumer, nor for a batch id, before #20750: the
  profile switch ``negative_ack_double_redelivery``).
* ``dead_letter_policy``: see `client.dead_letter` (by redelivery count, Shared / Key_Shared only). With a
  policy the 2.x lines imply a 30 s ack timeout (``dead_letter_default_ack_timeout_ms``); 3.0+ do not.
* ``lab_retry_enable=True`` (Java's ``enableRetry``; the Python client has none): the consumer also subscribes to
  the retry topic (as Shared since 3.0.10 / 4.0.3) and ``reconsume_later`` writes copies there (`client.retry`).
* ``crash()`` (a lab extension): the process dies - pending acks are lost, the broker sees the connection close.
* Chunked messages (docs/guide/chunked-messages.md#chunk-count): each chunk entry goes to the partition consumer's
  `ChunkedMessageTracker`
  (``max_pending_chunked_message``, ``auto_ack_oldest_chunked_message_on_queue_full``, and the lab extra
  ``lab_expire_time_of_incomplete_chunked_message_ms``); non-final chunks return their permit at once, an
  assembled message is queued under its `ChunkMessageId`, and its acks expand to every chunk: an individual
  ack acks each chunk's position, a cumulative ack goes to the last chunk's position. Ids the tracker hands to
  ack-timeout tracking go to `_ConsumerImpl.track_message`, which does nothing while the consumer has no ack
  timeout.

Simplifies: no listeners or pause/resume (``seek`` is modelled, below); no reconnection (the model's connections never drop by
themselves), so no consumer epochs: a redeliver-all clears the queue before the broker resends. Reactions to a
message the broker is still delivering (redelivering one over ``maxRedeliverCount``) run right after it, on
the scheduler, as they run on the client's own thread in Pulsar. The ack-timeout tracker keeps entry-level ids
(the Java parent tracker keeps each batch message's id; an entry then times out until all its messages are
acked either way).
"""

from __future__ import annotations

import json
from collections import deque
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from pulsarlab.client.ack_grouping import AcknowledgmentsGroupingTracker
from pulsarlab.client.batching import ClientLibrary
from pulsarlab.client.chunk_reassembly import (
    DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
    DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
    ChunkedMessageTracker,
)
from pulsarlab.client.chunking import ChunkMessageId
from pulsarlab.client.dead_letter import (
    DeadLetterPolicy,
    DeadLetters,
    LetterProducer,
    resolve_consumer_policy,
    resolve_retry_policy,
)
from pulsarlab.client.negative_acks import MultiplierRedeliveryBackoff, NegativeAcksTracker
from pulsarlab.client.policies import ConsumerDeadLetterPolicy
from pulsarlab.client.producer import AlreadyClosedException
from pulsarlab.client.retry import (
    RECONSUME_LATER_CUMULATIVE_NOT_ALLOWED,
    RECONSUME_LATER_ERROR_MSG,
    RetryLetters,
    delay_millis,
)
from pulsarlab.client.schemas import IncompatibleSchema, message_class, schema_data
from pulsarlab.client.start_filter import drop_before
from pulsarlab.client.unacked_tracker import (
    DEFAULT_TICK_DURATION_MILLIS,
    UnAckedMessageTracker,
    check_ack_timeout,
    check_tick_time,
)
from pulsarlab.errors import (
    IllegalArgumentException,
    InvalidConfigurationException,
    InvalidMessageException,
    PulsarClientException,
    Timeout,
)
from pulsarlab.errors import IncompatibleSchemaException as BrokerIncompatibleSchema
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue import redelivery as rev
from pulsarlab.event_catalogue.chunk_reassembly import CHUNKED_MESSAGE_ACKED
from pulsarlab.ids import LATEST, MessageId, client_message_id, trusted_message_id
from pulsarlab.messages import ROW_EVENT_TIME as _ROW_EVENT_TIME
from pulsarlab.messages import ROW_ORDERING_KEY as _ROW_ORDERING_KEY
from pulsarlab.messages import ROW_PARTITION_KEY as _ROW_PARTITION_KEY
from pulsarlab.messages import ROW_PROPERTIES as _ROW_PROPERTIES
from pulsarlab.protocol.acks import AckType
from pulsarlab.protocol.handles import SubscribedConsumer
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, InitialPosition

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.client import Client

CUMULATIVE_NOT_ALLOWED = "Cannot use cumulative acks on a non-exclusive/non-failover subscription"
MAX_REDELIVER_UNACKNOWLEDGED = 1000  # ConsumerImpl: ids per redeliver command
TOPICS_CONSUMER_QUEUE_SIZE = "Receiver queue size needs to be greater than 0 for Topics Consumer"
DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS = 60_000
_RECEIVED = ev.RECEIVED
_ACKNOWLEDGED = ev.ACKNOWLEDGED
_INDIVIDUAL = AckType.INDIVIDUAL
_ChunkMessageId = ChunkMessageId
# what trusted_message_id does, without its IndexInt conversion (see _plain_id)
_new_id = object.__new__
_set_ledger = MessageId.ledger.__set__  # type: ignore[attr-defined]
_set_entry = MessageId.entry.__set__  # type: ignore[attr-defined]
_set_partition = MessageId.partition.__set__  # type: ignore[attr-defined]
_set_batch_index = MessageId.batch_index.__set__  # type: ignore[attr-defined]


class Message:
    """``pulsar.Message``: a received message and its id.

    ``_single`` is the message's stored `SingleMessageMetadata` row (`EntryData.rows`) in a batch, else None
    (the entry's `MessageMetadata` describes the message). The id's ints are kept as they arrived; the
    `MessageId` object (``_id``) is made when first asked for (receiving and acknowledging need only the ints).
    """

    __slots__ = (
        "_data",
        "_meta",
        "_single",
        "_ledger",
        "_entry",
        "_partition",
        "_batch_index",
        "_mid",
        "_topic",
        "_redelivery_count",
        "_batch_size",
    )

    def __init__(
        self,
        data: bytes,
        meta: Any,
        single: Any,
        ledger: int,
        entry: int,
        partition: int,
        batch_index: int,
        topic: str,
        redelivery_count: int,
        batch_size: int,
        msg_id: MessageId | None = None,
    ) -> None:
        self._data = data
        self._meta = meta
        self._single = single
        self._ledger = ledger
        self._entry = entry
        self._partition = partition
        self._batch_index = batch_index
        self._mid = msg_id  # None: made from the ints at first use
        self._topic = topic
        self._redelivery_count = redelivery_count
        self._batch_size = batch_size

    @property
    def _id(self) -> MessageId:
        mid = self._mid
        if mid is None:
            mid = self._mid = _plain_id(self._ledger, self._entry, self._partition, self._batch_index)
        return mid

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
        return client_message_id(self._id)

    def topic_name(self) -> str:
        return self._topic

    def redelivery_count(self) -> int:
        return self._redelivery_count

    def producer_name(self) -> str:
        return self._meta.producer_name

    def _ordering_key_bytes(self) -> bytes | None:
        row = self._single
        key = self._meta.ordering_key if row is None else row[_ROW_ORDERING_KEY]
        return key.encode("utf-8") if isinstance(key, str) else key

    def __repr__(self) -> str:
        return f"Message(id={self._id}, key={self.partition_key()!r}, data={self._data[:32]!r})"


def _plain_id(ledger: int, entry: int, partition: int, batch_index: int) -> MessageId:
    """`trusted_message_id` with the partition and batch index kept as the plain ints given (`Message.message_id`
    gives pulsar-client's callable indexes)."""
    mid = _new_id(MessageId)
    _set_ledger(mid, ledger)
    _set_entry(mid, entry)
    _set_partition(mid, partition)
    _set_batch_index(mid, batch_index)
    return mid


def _message_with_id(
    data: bytes, meta: Any, single: Any, mid: MessageId, topic: str, redelivery_count: int, batch_size: int
) -> Message:
    return Message(
        data,
        meta,
        single,
        mid.ledger,
        mid.entry,
        mid.partition,
        mid.batch_index,
        topic,
        redelivery_count,
        batch_size,
        mid,
    )


class _ConsumerImpl:
    """`ConsumerImpl` of one topic or partition: permits, trackers, the broker-side handle."""

    def __init__(self, parent: "Consumer", topic: str, partition: int, queue_size: int, sub_type: ConsumerType) -> None:
        self.parent = parent
        self.topic = topic
        self.partition = partition
        self.queue_size = queue_size
        self.sub_type = sub_type
        self.available_permits = 0  # returned permits not yet sent in a FLOW
        self.connected = False
        self.batch_sizes: dict[tuple[int, int], int] = {}
        lab = parent._lab
        self.tracker = AcknowledgmentsGroupingTracker(
            lab.scheduler,
            self._send_ack,
            group_time_ms=parent._ack_group_time_ms,
            max_group_size=parent._max_ack_group_size,
            batch_index_ack_enabled=parent._batch_index_ack_enabled,
            is_connected=lambda: self.connected,
            events=lab.events if lab.events.enabled else None,
            consumer_name=parent._name,
        )
        self.broker_consumer: SubscribedConsumer | None = None
        self.chunk_tracker: ChunkedMessageTracker | None = None  # made at the first chunk
        self.chunked_ids: dict[MessageId, tuple[MessageId, ...]] = {}  # unAckedChunkedMessageIdSequenceMap
        self.nacks: NegativeAcksTracker | None = None  # created at the first negative ack
        self.dead_letters: DeadLetters | None = None
        self.retry: RetryLetters | None = None
        parent._setup_letters(self)

    def _send_ack(self, cmd: Any) -> None:
        if self.broker_consumer is not None:
            self.parent._service.ack(self.broker_consumer, cmd)

    def application_consumer(self) -> "Consumer":
        """The application's consumer this topic's consumer belongs to (`ClientConsumerConnection`)."""
        return self.parent

    # --- commands from the broker (the model's ClientCnx) ------------------------------------------
    def message_received(self, ledger: int, entry: int, data: Any, redelivery_count: int, ack_set: int | None) -> None:
        parent = self.parent
        meta = data.metadata
        n = meta.num_messages_in_batch
        events = parent._events
        if n is None:
            partition = self.partition
            if self.tracker.is_duplicate_at(ledger, entry, partition, -1):
                if events is not None:
                    events.append_row(ev.DUPLICATE_DROPPED, parent._scheduler.now_ms, parent._id, ledger, entry, -1)
                self.increase_available_permits(1)
                return
            if meta.uuid is not None and meta.is_chunk:
                self._chunk_received(_plain_id(ledger, entry, partition, -1), data, redelivery_count)
                return
            msg = Message(data.payloads[0], meta, None, ledger, entry, partition, -1, self.topic, redelivery_count, 0)
            if (
                redelivery_count
                and self.dead_letters is not None
                and self._dead_letter_check(ledger, entry, [msg], redelivery_count)
            ):
                self.increase_available_permits(1)  # skipped: over maxRedeliverCount, not shown
                return
            parent._queue.append(msg)
            return
        if parent._receiver_queue_size == 0:
            # ZeroQueueConsumerImpl: the consumer closes and the pending receive fails (see receive())
            parent._pending_error = InvalidMessageException(
                f"Unsupported Batch message with 0 size receiver queue for [{parent._subscription}]-[{parent._name}] "
            )
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
        dead_letter = redelivery_count and self.dead_letters is not None
        if ack_set is None and not check_duplicates and not dead_letter:  # the common case: every message queued
            append = queue.append
            i = 0
            for single, payload in zip(data.rows, data.payloads):
                append(Message(payload, meta, single, ledger, entry, partition, i, topic, redelivery_count, n))
                i += 1
            return
        # an entry whose ack is still pending is dropped before the dead-letter logic (messageReceived's isDuplicate)
        batch_messages: list[Message] | None = (
            []
            if dead_letter
            and not (check_duplicates and tracker.is_duplicate(trusted_message_id(ledger, entry, partition, -1)))
            else None
        )
        for i, (single, payload) in enumerate(zip(data.rows, data.payloads)):
            if ack_set is not None and not (ack_set >> i) & 1:
                skipped += 1
                continue
            mid = trusted_message_id(ledger, entry, partition, i)
            msg = _message_with_id(payload, meta, single, mid, topic, redelivery_count, n)
            if batch_messages is not None:  # possibleToDeadLetter: before the duplicate check, as Pulsar
                batch_messages.append(msg)
            if check_duplicates and tracker.is_duplicate(mid):
                skipped += 1
                if events is not None:
                    events.append_row(ev.DUPLICATE_DROPPED, parent._scheduler.now_ms, parent._id, ledger, entry, i)
                continue
            queue.append(msg)
        if batch_messages:
            self._dead_letter_check(ledger, entry, batch_messages, redelivery_count)  # the batch stays queued
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
            self.parent._queue.append(
                _message_with_id(
                    message.payload, message.metadata, None, message.message_id, self.topic, redelivery_count, 0
                )
            )

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
        """``trackMessage``: with ack timeout on, the UnAckedMessageTracker takes the id (a chunked message left
        for the ack timeout to redeliver); without it the id stays unacknowledged until the consumer goes away."""
        unacked = self.parent._unacked
        if unacked is not None:
            unacked.add(mid)

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
            parent._events.append(
                CHUNKED_MESSAGE_ACKED,
                parent._scheduler.now_ms,
                consumer=parent._id,
                message_id=str(mid),
                chunks=len(ids) if ids else 1,
                cumulative=cumulative,
                positions=",".join(f"{i.ledger}:{i.entry}" for i in shown),
            )

    def _dead_letter_check(self, ledger: int, entry: int, messages: list[Message], redelivery_count: int) -> bool:
        """Remember an entry that reached maxRedeliverCount; one over it is redelivered (straight to the DLQ)
        right after this delivery. True when it is over the limit."""
        assert self.dead_letters is not None
        if not self.dead_letters.on_received(ledger, entry, messages, redelivery_count):
            return False
        entry_id = MessageId(ledger, entry, self.partition)
        self.parent._scheduler.call_later(
            0, partial(self.redeliver_ids, [entry_id]), "ConsumerImpl: redeliver a message over maxRedeliverCount"
        )
        return True

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

    # --- redelivery -----------------------------------------------------------------------------
    def nack_tracker(self) -> NegativeAcksTracker:
        """This consumer's `NegativeAcksTracker` (the profile's form), made at the first negative ack."""
        if self.nacks is None:
            parent = self.parent
            self.nacks = NegativeAcksTracker(
                parent._scheduler,
                self.redeliver_ids,
                profile=parent._lab.profile,
                negative_ack_redelivery_delay_micros=parent._nack_delay_ms * 1000,
                negative_ack_redelivery_backoff=parent._nack_backoff,
                timer_listener=self._nack_timer_ran,
            )
        return self.nacks

    def _nack_timer_ran(self, _now_ns: int, ids: list[MessageId]) -> None:
        events = self.parent._events
        held = self.nacks.nacked_messages_count() if self.nacks is not None else 0
        if events is not None and (ids or held):
            events.append_row(
                rev.NACK_TIMER_FIRED,
                self.parent._scheduler.now_ms,
                self.parent._id,
                len(ids),
                held,
                events.text_id(_ids_json(ids)),
            )

    def redeliver_ids(self, ids: Iterable[MessageId], from_parent: bool = False) -> None:
        """``ConsumerImpl.redeliverUnacknowledgedMessages(Set<MessageId>)``.

        Shared / Key_Shared: queued messages at the head that are among the ids are dropped (and one more after
        them, ``removeExpiredMessagesFromQueue``), ids waiting for the DLQ go there instead, the rest is asked
        for in commands of at most 1000 ids. Other types redeliver everything (`redeliver_all`).
        """
        parent = self.parent
        if parent._closed or not self.connected:
            return
        id_list = list(ids)
        if not id_list:
            return
        if not self.sub_type.individual_ack_mode:
            self.redeliver_all()
            return
        if not parent._multi_topics and not from_parent:
            parent._remove_expired_from_queue(id_list)
        positions: list[tuple[int, int]] = []
        seen: set[tuple[int, int]] = set()
        dead_letters = self.dead_letters
        for mid in sorted(id_list):
            pos = (mid.ledger, mid.entry)
            if pos in seen:
                continue
            seen.add(pos)
            if dead_letters is not None and dead_letters.process(mid):
                continue
            positions.append(pos)
        service = parent._service
        for i in range(0, len(positions), MAX_REDELIVER_UNACKNOWLEDGED):
            if self.connected:
                service.redeliver_unacknowledged(self.broker_consumer, positions[i : i + MAX_REDELIVER_UNACKNOWLEDGED])

    def redeliver_all(self) -> None:
        """``ConsumerImpl.redeliverUnacknowledgedMessages()``: clear this consumer's queued messages (and its own
        ack-timeout tracker), ask for everything unacked, hand the cleared messages' permits back."""
        parent = self.parent
        if parent._closed or not self.connected:
            return
        dropped = parent._drop_queued(self)
        if not parent._multi_topics and parent._unacked is not None:
            parent._unacked.clear()
        parent._service.redeliver_unacknowledged(self.broker_consumer)
        if dropped and parent._receiver_queue_size > 0:
            self.increase_available_permits(dropped)

    def close_trackers(self) -> None:
        if self.chunk_tracker is not None:
            self.chunk_tracker.close()
        if self.nacks is not None:
            self.nacks.close()
        for letters in (self.dead_letters, self.retry):
            if letters is not None:
                for producer in _letter_producers(letters):
                    producer.close()


def _letter_producers(letters: Any) -> list[LetterProducer]:
    if isinstance(letters, DeadLetters):
        return [letters.producer]
    return [letters.retry_producer, letters.dead_letter_producer]


def _ids_json(ids: Iterable[MessageId]) -> str:
    return json.dumps([[m.ledger, m.entry, m.partition] for m in ids], separators=(",", ":"))


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
        unacked_messages_timeout_ms: int | None = None,
        negative_ack_redelivery_delay_ms: int = DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS,
        initial_position: InitialPosition = InitialPosition.Latest,
        lab_priority_level: int = 0,
        key_shared_policy: ConsumerKeySharedPolicy | None = None,
        batch_index_ack_enabled: bool | None = None,
        dead_letter_policy: ConsumerDeadLetterPolicy | None = None,
        properties: dict[str, str] | None = None,
        lab_ack_group_time_ms: int = 100,
        lab_max_ack_group_size: int = 1000,
        max_pending_chunked_message: int = DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
        lab_expire_time_of_incomplete_chunked_message_ms: int = DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
        lab_tick_duration_ms: int = DEFAULT_TICK_DURATION_MILLIS,
        lab_negative_ack_redelivery_backoff: MultiplierRedeliveryBackoff | None = None,
        lab_retry_enable: bool = False,
        is_read_compacted: bool = False,
        schema: Any = None,
    ) -> None:
        if not isinstance(is_read_compacted, bool):
            raise ValueError(
                f"Argument is_read_compacted is expected to be of type 'bool' and not '{type(is_read_compacted).__name__}'"
            )
        self._read_compacted = is_read_compacted
        self._schema_data = schema_data(schema)
        self._message_class = message_class(Message, schema) if self._schema_data is not None else None
        _check_chunk_settings(
            max_pending_chunked_message,
            auto_ack_oldest_chunked_message_on_queue_full,
            lab_expire_time_of_incomplete_chunked_message_ms,
        )
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
        ack_timeout = _check_redelivery_options(
            unacked_messages_timeout_ms,
            lab_tick_duration_ms,
            negative_ack_redelivery_delay_ms,
            lab_negative_ack_redelivery_backoff,
            dead_letter_policy,
            lab_retry_enable,
        )
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
        self._priority = lab_priority_level
        self._key_shared_policy = key_shared_policy
        self._initial_position = initial_position
        self._batch_index_ack_enabled = (
            lab.profile.batch_index_ack_enabled if batch_index_ack_enabled is None else bool(batch_index_ack_enabled)
        )
        self._ack_group_time_ms = lab_ack_group_time_ms
        self._max_ack_group_size = lab_max_ack_group_size
        self._max_pending_chunked_message = max_pending_chunked_message
        self._auto_ack_oldest_chunked_message_on_queue_full = auto_ack_oldest_chunked_message_on_queue_full
        self._expire_time_of_incomplete_chunked_message_ms = lab_expire_time_of_incomplete_chunked_message_ms
        self._nack_delay_ms = negative_ack_redelivery_delay_ms
        self._nack_backoff = lab_negative_ack_redelivery_backoff
        self._retry_enable = bool(lab_retry_enable)
        self._queue: deque[Message] = deque()
        self._closed = False
        self._pending_error: Exception | None = None
        self._active: dict[int, bool] = {}
        svc = lab.service
        self._topic = svc.normalize(topic)
        partitions = svc.ensure_topic(self._topic)
        if partitions and receiver_queue_size == 0:
            raise InvalidConfigurationException(
                "Can't use receiverQueueSize=0 with a partitioned topic (ZeroQueueConsumerImpl needs a single topic)"
            )
        if lab_retry_enable and receiver_queue_size == 0:
            raise IllegalArgumentException(TOPICS_CONSUMER_QUEUE_SIZE)
        policy = DeadLetterPolicy.of(dead_letter_policy) if dead_letter_policy is not None else None
        if lab_retry_enable:
            policy = resolve_retry_policy(policy, self._topic, subscription_name, svc.topic_exists)
        self._dead_letter_policy = policy
        if policy is not None and ack_timeout == 0:
            ack_timeout = lab.profile.dead_letter_default_ack_timeout_ms
        self._multi_topics = bool(partitions) or self._retry_enable  # a MultiTopicsConsumerImpl in Pulsar
        self._unacked: UnAckedMessageTracker | None = None  # made once subscribed, before the first FLOW
        self._entry_hooks = policy is not None or ack_timeout > 0
        self._impls: dict[int, _ConsumerImpl] = {}
        self._retry_impls: dict[str, _ConsumerImpl] = {}
        self._ledger_owner: dict[int, _ConsumerImpl] = {}  # retry mode: whose message a bare MessageId is
        for t, p, per in _specs(
            self._topic, partitions, receiver_queue_size, max_total_receiver_queue_size_across_partitions
        ):
            self._impls[p] = _ConsumerImpl(self, t, p, per, consumer_type)
        if lab_retry_enable:
            assert policy is not None
            retry_topic = svc.normalize(policy.retry_letter_topic)
            retry_type = ConsumerType.Shared if lab.profile.retry_topic_always_shared else consumer_type
            for t, p, per in _specs(
                retry_topic,
                svc.ensure_topic(retry_topic),
                receiver_queue_size,
                max_total_receiver_queue_size_across_partitions,
            ):
                self._retry_impls[t] = _ConsumerImpl(self, t, p, per, retry_type)
        self._all_impls = list(self._impls.values()) + list(self._retry_impls.values())
        subscribed: list[_ConsumerImpl] = []
        if self._schema_data is not None:  # SUBSCRIBE's schema: compatible, or the idle topic's first
            try:
                for impl in self._impls.values():
                    self._service.check_consumer_schema(impl.topic, self._schema_data)
            except BrokerIncompatibleSchema as e:
                raise IncompatibleSchema(str(e)) from None
        try:
            for impl in self._all_impls:
                impl.broker_consumer = self._service.subscribe(
                    impl,
                    consumer_id=self._id,
                    topic=impl.topic,
                    subscription=subscription_name,
                    sub_type=impl.sub_type,
                    name=self._name,
                    priority=lab_priority_level,
                    initial_position=initial_position,
                    key_shared_policy=key_shared_policy if impl.sub_type is ConsumerType.KeyShared else None,
                    partition_index=impl.partition,
                    read_compacted=self._read_compacted,
                    **self._subscribe_options(),
                )
                impl.connected = True
                subscribed.append(impl)
        except Exception:
            for impl in subscribed:
                impl.connected = False
                self._service.close_consumer(impl.broker_consumer, "subscribe_failed")
            raise
        if ack_timeout > 0:
            self._unacked = UnAckedMessageTracker(
                self._scheduler,
                self._on_ack_timeout,
                ack_timeout,
                lab_tick_duration_ms,
                tick_listener=self._ack_timeout_ticked,
                idle_stop=True,
            )
        for impl in self._all_impls:
            if impl.queue_size > 0:
                impl.send_flow(impl.queue_size)

    def _setup_letters(self, impl: _ConsumerImpl) -> None:
        """The inner consumer's dead-letter and retry state (`ConsumerImpl` constructor)."""
        policy = self._dead_letter_policy
        if policy is None:
            return
        resolved = resolve_consumer_policy(policy, impl.topic, self._subscription)
        profile = self._lab.profile
        make = partial(self._client.create_producer, batching_enabled=False)
        dlq = LetterProducer(
            self._lab, make, self._id, "dead letter", resolved.dead_letter_topic, resolved.initial_subscription_name
        )
        common = dict(
            consumer_id=self._id,
            subscription=self._subscription,
            multi_topics=self._multi_topics,
            real_subscription=profile.retry_real_subscription_property,
        )
        impl.dead_letters = DeadLetters(
            self._lab, resolved, producer=dlq, acknowledge=partial(self._ack_entry, impl), **common
        )
        if self._retry_enable:
            retry = LetterProducer(self._lab, make, self._id, "retry letter", resolved.retry_letter_topic)
            impl.retry = RetryLetters(self._lab, resolved, retry_producer=retry, dead_letter_producer=dlq, **common)

    def _subscribe_options(self) -> dict[str, Any]:
        """Extra SUBSCRIBE fields (a reader's consumer: non-durable, with its start message id)."""
        return {}

    # --- identity ---------------------------------------------------------------------------------
    def topic(self) -> str:
        return self._topic

    def subscription_name(self) -> str:
        return self._subscription

    @property
    def consumer_id(self) -> int:
        """The lab-wide id this consumer was created with (`ConsumerBase.consumerId`)."""
        return self._id

    @property
    def negative_ack_redelivery_delay_ms(self) -> int:
        """``negative_ack_redelivery_delay_ms`` as subscribed with."""
        return self._nack_delay_ms

    def topic_consumers(self) -> list[_ConsumerImpl]:
        """The per-topic consumers (`ClientConsumerTrackers`), retry-letter topics' included."""
        return list(self._all_impls)

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
        return sum(i.available_permits for i in self._all_impls)

    @property
    def is_active(self) -> bool | None:
        """Failover: the last ACTIVE_CONSUMER_CHANGE this consumer received (None before any)."""
        if not self._active:
            return None
        return any(self._active.values())

    def ack_tracker(self, partition: int = -1) -> AcknowledgmentsGroupingTracker:
        """The grouping tracker of one partition consumer (-1 on a non-partitioned topic)."""
        return self._impls[partition].tracker

    # --- redelivery state (read-only, for views and tests) ---------------------------------------------
    @property
    def unacked_message_tracker(self) -> UnAckedMessageTracker | None:
        """The ack-timeout tracker (the parent's on a multi-topic consumer), None with the ack timeout off."""
        return self._unacked

    def negative_acks_tracker(self, topic_or_partition: int | str = -1) -> NegativeAcksTracker | None:
        """An inner consumer's NegativeAcksTracker (None before its first negative ack)."""
        return self._inner(topic_or_partition).nacks

    @property
    def dead_letter_policy(self) -> DeadLetterPolicy | None:
        """The policy as subscribed (with the retry path's names filled in); each inner consumer resolves a
        blank dead-letter topic for its own topic (`dead_letter_topics`)."""
        return self._dead_letter_policy

    def dead_letter_topics(self) -> dict[str, str]:
        """Inner consumer topic -> the dead-letter topic it writes to."""
        return {i.topic: i.dead_letters.policy.dead_letter_topic for i in self._all_impls if i.dead_letters}

    @property
    def retry_letter_topic(self) -> str | None:
        return self._dead_letter_policy.retry_letter_topic if self._retry_enable and self._dead_letter_policy else None

    def topics(self) -> list[str]:
        """Every topic (or partition) this consumer is subscribed to, retry topic included."""
        return [i.topic for i in self._all_impls]

    def _inner(self, key: int | str) -> _ConsumerImpl:
        if isinstance(key, str):
            for impl in self._all_impls:
                if impl.topic == key or impl.topic == self._service.normalize(key):
                    return impl
            raise KeyError(f"{key!r} is not one of this consumer's topics: {self.topics()}")
        return self._impls[key]

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
            deadline = None if timeout_millis is None else self._scheduler.now_ms + timeout_millis
            self._lab.wait_for(lambda: bool(queue) or self._closed, deadline, what="a message", raise_on_idle=False)
            self._raise_pending_error()
            self._check_open()
            if not queue:
                raise Timeout("Pulsar error: TimeOut")
        msg = queue.popleft()
        if self._retry_impls:
            impl = self._retry_impls.get(msg._topic) or self._impls[msg._partition]
            self._ledger_owner[msg._ledger] = impl
        else:
            impl = self._impls[msg._partition]
        events = self._events
        if events is not None:
            events.append_row(
                _RECEIVED, self._scheduler.now_ms, self._id, msg._ledger, msg._entry, msg._batch_index, len(queue)
            )
        if self._receiver_queue_size > 0:  # increase_available_permits(1), inlined
            permits = impl.available_permits = impl.available_permits + 1
            if permits >= impl.queue_size // 2 and impl.queue_size > 0:
                impl.available_permits = 0
                impl.send_flow(permits)
        if self._unacked is not None:  # trackMessage: the ack timeout starts when the application takes it
            self._unacked.add(msg._id)
        if self._message_class is not None:
            msg.__class__ = self._message_class  # value() decodes with the consumer's schema
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
    def _impl_of(self, message: Message) -> _ConsumerImpl:
        if self._retry_impls:
            impl = self._retry_impls.get(message._topic)
            if impl is not None:
                return impl
        return self._impl_for(message._id)

    def _impl_of_id(self, mid: MessageId) -> _ConsumerImpl:
        if self._retry_impls:
            impl = self._ledger_owner.get(mid.ledger)
            if impl is not None:
                return impl
        return self._impl_for(mid)

    def _resolve(self, message: Message | MessageId) -> tuple[MessageId, int, _ConsumerImpl]:
        if isinstance(message, Message):
            return message._id, message._batch_size, self._impl_of(message)
        if isinstance(message, MessageId):
            impl = self._impl_of_id(message)
            size = impl.batch_sizes.get((message.ledger, message.entry), 0)
            return message, size if message.batch_index >= 0 else 0, impl
        raise TypeError(f"acknowledge takes a Message or a MessageId, not {type(message).__name__}")

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (grouped; sent at the next flush)."""
        if self._closed:
            raise AlreadyClosedException("Consumer already closed")
        if type(message) is Message and not self._retry_impls:
            batch_size = message._batch_size
            ledger, entry, partition, batch_index = (
                message._ledger,
                message._entry,
                message._partition,
                message._batch_index,
            )
            impl = self._impls.get(partition)
            if impl is None:
                impl = self._impl_for(message._id)
            mid = message._mid  # None while no one asked for the MessageId object
        else:
            mid, batch_size, impl = self._resolve(message)
            ledger, entry, partition, batch_index = mid.ledger, mid.entry, mid.partition, mid.batch_index
        events = self._events
        if events is not None:
            events.append_row(_ACKNOWLEDGED, self._scheduler.now_ms, self._id, ledger, entry, batch_index, 0)
        if type(mid) is _ChunkMessageId:
            impl.acknowledge_chunked(mid, False)
            return
        if batch_index < 0 or batch_size <= 0:  # not a batch message; either way the tracker takes the id's ints
            impl.tracker.add_entry_ack(ledger, entry, partition, batch_index)
        else:
            impl.tracker.add_batch_message_ack(ledger, entry, partition, batch_index, batch_size)
        if self._entry_hooks:
            self._after_individual_ack(impl, mid if mid is not None else message._id, batch_size)

    def _after_individual_ack(self, impl: _ConsumerImpl, mid: MessageId, batch_size: int) -> None:
        """Once an entry is acked as a whole: it leaves the ack-timeout tracker and the DLQ candidates."""
        if mid.batch_index >= 0 and batch_size > 0 and impl.tracker.batch_ack_set(mid) is not None:
            return  # other messages of the batch are still unacked
        if self._unacked is not None:
            self._unacked.remove(mid)
        if impl.dead_letters is not None:
            impl.dead_letters.forget(mid.ledger, mid.entry)

    def _ack_entry(self, impl: _ConsumerImpl, mid: MessageId) -> None:
        """``acknowledgeAsync(entry id)`` from inside the client (a message written to the DLQ)."""
        if self._events is not None:
            self._events.append_row(_ACKNOWLEDGED, self._scheduler.now_ms, self._id, mid.ledger, mid.entry, -1, 0)
        impl.tracker.add_acknowledgment(mid, 0, _INDIVIDUAL)
        self._after_individual_ack(impl, mid, 0)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to this one (Exclusive and Failover only)."""
        self._check_open()
        if self._type.individual_ack_mode:
            raise InvalidConfigurationException(CUMULATIVE_NOT_ALLOWED)
        mid, batch_size, impl = self._resolve(message)
        self._ack_cumulative(impl, mid, batch_size)

    def _ack_cumulative(self, impl: _ConsumerImpl, mid: MessageId, batch_size: int) -> None:
        if self._events is not None:
            self._events.append_row(
                ev.ACKNOWLEDGED, self._scheduler.now_ms, self._id, mid.ledger, mid.entry, mid.batch_index, 1
            )
        if type(mid) is _ChunkMessageId:
            impl.acknowledge_chunked(mid, True)
            return
        impl.tracker.add_acknowledgment(mid, batch_size, AckType.CUMULATIVE)
        if self._unacked is not None:
            if self._multi_topics:
                self._unacked.remove_messages_till(
                    mid, lambda m: m.partition == mid.partition and self._impl_of_id(m) is impl
                )
            else:
                self._unacked.remove_messages_till(mid)

    def _impl_for(self, mid: MessageId) -> _ConsumerImpl:
        impl = self._impls.get(mid.partition)
        if impl is None:
            raise ValueError(f"message id {mid} does not belong to a partition of {self._topic}")
        return impl

    # --- negative acks, retry ------------------------------------------------------------------------
    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Tell the broker, after ``negative_ack_redelivery_delay_ms``, to deliver this message again.

        A `Message` passes its redelivery count to the redelivery backoff; a `MessageId` counts as 0. The id
        leaves the ack-timeout tracker (see the module docstring for the pre-#20750 lines).
        """
        self._check_open()
        if isinstance(message, Message):
            mid, count, impl = message._id, message._redelivery_count, self._impl_of(message)
        elif isinstance(message, MessageId):
            mid, count, impl = message, 0, self._impl_of_id(message)
        else:
            raise TypeError(f"negative_acknowledge takes a Message or a MessageId, not {type(message).__name__}")
        tracker = impl.nack_tracker()
        due = tracker.due_ms(count)
        tracker.add(mid, count)
        unacked = self._unacked
        if unacked is not None:
            double = self._lab.profile.negative_ack_double_redelivery
            if self._multi_topics:
                if not double:
                    unacked.remove(mid)
            elif not double or mid.batch_index < 0:
                unacked.remove(mid)
        if self._events is not None:
            self._events.append_row(
                rev.NEGATIVE_ACKED,
                self._scheduler.now_ms,
                self._id,
                mid.ledger,
                mid.entry,
                mid.batch_index,
                due,
                self._events.intern(tracker.form.value),
            )

    def reconsume_later(
        self, message: Message, delay: timedelta | int, properties: Mapping[str, str] | None = None
    ) -> None:
        """Write a copy to the retry topic, delivered after ``delay`` (a timedelta, or ms), and ack this one.

        Java's ``reconsumeLater(message, customProperties, delay, unit)`` with ``enableRetry`` (the Python client
        has no retry): needs ``subscribe(..., lab_retry_enable=True)``; past ``maxRedeliverCount`` retries the copy
        goes to the dead-letter topic instead.
        """
        impl, delay_ms = self._retry_target(message, delay)
        assert impl.retry is not None
        impl.retry.reconsume_later(message, delay_ms, properties, partial(self._ack_retried, impl, message))

    def reconsume_later_cumulative(
        self, message: Message, delay: timedelta | int, properties: Mapping[str, str] | None = None
    ) -> None:
        """`reconsume_later`, then a cumulative ack (Exclusive and Failover only, as Java's
        ``reconsumeLaterCumulative``)."""
        impl, delay_ms = self._retry_target(message, delay)
        if self._type.individual_ack_mode or impl.sub_type.individual_ack_mode:
            raise InvalidConfigurationException(RECONSUME_LATER_CUMULATIVE_NOT_ALLOWED)
        assert impl.retry is not None
        impl.retry.reconsume_later(
            message, delay_ms, properties, partial(self._ack_cumulative, impl, message._id, message._batch_size)
        )

    def _retry_target(self, message: Message, delay: timedelta | int) -> tuple[_ConsumerImpl, int]:
        self._check_open()
        if not self._retry_enable:
            raise PulsarClientException(RECONSUME_LATER_ERROR_MSG)
        if not isinstance(message, Message):
            raise TypeError(
                f"reconsume_later takes a Message (its payload and properties are copied), not {type(message).__name__}"
            )
        return self._impl_of(message), delay_millis(delay)

    def _ack_retried(self, impl: _ConsumerImpl, message: Message) -> None:
        mid = message._id
        if self._events is not None:
            self._events.append_row(
                _ACKNOWLEDGED, self._scheduler.now_ms, self._id, mid.ledger, mid.entry, mid.batch_index, 0
            )
        impl.tracker.add_acknowledgment(mid, message._batch_size, _INDIVIDUAL)
        # the parent's unAckedMessageTracker.remove(topicMessageId) drops one message's id: with entry-level ids
        # that is the entry once all its messages are acked
        self._after_individual_ack(impl, mid, message._batch_size)

    # --- redelivery ----------------------------------------------------------------------------------
    def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to send every unacked message again; the receiver queue and ack-timeout tracker are
        cleared (Shared/Key_Shared: all pending acks go to the replay set, each counting one redelivery;
        Exclusive/Failover: the cursor rewinds)."""
        self._check_open()
        for impl in self._all_impls:
            impl.redeliver_all()
        if self._unacked is not None:
            self._unacked.clear()

    def _on_ack_timeout(self, ids: list[MessageId]) -> None:
        """The ack-timeout tracker's ``redeliverUnacknowledgedMessages(ids)`` (the parent's on multi-topics)."""
        if self._closed:
            return
        if not self._multi_topics:
            self._impls[next(iter(self._impls))].redeliver_ids(ids)
            return
        if not self._type.individual_ack_mode:
            self.redeliver_unacknowledged_messages()
            return
        id_list = list(ids)
        self._remove_expired_from_queue(id_list)
        by_impl: dict[int, tuple[_ConsumerImpl, list[MessageId]]] = {}
        for mid in id_list:
            try:
                impl = self._impl_of_id(mid)
            except ValueError:
                continue
            by_impl.setdefault(id(impl), (impl, []))[1].append(mid)
        for impl, group in by_impl.values():
            impl.redeliver_ids(group, from_parent=True)

    def _ack_timeout_ticked(self, _now: int, ids: list[MessageId]) -> None:
        events = self._events
        tracked = self._unacked.size() if self._unacked is not None else 0
        if events is not None and (ids or tracked):
            events.append_row(
                rev.ACK_TIMEOUT_TICK,
                self._scheduler.now_ms,
                self._id,
                len(ids),
                tracked,
                events.text_id(_ids_json(ids)),
            )

    def _remove_expired_from_queue(self, ids: list[MessageId]) -> int:
        """``removeExpiredMessagesFromQueue``: if the queue's head is among ``ids``, drop queued messages up to and
        including the first one that is not (whose id joins ``ids``); their permits go back."""
        queue = self._queue
        if not queue:
            return 0
        wanted = {m.discard_batch() for m in ids}
        if queue[0]._id.discard_batch() not in wanted:
            return 0
        per_impl: dict[int, tuple[_ConsumerImpl, int]] = {}
        removed = 0
        while queue:
            m = queue.popleft()
            removed += 1
            impl = self._impl_of(m)
            per_impl[id(impl)] = (impl, per_impl.get(id(impl), (impl, 0))[1] + 1)
            mid = m._id.discard_batch()
            if mid not in wanted:
                ids.append(mid)
                break
        if self._receiver_queue_size > 0:
            for impl, n in per_impl.values():
                impl.increase_available_permits(n)
        return removed

    def _drop_queued(self, impl: _ConsumerImpl) -> int:
        """Remove ``impl``'s messages from the receiver queue; returns how many."""
        mine = [m for m in self._queue if m._topic == impl.topic]
        if mine:
            self._queue = deque(m for m in self._queue if m._topic != impl.topic)
        return len(mine)

    # --- closing ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Flush pending acks, then CLOSE_CONSUMER."""
        if self._closed:
            return
        for impl in self._all_impls:
            impl.tracker.close()
        self._close("closed")

    def crash(self) -> None:
        """Lab extension: the consumer's process dies. Acks still pending in the grouping tracker are lost;
        the broker sees the connection close and hands the unacked messages to other consumers."""
        if self._closed:
            return
        for impl in self._all_impls:
            impl.tracker.abandon()
        self._close("crashed")

    def _close(self, reason: str) -> None:
        self._closed = True
        self._close_consumer_tasks()
        for impl in self._all_impls:
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
        for impl in self._all_impls:
            impl.available_permits = 0
            impl.broker_consumer = self._service.subscribe(
                impl,
                consumer_id=self._id,
                topic=impl.topic,
                subscription=self._subscription,
                sub_type=impl.sub_type,
                name=self._name,
                priority=self._priority,
                initial_position=self._initial_position,
                key_shared_policy=self._key_shared_policy if impl.sub_type is ConsumerType.KeyShared else None,
                partition_index=impl.partition,
                read_compacted=self._read_compacted,
                **self._subscribe_options(),
            )
            impl.connected = True
            impl.tracker.connection_opened()
        for impl in self._all_impls:
            if impl.queue_size > 0:
                impl.send_flow(impl.queue_size)

    def _close_consumer_tasks(self) -> None:
        """``closeConsumerTasks``: stop the ack-timeout, negative-ack and chunk-expiry timers, close the letter
        producers."""
        if self._unacked is not None:
            self._unacked.close()
        for impl in self._all_impls:
            impl.close_trackers()

    def seek(self, messageid: Any) -> None:
        """``Consumer.seek(messageid | timestamp)`` (C++ `ConsumerImpl::seekAsync`): SEEK resets the subscription
        and the broker disconnects its consumers; this one flushes its pending acks first, then clears its queue
        and subscribes again. By message id
        (a lab or pulsar-client MessageId) the C++ client then drops messages up to that id, so the next one is
        the message after it (the Java client reads from the id itself); by publish time (an int, ms on the lab's
        clock) reading restarts at the first message published at or after it. A message id on a partitioned
        topic is refused, as the C++ client refuses it. Other in-process consumers of the subscription stay
        disconnected (a real client would reconnect)."""
        self._check_open()
        for impl in self._all_impls:  # seekAsync: ackGroupingTracker.flushAndClean() first
            impl.tracker.flush_and_clean()
        if isinstance(messageid, int) and not isinstance(messageid, bool):
            for impl in self._impls.values():
                self._service.reset_cursor(impl.broker_consumer, publish_time=messageid)
            self._reconnect()
            return
        mid = MessageId.of(messageid)
        if self._multi_topics:
            raise IllegalArgumentException(
                "seek by message id is not supported on a partitioned or multi-topic consumer"
            )
        impl = next(iter(self._impls.values()))
        self._service.reset_cursor(impl.broker_consumer, (mid.ledger, mid.entry))
        self._reconnect()
        special = mid.ledger < 0 or mid.entry < 0 or (mid.ledger, mid.entry) == (LATEST.ledger, LATEST.entry)
        if not special and self._client._client_library is ClientLibrary.CPP:
            drop_before(self, mid, getattr(self, "_start_inclusive", False))

    def unsubscribe(self) -> None:
        """Close and delete the subscription (only when this is its last consumer)."""
        self._check_open()
        for impl in self._all_impls:
            self._service.unsubscribe(impl.broker_consumer)
        for impl in self._all_impls:
            impl.tracker.close()
        self._closed = True
        self._close_consumer_tasks()
        self._queue.clear()

    def __repr__(self) -> str:
        return (
            f"<Consumer {self._name!r} {self._type.name} on {self._topic} / {self._subscription}, "
            f"{len(self._queue)} queued>"
        )


def _check_chunk_settings(max_pending: Any, auto_ack: Any, expire_ms: Any) -> None:
    """The Python client's type checks of the chunk settings, then the ranges the tracker accepts."""
    for name, value, kind in (
        ("max_pending_chunked_message", max_pending, int),
        ("auto_ack_oldest_chunked_message_on_queue_full", auto_ack, bool),
        ("lab_expire_time_of_incomplete_chunked_message_ms", expire_ms, int),
    ):
        if not isinstance(value, kind):
            raise ValueError(
                f"Argument {name} is expected to be of type '{kind.__name__}' and not '{type(value).__name__}'"
            )
    for name, value in (
        ("max_pending_chunked_message", max_pending),
        ("lab_expire_time_of_incomplete_chunked_message_ms", expire_ms),
    ):
        if value < 0:
            raise ValueError(f"{name} must be >= 0 (0 turns it off), got {value}")


def _specs(topic: str, partitions: int, receiver_queue_size: int, max_total: int) -> list[tuple[str, int, int]]:
    """``(topic, partition index, receiver queue size)`` of the inner consumers of one topic."""
    if partitions:
        per = min(receiver_queue_size, max_total // partitions)
        return [(f"{topic}-partition-{i}", i, per) for i in range(partitions)]
    return [(topic, -1, receiver_queue_size)]


def _check_redelivery_options(
    ack_timeout: Any, tick: Any, nack_delay: Any, backoff: Any, policy: Any, lab_retry_enable: Any
) -> int:
    """Type and range checks of the redelivery options, with Pulsar's texts; returns the ack timeout in ms."""
    if ack_timeout is None:
        ack_timeout = 0
    check_ack_timeout(ack_timeout)  # "Ack timeout should be greater than 1000 ms"
    check_tick_time(tick)  # "Ack timeout tick time should be greater than 100 ms"
    if not isinstance(nack_delay, int) or isinstance(nack_delay, bool):
        raise TypeError(f"negative_ack_redelivery_delay_ms must be an int of ms, not {nack_delay!r}")
    if nack_delay < 0:
        raise IllegalArgumentException("redeliveryDelay needs to be >= 0")
    if backoff is not None and not isinstance(backoff, MultiplierRedeliveryBackoff):
        raise TypeError(f"lab_negative_ack_redelivery_backoff must be a MultiplierRedeliveryBackoff, not {backoff!r}")
    if policy is not None and not isinstance(policy, ConsumerDeadLetterPolicy):
        raise TypeError(f"dead_letter_policy must be a pulsarlab.ConsumerDeadLetterPolicy, not {policy!r}")
    if not isinstance(lab_retry_enable, bool):
        raise TypeError(f"lab_retry_enable must be a bool, not {lab_retry_enable!r}")
    return ack_timeout


def _ids(messages: Iterable[Message]) -> list[MessageId]:
    return [m.message_id() for m in messages]
