"""Read imported broker stats like an experienced Pulsar engineer: what is stuck, why, and where to look next.

Models no single Pulsar class; each rule restates a broker rule of the reference and checks the stats
against it:

* cursor (`ManagedCursorImpl`, docs/guide/cursor.md): ack holes and a mark-delete stuck behind one; ranges that start at
  or before the mark-delete (a state ``asyncDelete`` never leaves, apache/pulsar#13788); more
  individual-ack ranges than ``managedLedgerMaxUnackedRangesToPersist`` keeps over a restart; a read
  position in a deleted ledger (apache/pulsar#19274); a mark-delete that does not move while acks arrive;
* flow control and unacked limits (docs/guide/flow-control.md): consumers and subscriptions blocked on unacked messages,
  consumers without permits while a backlog waits, subscriptions with a backlog and no consumer;
* Key_Shared (docs/guide/key-shared-selectors.md, key-shared-ordering.md):
  3.x classic recently-joined consumers (``consumersAfterMarkDeletePosition``), 4.x
  draining hashes with blocked attempts, gaps and overlaps of the consumers' key-hash ranges, messages
  waiting in the replay set (and the 4.x look-ahead limit).

Simplifies: one snapshot is a moment; "stuck" needs either a second snapshot (``previous_*``) or the
subscription's ack and mark-delete timestamps, and thresholds (`Limits`) default to Pulsar's broker
defaults, which a cluster may have changed. Cross-ledger counts need the ledgers of stats-internal;
without them the findings say less rather than guess.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from pulsarlab.importers.stats import ConsumerStats, SubscriptionStats, TopicStats
from pulsarlab.importers.stats_internal import CursorStats, PartitionedTopicInternalStats, PersistentTopicInternalStats
from pulsarlab.managed_ledger.position import Position
from pulsarlab.protocol.subscription import ConsumerType, HashRange, KeySharedMode

InternalStats = PersistentTopicInternalStats | PartitionedTopicInternalStats


class Severity(enum.IntEnum):
    """How urgent a finding is: INFO explains a state, WARNING needs a look, CRITICAL loses progress or data."""

    INFO = 1
    WARNING = 2
    CRITICAL = 3


@dataclass(frozen=True)
class Finding:
    """One diagnosis: what was seen (with the numbers), which Pulsar rule explains it, what to look at next."""

    severity: Severity
    subject: str  # e.g. 'subscription "orders-sub"', 'consumer "c1" of subscription "orders-sub"'
    rule: str  # a stable id such as "ack-holes"
    message: str  # one line, citing the rule
    next_step: str
    reference: str  # where the guide explains the rule, e.g. "docs/guide/cursor.md#holes"
    numbers: dict[str, Any] = field(default_factory=dict)
    topic: str | None = None  # the partition, for partitioned input

    def __str__(self) -> str:
        where = f"[{self.topic}] " if self.topic else ""
        return f"{self.severity.name:<8} {where}{self.subject} · {self.rule}: {self.message} Next: {self.next_step}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity.name,
            "topic": self.topic,
            "subject": self.subject,
            "rule": self.rule,
            "message": self.message,
            "next_step": self.next_step,
            "reference": self.reference,
            **{f"n_{k}": v for k, v in self.numbers.items()},
        }


@dataclass(frozen=True)
class Limits:
    """The broker settings the rules compare against, with Pulsar's 3.x/4.x defaults (broker.conf names in docs)."""

    max_unacked_ranges_to_persist: int = 10000  # managedLedgerMaxUnackedRangesToPersist
    max_unacked_messages_per_consumer: int = 50000  # maxUnackedMessagesPerConsumer
    max_unacked_messages_per_subscription: int = 200000  # maxUnackedMessagesPerSubscription
    look_ahead_per_consumer: int = 2000  # keySharedLookAheadMsgInReplayThresholdPerConsumer (4.x)
    look_ahead_per_subscription: int = 20000  # keySharedLookAheadMsgInReplayThresholdPerSubscription (4.x)
    stale_mark_delete_ms: int = 60_000  # acks this much newer than the last mark-delete move count as "stuck"
    many_acked_after_hole: int = 1000  # this many acked entries behind one hole count as "stuck"

    _CONF = {
        "managedLedgerMaxUnackedRangesToPersist": "max_unacked_ranges_to_persist",
        "maxUnackedMessagesPerConsumer": "max_unacked_messages_per_consumer",
        "maxUnackedMessagesPerSubscription": "max_unacked_messages_per_subscription",
        "keySharedLookAheadMsgInReplayThresholdPerConsumer": "look_ahead_per_consumer",
        "keySharedLookAheadMsgInReplayThresholdPerSubscription": "look_ahead_per_subscription",
    }

    @classmethod
    def from_broker_config(cls, conf: Mapping[str, Any]) -> "Limits":
        """Limits from broker.conf settings (unknown names are ignored: a whole broker.conf can be passed)."""
        return cls(**{attr: int(conf[name]) for name, attr in cls._CONF.items() if name in conf})

    def look_ahead_limit(self, consumers: int) -> int:
        """The look-ahead limit: min(per-consumer x consumers, per-subscription), a 0 term disabled, both 0 -> the
        unacked limits."""
        terms = [t for t in (self.look_ahead_per_consumer * consumers, self.look_ahead_per_subscription) if t > 0]
        if terms:
            return min(terms)
        return min(self.max_unacked_messages_per_subscription, consumers * self.max_unacked_messages_per_consumer)


