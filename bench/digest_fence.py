"""Behaviour fence: seeded random workloads through the public Lab API, one line of digests per run.

Run: ``.venv/bin/python bench/digest_fence.py [--runs-per-config N] [--ops N] [--only SUBSTRING] > out.txt``,
in two checkouts (before and after a change), then ``diff`` the outputs: a performance change must leave every
line identical. Not a test (it asserts nothing and knows no expected values); a dev tool that prints.

Each run builds one `pulsarlab.Lab` from a configuration (subscription type; Key_Shared AUTO_SPLIT with
consistent hashing or hash ranges, STICKY, out-of-order on/off, classic or PIP-379; profile 3.0 / 4.0 / 4.1;
batching off / default / key-based; small ledgers, small receiver queues, unacked limits, batch-index acks, a
partitioned topic) and a seed, then plays a random workload: sends with partition keys, ordering keys or no key;
receives with individual acks, cumulative acks (Exclusive / Failover), messages left unacked,
``redeliver_unacknowledged_messages``; consumers joining, closing and crashing; virtual time advancing. It prints
the event log's digest and length, the ids each consumer got, and hashes of ``stats`` and ``stats-internal``
(``lastMarkDeleteAdvancedTimestamp`` is left out of the stats hash: it is a field added after the fence's
baseline), then the same workload with the event log off (stats hashes only, which must match the log-on ones).
The last line hashes every line before it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import pulsarlab as pl  # noqa: E402
import pulsarlab.broker.dispatch.shared as _dispatcher_shared  # noqa: E402

# a dispatcher that never stops reading is a model bug the fence reports; give up on it sooner
_dispatcher_shared.MAX_LOOPS = 20_000

TOPIC = "fence"
SUB = "s"
NEW_STATS_FIELDS = ("lastMarkDeleteAdvancedTimestamp",)


@dataclass(frozen=True)
class Config:
    """One lab set-up the workloads run on."""

    name: str
    ctype: pl.ConsumerType
    version: str
    batching: str  # "off", "default", "key"
    mode: pl.KeySharedMode = pl.KeySharedMode.AutoSplit
    ooo: bool = False
    conf: tuple[tuple[str, Any], ...] = ()
    queue_sizes: tuple[int, ...] = (1, 3, 1000)
    partitions: int = 0
    extra: dict = field(default_factory=dict, compare=False, hash=False)


def configs() -> list[Config]:
    out: list[Config] = []
    small = (("managedLedgerMaxEntriesPerLedger", 5), ("activeConsumerFailoverDelayTimeMillis", 50))
    for version in ("3.0", "4.0", "4.1"):
        for batching in ("off", "default", "key"):
            for ctype in (pl.ConsumerType.Exclusive, pl.ConsumerType.Failover, pl.ConsumerType.Shared):
                out.append(Config(f"{ctype.name}-{version}-{batching}", ctype, version, batching, conf=small))
            ks = pl.ConsumerType.KeyShared
            for ooo in (False, True):
                out.append(
                    Config(f"KS-auto-ch-ooo{int(ooo)}-{version}-{batching}", ks, version, batching, ooo=ooo, conf=small)
                )
                out.append(
                    Config(
                        f"KS-auto-ranges-ooo{int(ooo)}-{version}-{batching}",
                        ks,
                        version,
                        batching,
                        ooo=ooo,
                        conf=small + (("subscriptionKeySharedUseConsistentHashing", False),),
                    )
                )
                out.append(
                    Config(
                        f"KS-sticky-ooo{int(ooo)}-{version}-{batching}",
                        ks,
                        version,
                        batching,
                        mode=pl.KeySharedMode.Sticky,
                        ooo=ooo,
                        conf=small,
                    )
                )
            if version != "3.0":
                out.append(
                    Config(
                        f"KS-classic-{version}-{batching}",
                        ks,
                        version,
                        batching,
                        conf=small + (("subscriptionKeySharedUseClassicPersistentImplementation", True),),
                    )
                )
            # unacked limits, tiny look-ahead, batch-index acks on/off
            out.append(
                Config(
                    f"KS-limits-{version}-{batching}",
                    ks,
                    version,
                    batching,
                    conf=small
                    + (
                        ("maxUnackedMessagesPerConsumer", 6),
                        ("maxUnackedMessagesPerSubscription", 14),
                        ("keySharedLookAheadMsgInReplayThresholdPerConsumer", 3),
                        ("keySharedLookAheadMsgInReplayThresholdPerSubscription", 5),
                        ("acknowledgmentAtBatchIndexLevelEnabled", version == "4.0"),
                    ),
                )
            )
            out.append(
                Config(
                    f"Shared-limits-{version}-{batching}",
                    pl.ConsumerType.Shared,
                    version,
                    batching,
                    conf=small
                    + (
                        ("maxUnackedMessagesPerConsumer", 6),
                        ("maxUnackedMessagesPerSubscription", 14),
                        ("acknowledgmentAtBatchIndexLevelEnabled", version == "4.0"),
                    ),
                )
            )
        out.append(
            Config(f"KS-partitioned-{version}", pl.ConsumerType.KeyShared, version, "key", conf=small, partitions=2)
        )
        out.append(
            Config(
                f"Failover-partitioned-{version}",
                pl.ConsumerType.Failover,
                version,
                "default",
                conf=small,
                partitions=2,
            )
        )
    return out


def _h(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _strip_new_fields(stats: Any) -> Any:
    if isinstance(stats, dict):
        return {k: _strip_new_fields(v) for k, v in stats.items() if k not in NEW_STATS_FIELDS}
    if isinstance(stats, list):
        return [_strip_new_fields(v) for v in stats]
    return stats


class Run:
    """One workload on one lab."""

    def __init__(self, cfg: Config, seed: int, record_events: bool) -> None:
        self.cfg = cfg
        self.rng = random.Random(f"{cfg.name}/{seed}")
        self.lab = pl.Lab(version=cfg.version, seed=seed, broker_config=dict(cfg.conf), record_events=record_events)
        if cfg.partitions:
            self.lab.admin.topics.create_partitioned_topic(TOPIC, cfg.partitions)
        self.client = self.lab.client()
        kwargs: dict[str, Any] = {}
        if cfg.batching != "off":
            kwargs = dict(
                batching_enabled=True,
                batching_max_messages=self.rng.choice([2, 3, 5, 100]),
                batching_type=pl.BatchingType.KeyBased if cfg.batching == "key" else pl.BatchingType.Default,
            )
        self.producer = self.client.create_producer(TOPIC, **kwargs)
        self.consumers: dict[int, Any] = {}
        self.delivered: dict[str, list[str]] = {}
        self.errors: list[str] = []
        self.names = 0
        self.queue = self.rng.choice(cfg.queue_sizes)
        self.group_ms = self.rng.choice([0, 100])

    def _policy(self, slot: int) -> Any:
        cfg = self.cfg
        if cfg.ctype is not pl.ConsumerType.KeyShared:
            return None
        if cfg.mode is pl.KeySharedMode.Sticky:
            lo = slot * 16384
            return pl.ConsumerKeySharedPolicy(
                cfg.mode, allow_out_of_order_delivery=cfg.ooo, sticky_ranges=[(lo, lo + 16383)]
            )
        return pl.ConsumerKeySharedPolicy(allow_out_of_order_delivery=cfg.ooo)

    def join(self, slot: int) -> None:
        if slot in self.consumers:
            return
        self.names += 1
        name = f"c{self.names}"
        try:
            c = self.client.subscribe(
                TOPIC,
                SUB,
                consumer_type=self.cfg.ctype,
                consumer_name=name,
                receiver_queue_size=self.queue,
                initial_position=pl.InitialPosition.Earliest,
                key_shared_policy=self._policy(slot),
                lab_ack_group_time_ms=self.group_ms,
                lab_priority_level=self.rng.choice([0, 0, 1]),
            )
        except Exception as e:  # noqa: BLE001 - the error text is part of the behaviour
            self.errors.append(f"{name}: {type(e).__name__}: {e}")
            return
        self.consumers[slot] = c
        self.delivered[name] = []

    def send(self, n: int) -> None:
        rng = self.rng
        for _ in range(n):
            kind = rng.random()
            kw: dict[str, Any] = {}
            if kind < 0.7:
                kw["partition_key"] = f"k{rng.randrange(7)}"
            elif kind < 0.85:
                kw["ordering_key"] = f"o{rng.randrange(3)}"
                if rng.random() < 0.5:
                    kw["partition_key"] = f"p{rng.randrange(3)}"
            self.producer.send_async(b"v" * rng.randrange(1, 40), None, **kw)

    def recv(self, slot: int, n: int) -> None:
        c = self.consumers.get(slot)
        if c is None:
            return
        rng = self.rng
        exclusive_like = self.cfg.ctype in (pl.ConsumerType.Exclusive, pl.ConsumerType.Failover)
        for _ in range(n):
            try:
                m = c.receive(0)
            except pl.Timeout:
                return
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"recv {c.consumer_name()}: {type(e).__name__}: {e}")
                return
            self.delivered[c.consumer_name()].append(str(m.message_id()))
            r = rng.random()
            try:
                if exclusive_like and r < 0.3:
                    c.acknowledge_cumulative(m)
                elif r < 0.9:
                    c.acknowledge(m)
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"ack {c.consumer_name()}: {type(e).__name__}: {e}")

    def step(self) -> None:
        rng = self.rng
        r = rng.random()
        slot = rng.randrange(4)
        if r < 0.3:
            self.send(rng.randint(1, 8))
            if rng.random() < 0.3:
                self.producer.flush()
        elif r < 0.6:
            self.recv(slot, rng.randint(1, 10))
        elif r < 0.72:
            self.lab.advance(rng.choice([1, 5, 10, 50, 150]))
        elif r < 0.78:
            if len(self.consumers) > 1 and slot in self.consumers:
                self.consumers.pop(slot).close()
        elif r < 0.83:
            if len(self.consumers) > 1 and slot in self.consumers:
                self.consumers.pop(slot).crash()
        elif r < 0.86:
            c = self.consumers.get(slot)
            if c is not None:
                c.redeliver_unacknowledged_messages()
        else:
            self.join(slot)

    def play(self, ops: int) -> None:
        try:
            self.join(0)
            for _ in range(ops):
                self.step()
            self.producer.flush()
            for _ in range(30):  # drain: everyone receives and acks what arrives
                self.lab.advance(200)
                for slot in list(self.consumers):
                    self.recv(slot, 10_000)
            self.lab.run_until_idle()
        except Exception as e:  # noqa: BLE001 - a model failure is part of what the fence compares
            self.errors.append(f"play stopped: {type(e).__name__}: {e}")

    def topics(self) -> list[str]:
        if self.cfg.partitions:
            return [f"{TOPIC}-partition-{i}" for i in range(self.cfg.partitions)]
        return [TOPIC]

    def stats_hashes(self) -> tuple[str, str]:
        topics = self.lab.admin.topics
        stats = [_strip_new_fields(topics.stats(t)) for t in self.topics()]
        internal = [topics.stats_internal(t) for t in self.topics()]
        return _h(stats), _h(internal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-per-config", type=int, default=3)
    parser.add_argument("--ops", type=int, default=120)
    parser.add_argument("--only", default="", help="run only configurations whose name contains this")
    args = parser.parse_args()
    total = hashlib.sha256()
    for cfg in configs():
        if args.only not in cfg.name:
            continue
        for seed in range(args.runs_per_config):
            on = Run(cfg, seed, True)
            on.play(args.ops)
            off = Run(cfg, seed, False)
            off.play(args.ops)
            s_on, i_on = on.stats_hashes()
            s_off, i_off = off.stats_hashes()
            line = (
                f"{cfg.name} seed={seed} events={len(on.lab.events)} digest={on.lab.events.digest()[:20]} "
                f"delivered={_h(on.delivered)} n={sum(map(len, on.delivered.values()))} stats={s_on} "
                f"internal={i_on} off_same={s_on == s_off and i_on == i_off and on.delivered == off.delivered} "
                f"errors={_h(on.errors)}({len(on.errors)})"
            )
            print(line, flush=True)
            total.update(line.encode())
    print(f"TOTAL {total.hexdigest()}")


if __name__ == "__main__":
    main()
