"""A `LabSnapshot` drawn from what a real broker's admin API answered, so the lab's views show a real cluster.

Models no Pulsar class: it maps the fields of ``stats`` (`TopicStatsImpl`, `SubscriptionStatsImpl`,
`ConsumerStatsImpl`) and ``stats-internal`` (`PersistentTopicInternalStats`, `ManagedCursorImpl`'s fields) read
by `pulsarlab.importers` onto the snapshot dataclasses of `pulsarlab.snapshot.lab`, field by field:
mark-delete and read positions, ``individuallyDeletedMessages`` (the ack holes), each consumer's permits,
unacked count and blocked flag, the Key_Shared hash ranges (``keyHashRangeArrays`` in 4.x, ``keyHashRanges``
in 3.x) and 4.x draining hashes with their blocked attempts, the recently joined consumers of classic
Key_Shared (``consumersAfterMarkDeletePosition``).

Simplifies, because the admin API does not say: entries carry no key and no batch size (None), so the cursor view
draws entries, not messages; ledgers are listed from the mark-delete's ledger on, each cut at `MAX_ENTRIES`
entries; consumer ids are the watch's own (numbered by first appearance of each name; stats print no consumer
id); the replay set's positions are unknown (``msgInReplay`` is a count: ``replay`` stays empty) and so are the
blocked hashes' positions; priority levels, receiver queues and the client's ack grouping are not in the stats
(None or 0).
"""

from __future__ import annotations

from typing import Any

from pulsarlab.importers import (
    ConsumerStats,
    CursorStats,
    PartitionedTopicInternalStats,
    PersistentTopicInternalStats,
    SubscriptionStats,
    TopicStats,
    infer_line,
)
from pulsarlab.profiles import PROFILES
from pulsarlab.snapshot.base import Pos, RawRange
from pulsarlab.snapshot.lab import (
    ConsumerSnap,
    CursorSnap,
    DispatcherSnap,
    DrainingHash,
    HashAssignment,
    LabSnapshot,
    LedgerSnap,
    SubscriptionSnap,
    TopicSnap,
)
from pulsarlab.watch.readings import Reading

MAX_ENTRIES = 400  # entries of one ledger a snapshot lists at most (the cursor view draws a window of 240)
HASH_RANGE = (0, 65535)  # Pulsar's Key_Shared hash range
_TYPE_NAMES = {"Exclusive": "Exclusive", "Shared": "Shared", "Failover": "Failover", "KeyShared": "Key_Shared"}


def profile_for(broker_version: str | None, stats: list[TopicStats]) -> tuple[str, str]:
    """The lab profile closest to what was observed and how it was chosen: the broker's version when it answered
    one, else the Key_Shared fields the stats carry (`infer_line`), else the newest 4.x line the lab models."""
    if broker_version:
        parts = broker_version.split("-")[0].split(".")
        line = ".".join(parts[:2])
        if line in PROFILES:
            return line, f"the broker's version {broker_version}"
        major = [p for p in PROFILES if p.split(".")[0] == parts[0]]
        if major:
            return major[-1], f"the broker's version {broker_version} (modelled as {major[-1]})"
    for s in stats:
        guessed = infer_line(s)
        if guessed == "4.x":
            return "4.0", "the 4.x Key_Shared fields in the stats (keyHashRangeArrays, drainingHashes)"
        if guessed == "3.x":
            return "3.0", "the 3.x Key_Shared fields in the stats (keyHashRanges, readPositionWhenJoining)"
    return "4.0", "nothing in the stats names a version: 4.0 assumed"