# ---------------------------------------------------------------------------------------------
# Ledger arithmetic from stats-internal (counts across ledgers need the ledgers' sizes)


class _Ledgers:
    def __init__(self, internal: PersistentTopicInternalStats | None) -> None:
        self.sizes: dict[int, int] = internal.ledger_entries() if internal is not None else {}
        self.ids = sorted(self.sizes)

    def count_between(self, a: Position, b: Position) -> int | None:
        """Entries e with a < e <= b; None when the ledgers in between are unknown."""
        if b <= a:
            return 0
        if a.ledger_id == b.ledger_id:
            return b.entry_id - a.entry_id
        if a.ledger_id not in self.sizes:
            return None
        total = max(0, self.sizes[a.ledger_id] - (a.entry_id + 1)) + (b.entry_id + 1)
        total += sum(self.sizes[i] for i in self.ids if a.ledger_id < i < b.ledger_id)
        return total

    def next_valid(self, p: Position) -> Position:
        """The entry after ``p``, stepping into the next ledger when ``p`` is its ledger's last (and that is known)."""
        size = self.sizes.get(p.ledger_id)
        if size is not None and p.entry_id + 1 >= size:
            later = [i for i in self.ids if i > p.ledger_id and self.sizes[i] > 0]
            if later:
                return Position(later[0], 0)
        return p.next()


# ---------------------------------------------------------------------------------------------
# The rules


@dataclass
class _Unit:
    """What is known about one topic or partition."""

    topic: str | None
    stats: TopicStats | None
    internal: PersistentTopicInternalStats | None
    previous_stats: TopicStats | None = None
    previous_internal: PersistentTopicInternalStats | None = None


def _n(count: int, singular: str, plural: str | None = None) -> str:
    """``3 ranges`` / ``1 range``."""
    return f"{count} {singular if count == 1 else (plural or singular + 's')}"


def _sub(name: str) -> str:
    return f'subscription "{name}"'


def _consumer(c: ConsumerStats, sub: str) -> str:
    return f'consumer "{c.consumer_name}" of subscription "{sub}"'


