"""Chunked messages: producer sizing and splitting, ChunkMessageId, consumer reassembly, Shared assignor.

Reproduces Pulsar's ``ChunkMessageIdImplTest`` and the chunk tests of ``MessageChunkingTest`` /
``MessageChunkingSharedTest`` (reference §9), plus the discard, eviction and expiry rules and properties
over random interleavings.
"""

from __future__ import annotations

import pickle

import pytest
from chunk_simulator import chunk_metadata, interleave_chunks, simulate_reassembly
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.dispatch.chunk_assignor import ReplayReason, SharedConsumerAssignor
from pulsarlab.client.batching import OutgoingMessage
from pulsarlab.client.chunk_reassembly import (
    ChunkAction,
    ChunkedMessageTracker,
    ChunkFate,
    DiscardReason,
)
from pulsarlab.client.chunking import (
    BATCHING_AND_CHUNKING,
    ChunkMessageId,
    check_chunking_config,
    check_message_size,
    chunk_uuid,
    plan_chunks,
    plan_for_message,
    sent_message_id,
    serialized_metadata_size,
    sizing_metadata_size,
    split_into_chunks,
)
from pulsarlab.clock import Scheduler
from pulsarlab.errors import IllegalArgumentException, InvalidMessageException
from pulsarlab.event_catalogue.chunk_reassembly import CHUNK_DISCARDED, CHUNKED_MESSAGE_ASSEMBLED
from pulsarlab.events import EventLog
from pulsarlab.ids import MessageId
from pulsarlab.messages import MessageMetadata

EPOCH_MS = 1_700_000_000_000  # a real-world publish time: Java stamps epoch milliseconds


def single_chunk(uuid: str, chunk_id: int, total: int, entry: int, at: int | None = None):
    """One delivery like ``MessageChunkingTest.sendSingleChunk``: payload ``chunk-<uuid>-<id>|``."""
    payload = f"chunk-{uuid}-{chunk_id}|".encode()
    item = (MessageId(1, entry), chunk_metadata(uuid, chunk_id, total), payload)
    return item if at is None else (*item, at)


class Recorder:
    """Callbacks of a tracker, kept for assertions."""

    def __init__(self) -> None:
        self.acked: list[MessageId] = []
        self.tracked: list[MessageId] = []
        self.permits = 0
        self.delivered = []

    def tracker(self, scheduler: Scheduler, **kwargs) -> ChunkedMessageTracker:
        return ChunkedMessageTracker(
            scheduler,
            ack=self.acked.extend,
            track=self.tracked.append,
            return_permits=self._permits,
            deliver=self.delivered.append,
            **kwargs,
        )

    def _permits(self, n: int) -> None:
        self.permits += n


def feed(tracker: ChunkedMessageTracker, *items):
    return [tracker.process_chunk(pos, md, payload) for pos, md, payload in items]


# --- ChunkMessageId (ChunkMessageIdImplTest) ---------------------------------------------------------

CHUNK_1 = ChunkMessageId(MessageId(0, 0, 0), MessageId(1, 1, 1))
CHUNK_2 = ChunkMessageId(MessageId(2, 2, 2), MessageId(3, 3, 3))


def test_chunk_message_id_equals_test():
    assert CHUNK_1 == CHUNK_1
    assert CHUNK_2 != CHUNK_1
    assert MessageId(1, 1, 1) == CHUNK_1
    assert CHUNK_1 == MessageId(1, 1, 1)
    assert MessageId(0, 0, 0) != CHUNK_1  # the first chunk's id is not the message's id


def test_chunk_message_id_compare_to_and_hash_code_tests():
    assert CHUNK_1 < CHUNK_2 and CHUNK_2 > CHUNK_1
    assert not CHUNK_2 < CHUNK_2 and not CHUNK_2 > CHUNK_2
    assert MessageId(1, 0, 1) < CHUNK_1 < MessageId(1, 2, 1)
    assert hash(CHUNK_1) == hash(ChunkMessageId(MessageId(0, 0, 0), MessageId(1, 1, 1)))
    assert hash(CHUNK_1) != hash(CHUNK_2)
    assert {MessageId(1, 1, 1): "found"}[CHUNK_1] == "found"


def test_chunk_message_id_prints_first_semicolon_last_and_survives_pickle():
    assert str(CHUNK_1) == f"{MessageId(0, 0, 0)};{MessageId(1, 1, 1)}" == "0:0:0;1:1:1"
    back = pickle.loads(pickle.dumps(CHUNK_1))
    assert isinstance(back, ChunkMessageId) and back.first == MessageId(0, 0, 0) and back == CHUNK_1
    assert CHUNK_1.last == MessageId(1, 1, 1) and type(CHUNK_1.last) is MessageId
    with pytest.raises(TypeError):
        ChunkMessageId((0, 0), MessageId(1, 1))


