"""Key_Shared dispatch: each sticky-key hash goes to one consumer, in order.

Models `PersistentStickyKeyDispatcherMultipleConsumers` in its two forms
(docs/guide/key-shared-selectors.md#choosing-a-selector, docs/guide/key-shared-ordering.md#recently-joined-consumers):

* classic - branch-3.0, and 4.x with ``subscriptionKeySharedUseClassicPersistentImplementation=true``
  (`...Classic`): entries grouped by the selected consumer; per consumer ``min(entries, permits,
  maxUnacked - unacked)``, cut by `getRestrictedMaxEntriesForConsumer` (a Normal read whose hashes are in
  the replay set sends nothing; a recently joined consumer gets only entries before its join read
  position, the oldest join position for replays, until the mark-delete position passes it); the rest goes
  to the replay set; nothing sent and nobody recently joined means ``isDispatcherStuckOnReplays`` - the next
  read skips replays and looks ahead.
* PIP-379 - branch-4.0 default: `filterAndGroupEntriesForDispatching` walks entries in order; an entry is
  sent when its consumer has entry permits (``getAvailablePermits`` with the unacked-limit estimate), a
  Normal read finds no entry of its hash in the replay set, and the hash is not draining for another
  consumer; the first blocked hash blocks the rest of that hash in the read. Replays pass the same rules
  (`ReplayPositionFilter`). Consumer changes register draining hashes from the selector's impacted
  consumers (`DrainingHashesTracker`, `PendingAcksMap`); an unblocked hash or a mark-delete move reads
  again after ``keySharedUnblockingIntervalMs``. Look-ahead stops at the replay-set limit
  (``keySharedLookAheadMsgInReplayThresholdPerConsumer`` x consumers, capped per subscription).
* ``allowOutOfOrderDelivery``: the replay set does not track hashes, no recently-joined gating, no draining.
* Delayed delivery as on Shared (docs/guide/delayed-delivery.md#hold-back): due messages join the replay set without a
  sticky hash (the
  replay filter lets them through; they are grouped by their hash when read) and held entries leave a group.

Simplifies: as the Shared dispatcher (synchronous reads, no read backoff: a read that made no progress
waits for the next FLOW, ack, consumer change or unblock timer instead of polling).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from pulsarlab.broker.dispatch.draining import DrainingHashesTracker
from pulsarlab.broker.dispatch.shared import NORMAL, REPLAY, SharedDispatcher
from pulsarlab.broker.key_shared import make_selector
from pulsarlab.errors import ConsumerAssignException
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.managed_ledger.position import Position

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.key_shared.base import ImpactedConsumers, StickyKeyConsumerSelector
    from pulsarlab.broker.subscription import PersistentSubscription
    from pulsarlab.clock import Timer
    from pulsarlab.managed_ledger.cursor import Entry
    from pulsarlab.messages import EntryData, MessageMetadata

INT_MAX = 2**31 - 1


def _in_ranges(ranges: list[tuple[int, int]], h: int) -> bool:
    i = bisect_right(ranges, (h, INT_MAX + 1)) - 1
    return i >= 0 and ranges[i][0] <= h <= ranges[i][1]


@dataclass(frozen=True)
class HashBlock:
    """Why a Key_Shared hash waits (one of the ``hash_blocked`` reasons), the consumer it selects, and what
    holds it: the consumer still draining it (4.x) or the position the owner's entries must stay before
    (classic recently joined)."""

    reason: str
    consumer: "Consumer | None"
    draining_from: "Consumer | None" = None
    joined_at: Position | None = None


class KeySharedDispatcher(SharedDispatcher):
    """The Key_Shared dispatcher of one subscription, classic or PIP-379 by profile and broker.conf."""

    type_name = "Key_Shared"

    def __init__(
        self, subscription: "PersistentSubscription", key_shared_mode: str | None, allow_out_of_order_delivery: bool
    ) -> None:
        self.key_shared_mode = key_shared_mode
        self.allow_out_of_order_delivery = allow_out_of_order_delivery
        super().__init__(subscription, allow_out_of_order_delivery=allow_out_of_order_delivery)
        conf, profile = self.config, self.profile
        self.draining_required = (
            not self.classic and key_shared_mode == "AUTO_SPLIT" and not allow_out_of_order_delivery
        )
        self.selector: StickyKeyConsumerSelector[Consumer]
        if key_shared_mode == "STICKY":
            self.selector = make_selector("sticky", profile)
        elif key_shared_mode == "AUTO_SPLIT":
            impacted = self.draining_required if profile.is_4x else None
            if conf.flag("subscriptionKeySharedUseConsistentHashing"):
                kwargs: dict[str, int | bool | None] = {
                    "points": conf.integer("subscriptionKeySharedConsistentHashingReplicaPoints")
                }
                if profile.is_4x:
                    kwargs["return_impacted"] = impacted
                self.selector = make_selector("consistent_hashing", profile, **kwargs)
            else:
                kwargs = {"return_impacted": impacted} if profile.is_4x else {}
                self.selector = make_selector("auto_split", profile, **kwargs)
        else:
            raise ValueError(f"Invalid key-shared mode: {key_shared_mode}")
        self.draining = (
            DrainingHashesTracker(subscription.dispatcher_name, self._sticky_key_hash_unblocked, self._draining_event)
            if self.draining_required
            else None
        )
        # the draining tracker's hash -> entry map (read per sent entry by _handle_adding_pending_ack)
        self._draining_hashes = self.draining.draining_hashes if self.draining is not None else {}
        # classic: consumer -> read position when it joined (sorted by position), None with out-of-order
        self.recently_joined: dict["Consumer", Position] | None = (
            {} if self.classic and not allow_out_of_order_delivery else None
        )
        self.stuck_on_replays = False  # classic isDispatcherStuckOnReplays
        self.skip_next_replay = False  # 4.x skipNextReplayToTriggerLookAhead
        self._reschedule_timer: Timer | None = None
        self._key_range = self.selector.key_hash_range()
        self._hash_cache: dict[tuple[int, int], int] = {}  # (ledger, entry) -> sticky hash of a keyless entry
        # ordering key (bytes) | partition key (str) | (base64 partition key,) -> sticky hash (bounded)
        self._key_hash_memo: dict[bytes | str | tuple[str], int] = {}
        self._look_ahead_cache: tuple[int, int] = (-1, 0)  # (consumers, _effective_look_ahead_limit())
        self._replay_positions = self.redelivery_messages.position_hashes()  # len() is the replay set's size

    def _uses_classic(self) -> bool:
        return not self.profile.is_4x or self.config.flag("subscriptionKeySharedUseClassicPersistentImplementation")

    def has_same_key_shared_policy(self, mode: str | None, allow_out_of_order: bool) -> bool:
        return mode == self.key_shared_mode and allow_out_of_order == self.allow_out_of_order_delivery

    # --- hashes --------------------------------------------------------------------------------
    def sticky_key_hash(self, pos: Position, data: "EntryData") -> int:
        meta = data.metadata
        ordering_key = meta.ordering_key
        # keyed entries: the sticky key (and so its hash) is a pure function of the key, memoised per key
        # (an ordering key is bytes and a partition key str, so they never collide in one dict)
        memo_key: bytes | str | tuple[str]
        if ordering_key is None:
            partition_key = meta.partition_key
            if type(partition_key) is not str:
                return self._keyless_hash(pos, meta)
            memo_key = (partition_key,) if meta.partition_key_b64_encoded else partition_key
        elif type(ordering_key) is bytes:
            memo_key = ordering_key
        else:
            return self._keyless_hash(pos, meta)
        h = self._key_hash_memo.get(memo_key)
        if h is None:
            h = self.selector.make_sticky_key_hash(meta.sticky_key(self.profile))
            memo = self._key_hash_memo
            if len(memo) >= 4096:
                memo.clear()
            memo[memo_key] = h
        return h

    def _keyless_hash(self, pos: Position, meta: "MessageMetadata") -> int:
        """The hash of an entry without a plain key (4.x hashes producer name and sequence id), per position."""
        key = (pos.ledger_id, pos.entry_id)
        h = self._hash_cache.get(key)
        if h is None:
            h = self.selector.make_sticky_key_hash(meta.sticky_key(self.profile))
            if len(self._hash_cache) > 100_000:
                self._hash_cache.clear()
            self._hash_cache[key] = h
        return h

    # --- membership ----------------------------------------------------------------------------
    def add_consumer(self, consumer: "Consumer") -> None:
        super().add_consumer(consumer)
        try:
            impacted = self.selector.add_consumer(consumer)
        except ConsumerAssignException:
            self.consumer_list.remove(consumer)
            raise
        draining = self.draining  # made when draining is required
        pending = consumer.pending_acks
        if draining is not None and pending is not None:
            pending.add_handler = self._handle_adding_pending_ack
            pending.add_handler_hashes = self._draining_hashes  # it refuses only hashes that drain
            pending.remove_handler = draining.pending_ack_removed
            pending.start_batch = draining.start_batch
            pending.end_batch = draining.end_batch
            consumer.draining_stats = draining.consumer_stats
            if impacted is not None:
                self._register_draining_hashes(consumer, impacted)
        if self.classic:
            read_pos = self.cursor.read_position
            consumer.read_position_when_joining = str(read_pos)
            if (
                self.recently_joined is not None
                and len(self.consumer_list) > 1
                and self.cursor.number_of_entries_since_first_not_acked() > 1
            ):
                self.recently_joined[consumer] = read_pos
                self._sort_recently_joined()
                if self.events.enabled:
                    self.events.append_row(
                        ev.RECENTLY_JOINED, self.scheduler.now(), consumer.id, read_pos.ledger_id, read_pos.entry_id, 1
                    )

    def _sort_recently_joined(self) -> None:
        rj = self.recently_joined
        if rj is not None and len(rj) > 1:
            values = list(rj.values())
            if values[-2] > values[-1]:
                items = sorted(rj.items(), key=lambda kv: kv[1])
                rj.clear()
                rj.update(items)

    def _register_draining_hashes(self, skip: "Consumer", impacted: "ImpactedConsumers[Consumer]") -> None:
        draining = self.draining
        if draining is None:
            return
        for c, ranges in impacted.removed.items():
            if c is skip or c.pending_acks is None:
                continue
            for (l, e), (_bs, h) in c.pending_acks.items():
                if h != 0 and _in_ranges(ranges, h):
                    draining.add_entry(c, h)
        for c, ranges in impacted.added.items():
            if c is skip or c.pending_acks is None:
                continue
            for (l, e), (_bs, h) in c.pending_acks.items():
                if h != 0 and _in_ranges(ranges, h):
                    entry = draining.get_entry(h)
                    if entry is not None and entry.consumer is c:
                        draining.reduce_ref_count(c, h, False)

    def remove_consumer(self, consumer: "Consumer") -> None:
        impacted = self.selector.remove_consumer(consumer)
        super().remove_consumer(consumer)
        if self.draining is not None:
            if impacted is not None:
                self._register_draining_hashes(consumer, impacted)
            self.draining.consumer_removed(consumer)
        rj = self.recently_joined
        if rj is not None:
            if rj.pop(consumer, None) is not None and self.events.enabled:
                pos = Position.parse(str(consumer.read_position_when_joining))  # set when it joined
                self.events.append_row(
                    ev.RECENTLY_JOINED, self.scheduler.now(), consumer.id, pos.ledger_id, pos.entry_id, 0
                )
            if len(self.consumer_list) == 1:
                rj.clear()
            if self._remove_consumers_from_recently_joined() or not self.redelivery_messages.is_empty():
                self.read_more_entries()

    def _all_consumers_removed(self) -> None:
        if self.draining is not None:
            self.draining.clear()
        if self.recently_joined is not None:
            self.recently_joined.clear()

    def _handle_adding_pending_ack(self, consumer: "Consumer", ledger: int, entry: int, sticky_hash: int) -> bool:
        """`handleAddingPendingAck`: refuse (and replay) an entry whose hash another consumer is draining."""
        if self.draining is not None and self.draining.blocking_entry(consumer, sticky_hash) is not None:
            self.add_message_to_replay(ledger, entry, sticky_hash)
            self._hash_blocked(consumer, sticky_hash, ledger, entry, ev.REASON_DRAINING)
            return False
        return True

    # --- classic recently joined ---------------------------------------------------------------
    def _remove_consumers_from_recently_joined(self) -> bool:
        rj = self.recently_joined
        if not rj:
            return False
        md = self.cursor.mark_delete_position
        nxt = self.subscription.topic.ledger.next_valid_position(md)
        removed = False
        for c, pos in list(rj.items()):
            if pos <= nxt:
                del rj[c]
                removed = True
                if self.events.enabled:
                    self.events.append_row(
                        ev.RECENTLY_JOINED, self.scheduler.now(), c.id, pos.ledger_id, pos.entry_id, 0
                    )
            else:
                break
        return removed

    # --- 4.x unblocking ------------------------------------------------------------------------
    def _sticky_key_hash_unblocked(self, sticky_hash: int) -> None:
        self._reschedule_read()

    def _reschedule_read(self) -> None:
        if self._reschedule_timer is None and not self.closed:
            self._reschedule_timer = self.scheduler.call_later(
                self.config.integer("keySharedUnblockingIntervalMs"),
                self._rescheduled_read,
                "Key_Shared unblocking read",
            )

    def _rescheduled_read(self) -> None:
        self._reschedule_timer = None
        self.read_more_entries()

    def _draining_event(self, consumer: "Consumer", h: int, ref_count: int, added: bool) -> None:
        if self.events.enabled:
            self.events.append_row(ev.DRAINING_HASH, self.scheduler.now(), consumer.id, h, ref_count, int(added))

    def after_ack(self, mark_delete_moved: bool) -> None:
        if not mark_delete_moved:
            return
        if self.classic:
            if self.recently_joined and self._remove_consumers_from_recently_joined():
                self.read_more_entries()
        else:
            self._reschedule_read()

    def redelivery_keeps_hash(self) -> bool:
        return not self.classic

    # --- reading -------------------------------------------------------------------------------
    def _effective_look_ahead_limit(self) -> int:
        n = len(self.consumer_list.consumers)
        cached = self._look_ahead_cache
        if cached[0] == n:
            return cached[1]
        conf = self.config
        per_consumer = conf.integer("keySharedLookAheadMsgInReplayThresholdPerConsumer")
        per_sub = conf.integer("keySharedLookAheadMsgInReplayThresholdPerSubscription")
        if per_consumer <= 0:
            limit = per_sub
        else:
            limit = per_consumer * n
            if 0 < per_sub < limit:
                limit = per_sub
        if limit <= 0:
            max_sub = conf.integer("maxUnackedMessagesPerSubscription")
            if max_sub <= 0:
                max_sub = INT_MAX
            by_consumers = n * conf.integer("maxUnackedMessagesPerConsumer")
            if by_consumers <= 0:
                by_consumers = INT_MAX
            limit = min(max_sub, by_consumers)
        self._look_ahead_cache = (n, limit)  # a function of the consumer count (the settings are read once)
        return limit

    def _replay_below_limit(self) -> bool:
        cached = self._look_ahead_cache
        limit = cached[1] if cached[0] == len(self.consumer_list.consumers) else self._effective_look_ahead_limit()
        return len(self._replay_positions) < limit

    def ks_available_permits(self, c: "Consumer") -> int:
        """4.x `getAvailablePermits(consumer)`: permits capped by the unacked-limit estimate, in entries."""
        if not c.cnx_active:
            return 0
        permits = c.available_permits
        if permits <= 0:
            return 0
        max_unacked = c.max_unacked_messages
        if max_unacked > 0:
            extra = max_unacked - c.unacked_messages
            if extra <= 0:
                return 0
            avg = int(c.avg_messages_per_entry + 0.5)  # getAvgMessagesPerEntry
            if avg < 1:
                avg = 1
            by_unacked = (extra + avg - 1) // avg
            return by_unacked if by_unacked < permits else permits
        return permits

    def is_normal_read_allowed(self) -> bool:
        if self.classic:
            return True
        if self._replay_positions and not self._replay_below_limit():
            return False
        for c in self.consumer_list.consumers:
            # ks_available_permits(c) > 0 (its unacked estimate is >= 1 whenever an unacked message is left)
            if (
                not c.blocked
                and c.cnx_active
                and c.available_permits > 0
                and (c.max_unacked_messages <= 0 or c.unacked_messages < c.max_unacked_messages)
            ):
                return True
        return False

    def max_entries_read_limit(self) -> int:
        if self.classic:
            return self.read_batch_size
        cached = self._look_ahead_cache
        limit = cached[1] if cached[0] == len(self.consumer_list.consumers) else self._effective_look_ahead_limit()
        limit -= len(self._replay_positions)
        return limit if limit > 1 else 1

    def messages_to_replay_now(self, max_messages: int) -> list[tuple[int, int]]:
        if self.classic:
            if self.stuck_on_replays:
                self.stuck_on_replays = False
                return []
            if self.delayed.tracker is not None:
                self.delayed.release_due(max_messages, self.redelivery_messages)
            if not self._replay_positions:
                return []
            return self.redelivery_messages.messages_to_replay_now(max_messages)
        if self.delayed.tracker is not None:
            self.delayed.release_due(max_messages, self.redelivery_messages)
        if not self._replay_positions:
            return []
        if self.skip_next_replay:  # canReplayMessages
            self.skip_next_replay = False
            return []
        return self.redelivery_messages.messages_to_replay_now(max_messages, self._replay_filter())

    def _replay_filter(self) -> Callable[[tuple[int, int]], bool] | None:
        """`ReplayPositionFilter`: stateful for one call."""
        if self.allow_out_of_order_delivery:
            return None
        permits: dict[int, list[int]] = {}
        blocked: set[int] = set()
        controller = self.redelivery_messages
        select = self.selector.select

        def accept(pos: tuple[int, int]) -> bool:
            h = controller.hash_of(*pos)
            if h is None:
                return True
            if h in blocked:
                return False
            c = select(h)
            if c is None:
                blocked.add(h)
                return False
            slot = permits.get(c.id)
            if slot is None:
                slot = permits[c.id] = [self.ks_available_permits(c)]
            if slot[0] <= 0:
                blocked.add(h)
                return False
            if self.draining is not None and self.draining.should_block_sticky_key_hash(c, h):
                blocked.add(h)
                return False
            slot[0] -= 1
            return True

        return accept

    def _hash_blocked(self, consumer: "Consumer | None", h: int, ledger: int, entry: int, reason: str) -> None:
        events = self.events
        if events.enabled:
            events.append_row(
                ev.HASH_BLOCKED,
                self.scheduler.now(),
                consumer.id if consumer is not None else -1,
                h,
                ledger,
                entry,
                events.intern(reason),
            )

    # --- sending -------------------------------------------------------------------------------
    def try_send_messages_to_consumers(self, read_type: int, entries: list[Entry]) -> bool:
        if not self.consumer_list.consumers:
            self.subscription.rewind_cursor()
            return False
        if self.classic:
            return self._send_classic(read_type, entries)
        return self._send_pip379(read_type, entries)

    def _send_group(
        self, consumer: "Consumer", group: list[Entry], hashes: list[int], read_type: int
    ) -> tuple[int, int]:
        if read_type == REPLAY:
            remove = self.redelivery_messages.remove
            for pos, _ in group:
                remove(pos.ledger_id, pos.entry_id)
        if self.delayed.needed:
            group, hashes = self.delayed.filter_with_hashes(group, hashes)
        subscription = self.subscription
        ack_sets = subscription.batch_ack_sets(group) if subscription.batch_index_level else None
        sent_entries, msgs, acked = consumer.send_messages(group, hashes, self.redelivery_tracker, ack_sets)
        self.total_available_permits -= msgs - acked
        return sent_entries, msgs

    def _send_classic(self, read_type: int, entries: list[Entry]) -> bool:
        select = self.selector.select
        sticky_key_hash = self.sticky_key_hash
        groups: dict[int, tuple[Consumer, list[Entry], list[int]]] = {}  # consumer id -> (consumer, entries, hashes)
        for entry in entries:
            pos, data = entry
            h = sticky_key_hash(pos, data)
            c = select(h)
            if c is None:
                self.add_message_to_replay(pos.ledger_id, pos.entry_id, h)
                self._hash_blocked(None, h, pos.ledger_id, pos.entry_id, ev.REASON_NO_CONSUMER)
                continue
            group = groups.get(c.id)
            if group is None:
                groups[c.id] = (c, [entry], [h])
            else:
                group[1].append(entry)
                group[2].append(h)
        total_sent = 0
        for c, batch, hashes in groups.values():
            n = len(batch)
            permits = self.entry_permits(c)
            max_for_c = n if n < permits else permits
            count = self._restricted_max_entries(c, batch, max_for_c, read_type, hashes)
            if count == n:
                total_sent += self._send_group(c, batch, hashes, read_type)[1]
                continue
            if count > 0:
                _, msgs = self._send_group(c, batch[:count], hashes[:count], read_type)
                total_sent += msgs
            for i in range(count, n):
                pos = batch[i][0]
                self.add_message_to_replay(pos.ledger_id, pos.entry_id, hashes[i])
                if self.events.enabled:
                    self._hash_blocked(c, hashes[i], pos.ledger_id, pos.entry_id, self._last_cut_reason)
        if total_sent == 0 and not self.recently_joined:
            self.stuck_on_replays = True
            return True  # read again: a normal read looks ahead past the stuck keys
        return total_sent > 0

    def _restricted_max_entries(
        self, c: "Consumer", group: list[Entry], max_messages: int, read_type: int, hashes: list[int]
    ) -> int:
        """`getRestrictedMaxEntriesForConsumer` (classic)."""
        self._last_cut_reason = ev.REASON_NO_PERMITS
        if max_messages == 0:
            return 0
        if (
            read_type == NORMAL
            and self._replay_positions
            and any(self.redelivery_messages.contains_sticky_key_hash(h) for h in hashes)
        ):
            self._last_cut_reason = ev.REASON_REPLAY
            return 0
        rj = self.recently_joined
        if not rj:
            return max_messages
        self._remove_consumers_from_recently_joined()
        max_read = self.recently_joined_limit(c, read_type)
        if max_read is None:
            return max_messages
        self._last_cut_reason = ev.REASON_RECENTLY_JOINED
        for i in range(max_messages):
            if group[i][0] >= max_read:
                return i
        return max_messages

    def _send_pip379(self, read_type: int, entries: list[Entry]) -> bool:
        """`filterAndGroupEntriesForDispatching` + sending; True to read again (progress or look-ahead)."""
        select = self.selector.select
        sticky_key_hash = self.sticky_key_hash
        normal = read_type == NORMAL
        # the blocking checks are skipped while the replay set, or the draining hashes, are empty (an empty replay
        # set is below any look-ahead limit: the limit is at least 1)
        replay_positions = self._replay_positions
        look_ahead_allowed = not replay_positions or self._replay_below_limit()
        draining = self.draining
        draining_hashes = self._draining_hashes
        # consumer id -> entry permits left in this read; its keys are the consumers seen in the read
        permits_for: dict[int, int] = {}
        groups: dict[int, tuple[Consumer, list[Entry], list[int]]] = {}  # consumer id -> (consumer, entries, hashes)
        # made on first use (most reads block nothing): hashes blocked in this read, consumers blocked with permits
        already_blocked: set[int] | None = None
        blocked_with_permits: dict[int, Consumer] | None = None
        for entry in entries:
            pos, data = entry
            h = sticky_key_hash(pos, data)
            consumer = None
            if already_blocked is None or h not in already_blocked:
                consumer = select(h)
                reason = ev.REASON_NO_CONSUMER
                if consumer is not None:
                    cid = consumer.id
                    permits = permits_for.get(cid)
                    if permits is None:
                        permits = self.ks_available_permits(consumer)
                    reason = ev.REASON_NO_PERMITS
                    if permits > 0:
                        if normal and replay_positions and self.redelivery_messages.contains_sticky_key_hash(h):
                            reason = ev.REASON_REPLAY
                        elif (
                            draining_hashes
                            and draining is not None
                            and draining.should_block_sticky_key_hash(consumer, h)
                        ):
                            reason = ev.REASON_DRAINING
                        else:
                            permits_for[cid] = permits - 1
                            group = groups.get(cid)
                            if group is None:
                                groups[cid] = (consumer, [entry], [h])
                            else:
                                group[1].append(entry)
                                group[2].append(h)
                            continue
                        if look_ahead_allowed and normal:
                            if blocked_with_permits is None:
                                blocked_with_permits = {}
                            blocked_with_permits[cid] = consumer
                    permits_for[cid] = permits
            else:
                reason = "hash_already_blocked_in_this_read"
            if already_blocked is None:
                already_blocked = set()
            already_blocked.add(h)
            self.add_message_to_replay(pos.ledger_id, pos.entry_id, h)
            self._hash_blocked(consumer, h, pos.ledger_id, pos.entry_id, reason)
        if not groups:
            if look_ahead_allowed and self._look_ahead_useful(permits_for, blocked_with_permits if normal else None):
                self.skip_next_replay = True
                return True
            return False
        total_entries = 0
        for c, batch, hashes in groups.values():
            total_entries += self._send_group(c, batch, hashes, read_type)[0]
        return total_entries > 0

    def _look_ahead_useful(self, permits_for: dict[int, int], blocked_with_permits: dict[int, Consumer] | None) -> bool:
        """Nothing was sent: does a consumer still have permits for the entries after these (trigger look-ahead)?"""
        if blocked_with_permits:
            for cid in blocked_with_permits:
                if permits_for[cid] > 0:
                    return True
        for c in self.consumer_list.consumers:
            if c.id not in permits_for and self.ks_available_permits(c) > 0:
                return True
        return False

    # --- the rules, read-only: the dispatch paths and the snapshot's picture ask the same methods ----
    def entry_permits(self, c: "Consumer") -> int:
        """Entries ``c`` may be sent now: classic, its permits capped by its unacked room (the start of
        `getRestrictedMaxEntriesForConsumer`); 4.x, `getAvailablePermits(consumer)` (`ks_available_permits`)."""
        if not self.classic:
            return self.ks_available_permits(c)
        permits = c.available_permits
        if c.max_unacked_messages > 0:
            room = c.max_unacked_messages - c.unacked_messages
            if room < permits:
                permits = room
        return permits if permits > 0 else 0

    def recently_joined_limit(self, c: "Consumer", read_type: int) -> Position | None:
        """Classic: the position ``c``'s entries must stay before - its read position when it joined, or on a
        replay read the earliest recently joined consumer's if that is earlier; None when ``c`` is not limited."""
        rj = self.recently_joined
        if not rj:
            return None
        max_read = rj.get(c)
        if max_read is None:
            return None
        if read_type == REPLAY:
            first = next(iter(rj.values()))
            if first < max_read:
                max_read = first
        return max_read

    def blocked_hash_reason(self, sticky_hash: int, position: Position) -> HashBlock:
        """Why the replayed entry at ``position`` with ``sticky_hash`` waits, by the rules a replay read applies
        now, in their order (4.x `ReplayPositionFilter`: no consumer, no permits, draining; classic: no consumer,
        no permits, recently joined); `REASON_REPLAY` when none holds it back. Changes nothing (no blocked
        attempt counted, no draining entry or recently joined consumer removed)."""
        c = self.selector.select(sticky_hash)
        if c is None:
            return HashBlock(ev.REASON_NO_CONSUMER, None)
        if self.entry_permits(c) <= 0:
            return HashBlock(ev.REASON_NO_PERMITS, c)
        if self.classic:
            limit = self.recently_joined_limit(c, REPLAY)
            if limit is not None and position >= limit:
                return HashBlock(ev.REASON_RECENTLY_JOINED, c, joined_at=limit)
        elif self.draining is not None:
            entry = self.draining.blocking_entry(c, sticky_hash)
            if entry is not None:
                return HashBlock(ev.REASON_DRAINING, c, draining_from=entry.consumer)
        return HashBlock(ev.REASON_REPLAY, c)

    # --- stats ---------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        out = super().stats()
        out["allowOutOfOrderDelivery"] = self.allow_out_of_order_delivery
        out["keySharedMode"] = self.key_shared_mode
        if self.classic:
            out["consumersAfterMarkDeletePosition"] = {c.name: str(p) for c, p in (self.recently_joined or {}).items()}
        else:
            out["consumersAfterMarkDeletePosition"] = {}
        return out

    def consumer_stats(self, consumer: "Consumer") -> dict[str, Any]:
        """Key_Shared fields of one consumer's stats: hash ranges and (4.x) draining hashes."""
        ranges = self.selector.consumer_key_hash_ranges()
        mine = []
        for c, rs in ranges.items():
            if c is consumer or getattr(c, "id", None) == consumer.id:
                mine = list(rs)
                break
        out: dict[str, Any] = {}
        if self.classic:
            out["keyHashRanges"] = [f"[{s}, {e}]" for s, e in mine]
        else:
            out["keyHashRangeArrays"] = [[s, e] for s, e in mine]
            if self.draining is not None:
                out.update(self.draining.consumer_stats(consumer))
            else:
                out.update(
                    {
                        "drainingHashesCount": 0,
                        "drainingHashesClearedTotal": 0,
                        "drainingHashesUnackedMessages": 0,
                        "drainingHashes": [],
                    }
                )
        return out

    def close(self) -> None:
        super().close()
        if self._reschedule_timer is not None:
            self._reschedule_timer.cancel()
            self._reschedule_timer = None
