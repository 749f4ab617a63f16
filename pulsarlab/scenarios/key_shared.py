"""A Key_Shared scenario: consumers join and leave one selector on the virtual clock, every change logged.

Models what a `PersistentStickyKeyDispatcherMultipleConsumers` does to its selector when consumers
subscribe and close (docs/guide/key-shared-selectors.md#choosing-a-selector, and
docs/guide/producer-batching.md#default-batching for how a batch entry is routed). After each operation
the driver diffs the selector's snapshot before and after and appends typed events whose one-line
explanations say what moved and which Pulsar rule moved it; ``timeline`` replays them frame by frame.
Simplifications: there is no dispatcher, cursor or message flow here (see pulsarlab.broker); selecting
keys and routing batch entries are queries recorded as events for the views. Per-ring-point frames are
reconstructed by applying the ring diff point by point in ascending point order, which is not the
order Pulsar inserts them (it makes no difference to the final state). Rejected consumers keep the id
they were given, as a Pulsar client's consumer-id counter does.

The event declarations live in `pulsarlab.event_catalogue.key_shared_scenario`, the frames in
`key_shared_timeline`; this module keeps the driver, the snapshot helpers the views use and the rule texts that
depend on the selector generation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from pulsarlab.broker.key_shared import make_selector
from pulsarlab.broker.key_shared.assignments import diff_ranges
from pulsarlab.broker.key_shared.base import Consumer, StickyKeyConsumerSelector, subscription_to_string
from pulsarlab.clock import Scheduler, Timer
from pulsarlab.errors import PulsarError
from pulsarlab.event_catalogue.key_shared_scenario import (
    ASSIGN_REJECTED,
    CONSUMER_ADDED,
    CONSUMER_REMOVED,
    ENTRY_ROUTED,
    HASH_RANGES_MOVED,
    KEY_SELECTED,
    NOBODY,
    RANGE_ASSIGNED,
    RANGE_MERGED,
    RANGE_SPLIT,
    RING_POINT_ADDED,
    RING_POINT_COLLISION,
    RING_POINT_COLLISION_CLEARED,
    RING_POINT_REMOVED,
    RING_POINT_TAKEN_OVER,
    SELECTOR_EMPTY,
    STICKY_RANGES_ADDED,
    STICKY_RANGES_REMOVED,
)
from pulsarlab.events import EventLog
from pulsarlab.hashing import sticky_key
from pulsarlab.profiles import ConsistentHashingVariant, Profile, StickyHashMode, get_profile
from pulsarlab.scenarios.key_shared_timeline import Frame, Timeline

Snapshot = dict[str, Any]
Assignment = tuple[int, int, "int | None"]  # (start, end, consumer id or None for "nobody")


# ---------------------------------------------------------------------------------------------
# Snapshot helpers (pure functions of a snapshot; the views use them too)


def fmt_range(start: int, end: int) -> str:
    """Pulsar's `Range.toString()`: ``[start, end]``."""
    return f"[{start}, {end}]"


def fmt_ranges(ranges: Sequence[Sequence[int]], limit: int = 6) -> str:
    parts = [fmt_range(s, e) for s, e in ranges[:limit]]
    if len(ranges) > limit:
        parts.append(f"... ({len(ranges) - limit} more)")
    return ", ".join(parts)


def consumer_names(snapshot: Snapshot) -> dict[int, str]:
    """Consumer id -> name for the consumers listed in a snapshot."""
    return {cid: name for cid, name in snapshot.get("consumers", ())}


