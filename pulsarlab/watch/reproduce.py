"""Reproduce a recorded moment of a real cluster in the model: a `Lab` whose subscription looks like what the
admin API showed, and what-ifs on it.

Models no Pulsar class: it drives the model's real client and broker (`pulsarlab.lab.Lab`) through the steps that
lead to the observed state, so every mechanism that follows (dispatch, acks, draining, the unacked limits) is the
model's own, not a copy of the numbers:

1. a lab on the profile of the recording (the broker's version, or the line its Key_Shared fields show);
2. the subscription's type and Key_Shared mode (sticky ranges as observed), its consumers by name, in the order
   the stats list them; consumers that joined late (the new owners of 4.x draining hashes, the classic
   ``consumersAfterMarkDeletePosition``) subscribe after the messages they must not get;
3. one message per observed entry after the mark-delete position, up to the read position (at most
   ``max_entries``), keyed so that each unacknowledged one (an ack hole) reaches the consumer that holds it:
   a draining hash's messages get a key of exactly that hash and go to the consumer that drains it, other holes go
   to the consumers in proportion to their ``unackedMessages``; every entry inside ``individuallyDeletedMessages``
   is acknowledged;
4. the late consumers subscribe, then the unacknowledged entries no consumer holds (those waiting in the replay
   set) are sent with the draining hashes' keys, or else one more message of each draining hash: the dispatcher
   must hold them back (blocked attempts).

`Reproduction.notes` says in words what could not be inferred (the cluster's broker.conf, priorities, keys,
batches, entries past the read position, counters of blocked attempts, ...) and ``matched`` what was checked
against the observation (hash ranges, draining hashes, holes). `what_if` builds the reproduction twice, the
second time with one change (a consumer joins or leaves, a broker.conf setting, a version), runs both on with
the same application behaviour (consumers that acked keep acking, the ones that held messages keep holding
them) and returns a `pulsarlab.scenarios.fork.ForkResult`, which `pulsarlab_widgets.fork.ForkView` shows.

Simplifies: positions are renumbered (the model's ledger ids are its own; ``positions`` maps observed to
model), one partition of a partitioned topic is reproduced, and keys are made up (the admin API shows no
payload or key): a draining hash's key is found by searching for a string with that hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from pulsarlab.errors import Timeout
from pulsarlab.importers import ConsumerStats, CursorStats, SubscriptionStats
from pulsarlab.lab import Lab
from pulsarlab.managed_ledger.position import Position
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, KeySharedMode
from pulsarlab.scenarios.fork import ForkResult, first_divergence
from pulsarlab.snapshot.recorder import Recorder
from pulsarlab.watch.readings import Reading

MAX_ENTRIES = 200
KEY_SEARCH = 1_000_000  # strings tried to find a key of one hash (4.x: 65536 hashes, found in ~65536 tries)
WHAT_IFS = ("consumer_joins", "consumer_leaves", "setting_changes", "version_changes")


@dataclass(frozen=True)
class WhatIf:
    """One change to a reproduced moment: ``consumer_joins``, ``consumer_leaves`` (``consumer``: its name, default
    the first), ``setting_changes`` (broker.conf ``setting`` = ``value``: the lab is built with it, so settings
    read only when a topic or cursor is made, such as ``acknowledgmentAtBatchIndexLevelEnabled``, work too) or
    ``version_changes`` (``version``: a profile such as "4.1"). `as_dict` gives what a fork's change gives."""

    kind: str
    consumer: str | None = None
    setting: str | None = None
    value: Any = None
    version: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in WHAT_IFS:
            raise ValueError(f"unknown what-if {self.kind!r}; what-ifs: {', '.join(WHAT_IFS)}")
        if (self.kind == "setting_changes") != (self.setting is not None):
            raise ValueError("setting= (and value=) belong to setting_changes, which needs them")
        if (self.kind == "version_changes") != (self.version is not None):
            raise ValueError("version= belongs to version_changes, which needs it")
        if self.consumer is not None and self.kind != "consumer_leaves":
            raise ValueError("consumer= names the consumer that leaves")

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass
class Reproduction:
    """The lab, its subscription's consumers by observed name, and what matched and what could not be inferred."""

    lab: Lab
    topic: str
    subscription: str
    consumers: dict[str, Any]
    positions: dict[tuple[int, int], tuple[int, int]]  # observed (ledger, entry) -> the model's
    held: dict[str, list[Any]]  # per consumer: the messages it holds unacknowledged
    keys: dict[int, str]  # draining hash -> the key found for it
    matched: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    producer: Any = None
    client: Any = None

    def explain(self) -> str:
        lines = [f"reproduced {self.subscription!r} of {self.topic} in the model (Pulsar {self.lab.version}):"]
        lines += [f"  matches: {m}" for m in self.matched]
        lines += [f"  not inferred: {n}" for n in self.notes]
        return "\n".join(lines)

    def stats(self) -> dict[str, Any]:
        """The model's ``pulsar-admin topics stats`` of the reproduced topic, to set beside the observed one."""
        return self.lab.admin.topics.stats(self.topic)


