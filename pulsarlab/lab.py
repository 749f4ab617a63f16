"""The lab: one broker, its clients, one virtual clock and one event log.

Models no single Pulsar class; it is the learner's entry point (docs/architecture.md):

    lab = pl.Lab(version="4.0", seed=1, broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    client = lab.client()
    ...
    lab.advance(100); lab.run_until_idle(); lab.now()
    lab.admin.topics.stats("orders"); lab.events.to_pandas()
    lab.restart_broker()    # graceful restart: in-memory broker state lost, stored state kept, clients reconnect

``version`` picks the profile (`profiles.get_profile`); ``broker_config`` overrides broker.conf settings by their
Pulsar names (unknown names are rejected). ``seed`` fixes every random choice (routing start cursors,
generated consumer names), so the same scenario and seed give the same event log (``lab.events.digest()``).
``record_events=False`` keeps the log empty for bulk runs.

Retention: a lab keeps every ledger unless ``broker_config`` sets ``defaultRetentionTimeInMinutes`` /
``defaultRetentionSizeInMB`` (`LAB_RETENTION`: -1/-1, so the views can show what was consumed), or a namespace sets
a retention policy (``lab.admin.namespaces.set_retention``). Pulsar's broker defaults are 0/0 (a consumed ledger is
deleted), which ``pulsarlab serve`` uses; ``broker_config={"defaultRetentionTimeInMinutes": 0,
"defaultRetentionSizeInMB": 0}`` gives them here (docs/guide/retention.md).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable

import mmh3

from pulsarlab.broker.restart import RestartReport
from pulsarlab.broker.service import BrokerService
from pulsarlab.client.library import ClientLibrary
from pulsarlab.clock import Scheduler
from pulsarlab.errors import Timeout
from pulsarlab.event_catalogue.restart import CONSUMER_RECONNECTING, PRODUCER_RECONNECTING, RECONNECT_FAILED
from pulsarlab.events import EventLog
from pulsarlab.profiles import BROKER_DEFAULTS, Profile, get_profile

# the lab's retention unless broker_config says otherwise: keep every ledger (Pulsar's defaults are 0/0)
LAB_RETENTION = {"defaultRetentionTimeInMinutes": -1, "defaultRetentionSizeInMB": -1}
# Pulsar's broker defaults, which `pulsarlab serve` runs with: a ledger goes once every durable cursor consumed it
PULSAR_RETENTION = {key: BROKER_DEFAULTS[key] for key in LAB_RETENTION}
# what `pulsarlab serve` runs with: Pulsar's retention, and entries in bookie storage on disk behind a bounded entry
# cache (pulsarlab.managed_ledger.entry_cache), so a long run stays in flat memory
SERVE_BROKER_CONFIG = {**PULSAR_RETENTION, "lab_entryStorage": "disk"}

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.admin import Admin
    from pulsarlab.client.client import Client


class Lab:
    """A deterministic Pulsar broker and its clients on a virtual clock."""

    def __init__(
        self,
        version: str | Profile | None = None,
        seed: int = 0,
        broker_config: dict[str, Any] | None = None,
        record_events: bool = True,
        start_ms: int = 0,
    ) -> None:
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, not {type(seed).__name__}")
        self.profile = get_profile(version)
        self.config = self.profile.broker_config({**LAB_RETENTION, **(broker_config or {})})
        self.seed = seed
        self.scheduler = Scheduler(start_ms)
        self.events = EventLog(enabled=record_events)
        self.service = BrokerService(self)
        self._clients: list[Client] = []

    @cached_property
    def admin(self) -> Admin:
        """``pulsar-admin`` on this lab's broker (`pulsarlab.admin.Admin`), made when first used."""
        from pulsarlab.admin import Admin  # with the broker's admin resources: not loaded by `serve` until asked

        return Admin(self)

    @property
    def version(self) -> str:
        return self.profile.name

    def client(self, *, client_library: ClientLibrary = ClientLibrary.CPP) -> Client:
        """A ``pulsar.Client`` connected to this lab's broker."""
        from pulsarlab.client.client import Client  # the client side loads when first used (not by `serve`)

        client = Client(self, client_library=client_library)
        self._clients.append(client)
        return client

    # --- broker restart --------------------------------------------------------------------------
    def restart_broker(self) -> RestartReport:
        """Restart the broker gracefully, at the current virtual time, and reconnect this lab's clients.

        What only the broker's memory held is lost (dispatchers, replay sets, redelivery counts, broker-side
        consumers and their pending acks, in-memory delayed trackers, a bucket tracker's mutable bucket and shared
        queue); what is stored stays (ledgers, cursor positions, acknowledged ranges and properties, bucket
        snapshots) and the topics reopen on a new ledger (`pulsarlab.broker.restart`). The restart is graceful:
        closing flushes each cursor, so every acknowledgement the broker applied survives (ranges beyond
        ``managedLedgerMaxUnackedRangesToPersist`` + 1 excepted); a crash losing unflushed cursor state is not
        modelled. Then every open producer
        registers again and every open consumer clears its receiver queue, subscribes again and sends FLOW; the
        broker redelivers unacknowledged messages from the cursor. Returns what each subscription lost.
        """
        report = self.service.restart()
        events = self.events
        for client in self._clients:
            for producer in client._producers:
                if events.enabled and producer.is_connected():
                    events.append(PRODUCER_RECONNECTING, self.now(), producer=producer._id)
            client._reconnect(self._consumer_reconnecting, self._reconnect_failed)
        return report

    def _consumer_reconnecting(self, consumer: Any) -> None:
        if self.events.enabled:
            pending = sum(len(consumer.ack_tracker(p).pending_individual_acks) for p in consumer._impls)
            self.events.append(
                CONSUMER_RECONNECTING,
                self.now(),
                consumer=consumer._id,
                queued=len(consumer.receiver_queue),
                pending_acks=pending,
            )

    def _reconnect_failed(self, consumer: Any, error: Exception) -> None:
        for impl in consumer._impls.values():
            impl.connected = False
        if self.events.enabled:
            self.events.append(
                RECONNECT_FAILED,
                self.now(),
                consumer=consumer._id,
                error=f"{getattr(error, 'java_class', type(error).__name__)}: {error}",
            )

    # --- time ------------------------------------------------------------------------------------
    def now(self) -> int:
        """Virtual time in milliseconds."""
        return self.scheduler.now()

    def advance(self, ms: int) -> int:
        """Move virtual time ``ms`` forward, firing every timer due on the way; returns how many fired."""
        return self.scheduler.advance(ms)

    def run_until(self, t: int) -> int:
        return self.scheduler.run_until(t)

    def run_until_idle(self, limit_ms: int | None = None) -> int:
        """Fire timers until none is left (ack flushes, batch timers, failover delays, ...)."""
        return self.scheduler.run_until_idle(limit_ms)

    def wait_for(
        self, predicate: Callable[[], bool], deadline: int | None, *, what: str = "it", raise_on_idle: bool = True
    ) -> bool:
        """Run timers in order until ``predicate()`` holds, the clock would pass ``deadline``, or nothing is left.

        This is how blocking calls (``producer.send`` with batching, ``consumer.receive(timeout)``) spend
        virtual time. Returns whether the predicate holds; with ``raise_on_idle`` and no deadline an idle
        scheduler raises `Timeout` (the real call would block forever).
        """
        sched = self.scheduler
        while not predicate():
            nxt = sched.next_deadline()
            if nxt is None or (deadline is not None and nxt > deadline):
                if deadline is not None and deadline > sched.now():
                    sched.run_until(deadline)
                if not predicate() and deadline is None and raise_on_idle:
                    raise Timeout(f"Pulsar error: TimeOut (waiting for {what}, nothing left that could make it happen)")
                return predicate()
            sched.run_until(nxt)
        return True

    def derive_seed(self, *parts: Any) -> int:
        """A deterministic sub-seed for one component (the same on every machine)."""
        text = "/".join(str(p) for p in (self.seed, *parts))
        return mmh3.hash(text, 0, signed=False)

    def __repr__(self) -> str:
        return (
            f"<Lab version={self.profile.name} t={self.now()}ms topics={len(self.service.topics)} "
            f"events={len(self.events)}>"
        )
