"""One grid row of a scenario spec, run through the whole model: a producer, a broker, consumers that nack, crash,
join and leave on the virtual clock.

Models no single Pulsar class; it is an application driving a `pulsarlab.Lab` the way a real one drives a
cluster (docs/guide/subscription-types.md#shared-round-robin, docs/guide/flow-control.md#flow-permits,
docs/guide/acknowledgements.md#command-ack, docs/guide/redelivery.md#ack-timeout for what the broker and client do with
it). The driver, per tick of ``tick_ms``:

1. publishes every message due by now (message ``i`` is due at ``i * 1000 // publish_rate_per_s`` ms) with
   ``send_async``, key ``k<j>`` (``j`` drawn uniformly from ``keys``), delayed by ``deliver_after`` (uniform in
   ``[0, delayed_spread_ms]``) for a ``delayed_fraction`` of them, and chunked (a payload of 2.5 x
   ``maxMessageSize``) for a ``chunked_fraction``;
2. lets each consumer, in subscription order, take up to its quota (``consume_rate_per_s``; everything queued when
   null) with ``receive(0)``; for each message it draws once: below ``crash_rate`` the consumer crashes
   (``Consumer.crash``, a lab extra: pending acks lost) and a new consumer subscribes at once; below
   ``crash_rate + nack_rate`` it calls ``negative_acknowledge``; else ``acknowledge``. Each message taken is
   logged as an ``app_received`` event (consumer, message number, key, redelivery count, action) — the
   application's own log line;
3. every ``consumer_churn_every_ms``, closes the oldest consumer (``close``: acks flushed) and subscribes a new one;
4. advances the clock by ``tick_ms`` (or, once everything is published and nothing was taken, to the next timer or
   churn, whichever is first).

The run ends when every message is published and the subscription's backlog is empty (acknowledged or
dead-lettered), or at ``run_limit_ms``; then the consumers and the producer close. Every random choice comes from
one ``random.Random`` seeded by ``Lab.derive_seed`` so a row gives the same event log on every machine.
Simplifications: one producer and one subscription; a consumer acts on a message as soon as it takes it (no
processing time besides the tick).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Callable

from pulsarlab.client.batching import BatchingType
from pulsarlab.client.policies import ConsumerDeadLetterPolicy
from pulsarlab.errors import Timeout
from pulsarlab.event_catalogue.scenario_run import APP_RECEIVED
from pulsarlab.events import EventLog
from pulsarlab.lab import Lab
from pulsarlab.protocol.subscription import ConsumerType
from pulsarlab.scenarios.spec import CHUNKED_PAYLOAD_FACTOR, GridRow

TOPIC = "sweep"
SUBSCRIPTION = "sweep"
PAYLOAD_BYTES = 16
ACK, NACK, CRASH = 0, 1, 2
ACTIONS = ("acknowledged", "negatively acknowledged", "crashed before acknowledging")

_CONSUMER_TYPES = {
    "Exclusive": ConsumerType.Exclusive,
    "Shared": ConsumerType.Shared,
    "Failover": ConsumerType.Failover,
    "Key_Shared": ConsumerType.KeyShared,
}


@dataclass
class RunResult:
    """What one run leaves: the lab (its event log is the record) and the driver's own counts."""

    row: GridRow
    lab: Lab
    published: int
    settled: bool  # the backlog emptied before run_limit_ms
    end_ms: int

    @property
    def events(self) -> EventLog:
        return self.lab.events