def test_sent_message_id_is_plain_for_one_entry_and_chunk_id_for_several():
    ids = [MessageId(3, e) for e in range(4)]
    assert type(sent_message_id(ids[:1])) is MessageId
    chunk_id = sent_message_id(ids)
    assert isinstance(chunk_id, ChunkMessageId) and chunk_id.first == ids[0] and chunk_id == ids[-1]
    with pytest.raises(ValueError):
        sent_message_id([])


# --- producer: configuration and sizes ----------------------------------------------------------------


def test_batching_with_chunking_is_refused_thrown_on_3x_failed_future_on_4x():
    for profile, via in (("3.0", "throw"), ("4.0", "future")):
        with pytest.raises(IllegalArgumentException) as err:
            check_chunking_config(chunking_enabled=True, batching_enabled=True, profile=profile)
        assert str(err.value) == BATCHING_AND_CHUNKING == "Batching and chunking of messages can't be enabled together"
        assert err.value.via == via
    check_chunking_config(chunking_enabled=True, batching_enabled=False)
    check_chunking_config(chunking_enabled=False, batching_enabled=True)


def string_schema_message(size: int, sequence_id: int = 0) -> OutgoingMessage:
    return OutgoingMessage(payload=b"7" * size, sequence_id=sequence_id, publish_time=EPOCH_MS)


def test_chunk_size_threshold_matches_testChunkSize():
    # MessageChunkingTest.testChunkSize: maxMessageSize 50, "32 the default message metadata size for
    # string schema", so payloads <= 18 bytes get a MessageIdImpl and longer ones a ChunkMessageIdImpl.
    assert sizing_metadata_size("test-0-0", string_schema_message(1), EPOCH_MS, schema_version_size=8) == 32
    for size in range(1, 51):
        plan = plan_for_message(
            "test-0-0",
            "persistent://my-property/my-ns/test-chunk-size",
            string_schema_message(size, sequence_id=size - 1),
            EPOCH_MS,
            max_message_size=50,
            schema_version_size=8,
        )
        assert plan.payload_chunk_size == 18
        assert plan.chunked == (size > 18), size


@settings(max_examples=40, deadline=None)
@given(
    name=st.text(alphabet="abcdefghij-0123456789", min_size=8, max_size=8),
    publish=st.integers(min_value=2**35, max_value=2**42 - 1),
    seq=st.integers(min_value=0, max_value=10_000),
)
def test_metadata_size_counts_the_unassigned_sequence_id_as_zero(name, publish, seq):
    msg = OutgoingMessage(payload=b"x" * 10, sequence_id=seq, publish_time=publish)
    assert sizing_metadata_size(name, msg, 0, schema_version_size=8) == 32
    by_app = sizing_metadata_size(name, msg, 0, schema_version_size=8, sequence_id_set_by_application=True)
    assert by_app == 32 + (len(f"{seq:b}") - 1) // 7  # one more byte per further 7 bits of the id


def test_serialized_size_counts_keys_properties_and_chunk_fields():
    base = MessageMetadata("p", 1, 2, uncompressed_size=3)
    plain = serialized_metadata_size(base)
    keyed = MessageMetadata(
        "p", 1, 2, uncompressed_size=3, partition_key="k", ordering_key=b"ok", properties={"a": "bc"}
    )
    # partition key 1+1+1, ordering key (field 18: 2-byte tag) 2+1+2, property entry 1+1+(1+1+1)+(1+1+2)
    assert serialized_metadata_size(keyed) == plain + 3 + 5 + 9
    chunk = MessageMetadata(
        "p", 1, 2, uncompressed_size=3, uuid="p-1", chunk_id=0, num_chunks_from_msg=2, total_chunk_msg_size=3
    )
    assert serialized_metadata_size(chunk) == plain + (2 + 1 + 3) + 3 * 3


def test_metadata_that_exceeds_the_limit_fails_with_pulsars_text():
    msg = OutgoingMessage(payload=b"x" * 100, sequence_id=0, publish_time=EPOCH_MS)
    size = sizing_metadata_size("producer-a", msg, EPOCH_MS)
    with pytest.raises(InvalidMessageException) as err:
        plan_for_message("producer-a", "persistent://t/n/x", msg, EPOCH_MS, max_message_size=size)
    assert str(err.value) == (
        f"The producer producer-a of the topic persistent://t/n/x sends a message with "
        f"{size} bytes metadata that exceeds {size} bytes"
    )
    assert plan_for_message("producer-a", "t", msg, EPOCH_MS, max_message_size=size + 1).total_chunks == 100


