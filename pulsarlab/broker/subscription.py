"""A durable subscription: its cursor, its dispatcher (by type) and the acks it applies.

Models `PersistentSubscription` (docs/guide/key-shared-selectors.md#choosing-a-selector,
docs/guide/subscription-types.md#failover-switch, docs/guide/acknowledgements.md#command-ack): ``addConsumer`` keeps
the dispatcher while consumers
are connected and checks the newcomer against it (`checkForConsumerCompatibilityErrorWithDispatcher` on 4.x
with its three texts; 3.0 checks the type only, "Subscription is of different type"); with no consumer
connected a consumer of another type (or another Key_Shared policy) gets a new dispatcher.
``messageAcked`` / ``acknowledgeMessage``: individual acks update the owner's pending acks and unacked
counts, then `ManagedCursor.async_delete`; cumulative acks `mark_delete` (ignored on Shared and Key_Shared,
as the broker logs "Received cumulative ack on shared subscription, ignoring").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pulsarlab.broker.consumer import popcount
from pulsarlab.broker.dispatch.shared import SharedDispatcher
from pulsarlab.broker.dispatch.single_active import SingleActiveConsumerDispatcher
from pulsarlab.broker.key_shared.base import subscription_to_string
from pulsarlab.errors import IllegalStateException, PulsarError, SubscriptionBusyException
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.managed_ledger.position import Position
from pulsarlab.protocol.acks import AckCommand, AckType, ack_set_mask

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.dispatch.key_shared import KeySharedDispatcher
    from pulsarlab.broker.topic import PersistentTopic
    from pulsarlab.managed_ledger.cursor import Entry, ManagedCursor


Dispatcher = SingleActiveConsumerDispatcher | SharedDispatcher  # Key_Shared's is a SharedDispatcher


def key_shared_dispatcher(d: Dispatcher | None) -> "KeySharedDispatcher | None":
    """``d`` as the Key_Shared dispatcher it is, else None (its module loads with the first Key_Shared consumer)."""
    if d is None or d.type_name != "Key_Shared":
        return None
    from pulsarlab.broker.dispatch.key_shared import KeySharedDispatcher

    return d if isinstance(d, KeySharedDispatcher) else None


class PersistentSubscription:
    """One subscription of a topic."""

    def __init__(self, topic: "PersistentTopic", name: str, cursor: "ManagedCursor", sub_id: int) -> None:
        self.topic = topic
        self.name = name
        self.cursor = cursor
        self.id = sub_id
        self.dispatcher: Dispatcher | None = None
        self.dispatcher_name = f"{topic.name} / {name}"
        self.batch_index_level = topic.service.config.flag("acknowledgmentAtBatchIndexLevelEnabled")
        self.last_consumed_flow_timestamp = 0
        self.msg_out_counter_closed = 0

    def __str__(self) -> str:
        return subscription_to_string(self.topic.name, self.name)

    @property
    def attached_dispatcher(self) -> Dispatcher:
        """The dispatcher of a subscription that has (or had) a consumer: every path with a consumer in hand."""
        if self.dispatcher is None:
            raise IllegalStateException(f"{self} has no dispatcher: no consumer ever attached")
        return self.dispatcher

    # --- consumers -----------------------------------------------------------------------------
    def consumers(self) -> list["Consumer"]:
        return self.dispatcher.consumers() if self.dispatcher is not None else []

    def add_consumer(self, consumer: "Consumer") -> None:
        sub_type = consumer.sub_type.wire
        d = self.dispatcher
        if d is None or not d.is_consumer_connected():
            ks_mode = consumer.key_shared_mode
            ooo = consumer.allow_out_of_order_delivery
            ks = key_shared_dispatcher(d)
            if (
                d is None
                or d.type_name != sub_type
                or (ks is not None and not ks.has_same_key_shared_policy(ks_mode, ooo))
            ):
                if d is not None:
                    d.close()
                if sub_type == "Exclusive" or sub_type == "Failover":
                    d = SingleActiveConsumerDispatcher(self, sub_type)
                elif sub_type == "Shared":
                    d = SharedDispatcher(self)
                else:  # the Key_Shared dispatcher and its selectors (numpy) load with the first Key_Shared consumer
                    from pulsarlab.broker.dispatch.key_shared import KeySharedDispatcher

                    d = KeySharedDispatcher(self, ks_mode, ooo)
                self.dispatcher = d
        else:
            error = self._compatibility_error(d, consumer)
            if error is not None:
                raise error
        d.add_consumer(consumer)

    def _compatibility_error(self, d: Dispatcher, consumer: "Consumer") -> SubscriptionBusyException | None:
        sub_type = consumer.sub_type.wire
        if not self.topic.service.profile.detailed_subscription_compat_errors:
            if sub_type != d.type_name:
                return SubscriptionBusyException("Subscription is of different type")
            return None
        if sub_type != d.type_name:
            return SubscriptionBusyException(
                f"Subscription is of different type. Active subscription type of '{d.type_name}' is different "
                f"than the connecting consumer's type '{sub_type}'."
            )
        ks = key_shared_dispatcher(d)
        if ks is not None:
            if consumer.key_shared_mode != ks.key_shared_mode:
                return SubscriptionBusyException(
                    f"Subscription is of different type. Active subscription key_shared mode of "
                    f"'{ks.key_shared_mode}' is different than the connecting consumer's key_shared mode "
                    f"'{consumer.key_shared_mode}'."
                )
            if consumer.allow_out_of_order_delivery != ks.allow_out_of_order_delivery:
                if ks.allow_out_of_order_delivery:
                    text = (
                        "Subscription is of different type. Active subscription allows out of order delivery "
                        "while the connecting consumer does not allow it."
                    )
                else:
                    text = (
                        "Subscription is of different type. Active subscription does not allow out of order "
                        "delivery while the connecting consumer allows it."
                    )
                return SubscriptionBusyException(text)
        return None

    def remove_consumer(self, consumer: "Consumer") -> None:
        if self.dispatcher is not None:
            self.dispatcher.remove_consumer(consumer)

    def consumer_flow(self, consumer: "Consumer", n: int) -> None:
        self.last_consumed_flow_timestamp = self.topic.service.scheduler.now_ms
        if self.dispatcher is not None:  # always: the consumer is attached to it
            self.dispatcher.consumer_flow(consumer, n)

    def add_unacked_messages(self, n: int) -> None:
        if self.dispatcher is not None:
            self.dispatcher.add_unacked_messages(n)

    # --- cursor helpers ------------------------------------------------------------------------
    def rewind_cursor(self) -> None:
        cursor = self.cursor
        cursor.rewind()
        if self.dispatcher is not None:
            self.dispatcher.on_cursor_rewound()
        self.set_waiting(False)
        events = self.topic.service.events
        if events.enabled:
            rp = cursor.read_position
            events.append_row(
                ev.CURSOR_REWOUND, self.topic.service.scheduler.now_ms, self.id, rp.ledger_id, rp.entry_id
            )

    def set_waiting(self, waiting: bool) -> None:
        self.cursor.waiting_read_op = waiting

    def batch_ack_sets(self, entries: list[Entry]) -> list[int | None] | None:
        """The cursor's batch-index ack masks of the entries (``EntryBatchIndexesAcks``), or None when off."""
        if not self.batch_index_level:
            return None
        cursor = self.cursor
        out: list[int | None] = []
        any_set = False
        for pos, _ in entries:
            words = cursor.batch_deleted_indexes(pos)
            if words is None:
                out.append(None)
            else:
                out.append(ack_set_mask(words))
                any_set = True
        return out if any_set else None

    # --- acks ----------------------------------------------------------------------------------
    def message_acked(self, consumer: "Consumer", cmd: AckCommand) -> None:
        """`Consumer.messageAcked` + `acknowledgeMessage`; reads it triggers run once the ack is applied."""
        d = self.dispatcher
        if d is None:
            return
        d.begin_ack()
        try:
            self._message_acked(consumer, cmd)
        finally:
            d.end_ack()

    def _message_acked(self, consumer: "Consumer", cmd: AckCommand) -> None:
        svc = self.topic.service
        consumer.last_acked_timestamp = svc.scheduler.now_ms
        cursor = self.cursor
        md_before = cursor.mark_delete_position
        if cmd.ack_type is AckType.CUMULATIVE:
            if len(cmd.message_ids) != 1:
                return  # "Received multi-message ack"
            if consumer.individual_ack_mode:
                return  # "Received cumulative ack on shared subscription, ignoring"
            ledger, entry, ack_set = cmd.message_ids[0]
            try:
                cursor.mark_delete(Position(ledger, entry), list(ack_set) if ack_set is not None else None)
            except PulsarError:
                pass  # Pulsar logs a failed mark-delete ("Invalid mark deleted position", going backwards)
            self._after_ack(md_before, ledger, entry, True, ack_set is not None)
            return
        acks = cmd.message_ids
        partial = False  # any message id with an ack set
        individual = consumer.individual_ack_mode
        own_pending = consumer.pending_acks
        dispatcher = self.dispatcher
        batch_index_level = self.batch_index_level
        for ledger, entry, ack_set in acks:
            if ack_set is not None:
                partial = True
                acked = 0
                if individual and self.batch_index_level:
                    pending = self._pending(consumer, ledger, entry)
                    if pending is not None:
                        owner, (batch_size, _hash) = pending
                        given = ack_set_mask(ack_set)
                        cur = cursor.batch_deleted_indexes(Position(ledger, entry))
                        if cur is not None:
                            cur_mask = ack_set_mask(cur)
                            acked = popcount(cur_mask) - popcount(cur_mask & given)
                        else:
                            acked = batch_size - popcount(given)
                        owner.add_unacked(-acked)
            else:
                if individual:
                    value = consumer.pop_own_pending_ack(ledger, entry) if own_pending is not None else None
                    if value is not None:  # the common case: the acking consumer held it (one lookup)
                        acked_count = value[0]
                        if batch_index_level:
                            cur = cursor.batch_deleted_indexes(Position(ledger, entry))
                            if cur is not None:
                                acked_count = popcount(ack_set_mask(cur))
                        # consumer.add_unacked(-acked_count), inlined (individual ack mode here): once per acked entry
                        consumer.unacked_messages -= acked_count
                        if dispatcher is not None:  # always: the consumer is attached to it
                            dispatcher.add_unacked_messages(-acked_count)
                    else:
                        acked_count = self._acked_count_no_ack_set(consumer, ledger, entry)
                        removed = consumer.remove_pending_ack(ledger, entry)
                        if removed is not None:
                            removed[0].add_unacked(-acked_count)
        try:
            cursor.delete_entries(acks)  # async_delete of the acked positions
        except PulsarError:
            pass  # Pulsar logs the failed delete; the positions before the bad one stay deleted
        d = self.dispatcher
        if d is not None and len(d.redelivery_tracker):
            d.redelivery_tracker.remove_batch([(l, e) for l, e, s in acks if s is None])
        self._after_ack(md_before, acks[-1][0] if acks else -1, acks[-1][1] if acks else -1, False, partial)

    def _pending(self, consumer: "Consumer", ledger: int, entry: int) -> "tuple[Consumer, tuple[int, int]] | None":
        """The consumer holding the pending ack of (ledger, entry), the acking one first, and its
        ``(batch_size, sticky_hash)``; None when none holds it."""
        value = consumer.pending_acks.get(ledger, entry) if consumer.pending_acks is not None else None
        if value is not None:
            return consumer, value
        for c in self.consumers():
            value = c.pending_acks.get(ledger, entry) if c.pending_acks is not None else None
            if value is not None:
                return c, value
        return None

    def _acked_count_no_ack_set(self, consumer: "Consumer", ledger: int, entry: int) -> int:
        """`getBatchSize` / `getAckedCountForMsgIdNoAckSets`: the messages an entry-level ack settles."""
        pending = self._pending(consumer, ledger, entry)
        if pending is None:
            return 1
        batch_size = pending[1][0]
        if self.batch_index_level:
            cur = self.cursor.batch_deleted_indexes(Position(ledger, entry))
            if cur is not None:
                return popcount(ack_set_mask(cur))
        return batch_size

    def _after_ack(self, md_before: Position, ledger: int, entry: int, cumulative: bool, partial: bool) -> None:
        svc = self.topic.service
        md = self.cursor.mark_delete_position
        if svc.events.enabled:
            svc.events.append_row(
                ev.ACK_APPLIED, svc.scheduler.now_ms, self.id, ledger, entry, int(cumulative), int(partial), md.entry_id
            )
        moved = md != md_before
        if self.dispatcher is not None:
            if moved:
                self.dispatcher.redelivery_tracker.remove_up_to(md.ledger_id, md.entry_id)
            self.dispatcher.after_ack(moved)

    # --- stats ---------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """`SubscriptionStatsImpl` fields the model keeps (rates are 0)."""
        cursor = self.cursor
        d = self.dispatcher
        consumers = self.consumers()
        backlog = cursor.number_of_entries_in_backlog()
        out: dict[str, Any] = {
            "msgRateOut": 0.0,
            "msgThroughputOut": 0.0,
            "bytesOutCounter": sum(c.bytes_out_counter for c in consumers),
            "msgOutCounter": sum(c.msg_out_counter for c in consumers),
            "msgRateRedeliver": 0.0,
            "messageAckRate": 0.0,
            "chunkedMessageRate": 0,
            "msgBacklog": backlog,
            "backlogSize": 0,
            "earliestMsgPublishTimeInBacklog": 0,
            "msgBacklogNoDelayed": backlog,
            "blockedSubscriptionOnUnackedMsgs": False,
            "msgDelayed": 0,
            "msgInReplay": 0,
            "unackedMessages": 0,
            "type": d.type_name if d is not None else None,
            "lastExpireTimestamp": 0,
            "lastConsumedFlowTimestamp": self.last_consumed_flow_timestamp,
            "lastConsumedTimestamp": max((c.last_consumed_timestamp for c in consumers), default=0),
            "lastAckedTimestamp": max((c.last_acked_timestamp for c in consumers), default=0),
            "lastMarkDeleteAdvancedTimestamp": cursor.last_mark_delete_advanced_timestamp,
            "consumers": [],
            "isDurable": True,
            "isReplicated": False,
            "allowOutOfOrderDelivery": False,
            "consumersAfterMarkDeletePosition": {},
            "nonContiguousDeletedMessagesRanges": cursor.individually_deleted_messages.size(),
            "nonContiguousDeletedMessagesRangesSerializedSize": 0,
            "delayedMessageIndexSizeInBytes": 0,
            "subscriptionProperties": {},
        }
        if d is not None:
            out.update(d.stats())
            out["msgBacklogNoDelayed"] = backlog - out["msgDelayed"]
        if out.get("activeConsumerName") is None:
            out.pop("activeConsumerName", None)
        draining_totals = [0, 0, 0]
        key_shared = key_shared_dispatcher(d)
        for c in consumers:
            cs = c.stats()
            if key_shared is not None:
                extra = key_shared.consumer_stats(c)
                cs.update(extra)
                if "drainingHashesCount" in extra:
                    draining_totals[0] += extra["drainingHashesCount"]
                    draining_totals[1] += extra["drainingHashesClearedTotal"]
                    draining_totals[2] += extra["drainingHashesUnackedMessages"]
            out["consumers"].append(cs)
            out["msgRateRedeliver"] += cs["msgRateRedeliver"]
        if key_shared is not None and not key_shared.classic:
            out["drainingHashesCount"] = draining_totals[0]
            out["drainingHashesClearedTotal"] = draining_totals[1]
            out["drainingHashesUnackedMessages"] = draining_totals[2]
        return out
