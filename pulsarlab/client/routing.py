"""Partition routing: which partition of a partitioned topic a producer sends each message to.

Models the routers of pulsar-client-cpp, which the Python ``pulsar-client`` package wraps
(`RoundRobinMessageRouter`, `SinglePartitionMessageRouter`, `MessageRouterBase`, the hashes
`BoostHash`, `JavaStringHash`, `Murmur3_32Hash`, and `PartitionedProducerImpl::getMessageRouter` /
``sendAsync``), read from apache/pulsar-client-cpp (lib/*.cc). docs/guide/sticky-key-hashing.md covers the
broker-side hashing; routing is a client rule, so it is documented here:

* A message with a partition key goes to ``hash(key) % n`` in both built-in modes (the ordering key
  plays no part). The hash is the configured `HashingScheme`; the C++ default, and the only one the
  Python client can use (it has no ``hashing_scheme`` option), is `BoostHash`.
* RoundRobinDistribution, keyless: with batching off the cursor moves on every message. With batching
  on it stays on one partition until ``batching_max_messages`` messages, or a message of at least the
  bytes left of ``batching_max_allowed_size_in_bytes``, or ``batching_max_publish_delay_ms`` since the
  last switch, then moves on one. A topic of one partition always gets 0.
* UseSinglePartition: keyless messages all go to one partition picked at random when the producer
  is created.
* CustomPartition: the user's ``message_router(msg, num_partitions)`` decides every message; giving a
  router selects this mode (``setMessageRouter``). A result outside ``[0, n)`` fails the send.

The C++ client seeds its random start cursor (round robin) and its single partition from the wall
clock; here both come from ``seed``. Counters are unsigned 32-bit as in C++, wrap-around included.
"""

from __future__ import annotations

import enum
import random
from functools import lru_cache
from typing import Callable

from pulsarlab.client.batching import DEFAULT_BATCHING_MAX_BYTES, DEFAULT_BATCHING_MAX_MESSAGES, OutgoingMessage
from pulsarlab.errors import PulsarClientException
from pulsarlab.hashing import murmur3_32

_U32 = 0xFFFFFFFF
_U64 = 0xFFFFFFFFFFFFFFFF
_INT32_MAX = 0x7FFFFFFF


class PartitionsRoutingMode(enum.Enum):
    """`pulsar.PartitionsRoutingMode` (C++ `ProducerConfiguration::PartitionsRoutingMode`), same values."""

    UseSinglePartition = 0
    RoundRobinDistribution = 1
    CustomPartition = 2


class HashingScheme(enum.Enum):
    """C++ `ProducerConfiguration::HashingScheme`, same values (not exposed by the Python client)."""

    Murmur3_32Hash = 0
    BoostHash = 1
    JavaStringHash = 2


class UnknownError(PulsarClientException):
    """The send failure a bad custom-router result causes (the Python client's ``pulsar.UnknownError``)."""


# ---------------------------------------------------------------------------------------------
# Key hashes (each returns a non-negative int32, as `Hash::makeHash` does)


def _key_bytes(key: str | bytes) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray)):
        return bytes(key)
    raise TypeError(f"a partition key must be str or bytes, not {type(key).__name__} ({key!r})")


@lru_cache(maxsize=1 << 16)
def java_string_hash(key: str | bytes) -> int:
    """C++ `JavaStringHash::makeHash`: ``h = 31*h + c`` over the UTF-8 bytes, then the sign bit cleared.

    The bytes are C++ ``char``, signed on x86-64 (this models that platform): for ASCII keys this is
    Java's ``String.hashCode() & Integer.MAX_VALUE``; for other text it differs from Java, which
    hashes UTF-16 code units.
    """
    h = 0
    for b in _key_bytes(key):
        h = (31 * h + (b - 256 if b > 127 else b)) & _U32
    return h & _INT32_MAX


_BOOST_Q = 0x9E3779B97F4A7C15
_BOOST_K = 0xDF442D22CE4859B9  # Q * Q mod 2^64


def _mulx(x: int, y: int) -> int:
    r = x * y
    return (r ^ (r >> 64)) & _U64


