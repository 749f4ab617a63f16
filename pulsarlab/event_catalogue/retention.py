"""The retention events: consumed ledgers deleted.

Models no Pulsar class; appended by `pulsarlab.managed_ledger.ledger.ManagedLedger` when `ManagedLedgerImpl`'s
trim (`internalTrimLedgers`) deletes ledgers.
"""

from __future__ import annotations

from pulsarlab.events import event_type

LEDGERS_TRIMMED = event_type(
    "ledgers_trimmed",
    "topic:str first:int last:int ledgers:int entries:int size:int",
    "{topic}: {ledgers} consumed ledger(s) {first}..{last} deleted ({entries} entries, {size} bytes)",
    rule="ManagedLedgerImpl.internalTrimLedgers deletes the ledgers before the slowest durable cursor's ledger once "
    "the retention policy no longer keeps them (a limit of 0 keeps nothing, -1 keeps everything; "
    "docs/guide/retention.md#trimming)",
)
