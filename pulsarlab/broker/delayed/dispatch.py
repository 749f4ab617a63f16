"""A Shared / Key_Shared dispatcher's delayed delivery: hold delayed entries back, put due ones in the replay set.

Models the delayed-delivery parts of `PersistentDispatcherMultipleConsumers` (3.0, 4.0;
docs/guide/delayed-delivery.md#hold-back):

* ``trackDelayedDelivery`` (called from `filterEntriesForConsumer` for every entry about to be sent, read or
  replayed): with ``delayedDeliveryEnabled=false`` nothing is held; otherwise the tracker is built by the broker's
  factory the first time an entry with a ``deliverAt`` time comes by, and from then on every entry goes through
  ``addMessage`` (entries without a time as ``-1``, which is never held but ends the fixed-delay pause). A held
  entry is not sent.
* ``getMessagesToReplayNow``: first the tracker's due positions (``getScheduledMessages(n)``) join the replay set,
  **without a sticky hash** (so on Key_Shared they do not block their key and are filtered when dispatched).
* ``shouldPauseDeliveryForDelayTracker``: the fixed-delay look-ahead pauses every read
  (docs/guide/delayed-delivery.md#in-memory-tracker).
* 4.1 (time-bucketed in-memory tracker): a position released from its rounded-down bucket while its own
  deliverAt is still after the cutoff is held again when its replay is sent; Pulsar's dispatcher then reads
  again and again until it is due (master rounds up in strict mode, #25996). The model stands for that loop with
  one read at the first instant the position passes the cutoff.
* A normal read with the bucket tracker skips entries the tracker already holds (``asyncReadEntriesWithSkipOrWait``
  with ``containsMessage``), e.g. what recovered buckets hold after a restart.
* ``addConsumer`` to an empty dispatcher rewinds the cursor and clears an in-memory tracker (its entries are read
  again); a bucket tracker is kept, "otherwise we will lose the bucket snapshot".
* Stats: ``msgDelayed`` (``getNumberOfDelayedMessages``), ``delayedMessageIndexSizeInBytes``
  (``getBufferMemoryUsage``) and ``bucketDelayedIndexStats`` (the bucket tracker's three gauges).

Simplifies: the tick is the broker's ``delayedDeliveryTickTimeMillis`` (no topic policy); ``bucketDelayedIndexStats``
leaves out the operation counters and latencies (wall-clock metrics).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pulsarlab.broker.delayed.factory import buffer_memory_usage, tracker_kind
from pulsarlab.broker.delayed.tracker_names import DELAYED_BUCKET_KEY_PREFIX, is_bucket_tracker
from pulsarlab.errors import PulsarError
from pulsarlab.event_catalogue.delayed import (
    DELAYED_PAUSED,
    DELAYED_RELEASED,
    DELAYED_REQUEUED,
    DELAYED_TRACKED,
    DELAYED_TRACKER_CREATED,
)

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker
    from pulsarlab.broker.dispatch.shared import SharedDispatcher
    from pulsarlab.broker.redelivery import MessageRedeliveryController
    from pulsarlab.clock import Timer
    from pulsarlab.managed_ledger.cursor import Entry


BUCKET_TOTAL = "pulsar_delayed_message_index_bucket_total"
INDEX_LOADED = "pulsar_delayed_message_index_loaded"
SNAPSHOT_SIZE_BYTES = "pulsar_delayed_message_index_bucket_snapshot_size_bytes"


class DelayedDelivery:
    """The dispatcher's ``delayedDeliveryTracker`` (built on first use) and the dispatcher code around it."""

    __slots__ = (
        "tracker",
        "_dispatcher",
        "_sub",
        "_factory",
        "_enabled",
        "_tick",
        "_strict",
        "_events",
        "_clock",
        "_paused",
        "_just_released",
        "_requeue_timers",
    )

    def __init__(self, dispatcher: "SharedDispatcher") -> None:
        sub = dispatcher.subscription
        svc = sub.topic.service
        self.tracker: InMemoryDelayedDeliveryTracker | None = None
        self._dispatcher = dispatcher
        self._sub = sub
        self._factory = svc.delayed_tracker_factory
        settings = self._factory.settings
        self._enabled = settings.enabled
        self._tick = settings.tick_time_millis
        self._strict = settings.deliver_at_time_strict
        self._events = svc.events
        self._clock = svc.scheduler
        self._paused = False
        self._just_released: set[tuple[int, int]] = set()
        self._requeue_timers: dict[int, Timer] = {}  # read time -> scheduler timer

    @property
    def needed(self) -> bool:
        """Whether sending must look at delays: a tracker exists, or the topic ever stored a delayed message."""
        return self.tracker is not None or self._sub.topic.delayed_messages_published

    # --- holding back ----------------------------------------------------------------------------
    def track(self, ledger: int, entry: int, deliver_at: int | None) -> bool:
        """``trackDelayedDelivery``: True when the tracker holds the entry back (it must not be sent now)."""
        if not self._enabled:
            return False
        tracker = self.tracker
        if tracker is None:
            if deliver_at is None:
                return False
            tracker = self._create()
        tracker.reset_tick_time(self._tick)
        held = tracker.add_message(ledger, entry, -1 if deliver_at is None else deliver_at)
        if deliver_at is not None:
            events = self._events
            if events.enabled:
                events.append_row(
                    DELAYED_TRACKED, self._clock.now(), self._sub.id, ledger, entry, deliver_at, int(held)
                )
            if held and self._just_released and (ledger, entry) in self._just_released:
                self._requeued(ledger, entry, deliver_at)
        return held

    def _requeued(self, ledger: int, entry: int, deliver_at: int) -> None:
        until = deliver_at if self._strict else deliver_at - self._tick
        if until not in self._requeue_timers:
            self._requeue_timers[until] = self._clock.call_at(
                until, lambda: self._read_again(until), "dispatcher re-reads a requeued delayed entry"
            )
        if self._events.enabled:
            self._events.append_row(DELAYED_REQUEUED, self._clock.now(), self._sub.id, ledger, entry, deliver_at, until)

    def _read_again(self, until: int) -> None:
        self._requeue_timers.pop(until, None)
        self._dispatcher.read_more_entries()

    def _held(self, item: Entry) -> bool:
        pos, data = item
        deliver_at = data.metadata.deliver_at_time
        if deliver_at is None and self.tracker is None:
            return False
        return self.track(pos.ledger_id, pos.entry_id, deliver_at)

    def filter(self, entries: list[Entry]) -> list[Entry]:
        """The entries of ``entries`` (``(Position, EntryData)``) that are not held back, in order."""
        held = self._held
        kept: list[Entry] | None = None
        for i, item in enumerate(entries):
            if held(item):
                if kept is None:
                    kept = entries[:i]
            elif kept is not None:
                kept.append(item)
        return entries if kept is None else kept

    def filter_with_hashes(self, entries: list[Entry], hashes: list[int]) -> tuple[list[Entry], list[int]]:
        """`filter` for a Key_Shared group and its sticky hashes (kept in step)."""
        held = [self._held(item) for item in entries]
        if not any(held):
            return entries, hashes
        return ([item for item, h in zip(entries, held) if not h], [x for x, h in zip(hashes, held) if not h])

    def skip_held(self, entries: list[Entry]) -> list[Entry]:
        """A normal read's skip condition: drop entries the bucket tracker already holds."""
        tracker = self.tracker
        if not is_bucket_tracker(tracker):
            return entries
        contains = tracker.contains_message
        return [item for item in entries if not contains(item[0].ledger_id, item[0].entry_id)]

    # --- releasing -----------------------------------------------------------------------------
    def release_due(self, max_messages: int, replay: "MessageRedeliveryController") -> int:
        """Move up to ``max_messages`` due positions into the replay set (no sticky hash); returns how many."""
        tracker = self.tracker
        if tracker is None or max_messages <= 0 or not tracker.has_message_available():
            return 0
        tracker.reset_tick_time(self._tick)
        due = tracker.get_scheduled_messages(max_messages)
        events = self._events
        log = events.enabled
        now = self._clock.now()
        n = len(due)
        self._just_released = set(due)
        for ledger, entry in due:
            replay.add_unhashed(ledger, entry)
            if log:
                events.append_row(DELAYED_RELEASED, now, self._sub.id, ledger, entry, n)
        return n

    def should_pause(self) -> bool:
        """``shouldPauseDeliveryForDelayTracker``."""
        tracker = self.tracker
        paused = tracker is not None and tracker.should_pause_all_deliveries()
        if paused != self._paused:
            self._paused = paused
            if self._events.enabled:
                self._events.append_row(
                    DELAYED_PAUSED,
                    self._clock.now(),
                    self._sub.id,
                    int(paused),
                    tracker.number_of_delayed_messages() if tracker is not None else 0,
                )
        return paused

    # --- lifecycle -----------------------------------------------------------------------------
    def on_first_consumer(self) -> None:
        """``addConsumer`` on an empty dispatcher: the cursor rewinds, an in-memory tracker is cleared."""
        tracker = self.tracker
        if tracker is not None and not is_bucket_tracker(tracker):
            tracker.clear()

    def clear(self) -> None:
        """``clearDelayedMessages`` (the subscription is deleted): drop what is held, stored buckets included."""
        if not self._enabled:
            return
        if self.tracker is not None:
            self.tracker.clear()
            return
        if self._factory.settings.uses_buckets:  # cleanResidualSnapshots(cursor)
            props = self._sub.cursor.cursor_properties
            for key in [k for k in props if k.startswith(DELAYED_BUCKET_KEY_PREFIX)]:
                try:
                    bucket_id = int(props[key])
                except ValueError:
                    bucket_id = None
                if bucket_id is not None:
                    try:
                        self._factory.storage.delete_bucket_snapshot(bucket_id)
                    except PulsarError:
                        continue  # Pulsar logs it; the property stays for the next attempt
                del props[key]

    def close(self) -> None:
        """The dispatcher closes (unsubscribe, type change, broker restart): the tracker stops its timer."""
        for timer in self._requeue_timers.values():
            timer.cancel()
        self._requeue_timers.clear()
        if self.tracker is not None:
            self.tracker.close()
            self.tracker = None

    # --- stats ---------------------------------------------------------------------------------
    def number_of_delayed_messages(self) -> int:
        return self.tracker.number_of_delayed_messages() if self.tracker is not None else 0

    def stats(self) -> dict[str, Any]:
        """``msgDelayed``, ``delayedMessageIndexSizeInBytes`` and ``bucketDelayedIndexStats`` of the subscription."""
        tracker = self.tracker
        if tracker is None:
            return {"msgDelayed": 0, "delayedMessageIndexSizeInBytes": 0, "bucketDelayedIndexStats": {}}
        return {
            "msgDelayed": tracker.number_of_delayed_messages(),
            "delayedMessageIndexSizeInBytes": buffer_memory_usage(tracker),
            "bucketDelayedIndexStats": bucket_index_stats(tracker),
        }

    def _create(self) -> "InMemoryDelayedDeliveryTracker":
        d = self._dispatcher
        tracker = self.tracker = self._factory.new_tracker(
            self._sub.dispatcher_name, d.read_more_entries, self._sub.cursor.cursor_properties
        )
        if self._events.enabled:
            self._events.append(
                DELAYED_TRACKER_CREATED,
                self._clock.now(),
                subscription=self._sub.id,
                tracker=tracker_kind(tracker),
                factory=self._factory.class_name.rsplit(".", 1)[-1],
            )
        return tracker


def bucket_index_stats(tracker: Any) -> dict[str, dict[str, Any]]:
    """``genTopicMetricMap()``'s gauges as `TopicMetricBean` JSON; ``{}`` for an in-memory tracker."""
    if not is_bucket_tracker(tracker):
        return {}
    values = {
        BUCKET_TOTAL: tracker.bucket_count() + 1,
        INDEX_LOADED: tracker.shared_queue_size() + tracker.mutable_bucket.size(),
        SNAPSHOT_SIZE_BYTES: tracker.snapshot_length_bytes(),
    }
    return {name: {"name": name, "value": float(v), "labelsAndValues": None} for name, v in values.items()}
