"""Bookie storage: the entries that left the broker's entry cache, on disk, read back on demand.

Models what BookKeeper's bookies are to a Pulsar broker (`LedgerHandle.asyncReadEntries` on a cache miss,
`BookKeeper.asyncDeleteLedger` when a ledger is trimmed; docs/guide/retention.md#entry-cache): a temporary folder
per storage (one per `pulsarlab serve` process), an append-only file per ledger and, per ledger, an in-memory index
of where each stored entry ends (one 8-byte int per entry in an ``array``). An entry is one ``marshal`` record of
its plain-value form (`pulsarlab.messages.entry_record`). The folder is removed by `close` and, failing that, when
the process exits.

Simplifies: an entry is written when it leaves the cache, not when it is added (a bookie has every entry at once;
here the ones in the cache are not on disk yet, which no reader can tell apart); one copy, no journal, no fsync.
"""

from __future__ import annotations

import marshal
import os
import shutil
import tempfile
import weakref
from array import array
from pathlib import Path
from typing import Any

from pulsarlab.messages import entry_from_record, entry_record

_dumps = marshal.dumps
_loads = marshal.loads


class BookieStorage:
    """The disk side of a broker's managed ledgers: one append-only file per ledger in a temporary folder."""

    def __init__(self, parent: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="pulsarlab-bookie-", dir=parent))
        self._ends: dict[int, array[int]] = {}  # per ledger, the file offset where each stored entry ends
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(self.path), True)

    def _file(self, ledger_id: int) -> str:
        return os.path.join(self.path, f"{ledger_id}.ledger")

    def stored(self, ledger_id: int) -> int:
        """How many entries of ``ledger_id`` are on disk (its entries 0 .. n-1)."""
        ends = self._ends.get(ledger_id)
        return 0 if ends is None else len(ends)

    def append(self, ledger_id: int, entries: list[Any]) -> None:
        """Write the next entries of ``ledger_id`` (in `EntryData.stored` form, entry-id order) at its file's end."""
        if self.closed:
            raise ValueError(f"bookie storage {self.path} is closed")
        records = [_dumps(entry_record(stored)) for stored in entries]
        ends = self._ends.get(ledger_id)
        if ends is None:
            ends = self._ends[ledger_id] = array("q")
        offset = ends[-1] if ends else 0
        for record in records:
            offset += len(record)
            ends.append(offset)
        with open(self._file(ledger_id), "ab") as f:
            f.write(b"".join(records))

    def read(self, ledger_id: int, first: int, end: int) -> list[Any]:
        """Entries ``first .. end-1`` of ``ledger_id`` in `EntryData.stored` form (0 <= first < end <= stored)."""
        ends = self._ends[ledger_id]
        if not 0 <= first < end <= len(ends):
            raise IndexError(f"entries {first}..{end - 1} of ledger {ledger_id}: {len(ends)} are stored")
        start = ends[first - 1] if first else 0
        fd = os.open(self._file(ledger_id), os.O_RDONLY)
        try:
            data = os.pread(fd, ends[end - 1] - start, start)
        finally:
            os.close(fd)
        view = memoryview(data)
        out = []
        at = 0
        for i in range(first, end):
            stop = ends[i] - start
            out.append(entry_from_record(_loads(view[at:stop])))
            at = stop
        return out

    def delete(self, ledger_id: int) -> None:
        """`asyncDeleteLedger`: the ledger's file and index go (a trimmed ledger); nothing when none was written."""
        if self._ends.pop(ledger_id, None) is not None:
            os.remove(self._file(ledger_id))

    @property
    def ledgers(self) -> list[int]:
        """The ledgers with entries on disk, ascending."""
        return sorted(self._ends)

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Remove the folder and everything in it (the broker process is going away)."""
        self._ends.clear()
        self._finalizer()

    def __repr__(self) -> str:
        return f"BookieStorage({str(self.path)!r}, ledgers={self.ledgers})"
