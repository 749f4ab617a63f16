"""Pulsar's key hashing: Murmur3 x86_32 (seed 0, sign bit cleared), sticky keys and hash ranges.

Models `Murmur3_32Hash`, `Commands.peekStickyKey` (3.x) / `resolveStickyKey` (4.x) and
`StickyKeyConsumerSelectorUtils.makeStickyKeyHash` (docs/guide/sticky-key-hashing.md#sticky-key). Scalar functions take
one key; the
``*_bulk`` functions take many and return numpy arrays (one mmh3 call per key, the rest vectorised).
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Iterable, Sequence

import mmh3

from pulsarlab.profiles import Profile, StickyHashMode

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

NONE_KEY = b"NONE_KEY"
STICKY_KEY_HASH_NOT_SET = 0
INT_MAX = 0x7FFFFFFF


def to_key_bytes(key: str | bytes | bytearray | memoryview) -> bytes:
    """The bytes Pulsar hashes for a key: UTF-8 for text, the bytes themselves otherwise."""
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(
        f"a key must be str or bytes, not {type(key).__name__} ({key!r}); "
        "convert numbers with str() first, as a Pulsar producer would"
    )


def murmur3_32_raw(key: str | bytes) -> int:
    """Signed 32-bit Murmur3 x86_32 with seed 0 (before Pulsar's mask)."""
    return mmh3.hash(to_key_bytes(key), 0, signed=True)


def murmur3_32(key: str | bytes) -> int:
    """`Murmur3_32Hash.makeHash`: Murmur3 x86_32 seed 0 with the sign bit cleared, in [0, 2^31-1]."""
    return mmh3.hash(to_key_bytes(key), 0, signed=False) & INT_MAX


def reduce_hash(masked: int, start: int, end: int) -> int:
    """4.x `makeStickyKeyHash` for the inclusive range [start, end]: ``h % size + start``, 0 -> 1."""
    if end < start:
        raise ValueError(f"hash range [{start}, {end}] is empty")
    h = masked % (end - start + 1) + start
    return 1 if h == STICKY_KEY_HASH_NOT_SET else h


def make_sticky_key_hash(key: str | bytes, profile: Profile, key_range: tuple[int, int]) -> int:
    """The value a selector's ``select(int)`` receives for a key under this profile.

    3.x passes the full masked hash (selectors reduce it themselves); 4.x reduces into the selector's
    ``key_range`` (docs/guide/sticky-key-hashing.md#hash-reduction).
    """
    masked = murmur3_32(key)
    if profile.sticky_hash_mode is StickyHashMode.FULL:
        return masked
    return reduce_hash(masked, *key_range)


def sticky_key(
    profile: Profile,
    *,
    ordering_key: bytes | str | None = None,
    partition_key: str | None = None,
    partition_key_b64_encoded: bool = False,
    producer_name: str | None = None,
    sequence_id: int | None = None,
) -> bytes:
    """The bytes hashed for a message's sticky key, in Pulsar's order of precedence
    (docs/guide/sticky-key-hashing.md#sticky-key).

    ordering key, then partition key (Base64-decoded when flagged), then on 4.0+ the UTF-8 of
    ``producerName-sequenceId``, else ``NONE_KEY``. Undecodable Base64 falls back to ``NONE_KEY`` as
    Pulsar does for metadata it cannot parse.
    """
    if ordering_key is not None:
        return to_key_bytes(ordering_key)
    if partition_key is not None:
        if partition_key_b64_encoded:
            try:
                return base64.b64decode(partition_key, validate=True)
            except (binascii.Error, ValueError):
                return NONE_KEY
        return to_key_bytes(partition_key)
    if profile.keyless_producer_sequence_key and producer_name is not None and sequence_id is not None:
        return f"{producer_name}-{sequence_id}".encode("utf-8")
    return NONE_KEY


# ---------------------------------------------------------------------------------------------
# Bulk paths


def murmur3_32_bulk(keys: Iterable[str | bytes]) -> np.ndarray:
    """Masked Murmur3 of many keys as an int64 array (one mmh3 call per key; no other Python work)."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    h = mmh3.hash
    if not isinstance(keys, (list, tuple)):
        keys = list(keys)
    raw = np.fromiter((h(k, 0, False) for k in keys), dtype=np.int64, count=len(keys))
    return raw & INT_MAX


def reduce_hash_bulk(masked: np.ndarray, start: int, end: int) -> np.ndarray:
    """Vectorised `reduce_hash`."""
    h = masked % (end - start + 1) + start
    h[h == STICKY_KEY_HASH_NOT_SET] = 1
    return h


def make_sticky_key_hash_bulk(
    keys: Sequence[str | bytes] | np.ndarray, profile: Profile, key_range: tuple[int, int]
) -> np.ndarray:
    """Vectorised `make_sticky_key_hash`; ``keys`` may already be masked hashes (an int array)."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    masked = keys if isinstance(keys, np.ndarray) else murmur3_32_bulk(keys)
    if profile.sticky_hash_mode is StickyHashMode.FULL:
        return masked
    return reduce_hash_bulk(masked.copy(), *key_range)
