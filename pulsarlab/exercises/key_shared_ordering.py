"""Checkers for the Key_Shared ordering lab (labs/05-key-shared-ordering.ipynb): 3.0 and 4.0 side by side.

Models no Pulsar class. `run_join` plays one scenario on a `pulsarlab.Lab` of either version: consumer c1
takes some keyed messages and does not acknowledge them, c2 joins, more messages arrive. The checkers
ask what c2 can receive then (`check_after_join`) and after c1 acknowledges some keys
(`check_after_acks`); the right answers are what the model's c2 has in its receiver queue, and the
explanations restate the two ordering mechanisms (docs/guide/key-shared-ordering.md: 3.0's recently-joined consumers gate
everything at or after c2's join read position until the mark-delete passes it, for all keys; 4.0's
draining hashes hold back only the hashes that moved while their old owner has unacked messages).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from pulsarlab.broker.key_shared import selector_for_subscription
from pulsarlab.client.consumer import Consumer
from pulsarlab.errors import Timeout
from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.ids import MessageId
from pulsarlab.lab import Lab
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType
from pulsarlab.snapshot.recorder import VIEW_KINDS, Recorder

TOPIC = "orders"
SUBSCRIPTION = "order-workers"
KEYS_BEFORE: tuple[str, ...] = ("order-1", "order-2", "order-3", "order-4") * 2
KEYS_AFTER: tuple[str, ...] = tuple(f"order-{i}" for i in range(1, 7))
VERSIONS = ("3.0", "4.0")


@dataclass
class JoinRun:
    """One run of the join scenario: the lab, its two consumers and the messages by label (``m0``, ``m1``...)."""

    version: str
    lab: Lab
    c1: Consumer
    c2: Consumer
    keys: dict[str, str]  # label -> key
    ids: dict[str, MessageId]  # label -> message id
    before: tuple[str, ...]  # labels published before c2 joined
    after: tuple[str, ...]  # labels published after c2 joined
    taken: dict[str, Any] = field(default_factory=dict)  # label -> Message c1's application received
    recorder: Any = None  # a Recorder when run_join(record=True)

    # --- reading the run -------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """The subscription's part of ``pulsar-admin topics stats``."""
        return self.lab.admin.topics.stats(TOPIC)["subscriptions"][SUBSCRIPTION]

    def consumer_stats(self, name: str) -> dict[str, Any]:
        return next(c for c in self.stats()["consumers"] if c["consumerName"] == name)

    def cursor(self) -> dict[str, Any]:
        """The subscription's cursor in ``pulsar-admin topics stats-internal``."""
        return self.lab.admin.topics.stats_internal(TOPIC)["cursors"][SUBSCRIPTION]

    def key_hash(self, key: str) -> int:
        """The sticky-key hash the broker's selector uses for ``key`` (the numbers stats print)."""
        return selector_for_subscription("AUTO_SPLIT", self.version, dict(self.lab.config)).make_sticky_key_hash(key)

    def owner(self, key: str) -> str | None:
        """Which consumer's hash ranges (as stats print them) hold ``key``'s hash."""
        h = self.key_hash(key)
        for c in self.stats()["consumers"]:
            for start, end in _ranges(c):
                if start <= h <= end:
                    return c["consumerName"]
        return None

    def draining(self) -> dict[int, int]:
        """4.0: hash -> unacked messages that c1 still drains (``drainingHashes`` of c1's stats); {} in 3.0."""
        return {d["hash"]: d["unackMsgs"] for d in self.consumer_stats("c1").get("drainingHashes") or ()}

    def queued(self, consumer: Consumer) -> list[str]:
        """The labels waiting in a consumer's receiver queue."""
        return [m.data().decode() for m in consumer.receiver_queue]

    def label_of(self, message: Any) -> str:
        return message.data().decode()

    def rows(self) -> list[dict[str, Any]]:
        """One row per message: label, key, hash, position, owner now, where it is (for a table)."""
        where: dict[str, str] = {}
        for name, c in (("c1", self.c1), ("c2", self.c2)):
            for label in self.queued(c):
                where[label] = f"{name}'s receiver queue"
        for label in self.taken:
            where[label] = "c1's application (not acked)"
        acked = self._acked_labels()
        read_position = _parse_pos(self.cursor()["readPosition"])
        out = []
        for label, key in self.keys.items():
            mid = self.ids[label]
            waiting = "broker: replay set" if (mid.ledger, mid.entry) < read_position else "broker: not read yet"
            state = "acked" if label in acked else where.get(label, waiting)
            out.append(
                {
                    "message": label,
                    "key": key,
                    "hash": self.key_hash(key),
                    "position": f"{mid.ledger}:{mid.entry}",
                    "published": "before c2 joined" if label in self.before else "after c2 joined",
                    "owner now": self.owner(key),
                    "where": state,
                }
            )
        return out

    def first_unacked(self) -> str | None:
        """The label of the oldest message not yet acknowledged (what holds the mark-delete), if any."""
        acked = self._acked_labels()
        return next((label for label in self.ids if label not in acked), None)

    def _acked_labels(self) -> set[str]:
        acked = set()
        md = _parse_pos(self.cursor()["markDeletePosition"])
        ranges = _parse_ranges(self.cursor()["individuallyDeletedMessages"])
        for label, mid in self.ids.items():
            pos = (mid.ledger, mid.entry)
            if pos <= md or any(lo < pos <= hi for lo, hi in ranges):
                acked.add(label)
        return acked

    # --- driving it ------------------------------------------------------------------------------
    def take_all(self, consumer: Consumer | None = None) -> list[str]:
        """c1's application receives everything in its receiver queue (without acknowledging)."""
        consumer = consumer or self.c1
        labels = []
        while True:
            try:
                m = consumer.receive(timeout_millis=0)
            except Timeout:
                return labels
            labels.append(self.label_of(m))
            if consumer is self.c1:
                self.taken[self.label_of(m)] = m

    def ack_keys(self, keys: Sequence[str]) -> list[str]:
        """c1 receives what it has and acknowledges every message of ``keys`` it holds; then time runs on
        until nothing is left to do. Returns the labels acknowledged."""
        self.take_all()
        done = []
        for label, m in list(self.taken.items()):
            if self.keys[label] in keys:
                self.c1.acknowledge(m)
                del self.taken[label]
                done.append(label)
        self.lab.run_until_idle()
        return done


