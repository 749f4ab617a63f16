"""A picture of a lab for the views, and a recorder that keeps one per event so a player can step back.

Usage::

    import pulsarlab as pl
    from pulsarlab.snapshot.lab import snapshot
    from pulsarlab.snapshot.recorder import Recorder

    lab = pl.Lab(version="4.0", seed=1, broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    rec = Recorder(lab)                  # before the run; every=1: a frame per event (or every=n, or a set of kinds)
    ...                                  # drive the lab: subscribe, send, receive, acknowledge, advance
    snap = snapshot(lab)                 # the state now (rec[i].snapshot: the state right after frame i's event)
    sub = snap.subscription("orders", "sub")
    sub.cursor.mark_delete, sub.cursor.individually_deleted_messages, sub.consumers[0].permits
    json.dumps(snap.to_dict())           # snapshots are JSON-friendly

    from pulsarlab_widgets.player import Player
    from pulsarlab_widgets.views.cursor import cursor_view
    Player(rec, [cursor_view])           # a Recorder is a timeline: len(rec), rec[i].snapshot / .explanation
    rec.close()                          # stop listening (frames stay); Recorder lives in pulsarlab.snapshot.recorder

Models no Pulsar class. It reads the model through public attributes and read-only methods - what ``stats`` and
``stats-internal`` print (`TopicStatsImpl` / `PersistentTopicInternalStats`) plus what a debugger would see inside the
broker: the managed
ledger's entries and batch sizes, the cursor (`ManagedCursorImpl`: mark-delete and read positions,
``individuallyDeletedMessages`` ranges, ``batchDeletedIndexes``), the dispatcher (active consumer, replay
set, Key_Shared selector ranges, draining hashes, recently joined consumers, which hashes wait and why, the
delayed-delivery tracker (`delayed_snapshot`))
and each consumer on both sides (broker permits and pending acks; the client's receiver queue, returned
permits and `AcknowledgmentsGroupingTracker` state, reached through the broker consumer's ``cnx``, the
model client's per-partition consumer). It never calls anything that changes the model. Everything is
copied into frozen dataclasses of
ints, strings, tuples and None, so a snapshot never changes after it is taken and
``to_dict()`` / ``to_json()`` give plain JSON. ``redelivery`` holds each message's redelivery steps and the
client trackers' internals (`pulsarlab.snapshot.redelivery`).

Simplifies: a frame is taken inside the event log's listener, i.e. at the instant the event was logged;
a model operation may not be finished then (after a ``dispatched`` event the entry is not yet in the
client's receiver queue: it is "on the wire"). The reason a waiting Key_Shared hash is blocked is the one
the dispatcher's rules give for it now (`KeySharedDispatcher.blocked_hash_reason`, the rules its reads apply),
not its last attempt's; the ``hash_blocked`` events carry the reason of each attempt. Client-side fields are None
when a consumer's connection is not the model's own client (e.g. the binary-protocol front end).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from pulsarlab.event_catalogue import broker as ev
from pulsarlab.ids import MessageId
from pulsarlab.managed_ledger.position import Position
from pulsarlab.snapshot.base import History, Pos, RawRange, Sample, jsonable, short_topic
from pulsarlab.snapshot.chunks import ChunkInfo, ChunkTrackerSnap, chunk_info, chunk_tracker_snap
from pulsarlab.snapshot.delayed import DelayedTrackerSnap, delayed_snapshot
from pulsarlab.snapshot.redelivery import RedeliverySnap, RedeliverySnapshotBuilder

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.key_shared.base import StickyKeyConsumerSelector
    from pulsarlab.broker.subscription import Dispatcher, PersistentSubscription
    from pulsarlab.broker.topic import PersistentTopic
    from pulsarlab.client.ack_grouping import AcknowledgmentsGroupingTracker
    from pulsarlab.lab import Lab
    from pulsarlab.managed_ledger.cursor import ManagedCursor
    from pulsarlab.managed_ledger.ledger import ManagedLedger
    from pulsarlab.messages import EntryData

# ---------------------------------------------------------------------------------------------
# The snapshot's parts


@dataclass(frozen=True)
class LedgerSnap:
    """One ledger of a topic's managed ledger: its entries' batch sizes (None: not a batch) and keys."""

    ledger_id: int
    batch_sizes: tuple[int | None, ...]
    keys: tuple[str | None, ...]
    open: bool
    chunks: tuple[ChunkInfo | None, ...] = ()  # per entry: its chunk fields, None when it is not a chunk

    @property
    def entries(self) -> int:
        return len(self.batch_sizes)

    def messages(self, entry: int) -> int:
        """Messages in one entry (a batch's size, else 1)."""
        n = self.batch_sizes[entry]
        return 1 if n is None else n


@dataclass(frozen=True)
class BatchBits:
    """A partially acknowledged batch entry: bit i of ``unacked_mask`` set = message i not yet acked."""

    ledger: int
    entry: int
    size: int
    unacked_mask: int

    @property
    def acked(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.size) if not (self.unacked_mask >> i) & 1)

    @property
    def unacked(self) -> tuple[int, ...]:
        return tuple(i for i in range(self.size) if (self.unacked_mask >> i) & 1)


