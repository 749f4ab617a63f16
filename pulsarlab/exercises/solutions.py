"""The solutions of the labs' exercises, kept out of the notebooks (which ship with ``answer_N = ...``).

Models no Pulsar class. ``SOLUTIONS[lab][answer name]`` is a `Solution`: the value to assign and one line on why
it is right. The notebook tests inject each one in place of its ``answer_N = ...`` line (`source`) and expect
every checker to say OK; the checkers compute the right answers themselves with the model, so a solution here
that went stale shows up as a failing notebook test, not as a wrong lesson.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Solution:
    """The value of one ``answer_N`` and why it is right."""

    value: Any
    why: str


SOLUTIONS: dict[str, dict[str, Solution]] = {
    "01-key-shared": {
        "answer_1": Solution(
            {"c1": (49153, 65536), "c2": (16385, 32768), "c3": (8193, 16384), "c4": (32769, 49152), "c5": (0, 8192)},
            "each newcomer takes the lower half of the largest range (ties: the lowest range).",
        ),
        "answer_2": Solution(
            {"default": "c2", "key_based": {"customer-7": "c2", "customer-8": "c3", "customer-12": "c1"}},
            "a default batch is one entry routed by its first key; KEY_BASED makes one sub-batch per key.",
        ),
        "answer_3": Solution(
            {"entries": 3, "keyless_consumer": "c3"},
            "one sub-batch per key plus one for both keyless messages; 4.0 routes it by producerName-sequenceId.",
        ),
    },
    "02-subscription-types": {
        "answer_1": Solution(
            ["A", "C", "A", "A", "B", "D", "B", None],
            "priority 0 first (A, C in arrival order) while they have permits, then priority 1; m7 has no permit.",
        ),
        "answer_2": Solution([8, 4, 4, 4], "FLOW(8) at subscribe, then FLOW(4) each time 4 received messages free up."),
        "answer_3": Solution(
            {"messages": ["m2", "m4"], "redelivery_count": 0},
            "c1's unacked messages (received or still queued) go back without counting a redelivery.",
        ),
        "answer_4": Solution(
            {"one_left": "SubscriptionBusyException", "all_left": "Failover"},
            "another type is refused while a consumer is connected; once all left, the newcomer's type is taken.",
        ),
    },
    "03-acks-and-the-cursor": {
        "answer_1": Solution(
            [150, 150, 150, 400],
            "three acks fill lab_max_ack_group_size at t=150; the fourth waits for the 400 ms tick.",
        ),
        "answer_2": Solution(
            {"markDeletePosition": "3:2", "individuallyDeletedMessages": "[(4:0..4:2],(5:0..5:1]]"},
            "acking 3:2 moves the mark-delete over the ledger boundary; the hole at 4:0 keeps the rest in ranges.",
        ),
        "answer_3": Solution(
            {"4.0": [0, 1, 2, 3, 4], "4.1": [1, 3, 4]},
            "without batch-index acks the broker only knows whole entries; 4.1's profile sends the batch ack set.",
        ),
        "answer_4": Solution(
            {"off": {"position": "3:3", "ack_set": None}, "on": {"position": "3:4", "ack_set": [192]}},
            "off: the previous entry is acked; on: 3:4 with bits 6 and 7 (after index 5) still set, 64 + 128.",
        ),
    },
    "04-failover": {
        "answer_1": Solution(
            {0: "w", 1: "x", 2: "y", 3: "w", 4: "x"},
            "priority-0 consumers sorted by name (w, x, y); partition i goes to i % 3.",
        ),
        "answer_2": Solution(
            "c2", "c2 owns the first ring point at or after the topic name's hash; connection order plays no part."
        ),
        "answer_3": Solution(
            {"new_active": "c2", "first_delivery_ms": 2380, "redelivered": ["m3", "m4", "m5"]},
            "the 1000 ms failover delay, then a rewind to the mark-delete; m3's ack was still in the tracker.",
        ),
    },
    "05-key-shared-ordering": {
        "answer_1": Solution(
            {"3.0": [], "4.0": ["m8", "m12"]},
            "3.0 gates c2 on its join position for all keys; 4.0 holds only the hashes c1 still drains.",
        ),
        "answer_2": Solution(
            {"3.0": [], "4.0": ["m11", "m13"]},
            "acks free order-4's hash in 4.0; 3.0 waits for the mark-delete position to pass c2's join.",
        ),
        "answer_3": Solution(
            {"3.0": 1, "4.0": 3},
            "3.0 hashes every keyless message as NONE_KEY (one consumer); 4.0 hashes producerName-sequenceId.",
        ),
    },
    "06-debug-your-cluster": {
        "answer_1": Solution("2371:5", "the first entry after markDeletePosition that no acked range covers."),
        "answer_2": Solution(
            16, "mark-delete at entry 4, read position at 20: entries 5 to 20, the read position included."
        ),
        "answer_3": Solution(
            {"blocked": "sender-0", "setting": "maxUnackedMessagesPerConsumer"},
            "blockedConsumerOnUnackedMsgs is true on sender-0 only; its unackedMessages reached the per-consumer limit.",
        ),
        "answer_4": Solution(
            {"holder": "fulfilment-a", "waiting": "fulfilment-b", "messages_to_ack": 10},
            "drainingHashes sit on the old owner; their unackMsgs add up to 10; the hashes fall in b's ranges.",
        ),
    },
    "07-redelivery-and-dead-letters": {
        "answer_1": Solution(6000, "a ring of ceil(3000/2000)+1 = 3 sets, ticking every 2000 ms from t=0."),
        "answer_2": Solution(
            {"3.0": [1002, 1336], "4.0": [1000, 1024]},
            "3.0's timer runs every delay/3 and takes what is past due; 4.0 rounds into 256 ms buckets.",
        ),
        "answer_3": Solution(
            [0, 1, 2, 3], "a delivery with count >= maxRedeliverCount is still shown; the next one goes to the DLQ."
        ),
        "answer_4": Solution(
            {
                "received_from": ["payments", "payments-billing-RETRY", "payments-billing-RETRY"],
                "dead_letter_topic": "payments-billing-DLQ",
            },
            "each reconsume_later goes to <topic>-<subscription>-RETRY; the one past max_redeliver_count to -DLQ.",
        ),
    },
    "08-chunked-messages": {
        "answer_1": Solution(
            {"exception": "MessageTooBig", "largest_payload": 1010},
            "the C++ client compares metadata + payload with maxMessageSize; the metadata takes 14 bytes here.",
        ),
        "answer_2": Solution([1, 2, 3, 4, 10], "ceil(size / (maxMessageSize - metadata)) chunks, each with metadata."),
        "answer_3": Solution(
            ["3:0:-1;3:2:-1", "3:3:-1", "3:4:-1;3:5:-1"],
            "each chunk is an entry; a chunked message's id prints first;last, a small one a plain id.",
        ),
        "answer_4": Solution(
            {"received": ["p1-0", "p2-0"], "evicted": ["p0-0"]},
            "with 2 pending slots, p2's chunk 0 evicts the oldest pending message, p0-0.",
        ),
        "answer_5": Solution(
            {"p0-0": "c1", "p0-1": "c1", "p1-0": "c2", "p1-1": "c2"},
            "the round robin picks a consumer per chunk 0; SharedConsumerAssignor pins the uuid to it.",
        ),
        "answer_6": Solution(
            {"exception": "ValueError", "message": "Batching and chunking of messages can't be enabled together."},
            "the Python client refuses the pair itself, with a full stop the Java and C++ texts lack.",
        ),
        "answer_7": Solution(
            {"chunks": 2, "callbacks": 1},
            "2020 bytes in chunks of 1010 payload bytes; the producer completes the message once, on its last chunk.",
        ),
    },
    "09-delayed-delivery": {
        "answer_1": Solution(
            {"Exclusive": 0, "Failover": 0, "Shared": 10_000, "Key_Shared": 10_000},
            "only the multi-consumer dispatcher (Shared, Key_Shared) tracks delayed delivery.",
        ),
        "answer_2": Solution(
            [0, 250, 250, 3000], "held while deliverAt > now + tick; a timer read takes all that is due."
        ),
        "answer_3": Solution(
            {"segment_loads_at": [5000, 9000], "merged_buckets": 3},
            "a stored segment loads when its bucket's loaded segment is used up; one bucket too many merges three.",
        ),
        "answer_4": Solution(
            {"recovered": 9, "read_again": 1},
            "three sealed buckets of 3 indexes were stored; the mutable bucket's one index is read again.",
        ),
    },
    "10-watch-your-app": {
        "answer_1": Solution(
            {"msgInCounter": 60, "msgBacklog": 0, "crasher_closed": "disconnected"},
            "60 orders in, all acknowledged; the crasher's process died, so the broker saw its connection drop.",
        ),
    },
    "11-at-scale": {
        "answer_1": Solution(
            {"dead_lettered": 66, "deliveries_each": 2},
            "the run's dead_lettered column; nacked at redelivery counts 0 and 1, the next redelivery goes to the DLQ.",
        ),
    },
}


def source(lab: str, name: str) -> str:
    """The Python line that assigns the solution of ``name`` in ``lab`` (e.g. ``answer_1 = [0, 250]``)."""
    return f"{name} = {SOLUTIONS[lab][name].value!r}"


__all__ = ["SOLUTIONS", "Solution", "source"]
