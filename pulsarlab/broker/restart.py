"""A broker restart: what a graceful restart keeps (the stored state) and what it loses (everything in memory).

Models a graceful broker restart: `BrokerService.close` unloads every topic (`PersistentTopic.close`: producers
and consumers are disconnected, dispatchers close, `ManagedLedgerImpl.close` persists each cursor), then the
topics load again when the clients reconnect (the managed ledger reopens with a new ledger, `ManagedCursorImpl`
recovers; docs/guide/cursor.md#mark-delete, docs/guide/delayed-delivery.md#bucket-tracker).

* Kept (BookKeeper and the metadata store): ledgers and entries; each cursor's mark-delete position, individually
  deleted ranges (up to ``managedLedgerMaxUnackedRangesToPersist`` + 1) and batch ack sets, its properties and
  cursor properties (the ``#pulsar.internal.delayed.bucket_<start>_<end>`` keys); bucket snapshot ledgers;
  partitioned-topic metadata.
* Lost (memory): dispatchers with their replay sets, redelivery counters, Key_Shared selectors and draining
  hashes; broker-side consumers with their permits and pending acks (unacked messages are read again from the
  cursor, with redelivery count 0); in-memory delayed trackers, and a bucket tracker's mutable bucket and shared
  queue (the cursor reads those messages again and the next tracker holds them anew, while sealed buckets are
  recovered from their snapshots); topic and subscription counters.

Simplifies: the restart is graceful and takes no virtual time (no client times out, no send is buffered); a
crash, which would also lose cursor state not yet flushed (``managedLedgerCursorPositionFlushSeconds``), is not
modelled; each subscription keeps its model id so views can follow it across the restart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pulsarlab.broker.delayed.tracker_names import DELAYED_BUCKET_KEY_PREFIX, is_bucket_tracker
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue.restart import (
    BROKER_RESTARTED,
    BROKER_RESTARTING,
    CURSOR_RECOVERED,
    SUBSCRIPTION_UNLOADED,
)

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.service import BrokerService
    from pulsarlab.broker.subscription import PersistentSubscription


@dataclass(frozen=True)
class SubscriptionLoss:
    """What one subscription had only in memory when the broker restarted."""

    topic: str
    subscription: str
    type: str | None
    consumers: int
    pending_acks: int
    replay: int
    redelivery_counts: int
    delayed_lost: int
    delayed_kept: int


@dataclass(frozen=True)
class RestartReport:
    """`Lab.restart_broker()`'s answer: when, how many topics, and what each subscription lost."""

    time: int
    restarts: int
    topics: int
    consumers: int
    producers: int
    subscriptions: tuple[SubscriptionLoss, ...]

    def subscription(self, name: str, topic: str | None = None) -> SubscriptionLoss:
        for loss in self.subscriptions:
            if loss.subscription == name and (topic is None or loss.topic == topic or loss.topic.endswith("/" + topic)):
                return loss
        raise KeyError(
            f"no subscription {name!r} in this restart; subscriptions: {[s.subscription for s in self.subscriptions]}"
        )


def restart_broker(service: "BrokerService") -> RestartReport:
    """Unload every topic, then load it again; returns what was lost. The clients reconnect afterwards."""
    events = service.events
    now = service.scheduler.now()
    topics = list(service.topics.values())
    consumers = sum(len(sub.consumers()) for t in topics for sub in t.subscriptions.values())
    producers = sum(len(t.producers) for t in topics)
    if events.enabled:
        events.append(BROKER_RESTARTING, now, topics=len(topics), consumers=consumers, producers=producers)
    losses = []
    for topic in topics:
        for sub in topic.subscriptions.values():
            losses.append(_unload_subscription(service, sub))
        topic.unload()
    for topic in topics:
        topic.reload()
        for sub in topic.subscriptions.values():
            sub.last_consumed_flow_timestamp = 0
            sub.msg_out_counter_closed = 0
            if events.enabled:
                cursor = sub.cursor
                md = cursor.mark_delete_position
                buckets = sum(1 for k in cursor.cursor_properties if k.startswith(DELAYED_BUCKET_KEY_PREFIX))
                events.append(
                    CURSOR_RECOVERED,
                    now,
                    subscription=sub.id,
                    ledger=md.ledger_id,
                    entry=md.entry_id,
                    ranges=cursor.individually_deleted_messages.size(),
                    buckets=buckets,
                )
    service.restarts += 1
    if events.enabled:
        events.append(BROKER_RESTARTED, now, topics=len(topics), restarts=service.restarts)
    return RestartReport(now, service.restarts, len(topics), consumers, producers, tuple(losses))


def _unload_subscription(service: "BrokerService", sub: "PersistentSubscription") -> SubscriptionLoss:
    d = sub.dispatcher
    events = service.events
    now = service.scheduler.now()
    consumers = d.consumers() if d is not None else []
    pending = sum(len(c.pending_acks) for c in consumers if c.pending_acks is not None)
    replay = len(d.redelivery_messages) if d is not None and hasattr(d, "redelivery_messages") else 0
    counts = len(d.redelivery_tracker) if d is not None else 0
    tracker = getattr(getattr(d, "delayed", None), "tracker", None)
    held = tracker.number_of_delayed_messages() if tracker is not None else 0
    kept = sum(b.messages for b in tracker.buckets()) if is_bucket_tracker(tracker) else 0
    for c in consumers:
        c.closed = True
        c.cnx_active = False
        if events.enabled:
            events.append(
                ev.CONSUMER_CLOSED,
                now,
                consumer=c.id,
                reason="broker_restart",
                pending_acks=len(c.pending_acks) if c.pending_acks is not None else 0,
            )
        closed_by_broker: Any = getattr(c.cnx, "closed_by_broker", None)
        if closed_by_broker is not None:
            closed_by_broker()
    if d is not None:
        d.close()
    sub.dispatcher = None
    if events.enabled:
        events.append(
            SUBSCRIPTION_UNLOADED,
            now,
            subscription=sub.id,
            pending_acks=pending,
            replay=replay,
            redelivery_counts=counts,
            delayed_lost=held - kept,
            delayed_kept=kept,
        )
    return SubscriptionLoss(
        sub.topic.name,
        sub.name,
        getattr(d, "type_name", None),
        len(consumers),
        pending,
        replay,
        counts,
        held - kept,
        kept,
    )