@dataclass(frozen=True)
class CursorSnap:
    """A subscription's `ManagedCursor`: positions, the individually deleted ranges, batch ack bits."""

    mark_delete: Pos
    read_position: Pos
    individually_deleted: tuple[RawRange, ...]
    individually_deleted_messages: str
    batch_acks: tuple[BatchBits, ...]
    messages_consumed: int
    backlog: int

    def is_deleted(self, ledger: int, entry: int) -> bool:
        """Acknowledged as a whole: at or before the mark-delete position, or in an individually deleted range."""
        if (ledger, entry) <= self.mark_delete:
            return True
        return any(l == ledger and a < entry <= b for l, a, _ul, b in self.individually_deleted)

    def batch_bits(self, ledger: int, entry: int) -> BatchBits | None:
        for bits in self.batch_acks:
            if (bits.ledger, bits.entry) == (ledger, entry):
                return bits
        return None


@dataclass(frozen=True)
class ReplayEntry:
    """A position in the dispatcher's replay set (``redeliveryMessages``) and its sticky hash when tracked."""

    ledger: int
    entry: int
    hash: int | None


@dataclass(frozen=True)
class DrainingHash:
    """A 4.x draining hash: ``consumer`` still holds ``ref_count`` unacked messages of it; ``blocked`` attempts."""

    hash: int
    consumer: int
    ref_count: int
    blocked: int


@dataclass(frozen=True)
class BlockedHash:
    """A Key_Shared hash whose messages wait in the replay set, the consumer it selects, and why it waits
    (`KeySharedDispatcher.blocked_hash_reason`): ``draining_from`` the consumer still draining it (4.x),
    ``joined_at`` the position the owner's entries must stay before (classic recently joined)."""

    hash: int
    consumer: int | None
    reason: str
    positions: tuple[Pos, ...]
    key: str | None
    draining_from: int | None = None
    joined_at: Pos | None = None


@dataclass(frozen=True)
class HashAssignment:
    """A hash range ``[start, end]`` of the Key_Shared selector and the consumer id that owns it."""

    start: int
    end: int
    consumer: int