# ------------------------------------------------------------------------------------------------------
# What a recorded moment holds


def responses_at(timeline: Sequence[Any], frame: int = -1) -> tuple[dict[str, Any], str, int]:
    """The admin answers of ``timeline[frame]`` (the last good poll at or before it), the profile and its index."""
    n = len(timeline)
    if n == 0:
        raise ValueError("the recording has no polls")
    i = frame + n if frame < 0 else frame
    if not 0 <= i < n:
        raise IndexError(f"frame {frame} is outside the recording (0..{n - 1})")
    for j in range(i, -1, -1):
        f = timeline[j]
        if f.event is not None and f.event.kind == "admin_polled":
            return f.event.fields["responses"], f.snapshot.version, j
    raise ValueError(f"no good poll at or before frame {i}: the broker answered nothing yet")


def _pick(responses: dict[str, Any], topic: str | None, subscription: str | None) -> tuple[str, Any, Any, str]:
    """(partition or topic name, its stats, its stats-internal, subscription name)."""
    names = list(responses)
    if topic is not None:
        matches = [n for n in names if n == topic or n.endswith("/" + topic)]
        if not matches:
            raise KeyError(f"no topic {topic!r} in the recording; topics: {names}")
        names = matches
    for name in names:
        stats, internal = Reading.from_json(name, responses[name]).parsed()
        parts = [(name, stats, internal)]
        if stats.partitions:
            inner = getattr(internal, "partitions", {})
            parts = [(p, s, inner.get(p)) for p, s in sorted(stats.partitions.items())]
        for part, s, i in parts:
            subs = list(s.subscriptions)
            if subscription is not None:
                subs = [x for x in subs if x == subscription]
            with_consumers = [x for x in subs if s.subscriptions[x].consumers]
            for chosen in with_consumers or subs:
                return part, s, i, chosen
    raise KeyError(
        f"no subscription {subscription!r} in the recording" if subscription else "no subscription in the recording"
    )


# ------------------------------------------------------------------------------------------------------
# Keys


_FOUND: dict[tuple[Any, ...], str] = {}  # (selector kind, hash range, profile, hash) -> key: searches are costly


def key_for_hash(target: int, selector: Any) -> str:
    """A key whose sticky-key hash under ``selector`` (a Key_Shared selector: its profile's hash and range) is
    ``target`` (searched; `KEY_SEARCH` tries at most)."""
    memo = (type(selector).__name__, tuple(selector.key_hash_range()), selector.profile.name, target)
    if memo in _FOUND:
        return _FOUND[memo]
    for i in range(KEY_SEARCH):
        key = f"hash-{target}-{i}"
        if selector.make_sticky_key_hash(key.encode()) == target:
            _FOUND[memo] = key
            return key
    raise ValueError(f"no key with hash {target} among {KEY_SEARCH} tried")