class Driver:
    """The application of one grid row (see the module docstring). ``on_lab(lab)`` runs before anything is made
    (e.g. to start a recorder); `run`'s ``before_tick(driver)`` at the start of every tick (e.g. to fork)."""

    def __init__(self, row: GridRow, record_events: bool = True, on_lab: Callable[[Lab], Any] | None = None) -> None:
        self.row = row
        self.lab = lab = Lab(
            version=row.version, seed=row.seed, broker_config=row.effective_broker_config(), record_events=record_events
        )
        if on_lab is not None:
            on_lab(lab)
        self.nack_next = 0  # messages the application negatively acknowledges whatever it draws (a fork's change)
        self.rng = random.Random(lab.derive_seed("sweep-driver"))
        self.client = lab.client()
        if row.partitions > 0:
            lab.admin.topics.create_partitioned_topic(TOPIC, row.partitions)
        key_shared = row.subscription_type == "Key_Shared"
        self.producer = self.client.create_producer(
            TOPIC,
            batching_enabled=row.batching,
            batching_max_messages=row.batching_max_messages,
            batching_type=BatchingType.KeyBased if key_shared else BatchingType.Default,
            chunking_enabled=row.chunked_fraction > 0,
        )
        self.chunked_bytes = int(lab.config["maxMessageSize"] * CHUNKED_PAYLOAD_FACTOR)
        self.consumers: list = []
        self.names = 0
        for _ in range(row.consumers):
            self._subscribe()
        self.quota = None if row.consume_rate_per_s is None else row.consume_rate_per_s * row.tick_ms / 1000
        self.credit: dict[int, float] = {}
        self.sent = 0
        self.log = lab.events
        self.partition_names = (
            [f"persistent://public/default/{TOPIC}-partition-{i}" for i in range(row.partitions)]
            if row.partitions
            else [f"persistent://public/default/{TOPIC}"]
        )

    def _subscribe(self) -> None:
        row = self.row
        policy = ConsumerDeadLetterPolicy(row.max_redeliver_count) if row.max_redeliver_count else None
        self.names += 1
        self.consumers.append(
            self.client.subscribe(
                TOPIC,
                SUBSCRIPTION,
                consumer_type=_CONSUMER_TYPES[row.subscription_type],
                consumer_name=f"c{self.names}",
                receiver_queue_size=row.receiver_queue_size,
                negative_ack_redelivery_delay_ms=row.negative_ack_redelivery_delay_ms,
                unacked_messages_timeout_ms=row.unacked_messages_timeout_ms,
                dead_letter_policy=policy,
            )
        )

    def publish_due(self, now: int) -> None:
        row, rng, send = self.row, self.rng, self.producer.send_async
        due = min(row.messages, now * row.publish_rate_per_s // 1000 + 1)
        for i in range(self.sent, due):
            key = rng.randrange(row.keys)
            delay = rng.randrange(row.delayed_spread_ms + 1) if rng.random() < row.delayed_fraction else None
            chunked = rng.random() < row.chunked_fraction
            payload = i.to_bytes(4, "big") + b"x" * ((self.chunked_bytes if chunked else PAYLOAD_BYTES) - 4)
            send(
                payload,
                None,
                partition_key=f"k{key}",
                deliver_after=None if delay is None else timedelta(milliseconds=delay),
            )
        self.sent = max(self.sent, due)

    def consume(self) -> int:
        """Each consumer takes its quota; returns how many messages were taken."""
        row, rng, log, lab = self.row, self.rng, self.log, self.lab
        crash_below, nack_below = row.crash_rate, row.crash_rate + row.nack_rate
        taken = 0
        for consumer in list(self.consumers):
            if self.quota is None:
                budget = math.inf
            else:
                budget = self.credit.get(id(consumer), 0.0) + self.quota
            receive = consumer.receive
            while budget >= 1:
                try:
                    msg = receive(0)
                except Timeout:
                    break
                budget -= 1
                taken += 1
                data = msg.data()
                number = int.from_bytes(data[:4], "big")
                key = int(msg.partition_key()[1:])
                draw = rng.random()
                action = CRASH if draw < crash_below else NACK if draw < nack_below else ACK
                if self.nack_next:
                    self.nack_next -= 1
                    action = NACK
                if log.enabled:
                    log.append_row(APP_RECEIVED, lab.now(), consumer._id, number, key, msg.redelivery_count(), action)
                if action == ACK:
                    consumer.acknowledge(msg)
                elif action == NACK:
                    consumer.negative_acknowledge(msg)
                else:
                    consumer.crash()
                    self.consumers.remove(consumer)
                    self.credit.pop(id(consumer), None)
                    self._subscribe()
                    break
            else:
                if self.quota is not None:
                    self.credit[id(consumer)] = min(budget, self.quota)
                continue
            if self.quota is not None and consumer in self.consumers:
                self.credit[id(consumer)] = 0.0
        return taken

    def churn(self) -> None:
        self.leave(self.consumers[0])
        self._subscribe()

    def leave(self, consumer: Any) -> None:
        """``consumer`` closes (acks flushed) and the application stops using it."""
        self.consumers.remove(consumer)
        self.credit.pop(id(consumer), None)
        consumer.close()

    def join(self) -> None:
        """A new consumer ``c<n>`` subscribes."""
        self._subscribe()

    def backlog(self) -> int:
        topics = self.lab.service.topics
        total = 0
        for name in self.partition_names:
            topic = topics.get(name)
            sub = topic.subscriptions.get(SUBSCRIPTION) if topic is not None else None
            if sub is not None:
                total += sub.cursor.number_of_entries_in_backlog()
        return total

    def run(self, before_tick: Callable[["Driver"], Any] | None = None) -> RunResult:
        row, lab = self.row, self.lab
        limit = row.run_limit_ms()
        churn_every = row.consumer_churn_every_ms
        next_churn = churn_every if churn_every else None
        settled = False
        while True:
            if before_tick is not None:
                before_tick(self)
            now = lab.now()
            if self.sent < row.messages:
                self.publish_due(now)
            taken = self.consume()
            if next_churn is not None and now >= next_churn:
                self.churn()
                next_churn += churn_every
            if self.sent >= row.messages and taken == 0 and self.backlog() == 0:
                settled = True
                break
            if now >= limit:
                break
            target = now + row.tick_ms
            if self.sent >= row.messages and taken == 0:
                nxt = lab.scheduler.next_deadline()
                jump = min(x for x in (nxt, next_churn, limit) if x is not None)
                target = max(target, jump)
            lab.run_until(min(target, max(limit, now + 1)))
        for consumer in self.consumers:
            consumer.close()
        self.producer.close()
        return RunResult(row, lab, self.sent, settled, lab.now())


def run_row(row: GridRow, record_events: bool = True) -> RunResult:
    """Run one grid row through the whole model (see the module docstring)."""
    return Driver(row, record_events).run()


__all__ = ["ACK", "ACTIONS", "CRASH", "Driver", "NACK", "RunResult", "run_row"]
