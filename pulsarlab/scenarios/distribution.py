"""Bulk key-distribution metrics: keys per consumer, imbalance, keys moved when a consumer joins or leaves.

Models no single Pulsar class: it drives the Key_Shared selectors
(docs/guide/key-shared-selectors.md#choosing-a-selector) over many keys at once,
through their vectorised ``select_bulk``, and reports how evenly they spread keys and how many keys change
consumer on a membership change. Consumers are ``c1..cN`` (ids 1..N), attached in order. The pieces are
integer counts (`DistributionCounts`) so partial results from many chunks or Spark partitions can be summed.

Simplifications and definitions:

* "join" attaches ``c{N+1}`` after ``c1..cN``; "leave" removes ``c1`` from ``c1..cN``.
* STICKY consumers get N equal contiguous ranges covering [0, 65535] (`equal_ranges`). Pulsar has no
  automatic re-split for STICKY, so a join is modelled as the operator's move: every consumer reconnects
  with N+1 equal ranges, and ``c{N+1}`` takes the top one. A leave re-splits nothing: ``c1``'s range is
  left uncovered and its keys have no consumer (they wait in the broker's replay set), which counts as moved.
* Under a 4.x profile every sticky-key hash lies in the selector's small key-hash range, so the keys are
  first counted per hash (a histogram) and each selector is evaluated once per hash value; under 3.x the
  hashes are 31-bit and each key is selected directly. Both give exactly the per-key answer.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from pulsarlab.broker.key_shared import SELECTOR_KINDS, make_selector
from pulsarlab.broker.key_shared.base import NO_CONSUMER, Consumer, StickyKeyConsumerSelector
from pulsarlab.hashing import murmur3_32_bulk
from pulsarlab.profiles import StickyHashMode, get_profile

STICKY_HASH_SPACE = 65536  # STICKY consumers' ranges cover [0, 65535] (KeySharedPolicySticky's bounds)
MAX_CONSUMERS = STICKY_HASH_SPACE - 1  # so that c{N+1} still fits (auto-split can split 65536 times)
_TABLE_LIMIT = 1 << 20  # histogram path only for key-hash ranges at most this big


# ---------------------------------------------------------------------------------------------
# Argument checks


def check_kind(kind: Any) -> str:
    if kind not in SELECTOR_KINDS:
        raise ValueError(f"unknown selector kind {kind!r}; choose one of: {', '.join(SELECTOR_KINDS)}")
    return kind


def check_count(value: Any, what: str, low: int = 1, high: int | None = None) -> int:
    """``value`` as an int in [low, high]; a clear TypeError/ValueError naming ``what`` otherwise."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not bool ({value!r})")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__} ({value!r})") from None
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"{what} must be {bound}, not {value}")
    return value


def check_version(version: Any) -> str:
    """The profile name for ``version`` (unknown names fail with the list of known ones)."""
    return get_profile(version).name


# ---------------------------------------------------------------------------------------------
# Building the selectors


def consumer_names(n_consumers: int) -> list[str]:
    """``["c1", ..., "cN"]``: the names `build_selector` gives consumers with ids 1..N."""
    return [f"c{i}" for i in range(1, n_consumers + 1)]