class _Keys:
    """Keys the selector gives to a chosen consumer once every observed consumer is subscribed (searched among
    ``key-0``, ``key-1``, ... on a scratch lab with the same consumers), so a hole's message stays with its
    holder when the late consumers join."""

    def __init__(self, version: str, sub_name: str, subscribe: Any) -> None:
        scratch = Lab(version=version, seed=0)
        client = scratch.client()
        subscribe(client, "scratch")
        t = scratch.service.topics[scratch.service.normalize("scratch")]
        self.selector = getattr(t.subscriptions[sub_name].dispatcher, "selector", None)
        self._by_owner: dict[str, list[str]] = {}
        self._used = 0

    def owner(self, key: str) -> str | None:
        if self.selector is None:
            return None
        c = self.selector.select(self.selector.make_sticky_key_hash(key.encode()))
        return None if c is None else c.name

    def for_consumer(self, name: str) -> str | None:
        """One of a few keys ``name`` owns (in turn), None when it owns none among those tried."""
        if self.selector is None:
            return None
        found = self._by_owner.get(name)
        if found is None:
            found = []
            for i in range(4096):
                key = f"key-{i}"
                if self.owner(key) == name:
                    found.append(key)
                    if len(found) >= 4:
                        break
            self._by_owner[name] = found
        self._used += 1
        return found[self._used % len(found)] if found else None


# ------------------------------------------------------------------------------------------------------
# The steps


def _observed_positions(cursor: CursorStats, sizes: dict[int, int], end: Position, limit: int) -> list[Position]:
    """Observed entries after the mark-delete position, before ``end``, at most ``limit``."""
    md = cursor.mark_delete_position
    out: list[Position] = []
    for lid in sorted(sizes):
        if md is not None and lid < md.ledger_id:
            continue
        first = md.entry_id + 1 if md is not None and lid == md.ledger_id else 0
        for e in range(max(first, 0), sizes[lid]):
            p = Position(lid, e)
            if p >= end or len(out) >= limit:
                return out
            out.append(p)
    return out


def _acked(cursor: CursorStats, p: Position) -> bool:
    return any(r.lower < p <= r.upper for r in cursor.ack_ranges)


def _late_consumers(sub: SubscriptionStats) -> list[str]:
    """Consumers that joined after the messages they must not get: owners of others' draining hashes (4.x) and
    the classic recently joined ones."""
    late: list[str] = []
    for c in sub.consumers:
        for d in c.draining_hashes:
            for other in sub.consumers:
                if other is c:
                    continue
                ranges = other.key_hash_range_arrays or other.key_hash_ranges or ()
                if any(r.start <= d.hash <= r.end for r in ranges) and other.consumer_name not in late:
                    late.append(other.consumer_name or "")
    late += [n for n in sub.consumers_after_mark_delete_position if n not in late]
    return late


def _policy(sub: SubscriptionStats, c: ConsumerStats) -> ConsumerKeySharedPolicy | None:
    if sub.type is not ConsumerType.KeyShared:
        return None
    sticky = sub.key_shared_mode is KeySharedMode.Sticky
    ranges = c.key_hash_range_arrays or c.key_hash_ranges or ()
    if sticky and ranges:
        return ConsumerKeySharedPolicy(
            KeySharedMode.Sticky,
            allow_out_of_order_delivery=sub.allow_out_of_order_delivery,
            sticky_ranges=[(r.start, r.end) for r in ranges],
        )
    return ConsumerKeySharedPolicy(allow_out_of_order_delivery=sub.allow_out_of_order_delivery)


def _drain_queue(consumer: Any) -> list[Any]:
    got = []
    while True:
        try:
            got.append(consumer.receive(timeout_millis=0))
        except Timeout:
            return got