@dataclass(frozen=True)
class DispatcherSnap:
    """A subscription's dispatcher: its type and the state the views draw.

    Exclusive / Failover fill ``active_consumer``, ``failover_*``; Shared and Key_Shared fill the replay
    set, permits and unacked totals; Key_Shared adds the selector, draining hashes (4.x), recently joined
    consumers (classic) and the hashes that wait.
    """

    type: str
    consumer_order: tuple[int, ...]
    active_consumer: int | None = None
    failover_rule: str | None = None
    failover_pending_until: int | None = None
    replay: tuple[ReplayEntry, ...] = ()
    total_available_permits: int | None = None
    total_unacked: int | None = None
    blocked_on_unacked: bool = False
    key_shared_mode: str | None = None
    classic: bool | None = None
    allow_out_of_order: bool | None = None
    key_hash_range: tuple[int, int] | None = None
    assignments: tuple[HashAssignment, ...] = ()
    draining: tuple[DrainingHash, ...] = ()
    recently_joined: tuple[tuple[int, Pos], ...] = ()
    blocked_hashes: tuple[BlockedHash, ...] = ()
    delayed: DelayedTrackerSnap | None = None  # Shared / Key_Shared: the delayed-delivery tracker, once built


@dataclass(frozen=True)
class AckGroupingSnap:
    """The client's `AcknowledgmentsGroupingTracker`: acks held until the next flush.

    ``pending_individual``: entry positions; ``pending_batch_index``: (ledger, entry, unacked mask);
    ``batch_ack_sets``: the shared per-delivery ack sets of batches the application is part way through
    (set bit = not yet acked), which the broker does not know unless batch-index acks are on.
    """

    group_time_ms: int
    max_group_size: int
    batch_index_ack_enabled: bool
    pending_individual: tuple[Pos, ...]
    pending_batch_index: tuple[tuple[int, int, int], ...]
    pending_cumulative: Pos | None
    last_cumulative: Pos | None
    next_flush_ms: int | None
    batch_ack_sets: tuple[BatchBits, ...]


@dataclass(frozen=True)
class ConsumerSnap:
    """One consumer of one topic (or partition), seen from the broker and from its client.

    ``permits``: the broker's ``availablePermits`` (may be negative); ``parked_permits``: FLOW permits held
    while blocked on unacked messages; ``in_flight``: messages delivered and not yet acknowledged at the
    broker (Shared/Key_Shared: the messages of its pending acks, less the batch indexes the cursor already
    holds as acknowledged; Exclusive/Failover: the messages the cursor has read but not acknowledged, for the
    active consumer). ``unacked`` is Pulsar's ``unackedMessages`` counter. Client fields are None without a
    model client.
    """

    id: int
    name: str
    priority: int
    partition: int
    connected: bool
    active: bool | None
    permits: int
    parked_permits: int
    in_flight: int
    unacked: int
    pending_acks: tuple[Pos, ...]
    blocked: bool
    max_unacked: int
    read_position_when_joining: str | None = None
    receiver_queue: int | None = None
    receiver_queue_size: int | None = None
    client_permits: int | None = None
    ack_grouping: AckGroupingSnap | None = None
    chunks: ChunkTrackerSnap | None = None  # the client's chunk reassembly state (after its first chunk)


@dataclass(frozen=True)
class SubscriptionSnap:
    """A subscription: its cursor, dispatcher and consumers."""

    name: str
    id: int
    topic: str
    type: str | None
    cursor: CursorSnap
    dispatcher: DispatcherSnap | None
    consumers: tuple[ConsumerSnap, ...]

    def hash_ranges(self, consumer: int) -> tuple[tuple[int, int], ...]:
        """The Key_Shared hash ranges a consumer id owns (empty on other types)."""
        if self.dispatcher is None:
            return ()
        return tuple((a.start, a.end) for a in self.dispatcher.assignments if a.consumer == consumer)

    def consumer(self, name_or_id: str | int) -> ConsumerSnap:
        for c in self.consumers:
            if c.name == name_or_id or c.id == name_or_id:
                return c
        raise KeyError(
            f"no consumer {name_or_id!r} on {short_topic(self.topic)} / {self.name}; "
            f"consumers: {[c.name for c in self.consumers]}"
        )


