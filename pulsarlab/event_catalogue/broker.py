"""The events of a message's path through broker and client: topics, producers, consumers, publishing, FLOW,
reads, dispatch, receipt, acks, the replay set, blocking, Failover's active consumer and Key_Shared's holds
(docs/architecture.md).

Models no Pulsar class. Hot events (one per message or per entry) carry only ints so they go through
`EventLog.append_row`; names are recorded once, in the ``*_created`` / ``consumer_subscribed`` events, and
later events refer to producers, consumers and topics by their numeric ids. The cursor, ledger and ack
grouping tracker's events are in their own modules of this catalogue.
"""

from __future__ import annotations

from pulsarlab.events import event_type

TOPIC_CREATED = event_type(
    "topic_created", "topic:int name:str partitions:int", "topic {name} created (id {topic}, partitions {partitions})"
)
TOPIC_DELETED_INACTIVE = event_type(
    "topic_deleted_inactive",
    "topic:int name:str inactive_ms:int mode:str",
    "topic {name} deleted due to inactivity (id {topic}, inactive {inactive_ms} ms, {mode})",
    rule="PersistentTopic.checkGC, run by BrokerService.checkGC every brokerDeleteInactiveTopicsFrequencySeconds "
    "(60): a topic with no producer and no consumer, and no subscription (delete_when_no_subscriptions) or no "
    "backlog (delete_when_subscriptions_caught_up), inactive for brokerDeleteInactiveTopicsMaxInactiveDurationSeconds "
    "(unset: the frequency) and not kept by its retention time (-1 keeps it), is deleted with its ledgers and cursors "
    "(docs/guide/retention.md#inactive-topics)",
)
PRODUCER_CREATED = event_type(
    "producer_created",
    "producer:int name:str topic:str batching:bool",
    "producer {name} (id {producer}) on {topic}, batching={batching}",
)
PRODUCER_CLOSED = event_type("producer_closed", "producer:int", "producer {producer} closed")
MESSAGE_PUBLISHED = event_type(
    "message_published",
    "producer:int sequence_id:int partition:int size:int",
    "producer {producer} sent sequence id {sequence_id} to partition {partition} ({size} bytes)",
    rule="ProducerImpl.sendAsync",
)
ENTRY_PERSISTED = event_type(
    "entry_persisted",
    "topic:int ledger:int entry:int messages:int producer:int sequence_id:int",
    "topic {topic} stored entry {ledger}:{entry} with {messages} message(s) from producer {producer} "
    "(sequence id {sequence_id})",
    rule="PersistentTopic.publishMessage -> ManagedLedger.asyncAddEntry",
)
CONSUMER_SUBSCRIBED = event_type(
    "consumer_subscribed",
    "consumer:int name:str topic:str subscription:str sub_type:str priority:int",
    "consumer {name} (id {consumer}) subscribed to {topic} / {subscription} as {sub_type}, priority {priority}",
    rule="CommandSubscribe",
)


def _consumer_closed(v: dict) -> str:
    """``pending_acks`` is -1 for an Exclusive / Failover consumer: those subscriptions keep no pending acks per
    consumer; their unacked messages are read again from the mark-delete position."""
    if v["pending_acks"] is not None and v["pending_acks"] < 0:
        return (
            "consumer {consumer} left ({reason}); Exclusive / Failover keep no unacked messages per consumer: "
            "the active consumer is picked again and, if it changed, the cursor rewinds to the mark-delete "
            "position and every unacknowledged message is delivered again (with no consumer left, to the next "
            "one to subscribe)"
        ).format(**v)
    return (
        "consumer {consumer} left ({reason}); its {pending_acks} unacked message(s) go back to the replay set "
        "for the other consumers, without counting a redelivery (with no consumer left, the replay set is "
        "dropped and the next consumer to subscribe reads again from the mark-delete position)"
    ).format(**v)


