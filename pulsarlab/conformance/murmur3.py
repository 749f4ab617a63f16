"""Conformance of `pulsarlab.hashing` with Pulsar's `Murmur3_32Hash` recordings (golden README §1)."""

from __future__ import annotations

from pulsarlab.conformance import expect
from pulsarlab.hashing import murmur3_32, murmur3_32_raw, reduce_hash


def check(line: dict) -> None:
    key = bytes.fromhex(line["key_utf8_hex"])
    where = f"key index {line.get('index')} ({line.get('kind')})"
    if line.get("key") is not None:
        expect(f"{where}: utf-8 bytes of key", line["key_utf8_hex"], line["key"].encode("utf-8").hex())
    expect(f"{where}: murmur3_32_raw", line["murmur3_32_raw"], murmur3_32_raw(key))
    masked = murmur3_32(key)
    expect(f"{where}: murmur3_32_masked", line["murmur3_32_masked"], masked)
    expect(f"{where}: v4_sticky_hash_1_65535", line["v4_sticky_hash_1_65535"], reduce_hash(masked, 1, 65535))
    expect(f"{where}: v4_sticky_hash_0_65535", line["v4_sticky_hash_0_65535"], reduce_hash(masked, 0, 65535))
    expect(f"{where}: v4_sticky_hash_1_1023", line["v4_sticky_hash_1_1023"], reduce_hash(masked, 1, 1023))