def reproduce(
    timeline: Sequence[Any],
    frame: int = -1,
    *,
    topic: str | None = None,
    subscription: str | None = None,
    max_entries: int = MAX_ENTRIES,
    broker_config: dict[str, Any] | None = None,
    version: str | None = None,
    extra_consumers: Iterable[str] = (),
    without: Iterable[str] = (),
) -> Reproduction:
    """A lab in the state ``timeline[frame]`` shows (a watch's recording: a `Watcher` or a loaded timeline).

    ``broker_config`` / ``version`` override what the lab is built with; ``extra_consumers`` subscribe after the
    observed ones and ``without`` leave the observed state out of them (both for `what_if`).
    """
    responses, profile, _index = responses_at(timeline, frame)
    part, stats, internal, sub_name = _pick(responses, topic, subscription)
    sub = stats.subscriptions[sub_name]
    cursor = internal.cursors.get(sub_name) if internal is not None else None
    lab = Lab(version=version or profile, seed=0, broker_config=broker_config)
    notes = [
        "the cluster's broker.conf is not in the admin API: the lab runs Pulsar "
        f"{lab.version}'s defaults" + (f" with {broker_config}" if broker_config else ""),
        "priority levels, receiver queue sizes and client versions' ack grouping are not in the stats: defaults",
        "message keys and batches are not in the admin API: keys are made up to reach the observed owners, "
        "one message per entry",
    ]
    matched: list[str] = []
    if stats.partitions or "-partition-" in part:
        notes.append(f"one partition is reproduced ({part}), as a topic of its own")
    local = part.split("/")[-1]
    client = lab.client()
    producer = client.create_producer(local, batching_enabled=False)
    ctype = sub.type or ConsumerType.Shared
    late = [n for n in _late_consumers(sub) if n not in set(without)]
    observed = [c for c in sub.consumers if c.consumer_name not in set(without)]
    consumers: dict[str, Any] = {}

    def join(c: ConsumerStats) -> None:
        name = c.consumer_name or f"consumer-{len(consumers)}"
        consumers[name] = client.subscribe(
            local, sub_name, ctype, consumer_name=name, key_shared_policy=_policy(sub, c)
        )

    for c in observed:
        if c.consumer_name not in late:
            join(c)
    if not consumers and observed:
        join(observed[0])

    def subscribe_all(c: Any, topic_name: str) -> None:
        for i, o in enumerate(observed):
            c.subscribe(
                topic_name,
                sub_name,
                ctype,
                consumer_name=o.consumer_name or f"consumer-{i}",
                key_shared_policy=_policy(sub, o),
            )

    keys = _Keys(lab.version, sub_name, subscribe_all)
    held: dict[str, list[Any]] = {n: [] for n in consumers}

    # the entries to recreate, and who holds each unacknowledged one
    positions: dict[tuple[int, int], tuple[int, int]] = {}
    if cursor is None or cursor.mark_delete_position is None:
        notes.append("no stats-internal cursor for this subscription: no ack holes to recreate")
        window: list[Position] = []
    else:
        sizes = internal.ledger_entries()
        end = cursor.read_position or Position(2**62, 0)
        window = _observed_positions(cursor, sizes, end, max_entries)
        if len(window) == max_entries:
            notes.append(f"only the first {max_entries} entries after the mark-delete position are recreated")
        lac = internal.last_confirmed_entry
        if cursor.read_position is not None and lac is not None and lac >= cursor.read_position:
            notes.append(
                f"the entries from the read position {cursor.read_position} to {lac} (not yet dispatched) are not "
                "recreated: the model's consumers would take them at once"
            )
    drain_targets: list[tuple[str, int]] = []  # (consumer, hash) for each message a draining hash holds
    for c in observed:
        for d in c.draining_hashes:
            drain_targets += [(c.consumer_name or "", d.hash)] * max(d.unack_msgs, 1)
    quotas = {n: max(0, c.unacked_messages) for c in observed if (n := c.consumer_name or "") in consumers}
    for n, _h in drain_targets:
        if n in quotas:
            quotas[n] = max(0, quotas[n] - 1)
    hole_owner: dict[tuple[int, int], str] = {}
    sent_keys: dict[int, str] = {}
    plan: list[tuple[Position, str | None, str | None]] = []  # (observed position, key, consumer that holds it)
    cycle = 0
    deferred: list[Position] = []  # unacknowledged entries nobody holds: sent after the late consumers join
    for p in window:
        if cursor is not None and _acked(cursor, p):
            plan.append((p, f"acked-{len(plan)}", None))
            continue
        if drain_targets:
            holder, h = drain_targets.pop(0)
            if h not in sent_keys:
                sent_keys[h] = key_for_hash(h, keys.selector)
            plan.append((p, sent_keys[h], holder))
            continue
        wanting = [n for n, q in quotas.items() if q > 0]
        if not wanting and sent_keys:  # no consumer holds it: a message of a draining hash, held back for now
            deferred.append(p)
            continue
        wanting = wanting or sorted(quotas, key=lambda n: -quotas[n])[:1]
        holder = wanting[cycle % len(wanting)] if wanting else None
        cycle += 1
        if holder is not None:
            quotas[holder] -= 1
        key = keys.for_consumer(holder) if holder is not None else None
        plan.append((p, key or f"hole-{len(plan)}", holder))
    if drain_targets:
        notes.append(f"{len(drain_targets)} draining message(s) did not fit in the entries before the read position")
    model_of: dict[tuple[int, int], tuple[int, int]] = {}
    for p, key, holder in plan:
        mid = producer.send(f"entry {p}".encode(), partition_key=key)
        model_of[(mid.ledger, mid.entry)] = (p.ledger_id, p.entry_id)
        positions[(p.ledger_id, p.entry_id)] = (mid.ledger, mid.entry)
        if holder is not None:
            hole_owner[(p.ledger_id, p.entry_id)] = holder
    lab.run_until_idle()
    for name, consumer in consumers.items():
        for m in _drain_queue(consumer):
            mid = m.message_id()
            obs = model_of.get((mid.ledger, mid.entry))
            if obs is not None and obs not in hole_owner:
                consumer.acknowledge(m)
            else:
                held[name].append(m)
    lab.advance(200)  # the grouped acks go out
    lab.run_until_idle()
    for c in observed:
        if c.consumer_name in late:
            join(c)
            held[c.consumer_name or ""] = []
    for name in extra_consumers:
        consumers[name] = client.subscribe(local, sub_name, ctype, consumer_name=name)
        held[name] = []
    waiting = sorted(sent_keys.items())
    for i, p in enumerate(deferred):  # the dispatcher must hold these back: their hashes drain
        mid = producer.send(f"entry {p}".encode(), partition_key=waiting[i % len(waiting)][1])
        positions[(p.ledger_id, p.entry_id)] = (mid.ledger, mid.entry)
    if deferred:
        notes.append(
            f"{len(deferred)} unacknowledged entr(y/ies) no consumer holds (waiting in the replay set) are sent after "
            "the late consumers joined, with the draining hashes' keys, so they come after the acked entries"
        )
    else:
        for _h, key in waiting:
            producer.send(b"after the join", partition_key=key)
    lab.run_until_idle()
    _compare(lab, local, sub_name, sub, cursor, plan, sent_keys, matched, notes, set(without))
    return Reproduction(
        lab,
        lab.service.normalize(local),
        sub_name,
        consumers,
        positions,
        held,
        sent_keys,
        matched,
        notes,
        producer,
        client,
    )


