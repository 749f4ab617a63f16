"""Shared dispatch: priority round robin over the consumers, replay set first, unacked limits.

Models `PersistentDispatcherMultipleConsumers` of branch-3.0 and branch-4.0 (and 4.0's `...Classic` with
``subscriptionSharedUseClassicPersistentImplementation=true``), reference §5, §6:

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

Simplifies: reads complete synchronously (no pending read to cancel, no read backoff, no
``minReplayedPosition`` race), consumers are always writable, no dispatch rate limits, no delayed
delivery or filters, no byte-based read limit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import model_events as ev
from ..profiles import SharedDispatcherForm
from .batch_size import classic_batch_entries, get_max_entries_in_this_batch
from .position import Position
from .redelivery import InMemoryRedeliveryTracker, MessageRedeliveryController, RedeliveryTrackerDisabled
from .round_robin import SharedConsumerList

if TYPE_CHECKING:  # pragma: no cover
    from .consumer import Consumer
    from .subscription import PersistentSubscription

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
        self.consumer_list = SharedConsumerList(self.profile.replace(shared_dispatcher=form))
        self.redelivery_messages = MessageRedeliveryController(allow_out_of_order_delivery)
        self.redelivery_tracker = (
            InMemoryRedeliveryTracker() if conf["subscriptionRedeliveryTrackerEnabled"] else RedeliveryTrackerDisabled()
        )
        self.total_available_permits = 0
        self.total_unacked_messages = 0
        self.blocked_on_unacked = False
        self.read_batch_size = conf["dispatcherMaxReadBatchSize"]
        self.max_round_robin = conf["dispatcherMaxRoundRobinBatchSize"]
        self.max_unacked_per_subscription = conf["maxUnackedMessagesPerSubscription"]
        self.waiting = False  # a normal read is parked at the end of the topic
        self.closed = False
        self.defer_reads = 0  # > 0 while an ack is applied: reads run after it (Pulsar reads asynchronously)
        self._deferred_read = False
        self._reading = False
        self._again = False
        self._batch_fn = classic_batch_entries if form is SharedDispatcherForm.V3 else get_max_entries_in_this_batch

    def _uses_classic(self) -> bool:
        return self.profile.is_4x and bool(self.config["subscriptionSharedUseClassicPersistentImplementation"])

    # --- membership ----------------------------------------------------------------------------
    def consumers(self) -> list["Consumer"]:
        return list(self.consumer_list.consumers)

    def is_consumer_connected(self) -> bool:
        return len(self.consumer_list) > 0

    def add_consumer(self, consumer: "Consumer") -> None:
        if not len(self.consumer_list):
            self.subscription.rewind_cursor()
            self.redelivery_messages.clear()
            self.waiting = False
        self.consumer_list.add(consumer)

    def remove_consumer(self, consumer: "Consumer") -> None:
        self.add_unacked_messages(-consumer.unacked_messages)
        if consumer not in self.consumer_list:
            return
        self.consumer_list.remove(consumer)
        if not len(self.consumer_list):
            self.waiting = False
            self.subscription.set_waiting(False)
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
            self.events.append_row(ev.DISPATCHER_BLOCKED, self.scheduler.now(), self.subscription.id, int(blocked),
                                   self.total_unacked_messages)

    # --- replay set ----------------------------------------------------------------------------
    def add_message_to_replay(self, ledger: int, entry: int, sticky_hash: int = 0) -> bool:
        """`addMessageToReplay`: ignored at or before the mark-delete position."""
        md = self.cursor.mark_delete_position
        if (ledger, entry) <= (md.ledger_id, md.entry_id):
            return False
        added = self.redelivery_messages.add(ledger, entry, sticky_hash)
        if added and self.events.enabled:
            self.events.append_row(ev.REPLAY_ADDED, self.scheduler.now(), self.subscription.id, ledger, entry,
                                   sticky_hash)
        return added

    def messages_to_replay_now(self, max_messages: int) -> list[tuple[int, int]]:
        """`getMessagesToReplayNow` (Key_Shared overrides it)."""
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
            for _ in range(MAX_LOOPS):
                self._again = False
                progressed = self._read_once()
                if not progressed and not self._again:
                    break
            else:  # pragma: no cover - a model bug, not a Pulsar behaviour
                raise RuntimeError("dispatcher kept reading without end")
        finally:
            self._reading = False

    def _read_once(self) -> bool:
        if self.closed or self.total_available_permits <= 0 or not self.is_at_least_one_consumer_available():
            return False
        to_read = min(self.total_available_permits, self.read_batch_size, self.max_entries_read_limit())
        replay = self.messages_to_replay_now(to_read)
        cursor = self.cursor
        if replay:
            entries = cursor.replay_entries([Position(l, e) for l, e in replay])
            if len(entries) != len(replay):  # already acked: drop them from the replay set
                read = {(p.ledger_id, p.entry_id) for p, _ in entries}
                for pos in replay:
                    if pos not in read:
                        self.redelivery_messages.remove(*pos)
            if self.events.enabled and entries:
                first = entries[0][0]
                self.events.append_row(ev.ENTRIES_READ, self.scheduler.now(), self.subscription.id, 1,
                                       len(entries), first.ledger_id, first.entry_id, to_read)
            if not entries:
                return True
            return self.try_send_messages_to_consumers(REPLAY, entries)
        if self.blocked_on_unacked:
            return False
        if not self.is_normal_read_allowed():
            return False
        if self.waiting:
            return False
        if not cursor.has_more_entries():
            self.waiting = True
            self.subscription.set_waiting(True)
            return False
        entries = cursor.read_entries(to_read)
        if not entries:
            return False
        if self.events.enabled:
            first = entries[0][0]
            self.events.append_row(ev.ENTRIES_READ, self.scheduler.now(), self.subscription.id, 0,
                                   len(entries), first.ledger_id, first.entry_id, to_read)
        self.try_send_messages_to_consumers(NORMAL, entries)
        return True

    def on_new_entries(self) -> None:
        if self.waiting:
            self.waiting = False
            self.subscription.set_waiting(False)
            self.read_more_entries()

    def on_cursor_rewound(self) -> None:
        self.waiting = False

    # --- sending -------------------------------------------------------------------------------
    def try_send_messages_to_consumers(self, read_type: int, entries: list) -> bool:
        """`trySendMessagesToConsumers` (Shared). Returns True when anything was sent."""
        remaining = 0
        for _, data in entries:
            n = data.metadata.num_messages_in_batch
            remaining += 1 if n is None else n
        n_entries = len(entries)
        avg = max(remaining // n_entries, 1) if remaining > 0 else 1
        start = 0
        sent_any = False
        batch_fn = self._batch_fn
        next_consumer = self.consumer_list.next_consumer
        replay_set = self.redelivery_messages
        ack_sets_for = self.subscription.batch_ack_sets
        tracker = self.redelivery_tracker
        max_rr = self.max_round_robin
        while start < n_entries:
            first_permits = self.first_available_consumer_permits()
            if not (max(self.total_available_permits, first_permits) > 0 and first_permits > 0):
                break
            c = next_consumer()
            if c is None:  # cannot happen while one is available; Pulsar rewinds here
                self.subscription.rewind_cursor()
                return sent_any
            count = batch_fn(remaining, c.max_unacked_messages, c.unacked_messages, avg, c.available_permits, max_rr)
            end = min(start + count, n_entries)
            batch = entries[start:end]
            if read_type == REPLAY:
                for pos, _ in batch:
                    replay_set.remove(pos.ledger_id, pos.entry_id)
            _, msgs, acked = c.send_messages(batch, None, tracker, ack_sets_for(batch))
            remaining -= msgs
            start = end
            self.total_available_permits -= msgs - acked
            sent_any = sent_any or msgs > 0
        if start < n_entries:
            for pos, _ in entries[start:]:
                self.add_message_to_replay(pos.ledger_id, pos.entry_id, 0)
        return sent_any

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

    def redeliver_unacknowledged_messages(self, consumer: "Consumer") -> None:
        """`Consumer.redeliverUnacknowledgedMessages` + the dispatcher's: every pending ack goes to replay
        and its redelivery count goes up."""
        pending = consumer.pending_acks
        positions = sorted(p for p, _ in pending.items())
        hashes = {p: v[1] for p, v in pending.items()}
        consumer.clear_unacked()
        for ledger, entry in positions:
            pending.remove(ledger, entry)
        for ledger, entry in positions:
            h = hashes[(ledger, entry)] if self.redelivery_keeps_hash() else 0
            if self.add_message_to_replay(ledger, entry, h):
                self.redelivery_tracker.increment_and_get(ledger, entry)
        consumer.flow_consumer_blocked_permits()
        self.read_more_entries()

    def redelivery_keeps_hash(self) -> bool:
        return False

    # --- stats ---------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return {
            "msgInReplay": len(self.redelivery_messages),
            "unackedMessages": self.total_unacked_messages,
            "blockedSubscriptionOnUnackedMsgs": self.blocked_on_unacked,
        }

    def close(self) -> None:
        self.closed = True
