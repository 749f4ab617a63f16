"""The consumer of one topic or partition: permits, ack grouping, chunk assembly, negative acks, dead letters.

Models the Java `ConsumerImpl` under a `MultiTopicsConsumerImpl` (or alone): it is the `ConsumerConnection` the
broker's consumer sends MESSAGE, ACTIVE_CONSUMER_CHANGE and CLOSE_CONSUMER to, it turns each entry into
`Message` s on the parent's receiver queue (batch entries message by message, dropping acked batch indexes and
duplicates, ``isDuplicate``; chunks through its `ChunkedMessageTracker`), returns permits (FLOW once half the
queue came back, ``increaseAvailablePermits``), owns the `AcknowledgmentsGroupingTracker`, the
`NegativeAcksTracker` (made at the first negative ack) and the dead-letter / retry letters, and asks the broker
to redeliver ids (``redeliverUnacknowledgedMessages``). What it shares with its parent (settings, queue,
ack-timeout tracker) is the `ConsumerState`. Simplifies: see `pulsarlab.client.consumer`.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Iterable

from pulsarlab.client.ack_grouping import AcknowledgmentsGroupingTracker
from pulsarlab.client.chunk_reassembly import ChunkedMessageTracker
from pulsarlab.client.chunking import ChunkMessageId
from pulsarlab.client.consumer_state import ConsumerState
from pulsarlab.client.dead_letter import DeadLetters, LetterOwner, LetterProducer, resolve_consumer_policy
from pulsarlab.client.message import Message, message_with_id, plain_id
from pulsarlab.client.negative_acks import NegativeAcksTracker
from pulsarlab.client.retry import RetryLetters
from pulsarlab.errors import InvalidMessageException
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue import redelivery as rev
from pulsarlab.event_catalogue.chunk_reassembly import CHUNKED_MESSAGE_ACKED
from pulsarlab.ids import MessageId, trusted_message_id
from pulsarlab.messages import EntryData
from pulsarlab.protocol.acks import AckCommand, AckType
from pulsarlab.protocol.handles import SubscribedConsumer
from pulsarlab.protocol.subscription import ConsumerType

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.consumer import Consumer

MAX_REDELIVER_UNACKNOWLEDGED = 1000  # ConsumerImpl: ids per redeliver command
_ACKNOWLEDGED = ev.ACKNOWLEDGED
_INDIVIDUAL = AckType.INDIVIDUAL


class PartitionConsumer:
    """`ConsumerImpl` of one topic or partition: permits, trackers, the broker-side handle."""

    def __init__(
        self, state: ConsumerState, topic: str, partition: int, queue_size: int, sub_type: ConsumerType
    ) -> None:
        self.state = state
        self.topic = topic
        self.partition = partition
        self.queue_size = queue_size
        self.sub_type = sub_type
        self.available_permits = 0  # returned permits not yet sent in a FLOW
        self.connected = False
        self.batch_sizes: dict[tuple[int, int], int] = {}
        conf = state.config
        self.tracker = AcknowledgmentsGroupingTracker(
            state.scheduler,
            self._send_ack,
            group_time_ms=conf.lab_ack_group_time_ms,
            max_group_size=conf.lab_max_ack_group_size,
            batch_index_ack_enabled=state.batch_index_ack_enabled,
            is_connected=lambda: self.connected,
            events=state.events,
            consumer_name=state.name,
        )
        self.broker_consumer: SubscribedConsumer | None = None
        self.chunk_tracker: ChunkedMessageTracker | None = None  # made at the first chunk
        self.chunked_ids: dict[MessageId, tuple[MessageId, ...]] = {}  # unAckedChunkedMessageIdSequenceMap
        self.nacks: NegativeAcksTracker | None = None  # created at the first negative ack
        self.dead_letters: DeadLetters | None = None
        self.retry: RetryLetters | None = None
        self._setup_letters()

    @property
    def parent(self) -> Consumer:
        """The client consumer this one belongs to (what the lab's snapshots read through the broker's consumer's
        connection)."""
        return self.state.consumer

    def application_consumer(self) -> Consumer:
        """The application's consumer this topic's consumer belongs to (`parent`)."""
        return self.state.consumer

    def _setup_letters(self) -> None:
        """The dead-letter and retry state (`ConsumerImpl` constructor)."""
        state = self.state
        policy = state.dead_letter_policy
        if policy is None:
            return
        subscription = state.config.subscription_name
        resolved = resolve_consumer_policy(policy, self.topic, subscription)
        lab = state.lab
        make = partial(state.client.create_producer, batching_enabled=False)
        cid = state.consumer_id
        dlq = LetterProducer(
            lab, make, cid, "dead letter", resolved.dead_letter_topic, resolved.initial_subscription_name
        )
        owner: LetterOwner = {
            "consumer_id": cid,
            "subscription": subscription,
            "multi_topics": state.multi_topics,
            "real_subscription": lab.profile.retry_real_subscription_property,
        }
        self.dead_letters = DeadLetters(lab, resolved, producer=dlq, acknowledge=self.acknowledge_entry, **owner)
        if state.config.lab_retry_enable:
            retry = LetterProducer(lab, make, cid, "retry letter", resolved.retry_letter_topic)
            self.retry = RetryLetters(lab, resolved, retry_producer=retry, dead_letter_producer=dlq, **owner)

    def subscribe(self) -> None:
        """SUBSCRIBE this topic (or partition) with the consumer's settings; connected once the broker accepts."""
        state = self.state
        conf = state.config
        self.broker_consumer = state.commands.subscribe(
            self,
            consumer_id=state.consumer_id,
            topic=self.topic,
            subscription=conf.subscription_name,
            sub_type=self.sub_type,
            name=state.name,
            priority=conf.lab_priority_level,
            initial_position=conf.initial_position,
            key_shared_policy=conf.key_shared_policy if self.sub_type is ConsumerType.KeyShared else None,
            partition_index=self.partition,
            read_compacted=conf.is_read_compacted,
            durable=conf.durable,
            start_message_id=conf.start_message_id,
        )
        self.connected = True

    def close_on_broker(self, reason: str) -> None:
        """CLOSE_CONSUMER, when still connected."""
        if self.connected:
            self.connected = False
            assert self.broker_consumer is not None
            self.state.commands.close_consumer(self.broker_consumer, reason)

    def _send_ack(self, cmd: AckCommand) -> None:
        if self.broker_consumer is not None:
            self.state.commands.ack(self.broker_consumer, cmd)

    # --- commands from the broker (the model's ClientCnx) ------------------------------------------
    def message_received(
        self, ledger: int, entry: int, data: EntryData, redelivery_count: int, ack_set: int | None
    ) -> None:
        state = self.state
        meta = data.metadata
        n = meta.num_messages_in_batch
        events = state.events
        if n is None:
            partition = self.partition
            if self.tracker.is_duplicate_at(ledger, entry, partition, -1):
                if events is not None:
                    events.append_row(
                        ev.DUPLICATE_DROPPED, state.scheduler.now_ms, state.consumer_id, ledger, entry, -1
                    )
                self.increase_available_permits(1)
                return
            if meta.uuid is not None and meta.is_chunk:
                self._chunk_received(plain_id(ledger, entry, partition, -1), data, redelivery_count)
                return
            msg = Message(data.payloads[0], meta, None, ledger, entry, partition, -1, self.topic, redelivery_count, 0)
            if (
                redelivery_count
                and self.dead_letters is not None
                and self._dead_letter_check(ledger, entry, [msg], redelivery_count)
            ):
                self.increase_available_permits(1)  # skipped: over maxRedeliverCount, not shown
                return
            state.queue.append(msg)
            return
        if state.config.receiver_queue_size == 0:
            # ZeroQueueConsumerImpl: the consumer closes and the pending receive fails (see receive())
            state.pending_error = InvalidMessageException(
                "Unsupported Batch message with 0 size receiver queue for "
                f"[{state.config.subscription_name}]-[{state.name}] "
            )
            return
        partition = self.partition
        tracker = self.tracker
        tracker.new_ack_set(trusted_message_id(ledger, entry, partition, -1), n)
        self.batch_sizes[(ledger, entry)] = n
        skipped = 0
        queue = state.queue
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
            msg = message_with_id(payload, meta, single, mid, topic, redelivery_count, n)
            if batch_messages is not None:  # possibleToDeadLetter: before the duplicate check, as Pulsar
                batch_messages.append(msg)
            if check_duplicates and tracker.is_duplicate(mid):
                skipped += 1
                if events is not None:
                    events.append_row(ev.DUPLICATE_DROPPED, state.scheduler.now_ms, state.consumer_id, ledger, entry, i)
                continue
            queue.append(msg)
        if batch_messages:
            self._dead_letter_check(ledger, entry, batch_messages, redelivery_count)  # the batch stays queued
        if skipped:
            self.increase_available_permits(skipped)

    def active_consumer_changed(self, is_active: bool) -> None:
        self.state.active[self.partition] = is_active

    def closed_by_broker(self) -> None:
        self.connected = False

    # --- chunks (ConsumerImpl.processMessageChunk) ----------------------------------------------------
    def _chunk_received(self, mid: MessageId, data: EntryData, redelivery_count: int) -> None:
        tracker = self.chunk_tracker
        if tracker is None:
            tracker = self.chunk_tracker = self._new_chunk_tracker()
        message = tracker.process_chunk(mid, data.metadata, data.payloads[0]).message
        if message is not None:
            self.chunked_ids[message.message_id] = message.chunk_ids
            self.state.queue.append(
                message_with_id(
                    message.payload, message.metadata, None, message.message_id, self.topic, redelivery_count, 0
                )
            )

    def _new_chunk_tracker(self) -> ChunkedMessageTracker:
        state = self.state
        conf = state.config
        return ChunkedMessageTracker(
            state.scheduler,
            max_pending_chunked_message=conf.max_pending_chunked_message,
            auto_ack_oldest_chunked_message_on_queue_full=conf.auto_ack_oldest_chunked_message_on_queue_full,
            expire_time_of_incomplete_chunked_message_ms=conf.lab_expire_time_of_incomplete_chunked_message_ms,
            ack=self._ack_chunks,
            return_permits=self._return_chunk_permits,
            track=self.track_message,
            events=state.lab.events,
            consumer_id=state.consumer_id,
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
        unacked = self.state.unacked
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
        state = self.state
        if state.events is not None:
            shown = ids if ids and not cumulative else (last,)
            state.events.append(
                CHUNKED_MESSAGE_ACKED,
                state.scheduler.now_ms,
                consumer=state.consumer_id,
                message_id=str(mid),
                chunks=len(ids) if ids else 1,
                cumulative=cumulative,
                positions=",".join(f"{i.ledger}:{i.entry}" for i in shown),
            )

    # --- acknowledgements the consumer makes itself -----------------------------------------------------
    def after_individual_ack(self, mid: MessageId, batch_size: int) -> None:
        """Once an entry is acked as a whole: it leaves the ack-timeout tracker and the DLQ candidates."""
        if mid.batch_index >= 0 and batch_size > 0 and self.tracker.batch_ack_set(mid) is not None:
            return  # other messages of the batch are still unacked
        unacked = self.state.unacked
        if unacked is not None:
            unacked.remove(mid)
        if self.dead_letters is not None:
            self.dead_letters.forget(mid.ledger, mid.entry)

    def acknowledge_cumulative(self, mid: MessageId, batch_size: int) -> None:
        """A cumulative ack up to ``mid`` (a chunked message's: up to its last chunk); the ack-timeout tracker
        drops what it covers (on a multi-topic consumer, only this consumer's ids of the same partition)."""
        state = self.state
        if state.events is not None:
            state.events.append_row(
                _ACKNOWLEDGED, state.scheduler.now_ms, state.consumer_id, mid.ledger, mid.entry, mid.batch_index, 1
            )
        if type(mid) is ChunkMessageId:
            self.acknowledge_chunked(mid, True)
            return
        self.tracker.add_acknowledgment(mid, batch_size, AckType.CUMULATIVE)
        unacked = state.unacked
        if unacked is not None:
            if state.multi_topics:
                inner, topic = state.inner, state.topic
                unacked.remove_messages_till(
                    mid, lambda m: m.partition == mid.partition and inner.of_id(m, topic) is self
                )
            else:
                unacked.remove_messages_till(mid)

    def acknowledge_retried(self, message: Message) -> None:
        """The individual ack of a message ``reconsume_later`` copied to the retry (or dead-letter) topic."""
        state = self.state
        mid = message._id
        if state.events is not None:
            state.events.append_row(
                _ACKNOWLEDGED, state.scheduler.now_ms, state.consumer_id, mid.ledger, mid.entry, mid.batch_index, 0
            )
        self.tracker.add_acknowledgment(mid, message._batch_size, _INDIVIDUAL)
        # the parent's unAckedMessageTracker.remove(topicMessageId) drops one message's id: with entry-level ids
        # that is the entry once all its messages are acked
        self.after_individual_ack(mid, message._batch_size)

    def acknowledge_entry(self, mid: MessageId) -> None:
        """``acknowledgeAsync(entry id)`` from inside the client (a message written to the DLQ)."""
        state = self.state
        if state.events is not None:
            state.events.append_row(
                _ACKNOWLEDGED, state.scheduler.now_ms, state.consumer_id, mid.ledger, mid.entry, -1, 0
            )
        self.tracker.add_acknowledgment(mid, 0, _INDIVIDUAL)
        self.after_individual_ack(mid, 0)

    def _dead_letter_check(self, ledger: int, entry: int, messages: list[Message], redelivery_count: int) -> bool:
        """Remember an entry that reached maxRedeliverCount; one over it is redelivered (straight to the DLQ)
        right after this delivery. True when it is over the limit."""
        assert self.dead_letters is not None
        if not self.dead_letters.on_received(ledger, entry, messages, redelivery_count):
            return False
        entry_id = MessageId(ledger, entry, self.partition)
        self.state.scheduler.call_later(
            0, partial(self.redeliver_ids, [entry_id]), "ConsumerImpl: redeliver a message over maxRedeliverCount"
        )
        return True

    # --- flow control ---------------------------------------------------------------------------
    def send_flow(self, n: int) -> None:
        if n > 0 and self.connected:
            assert self.broker_consumer is not None
            self.state.commands.flow(self.broker_consumer, n)

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
            state = self.state
            self.nacks = NegativeAcksTracker(
                state.scheduler,
                self.redeliver_ids,
                profile=state.lab.profile,
                negative_ack_redelivery_delay_micros=state.config.negative_ack_redelivery_delay_ms * 1000,
                negative_ack_redelivery_backoff=state.config.lab_negative_ack_redelivery_backoff,
                timer_listener=self._nack_timer_ran,
            )
        return self.nacks

    def _nack_timer_ran(self, _now_ns: int, ids: list[MessageId]) -> None:
        held = self.nacks.nacked_messages_count() if self.nacks is not None else 0
        self.state.log_timer(rev.NACK_TIMER_FIRED, ids, held)

    def redeliver_ids(self, ids: Iterable[MessageId], from_parent: bool = False) -> None:
        """``ConsumerImpl.redeliverUnacknowledgedMessages(Set<MessageId>)``.

        Shared / Key_Shared: queued messages at the head that are among the ids are dropped (and one more after
        them, ``removeExpiredMessagesFromQueue``), ids waiting for the DLQ go there instead, the rest is asked
        for in commands of at most 1000 ids. Other types redeliver everything (`redeliver_all`).
        """
        state = self.state
        if state.closed or not self.connected:
            return
        id_list = list(ids)
        if not id_list:
            return
        if not self.sub_type.individual_ack_mode:
            self.redeliver_all()
            return
        if not state.multi_topics and not from_parent:
            state.remove_expired_from_queue(id_list)
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
        commands = state.commands
        for i in range(0, len(positions), MAX_REDELIVER_UNACKNOWLEDGED):
            if self.connected:
                assert self.broker_consumer is not None
                commands.redeliver_unacknowledged(self.broker_consumer, positions[i : i + MAX_REDELIVER_UNACKNOWLEDGED])

    def redeliver_all(self) -> None:
        """``ConsumerImpl.redeliverUnacknowledgedMessages()``: clear this consumer's queued messages (and its own
        ack-timeout tracker), ask for everything unacked, hand the cleared messages' permits back."""
        state = self.state
        if state.closed or not self.connected:
            return
        dropped = state.drop_queued(self.topic)
        if not state.multi_topics and state.unacked is not None:
            state.unacked.clear()
        assert self.broker_consumer is not None
        state.commands.redeliver_unacknowledged(self.broker_consumer)
        if dropped and state.config.receiver_queue_size > 0:
            self.increase_available_permits(dropped)

    def close_trackers(self) -> None:
        if self.chunk_tracker is not None:
            self.chunk_tracker.close()
        if self.nacks is not None:
            self.nacks.close()
        if self.dead_letters is not None:
            self.dead_letters.producer.close()
        if self.retry is not None:
            self.retry.retry_producer.close()
            self.retry.dead_letter_producer.close()


__all__ = ["MAX_REDELIVER_UNACKNOWLEDGED", "PartitionConsumer"]
