"""The dispatcher's delayed-delivery events: the tracker built, entries held, released, re-held, reads paused;
and a delivery delay the topic refuses.

Models no Pulsar class; appended by `pulsarlab.broker.delayed.dispatch` and `pulsarlab.broker.topic`
(docs/guide/delayed-delivery.md). The bucket tracker's own events are in `pulsarlab.event_catalogue.delayed_buckets`.
"""

from __future__ import annotations

from pulsarlab.events import event_type

_RULE = "PersistentDispatcherMultipleConsumers; docs/guide/delayed-delivery.md#hold-back"
DELAYED_TRACKER_CREATED = event_type(
    "delayed_tracker_created",
    "subscription:int tracker:str factory:str",
    "subscription {subscription} read its first delayed message: the broker's {factory} built a {tracker}",
    rule="trackDelayedDelivery creates the tracker on first use (delayedDeliveryTrackerFactoryClassName), "
    "docs/guide/delayed-delivery.md#hold-back",
)
DELAYED_TRACKED = event_type(
    "delayed_tracked",
    "subscription:int ledger:int entry:int deliver_at:int held:bool",
    "subscription {subscription}: entry {ledger}:{entry} (deliverAt t = {deliver_at} ms) held back by the "
    "delayed-delivery tracker: {held}",
    rule="filterEntriesForConsumer -> trackDelayedDelivery -> addMessage; held unless deliverAt <= cutoff "
    "(now + tick, or now when strict); docs/guide/delayed-delivery.md#hold-back",
)
DELAYED_RELEASED = event_type(
    "delayed_released",
    "subscription:int ledger:int entry:int due:int",
    "subscription {subscription}: delayed entry {ledger}:{entry} is due and joins the replay set without a sticky "
    "hash ({due} due in this read)",
    rule="getMessagesToReplayNow: getScheduledMessages -> redeliveryMessages.add, " + _RULE,
)
DELAYED_REQUEUED = event_type(
    "delayed_requeued",
    "subscription:int ledger:int entry:int deliver_at:int until:int",
    "subscription {subscription}: entry {ledger}:{entry} came out of its rounded-down time bucket early and was "
    "held again when replayed (deliverAt t = {deliver_at} ms is after the cutoff); the dispatcher keeps reading "
    "until t = {until} ms",
    rule="4.1 InMemoryDelayedDeliveryTracker trims deliverAt down to 2^floor(log2 tick) ms; master rounds up in "
    "strict mode (#25996); docs/guide/delayed-delivery.md#in-memory-tracker",
)
DELAYED_PAUSED = event_type(
    "delayed_paused",
    "subscription:int paused:bool delayed:int",
    "subscription {subscription}: every read paused = {paused} ({delayed} delayed messages with a fixed delay "
    "wait and none is due)",
    rule=(
        "shouldPauseDeliveryForDelayTracker: delayedDeliveryFixedDelayDetectionLookahead; "
        "docs/guide/delayed-delivery.md#in-memory-tracker"
    ),
)

DELIVERY_DELAY_REFUSED = event_type(
    "delivery_delay_refused",
    "topic:int producer:int sequence_id:int deliver_at:int max_delay:int",
    "topic {topic} refused sequence id {sequence_id} of producer {producer}: deliverAt t = {deliver_at} ms is more "
    "than delayedDeliveryMaxDelayInMillis = {max_delay} ms after its publish time",
    rule=(
        "PersistentTopic.publishMessage -> NotAllowedException (4.0+, PIP-315); "
        "docs/guide/delayed-delivery.md#hold-back"
    ),
)