class _Diagnosis:
    def __init__(self, unit: _Unit, limits: Limits, line: str | None) -> None:
        self.u = unit
        self.limits = limits
        self.line = line
        self.ledgers = _Ledgers(unit.internal)
        self.out: list[Finding] = []

    def add(
        self,
        severity: Severity,
        subject: str,
        rule: str,
        message: str,
        next_step: str,
        reference: str,
        **numbers: Any,
    ) -> None:
        self.out.append(Finding(severity, subject, rule, message, next_step, reference, numbers, self.u.topic))

    def run(self) -> list[Finding]:
        stats, internal = self.u.stats, self.u.internal
        names: list[str] = list(stats.subscriptions) if stats else []
        if internal:
            names += [n for n in internal.cursors if n not in names]
        for name in names:
            sub = stats.subscriptions.get(name) if stats else None
            cursor = internal.cursors.get(name) if internal else None
            self.subscription_rules(name, sub, cursor)
        return self.out

    def subscription_rules(self, name: str, sub: SubscriptionStats | None, cursor: CursorStats | None) -> None:
        if cursor is not None:
            self.cursor_consistency(name, cursor)
            self.ack_holes(name, cursor, sub)
            self.read_position(name, cursor)
        self.mark_delete_stuck(name, sub, cursor)
        self.persist_limit(name, sub, cursor)
        if sub is None:
            return
        self.blocked_subscription(name, sub)
        for c in sub.consumers:
            self.blocked_consumer(name, sub, c)
        self.permits(name, sub)
        self.no_consumers(name, sub)
        self.recently_joined(name, sub, cursor)
        self.draining(name, sub)
        self.hash_ranges(name, sub)
        self.replay(name, sub)

    # ----------------------------------------------------------------------- cursor

    def cursor_consistency(self, name: str, cursor: CursorStats) -> None:
        md, ranges = cursor.mark_delete_position, cursor.ack_ranges
        if md is None or not ranges:
            return
        first = ranges[0]
        gap = self.ledgers.count_between(md, first.lower)
        if first.lower <= md or (first.lower.ledger_id != md.ledger_id and gap == 0):
            self.add(
                Severity.CRITICAL,
                _sub(name),
                "mark-delete-behind-acked-range",
                f"range {first} starts at or right after the mark-delete {md}, so asyncDelete would have moved the "
                f'mark-delete to {first.upper}; a cursor left like this fails later acks with "Mark deleting an '
                'already mark-deleted position" (apache/pulsar#13788).',
                'Take a second snapshot: if it persists, check the broker log for "Failed to delete message at" '
                "and unload the topic (pulsar-admin topics unload) so the cursor is recovered from its ledger.",
                "docs/guide/cursor.md#mark-delete",
                mark_delete=str(md),
                first_range=str(first),
            )

    def ack_holes(self, name: str, cursor: CursorStats, sub: SubscriptionStats | None) -> None:
        md, ranges = cursor.mark_delete_position, cursor.ack_ranges
        if md is None or not ranges or ranges[0].lower <= md:
            return
        hole = self.ledgers.next_valid(md)
        first = ranges[0]
        acked_after_hole = first.entry_count()
        acked_counts = [r.entry_count() for r in ranges]
        acked_total = sum(c for c in acked_counts if c is not None)
        gaps = [self.ledgers.count_between(md, first.lower)] + [
            self.ledgers.count_between(prev.upper, r.lower) for prev, r in zip(ranges, ranges[1:])
        ]
        if gaps[0] == 0:
            return  # acks touch the mark-delete across a ledger boundary: mark-delete-behind-acked-range
        holes = sum(1 for g in gaps if g != 0)
        unacked = None if any(g is None for g in gaps) else sum(gaps)  # type: ignore[misc]
        first_hole = gaps[0]
        stale = self._stale_ms(sub)
        stuck = (stale is not None and stale >= self.limits.stale_mark_delete_ms) or (
            acked_total >= self.limits.many_acked_after_hole
        )
        acked_text = (
            f"{_n(acked_after_hole, 'entry', 'entries')} acked right after it"
            if acked_after_hole is not None
            else f"acks resume after {first.lower}"
        )
        hole_text = f" ({first_hole} unacked {'entry' if first_hole == 1 else 'entries'})" if first_hole else ""
        more = f"; {_n(len(ranges), 'range')} hold {acked_total} acked entries after {_n(holes, 'hole')}" + (
            f" with {unacked} unacked" if unacked is not None else ""
        )
        since = f"; the mark-delete last moved {stale / 1000:.0f} s before the last ack" if stale else ""
        users = ", ".join(
            f"{c.consumer_name} ({c.unacked_messages})" for c in (sub.consumers if sub else ()) if c.unacked_messages
        )
        self.add(
            Severity.WARNING if stuck else Severity.INFO,
            _sub(name),
            "ack-holes",
            f"mark-delete {md} stuck behind a hole at {hole}{hole_text}: {acked_text}{more}{since}. The mark-delete "
            "only moves past contiguous acks; later acks wait in individuallyDeletedMessages.",
            "Find who holds "
            + str(hole)
            + (f": consumers with unacked messages: {users}" if users else "")
            + ". A message that failed processing and was neither acked nor negatively acked stays unacked until its "
            "consumer disconnects (or ackTimeout redelivers it).",
            "docs/guide/cursor.md#holes",
            mark_delete=str(md),
            first_hole=str(hole),
            unacked_in_first_hole=first_hole,
            acked_after_first_hole=acked_after_hole,
            ranges=len(ranges),
            holes=holes,
            acked_after_mark_delete=acked_total,
            unacked_in_holes=unacked,
            mark_delete_stale_ms=stale,
        )

    def read_position(self, name: str, cursor: CursorStats) -> None:
        rp = cursor.read_position
        if rp is None or not self.ledgers.ids or rp.ledger_id >= self.ledgers.ids[0]:
            return
        self.add(
            Severity.WARNING,
            _sub(name),
            "read-position-in-deleted-ledger",
            f"read position {rp} lies in ledger {rp.ledger_id}, older than every ledger the topic still has "
            f"(first: {self.ledgers.ids[0]}); the cursor cannot read or ack its way forward and the backlog "
            "stays (apache/pulsar#19274).",
            "Reset the subscription past the gap (pulsar-admin topics reset-cursor); brokers before 2.10.4 / 2.11.1 "
            "lack the fix for the race between ledger trimming and cursor creation.",
            "docs/guide/cursor.md#read-position",
            read_position=str(rp),
            first_ledger=self.ledgers.ids[0],
        )

    def _stale_ms(self, sub: SubscriptionStats | None) -> int | None:
        """How much newer the last ack is than the last mark-delete move (when both are known)."""
        if sub is None or not sub.last_acked_timestamp or not sub.last_mark_delete_advanced_timestamp:
            return None
        return max(0, sub.last_acked_timestamp - sub.last_mark_delete_advanced_timestamp)

    def mark_delete_stuck(self, name: str, sub: SubscriptionStats | None, cursor: CursorStats | None) -> None:
        evidence: list[str] = []
        numbers: dict[str, Any] = {}
        prev_cursor = self.u.previous_internal.cursors.get(name) if self.u.previous_internal else None
        if cursor is not None and prev_cursor is not None and cursor.mark_delete_position is not None:
            before = self.u.previous_internal.entries_added_counter  # type: ignore[union-attr]
            added = self.u.internal.entries_added_counter - before  # type: ignore[union-attr]
            if cursor.mark_delete_position == prev_cursor.mark_delete_position and added > 0:
                evidence.append(
                    f"it stayed at {cursor.mark_delete_position} across both snapshots while "
                    f"{_n(added, 'entry', 'entries')} were added"
                )
                numbers.update(mark_delete=str(cursor.mark_delete_position), entries_added=added)
        prev_sub = self.u.previous_stats.subscriptions.get(name) if self.u.previous_stats else None
        if sub is not None and prev_sub is not None and sub.last_mark_delete_advanced_timestamp:
            grew = sub.msg_backlog - prev_sub.msg_backlog
            if sub.last_mark_delete_advanced_timestamp == prev_sub.last_mark_delete_advanced_timestamp and grew > 0:
                evidence.append(f"lastMarkDeleteAdvancedTimestamp did not change while msgBacklog grew by {grew}")
                numbers.update(backlog_growth=grew)
        stale = self._stale_ms(sub)
        if sub is not None and stale is not None and stale >= self.limits.stale_mark_delete_ms and sub.msg_backlog > 0:
            evidence.append(
                f"acks keep arriving but the mark-delete last moved {stale / 1000:.0f} s before the last ack"
            )
            numbers.update(mark_delete_stale_ms=stale)
        if not evidence:
            return
        backlog = sub.msg_backlog if sub is not None else None
        self.add(
            Severity.WARNING,
            _sub(name),
            "mark-delete-stuck",
            "mark-delete is not moving: "
            + "; ".join(evidence)
            + (f" (msgBacklog {backlog})" if backlog is not None else "")
            + ". The backlog and retained ledgers grow until the oldest unacked message is acked.",
            (
                "The first hole after the mark-delete is the message to chase (see the ack-holes finding)."
                if cursor is not None and cursor.ack_ranges
                else "Take `pulsar-admin topics stats-internal` of this topic: the first hole after this cursor's "
                "markDeletePosition is the message to chase."
            ),
            "docs/guide/cursor.md#holes",
            msg_backlog=backlog,
            **numbers,
        )

    def persist_limit(self, name: str, sub: SubscriptionStats | None, cursor: CursorStats | None) -> None:
        counts = []
        if cursor is not None:
            counts += [len(cursor.ack_ranges), cursor.total_non_contiguous_deleted_messages_range]
        if sub is not None:
            counts.append(sub.non_contiguous_deleted_messages_ranges)
        count = max(counts, default=0)
        limit = self.limits.max_unacked_ranges_to_persist
        if cursor is not None and cursor.individually_deleted_messages is not None:
            printed, told = len(cursor.ack_ranges), cursor.total_non_contiguous_deleted_messages_range
            if "totalNonContiguousDeletedMessagesRange" in cursor.present and printed != told:
                self.add(
                    Severity.INFO,
                    _sub(name),
                    "range-count-mismatch",
                    f"individuallyDeletedMessages holds {printed} ranges but totalNonContiguousDeletedMessagesRange "
                    f"says {told}: the string was cut while copying, or acks changed the set between the two reads.",
                    "Copy the whole stats-internal output again (a file: pulsar-admin ... > internal.json).",
                    "docs/guide/cursor.md#individually-deleted-messages",
                    printed_ranges=printed,
                    total_ranges=told,
                )
        kept = limit + 1  # the persisting loop stops after adding range limit+1
        if count <= kept:
            return
        self.add(
            Severity.CRITICAL,
            _sub(name),
            "unacked-ranges-over-persist-limit",
            f"{count} individual-ack ranges but managedLedgerMaxUnackedRangesToPersist={limit}: only the first "
            f"{kept} survive a broker restart or topic unload; the acks in the other {count - kept} are lost "
            "and those messages are delivered again.",
            "Find why acks scatter (a slow or stuck consumer, nacks/redeliveries, one hole holding the mark-delete); "
            "raise managedLedgerMaxUnackedRangesToPersist only with care (cursor ledger size).",
            "docs/guide/cursor.md#individually-deleted-messages",
            ranges=count,
            persisted=kept,
            lost=count - kept,
            limit=limit,
        )

    # ----------------------------------------------------------------------- unacked limits, permits

    def blocked_subscription(self, name: str, sub: SubscriptionStats) -> None:
        if not sub.blocked_subscription_on_unacked_msgs:
            return
        limit = self.limits.max_unacked_messages_per_subscription
        self.add(
            Severity.CRITICAL,
            _sub(name),
            "subscription-blocked-on-unacked",
            f"the subscription is blocked: {sub.unacked_messages} unacked messages reached "
            f"maxUnackedMessagesPerSubscription ({limit}); no consumer gets anything until acks bring it "
            "down to half the limit.",
            "Look at the consumers with the most unackedMessages: they receive but do not ack (or ack too slowly).",
            "docs/guide/flow-control.md#broker-permits",
            unacked=sub.unacked_messages,
            limit=limit,
        )

    def blocked_consumer(self, name: str, sub: SubscriptionStats, c: ConsumerStats) -> None:
        if not c.blocked_consumer_on_unacked_msgs:
            return
        limit = self.limits.max_unacked_messages_per_consumer
        note = "" if c.unacked_messages >= limit else f" (below {limit}: this broker's limit is set lower)"
        self.add(
            Severity.WARNING,
            _consumer(c, name),
            "consumer-blocked-on-unacked",
            f"blocked on unacked messages: {c.unacked_messages} unacked reached maxUnackedMessagesPerConsumer"
            f"{note}; the broker parks its FLOW permits and sends nothing until acks bring it to half the limit.",
            f"Check {c.consumer_name}'s ack path (lastAckedTimestamp {c.last_acked_timestamp}): failed processing "
            "without ack or nack, or acks lost with a crashed ack-grouping flush.",
            "docs/guide/flow-control.md#broker-permits",
            unacked=c.unacked_messages,
            permits=c.available_permits,
            limit=limit,
        )

    def permits(self, name: str, sub: SubscriptionStats) -> None:
        waiting = sub.msg_backlog - sub.msg_delayed
        if waiting <= 0 or not sub.consumers or sub.blocked_subscription_on_unacked_msgs:
            return  # a blocked subscription is explained by its own finding
        candidates = list(sub.consumers)
        if sub.type in (ConsumerType.Exclusive, ConsumerType.Failover):
            active = sub.consumer(sub.active_consumer_name) if sub.active_consumer_name else None
            candidates = [active] if active is not None else candidates[:1]
        starved = [c for c in candidates if c.available_permits <= 0 and not c.blocked_consumer_on_unacked_msgs]
        if not starved:
            return
        flowing = sub.msg_rate_out > 0 or any(c.msg_rate_out > 0 for c in candidates)
        stalled = len(starved) == len(candidates) and not flowing
        names = ", ".join(f"{c.consumer_name} (unacked {c.unacked_messages})" for c in starved)
        state = (
            "nothing is being dispatched"
            if stalled
            else "their receiver queues are full: the application has not taken those messages yet"
        )
        self.add(
            Severity.WARNING if stalled else Severity.INFO,
            _sub(name),
            "no-permits-with-backlog",
            f"{len(starved)} of {len(candidates)} consumers that could receive have 0 permits while {waiting} "
            f"messages wait ({names}); {state}. The broker sends only against FLOW permits, and the client sends "
            "FLOW again only after the application has taken half its receiver queue.",
            "Check whether the application calls receive() (or whether its listener is stuck) on "
            + ", ".join(str(c.consumer_name) for c in starved)
            + "; with receiverQueueSize 0, permits exist only while receive() waits.",
            "docs/guide/flow-control.md#flow-permits",
            consumers_without_permits=len(starved),
            consumers=len(candidates),
            waiting=waiting,
        )

    def no_consumers(self, name: str, sub: SubscriptionStats) -> None:
        if sub.consumers or sub.msg_backlog <= 0:
            return
        self.add(
            Severity.INFO,
            _sub(name),
            "no-consumers",
            f"{_n(sub.msg_backlog, 'message waits', 'messages wait')} and no consumer is connected; the backlog "
            "stays (and keeps ledgers) until one subscribes, the subscription is removed, or a TTL / backlog quota "
            "acts.",
            "If the subscription is abandoned, delete it (pulsar-admin topics unsubscribe); otherwise start its "
            "consumers.",
            "docs/guide/subscription-types.md",
            msg_backlog=sub.msg_backlog,
        )

    # ----------------------------------------------------------------------- Key_Shared

    def recently_joined(self, name: str, sub: SubscriptionStats, cursor: CursorStats | None) -> None:
        md = cursor.mark_delete_position if cursor is not None else None
        held = bool(cursor is not None and cursor.ack_ranges and md is not None and cursor.ack_ranges[0].lower > md)
        for consumer_name, joined in sub.consumers_after_mark_delete_position.items():
            c = sub.consumer(consumer_name)
            pip_282 = (
                c is not None and c.read_position_when_joining is None and c.last_sent_position_when_joining is not None
            )
            what = "the last sent position" if pip_282 else "the read position"
            gap = self.ledgers.count_between(md, joined) if md is not None else None
            md_text = f"the mark-delete ({md}) moves past it" if md else "the mark-delete moves past it"
            between = f"; {_n(gap, 'entry lies', 'entries lie')} between" if gap else ""
            hole = f"; the mark-delete is held by the hole at {self.ledgers.next_valid(md)}" if held and md else ""
            self.add(
                Severity.WARNING if held else Severity.INFO,
                f'consumer "{consumer_name}" of subscription "{name}"',
                "recently-joined-consumer",
                f"joined when {what} was {joined} and gets only entries before {joined} until "
                f"{md_text}{between}{hole}. Classic Key_Shared (3.x) holds back every key of a recently joined "
                "consumer this way to keep per-key order.",
                "Chase the oldest unacked message of the subscription (ack-holes): once it is acked the mark-delete "
                "moves and the consumer is released. allowOutOfOrderDelivery=true removes the gate.",
                "docs/guide/key-shared-ordering.md#recently-joined-consumers",
                join_position=str(joined),
                mark_delete=str(md) if md else None,
                entries_between=gap,
            )

    def draining(self, name: str, sub: SubscriptionStats) -> None:
        owners = _hash_owners(sub)
        for c in sub.consumers:
            if not c.draining_hashes and c.draining_hashes_count <= 0:
                continue
            blocked = sum(d.blocked_attempts for d in c.draining_hashes)
            unacked = sum(d.unack_msgs for d in c.draining_hashes) or c.draining_hashes_unacked_messages
            count = max(len(c.draining_hashes), c.draining_hashes_count)
            top = sorted(c.draining_hashes, key=lambda d: (-d.blocked_attempts, d.hash))[:3]
            top_text = ", ".join(
                f"{d.hash} ({d.unack_msgs} unacked, {d.blocked_attempts} blocked"
                + (f", now {owners(d.hash)}'s" if owners(d.hash) else "")
                + ")"
                for d in top
            )
            self.add(
                Severity.WARNING if blocked else Severity.INFO,
                _consumer(c, name),
                "draining-hashes",
                f"drains {_n(count, 'hash', 'hashes')} with {_n(unacked, 'unacked message')}; their new owners "
                f"wait until {c.consumer_name} acks them ({blocked} dispatch attempts blocked so far)"
                + (f": {top_text}" if top_text else "")
                + ". PIP-379 moves a hash only after its pending "
                "messages are acked.",
                f"Look at {c.consumer_name}'s oldest unacked messages (its unackedMessages is {c.unacked_messages}); "
                "a key's hash is murmur3_32(key) % 65535 + 1 in 4.x consistent hashing.",
                "docs/guide/key-shared-ordering.md#draining-hashes",
                draining=count,
                unacked=unacked,
                blocked_attempts=blocked,
                top_hash=top[0].hash if top else None,
            )

    def hash_ranges(self, name: str, sub: SubscriptionStats) -> None:
        claimed = [(r, c) for c in sub.consumers for r in (c.hash_ranges or ())]
        if sub.type is not ConsumerType.KeyShared or not claimed:
            return
        claimed.sort(key=lambda rc: (rc[0].start, rc[0].end))
        # Gaps matter for STICKY ranges only: AUTO_SPLIT selectors cover every hash by construction, and 3.0.7+
        # consistent hashing prints its wrap range from lastPoint+2, a one-hash "gap" that is not
        # real (docs/guide/key-shared-selectors.md#consistent-hashing).
        sticky = sub.key_shared_mode is KeySharedMode.Sticky
        gaps: list[HashRange] = []
        overlaps: list[tuple[HashRange, ConsumerStats, ConsumerStats]] = []
        reach, reach_owner = -1, None
        for r, c in claimed:
            if r.start > reach + 1 and sticky:
                gaps.append(HashRange(reach + 1, r.start - 1))
            elif r.start <= reach and reach_owner is not None:
                overlaps.append((HashRange(r.start, min(r.end, reach)), reach_owner, c))
            if r.end > reach:
                reach, reach_owner = r.end, c
        if sticky and reach < 65535:
            gaps.append(HashRange(reach + 1, 65535))
        if gaps:
            total = sum(g.end - g.start + 1 for g in gaps)
            self.add(
                Severity.WARNING,
                _sub(name),
                "key-hash-range-gap",
                f"{total} key hashes have no consumer: {', '.join(map(str, gaps[:5]))}"
                + (" ..." if len(gaps) > 5 else "")
                + ". Messages whose key hashes there cannot be dispatched; they wait in the replay set.",
                "Give a consumer the missing ranges (KeySharedPolicy.stickyHashRange) or connect the consumer that "
                "owned them.",
                "docs/guide/key-shared-selectors.md#sticky-ranges",
                gaps=len(gaps),
                uncovered_hashes=total,
                first_gap=str(gaps[0]),
            )
        if overlaps:
            r, a, b = overlaps[0]
            same = a.consumer_name == b.consumer_name
            self.add(
                Severity.WARNING,
                _sub(name),
                "key-hash-range-overlap",
                f"{len(overlaps)} hash ranges are claimed twice, first {r} by {a.consumer_name} and {b.consumer_name}"
                + (
                    " (the same name: stats of consumers sharing a name show the same ranges, apache/pulsar#16654)"
                    if same
                    else ""
                )
                + ". The broker rejects overlapping sticky ranges, so this output mixes two moments or two consumers.",
                "Give every consumer a unique consumerName and take the stats again.",
                "docs/guide/key-shared-selectors.md#sticky-ranges",
                overlaps=len(overlaps),
                first_overlap=str(r),
            )

    def replay(self, name: str, sub: SubscriptionStats) -> None:
        if sub.msg_in_replay <= 0:
            return
        limit = None
        if sub.type is ConsumerType.KeyShared and self.line == "4.x" and not sub.allow_out_of_order_delivery:
            limit = self.limits.look_ahead_limit(len(sub.consumers))
        over = limit is not None and sub.msg_in_replay >= limit
        why = {
            ConsumerType.KeyShared: "messages whose key's consumer had no permits or whose hash is blocked "
            "(draining, or recently joined consumers); a hash in the replay set also holds back new messages "
            "of that hash",
        }.get(sub.type, "redeliveries (nacks, ack timeouts) and the pending messages of consumers that disconnected")
        self.add(
            Severity.WARNING if over else Severity.INFO,
            _sub(name),
            "messages-in-replay",
            f"{_n(sub.msg_in_replay, 'message waits', 'messages wait')} in the replay set: {why}. Replays are "
            "dispatched before new reads"
            + (f"; at the look-ahead limit {limit} normal reads stop" if over else "")
            + ".",
            "If it stays high, look for a consumer without permits or a blocked hash (draining-hashes, "
            "no-permits-with-backlog).",
            "docs/guide/key-shared-ordering.md#replay-set-blocking"
            if sub.type is ConsumerType.KeyShared
            else "docs/guide/redelivery.md#replay-set",
            msg_in_replay=sub.msg_in_replay,
            look_ahead_limit=limit,
        )


