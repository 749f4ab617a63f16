"""Checkers for the chunking lab (labs/08-chunked-messages.ipynb): why chunking, how many chunks, the chunk
message id, the consumer's pending map, Shared subscriptions, and batching vs chunking.

Models no Pulsar class; every right answer is computed by running the lab's model with the Python client's
rules (`ClientLibrary.CPP`, docs/guide/chunked-messages.md and `pulsarlab.client.chunking`). Each checker returns a
`CheckResult` that says OK, or what is wrong and which rule was missed.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulsarlab.client.batching import OutgoingMessage
from pulsarlab.client.chunking import MessageTooBig, cpp_metadata_size
from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.lab import Lab
from pulsarlab.managed_ledger.position import Position
from pulsarlab.protocol.subscription import ConsumerType

TOPIC = "big-files"


def _lab(max_message_size: int) -> Lab:
    return Lab(version="4.0", seed=1, broker_config={"maxMessageSize": max_message_size})


# ---------------------------------------------------------------------------------------------
# Exercise 1: why chunking - what a producer without chunking does with a big message


def too_big_answer(max_message_size: int = 1024, producer_name: str = "uploader") -> dict[str, Any]:
    """``{"exception": class name, "largest_payload": bytes}`` for a producer without chunking: what its first
    ``send`` of ``max_message_size + 1`` bytes raises, and the largest payload its first send still delivers."""
    lab = _lab(max_message_size)
    producer = lab.client().create_producer(TOPIC, producer_name=producer_name)
    try:
        producer.send(bytes(max_message_size + 1))
        exception = None
    except Exception as error:  # the answer is whatever the model raises
        exception = type(error).__name__
    lo, hi = 0, max_message_size  # the first send: sequence id 0, publish time 0 on the lab's clock
    while lo < hi:
        mid = (lo + hi + 1) // 2
        probe = _lab(max_message_size).client().create_producer(TOPIC, producer_name=producer_name)
        try:
            probe.send(bytes(mid))
            lo = mid
        except MessageTooBig:
            hi = mid - 1
    return {"exception": exception, "largest_payload": lo}


@exercise(
    todo='write {"exception": the class name send() raises, "largest_payload": bytes}',
    see=(
        'Lab 8, section 1 ("Why chunking: the size limit")',
        "docs/guide/chunked-messages.md#chunk-count",
    ),
)
def check_too_big(answer: Any, max_message_size: int = 1024, producer_name: str = "uploader") -> CheckResult:
    """Check ``answer`` = ``{"exception": "...", "largest_payload": n}`` (see `too_big_answer`)."""
    if not isinstance(answer, dict) or set(answer) != {"exception", "largest_payload"}:
        return failed(['answer should be a dict {"exception": "ClassName", "largest_payload": bytes}'])
    want = too_big_answer(max_message_size, producer_name)
    problems = []
    got_exc = answer["exception"]
    if got_exc != want["exception"]:
        line = f"send() raises {want['exception']}; you said {got_exc!r}"
        if got_exc == "InvalidMessageException":
            line += (
                ": that is the Java client's exception; the Python client (C++ underneath) fails the send with "
                "ResultMessageTooBig, raised as pulsar.MessageTooBig"
            )
        problems.append(line)
    got = answer["largest_payload"]
    largest = want["largest_payload"]
    if got != largest:
        line = f"the largest payload that goes out is {largest} bytes; you said {got!r}"
        if got == max_message_size:
            line += (
                f": the C++ client compares metadata + payload with maxMessageSize, and this message's metadata "
                f"(producer name, sequence id, publish time) takes {max_message_size - largest} bytes"
            )
        problems.append(line)
    if problems:
        return failed(problems, hint="Try it: producer.send(bytes(n)) in a fresh lab for a few n.")
    return passed(
        f"{want['exception']}, and at most {largest} payload bytes fit in one message of {max_message_size} bytes."
    )


# ---------------------------------------------------------------------------------------------
# Exercise 2: how many chunks


def chunk_counts_answer(
    payload_sizes: Sequence[int], max_message_size: int = 1024, producer_name: str = "uploader"
) -> list[int]:
    """The number of entries each send of a chunking producer stores, sends in order on a fresh topic."""
    lab = _lab(max_message_size)
    producer = lab.client().create_producer(TOPIC, producer_name=producer_name, chunking_enabled=True)
    topic = lab.service.get_topic(lab.service.normalize(TOPIC))
    out = []
    for size in payload_sizes:
        before = topic.ledger.entries_added_counter
        producer.send(bytes(size))
        out.append(topic.ledger.entries_added_counter - before)
    return out


@exercise(
    todo="write the list of chunk counts, one per payload size",
    see=(
        'Lab 8, section 2 ("A chunking producer")',
        "docs/guide/chunked-messages.md#chunk-count",
    ),
)
def check_chunk_counts(
    answer: Any,
    payload_sizes: Sequence[int] = (1010, 1011, 3030, 3031, 10_000),
    max_message_size: int = 1024,
    producer_name: str = "uploader",
) -> CheckResult:
    """Check ``answer`` = the list of chunk counts, one per payload size (see `chunk_counts_answer`)."""
    want = chunk_counts_answer(payload_sizes, max_message_size, producer_name)
    if not isinstance(answer, (list, tuple)) or len(answer) != len(want):
        return failed([f"answer should be a list of {len(want)} chunk counts, one per payload"])
    problems = []
    for seq, (size, w, g) in enumerate(zip(payload_sizes, want, answer)):
        if g == w:
            continue
        meta = cpp_metadata_size(producer_name, OutgoingMessage(bytes(size), seq, publish_time=0), 0)
        chunk = max_message_size - meta
        hints = []
        if g == -(-size // max_message_size):
            hints.append(
                f"every chunk carries its own metadata, so a chunk holds maxMessageSize - metadata = "
                f"{max_message_size} - {meta} = {chunk} payload bytes"
            )
        if g == size // chunk and size % chunk:
            hints.append(f"the last, shorter chunk counts too (round up: ceil({size} / {chunk}))")
        problems.append(
            f"{size} bytes go out as {w} chunk(s); you said {g!r}" + (": " + "; ".join(hints) if hints else "")
        )
    if problems:
        return failed(problems, hint="Count the chunk_published events: lab.events.of_kind('chunk_published').")
    return passed(
        f"chunk counts {want}: each chunk carries its own metadata, so a chunk holds maxMessageSize minus the "
        "metadata, and the last, shorter chunk counts too."
    )


# ---------------------------------------------------------------------------------------------
# Exercise 3: what the message id looks like


def message_ids_answer(payload_sizes: Sequence[int], max_message_size: int = 1024) -> list[str]:
    """``str(producer.send(...))`` for each payload, sent in order by a chunking producer on a fresh topic."""
    lab = _lab(max_message_size)
    producer = lab.client().create_producer(TOPIC, producer_name="uploader", chunking_enabled=True)
    return [str(producer.send(bytes(size))) for size in payload_sizes]


@exercise(
    todo="write the list of printed message ids (str of what send() returns), one per send",
    see=(
        'Lab 8, section 3 ("The message id")',
        "docs/guide/chunked-messages.md#chunk-message-id",
    ),
)
def check_message_ids(
    answer: Any, payload_sizes: Sequence[int] = (3000, 100, 2000), max_message_size: int = 1024
) -> CheckResult:
    """Check ``answer`` = the printed message id of each send (see `message_ids_answer`)."""
    want = message_ids_answer(payload_sizes, max_message_size)
    if not isinstance(answer, (list, tuple)) or len(answer) != len(want):
        return failed([f"answer should be a list of {len(want)} message ids as strings"])
    problems = []
    for size, w, g in zip(payload_sizes, want, answer):
        if g == w:
            continue
        line = f"the {size}-byte message gets id {w}; you said {g!r}"
        if ";" in w and isinstance(g, str) and g == w.split(";")[1]:
            line += (
                ": a chunked message's id is a ChunkMessageId - it equals its last chunk's id but prints the "
                "first chunk's id too, 'first;last'"
            )
        elif ";" in w and isinstance(g, str) and g == w.split(";")[0]:
            line += ": the id prints first;last - and it compares equal to the LAST chunk's id"
        elif ";" not in w and isinstance(g, str) and ";" in g:
            line += ": a message that fits in one entry is not chunked and gets a plain id"
        elif isinstance(g, str) and g.count(":") == 1:
            line += ": a message id prints ledger:entry:partition (-1 on a topic without partitions)"
        problems.append(line)
    if problems:
        return failed(problems, hint="Each chunk is its own ledger entry: count the entries before each message.")
    return passed(
        f"ids {want}: every chunk is its own ledger entry, and a chunked message's id prints its first and last "
        "chunk (first;last); a message that fits in one entry gets a plain id."
    )


# ---------------------------------------------------------------------------------------------
# Exercise 4: the consumer's pending map and its limits


def pending_map_answer(
    producers: int = 3,
    max_pending: int = 2,
    auto_ack: bool = True,
    payload_size: int = 2500,
    max_message_size: int = 1024,
) -> dict[str, list[str]]:
    """``{"received": [...], "evicted": [...]}``: the uuids an Exclusive consumer assembles and the ones it evicts
    when ``producers`` producers (p0, p1, ...) each send one message at t = 0, their chunks interleaved."""
    lab = _lab(max_message_size)
    client = lab.client()
    consumer = client.subscribe(
        TOPIC,
        "sub",
        consumer_name="c1",
        max_pending_chunked_message=max_pending,
        auto_ack_oldest_chunked_message_on_queue_full=auto_ack,
    )
    for i in range(producers):
        client.create_producer(
            TOPIC, producer_name=f"p{i}", chunking_enabled=True, lab_chunk_send_interval_ms=1
        ).send_async(bytes(payload_size), None)
    lab.run_until(100)
    received = []
    while consumer.receiver_queue:
        message = consumer.receive(0)
        received.append(_uuid_of(lab, message.message_id()))
    evicted = [e.uuid for e in lab.events.of_kind("chunked_message_evicted") if e.cause == "queue full"]
    return {"received": received, "evicted": evicted}


def _uuid_of(lab: Lab, message_id: Any) -> str:
    topic = lab.service.get_topic(lab.service.normalize(TOPIC))
    return topic.ledger.read_entry(Position(message_id.ledger, message_id.entry)).metadata.uuid


@exercise(
    todo='write {"received": [uuids the consumer assembles], "evicted": [uuids it evicts]}',
    see=(
        'Lab 8, section 4 ("Several producers: interleaved chunks and the pending map")',
        "docs/guide/chunked-messages.md#reassembly",
        "docs/guide/chunked-messages.md#chunk-expiry",
    ),
)
def check_pending_map(answer: Any, producers: int = 3, max_pending: int = 2, auto_ack: bool = True) -> CheckResult:
    """Check ``answer`` = ``{"received": [uuids], "evicted": [uuids]}`` (see `pending_map_answer`)."""
    if not isinstance(answer, dict) or set(answer) != {"received", "evicted"}:
        return failed(['answer should be a dict {"received": ["p1-0", ...], "evicted": ["p0-0", ...]}'])
    want = pending_map_answer(producers, max_pending, auto_ack)
    problems = []
    for key in ("evicted", "received"):
        got = answer[key]
        if not isinstance(got, (list, tuple)) or not all(isinstance(u, str) for u in got):
            problems.append(f"{key}: give a list of uuids like 'p0-0' (producer name, '-', sequence id)")
            continue
        if list(got) == want[key]:
            continue
        line = f"{key}: {want[key]}; you said {list(got)}"
        if key == "evicted" and want["evicted"] and list(got) == [f"p{producers - 1}-0"]:
            line += (
                ": the consumer does not refuse the newest message - chunk 0 of a new message is stored and the "
                "OLDEST pending message is removed (removeOldestPendingChunkedMessage)"
            )
        elif key == "evicted" and not want["evicted"] and got:
            line += f": {producers} messages fit in max_pending_chunked_message={max_pending}"
        elif key == "received" and set(got) == set(want["received"]) | set(want["evicted"]):
            line += (
                ": an evicted message is never delivered in part; its later chunks arrive with no pending "
                "context (unknown uuid) and are discarded"
            )
        problems.append(line)
    if problems:
        return failed(problems, hint="Step through the chunk reassembly view and watch the pending map fill.")
    return passed(
        f"received {want['received']}, evicted {want['evicted']}: when the pending map is full, chunk 0 of a new "
        "message evicts the OLDEST pending message, whose later chunks are then discarded."
    )


# ---------------------------------------------------------------------------------------------
# Exercise 5: what a Shared subscription does with chunks


def shared_answer(
    messages_per_producer: int = 2, producers: int = 2, consumers: int = 2, max_message_size: int = 1024
) -> dict[str, str]:
    """uuid -> the name of the Shared consumer that got every chunk of it (c1, c2, ...), chunks interleaved."""
    lab = _lab(max_message_size)
    client = lab.client()
    subs = [
        client.subscribe(TOPIC, "workers", consumer_type=ConsumerType.Shared, consumer_name=f"c{i + 1}")
        for i in range(consumers)
    ]
    for i in range(producers):
        p = client.create_producer(TOPIC, producer_name=f"p{i}", chunking_enabled=True, lab_chunk_send_interval_ms=1)
        for _ in range(messages_per_producer):
            p.send_async(bytes(2500), None)
    lab.run_until(100)
    out: dict[str, str] = {}
    for consumer in subs:
        while consumer.receiver_queue:
            out[_uuid_of(lab, consumer.receive(0).message_id())] = consumer.consumer_name()
    return dict(sorted(out.items()))


@exercise(
    todo="write {uuid: the name of the consumer that gets it}",
    see=(
        'Lab 8, section 5 ("Shared subscriptions")',
        "docs/guide/chunked-messages.md#chunks-on-shared",
    ),
)
def check_shared(answer: Any, messages_per_producer: int = 2, producers: int = 2, consumers: int = 2) -> CheckResult:
    """Check ``answer`` = ``{uuid: consumer name}`` (see `shared_answer`)."""
    want = shared_answer(messages_per_producer, producers, consumers)
    if not isinstance(answer, dict):
        return failed([f"answer should be a dict {{uuid: consumer name}} with the uuids {sorted(want)}"])
    problems = []
    missing = sorted(set(want) - set(answer))
    if missing:
        problems.append(f"no consumer given for {missing}")
    extra = sorted(set(answer) - set(want))
    if extra:
        problems.append(f"{extra} are not uuids of this run; they are {sorted(want)}")
    wrong = [u for u in want if u in answer and answer[u] != want[u]]
    for u in wrong:
        problems.append(f"{u} goes to {want[u]}; you said {answer[u]!r}")
    if wrong:
        problems.append(
            "the broker's round robin picks a consumer for each chunk 0 (the entries of a read go to "
            "the next consumer in turn) and SharedConsumerAssignor pins the message there: every later "
            "chunk of that uuid follows chunk 0, whatever the round robin says"
        )
    if problems:
        return failed(problems, hint="lab.events.of_kind('chunk_pinned') lists the pins in order.")
    return passed(
        f"{want}: the round robin picks a consumer for each chunk 0 and SharedConsumerAssignor pins the rest of "
        "that message's chunks to it."
    )


# ---------------------------------------------------------------------------------------------
# Exercise 6: batching vs chunking


def batching_and_chunking_answer() -> dict[str, str]:
    """``{"exception": class name, "message": text}`` of the Python client's ``create_producer(batching_enabled=True,
    chunking_enabled=True)``."""
    lab = _lab(1024)
    try:
        lab.client().create_producer(TOPIC, batching_enabled=True, chunking_enabled=True)
    except Exception as error:  # the answer is whatever the model raises
        return {"exception": type(error).__name__, "message": str(error)}
    raise AssertionError("the model accepted batching with chunking")  # pragma: no cover - a model bug


@exercise(
    todo='write {"exception": the class name create_producer raises, "message": its text}',
    see=(
        'Lab 8, section 6 ("Batching vs chunking")',
        "docs/guide/chunked-messages.md#chunk-count",
    ),
)
def check_batching_and_chunking(answer: Any) -> CheckResult:
    """Check ``answer`` = ``{"exception": "...", "message": "..."}`` (see `batching_and_chunking_answer`)."""
    if not isinstance(answer, dict) or set(answer) != {"exception", "message"}:
        return failed(['answer should be a dict {"exception": "ClassName", "message": "the text"}'])
    want = batching_and_chunking_answer()
    problems = []
    if answer["exception"] != want["exception"]:
        line = f"create_producer raises {want['exception']}; you said {answer['exception']!r}"
        if answer["exception"] == "IllegalArgumentException":
            line += (
                ": the Java client's ProducerBuilder throws that (4.x as a failed future); the Python client "
                "checks first and raises a plain ValueError"
            )
        problems.append(line)
    got = answer["message"]
    if got != want["message"]:
        line = f"the text is {want['message']!r}; you said {got!r}"
        if isinstance(got, str) and got + "." == want["message"]:
            line += ": the Python client's text ends with a full stop (the Java and C++ texts do not)"
        problems.append(line)
    if problems:
        return failed(problems, hint="Try it in a cell, inside try/except.")
    return passed(
        f"{want['exception']}: {want['message']} The Python client checks the two settings itself, before "
        "anything reaches the broker."
    )


__all__ = [
    "batching_and_chunking_answer",
    "check_batching_and_chunking",
    "check_chunk_counts",
    "check_message_ids",
    "check_pending_map",
    "check_shared",
    "check_too_big",
    "chunk_counts_answer",
    "message_ids_answer",
    "pending_map_answer",
    "shared_answer",
    "too_big_answer",
]