def _compare(
    lab: Lab,
    topic: str,
    sub_name: str,
    sub: SubscriptionStats,
    cursor: CursorStats | None,
    plan: list[tuple[Position, str | None, str | None]],
    sent_keys: dict[int, str],
    matched: list[str],
    notes: list[str],
    without: set[str],
) -> None:
    """What of the observation the model now shows, and what it does not."""
    model = lab.admin.topics.stats(topic)["subscriptions"][sub_name]
    by_name = {c["consumerName"]: c for c in model["consumers"]}
    holes = sum(1 for _p, _k, holder in plan if holder is not None)
    acked = len(plan) - holes
    if plan:
        matched.append(f"{holes} unacknowledged and {acked} acknowledged entries after the mark-delete position")
    for c in sub.consumers:
        name = c.consumer_name or ""
        if name in without:
            continue
        mc = by_name.get(name)
        if mc is None:
            notes.append(f"consumer {name!r} is not in the model's subscription")
            continue
        observed = [(r.start, r.end) for r in (c.key_hash_range_arrays or c.key_hash_ranges or ())]
        mine = [tuple(r) for r in mc.get("keyHashRangeArrays") or []] or [
            tuple(int(x) for x in s.strip("[]").split(",")) for s in mc.get("keyHashRanges") or []
        ]
        if observed and not without:
            if sorted(observed) == sorted(mine):
                matched.append(f"{name}'s Key_Shared hash ranges ({len(observed)} range(s))")
            else:
                notes.append(
                    f"{name}'s hash ranges differ from the model's selector for these consumer names "
                    f"(observed {len(observed)} range(s), model {len(mine)})"
                )
        obs_drain = {d.hash for d in c.draining_hashes}
        model_drain = {d["hash"] for d in mc.get("drainingHashes") or []}
        if obs_drain:
            if obs_drain <= model_drain:
                matched.append(f"{name} drains hash(es) {sorted(obs_drain)} as observed")
            else:
                notes.append(
                    f"{name}'s draining hashes {sorted(obs_drain - model_drain)} are not draining in the model"
                )
            blocked = sum(d.blocked_attempts for d in c.draining_hashes)
            made = sum(d["blockedAttempts"] for d in mc.get("drainingHashes") or [])
            notes.append(
                f"{name}'s {blocked} observed blocked attempt(s) count the broker's reads since the hashes started "
                f"draining, which the stats do not date: the model counts its own ({made})"
            )
        if mc.get("unackedMessages") != c.unacked_messages:
            notes.append(
                f"{name} holds {mc.get('unackedMessages')} unacked message(s) in the model, "
                f"{c.unacked_messages} observed (only entries before the read position are recreated)"
            )
    if cursor is not None and cursor.ack_ranges:
        mine = lab.admin.topics.stats_internal(topic)["cursors"][sub_name]["individuallyDeletedMessages"]
        matched.append(
            f"ack holes: observed {cursor.individually_deleted_messages}, model {mine} (positions renumbered)"
        )


