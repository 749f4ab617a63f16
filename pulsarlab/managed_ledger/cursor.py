"""The managed cursor: one subscription's place in a topic - what is acknowledged and what to read next.

Models `org.apache.bookkeeper.mledger.impl.ManagedCursorImpl` (docs/guide/cursor.md#mark-delete, `TopicStatsImpl` /
`PersistentTopicInternalStats`):

* ``mark_delete_position``: every entry up to it is acknowledged; ``read_position``: the next entry to
  read; ``individually_deleted_messages``: acknowledged entries after the mark-delete position, an
  `OpenLongPairRangeSet` (per-ledger runs printed ``(L:a..L:b]``).
* ``async_delete`` (individual acks) follows `asyncDelete` step by step: positions beyond the last
  confirmed entry fail with "Invalid mark deleted position"; each entry is added as the range
  ``(previousPosition, position]``; then the mark-delete position moves to the end of the first range
  when that range starts at (or with no entries after) the mark-delete position, and
  `setAcknowledgedPosition` extends it over following deleted ranges, across ledgers.
* Batch entries: with ``acknowledgmentAtBatchIndexLevelEnabled`` an ack set (Java `BitSet` long words,
  set bit = not yet acked) is ANDed into ``batchDeletedIndexes``; the entry is deleted when no bit is
  left. With the setting off an individual ack set is ignored. A cumulative ack with an ack set marks
  the previous position and keeps, for the batch, the bit set with the larger ``nextSetBit`` (Java's
  rule against rolling back).
* Reads skip deleted entries (the read op's skip condition / `filterReadEntries`) and cross ledgers as
  `OpReadEntry` does; counts (`getNumberOfEntries`, backlog, since-first-not-acked) use Java's
  arithmetic and ``messagesConsumedCounter``.

Simplifies: every operation completes synchronously (no pending mark-deletes, no rate limiter); there
is no cursor ledger (stats show ``cursorLedger`` -1 and state ``NoLedger``; the position counts as
persisted to the metadata store); with ``managedLedgerUnackedRangesOpenCacheSetEnabled=false`` only the
``", "`` separator of Guava's range set is modelled, not its cross-ledger merging. Failures raise the
exception the Java callback receives (`ManagedLedgerException` and subclasses); Pulsar's broker only
logs a failed ack, so callers that model the broker catch them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from sortedcontainers import SortedDict

from pulsarlab.date_format import format_timestamp
from pulsarlab.errors import IllegalArgumentException, PulsarError
from pulsarlab.event_catalogue.cursor import BATCH_INDEX_DELETED, CURSOR_RESET, INDIVIDUALLY_DELETED, MARK_DELETE_MOVED
from pulsarlab.events import UNDECLARED
from pulsarlab.managed_ledger.exceptions import CursorAlreadyClosedException, ManagedLedgerException
from pulsarlab.managed_ledger.position import EARLIEST, LATEST, Position
from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.managed_ledger.ledger import ManagedLedger
    from pulsarlab.messages import EntryData

_MASK64 = (1 << 64) - 1
Entry = tuple[Position, "EntryData"]  # what a read returns: an entry and where it is stored
CURSOR_INTERNAL_PROPERTY_PREFIX = "#pulsar.internal."


WHY_INDIVIDUAL = "individual acks made the entries after it contiguous"
WHY_CUMULATIVE = "cumulative ack"
WHY_CUMULATIVE_BATCH = "cumulative ack inside a batch: the entry before it is marked, the batch keeps its ack set"
WHY_SKIP = "admin skip: entries skipped"
WHY_CLEAR_BACKLOG = "admin skip_all: backlog cleared"
WHY_EXPIRED = "admin expire: entries older than the TTL"

_CLOSED = "Cursor was already closed"


class MarkDeletingMarkedPosition(IllegalArgumentException):
    """`ManagedCursorImpl.MarkDeletingMarkedPosition`: a mark-delete behind the current one."""

    java_class = "org.apache.bookkeeper.mledger.impl.ManagedCursorImpl$MarkDeletingMarkedPosition"


def ack_set_bits(words: Iterable[int]) -> int:
    """A Java `BitSet` from ``long[]`` words (`BitSet.valueOf`), as a Python int (bit i = batch index i)."""
    bits = 0
    for i, word in enumerate(words):
        if type(word) is not int:
            raise TypeError(f"an ack set holds Java long words (ints), got {word!r}")
        bits |= (word & _MASK64) << (64 * i)
    return bits


def ack_set_words(bits: int) -> list[int]:
    """`BitSet.toLongArray()`: signed 64-bit words up to the last non-zero one."""
    words = []
    while bits:
        word = bits & _MASK64
        words.append(word - (1 << 64) if word >> 63 else word)
        bits >>= 64
    return words


def _next_set_bit(bits: int) -> int:
    """`BitSet.nextSetBit(0)`: the lowest set bit, -1 when empty."""
    return (bits & -bits).bit_length() - 1


def _initial_position_name(value: Any) -> str:
    name = getattr(value, "name", value)
    if isinstance(name, str) and name in ("Latest", "Earliest"):
        return name
    raise IllegalArgumentException(f"initial position must be 'Latest' or 'Earliest', got {value!r}")


class ManagedCursor:
    """A durable cursor of one managed ledger. Open it with `ManagedLedger.open_cursor`."""

    def __init__(self, ledger: ManagedLedger, name: str, initial_position: Any = "Latest") -> None:
        if not isinstance(name, str) or not name:
            raise IllegalArgumentException(f"a cursor needs a non-empty name, got {name!r}")
        kind = _initial_position_name(initial_position)
        self.name = name
        self._ledger = ledger
        self._event_name = f"{ledger.name}/{name}"
        self._event_name_sid: tuple[Any, int] | None = None  # (event log, id of _event_name in it)
        config = ledger.config
        self.batch_index_level = config.flag("acknowledgmentAtBatchIndexLevelEnabled")
        self._separator = "," if config.flag("managedLedgerUnackedRangesOpenCacheSetEnabled") else ", "
        self.individually_deleted_messages = OpenLongPairRangeSet()
        # batchDeletedIndexes: (ledger, entry) -> ack set as an int, set bit = not yet acknowledged
        self._batch: SortedDict | None = SortedDict() if self.batch_index_level else None
        self.properties: dict[str, int] = {}
        self.cursor_properties: dict[str, str] = {}
        self.state = "NoLedger"
        self.active = True  # openCursor calls setActive()
        self.waiting_read_op = False
        self.read_compacted = False  # a compacted reader's non-durable cursor (NonDurableCursorImpl.isReadCompacted)
        self.last_ledger_switch_timestamp = ledger.scheduler.now_ms
        # when the mark-delete position last moved (PersistentSubscription.lastMarkDeleteAdvancedTimestamp), 0 never
        self.last_mark_delete_advanced_timestamp = 0
        self._closed = False
        # initializeCursorPosition(getLastPositionAndCounter() / getFirstPositionAndCounter())
        lce = ledger.last_confirmed_entry
        if kind == "Latest":
            position, counter = lce, ledger.entries_added_counter
        else:
            position = ledger.first_position()
            counter = ledger.entries_added_counter - ledger._count(
                position.ledger_id, position.entry_id, False, lce.ledger_id, lce.entry_id, True
            )
        self.mark_delete_position: Position = position
        self.read_position: Position = ledger.next_valid_position(position)
        self.messages_consumed_counter = counter

    # ------------------------------------------------------------------ state queries

    def is_deleted(self, pos: Position) -> bool:
        """`isMessageDeleted`: at or before the mark-delete position, or individually deleted."""
        md = self.mark_delete_position
        l, e = pos.ledger_id, pos.entry_id
        if l < md.ledger_id or (l == md.ledger_id and e <= md.entry_id):
            return True
        return self.individually_deleted_messages.contains(l, e)

    def batch_deleted_indexes(self, pos: Position) -> list[int] | None:
        """`getDeletedBatchIndexesAsLongArray`: the stored ack set of a partly acked batch (set bit = not yet acked)."""
        if self._batch is None:
            return None
        bits = self._batch.get((pos.ledger_id, pos.entry_id))
        return None if bits is None else ack_set_words(bits)

    def has_more_entries(self) -> bool:
        """`hasMoreEntries`: is there an entry at or after the read position?"""
        read = self.read_position
        lce = self._ledger.last_confirmed_entry
        if lce.entry_id != -1:  # _has_more(read), inlined: asked before every dispatcher read
            if read.ledger_id == lce.ledger_id:
                return read.entry_id <= lce.entry_id
            return read.ledger_id < lce.ledger_id
        return self._entries_to_read(read.ledger_id, read.entry_id) > 0

    def _has_more(self, l: int, e: int) -> bool:
        lce = self._ledger.last_confirmed_entry
        if lce.entry_id != -1:
            return l < lce.ledger_id or (l == lce.ledger_id and e <= lce.entry_id)
        return self._entries_to_read(l, e) > 0

    def _entries_to_read(self, l: int, e: int) -> int:
        """`getNumberOfEntries()` from (l, e): entries in [read, last + 1) not individually deleted."""
        lce = self._ledger.last_confirmed_entry
        nl, ne = lce.ledger_id, (lce.entry_id + 1 if lce.entry_id >= 0 else 0)
        if l > nl or (l == nl and e > ne):
            return 0
        return self._count(l, e, True, nl, ne, False)

    def _count(self, from_l: int, from_e: int, from_incl: bool, to_l: int, to_e: int, to_incl: bool) -> int:
        """The cursor's `getNumberOfEntries(range)`: the ledger's count minus individually deleted entries.

        Java subtracts `cardinality(lower, upper)`, which counts both endpoints whatever the bound type.
        """
        total = self._ledger._count(from_l, from_e, from_incl, to_l, to_e, to_incl)
        idm = self.individually_deleted_messages
        if idm.is_empty():
            return total
        return total - idm.cardinality(from_l, from_e, to_l, to_e)

    def number_of_entries(self) -> int:
        """`getNumberOfEntries()`: entries from the read position to the end that are not individually deleted."""
        read = self.read_position
        return self._entries_to_read(read.ledger_id, read.entry_id)

    def number_of_entries_in_backlog(self, precise: bool = True) -> int:
        """`getNumberOfEntriesInBacklog(isPrecise)`: entries after the mark-delete position not individually deleted.

        The imprecise form is ``entriesAddedCounter - messagesConsumedCounter`` (falling back to the
        precise count when negative), as the broker's backlog stats use it.
        """
        if not precise:
            backlog = self._ledger.entries_added_counter - self.messages_consumed_counter
            if backlog >= 0:
                return backlog
        md = self.mark_delete_position
        lce = self._ledger.last_confirmed_entry
        if (md.ledger_id, md.entry_id) >= (lce.ledger_id, lce.entry_id):
            return 0
        return self._count(md.ledger_id, md.entry_id, False, lce.ledger_id, lce.entry_id, True)

    def number_of_entries_since_first_not_acked(self) -> int:
        """`getNumberOfEntriesSinceFirstNotAckedMessage`: ledger entries in (markDelete, readPosition]."""
        md, read = self.mark_delete_position, self.read_position
        if (md.ledger_id, md.entry_id) >= (read.ledger_id, read.entry_id):
            return 0
        return self._ledger._count(md.ledger_id, md.entry_id, False, read.ledger_id, read.entry_id, True)

    # ------------------------------------------------------------------ reading

    def read_entries(self, max_entries: int) -> list[tuple[Position, EntryData]]:
        """`readEntries(n)`: up to ``max_entries`` entries from the read position, skipping deleted ones.

        Reads ledger by ledger like `OpReadEntry`: a run of readable entries per step, the read position
        set after the last entry looked at, and another step while fewer than asked were found and
        `hasMoreEntries()`.
        """
        if self._closed:
            raise CursorAlreadyClosedException(_CLOSED)
        if type(max_entries) is not int or max_entries <= 0:
            # Java: checkArgument(numberOfEntriesToRead > 0), an IllegalArgumentException without a message
            raise IllegalArgumentException(f"numberOfEntriesToRead must be > 0, got {max_entries!r}")
        ml = self._ledger
        out: list[tuple[Position, EntryData]] = []
        read = self.read_position
        l, e = read.ledger_id, read.entry_id
        md = self.mark_delete_position
        md_l, md_e = md.ledger_id, md.entry_id
        idm = self.individually_deleted_messages
        filtering = idm.has_any_from(l, e)  # acked entries before the read position filter nothing
        entries = ml._entries.get(l)
        count = entries.count if entries is not None else 0
        if not filtering and 0 <= e < count and (l > md_l or (l == md_l and e > md_e)):
            # one step of the loop below, the common case: a run of this ledger fills the read or ends the topic
            if e + max_entries < count:
                one_step = True
            else:  # not self._has_more(l, count), inlined
                lce = ml.last_confirmed_entry
                if lce.entry_id != -1:
                    one_step = count > lce.entry_id if l == lce.ledger_id else l > lce.ledger_id
                else:
                    one_step = self._entries_to_read(l, count) <= 0
            if one_step:
                hi = min(e + max_entries, count)
                self.read_position = ml.position_of(l, hi)
                last = ml._last_written
                if hi - e == 1 and last is not None and last[0].entry_id == e and last[0].ledger_id == l:
                    return [last]  # read_run's answer for the entry just written, without its call
                return ml.read_run(l, e, hi)
        while True:
            entries = ml._entries.get(l)
            if entries is None or (not entries and l != ml._current_id):
                nxt = ml._ceiling_ledger(l + 1)  # an empty, missing or trimmed ledger: skip it
                l, e = (nxt if nxt is not None else l + 1), 0
            elif e >= len(entries):
                if l != ml._current_id:  # past the end of a closed ledger: the next ledger's first entry
                    nxt = ml._ceiling_ledger(l + 1)
                    l, e = (nxt if nxt is not None else l + 1), 0
            else:
                hi = min(e + max_entries - len(out), len(entries))  # exclusive
                if filtering or (l == md_l and e <= md_e) or l < md_l:
                    first = -1
                    j = e
                    while j < hi:
                        if (l < md_l or (l == md_l and j <= md_e)) or idm.contains(l, j):
                            if first != -1:
                                break
                        elif first == -1:
                            first = j
                        j += 1
                    if first != -1:
                        out.extend(ml.read_run(l, first, j))
                    e = j
                else:
                    out.extend(ml.read_run(l, e, hi))
                    e = hi
            if l > md_l or (l == md_l and e > md_e):  # setReadPosition only moves past the mark-delete position
                self.read_position = ml.position_of(l, e)
            if len(out) < max_entries and self._has_more(l, e):
                start = ml._ceiling_ledger(l)  # startReadOperationOnLedger
                if start is None:
                    start = ml.last_confirmed_entry.ledger_id
                if start != l:
                    l, e = start, 0
                continue
            return out

    def replay_entries(self, positions: Iterable[Position]) -> list[tuple[Position, EntryData]]:
        """`replayEntries(positions)`: re-read the given positions, skipping deleted ones, in the given order.

        A replayed position equal to the read position moves the read position one entry on, as Java does.
        """
        ml = self._ledger
        out = []
        for pos in positions:
            if self.is_deleted(pos):
                continue
            if pos == self.read_position:
                self._set_read_position(pos.next())
            out.append((pos, ml.read_entry(pos)))
        return out

    def _set_read_position(self, pos: Position) -> None:
        """`setReadPosition`: only a position after the mark-delete position is taken."""
        md = self.mark_delete_position
        if (pos.ledger_id, pos.entry_id) > (md.ledger_id, md.entry_id):
            self.read_position = pos

    def rewind(self) -> None:
        """`rewind()`: read again from the entry after the mark-delete position."""
        self.read_position = self._ledger.next_valid_position(self.mark_delete_position)

    def seek(self, position: Position, force: bool = False) -> None:
        """`seek(position, force)`: move the read position; without ``force`` never to or before the mark-delete."""
        md = self.mark_delete_position
        if not force and (position.ledger_id, position.entry_id) <= (md.ledger_id, md.entry_id):
            position = self._ledger.next_valid_position(md)
        self.read_position = position

    def reset_cursor(self, position: Position) -> Position:
        """`asyncResetCursor(position, forceReset=false)`: read again from ``position`` (earliest / latest /
        the next valid position when it is not one); the mark-delete position becomes the entry before it,
        individually deleted ranges and batch ack sets are cleared and ``messagesConsumedCounter`` follows the
        mark-delete move. Returns the new read position."""
        if self._closed:
            raise CursorAlreadyClosedException(_CLOSED)
        ml = self._ledger
        if position == EARLIEST:
            new_read = ml.first_position()
        elif position == LATEST:
            new_read = ml.next_valid_position(ml.last_confirmed_entry)
        elif not ml.is_valid_position(position):
            new_read = ml.next_valid_position(position)
        else:
            new_read = position
        new_md = ml.previous_position(new_read)
        md = self.mark_delete_position
        if (md.ledger_id, md.entry_id) >= (new_md.ledger_id, new_md.entry_id):
            self.messages_consumed_counter -= self._count(
                new_md.ledger_id, new_md.entry_id, True, md.ledger_id, md.entry_id, False
            )
        else:
            self.messages_consumed_counter += self._count(
                md.ledger_id, md.entry_id, True, new_md.ledger_id, new_md.entry_id, False
            )
        self.mark_delete_position = new_md
        self.individually_deleted_messages.clear()
        if self._batch is not None:
            self._batch.clear()
        if new_read.entry_id < 0:
            new_read = ml.next_valid_position(new_read)
        self.read_position = new_read
        log = ml.events
        if log is not None and log.enabled:
            log.append_row(
                CURSOR_RESET,
                ml.scheduler.now_ms,
                self._event_sid(log),
                new_md.ledger_id,
                new_md.entry_id,
                new_read.ledger_id,
                new_read.entry_id,
            )
        return new_read

    # ------------------------------------------------------------------ acknowledging

    def async_delete(self, positions: Iterable[tuple[Position, list[int] | None]]) -> None:
        """`asyncDelete(positions)`: individual acks, each ``(position, ack_set or None)``.

        Raises `ManagedLedgerException("Invalid mark deleted position")` for a position after the last
        confirmed entry; the positions before it in the list stay deleted and the mark-delete position
        does not move (as in Java, which fails the callback and returns).
        """
        self.delete_entries((pos.ledger_id, pos.entry_id, ack_set) for pos, ack_set in positions)

    def delete_entries(self, acks: Iterable[tuple[int, int, "Iterable[int] | None"]]) -> None:
        """`async_delete` of ``(ledger_id, entry_id, ack_set or None)`` triples, the form an ACK command carries
        its message ids in (the broker's ack path passes them on without a Position per acked entry)."""
        if self._closed:
            raise CursorAlreadyClosedException(_CLOSED)
        ml = self._ledger
        lce = ml.last_confirmed_entry
        lce_l, lce_e = lce.ledger_id, lce.entry_id
        idm = self.individually_deleted_messages
        md = self.mark_delete_position
        md_l, md_e = md.ledger_id, md.entry_id
        batch = self._batch
        log = ml.events
        if log is not None and not log.enabled:
            log = None
        acked: list[tuple[int, int]] | None = [] if log is not None else None
        consumed = 0
        # While the range set is empty, an ack of the entry right after the mark-delete position would be
        # added and at once absorbed by the mark-delete advance; the fast path moves the position directly.
        idm_empty = idm.is_empty()
        try:
            for l, e, ack_set in acks:
                if l > lce_l or (l == lce_l and e > lce_e):
                    raise ManagedLedgerException("Invalid mark deleted position")
                if l < md_l or (l == md_l and e <= md_e) or (not idm_empty and idm.contains(l, e)):
                    if batch:
                        batch.pop((l, e), None)
                    continue
                if ack_set is None:
                    if batch:
                        batch.pop((l, e), None)
                elif batch is not None:
                    given = ack_set_bits(ack_set)
                    bits = batch.get((l, e))
                    bits = given if bits is None else bits & given
                    if bits:
                        batch[(l, e)] = bits
                        if log is not None:
                            log.append_row(
                                BATCH_INDEX_DELETED, ml.scheduler.now_ms, self._event_sid(log), l, e, bits.bit_count()
                            )
                        continue
                    batch.pop((l, e), None)
                else:
                    continue  # an ack set without batch-index deletion is ignored
                consumed += 1
                if idm_empty and l == md_l and e == md_e + 1:
                    md_e = e
                    continue
                if e > 0:
                    idm.ack(l, e)
                else:  # (previousPosition, position]: the previous ledger's last entry, or (L, -1)
                    pl, pe = ml._previous(l, e)
                    idm.add_open_closed(pl, pe, l, e)
                idm_empty = False
                if acked is not None:
                    acked.append((l, e))
        except PulsarError as error:
            # Java added every earlier position to the range set and does not move the mark-delete position
            self.messages_consumed_counter += consumed
            if md_e != md.entry_id:
                idm.add_open_closed(md_l, md.entry_id, md_l, md_e)
            raise ManagedLedgerException.wrapping(error) from error
        self.messages_consumed_counter += consumed
        if md_e != md.entry_id:
            self._commit_fast_advance(md_l, md_e)
        if not idm_empty:
            first = idm.first_range()
            if first is not None and (first[2], first[3]) <= (md_l, md_e):
                idm.remove_at_most(md_l, md_e)
                first = idm.first_range()
            if first is not None:
                lk, lv, uk, uv = first
                if (lk, lv) <= (md_l, md_e) or ml._count(md_l, md_e, False, lk, lv, True) <= 0:
                    self._set_acknowledged_position(uk, uv, WHY_INDIVIDUAL, None)
        if log is not None:
            now = ml.scheduler.now_ms
            new = self.mark_delete_position
            if acked:
                sid = self._event_sid(log)
                new_l, new_e = new.ledger_id, new.entry_id
                append_row = log.append_row
                for l, e in acked:
                    if l > new_l or (l == new_l and e > new_e):
                        append_row(INDIVIDUALLY_DELETED, now, sid, l, e, UNDECLARED, UNDECLARED, UNDECLARED)
            if new is not md:
                log.append_row(
                    MARK_DELETE_MOVED,
                    now,
                    self._event_sid(log),
                    md.ledger_id,
                    md.entry_id,
                    new.ledger_id,
                    new.entry_id,
                    log.intern(WHY_INDIVIDUAL),
                )

    def _event_sid(self, log: Any) -> int:
        """The log's id of this cursor's event name, interned at first use (as `EventLog.append` would)."""
        cached = self._event_name_sid
        if cached is None or cached[0] is not log:
            cached = self._event_name_sid = (log, log.intern(self._event_name))
        return cached[1]

    def _commit_fast_advance(self, l: int, e: int) -> None:
        """The fast path's mark-delete move: the same end state `setAcknowledgedPosition` reaches with an empty set."""
        self.mark_delete_position = self._ledger.position_of(l, e)
        self.last_mark_delete_advanced_timestamp = self._ledger.scheduler.now_ms
        self._forget_up_to(l, e)

    def _forget_up_to(self, l: int, e: int) -> None:
        """After a mark-delete move to (l, e): drop batch ack state at or below it, and read past it."""
        ml = self._ledger
        batch = self._batch
        if batch:
            while batch and batch.peekitem(0)[0] <= (l, e):
                batch.popitem(0)
        read = self.read_position
        if (read.ledger_id, read.entry_id) <= (l, e):
            self.read_position = ml.position_of(*ml._next_valid(l, e))

    def mark_delete(
        self, position: Position, ack_set: list[int] | None = None, properties: dict[str, int] | None = None
    ) -> None:
        """`markDelete(position[, properties])`: a cumulative ack up to ``position``.

        With an ack set the previous position is marked and (with batch-index deletion on) the batch's
        ack set is kept, the one with the larger ``nextSetBit`` winning. The mark-delete properties are
        replaced by ``properties`` (empty when not given), as `asyncMarkDelete` does.
        """
        if self._closed:
            raise CursorAlreadyClosedException(_CLOSED)
        ml = self._ledger
        l, e = position.ledger_id, position.entry_id
        why = WHY_CUMULATIVE
        batch = self._batch
        if batch is not None:
            if ack_set is not None:
                given = ack_set_bits(ack_set)
                kept = batch.get((l, e))
                if kept is None or _next_set_bit(given) > _next_set_bit(kept):
                    batch[(l, e)] = given
                l, e = ml._previous(l, e)
                why = WHY_CUMULATIVE_BATCH
            while batch and batch.peekitem(0)[0] < (l, e):
                batch.popitem(0)
        elif ack_set is not None:
            l, e = ml._previous(l, e)
            why = WHY_CUMULATIVE_BATCH
        lce = ml.last_confirmed_entry
        if (lce.ledger_id, lce.entry_id) < (l, e):
            # allowed only onto the next ledger once every entry of the mark-delete ledger is consumed
            md = self.mark_delete_position
            info = ml._info.get(md.ledger_id)
            next_ledger = ml._ceiling_ledger(lce.ledger_id + 1)
            move_forward = (
                info is not None and next_ledger is not None and md.entry_id + 1 >= info.entries and l == next_ledger
            )
            if not move_forward:
                raise ManagedLedgerException("Invalid mark deleted position")
        log = ml.events
        try:
            self._set_acknowledged_position(l, e, why, log if log is not None and log.enabled else None)
        except MarkDeletingMarkedPosition as error:
            raise ManagedLedgerException.wrapping(error) from error
        self.properties = dict(properties) if properties else {}

    def _set_acknowledged_position(self, l: int, e: int, why: str, log: Any) -> None:
        """`setAcknowledgedPosition` plus what a completed mark-delete persist does (drop deleted state up to it)."""
        old = self.mark_delete_position
        old_l, old_e = old.ledger_id, old.entry_id
        if (l, e) < (old_l, old_e):
            raise MarkDeletingMarkedPosition(
                f"Mark deleting an already mark-deleted position. Current mark-delete: {old} "
                f"-- attempted mark delete: {l}:{e}"
            )
        ml = self._ledger
        idm = self.individually_deleted_messages
        if (l, e) != (old_l, old_e):
            if l == old_l and e == old_e + 1:
                skipped = 0 if idm.contains(l, e) else 1
            else:
                skipped = self._count(old_l, old_e, False, l, e, True)
            if not idm.is_empty():
                lce = ml.last_confirmed_entry
                lce_l, lce_e = lce.ledger_id, lce.entry_id
                nl, ne = ml._next_valid(l, e)
                while (nl < lce_l or (nl == lce_l and ne <= lce_e)) and idm.contains(nl, ne):
                    _, _, l, e = idm.range_containing(nl, ne)  # type: ignore[misc]
                    nl, ne = ml._next_valid(l, e)
            self.messages_consumed_counter += skipped
            new = ml.position_of(l, e)
            self.mark_delete_position = new
            self.last_mark_delete_advanced_timestamp = ml.scheduler.now_ms
        else:
            new = old
        if not idm.is_empty():
            idm.remove_at_most(l, e)
        self._forget_up_to(l, e)
        if log is not None and new is not old:
            log.append_row(
                MARK_DELETE_MOVED, ml.scheduler.now_ms, self._event_sid(log), old_l, old_e, l, e, log.intern(why)
            )
        if l != old_l and new is not old:
            ml._cursor_changed_ledger(self, old)

    # ------------------------------------------------------------------ admin moves of the mark-delete position

    def skip_entries(self, n: int) -> Position:
        """`asyncSkipEntries(n, IndividualDeletedEntries.Exclude)`: mark-delete the ``n`` entries after the
        mark-delete position that are not yet deleted (deleted ones in between are passed over; at most up to
        the last confirmed entry). Returns the new mark-delete position."""
        if self._closed:
            raise CursorAlreadyClosedException(_CLOSED)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise IllegalArgumentException(f"the number of entries to skip must be an int >= 0, got {n!r}")
        ml = self._ledger
        lce = ml.last_confirmed_entry
        end = (lce.ledger_id, lce.entry_id)
        md = self.mark_delete_position
        l, e = md.ledger_id, md.entry_id
        idm = self.individually_deleted_messages
        left = n
        while left > 0 and (l, e) < end:
            nl, ne = ml._next_valid(l, e)
            if (nl, ne) > end:
                break
            l, e = nl, ne
            if not idm.contains(l, e):
                left -= 1
        return self.advance_mark_delete(ml.position_of(l, e), WHY_SKIP)

    def clear_backlog(self) -> Position:
        """`asyncClearBacklog`: mark-delete up to the last confirmed entry. Returns the new mark-delete position."""
        if self._closed:
            raise CursorAlreadyClosedException(_CLOSED)
        return self.advance_mark_delete(self._ledger.last_confirmed_entry, WHY_CLEAR_BACKLOG)

    def advance_mark_delete(self, position: Position, why: str = WHY_EXPIRED) -> Position:
        """`asyncMarkDelete(position)` from an admin operation (skip, clear backlog, message expiry): the
        mark-delete position moves forward to ``position`` (never back: an earlier one changes nothing), batch
        ack sets up to it are dropped and the read position follows when it was at or before it. Returns the
        mark-delete position."""
        if self._closed:
            raise CursorAlreadyClosedException(_CLOSED)
        md = self.mark_delete_position
        l, e = position.ledger_id, position.entry_id
        if (l, e) <= (md.ledger_id, md.entry_id) or e < 0:
            return md
        batch = self._batch
        if batch is not None:
            while batch and batch.peekitem(0)[0] <= (l, e):
                batch.popitem(0)
        log = self._ledger.events
        self._set_acknowledged_position(l, e, why, log if log is not None and log.enabled else None)
        new = self.mark_delete_position
        read = self.read_position
        if (read.ledger_id, read.entry_id) <= (new.ledger_id, new.entry_id):
            self.read_position = self._ledger.next_valid_position(new)
        return new

    # ------------------------------------------------------------------ properties

    def set_cursor_properties(self, cursor_properties: dict[str, str] | None) -> None:
        """`setCursorProperties`: replace the user cursor properties; internal ``#pulsar.internal.`` keys stay."""
        new = dict(cursor_properties or {})
        for key in new:
            if key.startswith(CURSOR_INTERNAL_PROPERTY_PREFIX):
                raise IllegalArgumentException(
                    f"The property key can't start with {CURSOR_INTERNAL_PROPERTY_PREFIX}", via="future"
                )
        for key, value in self.cursor_properties.items():
            if key.startswith(CURSOR_INTERNAL_PROPERTY_PREFIX):
                new[key] = value
        self.cursor_properties.clear()  # in place: a delayed-bucket tracker holds this mapping
        self.cursor_properties.update(new)

    def put_cursor_property(self, key: str, value: str) -> None:
        """`putCursorProperty`: set one property (the broker's own ``#pulsar.internal.`` keys included)."""
        self.cursor_properties[key] = value

    def remove_cursor_property(self, key: str) -> None:
        """`removeCursorProperty`: drop one property if present."""
        self.cursor_properties.pop(key, None)

    # ------------------------------------------------------------------ lifecycle

    def _close(self) -> None:
        self._closed = True
        self.state = "Closed"
        self.active = False

    @property
    def is_closed(self) -> bool:
        return self._closed

    def _persisted_state(
        self,
    ) -> tuple[Position, dict[str, int], list[tuple[int, int, int, int]], dict[tuple[int, int], int]]:
        """What a graceful close persists: mark-delete, properties, ranges and ack sets up to the limits."""
        config = self._ledger.config
        max_ranges = config.integer("managedLedgerMaxUnackedRangesToPersist")
        ranges = []
        for raw in self.individually_deleted_messages:
            ranges.append(raw)
            if len(ranges) > max_ranges:  # Java stops after adding range max + 1
                break
        batch: dict[tuple[int, int], int] = {}
        if self._batch:
            max_batch = config.integer("managedLedgerMaxBatchDeletedIndexToPersist")
            for key in self._batch.islice(0, max_batch):
                batch[key] = self._batch[key]
        return self.mark_delete_position, dict(self.properties), ranges, batch

    def _recover(
        self,
        position: Position,
        properties: dict[str, int],
        ranges: list[tuple[int, int, int, int]],
        batch: dict[tuple[int, int], int],
    ) -> None:
        """`recover` + `recoveredCursor`: rebuild the cursor from its persisted state after a reload."""
        ml = self._ledger
        idm = self.individually_deleted_messages
        idm.clear()
        for lk, lv, uk, uv in ranges:
            idm.add_open_closed(lk, lv, uk, uv)
        if self._batch is not None:
            self._batch.clear()
            self._batch.update(batch)
        if position.entry_id == -1 and position.ledger_id not in ml._info:
            nxt = ml._ceiling_ledger(position.ledger_id + 1)
            if nxt is not None:
                position = Position(nxt, -1)
        lce = ml.last_confirmed_entry
        if (position.ledger_id, position.entry_id) > (lce.ledger_id, lce.entry_id):
            position = lce
        self.messages_consumed_counter = -self._count(
            position.ledger_id, position.entry_id, False, lce.ledger_id, lce.entry_id, True
        )
        self.mark_delete_position = position
        self.read_position = ml.next_valid_position(position)
        self.properties = properties
        self.state = "NoLedger"
        self.waiting_read_op = False
        self.last_ledger_switch_timestamp = ml.scheduler.now_ms
        self.last_mark_delete_advanced_timestamp = 0  # a reloaded topic's subscription has not seen it move

    # ------------------------------------------------------------------ stats

    def individually_deleted_messages_string(self) -> str:
        """`getIndividuallyDeletedMessages()`: the range set as stats-internal prints it."""
        return self.individually_deleted_messages.to_string(self._separator)

    def stats_internal(
        self, subscription_have_pending_read: bool = False, subscription_have_pending_replay_read: bool = False
    ) -> dict[str, Any]:
        """The cursor's entry of stats-internal ``cursors`` (`ManagedLedgerInternalStats.CursorStats`, `TopicStatsImpl`
        / `PersistentTopicInternalStats`).

        The two ``subscriptionHavePending*`` flags belong to the dispatcher; its owner passes them in.
        """
        return {
            "markDeletePosition": str(self.mark_delete_position),
            "readPosition": str(self.read_position),
            "waitingReadOp": self.waiting_read_op,
            "pendingReadOps": 0,
            "messagesConsumedCounter": self.messages_consumed_counter,
            "cursorLedger": -1,
            "cursorLedgerLastEntry": -1,
            "individuallyDeletedMessages": self.individually_deleted_messages_string(),
            "lastLedgerSwitchTimestamp": format_timestamp(self.last_ledger_switch_timestamp),
            "state": self.state,
            "active": self.active,
            "numberOfEntriesSinceFirstNotAckedMessage": self.number_of_entries_since_first_not_acked(),
            "totalNonContiguousDeletedMessagesRange": self.individually_deleted_messages.size(),
            "subscriptionHavePendingRead": subscription_have_pending_read,
            "subscriptionHavePendingReplayRead": subscription_have_pending_replay_read,
            "properties": dict(self.properties),
        }

    def __repr__(self) -> str:
        return (
            f"ManagedCursor({self._ledger.name!r}/{self.name!r}, markDelete={self.mark_delete_position}, "
            f"read={self.read_position}, individuallyDeleted={self.individually_deleted_messages_string()})"
        )
