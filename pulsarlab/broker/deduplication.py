"""Message deduplication on a topic: the highest sequence id stored per producer name.

Models `MessageDeduplication` (enabled by the namespace's ``deduplicationEnabled`` policy, else the broker's
``brokerDeduplicationEnabled``): a message whose sequence id is not above the highest one already stored for its
producer name is a duplicate, is not stored, and is acknowledged with message id ``-1:-1``
(`PersistentTopic.publishMessage`, ``MessageDupStatus.Dup``); a batch counts with its highest sequence id. A
producer connecting with a name the topic has seen learns that name's highest id in PRODUCER_SUCCESS
(``last_sequence_id``), so the client continues the sequence. A chunked message is recorded at its last chunk.

A name whose last producer left more than ``brokerDeduplicationProducerInactivityTimeoutMinutes`` (360) ago is
forgotten (`purgeInactiveProducers`) at the broker's check, which runs every third of that time
(`BrokerService.checkMessageDeduplicationInfo`); the model runs the checks that are due when a producer comes or
goes, the only times the map is read for a name without a producer, on the grid of the checks from time 0.

Simplifies: persisting is synchronous in the model, so "pushed" and "persisted" are the same map (no
``MessageDupUnknownException``); the map survives a broker restart (Pulsar recovers it from its snapshot cursor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulsarlab.managed_ledger.position import Position

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.messages import MessageMetadata

DUPLICATE = Position(-1, -1)  # the message id a duplicate's SEND_RECEIPT carries
INACTIVITY_TIMEOUT_MINUTES = 360  # brokerDeduplicationProducerInactivityTimeoutMinutes


class MessageDeduplication:
    """The sequence ids of one topic's producers (kept while deduplication is enabled)."""

    __slots__ = ("highest", "_inactive", "_timeout_ms")

    def __init__(self, inactivity_timeout_minutes: int = INACTIVITY_TIMEOUT_MINUTES) -> None:
        self.highest: dict[str, int] = {}
        self._inactive: dict[str, int] = {}  # inactiveProducers: name -> when its producer left, oldest first
        self._timeout_ms = inactivity_timeout_minutes * 60_000

    def producer_added(self, producer_name: str, now: int) -> None:
        """`producerAdded`: the name is active again (the checks due by now ran first)."""
        self.purge_inactive(now)
        self._inactive.pop(producer_name, None)

    def producer_removed(self, producer_name: str, now: int) -> None:
        """`producerRemoved`: the name's producer left at ``now``."""
        self.purge_inactive(now)
        self._inactive.pop(producer_name, None)  # re-inserted last: the map stays in leaving order
        self._inactive[producer_name] = now

    def purge_inactive(self, now: int) -> None:
        """`purgeInactiveProducers` as the last periodic check at or before ``now`` ran it."""
        if self._timeout_ms <= 0 or not self._inactive:
            return
        every = max(self._timeout_ms // 3, 1)
        horizon = now // every * every - self._timeout_ms  # the last check's minimumActiveTimestamp
        expired = []
        for name, left_at in self._inactive.items():
            if left_at >= horizon:
                break
            expired.append(name)
        for name in expired:
            del self._inactive[name]
            self.highest.pop(name, None)

    def is_duplicate(self, producer_name: str, meta: "MessageMetadata", highest_sequence_id: int | None) -> bool:
        """`isDuplicate` + `recordMessagePersisted`: True for a duplicate; else the message's highest sequence
        id is recorded (a chunk that is not the last one is checked but not recorded)."""
        sequence_id = meta.sequence_id
        last = self.highest.get(producer_name)
        if last is not None and sequence_id <= last:
            return True
        if meta.uuid is not None and meta.chunk_id is not None and meta.chunk_id + 1 < (meta.num_chunks_from_msg or 0):
            return False
        if highest_sequence_id is None:
            highest_sequence_id = meta.highest_sequence_id
        self.highest[producer_name] = (
            sequence_id if highest_sequence_id is None else max(sequence_id, highest_sequence_id)
        )
        return False

    def last_published(self, producer_name: str) -> int:
        """`getLastPublishedSequenceId`: -1 for a name never seen."""
        return self.highest.get(producer_name, -1)


__all__ = ["DUPLICATE", "MessageDeduplication"]