def _hash_owners(sub: SubscriptionStats):
    table = sorted((r.start, r.end, c.consumer_name) for c in sub.consumers for r in (c.hash_ranges or ()))

    def owner(h: int) -> str | None:
        return next((n for s, e, n in table if s <= h <= e), None)

    return owner


# ---------------------------------------------------------------------------------------------
# Entry point


def infer_line(stats: TopicStats | None = None, internal: InternalStats | None = None) -> str | None:
    """ "4.x" when consumers carry PIP-379 fields, "3.x" when they carry the classic Key_Shared ones, else None."""
    if stats is None:
        return None
    units = [stats, *stats.partitions.values()]
    subs = [s for t in units for s in t.subscriptions.values()]
    consumers = [c for s in subs for c in s.consumers]
    if any({"drainingHashesCount", "keyHashRangeArrays", "drainingHashes"} & c.present for c in consumers) or any(
        "drainingHashesCount" in s.present for s in subs
    ):
        return "4.x"
    if any(s.consumers_after_mark_delete_position for s in subs) or any(
        {"readPositionWhenJoining", "keyHashRanges", "lastSentPositionWhenJoining"} & c.present for c in consumers
    ):
        return "3.x"
    return None


def _units(
    stats: TopicStats | None,
    internal: InternalStats | None,
    previous_stats: TopicStats | None,
    previous_internal: InternalStats | None,
) -> list[_Unit]:
    def parts_of_stats(s: TopicStats | None) -> dict[str | None, TopicStats]:
        if s is None:
            return {}
        return dict(s.partitions) if s.partitions else {None: s}

    def parts_of_internal(i: InternalStats | None) -> dict[str | None, PersistentTopicInternalStats]:
        if i is None:
            return {}
        return dict(i.partitions) if isinstance(i, PartitionedTopicInternalStats) else {None: i}

    s_parts, i_parts = parts_of_stats(stats), parts_of_internal(internal)
    ps_parts, pi_parts = parts_of_stats(previous_stats), parts_of_internal(previous_internal)
    if (None in s_parts) != (None in i_parts) and s_parts and i_parts:  # one side per partition, the other not
        return [_Unit(t, s, None, ps_parts.get(t)) for t, s in s_parts.items()] + [
            _Unit(t, None, i, None, pi_parts.get(t)) for t, i in i_parts.items()
        ]
    topics = list(s_parts) + [t for t in i_parts if t not in s_parts]
    return [_Unit(t, s_parts.get(t), i_parts.get(t), ps_parts.get(t), pi_parts.get(t)) for t in topics]


def diagnose(
    stats: TopicStats | None = None,
    internal: InternalStats | None = None,
    *,
    previous_stats: TopicStats | None = None,
    previous_internal: InternalStats | None = None,
    limits: Limits | None = None,
    line: str | None = None,
) -> list[Finding]:
    """Findings for one topic's stats and/or stats-internal, most severe first.

    ``previous_*`` are earlier snapshots of the same topic (they let "stuck" be seen directly); ``line``
    ("3.x" or "4.x") overrides what `infer_line` reads from the fields.
    """
    if stats is None and internal is None:
        raise ValueError("diagnose needs stats, stats-internal, or both")
    limits = limits or Limits()
    line = line or infer_line(stats, internal)
    findings: list[Finding] = []
    for unit in _units(stats, internal, previous_stats, previous_internal):
        findings += _Diagnosis(unit, limits, line).run()
    return sorted(findings, key=lambda f: -f.severity)  # stable: document order within a severity


def format_findings(findings: Iterable[Finding]) -> str:
    """One finding per line, or a line saying nothing was found."""
    lines = [str(f) for f in findings]
    return "\n".join(lines) if lines else "No findings: nothing in these stats breaks a rule the lab checks."
