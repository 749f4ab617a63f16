"""Exclusive and Failover dispatch: one active consumer gets everything the cursor reads.

Models `AbstractDispatcherSingleActiveConsumer` + `PersistentDispatcherSingleActiveConsumer`
(docs/guide/subscription-types.md#failover-switch, docs/guide/flow-control.md#flow-permits):

* Exclusive: a second consumer fails with ``ConsumerBusyException("Exclusive consumer is already connected")``.
* Failover: the active consumer is chosen by `failover.FailoverConsumerList` (priority, name, partition index
  or hash ring). When it changes: with ``activeConsumerFailoverDelayTimeMillis`` > 0 the rewind, the
  ACTIVE_CONSUMER_CHANGE notifications and the read run after the delay (a change while that task is
  pending does not re-arm it); otherwise (and always for Exclusive) the cursor is rewound and read at once.
  A newcomer that does not change the active consumer is told at once who is active.
* Reads: ``min(active permits, readBatchSize)`` entries, all sent to the active consumer (permits may go
  negative with batches); a read at the end of the topic waits for the next entry.

Simplifies: reads complete synchronously, so there is never a read in flight to cancel or to hand to a
consumer that stopped being active; no read backoff or rate limiting. A ``read_compacted`` consumer reads the
compacted view below the horizon (`broker.compaction`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from pulsarlab.broker.compaction import combine_masks
from pulsarlab.broker.dispatch.failover import FailoverConsumerList
from pulsarlab.broker.redelivery import RedeliveryTrackerDisabled
from pulsarlab.errors import ConsumerBusyException
from pulsarlab.event_catalogue import broker as ev

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.compaction import CompactedTopic
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.subscription import PersistentSubscription
    from pulsarlab.clock import Timer


class SingleActiveConsumerDispatcher:
    """`PersistentDispatcherSingleActiveConsumer` for one subscription (type "Exclusive" or "Failover")."""

    def __init__(self, subscription: "PersistentSubscription", type_name: str) -> None:
        topic = subscription.topic
        self.subscription = subscription
        self.type_name = type_name
        self.cursor = subscription.cursor
        self.config = topic.service.config
        self.scheduler = topic.service.scheduler
        self.events = topic.service.events
        self.list: FailoverConsumerList[Consumer] = FailoverConsumerList(
            topic.name,
            topic.partition_index,
            consistent_hashing=self.config.flag("activeConsumerFailoverConsistentHashing"),
        )
        self.read_batch_size = self.config.integer("dispatcherMaxReadBatchSize")
        self.redelivery_tracker = RedeliveryTrackerDisabled()
        self.waiting_for: "Consumer | None" = None  # havePendingRead on an exhausted cursor
        self.read_on_active_task: Timer | None = None
        self.closed = False
        self._reading = False

    # --- membership ----------------------------------------------------------------------------
    @property
    def active_consumer(self) -> "Consumer | None":
        return self.list.active

    def consumers(self) -> list["Consumer"]:
        return list(self.list.consumers)

    def is_consumer_connected(self) -> bool:
        return bool(self.list.consumers)

    def add_consumer(self, consumer: "Consumer") -> None:
        if self.type_name == "Exclusive" and self.list.consumers:
            raise ConsumerBusyException("Exclusive consumer is already connected")
        pick = self.list.add(consumer)
        if pick.changed:
            self._schedule_read_on_active_consumer()
        else:
            self._notify(pick.notifications)

    def remove_consumer(self, consumer: "Consumer") -> None:
        pick = self.list.remove(consumer)  # ServerMetadataException("Consumer was not connected")
        if self.waiting_for is consumer:
            self.waiting_for = None
        if not self.list.consumers:
            self.waiting_for = None
            if self.read_on_active_task is not None:
                self.read_on_active_task.cancel()
                self.read_on_active_task = None
            return
        if pick.changed:
            self._schedule_read_on_active_consumer()

    def _notify(self, notifications: list[tuple["Consumer", "Consumer"]]) -> None:
        if self.type_name != "Failover":
            return
        events = self.events
        now = self.scheduler.now()
        for target, active in notifications:
            if events.enabled:
                events.append_row(
                    ev.ACTIVE_CONSUMER_CHANGE, now, target.id, int(target is active), self.subscription.id
                )
            target.cnx.active_consumer_changed(target is active)

    def _notify_all(self) -> None:
        active = self.list.active
        if active is not None:
            self._notify([(c, active) for c in self.list.consumers])

    def _schedule_read_on_active_consumer(self) -> None:
        """`scheduleReadOnActiveConsumer`."""
        self.waiting_for = None  # cancelPendingRead
        delay = self.config.integer("activeConsumerFailoverDelayTimeMillis")
        active = self.list.active
        if self.events.enabled:
            self.events.append_row(
                ev.ACTIVE_CONSUMER_PICKED,
                self.scheduler.now(),
                self.subscription.id,
                active.id if active is not None else -1,
                delay if self.type_name == "Failover" and delay > 0 else 0,
            )
        if self.type_name != "Failover" or delay <= 0:
            self.subscription.rewind_cursor()
            self._notify_all()
            self.read_more_entries(self.list.active)
            return
        if self.read_on_active_task is not None:
            return
        self.read_on_active_task = self.scheduler.call_later(
            delay, self._read_on_active, "failover: rewind and read on the active consumer"
        )

    def _read_on_active(self) -> None:
        self.read_on_active_task = None
        if not self.list.consumers:
            return
        self.waiting_for = None
        self.subscription.rewind_cursor()
        self._notify_all()
        self.read_more_entries(self.list.active)

    # --- flow and reads ------------------------------------------------------------------------
    def consumer_flow(self, consumer: "Consumer", n: int) -> None:
        """`internalConsumerFlow`: ignored for a standby consumer and while the rewind task is pending."""
        if self.waiting_for is not None or consumer is not self.list.active or self.read_on_active_task is not None:
            return
        self.read_more_entries(consumer)

    def add_unacked_messages(self, n: int) -> None:  # Exclusive/Failover keep no unacked counts
        pass

    def read_more_entries(self, consumer: "Consumer | None" = None) -> None:
        if consumer is None:
            consumer = self.list.active
        if consumer is None or self.closed:
            return
        if self._reading:
            return
        self._reading = True
        try:
            while True:
                consumer = self.list.active
                if consumer is None or consumer.available_permits <= 0 or self.waiting_for is not None:
                    break
                cursor = self.cursor
                if not cursor.has_more_entries():
                    self.waiting_for = consumer
                    self.subscription.set_waiting(True)
                    break
                to_read = min(consumer.available_permits, self.read_batch_size)
                compacted = self.subscription.topic.compacted if consumer.read_compacted else None
                if compacted is not None and cursor.read_position <= compacted.horizon:
                    self._read_compacted(consumer, compacted, to_read)
                    continue
                entries = cursor.read_entries(to_read)
                if not entries:
                    break
                if self.events.enabled:
                    first = entries[0][0]
                    self.events.append_row(
                        ev.ENTRIES_READ,
                        self.scheduler.now(),
                        self.subscription.id,
                        0,
                        len(entries),
                        first.ledger_id,
                        first.entry_id,
                        to_read,
                    )
                consumer.send_messages(entries, None, None, self.subscription.batch_ack_sets(entries))
        finally:
            self._reading = False

    def _read_compacted(self, consumer: "Consumer", compacted: "CompactedTopic", to_read: int) -> None:
        """`CompactedTopicImpl.asyncReadEntriesOrWait` below the horizon: send the kept entries from the read
        position on, or move the cursor past the horizon when none is left (the topic is read from there)."""
        cursor = self.cursor
        chosen, next_read = compacted.read(cursor.read_position, to_read)
        cursor.seek(next_read)
        if not chosen:
            return
        entries = [(pos, compacted.entry(pos)) for pos, _ in chosen]
        acked = self.subscription.batch_ack_sets(entries)
        masks = [combine_masks(mask, acked[i] if acked is not None else None) for i, (_, mask) in enumerate(chosen)]
        consumer.send_messages(entries, None, None, masks if any(m is not None for m in masks) else None)

    def on_new_entries(self) -> None:
        """The ledger got an entry: complete a waiting read (``asyncReadEntriesOrWait``)."""
        if self.waiting_for is not None:
            consumer = self.waiting_for
            self.waiting_for = None
            self.subscription.set_waiting(False)
            self.read_more_entries(consumer)

    def on_cursor_rewound(self) -> None:
        pass

    # --- acks ----------------------------------------------------------------------------------
    def begin_ack(self) -> None:
        pass

    def end_ack(self) -> None:
        pass

    def after_ack(self, mark_delete_moved: bool) -> None:
        pass

    def redeliver_unacknowledged_messages(
        self, consumer: "Consumer", positions: Sequence[tuple[int, int]] | None = None
    ) -> None:
        """`redeliverUnacknowledgedMessages` of the active consumer: rewind and read again, whatever the ids
        (the redelivery count stays 0: `RedeliveryTrackerDisabled`)."""
        if consumer is not self.list.active or self.read_on_active_task is not None:
            return  # "Only the active consumer can call resend" / "waiting for cursor to be rewinded"
        self.waiting_for = None
        self.subscription.rewind_cursor()
        self.read_more_entries(consumer)

    # --- stats ---------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        active = self.list.active
        return {
            "activeConsumerName": active.name if active is not None else None,
            "msgInReplay": 0,
            "unackedMessages": 0,
            "blockedSubscriptionOnUnackedMsgs": False,
        }

    def close(self) -> None:
        self.closed = True
        if self.read_on_active_task is not None:
            self.read_on_active_task.cancel()
            self.read_on_active_task = None