class ObservedSnapshots:
    """Builds snapshots of polls; keeps consumer ids stable across polls (one id per consumer name)."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str, str], int] = {}
        self._topic_ids: dict[str, int] = {}

    def _consumer_id(self, topic: str, sub: str, name: str) -> int:
        return self._ids.setdefault((topic, sub, name), len(self._ids))

    def build(self, readings: list[Reading], time_ms: int, poll: int, version: str) -> LabSnapshot:
        topics: list[TopicSnap] = []
        partitioned: list[tuple[str, int]] = []
        for r in readings:
            stats, internal = r.parsed()
            if r.partitions:
                partitioned.append((r.topic, r.partitions))
                parts = internal.partitions if isinstance(internal, PartitionedTopicInternalStats) else {}
                for i in range(r.partitions):
                    name = f"{r.topic}-partition-{i}"
                    topics.append(self._topic(name, i, stats.partitions.get(name), parts.get(name)))
            else:
                assert not isinstance(internal, PartitionedTopicInternalStats)
                topics.append(self._topic(r.topic, -1, stats, internal))
        return LabSnapshot(
            version=version,
            time=time_ms,
            event_index=poll,
            topics=tuple(topics),
            partitioned=tuple(sorted(partitioned)),
            config=(),
        )

    def _topic(
        self, name: str, index: int, stats: TopicStats | None, internal: PersistentTopicInternalStats | None
    ) -> TopicSnap:
        tid = self._topic_ids.setdefault(name, len(self._topic_ids))
        sizes = internal.ledger_entries() if internal is not None else {}
        lac = internal.last_confirmed_entry if internal is not None else None
        cursors = internal.cursors if internal is not None else {}
        marks = [c.mark_delete_position for c in cursors.values() if c.mark_delete_position is not None]
        first = min((p.ledger_id for p in marks), default=None)
        current = max(sizes, default=None)
        ledgers = tuple(
            LedgerSnap(lid, (None,) * min(n, MAX_ENTRIES), (None,) * min(n, MAX_ENTRIES), lid == current)
            for lid, n in sorted(sizes.items())
            if first is None or lid >= first
        )
        subs = stats.subscriptions if stats is not None else {}
        names = list(subs) + [c for c in cursors if c not in subs]
        return TopicSnap(
            name=name,
            id=tid,
            partition_index=index,
            ledgers=ledgers,
            last_confirmed=(lac.ledger_id, lac.entry_id) if lac is not None else (-1, -1),
            subscriptions=tuple(self._subscription(name, s, subs.get(s), cursors.get(s), sizes) for s in names),
        )

    def _subscription(
        self, topic: str, name: str, sub: SubscriptionStats | None, cursor: CursorStats | None, sizes: dict[int, int]
    ) -> SubscriptionSnap:
        kind = _TYPE_NAMES[sub.type.name] if sub is not None and sub.type is not None else None
        consumers = sub.consumers if sub is not None else ()
        ids = [self._consumer_id(topic, name, _name(c, i)) for i, c in enumerate(consumers)]
        dispatcher = _dispatcher(kind, sub, consumers, ids) if sub is not None and kind is not None else None
        snaps = tuple(_consumer(c, cid, _name(c, i), dispatcher) for i, (c, cid) in enumerate(zip(consumers, ids)))
        return SubscriptionSnap(
            name=name,
            id=len(ids),
            topic=topic,
            type=kind,
            cursor=_cursor(cursor, sub, sizes),
            dispatcher=dispatcher,
            consumers=snaps,
        )


def _name(c: ConsumerStats, i: int) -> str:
    return c.consumer_name or f"consumer-{i}"


def _pos(p: Any) -> Pos:
    return (p.ledger_id, p.entry_id) if p is not None else (-1, -1)


def _ranges(cursor: CursorStats, sizes: dict[int, int]) -> tuple[RawRange, ...]:
    """The ack ranges per ledger, as the model's cursor holds them (a range over ledgers split at their ends)."""
    out: list[RawRange] = []
    for r in cursor.ack_ranges:
        if r.lower_ledger == r.upper_ledger:
            out.append((r.lower_ledger, r.lower_entry, r.upper_ledger, r.upper_entry))
            continue
        out.append((r.lower_ledger, r.lower_entry, r.lower_ledger, sizes.get(r.lower_ledger, r.lower_entry + 1) - 1))
        for lid in sorted(sizes):
            if r.lower_ledger < lid < r.upper_ledger and sizes[lid]:
                out.append((lid, -1, lid, sizes[lid] - 1))
        out.append((r.upper_ledger, -1, r.upper_ledger, r.upper_entry))
    return tuple(out)