def snapshot_assignments(snapshot: Snapshot) -> list[Assignment]:
    """Who ``select()`` answers for every hash of the key-hash range: sorted ``(start, end, id|None)``.

    Covers ``snapshot["key_hash_range"]`` completely (``None`` = no consumer); adjacent ranges of the
    same owner are joined. Auto-split's top range ends at rangeSize as Pulsar reports it. For a shared
    ring point of the ≤3.0.2 selector (which picks ``list[hash % size]``) the first listed consumer is
    shown. Sticky ranges beyond the key-hash range are kept as declared.
    """
    lo, hi = snapshot["key_hash_range"]
    if "range_map" in snapshot:
        out: list[Assignment] = []
        start = lo
        for upper, cid in snapshot["range_map"]:
            out.append((start, upper, cid))
            start = upper + 1
        return out if out else [(lo, snapshot.get("range_size", hi), None)]
    if "ring" in snapshot:
        ring = snapshot["ring"]
        if not ring:
            return [(lo, hi, None)]
        out = []
        start = lo
        for point, selected, _others in ring:
            if point >= start:
                out.append((start, point, selected))
            start = point + 1
        if start <= hi:
            out.append((start, hi, ring[0][1]))
        return _join_adjacent(out)
    if "ranges" in snapshot:
        out = []
        cursor = lo
        for start, end, cid in sorted(snapshot["ranges"]):
            if start > cursor and cursor <= hi:
                out.append((cursor, min(start - 1, hi), None))
            out.append((start, end, cid))
            cursor = max(cursor, end + 1)
        if cursor <= hi:
            out.append((cursor, hi, None))
        return out
    raise ValueError(f"not a Key_Shared selector snapshot (keys: {sorted(snapshot)})")


def _join_adjacent(items: list[Assignment]) -> list[Assignment]:
    out: list[Assignment] = []
    for start, end, cid in items:
        if out and out[-1][2] == cid and out[-1][1] + 1 == start:
            out[-1] = (out[-1][0], end, cid)
        else:
            out.append((start, end, cid))
    return out


def ring_arc(snapshot: Snapshot, point: int) -> list[tuple[int, int]]:
    """The hashes a ring point serves: from just after the previous point up to it (wrapping)."""
    lo, hi = snapshot["key_hash_range"]
    points = [p for p, _s, _o in snapshot["ring"]]
    i = points.index(point)
    if len(points) == 1:
        return [(lo, hi)]
    if i > 0:
        return [(points[i - 1] + 1, point)]
    arcs = [(lo, point)] if point >= lo else []
    if points[-1] < hi:
        arcs.insert(0, (points[-1] + 1, hi))
    return arcs


def ring_point_for(snapshot: Snapshot, key_hash: int) -> int | None:
    """The ring point a hash lands on: the first point at or after it, wrapping to the first."""
    ring = snapshot.get("ring") or ()
    for point, _s, _o in ring:
        if point >= key_hash:
            return point
    return ring[0][0] if ring else None


def _name_or_id(names: dict[int, str], consumer_id: int) -> str:
    """A consumer's name, or its id as text when ``names`` does not list it."""
    return names.get(consumer_id, str(consumer_id))


def unowned_hashes(snapshot: Snapshot) -> int:
    """How many hashes of the key-hash range select no consumer."""
    lo, hi = snapshot["key_hash_range"]
    return sum(min(e, hi) - max(s, lo) + 1 for s, e, c in snapshot_assignments(snapshot) if c is None and s <= hi)


def _key_text(key: str | bytes) -> str:
    if isinstance(key, str):
        return repr(key)
    try:
        return repr(key.decode("utf-8"))
    except UnicodeDecodeError:
        return repr(bytes(key))


# ---------------------------------------------------------------------------------------------
# Results of the queries


@dataclass(frozen=True)
class KeySelection:
    """Where one key goes: its sticky hash, the consumer (None: it waits) and, on a ring, the point."""

    key: str | bytes
    hash: int
    consumer_id: int | None
    consumer_name: str | None
    point: int | None = None


@dataclass(frozen=True)
class RoutedEntry:
    """One batch entry as the broker sees it: the keys inside it and the consumer its sticky key picks."""

    keys: tuple[str | None, ...]
    sequence_id: int
    sticky_key: bytes
    hash: int
    consumer_id: int | None
    consumer_name: str | None


# ---------------------------------------------------------------------------------------------
# The driver