def test_oversize_message_without_chunking_fails_with_pulsars_text():
    check_message_size(50, 50, producer_name="p", topic="t")
    with pytest.raises(InvalidMessageException) as err:
        check_message_size(51, 50, producer_name="p", topic="persistent://a/b/c")
    assert str(err.value) == (
        "The producer p of the topic persistent://a/b/c sends a  message with 51 bytes that exceeds 50 bytes"
    )
    with pytest.raises(InvalidMessageException, match="sends a Compressed message"):
        check_message_size(51, 50, producer_name="p", topic="t", compressed=True)


def test_chunk_max_message_size_caps_chunks_like_MessageChunkingSharedTest():
    # createChunkedMessage(n) with chunkMaxMessageSize 100: (n - 1) * 100 + 10 bytes make n chunks.
    for n in (1, 4, 10):
        plan = plan_chunks(
            (n - 1) * 100 + 10, 30, max_message_size=5_242_880, chunk_max_message_size=100, producer_name="p", topic="t"
        )
        assert plan.total_chunks == n and plan.payload_chunk_size == 100
    capped = plan_chunks(10, 30, max_message_size=50, chunk_max_message_size=1000, producer_name="p", topic="t")
    assert capped.chunk_limit == 50 and capped.payload_chunk_size == 20


