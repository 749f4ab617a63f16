"""Checkers for the debugging lab (labs/06-debug-your-cluster.ipynb): reading real broker stats.

Models no Pulsar class. Each checker reads the same JSON the learner reads - a saved
``pulsar-admin topics stats`` / ``stats-internal`` file, pasted text, or the lab's own
``lab.admin.topics.stats(t)`` dict - through `pulsarlab.importers`, and computes the answer from it:

* `check_pinning_entry`: the entry that holds a cursor's mark-delete position (the first entry after
  ``markDeletePosition`` that is not acknowledged; docs/guide/cursor.md and the range format ``(L:a..L:b]``);
* `check_blocked_consumer`: who is blocked on unacked messages and by which broker setting
  (``maxUnackedMessagesPerConsumer`` / ``maxUnackedMessagesPerSubscription``,
  docs/guide/flow-control.md#broker-permits), as opposed to a consumer that merely has 0 permits because its
  receiver queue is full (docs/guide/flow-control.md#flow-permits);
* `check_draining`: 4.x draining hashes - which consumer holds them, which consumer waits for them, how many
  acknowledgements release them (PIP-379, docs/guide/key-shared-ordering.md#draining-hashes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.importers import load, read
from pulsarlab.importers.stats import SubscriptionStats, TopicStats
from pulsarlab.importers.stats_internal import CursorStats, PersistentTopicInternalStats
from pulsarlab.managed_ledger.position import Position

PER_CONSUMER = "maxUnackedMessagesPerConsumer"
PER_SUBSCRIPTION = "maxUnackedMessagesPerSubscription"
SETTINGS = (PER_CONSUMER, PER_SUBSCRIPTION)


def _imported(data: Any) -> Any:
    """An imported stats object from a path, JSON text, a parsed dict or an already imported object."""
    if isinstance(data, (TopicStats, PersistentTopicInternalStats)):
        return data
    if isinstance(data, Path):
        return load(data)
    if isinstance(data, str) and not data.lstrip().startswith("{") and Path(data).is_file():
        return load(data)  # a file name rather than pasted JSON
    return read(data)


def _internal(data: Any) -> PersistentTopicInternalStats:
    out = _imported(data)
    if not isinstance(out, PersistentTopicInternalStats):
        raise TypeError("expected the stats-internal of one topic (or partition), with 'ledgers' and 'cursors'")
    return out


def _stats(data: Any) -> TopicStats:
    out = _imported(data)
    if not isinstance(out, TopicStats):
        raise TypeError("expected `pulsar-admin topics stats` output, with 'subscriptions'")
    return out


def _cursor(internal: PersistentTopicInternalStats, subscription: str) -> CursorStats:
    try:
        return internal.cursors[subscription]
    except KeyError:
        raise KeyError(f"no cursor {subscription!r}; the cursors are {', '.join(internal.cursors)}") from None


def _subscription(stats: TopicStats, subscription: str) -> SubscriptionStats:
    try:
        return stats.subscriptions[subscription]
    except KeyError:
        raise KeyError(f"no subscription {subscription!r}; there are {', '.join(stats.subscriptions)}") from None


def _parse_position(text: Any) -> Position | None:
    if isinstance(text, Position):
        return text
    if not isinstance(text, str):
        return None
    parts = text.strip().split(":")
    if len(parts) != 2:
        return None
    try:
        return Position(int(parts[0]), int(parts[1]))
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------------
# the entry that pins the mark-delete


def _next_valid(p: Position, sizes: dict[int, int]) -> Position | None:
    """The entry after ``p``, stepping into the next ledger after a ledger's last entry; None past the end."""
    size = sizes.get(p.ledger_id)
    if size is None or p.entry_id + 1 < size:
        return Position(p.ledger_id, p.entry_id + 1)
    later = sorted(i for i in sizes if i > p.ledger_id and sizes[i] > 0)
    return Position(later[0], 0) if later else None


def pinning_entry(internal: Any, subscription: str) -> str | None:
    """The first entry after the cursor's mark-delete position that is not acknowledged ("ledger:entry"),
    i.e. what keeps the mark-delete where it is; None when everything written is acknowledged."""
    st = _internal(internal)
    cursor = _cursor(st, subscription)
    sizes = st.ledger_entries()
    last = st.last_confirmed_entry
    pos = cursor.mark_delete_position
    while True:
        pos = _next_valid(pos, sizes)
        if pos is None or (last is not None and pos > last):
            return None
        if not any(r.lower < pos <= r.upper for r in cursor.ack_ranges):
            return str(pos)