def run_join(
    version: str,
    *,
    keys_before: Sequence[str] = KEYS_BEFORE,
    keys_after: Sequence[str] = KEYS_AFTER,
    allow_out_of_order_delivery: bool = False,
    broker_config: dict[str, Any] | None = None,
    record: bool = False,
) -> JoinRun:
    """c1 subscribes (Key_Shared, acks sent at once) and gets ``keys_before`` messages without acknowledging
    them; c2 joins; ``keys_after`` messages follow. Messages carry their label (``m0``...) as payload.
    ``record=True`` keeps a `pulsarlab.snapshot.recorder.Recorder` of the run (``run.recorder``) for a player."""
    lab = Lab(version=version, broker_config=broker_config)
    recorder = Recorder(lab, every=VIEW_KINDS) if record else None
    client = lab.client()
    policy = ConsumerKeySharedPolicy(allow_out_of_order_delivery=allow_out_of_order_delivery)

    def join(name: str) -> Consumer:
        return client.subscribe(
            TOPIC,
            SUBSCRIPTION,
            consumer_type=ConsumerType.KeyShared,
            consumer_name=name,
            key_shared_policy=policy,
            lab_ack_group_time_ms=0,
        )

    c1 = join("c1")
    producer = client.create_producer(TOPIC, producer_name="producer-1")
    keys: dict[str, str] = {}
    ids: dict[str, MessageId] = {}
    labels = [f"m{i}" for i in range(len(keys_before) + len(keys_after))]
    c2 = None
    for i, (label, key) in enumerate(zip(labels, [*keys_before, *keys_after])):
        if i == len(keys_before):
            c2 = join("c2")
        keys[label] = key
        ids[label] = producer.send(label.encode(), partition_key=key)
    if c2 is None:
        c2 = join("c2")
    lab.run_until_idle()
    return JoinRun(
        version,
        lab,
        c1,
        c2,
        keys,
        ids,
        tuple(labels[: len(keys_before)]),
        tuple(labels[len(keys_before) :]),
        recorder=recorder,
    )