def test_protocol_notes_5120_bytes_at_1024_go_out_as_6_chunks():
    msg = OutgoingMessage(payload=bytes(range(256)) * 20, sequence_id=7, publish_time=EPOCH_MS)
    plan = plan_for_message("standalone-0-3", "t", msg, EPOCH_MS, max_message_size=1024)
    entries = split_into_chunks("standalone-0-3", msg, EPOCH_MS, plan)
    assert len(entries) == 6
    assert [e.metadata.chunk_id for e in entries] == list(range(6))
    assert {e.metadata.total_chunk_msg_size for e in entries} == {5120}
    assert {e.metadata.uuid for e in entries} == {"standalone-0-3-7"}


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(min_value=0, max_value=3000),
    max_size=st.integers(min_value=60, max_value=400),
    chunk_max=st.integers(min_value=-1, max_value=300),
    seq=st.integers(min_value=0, max_value=5000),
    key=st.one_of(st.none(), st.binary(min_size=1, max_size=8)),
)
def test_split_keeps_sequence_id_key_and_bytes_on_every_chunk(size, max_size, chunk_max, seq, key):
    payload = bytes((i * 7) % 251 for i in range(size))
    msg = OutgoingMessage(
        payload=payload, sequence_id=seq, properties={"p": "v"}, partition_key="pk", ordering_key=key, publish_time=5
    )
    plan = plan_for_message("prod", "t", msg, 5, max_message_size=max_size, chunk_max_message_size=chunk_max)
    entries = split_into_chunks("prod", msg, 5, plan)
    assert b"".join(e.messages[0][1] for e in entries) == payload
    assert len(entries) == plan.total_chunks == -(-max(1, size) // plan.payload_chunk_size)
    assert all(len(e.messages[0][1]) <= plan.payload_chunk_size for e in entries)
    for i, entry in enumerate(entries):
        md = entry.metadata
        assert md.sequence_id == seq and md.ordering_key == key and md.partition_key == "pk"
        assert md.properties == {"p": "v"} and md.publish_time == 5
        if plan.chunked:
            assert (md.uuid, md.chunk_id, md.num_chunks_from_msg) == (chunk_uuid("prod", seq), i, len(entries))
            assert md.total_chunk_msg_size == size and md.is_chunk
        else:
            assert md.uuid is None and md.chunk_id is None and not md.is_chunk
    # what the producer reserved for metadata keeps each chunk's size within maxMessageSize
    assert plan.payload_chunk_size + plan.metadata_size <= max_size


# --- consumer: MessageChunkingTest ---------------------------------------------------------------------


def test_max_pending_chunk_messages():
    # testMaxPendingChunkMessages: maxPendingChunkedMessage 1 with auto-ack; uuid 0 is discarded.
    rec = Recorder()
    tracker = rec.tracker(
        Scheduler(), max_pending_chunked_message=1, auto_ack_oldest_chunked_message_on_queue_full=True
    )
    out = feed(tracker, single_chunk("0", 0, 2, 0)[:3], single_chunk("1", 0, 2, 1)[:3], single_chunk("1", 1, 2, 2)[:3])
    assert rec.delivered[0].payload == b"chunk-1-0|chunk-1-1|"
    assert rec.acked == [MessageId(1, 0)]  # the evicted uuid 0's chunk
    assert out[2].message.chunk_ids == (MessageId(1, 1), MessageId(1, 2))
    late = tracker.process_chunk(*single_chunk("0", 1, 2, 3)[:3])
    assert late.fate is ChunkFate.DISCARDED and late.reason is DiscardReason.UNKNOWN_UUID
    assert len(rec.delivered) == 1


def test_resend_chunk_messages_permits_end_at_8():
    # testResendChunkMessages. Modelled set-up: receiver queue 1000, so FLOW is sent only once 500
    # permits are back; every non-final chunk returns one permit when processed and every message the
    # application receives returns one (messageProcessed). Six non-final chunks + two messages = 8.
    receiver_queue_size, available, flows = 1000, [0], []

    def increase(n: int) -> None:  # ConsumerImpl.increaseAvailablePermits
        available[0] += n
        if available[0] >= receiver_queue_size // 2:
            flows.append(available[0])
            available[0] = 0

    rec = Recorder()
    tracker = ChunkedMessageTracker(
        Scheduler(),
        max_pending_chunked_message=10,
        auto_ack_oldest_chunked_message_on_queue_full=True,
        ack=rec.acked.extend,
        return_permits=increase,
        deliver=rec.delivered.append,
    )
    sends = [("0", 0, 2), ("0", 0, 2), ("1", 0, 3), ("1", 1, 3), ("1", 0, 3), ("0", 1, 2)]
    for entry, (uuid, cid, total) in enumerate(sends):
        tracker.process_chunk(*single_chunk(uuid, cid, total, entry)[:3])
    assert [m.payload for m in rec.delivered] == [b"chunk-0-0|chunk-0-1|"]
    increase(1)  # the application receives it
    for entry, (uuid, cid, total) in enumerate([("1", 1, 3), ("1", 2, 3)], start=len(sends)):
        tracker.process_chunk(*single_chunk(uuid, cid, total, entry)[:3])
    assert [m.payload for m in rec.delivered][1] == b"chunk-1-0|chunk-1-1|chunk-1-2|"
    increase(1)
    assert available[0] == 8 and flows == []
    # the resent chunk 0s were at new positions: the older copies were acked as corrupt
    assert rec.acked == [MessageId(1, 0), MessageId(1, 2), MessageId(1, 3)]
    assert rec.delivered[1].chunk_ids == (MessageId(1, 4), MessageId(1, 6), MessageId(1, 7))


def test_resend_chunk_messages_without_ack_hole():
    # testResendChunkMessagesWithoutAckHole: after acking the message no individually deleted range remains.
    rec = Recorder()
    tracker = rec.tracker(Scheduler(), auto_ack_oldest_chunked_message_on_queue_full=True)
    items = [single_chunk("0", 0, 2, 0)[:3], single_chunk("0", 0, 2, 1)[:3], single_chunk("0", 1, 2, 2)[:3]]
    feed(tracker, *items)
    (message,) = rec.delivered
    assert message.payload == b"chunk-0-0|chunk-0-1|"
    acked = set(rec.acked) | set(message.chunk_ids)  # the application's ack expands to every chunk
    assert acked == {position for position, _, _ in items}
    assert str(message.message_id) == f"{items[1][0]};{items[2][0]}"


def test_expire_incomplete_chunk_message():
    # testExpireIncompleteChunkMessage: one chunk of two; expiry set to 1 ms; after 10 ms the map is empty.
    scheduler = Scheduler()
    rec = Recorder()
    tracker = rec.tracker(scheduler)
    md = chunk_metadata("123", 0, 2, producer_name="test", sequence_id=1, publish_time=10)
    tracker.process_chunk(MessageId(5, 0), md, b"message-1")
    assert len(tracker.chunked_messages) == 1
    tracker.expire_time_of_incomplete_chunked_message_ms = 1
    scheduler.advance(10)
    assert tracker.remove_expired() == ["123"]
    assert tracker.chunked_messages == {} and rec.acked == [MessageId(5, 0)]
    assert tracker.pending_chunked_message_count == 0


def test_expiry_task_acks_an_incomplete_message_after_one_to_two_periods():
    scheduler = Scheduler()
    rec = Recorder()
    expiry = 1000
    tracker = rec.tracker(scheduler, expire_time_of_incomplete_chunked_message_ms=expiry)
    tracker.process_chunk(*single_chunk("a", 0, 2, 0)[:3])  # starts the fixed-rate task at t=0
    scheduler.advance(300)
    tracker.process_chunk(*single_chunk("b", 0, 3, 1)[:3])
    gone: dict[str, int] = {}
    while tracker.chunked_messages:
        deadline = scheduler.next_deadline()
        assert deadline is not None
        scheduler.run_until(deadline)
        for uuid in ("a", "b"):
            if uuid not in tracker.chunked_messages and uuid not in gone:
                gone[uuid] = scheduler.now()
    assert expiry < gone["a"] <= 2 * expiry
    assert expiry < gone["b"] - 300 <= 2 * expiry
    assert (gone["a"] % expiry, gone["b"] % expiry) == (0, 0)  # on the task's fixed-rate instants
    assert set(rec.acked) == {MessageId(1, 0), MessageId(1, 1)}
    assert scheduler.next_deadline() is None  # idle once nothing is pending


# --- consumer: discard, eviction and Java's bookkeeping -------------------------------------------------


def test_duplicate_chunk_is_acked_only_when_it_is_another_copy():
    rec = Recorder()
    tracker = rec.tracker(Scheduler())
    feed(tracker, single_chunk("u", 0, 3, 0)[:3], single_chunk("u", 1, 3, 1)[:3])
    redelivered = tracker.process_chunk(*single_chunk("u", 1, 3, 1)[:3])  # same position
    copy = tracker.process_chunk(*single_chunk("u", 1, 3, 7)[:3])  # a second copy in the topic
    assert (redelivered.reason, redelivered.action) == (DiscardReason.DUPLICATE, ChunkAction.DROPPED)
    assert (copy.reason, copy.action) == (DiscardReason.DUPLICATE, ChunkAction.ACKED)
    assert rec.acked == [MessageId(1, 7)]
    done = tracker.process_chunk(*single_chunk("u", 2, 3, 2)[:3])
    assert done.message.payload == b"chunk-u-0|chunk-u-1|chunk-u-2|"


def test_out_of_order_chunk_drops_the_message_and_is_tracked_or_acked_by_age():
    scheduler = Scheduler()
    rec = Recorder()
    tracker = rec.tracker(scheduler, expire_time_of_incomplete_chunked_message_ms=1000)
    tracker.process_chunk(*single_chunk("u", 0, 4, 0)[:3])
    skip = tracker.process_chunk(*single_chunk("u", 2, 4, 2)[:3])
    assert (skip.reason, skip.action) == (DiscardReason.OUT_OF_ORDER, ChunkAction.TRACKED)
    assert "u" not in tracker.chunked_messages and rec.tracked == [MessageId(1, 2)]
    assert rec.acked == []  # the stored chunk 0 is neither acked nor tracked: an ack hole, as in Java
    scheduler.advance(1001)  # now > publish_time (0) + expiry
    late = tracker.process_chunk(*single_chunk("u", 3, 4, 3)[:3])
    assert (late.reason, late.action) == (DiscardReason.UNKNOWN_UUID, ChunkAction.ACKED)
    assert rec.acked == [MessageId(1, 3)]


def test_chunk_beyond_what_chunk_0_announced_is_dropped_and_tracked():
    rec = Recorder()
    tracker = rec.tracker(Scheduler())
    tracker.process_chunk(MessageId(1, 0), chunk_metadata("u", 0, 2), b"a")
    liar = tracker.process_chunk(MessageId(1, 1), chunk_metadata("u", 1, 4), b"b")  # says 4 chunks, not 2
    assert liar.fate is ChunkFate.STORED  # stored: not final by its own count
    beyond = tracker.process_chunk(MessageId(1, 2), chunk_metadata("u", 2, 4), b"c")
    assert (beyond.reason, beyond.action) == (DiscardReason.BEYOND_TOTAL, ChunkAction.TRACKED)
    assert "u" in tracker.chunked_messages and rec.tracked == [MessageId(1, 2)]
    big = ChunkedMessageTracker(Scheduler())
    big.process_chunk(MessageId(2, 0), chunk_metadata("v", 0, 2, total_chunk_msg_size=3), b"ab")
    over = big.process_chunk(MessageId(2, 1), chunk_metadata("v", 1, 2, total_chunk_msg_size=3), b"cd")
    assert over.reason is DiscardReason.BEYOND_TOTAL and over.permits_returned == 0


def test_eviction_without_auto_ack_hands_chunks_to_ack_timeout():
    rec = Recorder()
    tracker = rec.tracker(Scheduler(), max_pending_chunked_message=2)
    feed(
        tracker,
        single_chunk("a", 0, 3, 0)[:3],
        single_chunk("a", 1, 3, 1)[:3],
        single_chunk("b", 0, 2, 2)[:3],
        single_chunk("c", 0, 2, 3)[:3],
    )
    assert list(tracker.chunked_messages) == ["b", "c"]
    assert rec.tracked == [MessageId(1, 0), MessageId(1, 1)] and rec.acked == []
    assert tracker.pending_chunked_message_count == 2


def test_restart_and_completion_leave_javas_queue_and_count_as_java_does():
    scheduler = Scheduler()
    rec = Recorder()
    tracker = rec.tracker(scheduler, expire_time_of_incomplete_chunked_message_ms=100)
    feed(tracker, single_chunk("a", 0, 2, 0)[:3], single_chunk("a", 0, 2, 0)[:3])  # redelivered chunk 0
    assert rec.acked == []  # same position: not a corrupt copy
    assert tracker.pending_chunked_message_count == 2 and list(tracker.pending_uuid_queue) == ["a", "a"]
    tracker.process_chunk(*single_chunk("a", 1, 2, 1)[:3])
    assert tracker.chunked_messages == {} and tracker.pending_chunked_message_count == 1
    assert list(tracker.pending_uuid_queue) == ["a", "a"]  # completed uuids are not taken off the queue
    tracker.process_chunk(*single_chunk("b", 0, 2, 2)[:3])
    scheduler.advance(1000)
    # the head of the queue is a stale "a": the expiry task stops there and "b" stays pending
    assert "b" in tracker.chunked_messages and tracker.remove_expired() == []


def test_tracker_rejects_bad_settings_and_non_chunks():
    with pytest.raises(ValueError):
        ChunkedMessageTracker(Scheduler(), max_pending_chunked_message=-1)
    with pytest.raises(TypeError):
        ChunkedMessageTracker(Scheduler(), expire_time_of_incomplete_chunked_message_ms=1.5)
    with pytest.raises(ValueError, match="not a chunk"):
        ChunkedMessageTracker(Scheduler()).process_chunk(MessageId(1, 1), MessageMetadata("p", 0, 0), b"x")


def test_tracker_events_explain_each_step():
    log = EventLog()
    tracker = ChunkedMessageTracker(Scheduler(), events=log, consumer_id=4)
    feed(
        tracker,
        single_chunk("u", 0, 2, 0)[:3],
        single_chunk("u", 0, 2, 5)[:3],
        single_chunk("w", 1, 2, 6)[:3],
        single_chunk("u", 1, 2, 7)[:3],
    )
    kinds = [e.kind for e in log]
    assert kinds == [
        "chunk_received",
        "chunk_received",
        "chunked_message_evicted",
        "chunk_received",
        "chunk_discarded",
        "chunk_received",
        "chunked_message_assembled",
    ]
    (discard,) = log.of_kind(CHUNK_DISCARDED.name)
    assert (discard.uuid, discard.reason, discard.action) == ("w", "unknown_uuid", "tracked")
    (done,) = log.of_kind(CHUNKED_MESSAGE_ASSEMBLED.name)
    assert done.message_id == str(ChunkMessageId(MessageId(1, 5), MessageId(1, 7)))
    assert "assembled u from 2 chunks" in done.explain()


# --- properties over random interleavings -------------------------------------------------------------


@st.composite
def workloads(draw):
    """Several producers' chunked messages, each possibly redelivered from chunk 0 or with repeated chunks,
    interleaved at random; positions follow the interleaving like entries of one topic."""
    n = draw(st.integers(min_value=1, max_value=4))
    messages = []
    for p in range(n):
        size = draw(st.integers(min_value=1, max_value=200))
        payload = draw(st.binary(min_size=size, max_size=size))
        msg = OutgoingMessage(payload=payload, sequence_id=draw(st.integers(0, 3)), publish_time=0)
        plan = plan_chunks(size, 20, max_message_size=20 + draw(st.integers(8, 60)), producer_name=f"p{p}", topic="t")
        messages.append((payload, split_into_chunks(f"p{p}", msg, 0, plan)))
    sequences = []
    for payload, entries in messages:
        order = list(range(len(entries)))
        if len(entries) > 1 and draw(st.booleans()):  # broker redelivery: replay from chunk 0
            cut = draw(st.integers(1, len(entries) - 1))
            order = order[:cut] + order
        if len(entries) > 2 and draw(st.booleans()):  # a chunk delivered twice in a row
            k = draw(st.integers(1, len(entries) - 2))
            order = order[: order.index(k) + 1] + [k] + order[order.index(k) + 1 :]
        sequences.append([entries[i] for i in order])
    turns = [i for i, seq in enumerate(sequences) for _ in seq]
    turns = draw(st.permutations(turns))
    return messages, sequences, turns


def _positions(messages, sequences, turns):
    """Deliveries with positions: a chunk keeps the position of its first delivery (a redelivery)."""
    position_of: dict[int, MessageId] = {}
    per_message = []
    next_entry = 0
    for seq in sequences:
        items = []
        for entry in seq:
            if id(entry) not in position_of:
                position_of[id(entry)] = MessageId(9, next_entry)
                next_entry += 1
            items.append((position_of[id(entry)], entry.metadata, entry.messages[0][1]))
        per_message.append(items)
    return interleave_chunks(*per_message, order=turns)


@settings(max_examples=60, deadline=None)
@given(workloads())
def test_reassembly_is_byte_identical_under_any_interleaving(work):
    messages, sequences, turns = work
    timeline = simulate_reassembly(_positions(messages, sequences, turns), max_pending_chunked_message=0)
    got = sorted(payload for _, payload in timeline.delivered)
    assert got == sorted(payload for payload, _ in messages)
    assert timeline.acked == () and timeline.tracked == () and timeline.pending == ()
    non_final = sum(
        1
        for seq in sequences
        for e in seq
        if e.metadata.is_chunk and e.metadata.chunk_id != e.metadata.num_chunks_from_msg - 1
    )
    assert timeline.permits_returned == non_final


@settings(max_examples=60, deadline=None)
@given(workloads(), st.integers(min_value=1, max_value=2), st.booleans())
def test_a_full_pending_queue_never_delivers_a_partial_message(work, max_pending, auto_ack):
    messages, sequences, turns = work
    timeline = simulate_reassembly(
        _positions(messages, sequences, turns),
        max_pending_chunked_message=max_pending,
        auto_ack_oldest_chunked_message_on_queue_full=auto_ack,
    )
    sent_by_uuid = {entries[0].metadata.uuid: payload for payload, entries in messages if len(entries) > 1}
    for step in timeline.steps:
        if step.delivered is not None and step.kind == "chunk":
            assert step.delivered == sent_by_uuid[step.uuid]  # whole and byte-identical, or not at all
        assert len(step.pending) <= step.pending_count  # Java never lowers the count below the map size
        assert len(step.pending) <= max_pending
        if step.acked:  # redeliveries reuse positions and nothing is old: only evictions ack
            assert auto_ack and step.evicted
    if not auto_ack:
        assert timeline.acked == ()
        evicted = {u for s in timeline.steps for u in s.evicted}
        assert bool(timeline.tracked) == bool(evicted)


@settings(max_examples=40, deadline=None)
@given(workloads(), st.integers(min_value=50, max_value=500))
def test_incomplete_messages_expire_never_partially_delivered(work, expiry):
    messages, sequences, turns = work
    deliveries = _positions(messages, sequences, turns)
    cut = len(deliveries) // 2  # only the first half arrives, one ms apart
    timed = [(*d, k) for k, d in enumerate(deliveries[:cut])]
    timeline = simulate_reassembly(
        timed,
        max_pending_chunked_message=0,
        expire_time_of_incomplete_chunked_message_ms=expiry,
        until_ms=cut + 2 * expiry + 1,
    )
    sent = {payload for payload, _ in messages}
    assert all(payload in sent for _, payload in timeline.delivered)
    expired = {u for s in timeline.steps for u in s.expired}
    # everything incomplete expired, unless a stale uuid (completed or restarted, still queued as in Java)
    # reached the head of the queue and stopped the expiry task there
    assert not timeline.pending or timeline.uuid_queue[0] not in timeline.pending
    assert expired.isdisjoint({s.uuid for s in timeline.steps if s.delivered is not None})
    assert all(s.time > expiry for s in timeline.steps if s.kind == "expiry")


def test_simulation_timeline_of_interleaved_chunks_like_MessageChunkingSharedTest():
    # testInterleavedChunks: A-0, A-1 (chunks 0, 1 of 3), B-0, B-1 (0 of 2), then B-1's and A-1's last chunks.
    def plain(name, seq, entry):
        return MessageId(2, entry), MessageMetadata(name, seq, 0), f"{name}-{seq}".encode()

    def chunk(name, seq, cid, pieces, entry):
        md = chunk_metadata(
            f"{name}-{seq}",
            cid,
            len(pieces),
            producer_name=name,
            sequence_id=seq,
            total_chunk_msg_size=len("".join(pieces)),
        )
        return MessageId(2, entry), md, pieces[cid].encode()

    a1, b1 = ["A", "-", "1"], ["B-", "1"]
    timeline = simulate_reassembly(
        [
            plain("A", 0, 0),
            chunk("A", 1, 0, a1, 1),
            chunk("A", 1, 1, a1, 2),
            plain("B", 0, 3),
            chunk("B", 1, 0, b1, 4),
            chunk("B", 1, 1, b1, 5),
            chunk("A", 1, 2, a1, 6),
        ]
    )
    assert [p for _, p in timeline.delivered] == [b"A-0", b"B-0", b"B-1", b"A-1"]
    assert [s.pending for s in timeline.steps][4] == ("A-1", "B-1")
    assert str(timeline.delivered[3][0]) == f"{MessageId(2, 1)};{MessageId(2, 6)}"
    assert len(timeline.explain()) == len(timeline.steps)
    with pytest.raises(ValueError):
        simulate_reassembly(
            [
                (MessageId(1, 1), MessageMetadata("p", 0, 0), b"x", 5),
                (MessageId(1, 2), MessageMetadata("p", 1, 0), b"y", 4),
            ]
        )


def test_simulation_records_expiry_runs():
    timeline = simulate_reassembly(
        [single_chunk("x", 0, 2, 0, at=0)], expire_time_of_incomplete_chunked_message_ms=100, until_ms=1000
    )
    (run,) = [s for s in timeline.steps if s.kind == "expiry"]
    assert run.expired == ("x",) and run.acked == (MessageId(1, 0),) and 100 < run.time <= 200
    assert "expired x" in timeline.explain()[-1]


# --- broker: SharedConsumerAssignor ------------------------------------------------------------------


class FakeConsumer:
    def __init__(self, name: str, permits: int) -> None:
        self.name, self.permits = name, permits

    def __repr__(self) -> str:
        return self.name


class Entry:
    def __init__(self, label: str, metadata: MessageMetadata) -> None:
        self.label, self.metadata = label, metadata

    def __repr__(self) -> str:
        return self.label


def chunk_entry(uuid: str, cid: int, total: int) -> Entry:
    return Entry(f"{uuid}#{cid}", chunk_metadata(uuid, cid, total))


def plain_entry(label: str) -> Entry:
    return Entry(label, MessageMetadata("p", 0, 0))


def round_robin(consumers, start=0):
    state = {"i": start}

    def pick():
        c = consumers[state["i"] % len(consumers)]
        state["i"] += 1
        return c

    return pick


def make_assignor(consumers, start=0, **kwargs):
    return SharedConsumerAssignor(round_robin(consumers, start), lambda c: c.permits, **kwargs)


def labels(entries):
    return [e.label for e in entries]


def test_assignor_keeps_a_uuid_on_the_consumer_that_got_chunk_0():
    c1, c2 = FakeConsumer("c1", 5), FakeConsumer("c2", 5)
    assignor = make_assignor([c1, c2])
    first = assignor.assign([chunk_entry("A", 0, 3)], 2)
    assert labels(first.entries_for(c1)) == ["A#0"] and assignor.pinned_consumer("A") is c1
    assignor.default_selector = round_robin([c1, c2], start=1)  # the round robin now starts at c2
    second = assignor.assign([chunk_entry("A", 1, 3), plain_entry("P"), chunk_entry("A", 2, 3)], 2)
    assert labels(second.entries_for(c1)) == ["A#1", "A#2"] and labels(second.entries_for(c2)) == ["P"]
    assert assignor.pinned_consumer("A") is None  # dropped with the last chunk


def test_assignor_replays_a_non_first_chunk_without_a_pin_and_a_chunk_whose_consumer_is_full():
    c1, c2 = FakeConsumer("c1", 3), FakeConsumer("c2", 3)
    assignor = make_assignor([c1, c2])
    result = assignor.assign(
        [chunk_entry("Z", 1, 2), chunk_entry("A", 0, 2), plain_entry("P1"), plain_entry("P2"), chunk_entry("A", 1, 2)],
        2,
    )
    assert labels(result.entries_for(c1)) == ["A#0", "P1", "P2"]
    assert [(e.label, r) for e, r in result.replay] == [
        ("Z#1", ReplayReason.NOT_FIRST_CHUNK),
        ("A#1", ReplayReason.PINNED_CONSUMER_FULL),
    ]
    assert assignor.pinned_consumer("A") is c1


def test_assignor_with_no_permits_anywhere_releases_the_batch():
    consumers = [FakeConsumer("c1", 0), FakeConsumer("c2", 0)]
    result = make_assignor(consumers).assign([plain_entry("P"), chunk_entry("A", 0, 2)], 2)
    assert labels(result.dropped) == ["P", "A#0"] and result.assigned == [] and result.replay == []


def test_assignor_permit_bookkeeping_released_vs_pr_25620():
    def run(fix: bool):
        c1, c2 = FakeConsumer("c1", 5), FakeConsumer("c2", 2)
        assignor = make_assignor([c1, c2], permit_tracking_fix=fix)
        assignor.assign([chunk_entry("A", 0, 3)], 2)
        assignor.default_selector = round_robin([c1, c2], start=1)
        return (
            c1,
            c2,
            assignor.assign([chunk_entry("A", 1, 3), chunk_entry("A", 2, 3), plain_entry("P1"), plain_entry("P2")], 2),
        )

    c1, c2, released = run(False)
    # the chunks sent to c1 used up c2's local count: c2 gets nothing although it has 2 permits
    assert labels(released.entries_for(c1)) == ["A#1", "A#2"] and released.entries_for(c2) == []
    assert [(e.label, r) for e, r in released.replay] == [
        ("P1", ReplayReason.NO_CONSUMER),
        ("P2", ReplayReason.NO_CONSUMER),
    ]
    c1, c2, fixed = run(True)
    assert labels(fixed.entries_for(c2)) == ["P1", "P2"] and fixed.replay == []
