"""The managed ledger's events: an entry written, a ledger rolled over.

Models no Pulsar class; appended by `pulsarlab.managed_ledger.ledger.ManagedLedger` (`ManagedLedgerImpl`).
The cursor's events are in `pulsarlab.event_catalogue.cursor`.
"""

from __future__ import annotations

from pulsarlab.events import event_type

ENTRY_WRITTEN = event_type(
    "entry_written",
    "topic:str ledger:int entry:int messages:int size:int",
    "{topic}: entry {ledger}:{entry} written ({messages} message(s), {size} bytes)",
    rule="ManagedLedgerImpl.addEntry appends to the current ledger; the entry id counts from 0 in each ledger",
)
LEDGER_ROLLED = event_type(
    "ledger_rolled",
    "topic:str closed:int entries:int opened:int why:str",
    "{topic}: ledger {closed} closed with {entries} entries, new ledger {opened} opened ({why})",
    rule="a full ledger is closed and a new one created; positions continue at entry 0 of the new ledger",
)