@dataclass(frozen=True)
class TopicSnap:
    """A topic or one partition: its ledgers and subscriptions."""

    name: str
    id: int
    partition_index: int
    ledgers: tuple[LedgerSnap, ...]
    last_confirmed: Pos
    subscriptions: tuple[SubscriptionSnap, ...]

    @property
    def short_name(self) -> str:
        return short_topic(self.name)

    def ledger(self, ledger_id: int) -> LedgerSnap | None:
        for led in self.ledgers:
            if led.ledger_id == ledger_id:
                return led
        return None

    def subscription(self, name: str) -> SubscriptionSnap:
        for s in self.subscriptions:
            if s.name == name:
                return s
        raise KeyError(
            f"no subscription {name!r} on {self.short_name}; subscriptions: {[s.name for s in self.subscriptions]}"
        )

    def positions(self) -> Iterator[Pos]:
        for led in self.ledgers:
            for e in range(led.entries):
                yield (led.ledger_id, e)


@dataclass(frozen=True)
class LabSnapshot:
    """The whole lab at one instant: time, the last event's index, every topic and the settings views cite."""

    version: str
    time: int
    event_index: int
    topics: tuple[TopicSnap, ...]
    partitioned: tuple[tuple[str, int], ...]
    config: tuple[tuple[str, Any], ...]
    history: History | None = None
    redelivery: RedeliverySnap | None = None

    def setting(self, name: str) -> Any:
        return dict(self.config)[name]

    def topic(self, name: str) -> TopicSnap:
        """A topic by its full or short name (``orders``, ``orders-partition-2``)."""
        for t in self.topics:
            if t.name == name or t.short_name == name:
                return t
        for full, n in self.partitioned:
            if full == name or short_topic(full) == name:
                raise KeyError(
                    f"{name!r} is a partitioned topic: name one partition ({short_topic(full)}-partition-0 "
                    f".. -{n - 1}), or use snapshot.partitions({name!r})"
                )
        raise KeyError(f"no topic {name!r} in the snapshot; topics: {[t.short_name for t in self.topics]}")

    def partitions(self, name: str) -> tuple[TopicSnap, ...]:
        """The partitions of a partitioned topic in partition order, or ``(topic,)`` for a plain topic."""
        for full, n in self.partitioned:
            if full == name or short_topic(full) == name:
                held = {t.name: t for t in self.topics}  # a partition deleted for inactivity is absent
                return tuple(held[p] for i in range(n) if (p := f"{full}-partition-{i}") in held)
        return (self.topic(name),)

    def subscription(self, topic: str | None = None, name: str | None = None) -> SubscriptionSnap:
        """One subscription; with no arguments the first one of the first topic that has any."""
        topics = [self.topic(topic)] if topic is not None else list(self.topics)
        for t in topics:
            for s in t.subscriptions:
                if name is None or s.name == name:
                    return s
        where = f"topic {topic!r}" if topic is not None else "the snapshot"
        raise KeyError(f"no subscription {name or ''!r} in {where}")

    def subscriptions(self) -> Iterator[tuple[TopicSnap, SubscriptionSnap]]:
        for t in self.topics:
            for s in t.subscriptions:
                yield t, s

    def consumer_samples(self) -> Iterator[Sample]:
        """One `Sample` per attached consumer at this instant (its permits, queue, in flight, blocked): the
        points a dispatch timeline's history is made of."""
        for t, s in self.subscriptions():
            for c in s.consumers:
                yield Sample(
                    event_index=self.event_index,
                    time=self.time,
                    topic=t.name,
                    subscription=s.name,
                    consumer=c.id,
                    name=c.name,
                    permits=c.permits,
                    receiver_queue=c.receiver_queue,
                    in_flight=c.in_flight,
                    blocked=c.blocked,
                )

    def to_dict(self) -> dict[str, Any]:
        """Plain dicts, lists, ints, strings and None (positions become ``[ledger, entry]``)."""
        return jsonable(self)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


# ---------------------------------------------------------------------------------------------
# Reading the model