@exercise(
    todo="write the position 'ledger:entry' of the entry that holds the mark-delete position back",
    see=(
        'Lab 6, section 3 ("An ack hole pins the mark-delete position")',
        "docs/guide/cursor.md#holes",
    ),
)
def check_pinning_entry(answer: Any, internal: Any, subscription: str) -> CheckResult:
    """Check ``answer`` = ``"ledger:entry"``: the entry that holds ``subscription``'s mark-delete position."""
    st = _internal(internal)
    cursor = _cursor(st, subscription)
    want = pinning_entry(st, subscription)
    md = cursor.mark_delete_position
    pos = _parse_position(answer)
    if pos is None:
        return failed([f"give the position as a string 'ledger:entry', like the stats print it, not {answer!r}"])
    if want is None:
        return failed(
            [
                f"nothing pins this mark-delete: {md} is the last entry written (lastConfirmedEntry "
                f"{st.last_confirmed_entry}), so every entry is acknowledged"
            ]
        )
    if str(pos) == want:
        ranges = _ranges_text(cursor)
        return passed(
            f"{want}: the first entry after the mark-delete {md} that is not acknowledged. Everything "
            f"acknowledged after it waits in individuallyDeletedMessages {_short(ranges)} until {want} "
            "is acknowledged."
        )
    problems = []
    sizes = st.ledger_entries()
    in_range = next((r for r in cursor.ack_ranges if r.lower < pos <= r.upper), None)
    if md is not None and pos == md:
        problems.append(
            f"{pos} is the markDeletePosition itself: it and everything before it are acknowledged. "
            "The entry that holds it is the first one AFTER it that is not acknowledged"
        )
    elif md is not None and pos < md:
        problems.append(f"{pos} is before the mark-delete position {md}: it is acknowledged and may even be deleted")
    elif in_range is not None:
        line = f"{pos} is acknowledged: it lies in the range {in_range}"
        if in_range.single_ledger and pos == in_range.lower.next():
            line += (
                f", which is open at its start - ({in_range.lower}.. means {in_range.lower} itself is NOT "
                f"acknowledged and {pos} is the first entry that is"
            )
        else:
            line += " (a range (a..b] holds the entries after a up to and including b)"
        problems.append(line)
    elif cursor.read_position is not None and pos == cursor.read_position and str(pos) != want:
        problems.append(
            f"{pos} is the readPosition: the next entry the dispatcher will read. It says where reading "
            "is, not what is acknowledged"
        )
    elif st.last_confirmed_entry is not None and pos > st.last_confirmed_entry:
        problems.append(
            f"there is no entry {pos}: the last entry written is {st.last_confirmed_entry} (lastConfirmedEntry)"
        )
    elif (
        pos.ledger_id in sizes
        and pos.entry_id >= sizes[pos.ledger_id] > 0
        and pos.ledger_id != st.ledgers[-1].ledger_id
    ):
        problems.append(
            f"ledger {pos.ledger_id} has {sizes[pos.ledger_id]} entries ({pos.ledger_id}:0.."
            f"{pos.ledger_id}:{sizes[pos.ledger_id] - 1}); after its last entry comes the next "
            "ledger's entry 0"
        )
    else:
        problems.append(
            f"{pos} is not acknowledged either, but it is not the first such entry: {want} comes before "
            "it, and the mark-delete can only move over contiguous acknowledgements"
        )
    return failed(
        problems,
        hint=f"Start at markDeletePosition {md} and walk forward, skipping the entries in "
        f"individuallyDeletedMessages {_short(_ranges_text(cursor))}.",
    )


def _ranges_text(cursor: CursorStats) -> str:
    """The individually deleted ranges, printed as stats-internal prints them (``..`` even if the input had ``‥``)."""
    return "[" + ",".join(str(r) for r in cursor.ack_ranges) + "]"


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…]"


# ---------------------------------------------------------------------------------------------------
# blocked consumers


@dataclass(frozen=True)
class Blocked:
    """Who is blocked on unacked messages, and by which setting."""

    who: str  # a consumer name, or the subscription name
    setting: str
    unacked: int


def blocked_on_unacked(stats: Any, subscription: str) -> list[Blocked]:
    """The consumers (and the subscription itself) that the broker holds back on unacked messages."""
    sub = _subscription(_stats(stats), subscription)
    out = [
        Blocked(c.consumer_name, PER_CONSUMER, c.unacked_messages)
        for c in sub.consumers
        if c.blocked_consumer_on_unacked_msgs
    ]
    if sub.blocked_subscription_on_unacked_msgs:
        out.append(Blocked(subscription, PER_SUBSCRIPTION, sub.unacked_messages))
    return out


