"""Producer batching containers: entry shapes, keys, sequence ids and space rules (pulsarlab.client.batching)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.client.batching import (
    DEFAULT_MAX_MESSAGE_SIZE,
    BatchingType,
    BatchMessageContainer,
    ClientLibrary,
    KeyBasedBatchMessageContainer,
    OutgoingMessage,
    make_container,
    non_batched_entry,
)
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.hashing import murmur3_32
from pulsarlab.profiles import get_profile

JAVA, CPP = ClientLibrary.JAVA, ClientLibrary.CPP
SETTINGS = settings(max_examples=60, deadline=None)


def msg(seq: int, key: str | None = None, *, payload: bytes | None = None, **kw) -> OutgoingMessage:
    return OutgoingMessage(
        payload=payload if payload is not None else f"m{seq}".encode(), sequence_id=seq, partition_key=key, **kw
    )


def fill(container, messages) -> None:
    for m in messages:
        container.add(m)


# ---------------------------------------------------------------------------------------------
# Default container


@pytest.mark.parametrize("client", [JAVA, CPP])
def test_default_batch_is_one_entry_keyed_by_its_first_message(client):
    c = BatchMessageContainer("p", client=client)
    sent = [
        msg(5, "k1", publish_time=100, properties={"a": "1"}, event_time=7),
        msg(6, "k2", publish_time=101),
        msg(7, None, publish_time=102),
        msg(8, "k1", publish_time=103),
    ]
    fill(c, sent)
    [(entry, held)] = c.flush(publish_time=999)
    md = entry.metadata
    assert held == sent
    assert md.is_batch and md.num_messages_in_batch == 4
    assert md.partition_key == "k1" and md.ordering_key is None
    assert md.producer_name == "p"
    assert md.sequence_id == 5
    assert md.publish_time == 100  # the first message's stamp, not the flush time
    assert md.properties == {} and md.event_time == 0  # per-message fields live in SingleMessageMetadata
    assert md.highest_sequence_id == (8 if client is JAVA else None)
    for (single, payload), m in zip(entry.messages, sent):
        assert payload == m.payload and single.payload_size == len(m.payload)
        assert (single.partition_key, single.sequence_id, single.properties, single.event_time) == (
            m.partition_key,
            m.sequence_id,
            m.properties,
            m.event_time,
        )
    # The broker routes the entry by the first key (reference §1.2) - whatever the others are.
    for version in ("3.0", "4.0"):
        assert md.sticky_key(get_profile(version)) == b"k1"


def test_ordering_key_of_the_first_message_is_copied():
    c = BatchMessageContainer("p")
    fill(c, [msg(1, "pk", ordering_key=b"ok"), msg(2, "other", ordering_key=b"zz")])
    [(entry, _)] = c.flush(0)
    assert entry.metadata.ordering_key == b"ok" and entry.metadata.partition_key == "pk"
    assert entry.metadata.sticky_key(get_profile("4.0")) == b"ok"  # the ordering key wins (§1.2)


def test_flush_time_is_used_when_messages_carry_no_stamp():
    c = BatchMessageContainer("p")
    fill(c, [msg(1), msg(2)])
    [(entry, _)] = c.flush(publish_time=42)
    assert entry.metadata.publish_time == 42


def test_java_sends_a_batch_of_one_as_a_plain_entry():
    c = BatchMessageContainer("p", client=JAVA)
    m = msg(3, "k", ordering_key=b"o", properties={"x": "y"}, event_time=9, publish_time=11)
    c.add(m)
    [(entry, held)] = c.flush(50)
    md = entry.metadata
    assert held == [m]
    assert not md.is_batch and md.message_count == 1
    assert entry.messages == [(None, m.payload)]
    assert (md.sequence_id, md.partition_key, md.ordering_key, md.properties, md.event_time, md.publish_time) == (
        3,
        "k",
        b"o",
        {"x": "y"},
        9,
        11,
    )
    assert md.highest_sequence_id is None
    assert md.uncompressed_size == len(m.payload)


def test_cpp_sends_a_batch_of_one_as_a_batch():
    c = BatchMessageContainer("p", client=CPP)
    c.add(msg(3, "k"))
    [(entry, _)] = c.flush(50)
    assert entry.metadata.is_batch and entry.metadata.num_messages_in_batch == 1
    assert entry.metadata.sequence_id == 3 and entry.metadata.highest_sequence_id is None
    assert entry.messages[0][0].sequence_id == 3


def test_flush_empties_the_container():
    c = BatchMessageContainer("p")
    assert c.is_empty() and c.flush(0) == []
    fill(c, [msg(1), msg(2)])
    assert not c.is_empty() and c.num_messages == 2 and c.current_bytes == 4
    c.flush(0)
    assert c.is_empty() and c.num_messages == 0 and c.current_bytes == 0 and c.flush(0) == []


def test_is_first_message_to_add():
    c = BatchMessageContainer("p")
    assert c.is_first_message_to_add(msg(1))
    c.add(msg(1))
    assert not c.is_first_message_to_add(msg(2))
    k = KeyBasedBatchMessageContainer("p")
    k.add(msg(1, "a"))
    assert not k.is_first_message_to_add(msg(2, "a")) and k.is_first_message_to_add(msg(3, "b"))


def test_delayed_messages_are_refused_and_sent_alone():
    m = msg(4, "k", deliver_at=5000)
    for cls in (BatchMessageContainer, KeyBasedBatchMessageContainer):
        with pytest.raises(ValueError, match="delayed messages are never batched"):
            cls("p").add(m)
    entry = non_batched_entry("p", m, publish_time=10)
    assert entry.metadata.deliver_at_time == 5000 and not entry.metadata.is_batch
    assert entry.metadata.publish_time == 10 and entry.metadata.sequence_id == 4


# ---------------------------------------------------------------------------------------------
# Key-based container


def test_key_based_example_of_pull_15413():
    # The Java client's own example (BatchMessageKeyBasedContainer#createOpSendMsgs): A has 0, 3, 4 and
    # B has 1, 2; each sub-batch takes its highest id and B (2) is sent before A (4).
    c = KeyBasedBatchMessageContainer("p", client=JAVA)
    fill(c, [msg(0, "A"), msg(1, "B"), msg(2, "B"), msg(3, "A"), msg(4, "A")])
    out = c.flush(0)
    assert [e.metadata.partition_key for e, _ in out] == ["B", "A"]
    assert [(e.metadata.sequence_id, e.metadata.highest_sequence_id) for e, _ in out] == [(2, 2), (4, 4)]
    assert [[m.sequence_id for m in held] for _, held in out] == [[1, 2], [0, 3, 4]]


def test_key_based_cpp_uses_the_first_id():
    c = KeyBasedBatchMessageContainer("p", client=CPP)
    fill(c, [msg(0, "A"), msg(1, "B"), msg(2, "B"), msg(3, "A"), msg(4, "A")])
    out = c.flush(0)
    assert [(e.metadata.partition_key, e.metadata.sequence_id) for e, _ in out] == [("A", 0), ("B", 1)]
    assert all(e.metadata.highest_sequence_id is None for e, _ in out)


keyed_sends = st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=40)


@SETTINGS
@given(keys=keyed_sends, client=st.sampled_from([JAVA, CPP]))
def test_key_based_one_entry_per_key_sorted_by_its_id(keys, client):
    c = KeyBasedBatchMessageContainer("p", client=client)
    sent = [msg(i, k) for i, k in enumerate(keys)]
    fill(c, sent)
    assert c.num_batches == len(set(keys)) == len({c.batch_key(m) for m in sent})
    out = c.flush(0)
    # every message exactly once, and per key in send order
    assert sorted(m.sequence_id for _, held in out for m in held) == list(range(len(keys)))
    for entry, held in out:
        assert len({m.partition_key for m in held}) == 1
        assert [m.sequence_id for m in held] == sorted(m.sequence_id for m in held)
        assert entry.metadata.partition_key == held[0].partition_key
        expected_id = held[-1].sequence_id if client is JAVA else held[0].sequence_id
        assert entry.metadata.sequence_id == expected_id
        if entry.metadata.is_batch:
            assert [s.sequence_id for s, _ in entry.messages] == [m.sequence_id for m in held]
        else:
            assert client is JAVA and len(held) == 1
    ids = [e.metadata.sequence_id for e, _ in out]
    assert ids == sorted(ids) and len(out) == len(set(keys))


def test_key_based_sticky_key_differs_from_default_batching():
    keys = ["k1", "k2", "k3", "k1", "k2", "k3"]
    default = BatchMessageContainer("p")
    keyed = KeyBasedBatchMessageContainer("p")
    for i, k in enumerate(keys):
        default.add(msg(i, k))
        keyed.add(msg(i, k))
    profile = get_profile("4.0")
    [(entry, _)] = default.flush(0)
    assert {murmur3_32(entry.metadata.sticky_key(profile))} == {murmur3_32("k1")}  # everything goes k1's way
    hashes = {murmur3_32(e.metadata.sticky_key(profile)) for e, _ in keyed.flush(0)}
    assert hashes == {murmur3_32(k) for k in ("k1", "k2", "k3")}


def test_key_based_group_keys_per_client():
    # Java: Base64(ordering key) else the key (None its own group); C++: raw ordering key else key or "".
    ordered = msg(1, None, ordering_key=b"k")
    keyed = msg(2, "k")
    empty = msg(3, "")
    keyless = msg(4, None)
    java = KeyBasedBatchMessageContainer("p", client=JAVA)
    assert java.batch_key(ordered) == base64.b64encode(b"k").decode() == "aw=="
    assert [java.batch_key(m) for m in (keyed, empty, keyless)] == ["k", "", None]
    fill(java, [ordered, keyed, empty, keyless])
    assert java.num_batches == 4
    cpp = KeyBasedBatchMessageContainer("p", client=CPP)
    fill(cpp, [ordered, keyed, empty, keyless])
    assert cpp.num_batches == 2  # b"k" with "k", and "" with no key
    first, second = cpp.flush(0)
    assert [m.sequence_id for m in first[1]] == [1, 2] and first[0].metadata.ordering_key == b"k"
    assert [m.sequence_id for m in second[1]] == [3, 4] and second[0].metadata.partition_key == ""


# ---------------------------------------------------------------------------------------------
# Space rules


@pytest.mark.parametrize("client", [JAVA, CPP])
@pytest.mark.parametrize("cls", [BatchMessageContainer, KeyBasedBatchMessageContainer])
def test_message_count_limit(cls, client):
    c = cls("p", max_messages=3, client=client)
    assert [c.add(msg(i, str(i))) for i in range(3)] == [False, False, True]
    assert c.is_full() and not c.has_space_for(msg(3))


@pytest.mark.parametrize("client", [JAVA, CPP])
def test_byte_limit_is_inclusive(client):
    c = BatchMessageContainer("p", max_bytes=10, client=client)
    assert c.has_space_for(msg(0, payload=b"x" * 10))
    assert c.add(msg(0, payload=b"x" * 4)) is False
    assert c.has_space_for(msg(1, payload=b"x" * 6)) and not c.has_space_for(msg(1, payload=b"x" * 7))
    assert c.add(msg(1, payload=b"x" * 6)) is True  # 10 >= 10: full
    assert c.current_bytes == 10


@pytest.mark.parametrize("client", [JAVA, CPP])
def test_an_oversize_first_message_still_goes_in_alone(client):
    c = BatchMessageContainer("p", max_bytes=10, client=client)
    big = msg(0, payload=b"x" * 50)
    assert not c.has_space_for(big)  # Pulsar's rule is plain arithmetic, even when empty
    assert c.flush(0) == []  # so the producer's "flush first" is a no-op ...
    assert c.add(big) is True  # ... and the message is added and makes the batch full
    [(entry, held)] = c.flush(0)
    assert held == [big] and entry.size == 50


def test_java_non_positive_limits_mean_unlimited_and_max_message_size():
    c = BatchMessageContainer("p", max_messages=0, max_bytes=0, client=JAVA)
    fill(c, [msg(i) for i in range(5000)])
    assert not c.is_full() and c.has_space_for(msg(1))
    assert c.has_space_for(msg(1, payload=b"x" * (DEFAULT_MAX_MESSAGE_SIZE - c.current_bytes)))
    assert not c.has_space_for(msg(1, payload=b"x" * (DEFAULT_MAX_MESSAGE_SIZE - c.current_bytes + 1)))


def test_cpp_rejects_max_messages_of_one():
    with pytest.raises(IllegalArgumentException, match="^batchingMaxMessages needs to be greater than 1$"):
        BatchMessageContainer("p", max_messages=1, client=CPP)
    with pytest.raises(IllegalArgumentException):
        make_container(BatchingType.KeyBased, "p", max_bytes=-1, client=CPP)


@SETTINGS
@given(
    sizes=st.lists(st.integers(0, 60), min_size=1, max_size=60),
    max_messages=st.integers(2, 6),
    max_bytes=st.integers(1, 100),
    batching_type=st.sampled_from(list(BatchingType)),
    client=st.sampled_from([JAVA, CPP]),
)
def test_producer_loop_respects_limits(sizes, max_messages, max_bytes, batching_type, client):
    """Drive a container the way both producers do: flush when there is no space, add, flush when full."""
    c = make_container(batching_type, "p", max_messages, max_bytes, client=client)
    batches: list[list[OutgoingMessage]] = []
    current: list[OutgoingMessage] = []  # what the container holds, tracked independently

    def flush():
        out = c.flush(0)
        assert sorted(m.sequence_id for _, held in out for m in held) == [m.sequence_id for m in current]
        if out:
            batches.append(list(current))
        current.clear()

    for i, size in enumerate(sizes):
        m = msg(i, f"k{i % 3}", payload=b"x" * size)
        fits = len(current) < max_messages and sum(len(p.payload) for p in current) + size <= max_bytes
        assert c.has_space_for(m) == fits
        if not fits:
            flush()
        current.append(m)
        full = len(current) >= max_messages or sum(len(p.payload) for p in current) >= max_bytes
        assert c.add(m) == full
        if full:
            flush()
    flush()
    assert [m.sequence_id for b in batches for m in b] == list(range(len(sizes)))
    for b in batches:
        assert len(b) <= max_messages
        assert len(b) == 1 or sum(len(m.payload) for m in b) <= max_bytes


# ---------------------------------------------------------------------------------------------
# Factory and bad input


def test_make_container():
    assert type(make_container(BatchingType.Default, "p", 10, 100)) is BatchMessageContainer
    kb = make_container(BatchingType.KeyBased, "p", 10, 100, client=CPP)
    assert type(kb) is KeyBasedBatchMessageContainer and kb.client is CPP and kb.max_messages == 10
    with pytest.raises(TypeError, match="BatchingType"):
        make_container("KeyBased", "p", 10, 100)  # type: ignore[arg-type]


def test_bad_input_fails_clearly():
    with pytest.raises(TypeError, match="max_messages must be an int"):
        BatchMessageContainer("p", max_messages="10")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="producer_name"):
        BatchMessageContainer(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="payload must be bytes"):
        BatchMessageContainer("p").add(OutgoingMessage(payload="text", sequence_id=1))  # type: ignore[arg-type]
    assert BatchingType.Default.value == 0 and BatchingType.KeyBased.value == 1  # pulsar.BatchingType
