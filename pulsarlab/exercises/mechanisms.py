"""Checkers for the exercises on the mechanisms issue 13 adds to the labs (one per lab, 01-10).

Models no Pulsar class: every right answer is computed by running the lab's model, as the lab's cells do.
Each checker is an `exercise`: an answer left as ``...`` is "not answered yet" and what to write; a wrong one
gets what is wrong, then where to look (the lab's section, the guide page); a right one says why it is right.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pulsarlab.client.ack_grouping import for_profile
from pulsarlab.client.policies import ConsumerDeadLetterPolicy
from pulsarlab.clock import Scheduler
from pulsarlab.errors import PulsarError
from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.ids import MessageId
from pulsarlab.lab import Lab
from pulsarlab.protocol.acks import AckType
from pulsarlab.protocol.subscription import ConsumerType
from pulsarlab.scenarios.key_shared import KeySharedScenario


def _compare(answer: Any, want: dict[str, Any], what: str, hints: dict[str, str], hint: str, why: str) -> CheckResult:
    """``answer`` against ``want`` key by key: a rejection names each wrong key with its hint."""
    if not isinstance(answer, dict) or set(answer) != set(want):
        return failed([f"answer should be {what}"])
    problems = [
        f"{key}: {want[key]!r}, you said {answer[key]!r}" + (f" - {hints[key]}" if key in hints else "")
        for key in want
        if answer[key] != want[key]
    ]
    return failed(problems, hint) if problems else passed(why)


# --- lab 01: keyless messages under key-based batching ----------------------------------------------------------


def keyless_key_based_answer(keys: list[str | None], version: str = "4.0", first_sequence_id: int = 10) -> dict:
    """Entries a KEY_BASED batch of ``keys`` becomes, and the consumer of its keyless entry (c1..c3, ring)."""
    sc = KeySharedScenario("consistent_hashing", version)
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    entries = sc.route_batch(keys, "KEY_BASED", first_sequence_id=first_sequence_id, record=False)
    keyless = [e.consumer_name for e in entries if e.keys[0] is None]
    return {"entries": len(entries), "keyless_consumer": keyless[0] if keyless else None}


@exercise(
    todo='write {"entries": <how many entries>, "keyless_consumer": "<c1, c2 or c3>"}',
    see=(
        'Lab 1, section 7 ("Batching: the first key decides")',
        "docs/guide/producer-batching.md#keyless-batches",
        "docs/guide/sticky-key-hashing.md#keyless-messages",
    ),
)
def check_keyless_key_based(answer: Any, keys: list[str | None], version: str = "4.0") -> CheckResult:
    """``{"entries": int, "keyless_consumer": "cN"}`` for one KEY_BASED batch of ``keys``."""
    want = keyless_key_based_answer(keys, version)
    return _compare(
        answer,
        want,
        '{"entries": <how many entries>, "keyless_consumer": "<c1, c2 or c3>"}',
        {
            "entries": "KeyBased batching builds one sub-batch per distinct key, and all keyless messages share one",
            "keyless_consumer": (
                "a keyless entry has no key to hash: 4.0 hashes producerName-sequenceId with the sequence id the "
                "entry carries, its first message's in the Python (C++) client (a Java key-based sub-batch carries "
                "its highest); 3.0 hashed the constant NONE_KEY"
            ),
        },
        "Section 7 routes batches; section 6 (Pulsar 3.0 vs 4.0) shows the keyless sticky key.",
        f"{want['entries']} entries; the keyless one is routed by its producer name and sequence id, not by a key.",
    )


# --- lab 02: a subscription's type changes only once every consumer has left --------------------------------------


def type_change_answer(version: str = "4.0") -> dict[str, str]:
    """What a Failover consumer gets on a Shared subscription with one, then no consumer left."""
    lab = Lab(version=version)
    client = lab.client()
    first = client.subscribe("orders", "workers", consumer_type=ConsumerType.Shared, consumer_name="s1")
    client.subscribe("orders", "workers", consumer_type=ConsumerType.Shared, consumer_name="s2").close()
    out = {}
    for step in ("one_left", "all_left"):
        if step == "all_left":
            first.close()
        try:
            client.subscribe("orders", "workers", consumer_type=ConsumerType.Failover, consumer_name="f1")
            out[step] = lab.admin.topics.stats("orders")["subscriptions"]["workers"]["type"]
        except PulsarError as error:
            out[step] = type(error).__name__
    return out


@exercise(
    todo='write {"one_left": "<exception class name or subscription type>", "all_left": "<...>"}',
    see=(
        'Lab 2, section 7 ("Partitioned topics, and changing a subscription\'s type")',
        "docs/guide/subscription-types.md#type-change",
    ),
)
def check_type_change(answer: Any, version: str = "4.0") -> CheckResult:
    """``{"one_left": ..., "all_left": ...}``: the exception name, or the subscription type stats then shows."""
    want = type_change_answer(version)
    return _compare(
        answer,
        want,
        '{"one_left": "<exception class name or subscription type>", "all_left": "<...>"}',
        {
            "one_left": "while any consumer is connected, a consumer of another type is refused",
            "all_left": "once the last consumer has left, the next consumer's type becomes the subscription's type",
        },
        "The cell on type changes shows both cases.",
        f"{want}: the type is fixed only while the subscription has consumers.",
    )


# --- lab 03: a cumulative ack inside a batch ---------------------------------------------------------------------


def cumulative_in_batch_answer(batch_size: int, index: int, entry: int = 4) -> dict[str, Any]:
    """What the CommandAck carries for a cumulative ack of ``index`` in a batch at ``3:entry``."""
    out = {}
    for label, enabled in (("off", False), ("on", True)):
        clock = Scheduler()
        sent = []
        tracker = for_profile("4.0", clock, sent.append, batch_index_ack_enabled=enabled)
        tracker.add_acknowledgment(MessageId(3, entry, -1, index), batch_size, AckType.CUMULATIVE)
        clock.advance(100)
        ((ledger, entry_id, ack_set),) = sent[0].message_ids
        out[label] = {"position": f"{ledger}:{entry_id}", "ack_set": list(ack_set) if ack_set else None}
    return out


@exercise(
    todo='write {"off": {"position": "L:E", "ack_set": None or [words]}, "on": {"position": ..., "ack_set": ...}}',
    see=(
        'Lab 3, section 4 ("Batches: what comes back after a partial ack (3.x / 4.0 vs 4.1)")',
        "docs/guide/acknowledgements.md#cumulative-in-batch",
        "docs/guide/acknowledgements.md#ack-sets",
    ),
)
def check_cumulative_in_batch(answer: Any, batch_size: int = 8, index: int = 5, entry: int = 4) -> CheckResult:
    """``{"off": {"position": "L:E", "ack_set": None | [words]}, "on": {...}}``."""
    want = cumulative_in_batch_answer(batch_size, index, entry)
    return _compare(
        answer,
        want,
        '{"off": {"position": "L:E", "ack_set": None or [words]}, "on": {"position": ..., "ack_set": ...}}',
        {
            "off": (
                "without batch-index acks the client cannot say 'up to index i' inside an entry: it cumulatively "
                "acks the PREVIOUS entry, and the batch stays unacknowledged as a whole"
            ),
            "on": (
                "with batch-index acks it acks the entry itself with an ack set whose bits i+1 .. N-1 are set "
                "(still unacknowledged), as Java's BitSet.toLongArray() words"
            ),
        },
        "The cell 'What a CommandAck carries' sends both.",
        "off: the previous entry; on: the entry with the bits after the acked index still set.",
    )


# --- lab 04: the active consumer of a non-partitioned topic ------------------------------------------------------


def ring_active_answer(topic: str, names: list[str], version: str = "4.0") -> str:
    """``activeConsumerName`` after ``names`` subscribe (Failover, one priority) to a non-partitioned topic."""
    lab = Lab(version=version)
    client = lab.client()
    for name in names:
        client.subscribe(topic, "sub", consumer_type=ConsumerType.Failover, consumer_name=name)
    lab.advance(1000)
    return lab.admin.topics.stats(topic)["subscriptions"]["sub"]["activeConsumerName"]


@exercise(
    todo="write a consumer name, such as 'c1'",
    see=(
        'Lab 4, section 3 ("A non-partitioned topic: the hash ring (3.0+)")',
        "docs/guide/subscription-types.md#failover-ring",
    ),
)
def check_ring_active(answer: Any, topic: str, names: list[str], version: str = "4.0") -> CheckResult:
    """The name of the active consumer on a non-partitioned topic."""
    want = ring_active_answer(topic, names, version)
    if answer == want:
        return passed(f"{want} owns the first ring point at or after the topic name's hash.")
    why = f"the active consumer is {want}, you said {answer!r}: " + (
        f"{names[0]} connected first, but since 3.0 connection order plays no part"
        if answer == names[0]
        else "look for the first point at or after topic_hash(full topic name), wrapping around"
    )
    return failed([why], "Draw it with failover_ring_view, or compute ring_index(names, topic_hash(...)).")


# --- lab 05: keyless messages on Key_Shared ----------------------------------------------------------------------


def keyless_spread_answer(messages: int = 6) -> dict[str, int]:
    """How many of three Key_Shared consumers receive ``messages`` keyless messages, per version."""
    out = {}
    for version in ("3.0", "4.0"):
        lab = Lab(version=version, seed=1)
        client = lab.client()
        consumers = [
            client.subscribe("jobs", "workers", consumer_type=ConsumerType.KeyShared, consumer_name=f"c{i}")
            for i in (1, 2, 3)
        ]
        producer = client.create_producer("jobs")
        for i in range(messages):
            producer.send(f"job-{i}".encode())
        out[version] = sum(1 for c in consumers if c.receiver_queue)
    return out


@exercise(
    todo='write {"3.0": <number of consumers>, "4.0": <number of consumers>}',
    see=(
        'Lab 5, section 7 ("Keyless messages")',
        "docs/guide/sticky-key-hashing.md#keyless-messages",
    ),
)
def check_keyless_spread(answer: Any, messages: int = 6) -> CheckResult:
    """``{"3.0": n, "4.0": n}``: how many consumers receive at least one keyless message."""
    want = keyless_spread_answer(messages)
    return _compare(
        answer,
        want,
        '{"3.0": <number of consumers>, "4.0": <number of consumers>}',
        {
            "3.0": "3.0 hashes every keyless message as the constant NONE_KEY: one hash, one consumer",
            "4.0": "4.0 hashes producerName-sequenceId, so keyless messages spread over the ring",
        },
        "The cells of the section print each keyless message's sticky key.",
        f"{want}: one consumer on 3.0, spread on 4.0.",
    )


# --- lab 06: numberOfEntriesSinceFirstNotAckedMessage ------------------------------------------------------------


def entries_since_first_not_acked_answer(published: int, received: int, acked: int) -> int:
    """``numberOfEntriesSinceFirstNotAckedMessage`` after receiving ``received`` and acking the first ``acked``."""
    lab = Lab(version="4.0", broker_config={"managedLedgerMaxEntriesPerLedger": 1000})
    client = lab.client()
    consumer = client.subscribe("t", "sub", consumer_name="c1", receiver_queue_size=received)
    producer = client.create_producer("t")
    for i in range(published):
        producer.send(f"m{i}".encode())
    msgs = [consumer.receive(0) for _ in range(received)]
    for msg in msgs[:acked]:
        consumer.acknowledge(msg)
    lab.advance(100)
    return lab.admin.topics.stats_internal("t")["cursors"]["sub"]["numberOfEntriesSinceFirstNotAckedMessage"]


@exercise(
    todo="write an int: the numberOfEntriesSinceFirstNotAckedMessage stats-internal prints",
    see=(
        'Lab 6, section 3 ("Symptom: an ack hole pins the mark-delete position")',
        "docs/guide/cursor.md#holes",
        "docs/guide/cursor.md#read-position",
    ),
)
def check_entries_since_first_not_acked(
    answer: Any, published: int = 20, received: int = 20, acked: int = 5
) -> CheckResult:
    """An int: what stats-internal prints."""
    want = entries_since_first_not_acked_answer(published, received, acked)
    if answer == want:
        return passed(f"{want}: the positions after the mark-delete position up to and including the read position.")
    hint = ""
    if answer == want - 1:
        hint = ": it counts up to AND including the read position, which has not been read yet"
    elif answer == received:
        hint = ": it starts after the mark-delete position, not at the first entry"
    return failed(
        [f"it prints {want}, you said {answer!r}{hint}"],
        'Lab 3, section 5 ("stats-internal, as pulsar-admin prints it") prints the same cursor fields.',
    )


# --- lab 07: retry and dead-letter topic names -------------------------------------------------------------------


def retry_path_answer(topic: str, subscription: str, max_redeliver_count: int) -> dict[str, Any]:
    """The topics a message is received from while the app always reconsumes it later, and where it ends."""
    lab = Lab(version="4.0", seed=1)
    client = lab.client()
    consumer = client.subscribe(
        topic,
        subscription,
        consumer_type=ConsumerType.Shared,
        lab_retry_enable=True,
        dead_letter_policy=ConsumerDeadLetterPolicy(max_redeliver_count=max_redeliver_count),
    )
    client.create_producer(topic).send(b"order")
    received_from = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=60_000)
        except PulsarError:
            break
        received_from.append(msg.topic_name().split("/")[-1])
        consumer.reconsume_later(msg, timedelta(seconds=1))
    dead = [e.copy["topic"].split("/")[-1] for e in lab.events.of_kind("dead_lettered")]
    return {"received_from": received_from, "dead_letter_topic": dead[0] if dead else None}


@exercise(
    todo='write {"received_from": ["<short topic name>", ...], "dead_letter_topic": "<short topic name>"}',
    see=(
        'Lab 7, section 5 ("Retry topics: "again, later"")',
        "docs/guide/retry-and-dead-letters.md#retry-topic",
        "docs/guide/retry-and-dead-letters.md#topic-names",
    ),
)
def check_retry_path(answer: Any, topic: str = "payments", subscription: str = "billing", max_redeliver_count: int = 2):
    """``{"received_from": [topic names], "dead_letter_topic": name}`` (short names, no persistent://...)."""
    want = retry_path_answer(topic, subscription, max_redeliver_count)
    return _compare(
        answer,
        want,
        '{"received_from": ["<short topic name>", ...], "dead_letter_topic": "<short topic name>"}',
        {
            "received_from": (
                f"the first delivery comes from {topic}; each reconsume_later writes a copy to "
                f"<topic>-<subscription>-RETRY until RECONSUMETIMES would pass max_redeliver_count"
            ),
            "dead_letter_topic": "the default is <topic>-<subscription>-DLQ, with dashes (no _DLQ)",
        },
        "Read the box on topic names again.",
        f"{want['received_from']} then {want['dead_letter_topic']}.",
    )


# --- lab 08: one callback per chunked message --------------------------------------------------------------------


def chunk_callback_answer(payload: int, max_message_size: int = 1024) -> dict[str, int]:
    """Chunks of one send_async of ``payload`` bytes, and how often its callback fires."""
    lab = Lab(version="4.0", seed=1, broker_config={"maxMessageSize": max_message_size})
    producer = lab.client().create_producer("big-files", producer_name="uploader", chunking_enabled=True)
    calls = []
    producer.send_async(bytes(payload), lambda result, msg_id: calls.append(msg_id))
    lab.run_until_idle()
    return {"chunks": len(lab.events.of_kind("chunk_published")), "callbacks": len(calls)}


@exercise(
    todo='write {"chunks": <int>, "callbacks": <int>}',
    see=(
        'Lab 8, section 7 ("One callback per message, and the lab\'s clock")',
        "docs/guide/chunked-messages.md#chunk-count",
        "docs/guide/chunked-messages.md#chunk-message-id",
    ),
)
def check_chunk_callback(answer: Any, payload: int = 2020) -> CheckResult:
    """``{"chunks": int, "callbacks": int}``."""
    want = chunk_callback_answer(payload)
    return _compare(
        answer,
        want,
        '{"chunks": <int>, "callbacks": <int>}',
        {
            "chunks": "each chunk carries maxMessageSize - metadata payload bytes (1010 here)",
            "callbacks": "the producer completes the message once, when its last chunk is persisted",
        },
        'Section 2 ("A chunking producer") sizes the chunks; the cell on callbacks counts the calls.',
        f"{want['chunks']} chunks, one callback with the ChunkMessageId.",
    )


# --- lab 09: the bucket walkthrough ------------------------------------------------------------------------------


def bucket_walkthrough_answer(broker_config: dict[str, Any], messages: int = 16) -> dict[str, Any]:
    """Times at which stored segments are loaded, and how many buckets one merge joined, for lab 09 section 4's run."""
    lab = Lab(version="4.0", seed=1, broker_config=broker_config)
    client = lab.client()
    worker = client.subscribe("reminders", "workers", consumer_type=ConsumerType.Shared, consumer_name="w1")
    producer = client.create_producer("reminders")
    for i in range(messages):
        producer.send(f"m{i}".encode(), deliver_after=timedelta(seconds=3 + i))
    while True:
        try:
            worker.acknowledge(worker.receive(timeout_millis=max(30_000 - lab.now(), 0)))
        except PulsarError:
            break
    merged = lab.events.of_kind("buckets_merged")
    return {
        "segment_loads_at": [e.time for e in lab.events.of_kind("segment_loaded")],
        "merged_buckets": merged[0].buckets if merged else 0,
    }


@exercise(
    todo='write {"segment_loads_at": [<ms>, ...], "merged_buckets": <int>}',
    see=(
        'Lab 9, section 4 ("The bucket tracker, step by step")',
        "docs/guide/delayed-delivery.md#bucket-tracker",
        "docs/guide/delayed-delivery.md#bucket-merging",
    ),
)
def check_bucket_walkthrough(answer: Any, broker_config: dict[str, Any], messages: int = 16) -> CheckResult:
    """``{"segment_loads_at": [ms, ...], "merged_buckets": int}``."""
    want = bucket_walkthrough_answer(broker_config, messages)
    return _compare(
        answer,
        want,
        '{"segment_loads_at": [<ms>, ...], "merged_buckets": <int>}',
        {
            "segment_loads_at": (
                "a stored segment is loaded when the last index of the bucket's loaded segment is taken: at the "
                "due time of that index"
            ),
            "merged_buckets": "delayedDeliveryMaxNumBuckets=2: the third sealed bucket goes over the limit",
        },
        "Step through the section's player with 'jump to segment_loaded'.",
        f"{want}: segments wait in storage until the one before them is used up.",
    )


# --- lab 10: reading what the broker saw of a real app -----------------------------------------------------------


@exercise(
    todo='write {"msgInCounter": <int>, "msgBacklog": <int>, "crasher_closed": "<close reason>"}',
    see=(
        'Lab 10, sections "What the broker saw: `stats-internal`" and "What happened, from the event log"',
        "docs/guide/subscription-types.md#shared-consumer-leaves",
        "docs/guide/redelivery.md#redelivery-count",
    ),
)
def check_app_outcome(answer: Any, stats: dict[str, Any], closed_reasons: dict[str, str]) -> CheckResult:
    """``{"msgInCounter": int, "msgBacklog": int, "crasher_closed": reason}`` against the served run's own stats
    (``stats`` as `pulsar-admin topics stats` prints it, ``closed_reasons`` consumer name -> close reason)."""
    want = {
        "msgInCounter": stats["msgInCounter"],
        "msgBacklog": stats["subscriptions"]["workers"]["msgBacklog"],
        "crasher_closed": closed_reasons.get("crasher"),
    }
    return _compare(
        answer,
        want,
        '{"msgInCounter": <int>, "msgBacklog": <int>, "crasher_closed": "<close reason>"}',
        {
            "msgInCounter": "the topic counts every message published to it (the app does not batch)",
            "msgBacklog": "the backlog counts messages not acknowledged on the subscription: read it in stats",
            "crasher_closed": (
                "a process that dies sends no CLOSE_CONSUMER: the broker sees the connection drop ('disconnected')"
            ),
        },
        "Read the stats cell and the table of closed consumers again.",
        f"{want}: every message arrived and was acknowledged, although one consumer died holding some.",
    )