@exercise(
    todo='write {"blocked": the consumer (or subscription) name, "setting": the broker.conf setting}',
    see=(
        'Lab 6, section 4 ("A consumer blocked on unacknowledged messages")',
        "docs/guide/flow-control.md#broker-permits",
    ),
)
def check_blocked_consumer(answer: Any, stats: Any, subscription: str) -> CheckResult:
    """Check ``answer`` = ``{"blocked": name, "setting": broker.conf name}``: who is blocked on unacked messages
    in ``subscription`` (a consumer, or the subscription's name when the whole subscription is blocked) and
    which setting blocks it."""
    st = _stats(stats)
    sub = _subscription(st, subscription)
    blocked = blocked_on_unacked(st, subscription)
    if not isinstance(answer, dict) or set(answer) != {"blocked", "setting"}:
        return failed(
            [
                'answer should be a dict {"blocked": "<consumer or subscription name>", "setting": '
                '"maxUnackedMessagesPerConsumer" or "maxUnackedMessagesPerSubscription"}'
            ]
        )
    who, setting = answer["blocked"], answer["setting"]
    consumers = {c.consumer_name: c for c in sub.consumers}
    problems = []
    match = next((b for b in blocked if b.who == who), None)
    if not blocked:
        return failed(
            [
                f"nobody is blocked on unacked messages in {subscription}: every "
                "blockedConsumerOnUnackedMsgs and blockedSubscriptionOnUnackedMsgs is false"
            ]
        )
    if match is None:
        c = consumers.get(who)
        if c is None and who != subscription:
            problems.append(
                f"{who!r} is neither a consumer of {subscription} ({', '.join(consumers)}) nor the subscription"
            )
        elif c is None:
            problems.append(
                f"the subscription itself is not blocked: blockedSubscriptionOnUnackedMsgs is false "
                f"({sub.unacked_messages} unacked messages in all)"
            )
        elif c.available_permits <= 0:
            problems.append(
                f"{who} has availablePermits {c.available_permits} but blockedConsumerOnUnackedMsgs "
                "is false: its receiver queue is full because its application has not taken the "
                "messages yet. The broker is not holding anything back from it; it sends again when "
                "the client returns permits with FLOW"
            )
        else:
            problems.append(
                f"{who} is not blocked: blockedConsumerOnUnackedMsgs is false and it has {c.available_permits} permits"
            )
        names = ", ".join(f"{b.who} ({b.setting}, {b.unacked} unacked)" for b in blocked)
        problems.append(f"look for the blocked flags: blocked is {names}")
    elif setting != match.setting:
        if setting not in SETTINGS:
            problems.append(
                f"{setting!r} is not the setting: the unacked limits are {PER_CONSUMER} (per consumer, "
                f"default 50000) and {PER_SUBSCRIPTION} (per subscription, default 200000); a full "
                "receiver queue shows as 0 permits, never as blocked"
            )
        elif match.setting == PER_CONSUMER:
            problems.append(
                f"{who} is blocked by its own count: blockedConsumerOnUnackedMsgs is true with "
                f"{match.unacked} unacked messages ({PER_CONSUMER}); the subscription is "
                + (
                    "blocked too"
                    if sub.blocked_subscription_on_unacked_msgs
                    else f"not blocked (blockedSubscriptionOnUnackedMsgs false, {sub.unacked_messages} unacked in all)"
                )
            )
        else:
            problems.append(
                f"the whole subscription is blocked: blockedSubscriptionOnUnackedMsgs is true with "
                f"{match.unacked} unacked messages ({PER_SUBSCRIPTION}); no consumer flag is needed "
                "for that"
            )
    if problems:
        return failed(
            problems,
            hint="Blocked means the broker parks the consumer's FLOW permits until acks bring "
            "its unacked count down to half the limit.",
        )
    if match.setting == PER_SUBSCRIPTION:
        return passed(
            f"subscription {who} is blocked by {PER_SUBSCRIPTION} with {match.unacked} unacked messages: "
            "the dispatcher reads nothing new for any consumer until acknowledgements bring the count "
            "below half the limit."
        )
    return passed(
        f"{who} is blocked by {PER_CONSUMER} with {match.unacked} unacked messages: the broker parks "
        "its permits and dispatches nothing to it until acknowledgements bring its count down to half "
        "the limit."
    )


