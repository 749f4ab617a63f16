"""Client ack grouping: hold a consumer's acks for a while and send them to the broker in a few commands.

Models `org.apache.pulsar.client.impl.PersistentAcknowledgmentsGroupingTracker` (with `LastCumulativeAck`
and the batch rules of `MessageIdAdvUtils`) and `NonPersistentAcknowledgmentGroupingTracker`, following
docs/guide/acknowledgements.md#ack-grouping (grouping, batch ack sets, duplicates, immediate cases, 3.x/4.0/4.1
defaults) and docs/guide/chunked-messages.md#reassembly (an
individual ack of a chunked message expands to every chunk id).

* Individual acks collect in ``pending_individual_acks`` (entry-level ids); reaching
  ``max_group_size`` flushes at once. A batch message's ack clears its bit in the entry's shared ack set
  (set bit = not yet acked). When the set empties, the entry-level ack is queued; otherwise, with
  ``batch_index_ack_enabled``, a batch-index ack cloned from the shared set is queued; otherwise nothing.
* A cumulative ack keeps only the highest id (ordered like `LastCumulativeAck.compareTo`: ledger, entry,
  then batch index with "no batch index" highest; the partition is ignored) and is sent at flush. A
  cumulative ack inside a batch that leaves bits set acks the previous entry ``(ledger, entry - 1)``, or
  with batch-index ack the entry with an ack set of bits ``[batch_index + 1, batch_size)``.
* Group time 0, or an ack with properties, is sent at once, alone; if the consumer is not connected
  that ack fails and is lost (Pulsar fails the future with ``ConnectException``) - it is not kept.
* ``flush`` while not connected keeps everything pending for a later flush.

The shared ack set: Pulsar keeps one `BitSet` per delivered batch, shared by that delivery's message
ids. Here it lives in the tracker, keyed by entry. The consumer should call ``new_ack_set`` when it
unpacks a batch entry (first delivery or redelivery), as `ConsumerImpl.receiveIndividualMessagesFromBatch`
builds a fresh all-set `BitSet`; without that call the set is created on the entry's first ack. A set is
dropped once it empties (so acking a message of a fully acked batch again starts a fresh set, where
Pulsar would re-send the entry ack - the broker ignores both), and sets of entries covered by the last
cumulative ack are pruned at flush when many pile up.

The flush timer: Pulsar starts a fixed-delay task at construction that runs every group time,
whether or not anything is pending. The model runs the same instants (construction time + k·group
time) but arms the timer only while something is pending and the consumer is connected, so an idle lab
(or one whose consumer the broker disconnected, as a reset-cursor does) can ``run_until_idle``: a flush that
finds nothing to send, or no connection, has no visible effect in Pulsar either. The consumer calls
``connection_opened`` when it has a connection again, and the next tick sends what waited. Simplifies: no transactions,
no ack receipts (``ackReceiptEnabled``; acks complete at once), no interceptors or stats, no list acks
(``addListAcknowledgment``: call ``add_acknowledgment`` per id), one multi-message command per flush
(brokers older than protocol v12 are not modelled); an id with a batch index but batch size 0 is
acked as its entry.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Callable, Iterable, Mapping

from pulsarlab.clock import Scheduler, Timer
from pulsarlab.errors import IllegalArgumentException, IllegalStateException
from pulsarlab.event_catalogue.ack_grouping import ACK_QUEUED, ACKS_FLUSHED, ACKS_LOST
from pulsarlab.events import EventLog, EventType
from pulsarlab.ids import EARLIEST, MessageId
from pulsarlab.profiles import Profile, get_profile
from pulsarlab.protocol.acks import AckCommand, AckType, ack_set_words

DEFAULT_ACK_GROUP_TIME_MS = 100  # acknowledgementsGroupTimeMicros = 100 ms
DEFAULT_MAX_ACK_GROUP_SIZE = 1000  # maxAcknowledgmentGroupSize (a constant before 3.0)

_NO_BATCH = 2**31 - 1  # LastCumulativeAck.compareTo ranks batch index -1 as Integer.MAX_VALUE
_LEDGER, _ENTRY, _PARTITION = itemgetter(0), itemgetter(1), itemgetter(2)


def _sorted_keys(keys: Iterable[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """``sorted(keys)`` for ``(ledger, entry, partition)`` keys: a stable sort per field, last field first, which
    compares ints where one tuple sort compares tuples (their equal ledgers first, then the entries)."""
    out = sorted(keys, key=_PARTITION)
    out.sort(key=_ENTRY)
    out.sort(key=_LEDGER)
    return out


_PRUNE_ACK_SETS_AT = 4096  # shared ack sets held before flush prunes the ones a cumulative ack covers

Key = tuple[int, int, int]  # (ledger, entry, partition): an entry-level id


_INDIVIDUAL = AckType.INDIVIDUAL
_CUMULATIVE = AckType.CUMULATIVE


# --- events ------------------------------------------------------------------------------------------

# Outcomes of one add_acknowledgment (the ``outcome`` field of ack_queued).
QUEUED = "queued"  # entry-level individual ack now pending
BATCH_INDEX_QUEUED = "batch_index_queued"  # a pending batch-index ack holds the cleared bit
BIT_CLEARED = "bit_cleared"  # only the shared ack set changed; nothing will be sent yet
CUMULATIVE_QUEUED = "cumulative_queued"  # the last cumulative ack moved forward
CUMULATIVE_STALE = "cumulative_stale"  # not above the last cumulative ack: ignored
IMMEDIATE = "immediate"  # sent at once (group time 0 or properties)
_QUEUED_STRINGS = (
    AckType.INDIVIDUAL.label,
    AckType.CUMULATIVE.label,
    QUEUED,
    BATCH_INDEX_QUEUED,
    BIT_CLEARED,
    CUMULATIVE_QUEUED,
    CUMULATIVE_STALE,
    IMMEDIATE,
)


def _require_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")


class AcknowledgmentsGroupingTracker:
    """One persistent-topic consumer's ack grouping tracker (`PersistentAcknowledgmentsGroupingTracker`).

    ``send`` receives each `AckCommand` as the consumer would write it to its connection;
    ``is_connected`` says whether the consumer has a connection (Pulsar's ``getClientCnx() != null``).
    With ``events``, every ack appends ``ack_queued`` (unless ``log_each_ack`` is False, for bulk runs
    whose consumer already logs each ack) and every send ``acks_flushed``; lost acks append ``acks_lost``.
    """

    def __init__(
        self,
        scheduler: Scheduler,
        send: Callable[[AckCommand], object],
        *,
        group_time_ms: int = DEFAULT_ACK_GROUP_TIME_MS,
        max_group_size: int = DEFAULT_MAX_ACK_GROUP_SIZE,
        batch_index_ack_enabled: bool = False,
        is_connected: Callable[[], bool] = lambda: True,
        events: EventLog | None = None,
        consumer_name: str = "",
        log_each_ack: bool = True,
    ) -> None:
        _require_int("group_time_ms", group_time_ms)
        _require_int("max_group_size", max_group_size)
        if group_time_ms < 0:
            raise IllegalArgumentException("acknowledgmentGroupTime needs to be >= 0")
        if max_group_size <= 0:
            raise IllegalArgumentException("acknowledgementsGroupSize needs to be > 0")
        self.group_time_ms = group_time_ms
        self.max_group_size = max_group_size
        self.batch_index_ack_enabled = bool(batch_index_ack_enabled)
        self.consumer_name = consumer_name
        self._scheduler = scheduler
        self._send = send
        self._is_connected = is_connected
        self._events = events
        self._log_each_ack = bool(log_each_ack)
        # EventLog.append_row (the log's fast path) takes pre-interned string ids
        self._append_row = getattr(events, "append_row", None) if events is not None else None
        if self._append_row is not None:
            intern = events.intern  # type: ignore[union-attr]
            self._sid = {text: intern(text) for text in _QUEUED_STRINGS}
            self._individual_sid = self._sid[AckType.INDIVIDUAL.label]
            self._cumulative_sid = self._sid[AckType.CUMULATIVE.label]
            self._consumer_sid = intern(consumer_name)
        self._grouping = group_time_ms > 0
        self._epoch = scheduler.now_ms  # the fixed-delay task's phase: it runs at epoch + k * group time
        self._timer: Timer | None = None
        self._closed = False
        self._pending: set[Key] = set()  # pendingIndividualAcks
        self._batch_pending: dict[Key, list[int]] = {}  # pendingIndividualBatchIndexAcks: key -> [mask, size]
        self._ack_sets: dict[Key, list[int]] = {}  # the shared per-delivery ack sets: key -> [mask, size]
        self._chunks: dict[Key, tuple[MessageId, ...]] = {}  # unAckedChunkedMessageIdSequenceMap
        self._cum_id: MessageId = EARLIEST
        self._cum_key: tuple[int, int, int] = (EARLIEST.ledger, EARLIEST.entry, _NO_BATCH)
        self._cum_words: tuple[int, ...] | None = None
        self._cum_flush_required = False
        self.lost_acks = 0  # ids never sent: immediate while disconnected, cleaned or abandoned while pending

    # --- Pulsar's API -------------------------------------------------------------------------------

    def add_acknowledgment(
        self,
        msg_id: MessageId,
        batch_size: int,
        ack_type: AckType,
        properties: Mapping[str, int] | None = None,
        *,
        chunk_ids: tuple[MessageId, ...] | None = None,
    ) -> None:
        """Record the application's ack of ``msg_id`` (``addAcknowledgment``).

        ``batch_size`` is the number of messages in the entry (0 or 1 for a message outside a batch).
        ``chunk_ids``, for a chunked message, are all its chunks' ids: an individual ack sends each.
        """
        ledger, entry, partition, batch_index = msg_id.ledger, msg_id.entry, msg_id.partition, msg_id.batch_index
        if ack_type is not _INDIVIDUAL and ack_type is not _CUMULATIVE:
            ack_type = _ack_type(ack_type)
        immediate = not self._grouping or bool(properties)
        key = (ledger, entry, partition)
        if batch_index < 0 or batch_size <= 0:  # not a batch message (MessageIdAdvUtils.isBatch)
            if ack_type is _INDIVIDUAL:
                if chunk_ids is not None and len(chunk_ids) > 1:
                    self._chunks[key] = tuple(chunk_ids)
                if properties:
                    self._individual(key, batch_index, True, properties)
                else:
                    self.add_entry_ack(ledger, entry, partition, batch_index)
            else:
                self._cumulative(
                    msg_id.discard_batch() if batch_index >= 0 else msg_id, None, immediate, properties, batch_index
                )
            return
        if ack_type is _INDIVIDUAL:
            self.add_batch_message_ack(ledger, entry, partition, batch_index, batch_size, properties)
            return
        if batch_index >= batch_size:
            raise IllegalArgumentException(
                f"batch index {batch_index} of {msg_id} is outside a batch of {batch_size} messages"
            )
        state = self._ack_sets.get(key)
        if state is None:
            state = self._ack_sets[key] = [(1 << batch_size) - 1, batch_size]
        state[0] &= ~((2 << batch_index) - 1)
        if not state[0]:
            del self._ack_sets[key]
            self._cumulative(msg_id.discard_batch(), None, immediate, properties, batch_index)
        elif self.batch_index_ack_enabled:
            if immediate:  # doImmediateBatchIndexAck: a copy of the shared set
                self._cumulative(msg_id, ack_set_words(state[0]), True, properties, batch_index)
            else:
                rest = ((1 << state[1]) - 1) & ~((2 << batch_index) - 1)
                self._cumulative(msg_id, ack_set_words(rest), False, properties, batch_index)
        else:  # MessageIdAdvUtils.prevMessageId
            self._cumulative(MessageId(ledger, entry - 1, partition), None, immediate, properties, batch_index)

    def add_batch_message_ack(
        self,
        ledger: int,
        entry: int,
        partition: int,
        batch_index: int,
        batch_size: int,
        properties: Mapping[str, int] | None = None,
    ) -> None:
        """`add_acknowledgment` of an individual ack of message ``batch_index`` (>= 0) of a batch of ``batch_size``
        (> 0) messages, its id given as ints (the consumer's ack of a batched message needs no `MessageId`)."""
        if batch_index >= batch_size:
            raise IllegalArgumentException(
                f"batch index {batch_index} of {ledger}:{entry}:{partition}:{batch_index} is outside a batch of "
                f"{batch_size} messages"
            )
        immediate = not self._grouping or bool(properties)
        key = (ledger, entry, partition)
        state = self._ack_sets.get(key)
        if state is None:
            state = self._ack_sets[key] = [(1 << batch_size) - 1, batch_size]
        state[0] &= ~(1 << batch_index)
        if not state[0]:
            del self._ack_sets[key]
            self._individual(key, batch_index, immediate, properties)
        elif self.batch_index_ack_enabled:
            self._individual_batch_index(key, batch_index, state, immediate, properties)
        else:
            append_row = self._append_row
            if append_row is not None and self._log_each_ack and self._events is not None and self._events.enabled:
                # `_log_queued(_INDIVIDUAL, key, batch_index, BIT_CLEARED)`, inlined (one call per message)
                append_row(
                    ACK_QUEUED,
                    self._scheduler.now_ms,
                    self._consumer_sid,
                    self._individual_sid,
                    ledger,
                    entry,
                    batch_index,
                    self._sid[BIT_CLEARED],
                )
            else:
                self._log_queued(_INDIVIDUAL, key, batch_index, BIT_CLEARED)

    def add_entry_ack(self, ledger: int, entry: int, partition: int, batch_index: int) -> None:
        """`add_acknowledgment` of an individual ack, without properties, of a message outside a batch (not a
        chunked one), its id given as ints: the consumer's common ack, which needs no `MessageId` object."""
        key = (ledger, entry, partition)
        immediate = not self._grouping
        if (
            immediate
            or not self._log_each_ack
            or self._append_row is None
            or not (self._events and self._events.enabled)
        ):
            self._individual(key, batch_index, immediate, None)
            return
        # `_individual(key, batch_index, False, None)` with its event logged by append_row, inlined (the
        # grouped individual ack of a message outside a batch, once per acked message)
        pending = self._pending
        pending.add(key)
        if self._batch_pending:
            self._batch_pending.pop(key, None)
        self._append_row(
            ACK_QUEUED,
            self._scheduler.now_ms,
            self._consumer_sid,
            self._individual_sid,
            ledger,
            entry,
            batch_index,
            self._sid[QUEUED],
        )
        if len(pending) >= self.max_group_size:
            self._flush("size")
        if self._timer is None and pending:
            self._arm()

    def new_ack_set(self, msg_id: MessageId, batch_size: int) -> None:
        """A batch entry was delivered (again): its messages now share a fresh ack set, every bit set."""
        _require_int("batch_size", batch_size)
        if batch_size > 0:
            self._ack_sets[(msg_id.ledger, msg_id.entry, msg_id.partition)] = [(1 << batch_size) - 1, batch_size]

    def is_duplicate(self, msg_id: MessageId) -> bool:
        """``isDuplicate``: covered by the last cumulative ack, pending, or its batch-index bit is cleared."""
        return self.is_duplicate_at(msg_id.ledger, msg_id.entry, msg_id.partition, msg_id.batch_index)

    def is_duplicate_at(self, ledger: int, entry: int, partition: int, batch_index: int) -> bool:
        """`is_duplicate` of the id ``ledger:entry:partition[:batch_index]`` given as ints."""
        cum_ledger, cum_entry, cum_batch = self._cum_key  # compared field by field: no key tuple to build
        if cum_ledger > ledger or (
            cum_ledger == ledger
            and (
                cum_entry > entry
                or (cum_entry == entry and cum_batch >= (batch_index if batch_index >= 0 else _NO_BATCH))
            )
        ):
            return True
        key = (ledger, entry, partition)
        if key in self._pending:
            return True
        if batch_index >= 0:
            state = self._batch_pending.get(key)
            return state is not None and not (state[0] >> batch_index) & 1
        return False

    def may_hold_duplicates(self, ledger: int, entry: int, partition: int) -> bool:
        """False when `is_duplicate` is False for every message of entry ``ledger:entry`` (batch or not):
        the last cumulative ack is before it and no individual or batch-index ack of it is pending."""
        if self._cum_key >= (ledger, entry, 0):
            return True
        key = (ledger, entry, partition)
        return key in self._pending or key in self._batch_pending

    def flush(self) -> None:
        """Send every pending ack now, if connected (the timer calls this every group time)."""
        self._flush("flush")

    def flush_and_clean(self) -> None:
        """``flushAndClean`` (seek, reconnect): flush, then forget the cumulative ack and pending individual acks."""
        self._flush("flush_and_clean")
        lost_individual = len(self._pending)
        lost_cum = self._cum_id if self._cum_flush_required else None
        self._pending.clear()
        self._chunks.clear()
        self._cum_id = EARLIEST
        self._cum_key = (EARLIEST.ledger, EARLIEST.entry, _NO_BATCH)
        self._cum_words = None
        self._cum_flush_required = False
        if lost_individual or lost_cum is not None:
            self._lost("flush_and_clean", lost_individual, 0, lost_cum)

    def connection_opened(self) -> None:
        """The consumer has a connection again (`ConsumerImpl.connectionOpened`): the flush timer runs again if
        acks wait, so they go out at the fixed-delay task's next tick."""
        if self._timer is None and (self._pending or self._batch_pending or self._cum_flush_required):
            self._arm()

    def close(self) -> None:
        """Flush, then stop the timer."""
        self._flush("close")
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def abandon(self) -> None:
        """The consumer's process died: pending acks are never sent and the timer stops."""
        lost_cum = self._cum_id if self._cum_flush_required else None
        individual, batch = len(self._pending), len(self._batch_pending)
        self._pending.clear()
        self._batch_pending.clear()
        self._chunks.clear()
        self._cum_flush_required = False
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if individual or batch or lost_cum is not None:
            self._lost("crash", individual, batch, lost_cum)

    # --- read-only views --------------------------------------------------------------------------

    @property
    def pending_individual_acks(self) -> tuple[MessageId, ...]:
        """Entry-level ids waiting for the next flush, in Pulsar's (sorted) order."""
        return tuple(MessageId(*k) for k in sorted(self._pending))

    @property
    def pending_batch_index_acks(self) -> dict[MessageId, int]:
        """Entry id -> ack-set mask (set bit = not yet acked) of the batch-index acks waiting to be sent."""
        return {MessageId(*k): s[0] for k, s in self._batch_pending.items()}

    @property
    def last_cumulative_ack(self) -> MessageId:
        """The highest cumulative ack so far (``MessageId.earliest`` when none)."""
        return self._cum_id

    @property
    def last_cumulative_ack_set(self) -> tuple[int, ...] | None:
        """The ack-set words sent with the last cumulative ack (a partially acked batch), else None."""
        return self._cum_words

    @property
    def cumulative_ack_flush_required(self) -> bool:
        return self._cum_flush_required

    def batch_ack_set(self, msg_id: MessageId) -> tuple[int, int] | None:
        """``(mask, batch_size)`` of an entry's shared ack set (set bit = not yet acked), if one is held."""
        state = self._ack_sets.get((msg_id.ledger, msg_id.entry, msg_id.partition))
        return (state[0], state[1]) if state is not None else None

    @property
    def next_flush_ms(self) -> int | None:
        """When the flush timer fires next (None when nothing is pending or grouping is off)."""
        return self._timer.deadline if self._timer is not None else None

    # --- internals ---------------------------------------------------------------------------------

    def _individual(self, key: Key, batch_index: int, immediate: bool, properties: Mapping[str, int] | None) -> None:
        if immediate:
            self._log_queued(AckType.INDIVIDUAL, key, batch_index, IMMEDIATE)
            chunks = self._chunks.pop(key, None)
            ids = tuple((c.ledger, c.entry, None) for c in chunks) if chunks else ((key[0], key[1], None),)
            self._send_now(AckCommand(AckType.INDIVIDUAL, ids, dict(properties or {})), len(ids), 0, None)
            return
        pending = self._pending
        pending.add(key)
        if self._batch_pending:
            self._batch_pending.pop(key, None)
        if self._log_each_ack:
            append_row = self._append_row
            if append_row is not None and self._events is not None and self._events.enabled:
                # `_log_queued(_INDIVIDUAL, key, batch_index, QUEUED)`, inlined (one call per acked message)
                append_row(
                    ACK_QUEUED,
                    self._scheduler.now_ms,
                    self._consumer_sid,
                    self._individual_sid,
                    key[0],
                    key[1],
                    batch_index,
                    self._sid[QUEUED],
                )
            else:
                self._log_queued(_INDIVIDUAL, key, batch_index, QUEUED)
        if len(pending) >= self.max_group_size:
            self._flush("size")
        if self._timer is None and pending:
            self._arm()

    def _individual_batch_index(
        self, key: Key, batch_index: int, state: list[int], immediate: bool, properties: Mapping[str, int] | None
    ) -> None:
        if immediate:
            self._log_queued(AckType.INDIVIDUAL, key, batch_index, IMMEDIATE)
            cmd = AckCommand(AckType.INDIVIDUAL, ((key[0], key[1], ack_set_words(state[0])),), dict(properties or {}))
            self._send_now(cmd, 0, 1, None)
            return
        pending = self._batch_pending.get(key)
        if pending is None:
            self._batch_pending[key] = [state[0], state[1]]
        else:
            pending[0] &= ~(1 << batch_index)
        self._log_queued(AckType.INDIVIDUAL, key, batch_index, BATCH_INDEX_QUEUED)
        if len(self._batch_pending) >= self.max_group_size:
            self._flush("size")
        if self._timer is None and self._batch_pending:
            self._arm()

    def _cumulative(
        self,
        target: MessageId,
        words: tuple[int, ...] | None,
        immediate: bool,
        properties: Mapping[str, int] | None,
        batch_index: int,
    ) -> None:
        key = (target.ledger, target.entry, target.partition)
        if immediate:  # doImmediateAck: sent as is; the last cumulative ack does not move
            self._log_queued(AckType.CUMULATIVE, key, batch_index, IMMEDIATE)
            cmd = AckCommand(AckType.CUMULATIVE, ((target.ledger, target.entry, words),), dict(properties or {}))
            self._send_now(cmd, 0, 0, target)
            return
        order = (target.ledger, target.entry, target.batch_index if target.batch_index >= 0 else _NO_BATCH)
        if order > self._cum_key:
            self._cum_id, self._cum_key, self._cum_words = target, order, words
            self._cum_flush_required = True
            self._log_queued(AckType.CUMULATIVE, key, batch_index, CUMULATIVE_QUEUED)
            if self._timer is None:
                self._arm()
        else:
            self._log_queued(AckType.CUMULATIVE, key, batch_index, CUMULATIVE_STALE)

    def _send_now(self, cmd: AckCommand, individual: int, batch: int, cumulative: MessageId | None) -> None:
        if not self._is_connected():
            self._lost("not_connected", individual, batch, cumulative)
            return
        self._send(cmd)
        self._log_flushed("immediate", individual, batch, cumulative)

    def _flush(self, reason: str) -> None:
        if not self._is_connected():
            return
        cumulative = None
        if self._cum_flush_required:
            self._cum_flush_required = False
            cumulative = self._cum_id
            self._chunks.pop((cumulative.ledger, cumulative.entry, cumulative.partition), None)
            self._send(AckCommand(AckType.CUMULATIVE, ((cumulative.ledger, cumulative.entry, self._cum_words),), {}))
        entries: list[tuple[int, int, tuple[int, ...] | None]] = []
        individual = 0
        if self._pending:
            keys = _sorted_keys(self._pending)
            self._pending.clear()
            chunks = self._chunks
            if chunks:
                for k in keys:
                    ids = chunks.pop(k, None)
                    if ids:
                        entries.extend((c.ledger, c.entry, None) for c in ids)
                    else:
                        entries.append((k[0], k[1], None))
            else:
                entries = [(k[0], k[1], None) for k in keys]
            individual = len(entries)
        batch = len(self._batch_pending)
        if batch:
            entries.extend((k[0], k[1], ack_set_words(s[0])) for k, s in self._batch_pending.items())
            self._batch_pending.clear()
        if entries:
            self._send(AckCommand(AckType.INDIVIDUAL, tuple(entries), {}))
        if cumulative is not None or entries:
            self._log_flushed(reason, individual, batch, cumulative)
        if len(self._ack_sets) > _PRUNE_ACK_SETS_AT:
            self._prune_ack_sets()

    def _prune_ack_sets(self) -> None:
        cum = self._cum_key
        covered = [k for k in self._ack_sets if (k[0], k[1], _NO_BATCH) <= cum]
        for k in covered:
            del self._ack_sets[k]

    def _arm(self) -> None:
        if self._closed or not self._grouping or not self._is_connected():
            return  # connection_opened arms it again
        g = self.group_time_ms
        now = self._scheduler.now_ms
        deadline = self._epoch + ((now - self._epoch) // g + 1) * g
        self._timer = self._scheduler.call_at(deadline, self._on_timer, "AcknowledgmentsGroupingTracker flush")

    def _on_timer(self) -> None:
        self._timer = None
        self._flush("timer")
        if self._pending or self._batch_pending or self._cum_flush_required:
            self._arm()

    def _log_queued(self, ack_type: AckType, key: Key, batch_index: int, outcome: str) -> None:
        events = self._events
        if events is None or not events.enabled or not self._log_each_ack:
            return
        append_row = self._append_row
        if append_row is not None:
            append_row(
                ACK_QUEUED,
                self._scheduler.now_ms,
                self._consumer_sid,
                self._individual_sid if ack_type is _INDIVIDUAL else self._cumulative_sid,
                key[0],
                key[1],
                batch_index,
                self._sid[outcome],
            )
        else:
            events.append(
                ACK_QUEUED,
                self._scheduler.now_ms,
                consumer=self.consumer_name,
                ack_type=ack_type.label,
                ledger=key[0],
                entry=key[1],
                batch_index=batch_index,
                outcome=outcome,
            )

    def _log_flushed(self, reason: str, individual: int, batch: int, cumulative: MessageId | None) -> None:
        self._log_ack_summary(ACKS_FLUSHED, reason, individual, batch, cumulative)

    def _lost(self, reason: str, individual: int, batch: int, cumulative: MessageId | None) -> None:
        self.lost_acks += individual + batch + (cumulative is not None)
        self._log_ack_summary(ACKS_LOST, reason, individual, batch, cumulative)

    def _log_ack_summary(
        self, kind: EventType, reason: str, individual: int, batch: int, cumulative: MessageId | None
    ) -> None:
        """One ``acks_flushed`` / ``acks_lost`` event (the two share their fields)."""
        events = self._events
        if events is None or not events.enabled:
            return
        append_row = self._append_row
        if append_row is not None:
            if cumulative is None:
                append_row(
                    kind, self._scheduler.now_ms, self._consumer_sid, events.intern(reason), individual, batch
                )  # the cumulative fields stay None
            else:
                append_row(
                    kind,
                    self._scheduler.now_ms,
                    self._consumer_sid,
                    events.intern(reason),
                    individual,
                    batch,
                    cumulative.ledger,
                    cumulative.entry,
                )
            return
        events.append(
            kind,
            self._scheduler.now_ms,
            consumer=self.consumer_name,
            reason=reason,
            individual=individual,
            batch_index=batch,
            cumulative_ledger=cumulative.ledger if cumulative is not None else None,
            cumulative_entry=cumulative.entry if cumulative is not None else None,
        )


PersistentAcknowledgmentsGroupingTracker = AcknowledgmentsGroupingTracker


class NonPersistentAcknowledgmentGroupingTracker:
    """`NonPersistentAcknowledgmentGroupingTracker`: a non-persistent topic's consumer acks nothing."""

    group_time_ms = 0
    max_group_size = DEFAULT_MAX_ACK_GROUP_SIZE
    batch_index_ack_enabled = False
    lost_acks = 0
    pending_individual_acks: tuple[MessageId, ...] = ()
    last_cumulative_ack = EARLIEST
    last_cumulative_ack_set = None
    cumulative_ack_flush_required = False
    next_flush_ms = None

    def add_acknowledgment(
        self,
        msg_id: MessageId,
        batch_size: int,
        ack_type: AckType,
        properties: Mapping[str, int] | None = None,
        *,
        chunk_ids: object = None,
    ) -> None:
        pass

    def add_entry_ack(self, ledger: int, entry: int, partition: int, batch_index: int) -> None:
        pass

    def add_batch_message_ack(
        self,
        ledger: int,
        entry: int,
        partition: int,
        batch_index: int,
        batch_size: int,
        properties: Mapping[str, int] | None = None,
    ) -> None:
        pass

    def new_ack_set(self, msg_id: MessageId, batch_size: int) -> None:
        pass

    def is_duplicate(self, msg_id: MessageId) -> bool:
        return False

    def is_duplicate_at(self, ledger: int, entry: int, partition: int, batch_index: int) -> bool:
        return False

    def flush(self) -> None:
        pass

    def flush_and_clean(self) -> None:
        pass

    def connection_opened(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abandon(self) -> None:
        pass

    @property
    def pending_batch_index_acks(self) -> dict[MessageId, int]:
        return {}

    def batch_ack_set(self, msg_id: MessageId) -> None:
        return None


def for_profile(
    profile: Profile | str | None,
    scheduler: Scheduler,
    send: Callable[[AckCommand], object],
    *,
    persistent: bool = True,
    batch_index_ack_enabled: bool | None = None,
    group_time_ms: int = DEFAULT_ACK_GROUP_TIME_MS,
    max_group_size: int = DEFAULT_MAX_ACK_GROUP_SIZE,
    is_connected: Callable[[], bool] = lambda: True,
    events: EventLog | None = None,
    consumer_name: str = "",
    log_each_ack: bool = True,
) -> AcknowledgmentsGroupingTracker | NonPersistentAcknowledgmentGroupingTracker:
    """The tracker a consumer of this Pulsar line builds: batch-index ack per the profile unless given (the other
    settings as `AcknowledgmentsGroupingTracker` takes them)."""
    if not persistent:
        return NonPersistentAcknowledgmentGroupingTracker()
    if batch_index_ack_enabled is None:
        batch_index_ack_enabled = get_profile(profile).batch_index_ack_enabled
    return AcknowledgmentsGroupingTracker(
        scheduler,
        send,
        group_time_ms=group_time_ms,
        max_group_size=max_group_size,
        batch_index_ack_enabled=batch_index_ack_enabled,
        is_connected=is_connected,
        events=events,
        consumer_name=consumer_name,
        log_each_ack=log_each_ack,
    )


def _ack_type(value: object) -> AckType:
    if isinstance(value, AckType):
        return value
    try:
        return AckType(value)
    except ValueError:
        raise IllegalStateException(f"Unknown AckType: {value}") from None
