"""The broker's view of one connected consumer: permits, pending acks, unacked counts, blocking.

Models `org.apache.pulsar.broker.service.Consumer` (docs/guide/subscription-types.md#entries-per-turn,
docs/guide/flow-control.md#flow-permits, docs/guide/acknowledgements.md#command-ack): ``flowPermits`` (parking permits
while blocked on unacked messages), ``sendMessages`` (pending acks with batch size and sticky hash, permits
go down by the messages sent and may go negative, unacked messages and blocking, the average messages per
entry), the individual-ack bookkeeping of ``messageAcked`` / ``removePendingAcks`` (unblocking at half the
limit, checked before the unacked count is reduced, as Pulsar does) and ``redeliverUnacknowledgedMessages``.
Simplifies: one client connection per lab, always writable and active; no rate limiting, no transactions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from pulsarlab.broker.dispatch.pending_acks import PendingAcksMap
from pulsarlab.broker.key_shared.base import consumer_to_string
from pulsarlab.broker.redelivery import MessageRate, RedeliveryTracker
from pulsarlab.date_format import format_timestamp
from pulsarlab.event_catalogue import broker as ev

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.subscription import PersistentSubscription
    from pulsarlab.managed_ledger.cursor import Entry
    from pulsarlab.protocol.handles import ConsumerConnection
    from pulsarlab.protocol.subscription import ConsumerType

AVG_PERCENT = 0.9  # Consumer.avgPercent: weight of the old average
_DISPATCHED = ev.DISPATCHED


def popcount(mask: int) -> int:
    return bin(mask).count("1")


class Consumer:
    """A consumer as the broker holds it. ``cnx`` is the client side that receives MESSAGE and
    ACTIVE_CONSUMER_CHANGE commands (the model's stand-in for `ServerCnx`)."""

    def __init__(
        self,
        *,
        consumer_id: int,
        name: str,
        priority: int,
        sub_type: ConsumerType,
        subscription: "PersistentSubscription",
        cnx: "ConsumerConnection",
        max_unacked_messages: int,
        key_shared_mode: str | None = None,
        allow_out_of_order_delivery: bool = False,
        ranges: tuple[tuple[int, int], ...] | None = None,
        connected_since: int = 0,
        durable: bool = True,
    ) -> None:
        self.id = consumer_id
        self.name = name
        self.priority = priority
        self.ranges = ranges  # KeySharedMeta hash ranges (STICKY)
        self.sub_type = sub_type
        self.subscription = subscription
        self.cnx = cnx
        self.durable = durable  # False: a reader's, on a non-durable subscription (BrokerService.close_consumer)
        self.read_compacted = False  # reads the compacted view up to the horizon (broker.compaction)
        self.key_shared_mode = key_shared_mode
        self.allow_out_of_order_delivery = allow_out_of_order_delivery
        self.max_unacked_messages = max_unacked_messages
        self.individual_ack_mode = sub_type.individual_ack_mode
        self.pending_acks: PendingAcksMap | None = PendingAcksMap(self) if self.individual_ack_mode else None
        self.available_permits = 0  # MESSAGE_PERMITS
        self.permits_received_while_blocked = 0
        self.unacked_messages = 0
        self.blocked = False  # blockedConsumerOnUnackedMsgs
        self.cnx_active = True
        self.closed = False
        self.avg_messages_per_entry = 0.0
        self.read_position_when_joining: str | None = None
        self.msg_out_counter = 0
        self.bytes_out_counter = 0
        self.connected_since = connected_since
        self.last_acked_timestamp = 0
        self.last_consumed_timestamp = 0
        self.last_consumed_flow_timestamp = 0
        # 4.x: DrainingHashesTracker.consumer_stats
        self.draining_stats: Callable[[Consumer], dict[str, int | list[dict[str, int]]]] | None = None
        svc = subscription.topic.service
        self._events = svc.events if svc.events.enabled else None
        self._clock = svc.scheduler
        self.msg_redeliver = MessageRate(svc.config.integer("statsUpdateFrequencyInSecs") * 1000)  # msgRateRedeliver

    def __str__(self) -> str:
        return consumer_to_string(self.id, self.name, str(self.subscription))

    def __repr__(self) -> str:
        return f"<broker Consumer {self.id} {self.name!r} permits={self.available_permits} unacked={self.unacked_messages}>"

    @property
    def should_block_on_unacked(self) -> bool:
        return self.individual_ack_mode and self.max_unacked_messages > 0

    @property
    def avg_messages_per_entry_int(self) -> int:
        """``getAvgMessagesPerEntry``: the rounded average (0 before anything was sent)."""
        return int(self.avg_messages_per_entry + 0.5)

    def has_more_entries(self) -> bool:
        """Whether the subscription's cursor has entries it has not read (`ManagedCursor.hasMoreEntries`)."""
        return self.subscription.cursor.has_more_entries()

    # --- FLOW ---------------------------------------------------------------------------------------
    def flow_permits(self, n: int) -> None:
        """``flowPermits``: add permits (or park them while blocked) and tell the dispatcher."""
        if n <= 0:
            raise ValueError(f"FLOW permits must be > 0, got {n}")
        self.last_consumed_flow_timestamp = self._clock.now_ms
        if self.should_block_on_unacked and self.unacked_messages >= self.max_unacked_messages:
            self._set_blocked(True)
        if not self.blocked:
            self.available_permits += n
            if self._events is not None:
                self._events.append_row(ev.FLOW, self._clock.now_ms, self.id, n, self.available_permits, 0)
            self.subscription.consumer_flow(self, n)
        else:
            self.permits_received_while_blocked += n
            if self._events is not None:
                self._events.append_row(ev.FLOW, self._clock.now_ms, self.id, n, self.available_permits, 1)

    def flow_consumer_blocked_permits(self) -> None:
        """``flowConsumerBlockedPermits``: release the parked permits to the dispatcher."""
        n = self.permits_received_while_blocked
        self.permits_received_while_blocked = 0
        self.available_permits += n
        self.subscription.consumer_flow(self, n)

    def _set_blocked(self, blocked: bool) -> None:
        if blocked != self.blocked:
            self.blocked = blocked
            if self._events is not None:
                self._events.append_row(
                    ev.CONSUMER_BLOCKED, self._clock.now_ms, self.id, int(blocked), self.unacked_messages
                )

    # --- MESSAGE ------------------------------------------------------------------------------------
    def send_messages(
        self,
        entries: list[Entry],
        hashes: list[int] | None = None,
        redelivery_tracker: RedeliveryTracker | None = None,
        ack_sets: list[int | None] | None = None,
    ) -> tuple[int, int, int]:
        """``sendMessages``: push entries to the client. ``entries`` are ``(Position, EntryData)``.

        ``hashes`` are the entries' sticky hashes (Key_Shared), ``ack_sets`` the cursor's batch-index ack
        masks (set bit = not yet acked) when batch-index acks are on. Returns ``(entries_sent,
        messages_sent, acked_batch_indexes)``; 4.x Key_Shared may refuse an entry whose hash another
        consumer drains (it then went to replay).
        """
        if len(entries) == 1 and hashes is None and ack_sets is None:
            # one entry without sticky hashes or batch-index ack sets (a read of one entry: every dispatch of
            # unbatched messages at the end of the topic): the loop's steps below, without its bookkeeping
            pos, data = entries[0]
            batch_size = data.metadata.num_messages_in_batch
            if batch_size is None:
                batch_size = 1
            ledger, entry = pos.ledger_id, pos.entry_id
            pending_acks = self.pending_acks
            if pending_acks is not None and not pending_acks.add_pending_ack_if_allowed(ledger, entry, batch_size, 0):
                return 0, 0, 0
            redelivery = redelivery_tracker.get(ledger, entry) if redelivery_tracker is not None else 0
            now = self._clock.now_ms
            self.available_permits -= batch_size
            events = self._events
            if events is not None:
                events.append_row(
                    _DISPATCHED, now, self.id, ledger, entry, batch_size, redelivery, self.available_permits
                )
            self.cnx.message_received(ledger, entry, data, redelivery, None)
            # the loop's average update for one entry of batch_size messages (total / entries = batch_size / 1)
            if self.avg_messages_per_entry < 1:
                self.avg_messages_per_entry = batch_size / 1
            else:
                self.avg_messages_per_entry = (
                    self.avg_messages_per_entry * AVG_PERCENT + (1 - AVG_PERCENT) * batch_size / 1
                )
            if self.individual_ack_mode:
                self.unacked_messages += batch_size
                d = self.subscription.dispatcher  # the subscription's add_unacked_messages, without its call
                if d is not None:
                    d.add_unacked_messages(batch_size)
                if self.max_unacked_messages > 0 and self.unacked_messages >= self.max_unacked_messages:
                    self._set_blocked(True)
            self.msg_out_counter += batch_size
            self.bytes_out_counter += data.size
            self.last_consumed_timestamp = now
            return 1, batch_size, 0
        add_pending_ack = self.pending_acks.add_pending_ack_if_allowed if self.pending_acks is not None else None
        events = self._events
        now = self._clock.now_ms
        message_received = self.cnx.message_received
        redelivery_count = redelivery_tracker.get if redelivery_tracker is not None else None
        total_messages = 0
        total_bytes = 0
        total_entries = 0
        acked_indexes = 0
        unacked = 0
        i = -1
        for pos, data in entries:
            i += 1
            batch_size = data.metadata.num_messages_in_batch
            if batch_size is None:
                batch_size = 1
            ledger, entry = pos.ledger_id, pos.entry_id
            if add_pending_ack is not None and not add_pending_ack(
                ledger, entry, batch_size, hashes[i] if hashes is not None else 0
            ):
                continue
            ack_set = None
            n_unacked = batch_size
            if ack_sets is not None:
                ack_set = ack_sets[i]
                if ack_set is not None:
                    n_unacked = popcount(ack_set)
                    acked_indexes += batch_size - n_unacked
            unacked += n_unacked
            total_messages += batch_size
            total_entries += 1
            total_bytes += data.size
            redelivery = redelivery_count(ledger, entry) if redelivery_count is not None else 0
            # the client may FLOW back while receiving (dropped duplicates), so the permits stay on self
            self.available_permits -= n_unacked
            if events is not None:
                events.append_row(
                    _DISPATCHED, now, self.id, ledger, entry, batch_size, redelivery, self.available_permits
                )
            message_received(ledger, entry, data, redelivery, ack_set)
        if not total_entries:
            return 0, 0, 0
        # calculate avg message per entry
        if self.avg_messages_per_entry < 1:
            self.avg_messages_per_entry = total_messages / total_entries
        else:
            self.avg_messages_per_entry = (
                self.avg_messages_per_entry * AVG_PERCENT + (1 - AVG_PERCENT) * total_messages / total_entries
            )
        if self.individual_ack_mode:
            self.unacked_messages += unacked
            d = self.subscription.dispatcher  # the subscription's add_unacked_messages, without its call
            if d is not None:
                d.add_unacked_messages(unacked)
            if self.max_unacked_messages > 0 and self.unacked_messages >= self.max_unacked_messages:
                self._set_blocked(True)
        self.msg_out_counter += total_messages
        self.bytes_out_counter += total_bytes
        self.last_consumed_timestamp = now
        return total_entries, total_messages, acked_indexes

    # --- ACK bookkeeping (Shared / Key_Shared) ------------------------------------------------------
    def remove_pending_ack(self, ledger: int, entry: int) -> tuple["Consumer", int] | None:
        """``removePendingAcks``: find the owner (this consumer or another of the subscription), drop the
        pending ack, unblock the owner at half its limit. Returns ``(owner, batch_size)`` or None."""
        owner: Consumer | None = self
        if self.pending_acks is None or (ledger, entry) not in self.pending_acks:
            owner = None
            for c in self.subscription.consumers():
                if c is not self and c.pending_acks is not None and (ledger, entry) in c.pending_acks:
                    owner = c
                    break
        if owner is None:
            return None
        value = owner.pending_acks.remove(ledger, entry) if owner.pending_acks is not None else None
        if value is None:
            return None
        self._after_pending_ack_removed(owner)
        return owner, value[0]

    def pop_own_pending_ack(self, ledger: int, entry: int) -> tuple[int, int] | None:
        """`remove_pending_ack` of a pending ack this consumer holds: ``(batch_size, sticky_hash)``, or None (and
        nothing changed) when it holds none for (ledger, entry)."""
        value = self.pending_acks.remove(ledger, entry) if self.pending_acks is not None else None
        if value is None:
            return None
        # else _after_pending_ack_removed does nothing (should_block_on_unacked, inlined: once per acked entry)
        if self.blocked or not (self.individual_ack_mode and self.max_unacked_messages > 0):
            self._after_pending_ack_removed(self)
        return value

    def _after_pending_ack_removed(self, owner: "Consumer") -> None:
        """Unblock ``owner`` at half the limit (or always, when this consumer does not block on unacked)."""
        if (
            owner.blocked and owner.unacked_messages <= self.max_unacked_messages // 2 and owner.should_block_on_unacked
        ) or not self.should_block_on_unacked:
            owner._set_blocked(False)
            owner.flow_consumer_blocked_permits()

    def add_unacked(self, n: int) -> None:
        """``addAndGetUnAckedMsgs`` for this consumer and the subscription."""
        if self.individual_ack_mode:
            self.unacked_messages += n
            d = self.subscription.dispatcher  # the subscription's add_unacked_messages, without its call
            if d is not None:
                d.add_unacked_messages(n)

    def clear_unacked(self) -> None:
        n = self.unacked_messages
        self.unacked_messages = 0
        if n:
            self.subscription.add_unacked_messages(-n)
        self._set_blocked(False)

    # --- stats --------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """`ConsumerStatsImpl` fields the model keeps (rates are 0: the model has no wall clock)."""
        out: dict[str, Any] = {
            "msgRateOut": 0.0,
            "msgThroughputOut": 0.0,
            "bytesOutCounter": self.bytes_out_counter,
            "msgOutCounter": self.msg_out_counter,
            "msgRateRedeliver": self.msg_redeliver.rate(self._clock.now_ms),
            "messageAckRate": 0.0,
            "chunkedMessageRate": 0.0,
            "consumerName": self.name,
            "availablePermits": self.available_permits,
            "unackedMessages": self.unacked_messages,
            "avgMessagesPerEntry": self.avg_messages_per_entry_int,
            "blockedConsumerOnUnackedMsgs": self.blocked,
            "address": "/127.0.0.1:6650",
            "connectedSince": format_timestamp(self.connected_since),
            "clientVersion": "pulsarlab",
            "lastAckedTimestamp": self.last_acked_timestamp,
            "lastConsumedTimestamp": self.last_consumed_timestamp,
            "lastConsumedFlowTimestamp": self.last_consumed_flow_timestamp,
            "metadata": {},
        }
        if self.read_position_when_joining is not None:
            out["readPositionWhenJoining"] = self.read_position_when_joining
        return out