# ---------------------------------------------------------------------------------------------------
# draining hashes (4.x)


@dataclass(frozen=True)
class Draining:
    holder: str
    waiting: tuple[str, ...]
    hashes: tuple[int, ...]
    messages: int


def draining_summary(stats: Any, subscription: str) -> list[Draining]:
    """Per consumer with draining hashes: who now owns those hashes, and how many unacked messages hold them."""
    sub = _subscription(_stats(stats), subscription)
    out = []
    for c in sub.consumers:
        if not c.draining_hashes:
            continue
        hashes = tuple(d.hash for d in c.draining_hashes)
        owners = []
        for h in hashes:
            for other in sub.consumers:
                if other is not c and any(r.start <= h <= r.end for r in (other.hash_ranges or ())):
                    if other.consumer_name not in owners:
                        owners.append(other.consumer_name)
        out.append(Draining(c.consumer_name, tuple(owners), hashes, sum(d.unack_msgs for d in c.draining_hashes)))
    return out


@exercise(
    todo='write {"holder": consumer, "waiting": consumer, "messages_to_ack": n}',
    see=(
        'Lab 6, section 5 ("Draining hashes after a Key_Shared consumer joined")',
        "docs/guide/key-shared-ordering.md#draining-hashes",
    ),
)
def check_draining(answer: Any, stats: Any, subscription: str) -> CheckResult:
    """Check ``answer`` = ``{"holder": name, "waiting": name, "messages_to_ack": n}`` for a 4.x Key_Shared
    subscription with draining hashes."""
    st = _stats(stats)
    found = draining_summary(st, subscription)
    if not isinstance(answer, dict) or set(answer) != {"holder", "waiting", "messages_to_ack"}:
        return failed(
            ['answer should be a dict {"holder": "<consumer>", "waiting": "<consumer>", "messages_to_ack": n}']
        )
    if not found:
        return failed([f"no consumer of {subscription} drains a hash (every drainingHashes is empty)"])
    d = found[0]
    sub = _subscription(st, subscription)
    holder_stats = sub.consumer(d.holder)
    problems = []
    if answer["holder"] != d.holder:
        if answer["holder"] in d.waiting:
            problems.append(
                f"{answer['holder']} is the one that WAITS: the hashes are in its keyHashRangeArrays "
                f"now. drainingHashes are listed on the consumer that still holds unacked messages "
                f"of them: {d.holder}"
            )
        else:
            problems.append(f"{d.holder} holds them: its drainingHashes lists {len(d.hashes)} hash(es)")
    if answer["waiting"] not in d.waiting:
        if answer["waiting"] == d.holder:
            problems.append(
                f"{d.holder} holds the messages; the consumer that waits is the new owner of the hashes "
                f"({', '.join(d.waiting)}): look up each hash in the keyHashRangeArrays"
            )
        else:
            problems.append(
                f"the draining hashes ({', '.join(map(str, d.hashes))}) fall in the ranges of {', '.join(d.waiting)}"
            )
    n = answer["messages_to_ack"]
    if isinstance(n, bool) or not isinstance(n, int):
        problems.append('"messages_to_ack" should be an int')
    elif n != d.messages:
        if n == len(d.hashes):
            problems.append(
                f"{n} is the number of hashes (drainingHashesCount); each hash has unackMsgs messages "
                f"and all of them must be acknowledged: {d.messages} (drainingHashesUnackedMessages)"
            )
        elif holder_stats is not None and n == holder_stats.unacked_messages:
            problems.append(
                f"{d.holder} has {n} unacked messages in all, but only those of the draining hashes "
                f"hold anything back: {d.messages} (the sum of unackMsgs)"
            )
        else:
            problems.append(f"add up unackMsgs over {d.holder}'s drainingHashes: {d.messages}")
    if problems:
        return failed(
            problems,
            hint="PIP-379 (4.0): a hash that moved stays with its old consumer until that "
            "consumer has acknowledged every message of it it was sent.",
        )
    return passed(
        f"{d.holder} still has {d.messages} unacked messages of {len(d.hashes)} hashes that now belong to "
        f"{', '.join(d.waiting)}; each hash moves as soon as its last message is acknowledged."
    )


__all__ = [
    "Blocked",
    "Draining",
    "PER_CONSUMER",
    "PER_SUBSCRIPTION",
    "blocked_on_unacked",
    "check_blocked_consumer",
    "check_draining",
    "check_pinning_entry",
    "draining_summary",
    "pinning_entry",
]
