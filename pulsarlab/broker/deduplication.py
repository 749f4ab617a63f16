"""Message deduplication on a topic: the highest sequence id stored per producer name.

Models `MessageDeduplication` (enabled by the namespace's ``deduplicationEnabled`` policy, else the broker's
``brokerDeduplicationEnabled``): a message whose sequence id is not above the highest one already stored for its
producer name is a duplicate, is not stored, and is acknowledged with message id ``-1:-1``
(`PersistentTopic.publishMessage`, ``MessageDupStatus.Dup``); a batch counts with its highest sequence id. A
producer connecting with a name the topic has seen learns that name's highest id in PRODUCER_SUCCESS
(``last_sequence_id``), so the client continues the sequence. A chunked message is recorded at its last chunk.

Simplifies: persisting is synchronous in the model, so "pushed" and "persisted" are the same map (no
``MessageDupUnknownException``); the map survives a broker restart (Pulsar recovers it from its snapshot cursor)
and is never purged for inactive producers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulsarlab.managed_ledger.position import Position

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.messages import MessageMetadata

DUPLICATE = Position(-1, -1)  # the message id a duplicate's SEND_RECEIPT carries


class MessageDeduplication:
    """The sequence ids of one topic's producers (kept while deduplication is enabled)."""

    __slots__ = ("highest",)

    def __init__(self) -> None:
        self.highest: dict[str, int] = {}

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