CONSUMER_CLOSED = event_type(
    "consumer_closed",
    "consumer:int reason:str pending_acks:int",
    "consumer {consumer} left ({reason}) with {pending_acks} pending ack(s) (-1: Exclusive / Failover)",
    rule="CommandCloseConsumer / connection closed; docs/guide/subscription-types.md#shared-consumer-leaves",
    explainer=_consumer_closed,
)
FLOW = event_type(
    "flow",
    "consumer:int permits:int available:int blocked:bool",
    "consumer {consumer} sent FLOW({permits}); broker permits now {available} (blocked={blocked})",
    rule="CommandFlow; docs/guide/flow-control.md#flow-permits",
)
ENTRIES_READ = event_type(
    "entries_read",
    "subscription:int replay:bool entries:int ledger:int entry:int wanted:int",
    "subscription {subscription} read {entries} entr(y/ies) from {ledger}:{entry} (replay={replay}, asked {wanted})",
    rule="readMoreEntries; docs/guide/flow-control.md#broker-permits",
)
DISPATCHED = event_type(
    "dispatched",
    "consumer:int ledger:int entry:int messages:int redelivery_count:int permits:int",
    "entry {ledger}:{entry} ({messages} message(s)) sent to consumer {consumer}; its permits are now {permits}",
    rule="Consumer.sendMessages; docs/guide/flow-control.md#broker-permits",
)
RECEIVED = event_type(
    "received",
    "consumer:int ledger:int entry:int batch_index:int queue:int",
    "consumer {consumer} received {ledger}:{entry}:{batch_index}; {queue} message(s) left in its receiver queue",
    rule="ConsumerImpl.receive",
)
ACKNOWLEDGED = event_type(
    "acknowledged",
    "consumer:int ledger:int entry:int batch_index:int cumulative:bool",
    "consumer {consumer} acknowledged {ledger}:{entry}:{batch_index} (cumulative={cumulative})",
    rule="ConsumerImpl.acknowledge; docs/guide/acknowledgements.md#ack-grouping",
)
ACK_APPLIED = event_type(
    "ack_applied",
    "subscription:int ledger:int entry:int cumulative:bool partial:bool mark_delete_entry:int",
    "broker applied a {cumulative} ack of {ledger}:{entry} (partial batch={partial})",
    rule="Consumer.messageAcked -> ManagedCursor.asyncDelete / asyncMarkDelete; docs/guide/cursor.md#mark-delete",
)
DUPLICATE_DROPPED = event_type(
    "duplicate_dropped",
    "consumer:int ledger:int entry:int batch_index:int",
    "consumer {consumer} dropped {ledger}:{entry}:{batch_index}: its ack is still pending (isDuplicate)",
    rule="ConsumerImpl.messageReceived; docs/guide/flow-control.md#flow-permits",
)
REPLAY_ADDED = event_type(
    "replay_added",
    "subscription:int ledger:int entry:int sticky_hash:int",
    "entry {ledger}:{entry} (hash {sticky_hash}) put in the replay set of subscription {subscription}",
    rule="MessageRedeliveryController.add; docs/guide/redelivery.md#replay-set",
)
CONSUMER_BLOCKED = event_type(
    "consumer_blocked",
    "consumer:int blocked:bool unacked:int",
    "consumer {consumer} blocked on unacked messages = {blocked} ({unacked} unacked when checked: an ack that "
    "unblocks is subtracted after the check)",
    rule="Consumer.removePendingAcks, maxUnackedMessagesPerConsumer; docs/guide/flow-control.md#broker-permits",
)
DISPATCHER_BLOCKED = event_type(
    "dispatcher_blocked",
    "subscription:int blocked:bool unacked:int",
    "subscription {subscription} blocked on unacked messages = {blocked} ({unacked} unacked)",
    rule="maxUnackedMessagesPerSubscription; docs/guide/flow-control.md#broker-permits",
)
ACTIVE_CONSUMER_CHANGE = event_type(
    "active_consumer_change",
    "consumer:int is_active:bool subscription:int",
    "consumer {consumer} told it is active = {is_active}",
    rule="CommandActiveConsumerChange; docs/guide/subscription-types.md#failover-switch",
)
ACTIVE_CONSUMER_PICKED = event_type(
    "active_consumer_picked",
    "subscription:int consumer:int delay_ms:int",
    "subscription {subscription} picked consumer {consumer} as active; rewind and read after {delay_ms} ms",
    rule="pickAndScheduleActiveConsumer; docs/guide/subscription-types.md#failover-switch",
)
CURSOR_REWOUND = event_type(
    "cursor_rewound",
    "subscription:int ledger:int entry:int",
    "subscription {subscription} rewound its cursor to {ledger}:{entry}",
    rule="ManagedCursor.rewind",
)
REDELIVER_REQUESTED = event_type(
    "redeliver_requested",
    "consumer:int messages:int",
    "consumer {consumer} asked to redeliver {messages} unacknowledged message(s)",
    rule="CommandRedeliverUnacknowledgedMessages",
)
RECENTLY_JOINED = event_type(
    "recently_joined",
    "consumer:int ledger:int entry:int added:bool",
    "consumer {consumer} recently joined at read position {ledger}:{entry} (added={added})",
    rule="classic Key_Shared recentlyJoinedConsumers; docs/guide/key-shared-ordering.md#recently-joined-consumers",
)
DRAINING_HASH = event_type(
    "draining_hash",
    "consumer:int hash:int ref_count:int added:bool",
    "hash {hash} draining from consumer {consumer}: {ref_count} unacked (added={added})",
    rule="PIP-379 DrainingHashesTracker; docs/guide/key-shared-ordering.md#draining-hashes",
)
HASH_BLOCKED = event_type(
    "hash_blocked",
    "consumer:int hash:int ledger:int entry:int reason:str",
    "entry {ledger}:{entry} with hash {hash} held back from consumer {consumer}: {reason}",
    rule="Key_Shared ordering; docs/guide/key-shared-ordering.md#replay-set-blocking",
)

# reasons of HASH_BLOCKED
REASON_REPLAY = "hash_in_replay_set"
REASON_DRAINING = "hash_draining"
REASON_NO_PERMITS = "no_permits"
REASON_NO_CONSUMER = "no_consumer"
REASON_RECENTLY_JOINED = "recently_joined"
