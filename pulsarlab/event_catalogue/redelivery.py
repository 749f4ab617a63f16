"""The event types of redelivery: ack timeout, negative acks, the broker's redelivery count, retry and dead letters.

Models no Pulsar class; each event names the Pulsar rule it follows (docs/guide/redelivery.md). Like
`pulsarlab.event_catalogue.broker`, hot fields are ints; message ids travel as ``[ledger, entry, partition]``
lists in json fields, and copies written to a retry or dead-letter topic as
``{"topic": ..., "ids": [[ledger, entry], ...]}``.
"""

from __future__ import annotations

from pulsarlab.events import event_type

NEGATIVE_ACKED = event_type(
    "negative_acked",
    "consumer:int ledger:int entry:int batch_index:int due_ms:int tracker:str",
    "consumer {consumer} negatively acknowledged {ledger}:{entry}:{batch_index}; its NegativeAcksTracker entry "
    "({tracker}) is due at t = {due_ms} ms, redelivered at the tracker's first timer run from then on",
    rule="ConsumerImpl.negativeAcknowledge -> NegativeAcksTracker.add; docs/guide/redelivery.md#negative-acks",
)
NACK_TIMER_FIRED = event_type(
    "nack_timer_fired",
    "consumer:int redelivered:int held:int ids:json",
    "consumer {consumer}'s negative-ack timer ran: {redelivered} id(s) due for redelivery {ids}, {held} still held",
    rule="NegativeAcksTracker.triggerRedelivery; docs/guide/redelivery.md#negative-acks",
)
ACK_TIMEOUT_TICK = event_type(
    "ack_timeout_tick",
    "consumer:int timed_out:int tracked:int ids:json",
    "consumer {consumer}'s ack-timeout ring turned: {timed_out} id(s) timed out {ids}, {tracked} still tracked",
    rule="UnAckedMessageTracker timer; docs/guide/redelivery.md#ack-timeout",
)
REDELIVER_IDS = event_type(
    "redeliver_ids",
    "consumer:int requested:int pending:int ids:json",
    "consumer {consumer} asked to redeliver {requested} message id(s) {ids}; {pending} of them were pending at "
    "the broker",
    rule="CommandRedeliverUnacknowledgedMessages with message ids -> Consumer.redeliverUnacknowledgedMessages(ids)",
)
REDELIVERY_COUNTED = event_type(
    "redelivery_counted",
    "subscription:int ledger:int entry:int count:int",
    "subscription {subscription}: redelivery count of {ledger}:{entry} is now {count}",
    rule=(
        "InMemoryRedeliveryTracker.incrementAndGetRedeliveryCount (client redeliver requests only); "
        "docs/guide/redelivery.md#redelivery-count"
    ),
)
DEAD_LETTER_CANDIDATE = event_type(
    "dead_letter_candidate",
    "consumer:int ledger:int entry:int redelivery_count:int max_redeliver_count:int skipped:bool",
    "consumer {consumer} got {ledger}:{entry} with redelivery count {redelivery_count} >= maxRedeliverCount "
    "{max_redeliver_count}: its next redelivery goes to the dead-letter topic (skipped and redelivered at once: "
    "{skipped})",
    rule=(
        "ConsumerImpl.messageReceived -> possibleSendToDeadLetterTopicMessages; "
        "docs/guide/retry-and-dead-letters.md#dead-letter-topic"
    ),
)
DEAD_LETTERED = event_type(
    "dead_lettered",
    "consumer:int ledger:int entry:int count:int reason:str copy:json",
    "consumer {consumer} wrote {ledger}:{entry} to the dead-letter topic {copy} ({reason} {count}) and acknowledged "
    "the original",
    rule="ConsumerImpl.processPossibleToDLQ / doReconsumeLater; docs/guide/retry-and-dead-letters.md#dead-letter-topic",
)
RECONSUMED_LATER = event_type(
    "reconsumed_later",
    "consumer:int ledger:int entry:int reconsume_times:int delay_ms:int copy:json",
    "consumer {consumer} sent {ledger}:{entry} to the retry topic {copy} (RECONSUMETIMES={reconsume_times}, "
    "DELAY_TIME={delay_ms} ms) and acknowledged the original",
    rule="ConsumerImpl.doReconsumeLater; docs/guide/retry-and-dead-letters.md#retry-topic",
)
LETTER_PRODUCER_CREATED = event_type(
    "letter_producer_created",
    "consumer:int letter:str topic:str producer:int",
    "consumer {consumer} created its {letter} producer {producer} on {topic} (lazily, at its first use)",
    rule="ConsumerImpl.initDeadLetterProducerIfNeeded / initRetryLetterProducerIfNeeded",
)

# reasons of DEAD_LETTERED
REASON_REDELIVERY_COUNT = "redelivery count"
REASON_RECONSUME_TIMES = "RECONSUMETIMES"

__all__ = [
    "ACK_TIMEOUT_TICK",
    "DEAD_LETTERED",
    "DEAD_LETTER_CANDIDATE",
    "LETTER_PRODUCER_CREATED",
    "NACK_TIMER_FIRED",
    "NEGATIVE_ACKED",
    "REASON_RECONSUME_TIMES",
    "REASON_REDELIVERY_COUNT",
    "RECONSUMED_LATER",
    "REDELIVERY_COUNTED",
    "REDELIVER_IDS",
]
