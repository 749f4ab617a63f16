"""Partition routing as the C++ client (under the Python pulsar-client) does it (pulsarlab.client.routing)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.client.batching import OutgoingMessage
from pulsarlab.client.routing import (
    HashingScheme,
    MessageRouter,
    MessageView,
    PartitionsRoutingMode,
    UnknownError,
    boost_hash,
    java_string_hash,
    murmur3_32_hash,
)
from pulsarlab.errors import PulsarClientException

RR = PartitionsRoutingMode.RoundRobinDistribution
SINGLE = PartitionsRoutingMode.UseSinglePartition
CUSTOM = PartitionsRoutingMode.CustomPartition
SETTINGS = settings(max_examples=60, deadline=None)


def msg(seq: int = 0, key: str | None = None, size: int = 10, **kw) -> OutgoingMessage:
    return OutgoingMessage(payload=b"x" * size, sequence_id=seq, partition_key=key, **kw)


def router(n=5, mode=RR, *, seed=1, batching=False, delay=10, scheme=HashingScheme.BoostHash, **kw):
    return MessageRouter(
        mode, scheme, n, seed=seed, batching_enabled=batching, batching_max_publish_delay_ms=delay, **kw
    )


# ---------------------------------------------------------------------------------------------
# Enums and hashes: facts from the sources


def test_enum_values_match_the_clients():
    # _pulsar.PartitionsRoutingMode in pulsar-client 3.13.0; ProducerConfiguration.h for HashingScheme
    assert [m.value for m in (SINGLE, RR, CUSTOM)] == [0, 1, 2]
    assert [s.value for s in (HashingScheme.Murmur3_32Hash, HashingScheme.BoostHash, HashingScheme.JavaStringHash)] == [
        0,
        1,
        2,
    ]


def test_java_string_hash_vectors_of_the_cpp_client():
    # pulsar-client-cpp tests/HashTest.cc testJavaStringHash ("Same as Java client")
    assert java_string_hash("keykeykeykeykey1") == 434058482
    assert java_string_hash("keykeykey2") == 42978643


def test_murmur3_vectors_of_the_cpp_client():
    # pulsar-client-cpp tests/HashTest.cc testMurmur3_32Hash
    expected = {
        "k1": 2110152746,
        "k2": 1479966664,
        "key1": 462881061,
        "key2": 1936800180,
        "key01": 39696932,
        "key02": 751761803,
    }
    assert {k: murmur3_32_hash(k) for k in expected} == expected


# Recorded from the real client: pulsar::BoostHash::makeHash in the pulsar-client 3.13.0 wheel
# (manylinux_2_28 x86-64, libpulsar), called through ctypes on these UTF-8 keys.
BOOST_HASH_RECORDED = {
    "": 2133126054,
    "a": 2135870748,
    "k1": 1072173493,
    "k2": 1373383201,
    "key1": 2071103098,
    "key2": 78330853,
    "order-1": 1452070990,
    "order-2": 1028565371,
    "user-42": 1451754836,
    "keykeykeykeykey1": 504830233,
    "keykeykey2": 49504370,
    "é": 348017353,
}


def test_boost_hash_matches_the_recorded_client():
    assert {k: boost_hash(k) for k in BOOST_HASH_RECORDED} == BOOST_HASH_RECORDED


def test_java_string_hash_uses_signed_utf8_bytes():
    # C++ hashes UTF-8 chars (signed on x86-64): "é" = C3 A9 -> 31*(-61) + (-87), masked. Java would
    # hash the UTF-16 unit 233 instead.
    assert java_string_hash("é") == (31 * -61 - 87) & 0x7FFFFFFF == 2147481670
    assert java_string_hash("é") != 233


@SETTINGS
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=40))
def test_java_string_hash_is_javas_hashcode_for_ascii(s):
    h = 0
    for i, ch in enumerate(s):  # String.hashCode = sum s[i]*31^(n-1-i), mod 2^32
        h += ord(ch) * pow(31, len(s) - 1 - i, 1 << 32)
    assert java_string_hash(s) == h % (1 << 32) & 0x7FFFFFFF


@SETTINGS
@given(st.text(max_size=30))
def test_hashes_are_non_negative_int32_and_str_equals_utf8_bytes(s):
    for fn in (boost_hash, java_string_hash, murmur3_32_hash):
        h = fn(s)
        assert 0 <= h <= 0x7FFFFFFF and fn(s.encode("utf-8")) == h


# ---------------------------------------------------------------------------------------------
# Keyed messages


@SETTINGS
@given(
    key=st.text(min_size=0, max_size=20),
    n=st.integers(1, 16),
    mode=st.sampled_from([RR, SINGLE]),
    scheme=st.sampled_from(list(HashingScheme)),
    batching=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_keyed_messages_always_go_to_the_same_partition(key, n, mode, scheme, batching, seed):
    r = router(n, mode, seed=seed, batching=batching, scheme=scheme)
    h = {
        HashingScheme.BoostHash: boost_hash,
        HashingScheme.JavaStringHash: java_string_hash,
        HashingScheme.Murmur3_32Hash: murmur3_32_hash,
    }[scheme]
    expected = 0 if n == 1 else h(key) % n
    got = {r.choose_partition(msg(i, key, size=i * 100), now_ms=i * 7) for i in range(20)}
    # interleaved keyless traffic moves the round-robin cursor but never a keyed message
    for i in range(5):
        r.choose_partition(msg(100 + i), now_ms=1000 + i * 50)
    got.add(r.choose_partition(msg(200, key), now_ms=5000))
    assert got == {expected} and r.partition_for_key(key) == h(key) % n


def test_ordering_key_does_not_route():
    r = router(7)
    a = r.choose_partition(msg(0, "k", ordering_key=b"a"), 0)
    assert a == r.choose_partition(msg(1, "k", ordering_key=b"b"), 0) == r.partition_for_key("k")


# ---------------------------------------------------------------------------------------------
# Round robin


def test_round_robin_without_batching_moves_every_message():
    r = router(5, seed=3)
    start = r.partition_cursor % 5
    assert [r.choose_partition(msg(i), now_ms=0) for i in range(12)] == [(start + i) % 5 for i in range(12)]
    again = router(5, seed=3)
    assert again.choose_partition(msg(0), 0) == start  # same seed, same start
    assert len({router(5, seed=s).partition_cursor % 5 for s in range(40)}) > 1  # the start is random


def test_round_robin_with_batching_sticks_for_the_publish_delay():
    r = router(4, batching=True, delay=10, created_at_ms=100)
    p0 = r.partition_cursor % 4
    assert {r.choose_partition(msg(i), now_ms=100 + i) for i in range(10)} == {p0}  # within 10 ms of creation
    assert r.choose_partition(msg(10), now_ms=110) == (p0 + 1) % 4  # the window elapsed: next partition
    assert r.choose_partition(msg(11), now_ms=119) == (p0 + 1) % 4
    assert r.choose_partition(msg(12), now_ms=120) == (p0 + 2) % 4


def test_round_robin_with_batching_moves_after_max_messages():
    r = router(3, batching=True, delay=10_000, batching_max_messages=4)
    parts = [r.choose_partition(msg(i), now_ms=0) for i in range(12)]
    p0 = parts[0]
    assert parts == [p0] * 4 + [(p0 + 1) % 3] * 4 + [(p0 + 2) % 3] * 4


def test_round_robin_with_batching_moves_when_the_bytes_run_out():
    r = router(3, batching=True, delay=10_000, batching_max_allowed_size_in_bytes=100)
    p0 = r.partition_cursor % 3
    # 40 + 40 = 80 stay; the third 40 is >= the 20 bytes left: switch, and it starts the new window
    assert [r.choose_partition(msg(i, size=40), 0) for i in range(5)] == [
        p0,
        p0,
        (p0 + 1) % 3,
        (p0 + 1) % 3,
        (p0 + 2) % 3,
    ]


def test_round_robin_size_check_wraps_after_an_oversize_message():
    # uint32 arithmetic in RoundRobinMessageRouter: after a message larger than the limit, the bytes
    # left wrap to a huge number, so only the count or the delay moves the cursor again.
    r = router(3, batching=True, delay=10_000, batching_max_allowed_size_in_bytes=100, batching_max_messages=1000)
    p0 = r.partition_cursor % 3
    assert r.choose_partition(msg(0, size=150), 0) == (p0 + 1) % 3
    assert {r.choose_partition(msg(i, size=90), 0) for i in range(1, 30)} == {(p0 + 1) % 3}


def test_one_partition_is_always_zero():
    r = router(1, batching=True)
    assert {r.choose_partition(msg(i, key), i) for i, key in enumerate(["a", None, "b", None])} == {0}


@SETTINGS
@given(
    steps=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 200), st.booleans()), min_size=1, max_size=80),
    n=st.integers(2, 9),
    max_messages=st.integers(2, 6),
    max_bytes=st.integers(50, 400),
    delay=st.integers(0, 20),
)
def test_round_robin_keyless_moves_at_most_one_step(steps, n, max_messages, max_bytes, delay):
    r = router(
        n, batching=True, delay=delay, batching_max_messages=max_messages, batching_max_allowed_size_in_bytes=max_bytes
    )
    now, previous, run = 0, r.partition_cursor % n, 0
    for i, (dt, size, keyed) in enumerate(steps):
        now += dt
        if keyed:
            assert r.choose_partition(msg(i, "key", size=size), now) == r.partition_for_key("key")
            continue
        p = r.choose_partition(msg(i, size=size), now)
        assert p in (previous, (previous + 1) % n)
        run = run + 1 if p == previous else 1
        assert run <= max_messages
        previous = p


# ---------------------------------------------------------------------------------------------
# Single partition and custom routers


def test_single_partition_sends_keyless_messages_to_one_random_partition():
    r = router(6, SINGLE, seed=9)
    assert len({r.choose_partition(msg(i), now_ms=i * 100) for i in range(30)}) == 1
    assert router(6, SINGLE, seed=9).single_partition == r.single_partition
    assert len({router(6, SINGLE, seed=s).single_partition for s in range(40)}) > 1


def test_custom_router_decides_every_message():
    seen = []

    def by_length(m, n):
        seen.append((m.partition_key(), m.data(), n))
        return len(m.data()) % n

    r = router(4, CUSTOM, custom_router=by_length)
    sends = [("k", 5), (None, 6), ("k", 7)]
    assert [r.choose_partition(msg(i, key, size=s), 0) for i, (key, s) in enumerate(sends)] == [1, 2, 3]
    assert seen == [("k", b"x" * 5, 4), ("", b"x" * 6, 4), ("k", b"x" * 7, 4)]
    assert router(1, CUSTOM, custom_router=lambda m, n: 0).choose_partition(msg(), 0) == 0


def test_giving_a_router_selects_custom_mode():
    r = router(4, RR, custom_router=lambda m, n: 3)
    assert r.mode is CUSTOM and r.choose_partition(msg(0, "k"), 0) == 3


def test_custom_router_results_out_of_range_fail_the_send():
    for bad in (4, -1, 1 << 31):
        with pytest.raises(UnknownError, match="Got Invalid Partition for message from Router Policy"):
            router(4, CUSTOM, custom_router=lambda m, n, bad=bad: bad).choose_partition(msg(), 0)
    # the C++ producer keeps the result in a short: 65536 + 2 is partition 2
    assert router(4, CUSTOM, custom_router=lambda m, n: 65538).choose_partition(msg(), 0) == 2
    assert router(4, CUSTOM, custom_router=lambda m, n: 2.9).choose_partition(msg(), 0) == 2  # int() as in Python


def test_message_view_reads_like_pulsar_message():
    v = MessageView(msg(1, None, properties={"a": "b"}, ordering_key=b"ok", event_time=5))
    assert (v.partition_key(), v.ordering_key(), v.properties(), v.event_timestamp(), v.publish_timestamp()) == (
        "",
        "ok",
        {"a": "b"},
        5,
        0,
    )
    assert v.value() == v.data() == b"x" * 10


def test_bad_configuration():
    with pytest.raises(
        PulsarClientException, match="^When 'messageRoutingMode' is CustomPartition, 'messageRouter' should be set$"
    ):
        router(4, CUSTOM)
    with pytest.raises(TypeError, match="message_router must be callable"):
        router(4, custom_router=3)
    with pytest.raises(TypeError, match="PartitionsRoutingMode"):
        router(4, "RoundRobinDistribution")
    with pytest.raises(TypeError, match="HashingScheme"):
        router(4, scheme="BoostHash")
    with pytest.raises(ValueError, match="num_partitions must be >= 1"):
        router(0)
    with pytest.raises(ValueError, match="batching_max_publish_delay_ms"):
        router(4, delay=-1)
    with pytest.raises(TypeError, match="seed must be an int"):
        router(4, seed=None)
    with pytest.raises(TypeError, match="partition key must be str or bytes"):
        router(4).choose_partition(msg(0, 12), 0)
