"""Pulsar's key hashing: reference §1 facts, sticky-key precedence and bad input."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.hashing import (
    NONE_KEY,
    make_sticky_key_hash,
    make_sticky_key_hash_bulk,
    murmur3_32,
    murmur3_32_bulk,
    murmur3_32_raw,
    reduce_hash,
    sticky_key,
    to_key_bytes,
)
from pulsarlab.profiles import get_profile

# HashTest.murmur3_32HashTest ("Same value as C++ client"), reference §1.1
JAVA_TEST_VECTORS = {
    "k1": 2110152746,
    "k2": 1479966664,
    "key1": 462881061,
    "key2": 1936800180,
    "key01": 39696932,
    "key02": 751761803,
}


@pytest.mark.parametrize("key,expected", sorted(JAVA_TEST_VECTORS.items()))
def test_murmur3_matches_pulsars_unit_test(key, expected):
    assert murmur3_32(key) == expected


def test_docs_order_key_example():
    # Pulsar docs: Order-3459134 -> 3112179635 unsigned; the broker clears the sign bit; slot 6067
    assert murmur3_32_raw("Order-3459134") & 0xFFFFFFFF == 3112179635
    assert murmur3_32("Order-3459134") == 964695987
    assert murmur3_32("Order-3459134") % 65536 == 6067


def test_computed_reference_values():
    assert murmur3_32("NONE_KEY") == 504741539
    assert murmur3_32("") == 0
    # reference §1.3 table: 3.x slot and 4.x consistent-hashing hash
    for key, slot, ch in [
        ("key1", 293, 7357),
        ("key2", 14772, 44326),
        ("k1", 24618, 56817),
        ("NONE_KEY", 48803, 56505),
    ]:
        assert murmur3_32(key) % 65536 == slot
        assert reduce_hash(murmur3_32(key), 1, 65535) == ch


def test_reduce_hash_maps_zero_to_one():
    assert reduce_hash(0, 0, 65535) == 1
    assert reduce_hash(65536, 0, 65535) == 1
    assert reduce_hash(0, 1, 65535) == 1
    with pytest.raises(ValueError, match="empty"):
        reduce_hash(5, 10, 3)


def test_make_sticky_key_hash_per_line():
    p3, p4 = get_profile("3.0"), get_profile("4.0")
    assert make_sticky_key_hash("key1", p3, (1, 65535)) == 462881061  # 3.x: full 31-bit
    assert make_sticky_key_hash("key1", p4, (1, 65535)) == 7357
    assert make_sticky_key_hash("key1", p4, (0, 65535)) == 293


def test_sticky_key_precedence():
    p3, p4 = get_profile("3.0"), get_profile("4.0")
    assert sticky_key(p4, ordering_key=b"ok", partition_key="pk", producer_name="p", sequence_id=1) == b"ok"
    assert sticky_key(p4, partition_key="pk", producer_name="p", sequence_id=1) == b"pk"
    encoded = base64.b64encode(b"\x00\xffbin").decode()
    assert sticky_key(p4, partition_key=encoded, partition_key_b64_encoded=True) == b"\x00\xffbin"
    assert sticky_key(p4, partition_key=encoded) == encoded.encode()
    # keyless: 4.0+ producerName-sequenceId, 3.x NONE_KEY
    assert sticky_key(p4, producer_name="standalone-0-3", sequence_id=17) == b"standalone-0-3-17"
    assert sticky_key(p3, producer_name="standalone-0-3", sequence_id=17) == NONE_KEY
    assert sticky_key(p4) == NONE_KEY
    # metadata that cannot be parsed falls back to NONE_KEY
    assert sticky_key(p4, partition_key="not base64!!", partition_key_b64_encoded=True) == NONE_KEY


@pytest.mark.parametrize("bad", [42, 3.5, None, ["k"], {"k": 1}])
def test_keys_of_the_wrong_type_fail_clearly(bad):
    with pytest.raises(TypeError, match="a key must be str or bytes"):
        to_key_bytes(bad)
    with pytest.raises(TypeError):
        murmur3_32(bad)


def test_unicode_and_bytes_hash_as_utf8():
    assert murmur3_32("héllo ✓") == murmur3_32("héllo ✓".encode("utf-8"))
    assert murmur3_32(bytearray(b"abc")) == murmur3_32(b"abc")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=20), st.binary(max_size=20)), max_size=50))
def test_bulk_hash_equals_scalar(keys):
    bulk = murmur3_32_bulk(keys)
    assert bulk.dtype == np.int64
    assert bulk.tolist() == [murmur3_32(k) for k in keys]
    for profile in ("3.0", "4.0"):
        p = get_profile(profile)
        for rng in [(0, 65535), (1, 65535), (1, 1023)]:
            assert make_sticky_key_hash_bulk(keys, p, rng).tolist() == [make_sticky_key_hash(k, p, rng) for k in keys]
