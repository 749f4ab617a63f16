"""Redelivery in a lab snapshot: each message's life from the event log, and the client trackers' internals.

Usage::

    from pulsarlab.snapshot.lab import snapshot

    from pulsarlab.snapshot.recorder import Recorder
    rec = Recorder(lab); ...                      # drive the lab
    red = rec[i].snapshot.redelivery              # a RedeliverySnap (also snapshot(lab).redelivery)
    for life in message_lives(red, subscription="sub"): life.label, life.outcome, life.deliveries
    red.trackers[0].ring, red.trackers[0].nacks   # ack-timeout ring (head first), negative-ack entries

Models no Pulsar class. The steps come from the event log (docs/guide/redelivery.md#ack-timeout events: delivered with
its redelivery
count, acknowledged, negatively acknowledged, timed out, redelivery asked for and counted, dead-letter
candidate, retried with a delay, dead-lettered), folded incrementally by `RedeliveryStepRecorder`; a snapshot
holds a read-only prefix of that shared, append-only step list (like the dispatch samples), so frames stay
cheap. The trackers are read from each model client consumer: its `UnAckedMessageTracker` ring and next
tick, its inner consumers' `NegativeAcksTracker` entries (3.x deadlines or 4.x buckets) and DLQ candidates.
Simplifies: one life per entry (a batch's messages share it); a redeliver-all request (Exclusive / Failover,
or ``redeliver_unacknowledged_messages()``) names no ids, so it shows through the deliveries that follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from pulsarlab.snapshot.base import History, Pos, short_topic

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.lab import Lab


# step kinds, in the order a learner meets them
PUBLISHED = "published"
DELIVERED = "delivered"
ACKED = "acked"
NACKED = "nacked"
TIMED_OUT = "timed_out"
NACK_DUE = "nack_due"
REDELIVERY_ASKED = "redelivery_asked"
COUNTED = "counted"
DLQ_CANDIDATE = "dlq_candidate"
RETRIED = "retried"
DEAD_LETTERED = "dead_lettered"
STEP_KINDS = (
    PUBLISHED,
    DELIVERED,
    ACKED,
    NACKED,
    TIMED_OUT,
    NACK_DUE,
    REDELIVERY_ASKED,
    COUNTED,
    DLQ_CANDIDATE,
    RETRIED,
    DEAD_LETTERED,
)
STEP_TEXT = {
    PUBLISHED: "stored",
    DELIVERED: "delivered",
    ACKED: "acknowledged",
    NACKED: "negatively acknowledged",
    TIMED_OUT: "ack timeout",
    NACK_DUE: "negative-ack delay over",
    REDELIVERY_ASKED: "redelivery asked",
    COUNTED: "redelivery counted",
    DLQ_CANDIDATE: "DLQ candidate",
    RETRIED: "sent to the retry topic",
    DEAD_LETTERED: "sent to the DLQ",
}

# outcomes of a life
WAITING = "waiting"
IN_FLIGHT = "in flight"
OUT_ACKED = "acked"
OUT_RETRIED = "retried"
OUT_DEAD = "dead-lettered"


@dataclass(frozen=True)
class LifeStep:
    """One thing that happened to an entry: ``kind`` (one of `STEP_KINDS`), who, and what it carried.

    ``count``: the redelivery count a delivery carried, the new broker count, or ``RECONSUMETIMES``;
    ``target``: the copy a retry or dead-lettering wrote, ``(topic, ledger, entry)``; ``delay_ms``: a retry's
    delay or a negative ack's due time.
    """

    event_index: int
    time: int
    topic: str
    ledger: int
    entry: int
    kind: str
    consumer: int | None = None
    subscription: str | None = None
    count: int | None = None
    target: tuple[str, int, int] | None = None
    delay_ms: int | None = None


@dataclass(frozen=True)
class NackEntry:
    """A held negative ack: the id (partition -2 in the 4.x tracker) and when it is due (3.x deadline, 4.x
    bucket), in ms."""

    topic: str
    ledger: int
    entry: int
    partition: int
    due_ms: int


@dataclass(frozen=True)
class ClientTrackersSnap:
    """One client consumer's redelivery internals (all None / empty where a feature is off)."""

    consumer: int
    name: str
    subscription: str
    type: str
    topics: tuple[str, ...]
    ack_timeout_ms: int | None
    tick_ms: int | None
    ring: tuple[tuple[tuple[int, int, int], ...], ...]  # head (next to time out) first
    next_tick_ms: int | None
    nack_form: str
    nack_delay_ms: int
    nack_step_ms: int  # 3.x: the timer interval (delay / 3); 4.x: the bucket width (2^bits ms)
    nacks: tuple[NackEntry, ...]
    next_nack_ms: int | None
    max_redeliver_count: int | None
    dead_letter_topics: tuple[str, ...]
    retry_letter_topic: str | None
    dlq_candidates: tuple[Pos, ...]

    @property
    def tracked(self) -> int:
        return sum(len(p) for p in self.ring)


