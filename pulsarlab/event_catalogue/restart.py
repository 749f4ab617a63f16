"""The events of a graceful broker restart: unloading, cursor recovery, clients reconnecting.

Models no Pulsar class; appended by `pulsarlab.broker.restart`.
"""

from __future__ import annotations

from pulsarlab.events import event_type

_RULE = "graceful broker restart: in-memory state is lost, stored state is recovered"
BROKER_RESTARTING = event_type(
    "broker_restarting",
    "topics:int consumers:int producers:int",
    "the broker restarts: {topics} topic(s) unloaded, {consumers} consumer(s) and {producers} producer(s) "
    "disconnected; what lives only in the broker's memory is lost, what is stored stays",
    rule=_RULE,
)
SUBSCRIPTION_UNLOADED = event_type(
    "subscription_unloaded",
    "subscription:int pending_acks:int replay:int redelivery_counts:int delayed_lost:int delayed_kept:int",
    "subscription {subscription} unloaded, its dispatcher closed: lost {pending_acks} pending ack(s) (read again "
    "from the cursor), {replay} replay position(s), {redelivery_counts} redelivery count(s) and {delayed_lost} "
    "delayed index(es) held in memory (read again and held anew); {delayed_kept} delayed index(es) stay in stored "
    "bucket snapshots",
    rule=_RULE + " (PersistentDispatcherMultipleConsumers.close)",
)
CURSOR_RECOVERED = event_type(
    "cursor_recovered",
    "subscription:int ledger:int entry:int ranges:int buckets:int",
    "subscription {subscription}: cursor recovered at mark-delete {ledger}:{entry} with {ranges} individually "
    "deleted range(s) and {buckets} delayed-bucket cursor propert(y/ies); reading starts again after the "
    "mark-delete position",
    rule="ManagedCursorImpl.recover; docs/guide/broker-restart.md#restart",
)
BROKER_RESTARTED = event_type(
    "broker_restarted",
    "topics:int restarts:int",
    "the broker is up again (restart #{restarts}): {topics} topic(s) loaded, each writing to a new ledger; "
    "clients reconnect",
    rule=_RULE + " (ManagedLedgerImpl reopens with a new ledger)",
)
CONSUMER_RECONNECTING = event_type(
    "consumer_reconnecting",
    "consumer:int queued:int pending_acks:int",
    "consumer {consumer} reconnects: its receiver queue drops {queued} message(s) (the broker sends them again), "
    "{pending_acks} grouped ack(s) wait to be flushed to the new broker; it subscribes again and sends FLOW",
    rule="ConsumerImpl.connectionOpened (durable subscription: clearReceiverQueue, SUBSCRIBE, FLOW)",
)
PRODUCER_RECONNECTING = event_type(
    "producer_reconnecting",
    "producer:int",
    "producer {producer} reconnects to the restarted broker",
    rule="ProducerImpl.connectionOpened",
)
RECONNECT_FAILED = event_type(
    "reconnect_failed",
    "consumer:int error:str",
    "consumer {consumer} could not subscribe again: {error}",
    rule="ConsumerImpl.connectionOpened failure (the real client retries with backoff)",
)
