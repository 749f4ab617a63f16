"""The managed ledger: a topic's append-only log of entries, split into ledgers that roll over.

Models `org.apache.bookkeeper.mledger.impl.ManagedLedgerImpl` (docs/guide/cursor.md#mark-delete, `TopicStatsImpl` /
`PersistentTopicInternalStats`): entries are
appended to the current ledger; after ``managedLedgerMaxEntriesPerLedger`` entries (or
``managedLedgerMaxSizePerLedgerMbytes``, or ``managedLedgerMaxLedgerRolloverTimeMinutes`` since it was
created, checked on add, never before ``managedLedgerMinLedgerRolloverTimeMinutes``) the ledger is closed
and a new, empty one is created at once. ``lastConfirmedEntry`` then stays on the closed ledger's last
entry (Pulsar's "bypass empty ledgers" rule), and only an empty topic shows ``"L:-1"``. Position
arithmetic (`getNextValidPosition`, `getPreviousPosition`, `isValidPosition`, `getNumberOfEntries`)
follows the Java code, quirks included: the next valid position after a closed ledger's last entry
is that ledger's ``E+1`` while it is the last confirmed one, and the first entry of the next ledger after.

Ledger ids come from one lab-wide `LedgerIdAllocator` (BookKeeper ids are global), starting at
``FIRST_LEDGER_ID``; cursor ledgers take no ids in the model.

Consumed ledgers are trimmed as `internalTrimLedgers` does (`pulsarlab.managed_ledger.retention` picks them): the
ledgers before the slowest durable cursor's ledger go once the retention policy (``defaultRetentionTimeInMinutes``
/ ``defaultRetentionSizeInMB``, or the namespace's, see `set_retention`) no longer keeps them; their entries are
dropped from memory, ``numberOfEntries`` and ``totalSize`` fall, ``entriesAddedCounter`` stays. A trim runs when
Pulsar's does: after a rollover (`maybeUpdateCursorBeforeTrimmingConsumedLedger` once the new ledger exists), when
the slowest durable cursor's mark-delete position moves to another ledger (`onCursorMarkDeletePositionUpdated`),
when a cursor is deleted, and at the broker's periodic check (`BrokerService.checkConsumedLedgers`, every
``retentionCheckIntervalInSeconds`` on the clock's grid), which the model runs only when a ledger is waiting for its
time limit (a one-shot timer, not a timer that re-arms forever). Non-durable cursors (readers) hold nothing back
and are moved past deleted ledgers (`advanceCursorsIfNecessary`).

Entries live in memory unless the broker has bookie storage (``lab_entryStorage`` "disk", as `pulsarlab serve`
runs): then the blocks of entries every cursor has read, or beyond ``managedLedgerCacheSizeMB``, leave memory for
the ledger's file and are read back from it (`EntryCacheManager`, `BookieStorage`; docs/guide/retention.md#entry-cache),
and a deleted ledger's file goes with it.

Simplifies: no BookKeeper (writes complete synchronously, no pending adds, no failures), no offload, no periodic
time-based rollover task (the periodic check's `rollCurrentLedgerIfFull` included).
``LedgerInfo.entries``/``size`` hold the true counts for every ledger; stats-internal prints 0 for the
open ledger as Pulsar's ledger metadata does. ``managedLedgerMinLedgerRolloverTimeMinutes`` defaults to
0 here (Pulsar's broker default is 10) unless the config sets it, so small labs roll at once, as
Pulsar's own ManagedCursorTest does. Entries are kept as plain tuples (`EntryData.stored`) and every read
returns new, equal `EntryData` objects, so the many stored entries stay out of the garbage collector's walks.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from pulsarlab.clock import Scheduler
from pulsarlab.date_format import format_timestamp
from pulsarlab.event_catalogue.managed_ledger import ENTRY_WRITTEN, LEDGER_ROLLED
from pulsarlab.event_catalogue.retention import LEDGERS_TRIMMED
from pulsarlab.events import UNDECLARED, EventLog
from pulsarlab.managed_ledger.bookie_storage import BookieStorage
from pulsarlab.managed_ledger.cursor import ManagedCursor
from pulsarlab.managed_ledger.entry_cache import EntryCacheManager
from pulsarlab.managed_ledger.exceptions import (
    CursorNotFoundException,
    LedgerNotExistException,
    ManagedLedgerException,
    NonRecoverableLedgerException,
)
from pulsarlab.managed_ledger.position import Position, make_position
from pulsarlab.managed_ledger.retention import RetentionPolicies, TrimCandidate, ledgers_to_delete, next_check_at
from pulsarlab.messages import EntryData
from pulsarlab.profiles import BrokerConfig

FIRST_LEDGER_ID = 3  # the first ledger id the lab hands out (a fresh standalone's first topic ledger is similar)

_MB = 1024 * 1024
_MINUTE_MS = 60_000


# ---------------------------------------------------------------------------------------------
# Events (declared once; emitted only while the log is enabled)


ROLLED_FULL = "managedLedgerMaxEntriesPerLedger reached"
ROLLED_SIZE = "managedLedgerMaxSizePerLedgerMbytes reached"
ROLLED_TIME = "managedLedgerMaxLedgerRolloverTimeMinutes passed"
ROLLED_RESTART = "topic reloaded: the old ledger is closed and a new one opened"


class LedgerIdAllocator:
    """Hands out ledger ids for the whole lab, in order, starting at ``first_id`` (BookKeeper's ids are global)."""

    def __init__(self, first_id: int = FIRST_LEDGER_ID) -> None:
        if type(first_id) is not int or first_id < 0:
            raise ValueError(f"the first ledger id must be a non-negative int, got {first_id!r}")
        self._next = first_id

    def next(self) -> int:
        """The next unused ledger id."""
        value = self._next
        self._next += 1
        return value


@dataclass
class LedgerInfo:
    """One ledger of a managed ledger (`MLDataFormats.ManagedLedgerInfo.LedgerInfo`): id, entries, bytes, and
    ``timestamp``, when it was closed (0 while open), which the retention time limit counts from."""

    ledger_id: int
    entries: int = 0
    size: int = 0
    timestamp: int = 0


def _config_int(config: BrokerConfig, key: str, minimum: int) -> int:
    value = config[key]
    if type(value) is not int or value < minimum:
        raise ValueError(f"broker setting {key} must be an integer >= {minimum}, got {value!r}")
    return value


_from_stored = EntryData.from_stored
StoredEntry = tuple[Any, ...]  # an entry in `EntryData.stored` form
_BLOCK = 1024  # stored entries per block
_CACHE_BLOCK = 128  # with bookie storage: entries per block, the unit that leaves the entry cache


class _StoredEntries:
    """One ledger's entries in `EntryData.stored` form: full blocks of _BLOCK entries as tuples, the rest in a list.

    A block is a tuple of untracked tuples, which the cyclic garbage collector stops tracking: a full collection
    then walks a few blocks instead of every entry of the ledger (one list of entries costs it a memory access per
    entry, on each full collection). With bookie storage, blocks are _CACHE_BLOCK entries and the first ``evicted``
    entries (whole blocks) left memory for the ledger's file and are read from there."""

    __slots__ = ("blocks", "tail", "count", "size", "first_block", "evicted", "block_bytes", "bookie", "ledger_id")

    def __init__(self, bookie: BookieStorage | None = None, ledger_id: int = -1) -> None:
        self.blocks: list[tuple[StoredEntry, ...]] = []
        self.tail: list[StoredEntry] = []
        self.count = 0  # len(): read as an attribute on the per-entry paths (no call)
        self.size = _BLOCK if bookie is None else _CACHE_BLOCK  # entries per block
        self.first_block = 0  # the block blocks[0] is (the ones before it are in bookie storage)
        self.evicted = 0  # entries in bookie storage: first_block * size
        self.block_bytes: list[int] = []  # with bookie storage: the bytes of each cached block
        self.bookie = bookie
        self.ledger_id = ledger_id

    def append(self, stored: StoredEntry) -> None:
        tail = self.tail
        tail.append(stored)
        self.count += 1
        if len(tail) == self.size:
            self.seal_tail()

    def seal_tail(self) -> None:
        """The tail is a full block: keep it as a tuple and start a new tail."""
        self.blocks.append(tuple(self.tail))
        self.tail = []

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> StoredEntry:
        """Entry ``i`` (0 <= i < len)."""
        b, r = divmod(i, self.size)
        b -= self.first_block
        blocks = self.blocks
        if b < 0:
            return self._bookie().read(self.ledger_id, i, i + 1)[0]  # type: ignore[no-any-return]
        return blocks[b][r] if b < len(blocks) else self.tail[r]

    def _bookie(self) -> BookieStorage:
        """The bookie storage the evicted entries are in (only a ledger with bookie storage evicts)."""
        bookie = self.bookie
        if bookie is None:
            raise RuntimeError(f"ledger {self.ledger_id} keeps its entries in memory: none was evicted")
        return bookie

    def run(self, first: int, end: int) -> list[StoredEntry]:
        """Entries ``first .. end-1`` (trusted bounds): the evicted ones in one read of the ledger's file."""
        evicted = self.evicted
        if first >= evicted:
            return [self[i] for i in range(first, end)]
        out = self._bookie().read(self.ledger_id, first, min(end, evicted))
        out.extend(self[i] for i in range(evicted, end))
        return out

    def evict(self, blocks: int) -> int:
        """Move the first ``blocks`` cached blocks to bookie storage; returns their bytes."""
        gone = self.blocks[:blocks]
        self._bookie().append(self.ledger_id, [stored for block in gone for stored in block])
        del self.blocks[:blocks]
        freed = sum(self.block_bytes[:blocks])
        del self.block_bytes[:blocks]
        self.first_block += len(gone)
        self.evicted = min(self.first_block * self.size, self.count)
        return freed


class _LedgerEntries(Sequence[EntryData]):
    """A read-only view of one ledger's stored entries, made into `EntryData` objects as they are read."""

    __slots__ = ("_stored",)

    def __init__(self, stored: _StoredEntries) -> None:
        self._stored = stored

    def __len__(self) -> int:
        return len(self._stored)

    @overload
    def __getitem__(self, i: int) -> EntryData: ...

    @overload
    def __getitem__(self, i: slice) -> list[EntryData]: ...

    def __getitem__(self, i: int | slice) -> EntryData | list[EntryData]:
        stored = self._stored
        if isinstance(i, slice):
            start, stop, step = i.indices(len(stored))
            if step == 1:
                return [_from_stored(s) for s in stored.run(start, stop)] if start < stop else []
            return [_from_stored(stored[j]) for j in range(start, stop, step)]
        n = len(stored)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("ledger entry index out of range")
        return _from_stored(stored[i])

    def __iter__(self) -> Iterator[EntryData]:
        stored = self._stored
        for start in range(0, len(stored), _BLOCK):
            yield from map(_from_stored, stored.run(start, min(start + _BLOCK, len(stored))))


def _stored_size(stored: Any) -> int:
    """The bytes of an entry in `EntryData.stored` form (its size is the tuple's last item, else an attribute)."""
    size: int = stored[-1] if type(stored) is tuple else stored.size
    return size


class ManagedLedger:
    """One topic's managed ledger and its cursors (one per subscription).

    ``config`` is the broker configuration (`Profile.broker_config()`); ``scheduler`` gives the
    virtual time for timestamps and events. Public attributes mirror `ManagedLedgerImpl`'s getters.
    """

    def __init__(
        self,
        name: str,
        scheduler: Scheduler,
        config: BrokerConfig,
        ledger_ids: LedgerIdAllocator,
        events: EventLog | None = None,
        cache: EntryCacheManager | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a managed ledger needs a non-empty name, got {name!r}")
        self.name = name
        self.scheduler = scheduler
        self.config = config
        self.events = events
        self._name_sid: int | None = None  # the event log's id of ``name``
        self._ledger_ids = ledger_ids
        self._cache = cache  # with bookie storage: the broker's entry cache manager (else every entry in memory)
        self._bookie = cache.storage if cache is not None else None
        self.cached_bytes = 0  # with bookie storage: the bytes of this managed ledger's cached blocks
        self.max_entries_per_ledger = _config_int(config, "managedLedgerMaxEntriesPerLedger", 1)
        self._max_ledger_bytes = _config_int(config, "managedLedgerMaxSizePerLedgerMbytes", 1) * _MB
        self._min_rollover_ms = _config_int(config, "managedLedgerMinLedgerRolloverTimeMinutes", 0) * _MINUTE_MS
        self._max_rollover_ms = _config_int(config, "managedLedgerMaxLedgerRolloverTimeMinutes", 0) * _MINUTE_MS
        self.retention = RetentionPolicies(
            _config_int(config, "defaultRetentionTimeInMinutes", -1),
            _config_int(config, "defaultRetentionSizeInMB", -1),
        )
        self.retention.validate()
        self._check_interval_ms = _config_int(config, "retentionCheckIntervalInSeconds", 0) * 1000
        self._check_timer: Any = None  # the periodic check's next run, while a ledger waits for its time limit
        self._durable: set[str] = set()  # names of the durable cursors (the others are readers')
        self._holds: dict[str, Position] = {}  # durable positions kept without a cursor object (see hold)

        self.ledgers: list[LedgerInfo] = []
        self._ids: list[int] = []  # ledger ids, ascending (the ledgers map's key order)
        self._info: dict[int, LedgerInfo] = {}
        # per ledger, its entries in `EntryData.stored` form (untracked by the cyclic garbage collector); reads
        # make `EntryData` objects from them
        self._entries: dict[int, _StoredEntries] = {}
        # (Position, EntryData) of the last entry written: a dispatcher waiting at the end of the topic reads it at
        # once, and gets these objects instead of new ones made from the stored form
        self._last_written: tuple[Position, EntryData] | None = None
        self.cursors: dict[str, ManagedCursor] = {}

        self.entries_added_counter = 0
        self._stored_entries = 0  # getNumberOfEntries(): every entry the ledgers hold
        self.total_size = 0
        self.current_ledger_entries = 0
        self.current_ledger_size = 0
        self.last_ledger_created_timestamp = 0
        self.state = "LedgerOpened"
        self.last_confirmed_entry = Position(-1, -1)
        self._open_new_ledger()

    # ------------------------------------------------------------------ writing

    def add_entry(self, data: EntryData, size: int | None = None) -> Position:
        """`addEntry`: append one entry to the current ledger; roll the ledger over when it is full.

        ``size`` is ``data.size`` when the caller already computed it."""
        lid = self._current_id
        info = self._current_info
        pos = self.position_of(lid, info.entries)  # the current ledger's entry count is its next entry id
        stored_entries = self._current_entries  # _StoredEntries.append, inlined (once per published entry)
        tail = stored_entries.tail
        tail.append(data.stored())
        stored_entries.count += 1
        if len(tail) == stored_entries.size:
            stored_entries.seal_tail()
            if self._cache is not None:
                self._cache_block(stored_entries)
        self._last_written = (pos, data)
        if size is None:
            size = data.size
        info.entries += 1
        self._next_position = make_position(lid, info.entries)
        info.size += size
        self.current_ledger_entries += 1
        self.current_ledger_size += size
        self.entries_added_counter += 1
        self._stored_entries += 1
        self.total_size += size
        self.last_confirmed_entry = pos
        log = self.events
        if log is not None and log.enabled:
            name_sid = self._name_sid
            if name_sid is None:  # interned at first use, as `append` would
                name_sid = self._name_sid = log.intern(self.name)
            n = data.metadata.num_messages_in_batch
            log.append_row(
                ENTRY_WRITTEN,
                self.scheduler.now_ms,
                name_sid,
                lid,
                pos.entry_id,
                1 if n is None else n,
                size,
                UNDECLARED,
            )
        # currentLedgerIsFull(), asked only when a limit may be reached (the common write reaches none)
        if (
            self.current_ledger_entries >= self.max_entries_per_ledger
            or self.current_ledger_size >= self._max_ledger_bytes
            or self.scheduler.now_ms - self.last_ledger_created_timestamp >= self._max_rollover_ms
        ):
            why = self._current_ledger_full()
            if why is not None:
                self._roll(why)
                self.trim_consumed_ledgers()
        return pos

    def _current_ledger_full(self) -> str | None:
        """`currentLedgerIsFull()`: why the current ledger must close after this write, or None."""
        if self.current_ledger_entries >= self.max_entries_per_ledger:
            why = ROLLED_FULL
        elif self.current_ledger_size >= self._max_ledger_bytes:
            why = ROLLED_SIZE
        else:
            age = self.scheduler.now_ms - self.last_ledger_created_timestamp
            if age < self._max_rollover_ms:
                return None
            why = ROLLED_TIME
        if self._min_rollover_ms > 0 and not (
            self.scheduler.now_ms - self.last_ledger_created_timestamp > self._min_rollover_ms
        ):
            return None
        return why

    def _open_new_ledger(self) -> None:
        """`createComplete` / `initializeBookKeeper`: a new ledger; the last confirmed entry bypasses empty ledgers."""
        lid = self._ledger_ids.next()
        if self._ids and lid <= self._ids[-1]:
            raise ValueError(f"ledger id {lid} is not above the last ledger {self._ids[-1]} of {self.name}")
        info = LedgerInfo(lid)
        self.ledgers.append(info)
        self._ids.append(lid)
        self._info[lid] = info
        self._current_id = lid
        self._current_info = info
        self._current_entries = self._entries[lid] = _StoredEntries(self._bookie, lid)
        self._next_position = make_position(lid, 0)
        self.current_ledger_entries = 0
        self.current_ledger_size = 0
        self.last_ledger_created_timestamp = self.scheduler.now_ms
        lce = Position(lid, -1)
        for older in reversed(self._ids[:-1]):
            entries = self._info[older].entries
            lce = Position(older, entries - 1)
            if entries > 0:
                break
        self.last_confirmed_entry = lce

    def _roll(self, why: str) -> None:
        closed = self._current_id
        entries = self._current_info.entries
        self._current_info.timestamp = self.scheduler.now_ms
        if entries == 0:  # an empty ledger is deleted on close
            self._drop_ledger(closed)
        elif self._cache is not None and self._current_entries.tail:
            self._current_entries.seal_tail()  # the closed ledger's last, partial block can leave the cache too
            self._cache_block(self._current_entries)
        self._open_new_ledger()
        log = self.events
        if log is not None and log.enabled:
            log.append(
                LEDGER_ROLLED,
                self.scheduler.now_ms,
                topic=self.name,
                closed=closed,
                entries=entries,
                opened=self._current_id,
                why=why,
            )

    def _drop_ledger(self, lid: int) -> None:
        i = self._ids.index(lid)
        del self._ids[i], self.ledgers[i]
        del self._info[lid]
        stored = self._entries.pop(lid)
        if self._cache is not None:
            freed = sum(stored.block_bytes)
            self.cached_bytes -= freed
            self._cache.shrank(self, freed)
            self._bookie.delete(lid)  # type: ignore[union-attr]

    # ------------------------------------------------------------------ entry cache (with bookie storage)

    def _cache_block(self, stored: _StoredEntries) -> None:
        """A block of ``stored`` was sealed: count it in the cache, then `doCacheEviction`'s
        `invalidateReadEntriesUntil` the slowest reader (the size bound may evict more, see `EntryCacheManager`)."""
        nbytes = sum(map(_stored_size, stored.blocks[-1]))
        stored.block_bytes.append(nbytes)
        self.cached_bytes += nbytes
        self._evict_read()
        self._cache.grew(self, nbytes)  # type: ignore[union-attr]

    def _evict_read(self) -> None:
        """Evict the cached blocks every cursor has read past (all of them when no cursor reads this topic)."""
        cursors = self.cursors
        if cursors:
            slowest = min((c.read_position.ledger_id, c.read_position.entry_id) for c in cursors.values())
        else:
            slowest = (self._current_id + 1, 0)
        freed = 0
        for lid in self._ids:
            if lid > slowest[0]:
                break
            stored = self._entries[lid]
            n = len(stored.block_bytes)
            if lid == slowest[0]:
                n = min(n, slowest[1] // stored.size - stored.first_block)
            if n > 0:
                freed += stored.evict(n)
        if freed:
            self.cached_bytes -= freed
            self._cache.shrank(self, freed)  # type: ignore[union-attr]

    def evict_cached(self, nbytes: int) -> int:
        """`RangeEntryCacheImpl.evictEntries`: evict at least ``nbytes`` (or all) of the cached blocks, oldest first;
        returns the bytes freed."""
        freed = 0
        for lid in self._ids:
            stored = self._entries[lid]
            while stored.block_bytes and freed < nbytes:
                freed += stored.evict(1)
            if freed >= nbytes:
                break
        if freed:
            self.cached_bytes -= freed
            self._cache.shrank(self, freed)  # type: ignore[union-attr]
        return freed

    def delete_storage(self) -> None:
        """The topic is deleted: its cached entries and its ledgers' files go."""
        if self._cache is None:
            return
        self._cache.forget(self)
        self.cached_bytes = 0
        for lid in self._ids:
            self._bookie.delete(lid)  # type: ignore[union-attr]

    def in_bookie_storage(self, ledger_id: int) -> int:
        """How many entries of ``ledger_id`` left the cache for bookie storage (0 without it)."""
        stored = self._entries.get(ledger_id)
        return 0 if stored is None else stored.evicted

    # ------------------------------------------------------------------ reading

    def read_entry(self, pos: Position) -> EntryData:
        """`asyncReadEntry(position)`: the stored entry, or Pulsar's read failure."""
        entries = self._entries.get(pos.ledger_id)
        if entries is None:
            raise LedgerNotExistException(
                "Message not found, the ledgerId does not belong to this topic or has been deleted"
            )
        e = pos.entry_id
        if e < 0:
            raise ManagedLedgerException("Incorrect parameter input")  # BKException IncorrectParameterException
        if e >= len(entries):
            raise NonRecoverableLedgerException("Error while reading ledger")  # BKException ReadException
        return _from_stored(entries[e])

    def entries_of(self, ledger_id: int) -> Sequence[EntryData]:
        """The entries written to one ledger, in entry-id order (read-only view for snapshots)."""
        return _LedgerEntries(self._entries[ledger_id])

    def ledger_exists(self, ledger_id: int) -> bool:
        """`ledgerExists`: the ledger is one of this managed ledger's (not trimmed, not an empty one dropped)."""
        return ledger_id in self._info

    @property
    def current_ledger_id(self) -> int:
        return self._current_id

    # ------------------------------------------------------------------ position arithmetic

    def _is_valid(self, ledger_id: int, entry_id: int) -> bool:
        """`isValidPosition`."""
        if entry_id < 0:
            return False
        lce = self.last_confirmed_entry
        if ledger_id > lce.ledger_id:
            return False
        if ledger_id == lce.ledger_id:
            return entry_id <= lce.entry_id + 1
        info = self._info.get(ledger_id)
        if info is None:
            return False  # a missing ledger older than the last confirmed one
        return entry_id < info.entries

    def is_valid_position(self, pos: Position) -> bool:
        """`isValidPosition`: an existing entry, or the slot right after the last confirmed entry."""
        return self._is_valid(pos.ledger_id, pos.entry_id)

    def _next_valid(self, ledger_id: int, entry_id: int) -> tuple[int, int]:
        """`getNextValidPosition` on ints."""
        entry_id = entry_id + 1 if entry_id >= 0 else 0
        ids = self._ids
        while not self._is_valid(ledger_id, entry_id):
            i = bisect_left(ids, ledger_id + 1)
            if i == len(ids):  # no later ledger: fall back to the position after the last confirmed entry
                lce = self.last_confirmed_entry
                return lce.ledger_id, lce.entry_id + 1 if lce.entry_id >= 0 else 0
            ledger_id, entry_id = ids[i], 0
        return ledger_id, entry_id

    def next_valid_position(self, pos: Position) -> Position:
        """`getNextValidPosition`: the next entry after ``pos`` (crossing ledgers), or the slot after the last one."""
        return self.position_of(*self._next_valid(pos.ledger_id, pos.entry_id))

    def _previous(self, ledger_id: int, entry_id: int) -> tuple[int, int]:
        """`getPreviousPosition` on ints."""
        if entry_id > 0:
            return ledger_id, entry_id - 1
        ids = self._ids
        i = bisect_left(ids, ledger_id)
        if i == 0:
            return ledger_id, -1
        for j in range(i - 1, -1, -1):
            entries = self._info[ids[j]].entries
            if entries > 0:
                return ids[j], entries - 1
        return ids[0], -1

    def previous_position(self, pos: Position) -> Position:
        """`getPreviousPosition`: the entry before ``pos`` (maybe an earlier ledger's last entry), or ``L:-1``."""
        return self.position_of(*self._previous(pos.ledger_id, pos.entry_id))

    def _count(self, from_l: int, from_e: int, from_incl: bool, to_l: int, to_e: int, to_incl: bool) -> int:
        """`getNumberOfEntries(Range)`: entries between two positions, by Java's arithmetic."""
        if from_l == to_l:
            return to_e - from_e - 1 + from_incl + to_incl
        count = to_e + to_incl
        info = self._info.get(from_l)
        if info is not None:
            count += info.entries - (from_e + 1) + from_incl
        ids = self._ids
        for j in range(bisect_left(ids, from_l + 1), bisect_left(ids, to_l)):
            count += self._info[ids[j]].entries
        return count

    def number_of_entries(self, start_exclusive: Position | None = None, end_inclusive: Position | None = None) -> int:
        """`getNumberOfEntries(Range.openClosed(start, end))`; with no arguments `getNumberOfEntries()`, all entries."""
        if start_exclusive is None and end_inclusive is None:
            return self._stored_entries
        if start_exclusive is None or end_inclusive is None:
            raise TypeError("number_of_entries takes both start_exclusive and end_inclusive, or neither")
        return self._count(
            start_exclusive.ledger_id,
            start_exclusive.entry_id,
            False,
            end_inclusive.ledger_id,
            end_inclusive.entry_id,
            True,
        )

    def position_of(self, ledger_id: int, entry_id: int) -> Position:
        """The Position (ledger, entry). Positions are made when asked for, not stored per entry: a stored one
        would be one more object per entry for every full garbage collection to walk. The one exception is the
        position the next write will take: a cursor that read everything moves its read position there, and
        the write then uses the same object."""
        pos = self._next_position
        if pos.entry_id == entry_id and pos.ledger_id == ledger_id:
            return pos
        return make_position(ledger_id, entry_id)

    def read_run(self, ledger_id: int, first: int, end: int) -> list[tuple[Position, EntryData]]:
        """Entries ``first .. end-1`` of one ledger with their positions (for the cursor's reads; trusted bounds)."""
        last = self._last_written
        if end - first == 1 and last is not None and last[0].entry_id == first and last[0].ledger_id == ledger_id:
            return [last]
        entries = self._entries[ledger_id]
        if first < entries.evicted:
            return [
                (make_position(ledger_id, i), _from_stored(s))
                for i, s in zip(range(first, end), entries.run(first, end))
            ]
        return [(make_position(ledger_id, i), _from_stored(entries[i])) for i in range(first, end)]

    def _ceiling_ledger(self, ledger_id: int) -> int | None:
        """`ledgers.ceilingKey(ledger_id)`."""
        i = bisect_left(self._ids, ledger_id)
        return self._ids[i] if i < len(self._ids) else None

    def first_position(self) -> Position:
        """`getFirstPosition()`: ``(first ledger, -1)``."""
        first = self._ids[0]
        if first > self.last_confirmed_entry.ledger_id:
            first = self.last_confirmed_entry.ledger_id
        return Position(first, -1)

    # ------------------------------------------------------------------ cursors

    def open_cursor(self, name: str, initial_position: Any = "Latest", durable: bool = True) -> "ManagedCursor":
        """`openCursor(name, initialPosition)`: the existing cursor of that name, or a new one; ``durable=False``
        is `newNonDurableCursor` (a reader's), which holds back no trimming."""
        cursor = self.cursors.get(name)
        if cursor is not None:
            return cursor
        cursor = ManagedCursor(self, name, initial_position)
        self.cursors[name] = cursor
        if durable:
            self._durable.add(name)
        return cursor

    def delete_cursor(self, name: str) -> None:
        """`deleteCursor(name)`: remove the subscription's cursor; its handle fails from now on. The ledgers it
        held back may be trimmed now."""
        cursor = self.cursors.pop(name, None)
        if cursor is None:
            raise CursorNotFoundException(f"ManagedCursor not found: {name}")
        cursor._close()
        if name in self._durable:
            self._durable.discard(name)
            self.trim_consumed_ledgers()

    # ------------------------------------------------------------------ retention and trimming

    def set_retention(self, policy: RetentionPolicies) -> None:
        """`setConfig` with a new retention policy (the namespace's, or the broker's defaults): the next trim
        follows it (as in Pulsar, changing it trims nothing by itself)."""
        policy.validate()
        self.retention = policy

    def hold(self, name: str, position: Position) -> None:
        """A durable position that holds back trimming like a durable cursor's mark-delete position, without a
        subscription: the compactor's ``__compaction`` cursor at the compaction horizon. Moving it may trim."""
        self._holds[name] = position
        self.trim_consumed_ledgers()

    def _slowest_position(self) -> Position | None:
        """`ManagedCursorContainer.getSlowestReaderPosition`: the smallest mark-delete position of the durable
        cursors (and holds), None when there is none."""
        slowest = None
        cursors = self.cursors
        for md in (*(cursors[name].mark_delete_position for name in self._durable), *self._holds.values()):
            if slowest is None or (md.ledger_id, md.entry_id) < (slowest.ledger_id, slowest.entry_id):
                slowest = md
        return slowest

    def _cursor_changed_ledger(self, cursor: ManagedCursor, old: Position) -> None:
        """`onCursorMarkDeletePositionUpdated`, called when a cursor's mark-delete position moved from ``old``
        into another ledger: trim when the slowest durable cursor was this one and moved off its ledger."""
        if cursor.name not in self._durable or self.retention.keeps_everything:
            return
        new = cursor.mark_delete_position
        others = [
            (md.ledger_id, md.entry_id)
            for md in (
                *(self.cursors[name].mark_delete_position for name in self._durable if name != cursor.name),
                *self._holds.values(),
            )
        ]
        before = min((old.ledger_id, old.entry_id), *others) if others else (old.ledger_id, old.entry_id)
        after = min((new.ledger_id, new.entry_id), *others) if others else (new.ledger_id, new.entry_id)
        if before != after and before[0] != new.ledger_id:
            self.trim_consumed_ledgers()

    def trim_consumed_ledgers(self) -> list[int]:
        """`internalTrimLedgers(isTruncate=false)`: delete the consumed ledgers the retention policy lets go;
        returns their ids. Their entries leave memory; non-durable cursors behind them move past them."""
        policy = self.retention
        if policy.keeps_everything or len(self._ids) < 2:
            return []
        current = self._current_id
        if not self._durable and not self._holds:
            slowest_ledger = current + 1
        else:
            slowest = self._slowest_position()
            assert slowest is not None
            info = self._info.get(slowest.ledger_id)
            if info is not None and slowest.ledger_id != current and info.entries == slowest.entry_id + 1:
                slowest_ledger = slowest.ledger_id + 1
            else:
                slowest_ledger = slowest.ledger_id
        candidates = []
        for lid in self._ids:
            if lid >= slowest_ledger or lid == current:
                break
            info = self._info[lid]
            candidates.append(TrimCandidate(lid, info.size, info.timestamp))
        now = self.scheduler.now_ms
        doomed, kept = ledgers_to_delete(candidates, policy, self.total_size, now)
        self._schedule_check(kept)
        if not doomed:
            return []
        self._advance_cursors_past(doomed)
        entries = size = 0
        for lid in doomed:
            info = self._info[lid]
            entries += info.entries
            size += info.size
            self._stored_entries -= info.entries
            self.total_size -= info.size
            self._drop_ledger(lid)
        last = self._last_written
        if last is not None and last[0].ledger_id not in self._info:
            self._last_written = None
        log = self.events
        if log is not None and log.enabled:
            log.append(
                LEDGERS_TRIMMED,
                now,
                topic=self.name,
                first=doomed[0],
                last=doomed[-1],
                ledgers=len(doomed),
                entries=entries,
                size=size,
            )
        return doomed

    def _advance_cursors_past(self, doomed: list[int]) -> None:
        """`advanceCursorsIfNecessary`: every cursor behind the last entry of the deleted ledgers is mark-deleted up
        to it (only non-durable ones can be), as a consumer's ack would; a compacted reader's is left alone (it
        reads the compacted ledger, which the trim does not touch)."""
        highest = None
        for lid in reversed(doomed):
            entries = self._info[lid].entries
            if entries > 0:
                highest = (lid, entries - 1)
                break
        if highest is None:
            return
        lce = self.last_confirmed_entry
        if highest > (lce.ledger_id, lce.entry_id):
            return
        for cursor in list(self.cursors.values()):
            md = cursor.mark_delete_position
            if highest > (md.ledger_id, md.entry_id) and not cursor.read_compacted:
                cursor.advance_mark_delete(self.position_of(*highest), "ledgers trimmed: non-durable cursor moved")

    def _schedule_check(self, kept: TrimCandidate | None) -> None:
        """Arm the periodic check's run that will find ``kept`` past the time limit (one timer at most)."""
        if kept is None:
            return
        at = next_check_at(kept, self.retention, 0, self._check_interval_ms)
        if at is None:
            return
        timer = self._check_timer
        if timer is not None and not timer.cancelled:
            if timer.deadline <= at:
                return
            timer.cancel()
        self._check_timer = self.scheduler.call_at(at, self._periodic_check, "retention check")

    def _periodic_check(self) -> None:
        self._check_timer = None
        if self.state != "Closed":
            self.trim_consumed_ledgers()

    # ------------------------------------------------------------------ restart

    def restart(self) -> None:
        """Unload and reload the topic: keep what Pulsar persists, drop what lives only in memory.

        Like `ManagedLedgerImpl.initializeBookKeeper` on reopen: the open ledger is closed (deleted if
        empty), a new ledger is created, ``entriesAddedCounter`` restarts at 0. Each cursor recovers
        its persisted mark-delete position, properties, individually deleted ranges (up to
        ``managedLedgerMaxUnackedRangesToPersist`` + 1, Java's off-by-one) and batch ack sets (up to
        ``managedLedgerMaxBatchDeletedIndexToPersist``), and reads again from the mark-delete position.
        """
        saved = {name: cursor._persisted_state() for name, cursor in self.cursors.items()}
        self.entries_added_counter = 0
        self._roll(ROLLED_RESTART)
        for name, cursor in self.cursors.items():
            cursor._recover(*saved[name])
        self.trim_consumed_ledgers()

    # ------------------------------------------------------------------ stats

    def stats_internal(self) -> dict[str, Any]:
        """`pulsar-admin topics stats-internal`: `PersistentTopicInternalStats` in its JSON shape (`TopicStatsImpl` /
        `PersistentTopicInternalStats`)."""
        current = self._current_id
        return {
            "entriesAddedCounter": self.entries_added_counter,
            "numberOfEntries": self._stored_entries,
            "totalSize": self.total_size,
            "currentLedgerEntries": self.current_ledger_entries,
            "currentLedgerSize": self.current_ledger_size,
            "lastLedgerCreatedTimestamp": format_timestamp(self.last_ledger_created_timestamp),
            "waitingCursorsCount": sum(1 for c in self.cursors.values() if c.waiting_read_op),
            "pendingAddEntriesCount": 0,
            "lastConfirmedEntry": str(self.last_confirmed_entry),
            "state": self.state,
            "ledgers": [
                {
                    "ledgerId": info.ledger_id,
                    "entries": 0 if info.ledger_id == current else info.entries,
                    "size": 0 if info.ledger_id == current else info.size,
                    "offloaded": False,
                    "underReplicated": False,
                }
                for info in self.ledgers
            ],
            "cursors": {name: cursor.stats_internal() for name, cursor in self.cursors.items()},
            "schemaLedgers": [],
            "compactedLedger": {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False},
        }

    def __repr__(self) -> str:
        return (
            f"ManagedLedger({self.name!r}, ledgers={[i.ledger_id for i in self.ledgers]}, "
            f"lastConfirmedEntry={self.last_confirmed_entry})"
        )