@lru_cache(maxsize=1 << 16)
def boost_hash(key: str | bytes) -> int:
    """C++ `BoostHash::makeHash`: ``boost::hash<std::string>`` with the sign bit cleared.

    ``boost::hash`` of a string is ``boost::hash_range`` with seed 0; for a 64-bit ``size_t`` Boost
    1.83 onwards computes it with the mulx-based function of boost/container_hash/detail/
    hash_range.hpp, re-implemented here. Only the low 31 bits are kept. Verified equal, on 20,000
    random keys, to ``pulsar::BoostHash::makeHash`` in the pulsar-client 3.13.0 wheel (manylinux
    x86-64). Older Boost, or a 32-bit build, hashes differently.
    """
    data = _key_bytes(key)
    n = len(data)
    w = _mulx(_BOOST_Q, _BOOST_K)  # seed 0
    h = w ^ n
    p = 0
    while n >= 8:
        w = (w + _BOOST_Q) & _U64
        h ^= _mulx((int.from_bytes(data[p : p + 8], "little") + w) & _U64, _BOOST_K)
        p += 8
        n -= 8
    if n >= 4:
        tail = data[p + n - 4 : p + n]
        v = (int.from_bytes(tail, "little") << ((n - 4) * 8)) | int.from_bytes(data[p : p + 4], "little")
    elif n >= 1:
        x1 = (n - 1) & 2
        x2 = n >> 1
        v = (data[p + x1] << (x1 * 8)) | (data[p + x2] << (x2 * 8)) | data[p]
    else:
        v = 0
    w = (w + _BOOST_Q) & _U64
    h ^= _mulx((v + w) & _U64, _BOOST_K)
    return _mulx((h + w) & _U64, _BOOST_K) & _INT32_MAX


def murmur3_32_hash(key: str | bytes) -> int:
    """C++ `Murmur3_32Hash::makeHash`: Murmur3 x86_32, seed 0, sign bit cleared (as the broker's)."""
    return murmur3_32(_key_bytes(key))


_HASHES: dict[HashingScheme, Callable[[str | bytes], int]] = {
    HashingScheme.Murmur3_32Hash: murmur3_32_hash,
    HashingScheme.BoostHash: boost_hash,
    HashingScheme.JavaStringHash: java_string_hash,
}


# ---------------------------------------------------------------------------------------------
# What a custom router sees