_CONFIG_KEYS = (
    "managedLedgerMaxEntriesPerLedger",
    "acknowledgmentAtBatchIndexLevelEnabled",
    "activeConsumerFailoverDelayTimeMillis",
    "activeConsumerFailoverConsistentHashing",
    "maxUnackedMessagesPerConsumer",
    "maxUnackedMessagesPerSubscription",
    "dispatcherMaxReadBatchSize",
    "keySharedUnblockingIntervalMs",
)

# what each reason of BlockedHash and of the hash_blocked events means
REASON_TEXT = {
    ev.REASON_REPLAY: "older messages of this hash wait in the replay set; a normal read may not overtake them",
    ev.REASON_DRAINING: "the hash is draining: its previous consumer still has unacked messages of it (PIP-379)",
    ev.REASON_NO_PERMITS: "the consumer that owns the hash has no permits left",
    ev.REASON_NO_CONSUMER: "no consumer owns this hash",
    ev.REASON_RECENTLY_JOINED: "the owner joined recently: it gets only messages before its join read position "
    "until the mark-delete position passes it (classic)",
    "hash_already_blocked_in_this_read": "an earlier entry of this hash was held back in the same read",
}


def _entry_key(data: "EntryData") -> str | None:
    meta = data.metadata
    if meta.ordering_key is not None:
        key = meta.ordering_key
        return key.decode("utf-8", "replace") if isinstance(key, (bytes, bytearray)) else str(key)
    return meta.partition_key


