"""Shared dispatch: priority round robin over the consumers, replay set first, unacked limits.

Models `PersistentDispatcherMultipleConsumers` of branch-3.0 and branch-4.0 (and 4.0's `...Classic` with
``subscriptionSharedUseClassicPersistentImplementation=true``), docs/guide/subscription-types.md#shared-round-robin,
docs/guide/flow-control.md#flow-permits:

* ``readMoreEntries``: with ``totalAvailablePermits > 0`` and an available consumer, read
  ``min(totalAvailablePermits, readBatchSize)``; replays (the replay set, oldest first, already-acked positions
  dropped) come before normal reads; normal reads stop while the subscription is blocked on unacked messages.
* ``trySendMessagesToConsumers``: ``avgBatchSizePerMsg = max(messages / entries, 1)``; while a consumer is
  available, `round_robin.SharedConsumerList.next_consumer()` picks one and `batch_size` gives its entries
  (3.x: ``max(min(R, P, U, 20) / A, 1)``; 4.x: ``max(min(20, ceil(min(R, P, U) / A)), 1)``); what is left
  goes to the replay set.
* Consumer removal puts its pending acks in the replay set without counting a redelivery; the last
  consumer leaving clears the replay set and the next one to join rewinds the cursor.
* ``totalUnackedMessages`` blocks the dispatcher at ``maxUnackedMessagesPerSubscription`` and unblocks it
  below half.
* Delayed delivery (`delayed_dispatch.DelayedDelivery`, docs/guide/delayed-delivery.md#hold-back): entries about to be
  sent go through
  ``trackDelayedDelivery`` and held ones are not sent; due ones join the replay set first in
  ``getMessagesToReplayNow``; the fixed-delay look-ahead can pause reads.

* Chunks (docs/guide/chunked-messages.md#chunk-count, ``sendChunkedMessagesToConsumers``): a read holding an entry with
  a uuid (only looked
  for once the topic stored a chunk) is split by `chunk_assignor.SharedConsumerAssignor`, which keeps every
  chunk of a message on the consumer that got its chunk 0; each consumer gets ``min(permits, its entries)``,
  the rest and the unassigned chunks go to the replay set. The released assignor can give a pinned consumer
  more entries than it has permits (see `chunk_assignor`); when the last chunk of a message is among the excess,
  its pin is already gone and the chunk stays in the replay set for good, which stalls the subscription, as in
  3.0/4.0 (PR #25620 fixes the bookkeeping). As in 3.0/4.0 a pin also outlives its consumer: the
  assignor still reads the permits a consumer had when it left, so the rest of that message (and its chunks
  returned from the consumer's pending acks) go to the closed consumer, whose pending-acks map refuses them:
  they are lost to an ack hole until the topic is reloaded (``chunk_lost`` events say so).
* A client's redeliver request (all pending acks, or the listed ids among them) puts the positions in the
  replay set and counts one more redelivery for each (docs/guide/redelivery.md#redelivery-count); a consumer leaving
  counts none.

Simplifies: reads complete synchronously (no pending read to cancel, no read backoff, no
``minReplayedPosition`` race), consumers are always writable, no dispatch rate limits, no filters, no
byte-based read limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pulsarlab.broker.consumer import popcount
from pulsarlab.broker.delayed.dispatch import DelayedDelivery
from pulsarlab.broker.dispatch.chunk_assignor import ReplayReason, SharedConsumerAssignor
from pulsarlab.broker.dispatch.entries_per_turn import classic_batch_entries, get_max_entries_in_this_batch
from pulsarlab.broker.dispatch.round_robin import SharedConsumerList
from pulsarlab.broker.redelivery import (
    InMemoryRedeliveryTracker,
    MessageRedeliveryController,
    RedeliveryTrackerDisabled,
)
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue.chunk_assignment import CHUNK_HELD, CHUNK_LOST, CHUNK_PINNED
from pulsarlab.event_catalogue.redelivery import REDELIVERY_COUNTED
from pulsarlab.managed_ledger.position import Position
from pulsarlab.profiles import SharedDispatcherForm
from pulsarlab.protocol.acks import ack_set_mask

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.subscription import PersistentSubscription
    from pulsarlab.events import EventLog
    from pulsarlab.managed_ledger.cursor import Entry
    from pulsarlab.messages import MessageMetadata

NORMAL = 0
REPLAY = 1
MAX_LOOPS = 1_000_000


class SharedDispatcher:
    """The Shared dispatcher of one subscription."""

    type_name = "Shared"

    def __init__(self, subscription: "PersistentSubscription", *, allow_out_of_order_delivery: bool = True) -> None:
        svc = subscription.topic.service
        self.subscription = subscription
        self.cursor = subscription.cursor
        self.config = conf = svc.config
        self.profile = svc.profile
        self.scheduler = svc.scheduler
        self.events = svc.events
        self.classic = self._uses_classic()
        form = SharedDispatcherForm.V3 if self.classic else self.profile.shared_dispatcher
        self.form = form
        self.consumer_list: SharedConsumerList[Consumer] = SharedConsumerList(
            self.profile.replace(shared_dispatcher=form)
        )
        self.redelivery_messages = MessageRedeliveryController(allow_out_of_order_delivery)
        self.redelivery_tracker = (
            InMemoryRedeliveryTracker()
            if conf.flag("subscriptionRedeliveryTrackerEnabled")
            else RedeliveryTrackerDisabled()
        )
        self.total_available_permits = 0
        self.total_unacked_messages = 0
        self.blocked_on_unacked = False
        self.read_batch_size = conf.integer("dispatcherMaxReadBatchSize")
        self.max_round_robin = conf.integer("dispatcherMaxRoundRobinBatchSize")
        self.max_unacked_per_subscription = conf.integer("maxUnackedMessagesPerSubscription")
        self.waiting = False  # a normal read is parked at the end of the topic
        self.closed = False
        self.defer_reads = 0  # > 0 while an ack is applied: reads run after it (Pulsar reads asynchronously)
        self._deferred_read = False
        self._reading = False
        self._again = False
        self._batch_fn = classic_batch_entries if form is SharedDispatcherForm.V3 else get_max_entries_in_this_batch
        self.delayed = DelayedDelivery(self)
        self._topic = subscription.topic
        self._replay_positions = self.redelivery_messages.position_hashes()  # len() is the replay set's size
        # the read hooks are this class's own (not Key_Shared's): `_read_once` may skip their calls
        cls = type(self)
        self._plain_read_hooks = (
            cls.messages_to_replay_now is SharedDispatcher.messages_to_replay_now
            and cls.max_entries_read_limit is SharedDispatcher.max_entries_read_limit
            and cls.is_normal_read_allowed is SharedDispatcher.is_normal_read_allowed
        )
        self.chunk_assignor: SharedConsumerAssignor[Consumer, Entry] | None = (
            None  # made at the first read holding a chunk
        )

    def _uses_classic(self) -> bool:
        return self.profile.is_4x and self.config.flag("subscriptionSharedUseClassicPersistentImplementation")

    # --- membership ----------------------------------------------------------------------------
    def consumers(self) -> list["Consumer"]:
        return list(self.consumer_list.consumers)

    def is_consumer_connected(self) -> bool:
        return len(self.consumer_list) > 0

    def add_consumer(self, consumer: "Consumer") -> None:
        if not len(self.consumer_list):
            self.subscription.rewind_cursor()
            self.redelivery_messages.clear()
            self.delayed.on_first_consumer()
            self.waiting = False
        self.consumer_list.add(consumer)

    def remove_consumer(self, consumer: "Consumer") -> None:
        """`removeConsumer`. The read that unblocking may start runs once the consumer is gone from the list
        (Pulsar's ``readMoreEntriesAsync`` runs after the synchronized removal)."""
        self.begin_ack()
        try:
            self._remove_consumer(consumer)
        finally:
            self.end_ack()

    def _remove_consumer(self, consumer: "Consumer") -> None:
        self.add_unacked_messages(-consumer.unacked_messages)
        if consumer not in self.consumer_list:
            return
        self.consumer_list.remove(consumer)
        if not len(self.consumer_list):
            self.waiting = False
            self.subscription.set_waiting(False)
            if consumer.pending_acks is not None:  # always: Shared consumers ack individually
                consumer.pending_acks.closed = True
            self.redelivery_messages.clear()
            self.redelivery_tracker.clear()
            self.total_available_permits = 0
            self._all_consumers_removed()
        else:
            self._return_pending_acks(consumer)
            self.total_available_permits -= consumer.available_permits
            self.read_more_entries()

    def _return_pending_acks(self, consumer: "Consumer") -> None:
        tracker = self.redelivery_tracker

        def back(ledger: int, entry: int, batch_size: int, sticky_hash: int) -> None:
            self.add_message_to_replay(ledger, entry, sticky_hash)
            tracker.add_if_absent(ledger, entry)

        if consumer.pending_acks is not None:
            consumer.pending_acks.for_each_and_close(back)

    def _all_consumers_removed(self) -> None:
        pass

    def consumer_flow(self, consumer: "Consumer", n: int) -> None:
        if consumer not in self.consumer_list:
            return
        self.total_available_permits += n
        self.read_more_entries()

    # --- unacked accounting --------------------------------------------------------------------
    def add_unacked_messages(self, n: int) -> None:
        """`addUnAckedMessages`: block at maxUnackedMessagesPerSubscription, unblock below half of it."""
        limit = self.max_unacked_per_subscription
        if limit <= 0 and self.blocked_on_unacked:
            self._set_blocked(False)
            self.read_more_entries()
        total = self.total_unacked_messages = self.total_unacked_messages + n
        if limit > 0 and total >= limit and not self.blocked_on_unacked:
            self._set_blocked(True)
        elif self.blocked_on_unacked and total < limit // 2:
            self._set_blocked(False)
            self.read_more_entries()

    def _set_blocked(self, blocked: bool) -> None:
        self.blocked_on_unacked = blocked
        if self.events.enabled:
            self.events.append_row(
                ev.DISPATCHER_BLOCKED,
                self.scheduler.now_ms,
                self.subscription.id,
                int(blocked),
                self.total_unacked_messages,
            )

    # --- replay set ----------------------------------------------------------------------------
    def add_message_to_replay(self, ledger: int, entry: int, sticky_hash: int = 0) -> bool:
        """`addMessageToReplay`: ignored at or before the mark-delete position."""
        md = self.cursor.mark_delete_position
        if (ledger, entry) <= (md.ledger_id, md.entry_id):
            return False
        added = self.redelivery_messages.add(ledger, entry, sticky_hash)
        if added and self.events.enabled:
            self.events.append_row(
                ev.REPLAY_ADDED, self.scheduler.now_ms, self.subscription.id, ledger, entry, sticky_hash
            )
        return added

    def messages_to_replay_now(self, max_messages: int) -> list[tuple[int, int]]:
        """`getMessagesToReplayNow` (Key_Shared overrides it): due delayed messages first join the replay set."""
        if self.delayed.tracker is not None:
            self.delayed.release_due(max_messages, self.redelivery_messages)
        return self.redelivery_messages.messages_to_replay_now(max_messages)

    # --- reading -------------------------------------------------------------------------------
    def first_available_consumer_permits(self) -> int:
        """`getFirstAvailableConsumerPermits`: the permits of the first unblocked consumer that has some."""
        for c in self.consumer_list.consumers:
            if not c.blocked and c.available_permits > 0:
                return c.available_permits
        return 0

    def is_at_least_one_consumer_available(self) -> bool:
        for c in self.consumer_list.consumers:  # first_available_consumer_permits() > 0, without the call
            if not c.blocked and c.available_permits > 0:
                return True
        return False

    def is_normal_read_allowed(self) -> bool:
        return True

    def max_entries_read_limit(self) -> int:
        return self.read_batch_size

    def read_more_entries(self) -> None:
        """`readMoreEntries`, looped while it makes progress (Pulsar re-runs it after each dispatch)."""
        if self.defer_reads:
            self._deferred_read = True
            return
        if self._reading:
            self._again = True
            return
        self._reading = True
        try:
            loops = 0
            while True:
                self._again = False
                if not self._read_once() and not self._again:
                    break
                loops += 1
                if loops >= MAX_LOOPS:  # pragma: no cover - a model bug, not a Pulsar behaviour
                    raise RuntimeError("dispatcher kept reading without end")
        finally:
            self._reading = False

    def _read_once(self) -> bool:
        delayed_tracker = self.delayed.tracker
        if delayed_tracker is not None and self.delayed.should_pause():
            return False
        if self.closed or self.total_available_permits <= 0:
            return False
        for c in self.consumer_list.consumers:  # is_at_least_one_consumer_available(), inlined: once per read
            if not c.blocked and c.available_permits > 0:
                break
        else:
            return False
        cursor = self.cursor
        if self._plain_read_hooks and delayed_tracker is None and not self._replay_positions:
            # this class's max_entries_read_limit, messages_to_replay_now (empty: nothing to replay, no delayed
            # tracker) and is_normal_read_allowed, inlined: the read of every published entry asks them
            if self.blocked_on_unacked or self.waiting:
                return False
            return self._read_normal(cursor, min(self.total_available_permits, self.read_batch_size))
        to_read = min(self.total_available_permits, self.read_batch_size, self.max_entries_read_limit())
        replay = self.messages_to_replay_now(to_read)
        if replay:
            entries = cursor.replay_entries([Position(l, e) for l, e in replay])
            if len(entries) != len(replay):  # already acked: drop them from the replay set
                read = {(p.ledger_id, p.entry_id) for p, _ in entries}
                for pos in replay:
                    if pos not in read:
                        self.redelivery_messages.remove(*pos)
            if self.events.enabled and entries:
                first = entries[0][0]
                self.events.append_row(
                    ev.ENTRIES_READ,
                    self.scheduler.now_ms,
                    self.subscription.id,
                    1,
                    len(entries),
                    first.ledger_id,
                    first.entry_id,
                    to_read,
                )
            if not entries:
                return True
            return self.try_send_messages_to_consumers(REPLAY, entries)
        if self.blocked_on_unacked:
            return False
        if not self.is_normal_read_allowed():
            return False
        if self.waiting:
            return False
        return self._read_normal(cursor, to_read)

    def _read_normal(self, cursor: Any, to_read: int) -> bool:
        """The normal read of `_read_once` (nothing to replay): up to ``to_read`` entries from the read position,
        or wait for new entries at the end of the topic."""
        if not cursor.has_more_entries():
            self.waiting = True
            cursor.waiting_read_op = True  # the subscription's set_waiting(True), without its call
            return False
        entries = cursor.read_entries(to_read)
        if not entries:
            return False
        delayed = self.delayed
        if delayed.tracker is not None:
            entries = delayed.skip_held(entries)
            if not entries:
                return True
        if self.events.enabled:
            first = entries[0][0]
            self.events.append_row(
                ev.ENTRIES_READ,
                self.scheduler.now_ms,
                self.subscription.id,
                0,
                len(entries),
                first.ledger_id,
                first.entry_id,
                to_read,
            )
        self.try_send_messages_to_consumers(NORMAL, entries)
        if self._again or delayed.tracker is not None or not self._plain_read_hooks or self._replay_positions:
            return True
        # `_read_once`'s next call, decided here when it would take the plain path: it stops (returns False) when
        # nothing can be read, and parks at the end of the topic when a read would find nothing (the publish of
        # one entry then costs one read, not a read and an empty one)
        if self.closed or self.total_available_permits <= 0 or self.blocked_on_unacked or self.waiting:
            return False
        for c in self.consumer_list.consumers:  # is_at_least_one_consumer_available(), inlined
            if not c.blocked and c.available_permits > 0:
                break
        else:
            return False
        if cursor.has_more_entries():
            return True
        self.waiting = True
        cursor.waiting_read_op = True  # the subscription's set_waiting(True), without its call
        return False

    def on_new_entries(self) -> None:
        if self.waiting:
            self.waiting = False
            self.cursor.waiting_read_op = False  # the subscription's set_waiting(False), without its call
            self.read_more_entries()

    def on_cursor_rewound(self) -> None:
        self.waiting = False

    # --- sending -------------------------------------------------------------------------------
    def try_send_messages_to_consumers(self, read_type: int, entries: list[Entry]) -> bool:
        """`trySendMessagesToConsumers` (Shared). Returns True when anything was sent."""
        if self._topic.msg_chunk_published and any(data.metadata.uuid is not None for _, data in entries):
            return self.send_chunked_messages_to_consumers(read_type, entries)
        n_entries = len(entries)
        if n_entries == 1:
            # the loop below for one entry (a read of one published entry, the unbatched steady state): the first
            # turn's consumer takes it whatever batch_fn would say (>= 1), or it goes to the replay set
            for candidate in self.consumer_list.consumers:  # first_available_consumer_permits() > 0, inlined
                if not candidate.blocked and candidate.available_permits > 0:
                    break
            else:
                pos = entries[0][0]
                self.add_message_to_replay(pos.ledger_id, pos.entry_id, 0)
                return False
            c = self.consumer_list.next_consumer()
            if c is None:  # cannot happen while one is available; Pulsar rewinds here
                self.subscription.rewind_cursor()
                return False
            if read_type == REPLAY:
                pos = entries[0][0]
                self.redelivery_messages.remove(pos.ledger_id, pos.entry_id)
            delayed = self.delayed
            if delayed.tracker is not None or self._topic.delayed_messages_published:
                entries = delayed.filter(entries)
            subscription = self.subscription
            _, msgs, acked = c.send_messages(
                entries,
                None,
                self.redelivery_tracker,
                subscription.batch_ack_sets(entries) if subscription.batch_index_level else None,
            )
            self.total_available_permits -= msgs - acked
            return msgs > 0
        remaining = 0
        for _, data in entries:
            n = data.metadata.num_messages_in_batch
            remaining += 1 if n is None else n
        avg = max(remaining // n_entries, 1) if remaining > 0 else 1
        start = 0
        sent_any = False
        batch_fn = self._batch_fn
        next_consumer = self.consumer_list.next_consumer
        replay_set = self.redelivery_messages
        subscription = self.subscription
        ack_sets_for = subscription.batch_ack_sets if subscription.batch_index_level else None  # else None sets
        tracker = self.redelivery_tracker
        max_rr = self.max_round_robin
        consumers = self.consumer_list.consumers
        delayed = self.delayed
        held_back = delayed.filter if delayed.tracker is not None or self._topic.delayed_messages_published else None
        while start < n_entries:
            first_permits = 0
            for candidate in consumers:  # first_available_consumer_permits(), inlined
                if not candidate.blocked and candidate.available_permits > 0:
                    first_permits = candidate.available_permits
                    break
            if not (max(self.total_available_permits, first_permits) > 0 and first_permits > 0):
                break
            c = next_consumer()
            if c is None:  # cannot happen while one is available; Pulsar rewinds here
                subscription.rewind_cursor()
                return sent_any
            if start == n_entries - 1:  # the last entry goes whatever batch_fn says (it is >= 1), not asked
                end = n_entries
            else:
                count = batch_fn(
                    remaining, c.max_unacked_messages, c.unacked_messages, avg, c.available_permits, max_rr
                )
                end = min(start + count, n_entries)
            batch = entries[start:end]
            if read_type == REPLAY:
                for pos, _ in batch:
                    replay_set.remove(pos.ledger_id, pos.entry_id)
            if held_back is not None:
                batch = held_back(batch)
            _, msgs, acked = c.send_messages(
                batch, None, tracker, ack_sets_for(batch) if ack_sets_for is not None else None
            )
            remaining -= msgs
            start = end
            self.total_available_permits -= msgs - acked
            sent_any = sent_any or msgs > 0
        if start < n_entries:
            for pos, _ in entries[start:]:
                self.add_message_to_replay(pos.ledger_id, pos.entry_id, 0)
        return sent_any

    def send_chunked_messages_to_consumers(self, read_type: int, entries: list[Entry]) -> bool:
        """`sendChunkedMessagesToConsumers`: the assignor splits the read; True when anything was sent."""
        assignor = self.chunk_assignor
        if assignor is None:
            assignor = self.chunk_assignor = SharedConsumerAssignor(
                self.consumer_list.next_consumer, _permits_of, metadata_of=_entry_metadata
            )
        result = assignor.assign(entries, len(self.consumer_list))
        events = self.events if self.events.enabled else None
        for entry, reason in result.replay:
            self._hold_chunk(entry, reason.explanation, assignor, events)
        for entry in result.dropped:  # 3.0/4.0 release these unread; the model replays them so none is lost
            self._hold_chunk(entry, ReplayReason.NO_CONSUMER.explanation, assignor, events)
        tracker = self.redelivery_tracker
        ack_sets_for = self.subscription.batch_ack_sets
        replay_set = self.redelivery_messages
        sent_any = False
        for c, assigned in result.assigned:
            if events is not None:
                for pos, data in assigned:
                    meta = data.metadata
                    if meta.chunk_id == 0 and meta.uuid is not None:  # CHUNK_PINNED's fields, in order
                        events.append_row(
                            CHUNK_PINNED,
                            self.scheduler.now_ms,
                            self.subscription.id,
                            c.id,
                            events.text_id(meta.uuid),
                            pos.ledger_id,
                            pos.entry_id,
                        )
            count = min(max(c.available_permits, 0), len(assigned))
            for entry in assigned[count:]:
                meta = entry[1].metadata
                why = f"consumer {c.id} ran out of permits in this read"
                if (
                    meta.uuid is not None
                    and meta.num_chunks_from_msg is not None
                    and meta.chunk_id == meta.num_chunks_from_msg - 1
                    and assignor.pinned_consumer(meta.uuid) is None
                ):
                    why += (
                        "; the assignor dropped the pin when it handed out this last chunk, so no consumer "
                        "will take it from the replay set and the subscription stalls (the released "
                        "permit bookkeeping, PR #25620)"
                    )
                self._hold_chunk(entry, why, assignor, events)
            if count == 0:
                continue
            batch = assigned[:count]
            if read_type == REPLAY:
                for pos, _ in batch:
                    replay_set.remove(pos.ledger_id, pos.entry_id)
            if self.delayed.needed:  # filterEntriesForConsumer holds delayed chunks back too
                batch = self.delayed.filter(batch)
            if c.closed and events is not None:
                for pos, data in batch:
                    meta = data.metadata
                    events.append(
                        CHUNK_LOST,
                        self.scheduler.now_ms,
                        subscription=self.subscription.id,
                        consumer=c.id,
                        uuid=meta.uuid if meta.uuid is not None else "",
                        chunk_id=meta.chunk_id,
                        position=f"{pos.ledger_id}:{pos.entry_id}",
                    )
            _, msgs, acked = c.send_messages(batch, None, tracker, ack_sets_for(batch))
            self.total_available_permits -= msgs - acked
            sent_any = sent_any or msgs > 0
        return sent_any

    def _hold_chunk(
        self, entry: Entry, reason: str, assignor: SharedConsumerAssignor[Consumer, Entry], events: EventLog | None
    ) -> None:
        pos, data = entry
        if not self.add_message_to_replay(pos.ledger_id, pos.entry_id, 0) or events is None:
            return
        meta = data.metadata
        if meta.uuid is None:
            return
        pinned = assignor.pinned_consumer(meta.uuid)
        events.append(
            CHUNK_HELD,
            self.scheduler.now_ms,
            subscription=self.subscription.id,
            consumer=pinned.id if pinned is not None else -1,
            uuid=meta.uuid,
            chunk_id=meta.chunk_id,
            position=f"{pos.ledger_id}:{pos.entry_id}",
            reason=reason,
        )

    # --- acks and redelivery -------------------------------------------------------------------
    def begin_ack(self) -> None:
        self.defer_reads += 1

    def end_ack(self) -> None:
        self.defer_reads -= 1
        if not self.defer_reads and self._deferred_read:
            self._deferred_read = False
            self.read_more_entries()

    def after_ack(self, mark_delete_moved: bool) -> None:
        pass

    def redeliver_unacknowledged_messages(
        self, consumer: "Consumer", positions: Sequence[tuple[int, int]] | None = None
    ) -> None:
        """`Consumer.redeliverUnacknowledgedMessages` + the dispatcher's, on a client's redeliver request.

        ``positions`` None (a command without ids): every pending ack of the consumer; its unacked count is
        cleared. Else only those of ``positions`` the consumer holds as pending acks; their unacked messages
        are subtracted. Either way the consumer is unblocked, the positions go to the replay set and each one
        added there counts one more redelivery (`InMemoryRedeliveryTracker.incrementAndGetRedeliveryCount`).
        """
        pending = consumer.pending_acks
        if pending is None:  # a Shared or Key_Shared consumer always has them
            return
        if positions is None:
            items = sorted(pending.items())
            consumer.clear_unacked()
        else:
            items = []
            for ledger, entry in positions:
                value = pending.get(ledger, entry)
                if value is not None:
                    items.append(((ledger, entry), value))
        total = 0
        for (ledger, entry), (batch_size, _h) in items:
            total += self._unacked_count(ledger, entry, batch_size)
            pending.remove(ledger, entry)
        if positions is not None:
            consumer.add_unacked(-total)
            consumer._set_blocked(False)
        now = self.scheduler.now_ms
        consumer.msg_redeliver.record(now, total)
        keep_hash = self.redelivery_keeps_hash()
        tracker = self.redelivery_tracker
        events = self.events if self.events.enabled else None
        for (ledger, entry), (_bs, h) in items:
            if self.add_message_to_replay(ledger, entry, h if keep_hash else 0):
                count = tracker.increment_and_get(ledger, entry)
                if events is not None and count:
                    events.append_row(REDELIVERY_COUNTED, now, self.subscription.id, ledger, entry, count)
        consumer.flow_consumer_blocked_permits()
        self.read_more_entries()

    def _unacked_count(self, ledger: int, entry: int, batch_size: int) -> int:
        """`getUnAckedCountForBatchIndexLevelEnabled`: the messages of an entry not yet acked at the broker."""
        if self.subscription.batch_index_level:
            words = self.cursor.batch_deleted_indexes(Position(ledger, entry))
            if words is not None:
                return popcount(ack_set_mask(words))
        return batch_size

    def redelivery_keeps_hash(self) -> bool:
        return False

    # --- stats ---------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return {
            "msgInReplay": len(self.redelivery_messages),
            "unackedMessages": self.total_unacked_messages,
            "blockedSubscriptionOnUnackedMsgs": self.blocked_on_unacked,
            **self.delayed.stats(),
        }

    def clear_delayed_messages(self) -> None:
        """``clearDelayedMessages`` (the subscription is being deleted)."""
        self.delayed.clear()

    def close(self) -> None:
        self.closed = True
        self.delayed.close()


def _permits_of(consumer: "Consumer") -> int:
    """``Consumer.getAvailablePermits``: the permit count, also of a consumer that has left."""
    return consumer.available_permits


def _entry_metadata(entry: Entry) -> MessageMetadata:
    return entry[1].metadata