class MessageView:
    """The message a custom ``message_router(msg, num_partitions)`` receives, as `pulsar.Message`.

    Read-only accessors with `pulsar.Message`'s names; an unset key reads as ``""`` and an unset time
    as 0, as in the Python client (publish time is stamped after routing, so it is 0 here).
    """

    __slots__ = ("_msg",)

    def __init__(self, msg: OutgoingMessage) -> None:
        self._msg = msg

    def data(self) -> bytes:
        return self._msg.payload

    def value(self) -> bytes:
        return self._msg.payload

    def properties(self) -> dict[str, str]:
        return dict(self._msg.properties)

    def partition_key(self) -> str:
        return self._msg.partition_key or ""

    def ordering_key(self) -> str:
        key = self._msg.ordering_key
        return key.decode("utf-8") if key else ""

    def event_timestamp(self) -> int:
        return self._msg.event_time

    def publish_timestamp(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"MessageView(partition_key={self.partition_key()!r}, data={self._msg.payload[:32]!r})"


# ---------------------------------------------------------------------------------------------
# The router


class MessageRouter:
    """Picks the partition for each message of one partitioned producer (see the module docstring).

    ``created_at_ms`` is the clock when the producer was created (the round-robin delay window starts
    then); ``batching_max_messages`` and ``batching_max_allowed_size_in_bytes`` are the producer's
    settings, which the round-robin router also reads.
    """

    def __init__(
        self,
        mode: PartitionsRoutingMode,
        hashing_scheme: HashingScheme,
        num_partitions: int,
        *,
        seed: int,
        batching_enabled: bool,
        batching_max_publish_delay_ms: int,
        custom_router: Callable[[MessageView, int], int] | None = None,
        batching_max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES,
        batching_max_allowed_size_in_bytes: int = DEFAULT_BATCHING_MAX_BYTES,
        created_at_ms: int = 0,
    ) -> None:
        if not isinstance(mode, PartitionsRoutingMode):
            raise TypeError(f"message_routing_mode must be a PartitionsRoutingMode, not {mode!r}")
        if not isinstance(hashing_scheme, HashingScheme):
            raise TypeError(f"hashing_scheme must be a HashingScheme, not {hashing_scheme!r}")
        _check_int("num_partitions", num_partitions, minimum=1)
        _check_int("seed", seed)
        _check_int("batching_max_publish_delay_ms", batching_max_publish_delay_ms, minimum=0)
        _check_int("batching_max_messages", batching_max_messages)
        _check_int("batching_max_allowed_size_in_bytes", batching_max_allowed_size_in_bytes, minimum=0)
        _check_int("created_at_ms", created_at_ms, minimum=0)
        if custom_router is not None:
            if not callable(custom_router):
                raise TypeError(f"message_router must be callable (msg, num_partitions) -> int, not {custom_router!r}")
            mode = PartitionsRoutingMode.CustomPartition  # setMessageRouter selects the mode
        elif mode is PartitionsRoutingMode.CustomPartition:
            raise PulsarClientException("When 'messageRoutingMode' is CustomPartition, 'messageRouter' should be set")

        self.mode = mode
        self.hashing_scheme = hashing_scheme
        self.num_partitions = num_partitions
        self.batching_enabled = bool(batching_enabled)
        self.batching_max_publish_delay_ms = batching_max_publish_delay_ms
        self.batching_max_messages = batching_max_messages & _U32
        self.batching_max_allowed_size_in_bytes = batching_max_allowed_size_in_bytes & _U32
        self.custom_router = custom_router
        self._hash = _HASHES[hashing_scheme]
        rng = random.Random(seed)
        # RoundRobinMessageRouter: a random start cursor in [0, INT_MAX]; switch bookkeeping.
        self.partition_cursor = rng.randint(0, _INT32_MAX)
        self.last_partition_change = created_at_ms
        self.msg_counter = 0
        self.cumulative_batch_size = 0
        # SinglePartitionMessageRouter: one random partition for keyless messages.
        self.single_partition = rng.randrange(num_partitions)

    def partition_for_key(self, key: str | bytes) -> int:
        """Where a message with this partition key goes in the built-in modes: ``hash(key) % n``."""
        return self._hash(key) % self.num_partitions

    def choose_partition(self, msg: OutgoingMessage, now_ms: int) -> int:
        """The partition for ``msg`` sent at ``now_ms``; updates the round-robin state."""
        mode = self.mode
        if mode is PartitionsRoutingMode.RoundRobinDistribution:
            return self._round_robin(msg, now_ms)
        if mode is PartitionsRoutingMode.UseSinglePartition:
            if msg.partition_key is not None:
                return self._hash(msg.partition_key) % self.num_partitions
            return self.single_partition
        return self._custom(msg)

    def _round_robin(self, msg: OutgoingMessage, now_ms: int) -> int:
        n = self.num_partitions
        if n == 1:
            return 0
        if msg.partition_key is not None:
            return self._hash(msg.partition_key) % n
        if not self.batching_enabled:
            cursor = self.partition_cursor
            self.partition_cursor = (cursor + 1) & _U32
            return cursor % n
        size = len(msg.payload) & _U32
        if (
            self.msg_counter >= self.batching_max_messages
            # unsigned subtraction: once a large message overshoots the limit this wraps and stops firing
            or size >= (self.batching_max_allowed_size_in_bytes - self.cumulative_batch_size) & _U32
            or now_ms - self.last_partition_change >= self.batching_max_publish_delay_ms
        ):
            self.partition_cursor = (self.partition_cursor + 1) & _U32
            self.last_partition_change = now_ms
            self.cumulative_batch_size = size
            self.msg_counter = 1
            return self.partition_cursor % n
        self.msg_counter += 1
        self.cumulative_batch_size = (self.cumulative_batch_size + size) & _U32
        return self.partition_cursor % n

    def _custom(self, msg: OutgoingMessage) -> int:
        assert self.custom_router is not None
        result = int(self.custom_router(MessageView(msg), self.num_partitions))  # as the Python wrapper does
        if not -(2**31) <= result <= _INT32_MAX:
            raise UnknownError(f"Got Invalid Partition for message from Router Policy, Partition - {result}")
        partition = ((result + 0x8000) & 0xFFFF) - 0x8000  # PartitionedProducerImpl keeps it in a short
        if not 0 <= partition < self.num_partitions:
            raise UnknownError(f"Got Invalid Partition for message from Router Policy, Partition - {partition}")
        return partition

    def __repr__(self) -> str:
        return (
            f"MessageRouter({self.mode.name}, {self.hashing_scheme.name}, partitions={self.num_partitions}, "
            f"cursor={self.partition_cursor})"
        )


def _check_int(name: str, value: object, *, minimum: int | None = None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__} ({value!r})")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