def _cursor(cursor: CursorStats | None, sub: SubscriptionStats | None, sizes: dict[int, int]) -> CursorSnap:
    backlog = sub.msg_backlog if sub is not None else 0
    if cursor is None:
        return CursorSnap((-1, -1), (-1, -1), (), "[]", (), 0, backlog)
    return CursorSnap(
        mark_delete=_pos(cursor.mark_delete_position),
        read_position=_pos(cursor.read_position),
        individually_deleted=_ranges(cursor, sizes),
        individually_deleted_messages=cursor.individually_deleted_messages or "[]",
        batch_acks=(),
        messages_consumed=cursor.messages_consumed_counter,
        backlog=backlog,
    )


def _dispatcher(
    kind: str, sub: SubscriptionStats, consumers: tuple[ConsumerStats, ...], ids: list[int]
) -> DispatcherSnap:
    order = tuple(ids)
    if kind in ("Exclusive", "Failover"):
        active = None
        for c, cid in zip(consumers, ids):
            if sub.active_consumer_name is not None and c.consumer_name == sub.active_consumer_name:
                active = cid
        if active is None and kind == "Exclusive" and ids:
            active = ids[0]
        return DispatcherSnap(type=kind, consumer_order=order, active_consumer=active)
    base: dict[str, Any] = dict(
        type=kind,
        consumer_order=order,
        total_available_permits=sum(c.available_permits for c in consumers),
        total_unacked=sub.unacked_messages,
        blocked_on_unacked=sub.blocked_subscription_on_unacked_msgs,
    )
    if kind != "Key_Shared":
        return DispatcherSnap(**base)
    assignments = []
    draining = []
    for c, cid in zip(consumers, ids):
        ranges = c.key_hash_range_arrays if c.key_hash_range_arrays is not None else c.key_hash_ranges or ()
        assignments.extend(HashAssignment(r.start, r.end, cid) for r in ranges)
        draining.extend(DrainingHash(d.hash, cid, d.unack_msgs, d.blocked_attempts) for d in c.draining_hashes)
    by_name = dict(zip((c.consumer_name for c in consumers), ids))
    joined = tuple((by_name[n], _pos(p)) for n, p in sub.consumers_after_mark_delete_position.items() if n in by_name)
    mode = (
        {"AutoSplit": "AUTO_SPLIT", "Sticky": "STICKY"}[sub.key_shared_mode.name]
        if sub.key_shared_mode is not None
        else None
    )
    return DispatcherSnap(
        **base,
        key_shared_mode=mode,
        classic=None,
        allow_out_of_order=sub.allow_out_of_order_delivery,
        key_hash_range=HASH_RANGE,
        assignments=tuple(sorted(assignments, key=lambda a: a.start)),
        draining=tuple(sorted(draining, key=lambda d: d.hash)),
        recently_joined=joined,
    )


def _consumer(c: ConsumerStats, cid: int, name: str, dispatcher: DispatcherSnap | None) -> ConsumerSnap:
    single = dispatcher is not None and dispatcher.type in ("Exclusive", "Failover")
    return ConsumerSnap(
        id=cid,
        name=name,
        priority=0,
        partition=-1,
        connected=True,
        active=(dispatcher.active_consumer == cid) if single and dispatcher is not None else None,
        permits=c.available_permits,
        parked_permits=0,
        in_flight=c.unacked_messages,
        unacked=c.unacked_messages,
        pending_acks=(),
        blocked=c.blocked_consumer_on_unacked_msgs,
        max_unacked=0,
        read_position_when_joining=str(c.read_position_when_joining) if c.read_position_when_joining else None,
    )


__all__ = ["HASH_RANGE", "MAX_ENTRIES", "ObservedSnapshots", "profile_for"]