class SnapshotBuilder:
    """Builds `LabSnapshot` objects of one lab, caching what cannot change (entries already read, selector
    assignments while the selector's consumers stay the same)."""

    def __init__(self, lab: "Lab", topics: Iterable[str] | None = None) -> None:
        self.lab = lab
        self._wanted = None if topics is None else {lab.service.normalize(t) for t in topics}
        self._ledger_cache: dict[tuple[str, int], LedgerSnap] = {}
        self._redelivery = RedeliverySnapshotBuilder(lab)
        # selector -> (selector, consumer ids, assignments): assignments change only when consumers do
        self._assignment_cache: dict[
            int, tuple[StickyKeyConsumerSelector[Consumer], tuple[int, ...], tuple[HashAssignment, ...]]
        ] = {}

    def _topic_wanted(self, name: str) -> bool:
        if self._wanted is None:
            return True
        if name in self._wanted:
            return True
        base = name.rsplit("-partition-", 1)[0]
        return "-partition-" in name and base in self._wanted

    def build(self, history: History | None = None) -> LabSnapshot:
        lab = self.lab
        svc = lab.service
        topics = tuple(self._topic(t) for name, t in svc.topics.items() if self._topic_wanted(name))
        config = tuple((k, lab.config[k]) for k in _CONFIG_KEYS if k in lab.config)
        partitioned = tuple(
            sorted(
                (n, p)
                for n, p in svc.partitioned.items()
                if self._topic_wanted(n) or any(self._topic_wanted(f"{n}-partition-{i}") for i in range(p))
            )
        )
        return LabSnapshot(
            version=lab.profile.name,
            time=lab.now(),
            event_index=len(lab.events) - 1,
            topics=topics,
            partitioned=partitioned,
            config=config,
            history=history,
            redelivery=self._redelivery.build(),
        )

    # --- topics and ledgers --------------------------------------------------------------------
    def _ledger(self, topic: str, ml: "ManagedLedger", lid: int, open_: bool) -> LedgerSnap:
        """Entries never change once written: reuse what earlier snapshots read, read only the new ones."""
        entries = ml.entries_of(lid)
        key = (topic, lid)
        snap = self._ledger_cache.get(key)
        if snap is not None and snap.entries == len(entries) and snap.open == open_:
            return snap
        done = snap.entries if snap is not None else 0
        new = entries[done:]
        snap = LedgerSnap(
            ledger_id=lid,
            batch_sizes=(snap.batch_sizes if snap is not None else ())
            + tuple(d.metadata.num_messages_in_batch for d in new),
            keys=(snap.keys if snap is not None else ()) + tuple(_entry_key(d) for d in new),
            open=open_,
            chunks=(snap.chunks if snap is not None else ()) + tuple(chunk_info(d) for d in new),
        )
        self._ledger_cache[key] = snap
        return snap

    def _topic(self, t: "PersistentTopic") -> TopicSnap:
        ml = t.ledger
        current = ml.current_ledger_id
        ledgers = tuple(self._ledger(t.name, ml, info.ledger_id, info.ledger_id == current) for info in ml.ledgers)
        lce = ml.last_confirmed_entry
        subs = tuple(self._subscription(t, s, ledgers) for s in t.subscriptions.values())
        return TopicSnap(
            name=t.name,
            id=t.id,
            partition_index=t.partition_index,
            ledgers=ledgers,
            last_confirmed=(lce.ledger_id, lce.entry_id),
            subscriptions=subs,
        )

    # --- cursor --------------------------------------------------------------------------------
    def _cursor(self, cursor: "ManagedCursor", ledgers: tuple[LedgerSnap, ...]) -> CursorSnap:
        md = cursor.mark_delete_position
        rp = cursor.read_position
        idm = tuple(cursor.individually_deleted_messages)
        batch: list[BatchBits] = []
        if cursor.batch_index_level:
            for led in ledgers:
                for e, size in enumerate(led.batch_sizes):
                    if size is None or (led.ledger_id, e) <= (md.ledger_id, md.entry_id):
                        continue
                    words = cursor.batch_deleted_indexes(Position(led.ledger_id, e))
                    if words is not None:
                        batch.append(BatchBits(led.ledger_id, e, size, _mask(words, size)))
        return CursorSnap(
            mark_delete=(md.ledger_id, md.entry_id),
            read_position=(rp.ledger_id, rp.entry_id),
            individually_deleted=idm,
            individually_deleted_messages=cursor.individually_deleted_messages_string(),
            batch_acks=tuple(batch),
            messages_consumed=cursor.messages_consumed_counter,
            backlog=cursor.number_of_entries_in_backlog(),
        )

    # --- subscriptions -------------------------------------------------------------------------
    def _subscription(
        self, t: "PersistentTopic", sub: "PersistentSubscription", ledgers: tuple[LedgerSnap, ...]
    ) -> SubscriptionSnap:
        cursor = self._cursor(sub.cursor, ledgers)
        d = sub.dispatcher
        consumers = list(sub.consumers())
        dispatcher = self._dispatcher(t, sub, d, consumers) if d is not None else None
        single = dispatcher is not None and dispatcher.active_consumer is not None
        read_not_acked = _messages_read_not_acked(cursor, ledgers) if single else 0
        batch_unacked = {(b.ledger, b.entry): len(b.unacked) for b in cursor.batch_acks}
        snaps = tuple(self._consumer(c, dispatcher, read_not_acked, batch_unacked) for c in consumers)
        return SubscriptionSnap(
            name=sub.name,
            id=sub.id,
            topic=t.name,
            type=getattr(d, "type_name", None),
            cursor=cursor,
            dispatcher=dispatcher,
            consumers=snaps,
        )

    def _dispatcher(
        self, t: "PersistentTopic", sub: "PersistentSubscription", d: "Dispatcher", consumers: "list[Consumer]"
    ) -> DispatcherSnap:
        kind = d.type_name
        order = tuple(c.id for c in consumers)
        if kind in ("Exclusive", "Failover"):
            active = d.active_consumer
            task = d.read_on_active_task
            return DispatcherSnap(
                type=kind,
                consumer_order=order,
                active_consumer=active.id if active is not None else None,
                failover_rule=d.list.active_rule() if kind == "Failover" else None,
                failover_pending_until=task.deadline if task is not None else None,
            )
        controller = d.redelivery_messages
        replay = tuple(ReplayEntry(l, e, controller.hash_of(l, e)) for l, e in controller.positions())
        base = dict(
            type=kind,
            consumer_order=order,
            replay=replay,
            total_available_permits=d.total_available_permits,
            total_unacked=d.total_unacked_messages,
            blocked_on_unacked=d.blocked_on_unacked,
            delayed=delayed_snapshot(d.delayed.tracker),
        )
        if kind != "Key_Shared":
            return DispatcherSnap(**base)
        selector = d.selector
        draining = d.draining
        drain = ()
        if draining is not None:
            drain = tuple(
                sorted(
                    (
                        DrainingHash(h, e.consumer.id, e.ref_count, e.blocked_count)
                        for h, e in draining.draining_hashes.items()
                    ),
                    key=lambda x: x.hash,
                )
            )
        rj = tuple((c.id, (p.ledger_id, p.entry_id)) for c, p in (d.recently_joined or {}).items())
        members = tuple(c.id for c in selector.consumers)
        cached = self._assignment_cache.get(id(selector))
        if cached is None or cached[0] is not selector or cached[1] != members:
            cached = (selector, members, tuple(HashAssignment(s, e, c.id) for s, e, c in selector.assignments()))
            self._assignment_cache[id(selector)] = cached
        assignments = cached[2]
        return DispatcherSnap(
            **base,
            key_shared_mode=d.key_shared_mode,
            classic=d.classic,
            allow_out_of_order=d.allow_out_of_order_delivery,
            key_hash_range=tuple(selector.key_hash_range()),
            assignments=assignments,
            draining=drain,
            recently_joined=rj,
            blocked_hashes=_blocked_hashes(t, d, replay),
        )

    # --- consumers -----------------------------------------------------------------------------
    def _consumer(
        self, c: "Consumer", dispatcher: DispatcherSnap | None, read_not_acked: int, batch_unacked: dict[Pos, int]
    ) -> ConsumerSnap:
        pending = c.pending_acks
        if pending is not None:
            items = sorted(pending.items())
            pending_pos = tuple(p for p, _v in items)
            in_flight = sum(batch_unacked.get(p, v[0]) for p, v in items)
            active = None
        else:
            pending_pos = ()
            is_active = dispatcher is not None and dispatcher.active_consumer == c.id
            active = is_active
            # while a failover switch waits for its delay, what the cursor read went to the previous consumer
            switching = dispatcher is not None and dispatcher.failover_pending_until is not None
            in_flight = read_not_acked if is_active and not switching else 0
        cnx = c.cnx
        partition = getattr(cnx, "partition", -1)
        queue = queue_size = client_permits = None
        grouping = None
        parent = getattr(cnx, "parent", None)
        if parent is not None and hasattr(parent, "receiver_queue"):
            msgs = parent.receiver_queue
            queue = sum(1 for m in msgs if m.topic_name() == cnx.topic)
            queue_size = getattr(cnx, "queue_size", None)
            client_permits = getattr(cnx, "available_permits", None)
            tracker = getattr(cnx, "tracker", None)
            if tracker is not None and hasattr(type(tracker), "pending_individual_acks"):
                grouping = _grouping(tracker, getattr(cnx, "batch_sizes", {}), partition)
        return ConsumerSnap(
            id=c.id,
            name=c.name,
            priority=c.priority,
            partition=partition,
            connected=not c.closed,
            active=active,
            permits=c.available_permits,
            parked_permits=c.permits_received_while_blocked,
            in_flight=in_flight,
            unacked=c.unacked_messages,
            pending_acks=pending_pos,
            blocked=c.blocked,
            max_unacked=c.max_unacked_messages,
            read_position_when_joining=c.read_position_when_joining,
            receiver_queue=queue,
            receiver_queue_size=queue_size,
            client_permits=client_permits,
            ack_grouping=grouping,
            chunks=chunk_tracker_snap(cnx),
        )