class KeySharedScenario:
    """One Key_Shared selector driven on a virtual clock, with an event log and a timeline.

    ``KeySharedScenario("auto_split", "4.0")``; extra keyword arguments go to the selector
    (``range_size=``, ``points=``). Consumers get ids 1, 2, ... in the order their joins run, and belong to the
    subscription ``subscription`` of ``topic`` (they print as a broker's consumers do, in error texts too).
    """

    def __init__(
        self,
        kind: str,
        version: str | Profile = "4.0",
        *,
        topic: str = "my-topic",
        subscription: str = "my-subscription",
        **selector_kwargs: Any,
    ) -> None:
        self._init(make_selector(kind, version, **selector_kwargs))
        self.subscription = subscription_to_string(topic, subscription)

    @classmethod
    def with_selector(cls, selector: StickyKeyConsumerSelector) -> "KeySharedScenario":
        """Drive an existing (empty) selector instead of building one."""
        if selector.consumers:
            raise ValueError("with_selector needs a selector with no consumers attached")
        scenario = cls.__new__(cls)
        scenario._init(selector)
        return scenario

    def _init(self, selector: StickyKeyConsumerSelector) -> None:
        self.selector = selector
        self.kind = selector.kind
        self.profile: Profile = get_profile(selector.profile)
        self.scheduler = Scheduler()
        self.log = EventLog()
        self.timeline = Timeline(self)
        self._next_id = 1
        self.subscription = subscription_to_string("my-topic", "my-subscription")
        self._frame_snapshots: list[Snapshot] = []
        self.last_error: PulsarError | None = None

    # -- clock --------------------------------------------------------------------------------
    @property
    def now(self) -> int:
        return self.scheduler.now()

    def advance(self, ms: int) -> int:
        """Move the clock ``ms`` forward, running the joins and leaves due on the way."""
        return self.scheduler.advance(ms)

    def run_until(self, t: int) -> int:
        return self.scheduler.run_until(t)

    def run_until_idle(self) -> int:
        """Run every scheduled join and leave."""
        return self.scheduler.run_until_idle()

    # -- state --------------------------------------------------------------------------------
    @property
    def version(self) -> str:
        return self.profile.name

    @property
    def consumers(self) -> list[Consumer]:
        """Attached consumers, in attach order."""
        return self.selector.consumers

    def consumer(self, name_or_id: str | int) -> Consumer:
        """The attached consumer with this id, or the earliest-attached one with this name."""
        for c in self.selector.consumers:
            if (isinstance(name_or_id, int) and not isinstance(name_or_id, bool) and c.id == name_or_id) or (
                isinstance(name_or_id, str) and c.name == name_or_id
            ):
                return c
        attached = ", ".join(f"{c.name} (id {c.id})" for c in self.selector.consumers) or "none"
        raise ValueError(f"no attached consumer {name_or_id!r}; attached: {attached}")

    def snapshot(self) -> Snapshot:
        """The selector's snapshot, with ``kind``, ``version`` and ``key_hash_range`` added if it lacks them."""
        snap = dict(self.selector.snapshot())
        snap.setdefault("kind", self.kind)
        snap.setdefault("version", self.profile.name)
        snap.setdefault("key_hash_range", tuple(self.selector.key_hash_range()))
        return snap

    def assignments(self) -> list[Assignment]:
        """Who ``select()`` answers for every hash now (see `snapshot_assignments`)."""
        return snapshot_assignments(self.snapshot())

    # -- operations ---------------------------------------------------------------------------
    def add(
        self,
        name: str,
        ranges: Sequence[Sequence[int]] | None = None,
        priority: int = 0,
        at: int | None = None,
    ) -> Consumer | Timer | None:
        """A consumer named ``name`` joins now (returns it, or None when Pulsar rejects it) or at ``at`` ms
        (returns the Timer). ``ranges``: the STICKY hash ranges, inclusive ``(start, end)`` pairs."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a consumer name must be a non-empty string, not {name!r}")
        if ranges is not None and self.kind != "sticky":
            raise ValueError(f"ranges apply to the sticky selector only; this scenario's selector is {self.kind}")
        fixed = None if ranges is None else tuple(_pair(r) for r in ranges)
        if at is not None:
            return self.scheduler.call_at(self._at(at), lambda: self._add(name, fixed, priority), f"add {name}")
        return self._add(name, fixed, priority)

    def remove(self, name_or_id: str | int, at: int | None = None) -> Consumer | Timer:
        """A consumer leaves now (returns it) or at ``at`` ms (returns the Timer; resolved when it runs)."""
        if at is not None:
            return self.scheduler.call_at(self._at(at), lambda: self._remove(name_or_id), f"remove {name_or_id}")
        return self._remove(name_or_id)

    def _at(self, at: Any) -> int:
        if isinstance(at, bool) or not isinstance(at, int) or at < self.now:
            raise ValueError(f"at= must be a virtual time in ms, an int >= now ({self.now}), not {at!r}")
        return at

    def _add(self, name: str, ranges: tuple[tuple[int, int], ...] | None, priority: int) -> Consumer | None:
        consumer = Consumer(self._next_id, name, priority, ranges, self.subscription)
        self._next_id += 1
        before = self.snapshot()
        before_assign = snapshot_assignments(before)
        try:
            self.selector.add_consumer(consumer)
        except PulsarError as exc:
            self.last_error = exc
            self._emit(
                ASSIGN_REJECTED,
                before,
                consumer=consumer.id,
                name=name,
                ranges=None if ranges is None else [list(r) for r in ranges],
                exception=type(exc).__name__,
                error=str(exc),
                why=self._rejection_why(exc),
            )
            return None
        after = self.snapshot()
        names = consumer_names(after)
        self._emit(
            CONSUMER_ADDED,
            _with_consumers(before, after),
            consumer=consumer.id,
            name=name,
            priority=priority,
            selector=self.kind,
            why=self._join_why(consumer, first=not before.get("consumers")),
        )
        if self.kind == "auto_split":
            self._auto_split_added(consumer, before, after)
        elif self.kind == "consistent_hashing":
            self._ring_diff(consumer, before, after, joining=True)
        else:
            self._emit(
                STICKY_RANGES_ADDED,
                after,
                consumer=consumer.id,
                name=name,
                ranges=[list(r) for r in ranges or ()],
                text=fmt_ranges(sorted(ranges or ())),
                unowned=unowned_hashes(after),
            )
        self._moved(before_assign, after, names)
        return consumer

    def _remove(self, name_or_id: str | int) -> Consumer:
        consumer = self.consumer(name_or_id)
        before = self.snapshot()
        before_assign = snapshot_assignments(before)
        self.selector.remove_consumer(consumer)
        after = self.snapshot()
        names = consumer_names(before)
        self._emit(
            CONSUMER_REMOVED,
            before,
            consumer=consumer.id,
            name=consumer.name,
            selector=self.kind,
            why=self._leave_why(),
        )
        if self.kind == "auto_split":
            self._auto_split_removed(consumer, before, after)
        elif self.kind == "consistent_hashing":
            self._ring_diff(consumer, before, after, joining=False)
        else:
            own = sorted((s, e) for s, e, cid in before["ranges"] if cid == consumer.id)
            self._emit(
                STICKY_RANGES_REMOVED,
                after,
                consumer=consumer.id,
                name=consumer.name,
                ranges=[list(r) for r in own],
                text=fmt_ranges(own),
                unowned=unowned_hashes(after),
            )
        if not after.get("consumers"):
            self._emit(SELECTOR_EMPTY, after, name=consumer.name)
        self._moved(before_assign, after, names)
        return consumer

    # -- queries recorded as events -----------------------------------------------------------
    def select_keys(self, keys: Sequence[str | bytes], record: bool = True) -> list[KeySelection]:
        """Which consumer each key goes to now (the model's ``select``); recorded as key_selected events."""
        if isinstance(keys, (str, bytes)):
            raise TypeError("select_keys takes a list of keys; wrap a single key in a list")
        snap = self.snapshot()
        out = []
        for key in keys:
            h = self.selector.make_sticky_key_hash(key)
            c = self.selector.select(h)
            point = ring_point_for(snap, h) if "ring" in snap else None
            sel = KeySelection(key, h, c.id if c else None, c.name if c else None, point)
            out.append(sel)
            if record:
                self._emit(
                    KEY_SELECTED,
                    snap,
                    key=_key_text(key),
                    hash=h,
                    consumer=sel.consumer_id,
                    name=sel.consumer_name or NOBODY,
                    point=point,
                    why=self._select_why(sel, snap),
                )
        return out

    def route_batch(
        self,
        keys: Sequence[str | None],
        batcher: str = "DEFAULT",
        producer_name: str = "producer-1",
        first_sequence_id: int = 0,
        record: bool = True,
    ) -> list[RoutedEntry]:
        """Send ``keys`` (None = keyless) as one producer batch and route the resulting entries.

        ``DEFAULT`` (BatchMessageContainerImpl): one entry whose metadata carries the first message's key
        and the batch's lowest sequence id, so one consumer gets every key. ``KEY_BASED``
        (BatchMessageKeyBasedContainer): one sub-batch per key, sequence id = its highest, sent in that
        order (docs/guide/sticky-key-hashing.md#sticky-key, docs/guide/producer-batching.md#key-based-batching).
        """
        if isinstance(keys, (str, bytes)):
            raise TypeError("route_batch takes a list of message keys (None for a keyless message)")
        keys = list(keys)
        if not keys:
            raise ValueError("a batch needs at least one message")
        seqs = list(range(first_sequence_id, first_sequence_id + len(keys)))
        mode = batcher.upper()
        if mode == "DEFAULT":
            groups = [(keys, seqs[0], keys[0])]
        elif mode == "KEY_BASED":
            by_key: dict[str | None, list[int]] = {}
            for k, s in zip(keys, seqs):
                by_key.setdefault(k, []).append(s)
            groups = sorted(((([k] * len(ss)), max(ss), k) for k, ss in by_key.items()), key=lambda g: g[1])
        else:
            raise ValueError(f"batcher must be 'DEFAULT' or 'KEY_BASED', not {batcher!r}")
        snap = self.snapshot()
        out = []
        for entry_keys, seq, first in groups:
            skey = sticky_key(self.profile, partition_key=first, producer_name=producer_name, sequence_id=seq)
            h = self.selector.make_sticky_key_hash(skey)
            c = self.selector.select(h)
            entry = RoutedEntry(tuple(entry_keys), seq, skey, h, c.id if c else None, c.name if c else None)
            out.append(entry)
            if record:
                self._emit(
                    ENTRY_ROUTED,
                    snap,
                    keys=list(entry_keys),
                    sticky_key=_key_text(skey),
                    hash=h,
                    consumer=entry.consumer_id,
                    name=entry.consumer_name or NOBODY,
                    why=self._batch_why(mode, first, len(entry_keys), seq, producer_name),
                )
        return out

    # -- diffs -> events ----------------------------------------------------------------------
    def _emit(self, et, snapshot: Snapshot, **values: Any) -> None:
        self.log.append(et, self.now, **values)
        self._frame_snapshots.append(snapshot)

    def _auto_split_added(self, consumer: Consumer, before: Snapshot, after: Snapshot) -> None:
        uppers = [u for u, _ in after["range_map"]]
        i = next(j for j, (_u, cid) in enumerate(after["range_map"]) if cid == consumer.id)
        start = uppers[i - 1] + 1 if i > 0 else 0
        if not before["range_map"]:
            self._emit(RANGE_ASSIGNED, after, consumer=consumer.id, name=consumer.name, range=[start, uppers[i]])
            return
        donor_upper, donor = after["range_map"][i + 1]
        names = consumer_names(after)
        self._emit(
            RANGE_SPLIT,
            after,
            consumer=consumer.id,
            name=consumer.name,
            donor=donor,
            donor_name=_name_or_id(names, donor),
            taken=[start, uppers[i]],
            donor_range=[start, donor_upper],
        )

    def _auto_split_removed(self, consumer: Consumer, before: Snapshot, after: Snapshot) -> None:
        rmap = before["range_map"]
        i = next(j for j, (_u, cid) in enumerate(rmap) if cid == consumer.id)
        if len(rmap) == 1:
            return
        names = consumer_names(before)
        start = rmap[i - 1][0] + 1 if i > 0 else 0
        freed = [start, rmap[i][0]]
        if i == len(rmap) - 1:
            into = rmap[i - 1][1]
            into_start = rmap[i - 2][0] + 1 if i > 1 else 0
            why = (
                f"auto-split: {consumer.name} held the top range, whose upper bound must stay rangeSize "
                f"{rmap[i][0]}, so the lower neighbour {names[into]} moves up to it"
            )
            result = [into_start, rmap[i][0]]
        else:
            into = rmap[i + 1][1]
            why = "auto-split: a leaving consumer's range merges into the consumer with the next higher upper bound"
            result = [start, rmap[i + 1][0]]
        self._emit(
            RANGE_MERGED,
            after,
            name=consumer.name,
            into=into,
            into_name=names[into],
            freed=freed,
            result=result,
            why=why,
        )

    def _ring_diff(self, consumer: Consumer, before: Snapshot, after: Snapshot, joining: bool) -> None:
        old = {p: (sel, tuple(others)) for p, sel, others in before["ring"]}
        new = {p: (sel, tuple(others)) for p, sel, others in after["ring"]}
        names = {**consumer_names(before), **consumer_names(after)}
        current = dict(old)
        changed = _ring_change_order(old, new, joining)
        for n, point in enumerate(changed):
            was, now = old.get(point), new.get(point)
            view_before = self._ring_frame(before, after, current)
            if now is None:
                current.pop(point)
            else:
                current[point] = now
            last = n == len(changed) - 1
            frame = after if last else self._ring_frame(before, after, current)
            if was is None:
                self._emit_point_added(consumer, point, view_before, frame, names)
            elif now is None:
                self._emit_point_removed(consumer, point, view_before, frame, names)
            elif joining:
                self._emit(
                    RING_POINT_COLLISION,
                    frame,
                    consumer=consumer.id,
                    name=consumer.name,
                    point=point,
                    holder=was[0],
                    holder_name=_name_or_id(names, was[0]),
                    why=self._collision_why(consumer.name, _name_or_id(names, was[0]), now, names),
                )
            elif was[0] != now[0]:
                self._emit(
                    RING_POINT_TAKEN_OVER,
                    frame,
                    consumer=consumer.id,
                    name=consumer.name,
                    point=point,
                    new=now[0],
                    new_name=_name_or_id(names, now[0]),
                    why=self._takeover_why(),
                )
            else:
                self._emit(
                    RING_POINT_COLLISION_CLEARED,
                    frame,
                    consumer=consumer.id,
                    name=consumer.name,
                    point=point,
                    holder=now[0],
                    holder_name=_name_or_id(names, now[0]),
                )

    def _ring_frame(self, before: Snapshot, after: Snapshot, ring: dict) -> Snapshot:
        frame = dict(after)
        frame["ring"] = tuple((p, sel, others) for p, (sel, others) in sorted(ring.items()))
        frame["consumers"] = _with_consumers(before, after)["consumers"]
        return frame

    def _emit_point_added(self, consumer, point, before_frame, frame, names) -> None:
        arcs = ring_arc(frame, point)
        prev = {cid for s, e, cid in snapshot_assignments(before_frame) for a, b in arcs if s <= b and e >= a}
        prev.discard(None)
        text = fmt_ranges(arcs)
        if not before_frame["ring"]:
            change = f"the ring was empty, so every hash {text} goes to {consumer.name}"
            moved_from = None
        elif prev == {consumer.id}:
            change = f"hashes {text} were already {consumer.name}'s"
            moved_from = None
        else:
            moved_from = min(prev) if len(prev) == 1 else None
            olds = " and ".join(_name_or_id(names, p) for p in sorted(prev)) or NOBODY
            change = f"hashes {text} move from {olds} to {consumer.name}"
        self._emit(
            RING_POINT_ADDED,
            frame,
            consumer=consumer.id,
            name=consumer.name,
            point=point,
            moved_from=moved_from,
            change=change,
        )

    def _emit_point_removed(self, consumer, point, before_frame, frame, names) -> None:
        arcs = ring_arc(before_frame, point)
        text = fmt_ranges(arcs)
        to = ring_point_for(frame, point)
        if to is None:
            moved_to, change = None, f"hashes {text} now select nobody"
        else:
            moved_to = dict((p, s) for p, s, _o in frame["ring"])[to]
            change = f"hashes {text} go on clockwise to point {to} of {_name_or_id(names, moved_to)}"
        self._emit(
            RING_POINT_REMOVED,
            frame,
            consumer=consumer.id,
            name=consumer.name,
            point=point,
            moved_to=moved_to,
            change=change,
        )

    def _moved(self, before_assign: list[Assignment], after: Snapshot, names: dict[int, str]) -> None:
        names = {**names, **consumer_names(after)}
        lo, hi = after["key_hash_range"]
        diff = diff_ranges(before_assign, snapshot_assignments(after))
        pairs: dict[tuple, list[tuple[int, int]]] = {}
        for (s, e), (b, a) in diff.items():
            if b != a:
                pairs.setdefault((b, a), []).append((s, e))
        for (b, a), ranges in sorted(pairs.items(), key=lambda kv: min(kv[1])):
            ranges.sort()
            size = sum(max(0, min(e, hi) - max(s, lo) + 1) for s, e in ranges)  # auto-split reports up to rangeSize
            plural = "s" if len(ranges) > 1 else ""
            self._emit(
                HASH_RANGES_MOVED,
                after,
                from_id=b,
                from_name=names.get(b, NOBODY) if b is not None else NOBODY,
                to_id=a,
                to_name=names.get(a, NOBODY) if a is not None else NOBODY,
                ranges=[list(r) for r in ranges],
                summary=f"{len(ranges)} range{plural}, {size} hashes: {fmt_ranges(ranges)}",
            )

    # -- the rule texts -----------------------------------------------------------------------
    def _point_key_rule(self) -> str:
        variant = self.profile.consistent_hashing
        if variant is ConsistentHashingVariant.LEGACY:
            return 'point i = hash(name + i), no separator (<=3.0.2; "c1"+"10" == "c11"+"0", issue #22050)'
        if variant is ConsistentHashingVariant.V3_COUNTERS:
            return 'point i = hash(name + "\\0" + i), full 31-bit hash (3.0.3-3.0.6, #22053)'
        if variant is ConsistentHashingVariant.V3_IDENTITY:
            return 'point i = hash(name + "\\0" + nameIndex + "\\0" + i), full 31-bit hash (3.0.7+, #23327)'
        return 'point i = hash(name + "\\0" + nameIndex + "\\0" + i) % 65535 + 1 (4.x)'

    def _collision_why(self, newcomer: str, holder: str, now: tuple, names: dict[int, str]) -> str:
        variant = self.profile.consistent_hashing
        selected = _name_or_id(names, now[0])
        if variant is ConsistentHashingVariant.V4:
            return (
                f"4.x putIfAbsent: {holder} keeps the point and {newcomer} is appended to its colliding "
                f"list; {newcomer} takes over only if {holder} leaves (#23441)"
            )
        if variant is ConsistentHashingVariant.V3_IDENTITY:
            return f"3.0.7+ put() replaces: {selected} now owns the point and {holder} loses it (#23327)"
        if variant is ConsistentHashingVariant.V3_COUNTERS:
            return (
                f"3.0.3-3.0.6: the point keeps a list ordered by priority, name, selection count; "
                f"the first entry, {selected}, is selected"
            )
        return "<=3.0.2: the point keeps a list and select() picks list[hash % list size]"

    def _takeover_why(self) -> str:
        if self.profile.consistent_hashing is ConsistentHashingVariant.V4:
            return "4.x: the first consumer in the point's colliding list takes it over"
        return "the next consumer listed at the shared point is selected"

    def _join_why(self, consumer: Consumer, first: bool) -> str:
        if self.kind == "auto_split":
            if first:
                return "auto-split: the first consumer gets the whole range"
            return "auto-split: it will take the lower half of the largest range"
        if self.kind == "consistent_hashing":
            return f"consistent hashing: it places its points on the ring, {self._point_key_rule()}"
        return f"STICKY: it asks for {fmt_ranges(sorted(consumer.ranges or ()))}"

    def _leave_why(self) -> str:
        if self.kind == "auto_split":
            return "auto-split: its range merges into a neighbour"
        if self.kind == "consistent_hashing":
            return "consistent hashing: its points leave the ring; their keys go on clockwise"
        return "STICKY: its ranges become unowned"

    def _rejection_why(self, exc: PulsarError) -> str:
        text = str(exc)
        if text.startswith("Range conflict"):
            return "STICKY: ranges of different consumers may not overlap; both ends are inclusive"
        if text.startswith("No more range"):
            return "auto-split: the largest range has at most 1 slot left to split"
        if "own ranges conflict" in text:
            return "STICKY: a consumer's own ranges may not overlap each other"
        if "must not be empty" in text or "key shared meta" in text:
            return "STICKY: a consumer must declare at least one hash range"
        if "start > end" in text:
            return "STICKY: a range is inclusive [start, end] with start <= end"
        return f"{type(exc).__name__} from the selector, as Pulsar reports it"

    def _select_why(self, sel: KeySelection, snap: Snapshot) -> str:
        if self.kind == "consistent_hashing":
            if sel.point is None:
                return "consistent hashing: the ring is empty"
            wrap = " (wrapping past the top)" if sel.point < sel.hash else ""
            return f"consistent hashing: the first ring point at or after the hash is {sel.point}{wrap}"
        slot = sel.hash
        note = ""
        if self.profile.sticky_hash_mode is StickyHashMode.FULL:
            slot = sel.hash % snap.get("range_size", 65536)
            note = f"slot {sel.hash} % {snap.get('range_size', 65536)} = {slot}; "
        for s, e, cid in snapshot_assignments(snap):
            if s <= slot <= e and cid is not None:
                what = "auto-split: the range" if self.kind == "auto_split" else "STICKY: the range"
                return f"{note}{what} {fmt_range(s, e)} holds it"
        return f"{note}no consumer owns hash {slot}: its messages wait until one does"

    def _batch_why(self, mode: str, first: str | None, n: int, seq: int, producer: str) -> str:
        if first is None:
            if self.profile.keyless_producer_sequence_key:
                basis = f"keyless: 4.0+ hashes producerName-sequenceId = '{producer}-{seq}'"
            else:
                basis = "keyless: 3.x hashes the constant NONE_KEY, so all keyless entries go to one consumer"
        else:
            basis = f"routed by the key {first!r}"
        if mode == "DEFAULT":
            return f"default batcher: {n} messages in one entry whose metadata carries the FIRST message's key; {basis}"
        return f"KEY_BASED batcher: one sub-batch per key, sequence id {seq} = its highest; {basis}"


def _ring_change_order(old: dict, new: dict, joining: bool) -> list[int]:
    """The changed ring points in the order the frames apply them, so each frame's hashes move straight
    between the old and the final owner: clockwise after a surviving point for a join, counter-clockwise
    for a leave (ascending / descending when no point survives)."""
    changed = {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}
    every = sorted(old.keys() | new.keys())
    anchors = [p for p in every if p in old and p in new]
    if not anchors:
        return sorted(changed, reverse=not joining)
    i = every.index(anchors[0])
    if joining:
        walk = every[i + 1 :] + every[: i + 1]
    else:
        walk = every[i - 1 :: -1] + every[:i:-1] + [every[i]] if i > 0 else every[::-1][:-1] + [every[0]]
    return [p for p in walk if p in changed]


def _pair(r: Any) -> tuple[int, int]:
    try:
        start, end = r
    except (TypeError, ValueError):
        raise ValueError(f"a sticky range must be a (start, end) pair, not {r!r}") from None
    if isinstance(start, bool) or isinstance(end, bool) or not isinstance(start, int) or not isinstance(end, int):
        raise ValueError(f"a sticky range must be two ints, not {r!r}")
    return start, end


def _with_consumers(before: Snapshot, after: Snapshot) -> Snapshot:
    """``before`` with the consumers of both sides listed (for frames between the two)."""
    frame = dict(before)
    seen = dict(before.get("consumers", ()))
    seen.update(dict(after.get("consumers", ())))
    frame["consumers"] = tuple(seen.items())
    return frame


__all__ = [
    "Frame",
    "KeySelection",
    "KeySharedScenario",
    "RoutedEntry",
    "Timeline",
    "consumer_names",
    "fmt_range",
    "fmt_ranges",
    "ring_arc",
    "ring_point_for",
    "snapshot_assignments",
    "unowned_hashes",
]