@dataclass(frozen=True)
class RedeliverySnap:
    """The steps so far (a prefix of the recorder's list) and every client consumer's trackers now."""

    steps: History
    trackers: tuple[ClientTrackersSnap, ...]

    def tracker(self, consumer: int | str) -> ClientTrackersSnap:
        for t in self.trackers:
            if t.consumer == consumer or t.name == consumer:
                return t
        raise KeyError(f"no consumer {consumer!r}; consumers: {[t.name for t in self.trackers]}")


@dataclass(frozen=True)
class MessageLife:
    """One entry's steps, in order, and where it ended up; a copy on a retry or dead-letter topic names its
    ``origin`` entry."""

    topic: str
    ledger: int
    entry: int
    steps: tuple[LifeStep, ...]
    origin: tuple[str, int, int] | None
    outcome: str
    deliveries: int
    max_redelivery_count: int

    @property
    def label(self) -> str:
        return f"{short_topic(self.topic)} {self.ledger}:{self.entry}"

    @property
    def redeliveries(self) -> int:
        return max(self.deliveries - 1, 0)

    def kinds(self) -> list[str]:
        return [s.kind for s in self.steps]


class RedeliveryStepRecorder:
    """Folds a lab's events into `LifeStep` s, from where it stopped last time (one per snapshot builder)."""

    def __init__(self, lab: "Lab") -> None:
        self.lab = lab
        self._seen = 0
        self.steps: list[LifeStep] = []
        self._topics: dict[int, str] = {}  # topic id -> name
        self._ledger_topic: dict[int, str] = {}  # ledger id -> topic name
        self._consumers: dict[int, str] = {}  # consumer id -> subscription
        self._subscriptions: dict[int, str] = {}  # subscription id -> name

    def update(self) -> History:
        events = self.lab.events
        end = len(events)
        # a windowed log (pulsarlab serve --event-window) may have dropped events this recorder never saw
        for i in range(max(self._seen, events.first_seq), end):
            self._fold(events[i])
        self._seen = end
        return History(self.steps, len(self.steps))  # type: ignore[arg-type]

    def _topic_of(self, ledger: int) -> str:
        return self._ledger_topic.get(ledger, "?")

    def _step(
        self,
        e: Any,
        ledger: int,
        entry: int,
        kind: str,
        consumer: int | None = None,
        subscription: str | None = None,
        **kw: Any,
    ) -> None:
        sub = subscription if consumer is None else self._consumers.get(consumer)
        self.steps.append(LifeStep(e.seq, e.time, self._topic_of(ledger), ledger, entry, kind, consumer, sub, **kw))

    def _subscription_name(self, sub_id: int) -> str | None:
        name = self._subscriptions.get(sub_id)
        if name is None:
            for t in self.lab.service.topics.values():
                for sub in t.subscriptions.values():
                    self._subscriptions[sub.id] = sub.name
            name = self._subscriptions.get(sub_id)
        return name

    def _fold(self, e: Any) -> None:
        k = e.kind
        f = e.fields
        if k == "topic_created":
            if f["topic"] is not None and f["topic"] >= 0:
                self._topics[f["topic"]] = f["name"]
        elif k == "consumer_subscribed":
            self._consumers[f["consumer"]] = f["subscription"]
        elif k == "entry_persisted":
            self._ledger_topic.setdefault(f["ledger"], self._topics.get(f["topic"], "?"))
            self._step(e, f["ledger"], f["entry"], PUBLISHED, count=f["messages"])
        elif k == "dispatched":
            self._step(e, f["ledger"], f["entry"], DELIVERED, f["consumer"], count=f["redelivery_count"])
        elif k == "acknowledged":
            self._step(e, f["ledger"], f["entry"], ACKED, f["consumer"])
        elif k == "negative_acked":
            self._step(e, f["ledger"], f["entry"], NACKED, f["consumer"], delay_ms=f["due_ms"])
        elif k in ("ack_timeout_tick", "nack_timer_fired"):
            kind = TIMED_OUT if k == "ack_timeout_tick" else NACK_DUE
            for ledger, entry, _p in f["ids"] or ():
                self._step(e, ledger, entry, kind, f["consumer"])
        elif k == "redeliver_ids":
            for ledger, entry in f["ids"] or ():
                self._step(e, ledger, entry, REDELIVERY_ASKED, f["consumer"])
        elif k == "redelivery_counted":
            self._step(
                e,
                f["ledger"],
                f["entry"],
                COUNTED,
                subscription=self._subscription_name(f["subscription"]),
                count=f["count"],
            )
        elif k == "dead_letter_candidate":
            self._step(e, f["ledger"], f["entry"], DLQ_CANDIDATE, f["consumer"], count=f["redelivery_count"])
        elif k in ("reconsumed_later", "dead_lettered"):
            copy = f["copy"] or {}
            topic = copy.get("topic", "?")
            ids = copy.get("ids") or []
            for ledger, entry in ids:
                self._ledger_topic.setdefault(ledger, topic)
            target = (topic, ids[0][0], ids[0][1]) if ids else None
            if k == "reconsumed_later":
                self._step(
                    e,
                    f["ledger"],
                    f["entry"],
                    RETRIED,
                    f["consumer"],
                    count=f["reconsume_times"],
                    target=target,
                    delay_ms=f["delay_ms"],
                )
            else:
                self._step(e, f["ledger"], f["entry"], DEAD_LETTERED, f["consumer"], count=f["count"], target=target)