def _mask(words: Iterable[int], size: int) -> int:
    bits = 0
    for i, w in enumerate(words):
        bits |= (w & ((1 << 64) - 1)) << (64 * i)
    return bits & ((1 << size) - 1)


def _messages_read_not_acked(cursor: CursorSnap, ledgers: tuple[LedgerSnap, ...]) -> int:
    """Messages in entries after the mark-delete position and before the read position, not acknowledged."""
    md, rp = cursor.mark_delete, cursor.read_position
    total = 0
    for led in ledgers:
        lid = led.ledger_id
        if lid < md[0] or lid > rp[0]:
            continue
        lo = md[1] + 1 if lid == md[0] else 0
        hi = min(rp[1], led.entries) if lid == rp[0] else led.entries
        for e in range(max(lo, 0), hi):
            if cursor.is_deleted(lid, e):
                continue
            bits = cursor.batch_bits(lid, e)
            total += len(bits.unacked) if bits is not None else led.messages(e)
    return total


def _grouping(
    tracker: "AcknowledgmentsGroupingTracker", batch_sizes: dict[tuple[int, int], int], partition: int
) -> AckGroupingSnap:
    cum = tracker.last_cumulative_ack
    last_cum = None if cum.ledger < 0 and cum.entry < 0 else (cum.ledger, cum.entry)
    sets = []
    for (l, e), size in sorted(batch_sizes.items()):
        state = tracker.batch_ack_set(MessageId(l, e, partition))
        if state is not None and state[0] != (1 << state[1]) - 1:
            sets.append(BatchBits(l, e, state[1], state[0]))
    return AckGroupingSnap(
        group_time_ms=tracker.group_time_ms,
        max_group_size=tracker.max_group_size,
        batch_index_ack_enabled=tracker.batch_index_ack_enabled,
        pending_individual=tuple((m.ledger, m.entry) for m in tracker.pending_individual_acks),
        pending_batch_index=tuple(
            sorted((m.ledger, m.entry, mask) for m, mask in tracker.pending_batch_index_acks.items())
        ),
        pending_cumulative=last_cum if tracker.cumulative_ack_flush_required else None,
        last_cumulative=last_cum,
        next_flush_ms=tracker.next_flush_ms,
        batch_ack_sets=tuple(sets),
    )