def equal_ranges(n_consumers: int, space: int = STICKY_HASH_SPACE) -> list[tuple[int, int]]:
    """N contiguous inclusive ranges, sizes differing by at most one, covering [0, space-1] in order."""
    n = check_count(n_consumers, "n_consumers", 1, space)
    bounds = [i * space // n for i in range(n + 1)]
    return [(bounds[i], bounds[i + 1] - 1) for i in range(n)]


def _consumers(kind: str, n_consumers: int) -> list[Consumer]:
    if kind == "sticky":
        return [Consumer(i, f"c{i}", ranges=(r,)) for i, r in enumerate(equal_ranges(n_consumers), start=1)]
    return [Consumer(i, f"c{i}") for i in range(1, n_consumers + 1)]


def _new_selector(kind: str, version: str, points: int) -> StickyKeyConsumerSelector:
    if kind == "consistent_hashing":
        return make_selector(kind, version, points=points)
    return make_selector(kind, version)


def build_selector(kind: str, n_consumers: int, version: str = "4.0", points: int = 100) -> StickyKeyConsumerSelector:
    """A selector of ``kind`` with consumers c1..cN (ids 1..N) attached in order.

    ``points`` is the consistent-hashing replica-point count (ignored by the other kinds); STICKY
    consumers get `equal_ranges`.
    """
    kind = check_kind(kind)
    n_consumers = check_count(n_consumers, "n_consumers", 1, MAX_CONSUMERS + 1)
    points = check_count(points, "points")
    selector = _new_selector(kind, check_version(version), points)
    for consumer in _consumers(kind, n_consumers):
        selector.add_consumer(consumer)
    return selector


# ---------------------------------------------------------------------------------------------
# Integer counts


@dataclass(frozen=True, eq=False)
class DistributionCounts:
    """Summable counts for one (selector, version, consumers) over some keys.

    ``keys_per_consumer[i]`` counts the keys of consumer ``c{i+1}``; ``unassigned`` those with no
    consumer; ``moved_on_join`` / ``moved_on_leave`` those whose consumer differs after the change.
    """

    selector: str
    version: str
    consumers: int
    keys_per_consumer: np.ndarray  # int64, length `consumers`
    unassigned: int
    moved_on_join: int
    moved_on_leave: int
    total_keys: int

    @classmethod
    def zero(cls, selector: str, version: str, consumers: int) -> "DistributionCounts":
        return cls(selector, version, consumers, np.zeros(consumers, dtype=np.int64), 0, 0, 0, 0)

    @property
    def config(self) -> tuple[str, str, int]:
        return self.selector, self.version, self.consumers

    def __add__(self, other: "DistributionCounts") -> "DistributionCounts":
        if not isinstance(other, DistributionCounts):
            return NotImplemented
        if other.config != self.config:
            raise ValueError(f"cannot add counts of {other.config} to counts of {self.config}")
        return DistributionCounts(
            self.selector,
            self.version,
            self.consumers,
            self.keys_per_consumer + other.keys_per_consumer,
            self.unassigned + other.unassigned,
            self.moved_on_join + other.moved_on_join,
            self.moved_on_leave + other.moved_on_leave,
            self.total_keys + other.total_keys,
        )

    def metrics(self) -> dict[str, Any]:
        """The metrics dict of `distribution_metrics` (fractions of ``total_keys``, which must be > 0)."""
        if self.total_keys <= 0:
            raise ValueError(f"no keys were counted for {self.config}; metrics need at least one key")
        per_consumer = [int(c) for c in self.keys_per_consumer]
        return {
            "selector": self.selector,
            "version": self.version,
            "consumers": self.consumers,
            "keys_per_consumer": dict(zip(consumer_names(self.consumers), per_consumer)),
            "imbalance": imbalance(per_consumer),
            "moved_on_join": self.moved_on_join / self.total_keys,
            "moved_on_leave": self.moved_on_leave / self.total_keys,
            "total_keys": self.total_keys,
        }


def imbalance(keys_per_consumer: Sequence[int]) -> float:
    """max / mean of the per-consumer key counts (1.0 is perfectly even; NaN if no key is assigned)."""
    total = sum(keys_per_consumer)
    if total == 0:
        return float("nan")
    return max(keys_per_consumer) * len(keys_per_consumer) / total


def _slots(ids: np.ndarray, n_slots: int, what: str) -> np.ndarray:
    """Consumer ids as bincount slots: NO_CONSUMER -> 0, id k -> k."""
    slots = np.where(ids == NO_CONSUMER, 0, ids)
    if slots.size and (slots.min() < 0 or slots.max() >= n_slots):
        raise RuntimeError(f"{what} returned a consumer id outside 1..{n_slots - 1}: {slots.max()}")
    return slots


@dataclass(frozen=True, eq=False)
class MembershipPlan:
    """The three memberships one metric compares: c1..cN, after c{N+1} joins, after c1 leaves."""

    selector: str
    version: str
    consumers: int
    base: StickyKeyConsumerSelector
    joined: StickyKeyConsumerSelector
    left: StickyKeyConsumerSelector
    _tables: list = field(default_factory=list, repr=False)  # lazily [base, joined, left] id tables

    @property
    def key_hash_range(self) -> tuple[int, int]:
        return self.base.key_hash_range()

    @property
    def uses_histogram(self) -> bool:
        """True when selection depends only on a hash in a small range (4.x), so a histogram suffices."""
        start, end = self.key_hash_range
        return self.base.profile.sticky_hash_mode is StickyHashMode.RANGED and end - start + 1 <= _TABLE_LIMIT

    def sticky_hashes(self, masked: np.ndarray) -> np.ndarray:
        """The values ``select`` receives for masked Murmur3 hashes under this plan's profile."""
        return self.base.sticky_hashes_bulk(masked)

    def count_hashes(self, masked: np.ndarray) -> DistributionCounts:
        """Counts for masked Murmur3 hashes (an int64 array), selecting every key directly."""
        hashes = self.sticky_hashes(np.asarray(masked, dtype=np.int64))
        n = self.consumers
        base_ids = self.base.select_bulk(hashes)
        per_slot = np.bincount(_slots(base_ids, n + 1, "base selector"), minlength=n + 1)
        return DistributionCounts(
            self.selector,
            self.version,
            n,
            per_slot[1:].astype(np.int64),
            int(per_slot[0]),
            int(np.count_nonzero(self.joined.select_bulk(hashes) != base_ids)),
            int(np.count_nonzero(self.left.select_bulk(hashes) != base_ids)),
            int(hashes.size),
        )

    def count_histogram(self, histogram: np.ndarray) -> DistributionCounts:
        """Counts from a histogram of sticky hashes over `key_hash_range` (index 0 = range start)."""
        start, end = self.key_hash_range
        hist = np.asarray(histogram, dtype=np.int64)
        if hist.shape != (end - start + 1,):
            raise ValueError(f"histogram must have {end - start + 1} bins for [{start}, {end}], not shape {hist.shape}")
        base, joined, left = self._id_tables()
        n = self.consumers
        # float weights are exact here: counts stay far below 2^53
        per_slot = np.bincount(_slots(base, n + 1, "base selector"), weights=hist, minlength=n + 1)
        per_slot = np.rint(per_slot).astype(np.int64)
        return DistributionCounts(
            self.selector,
            self.version,
            n,
            per_slot[1:],
            int(per_slot[0]),
            int(hist[joined != base].sum()),
            int(hist[left != base].sum()),
            int(hist.sum()),
        )

    def _id_tables(self) -> list[np.ndarray]:
        if not self._tables:
            start, end = self.key_hash_range
            every_hash = np.arange(start, end + 1, dtype=np.int64)
            self._tables.extend(s.select_bulk(every_hash) for s in (self.base, self.joined, self.left))
        return self._tables


def build_plan(kind: str, n_consumers: int, version: str = "4.0", points: int = 100) -> MembershipPlan:
    """The base, joined and left selectors for one metric row (see the module docstring)."""
    kind = check_kind(kind)
    n_consumers = check_count(n_consumers, "n_consumers", 1, MAX_CONSUMERS)
    points = check_count(points, "points")
    version = check_version(version)
    base = build_selector(kind, n_consumers, version, points)
    joined = build_selector(kind, n_consumers + 1, version, points)
    left = build_selector(kind, n_consumers, version, points)
    left.remove_consumer(Consumer(1, "c1"))  # Consumer equality is by id
    return MembershipPlan(kind, version, n_consumers, base, joined, left)


class DistributionAccumulator:
    """Feeds chunks of masked Murmur3 hashes to many plans and sums their counts.

    Plans that can use a histogram share one histogram per key-hash range; the others count each
    chunk directly. Memory stays bounded by the chunk size.
    """

    def __init__(self, plans: Iterable[MembershipPlan]) -> None:
        self.plans = list(plans)
        if not self.plans:
            raise ValueError("DistributionAccumulator needs at least one plan")
        self._histograms: dict[tuple[str, tuple[int, int]], np.ndarray] = {}
        self._direct: dict[int, DistributionCounts] = {}
        for i, plan in enumerate(self.plans):
            if plan.uses_histogram:
                start, end = plan.key_hash_range
                self._histograms.setdefault((plan.version, (start, end)), np.zeros(end - start + 1, np.int64))
            else:
                self._direct[i] = DistributionCounts.zero(*plan_config(plan))
        self._histogram_source = {
            key: next(p for p in self.plans if p.uses_histogram and (p.version, p.key_hash_range) == key)
            for key in self._histograms
        }

    def add(self, masked: np.ndarray) -> None:
        """Count one chunk of masked Murmur3 hashes (int64, as `murmur3_32_bulk` returns)."""
        masked = np.asarray(masked, dtype=np.int64)
        for key, hist in self._histograms.items():
            start, end = key[1]
            reduced = self._histogram_source[key].sticky_hashes(masked)
            hist += np.bincount(reduced - start, minlength=end - start + 1)
        for i in self._direct:
            self._direct[i] = self._direct[i] + self.plans[i].count_hashes(masked)

    def add_keys(self, keys: Sequence[str | bytes]) -> None:
        """Hash keys (one mmh3 call each) and count them."""
        try:
            masked = murmur3_32_bulk(keys)
        except TypeError:
            for i, key in enumerate(keys):  # only on failure: name the offending key
                if not isinstance(key, (str, bytes, bytearray, memoryview)):
                    raise TypeError(
                        f"a key must be str or bytes, not {type(key).__name__} ({key!r}) at position {i}"
                    ) from None
            raise
        self.add(masked)

    def counts(self) -> list[DistributionCounts]:
        """One `DistributionCounts` per plan, in plan order."""
        out = []
        for i, plan in enumerate(self.plans):
            if plan.uses_histogram:
                out.append(plan.count_histogram(self._histograms[(plan.version, plan.key_hash_range)]))
            else:
                out.append(self._direct[i])
        return out


def plan_config(plan: MembershipPlan) -> tuple[str, str, int]:
    return plan.selector, plan.version, plan.consumers


# ---------------------------------------------------------------------------------------------
# The one-call API


def check_keys(keys: Any) -> list:
    """``keys`` as a non-empty list of str/bytes keys (a lone string is rejected, not split into letters)."""
    if isinstance(keys, (str, bytes)):
        raise TypeError("keys must be a sequence of keys, not a single key; wrap it in a list")
    try:
        keys = list(keys)
    except TypeError:
        raise TypeError(f"keys must be an iterable of str or bytes, not {type(keys).__name__}") from None
    if not keys:
        raise ValueError("keys is empty; distribution metrics need at least one key")
    return keys


def key_counts(
    keys: Sequence[str | bytes], kind: str, n_consumers: int, version: str = "4.0", points: int = 100
) -> DistributionCounts:
    """Integer counts for ``keys`` on c1..cN of a ``kind`` selector (see `DistributionCounts`)."""
    keys = check_keys(keys)
    accumulator = DistributionAccumulator([build_plan(kind, n_consumers, version, points)])
    accumulator.add_keys(keys)
    return accumulator.counts()[0]


def distribution_metrics(
    keys: Sequence[str | bytes], kind: str, n_consumers: int, version: str = "4.0", points: int = 100
) -> dict[str, Any]:
    """How ``keys`` spread over consumers c1..cN of a ``kind`` selector, and what a join or leave moves.

    Returns ``keys_per_consumer`` ({"c1": count, ...}), ``imbalance`` (max/mean over consumers),
    ``moved_on_join`` (fraction of keys whose consumer changes when c{N+1} joins), ``moved_on_leave``
    (fraction that changes when c1 leaves), plus ``selector``, ``version``, ``consumers`` and
    ``total_keys``.
    """
    return key_counts(keys, kind, n_consumers, version, points).metrics()


def sequential_keys(start: int, stop: int, prefix: str = "key-") -> list[str]:
    """``["key-<start>", ..., "key-<stop-1>"]``: the keys the Spark pipeline generates for ``n_keys``."""
    return [f"{prefix}{i}" for i in range(start, stop)]