def message_lives(
    red: RedeliverySnap | Sequence[LifeStep], *, topic: str | None = None, subscription: str | None = None
) -> list[MessageLife]:
    """The lives of the entries in ``red``'s steps, oldest first, each copy right after its origin.

    ``topic`` (short or full name; a partitioned topic's partitions count) keeps the entries of that topic and
    their copies; ``subscription`` keeps the steps of that subscription's consumers (stores and copies stay).
    """
    steps: Iterable[LifeStep] = red.steps if isinstance(red, RedeliverySnap) else red
    by_pos: dict[Pos, list[LifeStep]] = {}
    origin: dict[Pos, tuple[str, int, int]] = {}
    for s in steps:
        if subscription is not None and s.subscription is not None and s.subscription != subscription:
            continue
        by_pos.setdefault((s.ledger, s.entry), []).append(s)
        if s.target is not None:
            origin.setdefault((s.target[1], s.target[2]), (s.topic, s.ledger, s.entry))
    lives = {pos: _life(pos, st, origin.get(pos)) for pos, st in by_pos.items()}
    roots = [p for p in lives if _root(p, origin) == p]
    if topic is not None:
        roots = [p for p in roots if _topic_matches(lives[p].topic, topic)]
    out: list[MessageLife] = []
    children: dict[Pos, list[Pos]] = {}
    for pos, (_t, l, e) in origin.items():
        children.setdefault((l, e), []).append(pos)
    for root in sorted(roots, key=lambda p: (lives[p].steps[0].event_index, p)):
        stack = [root]
        while stack:
            p = stack.pop()
            if p in lives:
                out.append(lives[p])
            stack.extend(sorted(children.get(p, ()), reverse=True))
    return out


def _root(pos: Pos, origin: dict[Pos, tuple[str, int, int]]) -> Pos:
    seen = set()
    while pos in origin and pos not in seen:
        seen.add(pos)
        _t, l, e = origin[pos]
        pos = (l, e)
    return pos


def _topic_matches(name: str, wanted: str) -> bool:
    base = name.rsplit("-partition-", 1)[0] if "-partition-" in name else name
    return wanted in (name, short_topic(name), base, short_topic(base))


def _life(pos: Pos, steps: list[LifeStep], origin: tuple[str, int, int] | None) -> MessageLife:
    deliveries = sum(1 for s in steps if s.kind == DELIVERED)
    counts = [s.count or 0 for s in steps if s.kind == DELIVERED]
    outcome = WAITING
    for s in steps:
        if s.kind == DELIVERED and outcome == WAITING:
            outcome = IN_FLIGHT
        elif s.kind == ACKED and outcome not in (OUT_RETRIED, OUT_DEAD):  # those ack the original too
            outcome = OUT_ACKED
        elif s.kind == RETRIED:
            outcome = OUT_RETRIED
        elif s.kind == DEAD_LETTERED:
            outcome = OUT_DEAD
        elif s.kind == DELIVERED and outcome == OUT_ACKED:
            outcome = IN_FLIGHT  # delivered again after an ack that had not reached the broker
    topic = next((s.topic for s in steps if s.kind == PUBLISHED), steps[0].topic)
    return MessageLife(topic, pos[0], pos[1], tuple(steps), origin, outcome, deliveries, max(counts, default=0))


class RedeliverySnapshotBuilder:
    """Builds `RedeliverySnap` s of one lab (keeps the step recorder between snapshots)."""

    def __init__(self, lab: "Lab") -> None:
        self.lab = lab
        self.recorder = RedeliveryStepRecorder(lab)

    def build(self) -> RedeliverySnap:
        steps = self.recorder.update() if self.lab.events.enabled else History([], 0)  # type: ignore[arg-type]
        return RedeliverySnap(steps=steps, trackers=tuple(_trackers(self.lab)))