# ---------------------------------------------------------------------------------------------------
# checkers


def _c2(run: JoinRun) -> list[str]:
    return run.queued(run.c2)


def after_join_answer(**kwargs: Any) -> dict[str, list[str]]:
    """What c2 holds right after joining (and the later messages arriving), per version."""
    return {v: _c2(run_join(v, **kwargs)) for v in VERSIONS}


@exercise(
    todo='write {"3.0": [labels c2 can receive right after it joins], "4.0": [...]} ([] for none)',
    see=(
        "Lab 5, sections 2 and 3 (3.0's recently joined consumers, 4.0's draining hashes)",
        "docs/guide/key-shared-ordering.md#recently-joined-consumers",
        "docs/guide/key-shared-ordering.md#draining-hashes",
    ),
)
def check_after_join(answer: Any, **kwargs: Any) -> CheckResult:
    """Check ``answer`` = ``{"3.0": [labels], "4.0": [labels]}``: which messages c2 can receive right after it
    joins, under each version."""
    runs = {v: run_join(v, **kwargs) for v in VERSIONS}
    return _check(answer, runs, "right after it joins")


@exercise(
    todo='write {"3.0": [labels c2 holds after the acks], "4.0": [...]} ([] for none)',
    see=(
        'Lab 5, section 4 ("Releasing: acknowledgements vs the mark-delete position")',
        "docs/guide/key-shared-ordering.md#draining-hashes",
    ),
)
def check_after_acks(answer: Any, acked_keys: Sequence[str] = ("order-4",), **kwargs: Any) -> CheckResult:
    """Check ``answer`` = ``{"3.0": [labels], "4.0": [labels]}``: what c2 holds after c1 acknowledges every
    message of ``acked_keys`` it has (starting from the join scenario)."""
    runs = {}
    for v in VERSIONS:
        run = run_join(v, **kwargs)
        run.ack_keys(acked_keys)
        runs[v] = run
    return _check(answer, runs, f"after c1 acknowledges its {', '.join(acked_keys)} messages")


def _check(answer: Any, runs: dict[str, JoinRun], when: str) -> CheckResult:
    if not isinstance(answer, dict) or set(answer) != set(VERSIONS):
        return failed(['answer should be a dict {"3.0": ["m…", ...], "4.0": ["m…", ...]}'])
    problems: list[str] = []
    for version, run in runs.items():
        got = answer[version]
        if isinstance(got, (str, bytes)) or not isinstance(got, (list, tuple, set)):
            problems.append(f'{version}: give a list of message labels such as ["m9"], not {got!r}')
            continue
        got_set = {str(g) for g in got}
        want = _c2(run)
        for label in sorted(got_set - set(want), key=_label_order):
            problems.append(f"{version}: c2 cannot receive {label} yet - " + _why_held(run, label))
        for label in sorted(set(want) - got_set, key=_label_order):
            problems.append(f"{version}: c2 does receive {label} - " + _why_free(run, label))
    if problems:
        return failed(
            problems,
            hint="The table of messages above shows each key's owner now; c1's stats show what it still holds.",
        )
    shown = "; ".join(f"{v}: {', '.join(_c2(r)) or 'nothing'}" for v, r in runs.items())
    return passed(
        f"c2 {when} - {shown}. 3.0 gates every key until the mark-delete passes c2's join position; "
        "4.0 holds back only the hashes c1 is still draining."
    )


