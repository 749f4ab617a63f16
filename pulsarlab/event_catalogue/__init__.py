"""The catalogue of event types: every kind of event the lab logs is declared in one module of this package.

Models no Pulsar class. Each module declares the kinds of one area with `pulsarlab.events.event_type` (name,
typed fields, explanation template, the Pulsar rule it cites) and the code that appends them imports the
constants from there. ``pulsarlab events`` (`catalogue`) lists them all.

An event's type code (stored in the log, hashed by `EventLog.digest`) is its declaration order, so the areas are
imported here, and only here, in a fixed order: the order the log has always numbered its kinds in, which keeps
event-log digests of earlier runs valid. A new area goes at the end.
"""

from __future__ import annotations

from types import ModuleType

from pulsarlab.events import EventType

# isort: off
from pulsarlab.event_catalogue import chunking  # the producer's chunks
from pulsarlab.event_catalogue import broker  # a message's path through broker and client
from pulsarlab.event_catalogue import ack_grouping  # the client's grouped acks
from pulsarlab.event_catalogue import redelivery  # ack timeout, negative acks, redelivery counts, DLQ and retry
from pulsarlab.event_catalogue import managed_ledger  # entries written, ledgers rolled
from pulsarlab.event_catalogue import delayed_buckets  # the bucket delayed-delivery tracker
from pulsarlab.event_catalogue import restart  # a graceful broker restart
from pulsarlab.event_catalogue import chunk_assignment  # the Shared dispatcher's chunk assignor
from pulsarlab.event_catalogue import delayed  # the dispatcher's delayed delivery
from pulsarlab.event_catalogue import chunk_reassembly  # the consumer's chunk reassembly
from pulsarlab.event_catalogue import cursor  # the managed cursor
from pulsarlab.event_catalogue import key_shared_scenario  # a KeySharedScenario's selector changes
from pulsarlab.event_catalogue import scenario_run  # a scenario run's application log
from pulsarlab.event_catalogue import retention  # consumed ledgers trimmed
from pulsarlab.event_catalogue import watch  # a watch's polls of a real cluster's admin REST API
# isort: on

AREAS: tuple[ModuleType, ...] = (
    chunking,
    broker,
    ack_grouping,
    redelivery,
    managed_ledger,
    delayed_buckets,
    restart,
    chunk_assignment,
    delayed,
    chunk_reassembly,
    cursor,
    key_shared_scenario,
    scenario_run,
    retention,
    watch,
)


def catalogue() -> list[tuple[str, EventType]]:
    """Every declared kind with its area (the catalogue module's name), in type-code order."""
    found = []
    for module in AREAS:
        area = module.__name__.rsplit(".", 1)[-1]
        found.extend((area, value) for value in vars(module).values() if isinstance(value, EventType))
    return sorted(found, key=lambda item: item[1].code)


__all__ = ["AREAS", "catalogue"]