def _client_consumers(lab: "Lab") -> list[Any]:
    seen: dict[int, Any] = {}
    for t in lab.service.topics.values():
        for sub in t.subscriptions.values():
            for c in sub.consumers():
                parent = getattr(c.cnx, "parent", None)
                if parent is not None and hasattr(parent, "unacked_message_tracker"):
                    seen.setdefault(id(parent), parent)
    return sorted(seen.values(), key=lambda p: p._id)


def _trackers(lab: "Lab") -> list[ClientTrackersSnap]:
    out = []
    for c in _client_consumers(lab):
        unacked = c.unacked_message_tracker
        nacks: list[NackEntry] = []
        next_nack = None
        candidates: list[Pos] = []
        form = lab.profile.negative_ack_tracker.value
        step = _nack_step_ms(lab, c.negative_ack_redelivery_delay_ms, None)
        for impl in c.topic_consumers():
            tracker = impl.nacks
            if tracker is not None:
                step = _nack_step_ms(lab, c.negative_ack_redelivery_delay_ms, tracker)
                nacks.extend(_nack_entries(impl.topic, tracker))
                ns = tracker.next_timer_ns
                if ns is not None:
                    ms = -(-ns // tracker.clock.nanos_per_unit)
                    next_nack = ms if next_nack is None else min(next_nack, ms)
            if impl.dead_letters is not None:
                candidates.extend(sorted(impl.dead_letters.possible))
        policy = c.dead_letter_policy
        out.append(
            ClientTrackersSnap(
                consumer=c.consumer_id,
                name=c.consumer_name(),
                subscription=c.subscription_name(),
                type=c.consumer_type.wire,
                topics=tuple(c.topics()),
                ack_timeout_ms=unacked.ack_timeout_millis if unacked is not None else None,
                tick_ms=unacked.tick_duration_in_ms if unacked is not None else None,
                ring=tuple(tuple((m.ledger, m.entry, m.partition) for m in p) for p in unacked.partitions)
                if unacked is not None
                else (),
                next_tick_ms=unacked.next_tick_ms if unacked is not None else None,
                nack_form=form,
                nack_delay_ms=c.negative_ack_redelivery_delay_ms,
                nack_step_ms=step,
                nacks=tuple(sorted(nacks, key=lambda n: (n.due_ms, n.ledger, n.entry))),
                next_nack_ms=next_nack,
                max_redeliver_count=policy.max_redeliver_count if policy is not None else None,
                dead_letter_topics=tuple(sorted(set(c.dead_letter_topics().values()))),
                retry_letter_topic=c.retry_letter_topic,
                dlq_candidates=tuple(candidates),
            )
        )
    return out


def _nack_step_ms(lab: "Lab", delay_ms: int, tracker: Any) -> int:
    from pulsarlab.client.negative_acks import DEFAULT_NEGATIVE_ACK_PRECISION_BIT_CNT, MIN_NACK_DELAY_MS
    from pulsarlab.profiles import NegativeAckTrackerForm

    if tracker is not None:
        if hasattr(tracker, "timer_interval_ns"):
            return tracker.timer_interval_ns // 1_000_000
        return 1 << tracker.negative_ack_precision_bit_cnt
    if lab.profile.negative_ack_tracker is NegativeAckTrackerForm.DEADLINE_MAP:
        return max(delay_ms, MIN_NACK_DELAY_MS) // 3
    return 1 << DEFAULT_NEGATIVE_ACK_PRECISION_BIT_CNT


def _nack_entries(topic: str, tracker: Any) -> list[NackEntry]:
    unit = tracker.clock.nanos_per_unit
    if hasattr(tracker, "deadlines_ns"):
        return [
            NackEntry(topic, m.ledger, m.entry, m.partition, -(-ns // unit)) for m, ns in tracker.deadlines_ns().items()
        ]
    out = []
    for bucket, ledgers in tracker.buckets():
        due = (bucket - tracker.clock.epoch_ms) * 1_000_000 // unit
        for ledger, entries in ledgers:
            out.extend(NackEntry(topic, ledger, e, -2, due) for e in entries)
    return out


__all__ = [
    "ACKED",
    "COUNTED",
    "ClientTrackersSnap",
    "DEAD_LETTERED",
    "DELIVERED",
    "DLQ_CANDIDATE",
    "LifeStep",
    "MessageLife",
    "NACKED",
    "NACK_DUE",
    "NackEntry",
    "OUT_ACKED",
    "OUT_DEAD",
    "OUT_RETRIED",
    "PUBLISHED",
    "REDELIVERY_ASKED",
    "RETRIED",
    "RedeliverySnap",
    "RedeliverySnapshotBuilder",
    "RedeliveryStepRecorder",
    "STEP_KINDS",
    "STEP_TEXT",
    "TIMED_OUT",
    "message_lives",
]