# ------------------------------------------------------------------------------------------------------
# What if


def what_if(
    timeline: Sequence[Any],
    change: WhatIf,
    frame: int = -1,
    *,
    run_ms: int = 5000,
    messages: int = 20,
    **options: Any,
) -> ForkResult:
    """Reproduce ``timeline[frame]`` twice, the second time with ``change``, then run both the same way for
    ``run_ms`` (``messages`` more messages over the draining and fresh keys; the consumers that held messages
    keep holding them, the others ack what they get) and compare them frame by frame.

    The result's ``base`` and ``branch`` are recorders from the reproduced moment on: `ForkView` shows them.
    """
    base = _run(reproduce(timeline, frame, **options), run_ms, messages)
    opts = dict(options)
    if change.kind == "consumer_joins":
        opts["extra_consumers"] = ["what-if-new"]
        done = "a consumer what-if-new joined"
    elif change.kind == "consumer_leaves":
        rep = reproduce(timeline, frame, **options)
        name = change.consumer or next(iter(rep.consumers))
        if name not in rep.consumers:
            raise ValueError(f"no consumer {name!r}; consumers: {list(rep.consumers)}")
        opts["without"] = [name]
        done = f"consumer {name} left"
    elif change.kind == "setting_changes":
        opts["broker_config"] = {**(options.get("broker_config") or {}), change.setting: change.value}
        done = f"{change.setting} = {change.value!r}"
    else:
        opts["version"] = change.version
        done = f"the broker runs Pulsar {change.version}"
    branch = _run(reproduce(timeline, frame, **opts), run_ms, messages)
    return ForkResult(
        base=base,
        branch=branch,
        frame=0,
        change=change,
        done=done,
        change_frame=0,
        change_time=0,
        first_divergence=first_divergence(base, branch),
    )


def _run(rep: Reproduction, run_ms: int, messages: int) -> Recorder:
    """Record ``run_ms`` of the reproduction: ``messages`` more sends over its keys, everyone but the holders
    acking what they receive, the holders keeping theirs."""
    lab = rep.lab
    rec = Recorder(lab)
    holders = {n for n, msgs in rep.held.items() if msgs}
    keys = [*rep.keys.values(), *(f"fresh-{i}" for i in range(4))]
    step = max(1, run_ms // max(messages, 1))
    for i in range(messages):
        rep.producer.send(f"after {i}".encode(), partition_key=keys[i % len(keys)])
        lab.advance(step)
        for name, consumer in rep.consumers.items():
            for m in _drain_queue(consumer):
                if name in holders:
                    rep.held[name].append(m)
                else:
                    consumer.acknowledge(m)
    lab.advance(max(0, run_ms - step * messages) + 200)
    lab.run_until_idle()
    rec.close()
    return rec


__all__ = ["MAX_ENTRIES", "WHAT_IFS", "Reproduction", "WhatIf", "key_for_hash", "reproduce", "responses_at", "what_if"]
