"""Shared dispatch of chunked messages: every chunk of a uuid goes to the consumer that got its chunk 0.

Models `SharedConsumerAssignor` (PIP-37, #16202, 2.11.0 onwards) as released in 3.0 and 4.0, which
`PersistentDispatcherMultipleConsumers.sendChunkedMessagesToConsumers` calls for a read batch holding any
entry with a uuid (docs/guide/chunked-messages.md#chunk-count, docs/guide/subscription-types.md#shared-round-robin):

* A consumer is picked with the dispatcher's round robin (``default_selector``), skipping those whose
  permits (read once per ``assign`` call and then counted down locally) are used up; entries are given to it
  while its local count lasts, then the next one is picked.
* An entry without chunk metadata goes to the current consumer.
* A chunk of a pinned uuid goes to the pinned consumer; chunk 0 of an unpinned uuid pins it to the current
  consumer. The pin is dropped when the last chunk (``chunk_id == num_chunks_from_msg - 1``) is assigned.
* A non-first chunk of an unpinned uuid, or a chunk whose pinned consumer has no permits left, is not
  assigned: it goes to the replay set (``unassignedMessageProcessor``), as do the entries left when no
  consumer with permits remains. With no consumer with permits at all, 3.0/4.0 release every entry
  unassigned (``dropped``: the dispatcher re-reads them later).
* The released code's permit bookkeeping for a chunk sent to its pinned consumer writes the *current*
  consumer's count, minus one, into the pinned consumer's slot, and the current consumer's count drops too
  (PR #25620 describes how this can leave chunks stuck in replay). ``permit_tracking_fix=True`` follows
  that PR instead: the pinned consumer's own count drops, the current one's only when they are the same.

The mapping lives as long as the assignor (Pulsar's dispatcher keeps one per subscription); 3.0/4.0 never
drop a pin when its consumer leaves. The result lists consumers in first-assignment order (Pulsar's
``IdentityHashMap`` has no defined order). Later proposals (acking or dispatching orphan chunks, PR #25120,
#26396) are not modelled.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable, Generic, Sequence, TypeVar

from pulsarlab.messages import MessageMetadata

C = TypeVar("C")  # a dispatcher consumer (compared by identity, like Java's IdentityHashMap)
E = TypeVar("E")  # an entry (anything metadata_of can read)


class ReplayReason(enum.Enum):
    """Why an entry was not assigned in this round."""

    NOT_FIRST_CHUNK = "not_first_chunk"  # a chunk of a uuid nobody is pinned to, and not chunk 0
    PINNED_CONSUMER_FULL = "pinned_consumer_full"  # the pinned consumer has no permits left
    NO_CONSUMER = "no_consumer"  # every consumer ran out of permits before this entry

    @property
    def explanation(self) -> str:
        return _REPLAY_TEXT[self]


_REPLAY_TEXT = {
    ReplayReason.NOT_FIRST_CHUNK: "no consumer is pinned to its message and only chunk 0 may pin one",
    ReplayReason.PINNED_CONSUMER_FULL: "its message is pinned to a consumer with no permits left",
    ReplayReason.NO_CONSUMER: "no consumer has permits left in this read",
}


@dataclass
class AssignResult(Generic[C, E]):
    """The outcome of one `SharedConsumerAssignor.assign` call."""

    assigned: list[tuple[C, list[E]]] = field(default_factory=list)  # consumers in first-assignment order
    replay: list[tuple[E, ReplayReason]] = field(default_factory=list)  # for the replay set, in order
    dropped: list[E] = field(default_factory=list)  # released unassigned: no consumer with permits at all

    def entries_for(self, consumer: C) -> list[E]:
        for c, entries in self.assigned:
            if c is consumer:
                return entries
        return []


def _default_metadata_of(entry: object) -> MessageMetadata | None:
    return getattr(entry, "metadata", None)


class SharedConsumerAssignor(Generic[C, E]):
    """`SharedConsumerAssignor`: keeps the chunks of a uuid on one consumer of a Shared subscription."""

    def __init__(
        self,
        default_selector: Callable[[], C | None],
        permits_of: Callable[[C], int],
        *,
        metadata_of: Callable[[E], MessageMetadata | None] = _default_metadata_of,
        permit_tracking_fix: bool = False,
    ) -> None:
        self.default_selector = default_selector
        self.permits_of = permits_of
        self.metadata_of = metadata_of
        self.permit_tracking_fix = bool(permit_tracking_fix)
        self.uuid_to_consumer: dict[str, C] = {}
        self._permits: dict[int, tuple[C, int]] = {}  # consumerToPermits, by identity; cleared per call

    def pinned_consumer(self, uuid: str) -> C | None:
        return self.uuid_to_consumer.get(uuid)

    def _cached_permits(self, consumer: C) -> int:
        key = id(consumer)
        if key not in self._permits:
            self._permits[key] = (consumer, self.permits_of(consumer))
        return self._permits[key][1]

    def _set_permits(self, consumer: C, permits: int) -> None:
        self._permits[id(consumer)] = (consumer, permits)

    def _get_consumer(self, num_consumers: int) -> C | None:
        for _ in range(num_consumers):
            consumer = self.default_selector()
            if consumer is None:
                return None
            if self._cached_permits(consumer) > 0:
                return consumer
        return None

    def assign(self, entries: Sequence[E], num_consumers: int) -> AssignResult[C, E]:
        """Split a read batch among the consumers (``assign(entryAndMetadataList, numConsumers)``)."""
        if num_consumers < 0:
            raise ValueError(f"num_consumers must be >= 0, got {num_consumers}")
        self._permits.clear()
        result: AssignResult[C, E] = AssignResult()
        slots: dict[int, list[E]] = {}

        def give(consumer: C, entry: E) -> None:
            bucket = slots.get(id(consumer))
            if bucket is None:
                bucket = slots[id(consumer)] = []
                result.assigned.append((consumer, bucket))
            bucket.append(entry)

        consumer = self._get_consumer(num_consumers)
        if consumer is None:
            result.dropped.extend(entries)
            return result
        available = self._cached_permits(consumer)
        index = 0
        while index < len(entries):
            entry = entries[index]
            if available <= 0:
                self._set_permits(consumer, available)
                next_consumer = self._get_consumer(num_consumers)
                if next_consumer is None:
                    break
                consumer = next_consumer
                available = self.permits_of(consumer)  # a fresh read, as the released code does
            metadata = self.metadata_of(entry)
            if (
                metadata is None
                or metadata.uuid is None
                or metadata.chunk_id is None
                or metadata.num_chunks_from_msg is None
            ):
                give(consumer, entry)
                available -= 1
            else:
                target, reason = self._consumer_for_uuid(metadata, consumer, available)
                if target is None:
                    assert reason is not None
                    result.replay.append((entry, reason))
                    index += 1
                    continue
                give(target, entry)
                if not self.permit_tracking_fix or target is consumer:
                    available -= 1
            index += 1
        result.replay.extend((e, ReplayReason.NO_CONSUMER) for e in entries[index:])
        return result

    def _consumer_for_uuid(
        self, metadata: MessageMetadata, default: C, current_available: int
    ) -> tuple[C | None, ReplayReason | None]:
        uuid = metadata.uuid
        assert uuid is not None and metadata.chunk_id is not None and metadata.num_chunks_from_msg is not None
        consumer = self.uuid_to_consumer.get(uuid)
        if consumer is None:
            if metadata.chunk_id != 0:
                return None, ReplayReason.NOT_FIRST_CHUNK
            consumer = default
            self.uuid_to_consumer[uuid] = consumer
        permits = self._cached_permits(consumer)
        if permits <= 0:
            return None, ReplayReason.PINNED_CONSUMER_FULL
        if metadata.chunk_id == metadata.num_chunks_from_msg - 1:
            del self.uuid_to_consumer[uuid]
        self._set_permits(consumer, permits - 1 if self.permit_tracking_fix else current_available - 1)
        return consumer, None