def _label_order(label: str) -> tuple[int, str]:
    return (int(label[1:]), label) if label[1:].isdigit() else (10**9, label)


def _why_held(run: JoinRun, label: str) -> str:
    if label not in run.keys:
        return f"there is no message {label} (they are {run.before[0]}..{run.after[-1]})"
    key = run.keys[label]
    owner = run.owner(key)
    mid = run.ids[label]
    if owner != "c2":
        return f"its key {key} belongs to {owner} (hash {run.key_hash(key)} is in {owner}'s ranges)"
    if label in run.before and label in run.taken:
        return f"c1 already received it ({key} was c1's when it was sent) and has not acknowledged it"
    if label in run.before:
        return "it was dispatched to c1 before c2 joined and c1 has not acknowledged it"
    if run.version.startswith("3"):
        join = run.consumer_stats("c2").get("readPositionWhenJoining")
        md = run.cursor()["markDeletePosition"]
        line = (
            f"3.0 gates a recently joined consumer for ALL its keys: c2 joined at read position {join} "
            f"(readPositionWhenJoining) and gets only messages before it until the mark-delete passes it; "
            f"{label} is at {mid.ledger}:{mid.entry}"
        )
        hole = run.first_unacked()
        if hole is not None:
            line += f", and the mark-delete stays at {md} because {hole} ({run.keys[hole]}) is not acknowledged"
            if run._acked_labels():
                line += " - acks of later messages only leave holes behind it"
        return line
    h = run.key_hash(key)
    draining = run.draining()
    if h in draining:
        return (
            f"{key} moved from c1 to c2, but c1 still has {draining[h]} unacknowledged message(s) of hash {h} "
            "(c1's drainingHashes): the hash stays blocked until c1 acknowledges them"
        )
    return "the dispatcher has not sent it to c2 (look at lab.events.of_kind('hash_blocked') for the reason)"


def _why_free(run: JoinRun, label: str) -> str:
    key = run.keys[label]
    h = run.key_hash(key)
    if run.version.startswith("3"):
        md = run.cursor()["markDeletePosition"]
        return (
            f"the mark-delete moved to {md}, past c2's join position, so c2 is no longer a recently joined "
            f"consumer and gets the messages of its keys ({key}) again"
        )
    if label in run.before:
        return (
            f"{key} moved to c2 and c1 acknowledged its messages of that hash, so the hash stopped draining "
            f"and its message left the replay set for its new owner"
        )
    if not any(run.keys[other] == key for other in run.before):
        return (
            f"{key} is owned by c2 (hash {h}) and c1 never had a message of it: nothing to drain, so 4.0 "
            "sends it at once"
        )
    return (
        f"{key} is owned by c2 (hash {h}) and c1 no longer holds an unacknowledged message of that hash: "
        "its draining entry is gone"
    )


def _ranges(consumer_stats: dict[str, Any]) -> list[tuple[int, int]]:
    """A consumer's hash ranges from stats: 4.x ``keyHashRangeArrays`` or 3.x ``keyHashRanges`` strings."""
    arrays = consumer_stats.get("keyHashRangeArrays")
    if arrays is not None:
        return [(int(s), int(e)) for s, e in arrays]
    out = []
    for text in consumer_stats.get("keyHashRanges") or ():
        start, end = text.strip("[]").split(",")
        out.append((int(start), int(end)))
    return out


def _parse_pos(text: str) -> tuple[int, int]:
    ledger, entry = text.split(":")
    return int(ledger), int(entry)


def _parse_ranges(text: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    body = text.strip().strip("[]")
    out = []
    for part in filter(None, (p.strip() for p in body.split("],"))):
        lo, hi = part.strip("(]").split("..")
        out.append((_parse_pos(lo), _parse_pos(hi)))
    return out


__all__ = [
    "JoinRun",
    "KEYS_AFTER",
    "KEYS_BEFORE",
    "after_join_answer",
    "check_after_acks",
    "check_after_join",
    "run_join",
]