def _blocked_hashes(t: "PersistentTopic", d: "Dispatcher", replay: tuple[ReplayEntry, ...]) -> tuple[BlockedHash, ...]:
    """The hashes waiting in the replay set, each with the reason the dispatcher's `blocked_hash_reason` gives for
    its first position."""
    by_hash: dict[int | None, list[Pos]] = {}
    for r in replay:
        by_hash.setdefault(r.hash, []).append((r.ledger, r.entry))
    out = []
    ml = t.ledger
    for h, positions in by_hash.items():
        if h is None:
            continue
        first = Position(*positions[0])
        block = d.blocked_hash_reason(h, first)
        try:
            key = _entry_key(ml.read_entry(first))
        except Exception:  # the entry is gone: no key to show
            key = None
        joined = block.joined_at
        out.append(
            BlockedHash(
                hash=h,
                consumer=block.consumer.id if block.consumer is not None else None,
                reason=block.reason,
                positions=tuple(positions),
                key=key,
                draining_from=block.draining_from.id if block.draining_from is not None else None,
                joined_at=(joined.ledger_id, joined.entry_id) if joined is not None else None,
            )
        )
    return tuple(sorted(out, key=lambda b: b.positions[0]))


def snapshot(lab: "Lab", topics: Iterable[str] | None = None) -> LabSnapshot:
    """The lab's state now, as a `LabSnapshot` (``topics``: only these, short or full names)."""
    return SnapshotBuilder(lab, topics).build()


__all__ = [
    "AckGroupingSnap",
    "BatchBits",
    "BlockedHash",
    "ConsumerSnap",
    "CursorSnap",
    "DispatcherSnap",
    "DrainingHash",
    "HashAssignment",
    "LabSnapshot",
    "LedgerSnap",
    "REASON_TEXT",
    "ReplayEntry",
    "SnapshotBuilder",
    "SubscriptionSnap",
    "TopicSnap",
    "snapshot",
]
