"""The cursor's events: the mark-delete position moving, entries deleted individually or by batch index, a reset.

Models no Pulsar class; appended by `pulsarlab.managed_ledger.cursor.ManagedCursor` (`ManagedCursorImpl`).
"""

from __future__ import annotations

from pulsarlab.events import event_type

MARK_DELETE_MOVED = event_type(
    "mark_delete_moved",
    "cursor:str from_ledger:int from_entry:int to_ledger:int to_entry:int why:str",
    "{cursor}: mark-delete position {from_ledger}:{from_entry} -> {to_ledger}:{to_entry} ({why})",
    rule="every entry up to the mark-delete position is acknowledged; it never moves back",
)
INDIVIDUALLY_DELETED = event_type(
    "individually_deleted",
    "cursor:str ledger:int entry:int",
    "{cursor}: {ledger}:{entry} acknowledged ahead of an unacknowledged entry; it waits in individuallyDeletedMessages",
    rule="asyncDelete adds (previousPosition, position] to the range set; the mark-delete position "
    "moves only over a contiguous run",
)
BATCH_INDEX_DELETED = event_type(
    "batch_index_deleted",
    "cursor:str ledger:int entry:int unacked:int",
    "{cursor}: batch entry {ledger}:{entry} partly acknowledged, {unacked} message(s) still unacked",
    rule="with acknowledgmentAtBatchIndexLevelEnabled the ack sets are ANDed in batchDeletedIndexes "
    "(set bit = not yet acked); the entry is deleted when no bit is left",
)
CURSOR_RESET = event_type(
    "cursor_reset",
    "cursor:str ledger:int entry:int read_ledger:int read_entry:int",
    "{cursor}: reset - mark-delete position {ledger}:{entry}, reading again from {read_ledger}:{read_entry}; "
    "every acknowledgement after it is forgotten",
    rule="resetCursor (a consumer's seek, or pulsar-admin reset-cursor) moves the mark-delete position to the "
    "entry before the new read position and clears the individually deleted ranges",
)
