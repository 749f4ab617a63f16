"""What the chunk views read: each entry's chunk fields, and a consumer's chunk reassembly state.

Models no Pulsar class. It copies, for `pulsarlab.snapshot.lab`, the chunk metadata of stored entries
(``uuid``, ``chunk_id``, ``num_chunks_from_msg``, docs/guide/chunked-messages.md#chunk-count) and the state of one
client consumer's
`pulsarlab.client.chunk_reassembly.ChunkedMessageTracker` (``chunkedMessagesMap``, the pending uuid queue,
the pending count and its limit, the expiry task) into frozen dataclasses of ints, strings and tuples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pulsarlab.snapshot.base import Pos

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.messages import EntryData


@dataclass(frozen=True)
class ChunkInfo:
    """The chunk fields of one stored entry."""

    uuid: str
    chunk_id: int
    num_chunks: int
    producer: str
    total_size: int


@dataclass(frozen=True)
class PendingChunkedSnap:
    """One incomplete chunked message in a consumer's ``chunkedMessagesMap``."""

    uuid: str
    total_chunks: int
    chunk_positions: tuple[Pos | None, ...]  # by chunk id: where each stored chunk came from
    last_chunk_id: int
    bytes: int
    total_chunk_msg_size: int
    received_time: int  # when its chunk 0 arrived (the expiry counts from here)

    @property
    def stored(self) -> int:
        return sum(1 for p in self.chunk_positions if p is not None)


@dataclass(frozen=True)
class ChunkTrackerSnap:
    """A consumer's chunk state: the pending map in insertion order, the uuid queue (completed and dropped
    uuids stay in it, as in Java), the pending count against ``max_pending_chunked_message``, the expiry."""

    pending: tuple[PendingChunkedSnap, ...]
    uuid_queue: tuple[str, ...]
    pending_count: int
    max_pending: int
    auto_ack_oldest: bool
    expire_time_ms: int
    next_expiry_check: int | None
    unacked_chunked_messages: int  # assembled, handed to the application, not acknowledged yet


def chunk_info(data: "EntryData") -> ChunkInfo | None:
    """The chunk fields of an entry's `EntryData`, or None for an entry that is not a chunk."""
    meta = data.metadata
    if meta.uuid is None or not meta.is_chunk:
        return None
    return ChunkInfo(
        meta.uuid,
        meta.chunk_id,
        meta.num_chunks_from_msg,
        meta.producer_name,
        meta.total_chunk_msg_size if meta.total_chunk_msg_size is not None else 0,
    )


def chunk_tracker_snap(cnx: Any) -> ChunkTrackerSnap | None:
    """The chunk state of a model client consumer (the client's `PartitionConsumer`); None before its first
    chunk."""
    tracker = getattr(cnx, "chunk_tracker", None)
    if tracker is None:
        return None
    pending = tuple(
        PendingChunkedSnap(
            uuid=uuid,
            total_chunks=ctx.total_chunks,
            chunk_positions=tuple(None if i is None else (i.ledger, i.entry) for i in ctx.chunk_ids),
            last_chunk_id=ctx.last_chunk_id,
            bytes=len(ctx.buffer),
            total_chunk_msg_size=ctx.total_chunk_msg_size,
            received_time=ctx.received_time,
        )
        for uuid, ctx in tracker.chunked_messages.items()
    )
    return ChunkTrackerSnap(
        pending=pending,
        uuid_queue=tuple(tracker.pending_uuid_queue),
        pending_count=tracker.pending_chunked_message_count,
        max_pending=tracker.max_pending_chunked_message,
        auto_ack_oldest=tracker.auto_ack_oldest_chunked_message_on_queue_full,
        expire_time_ms=tracker.expire_time_of_incomplete_chunked_message_ms,
        next_expiry_check=tracker.next_expiry_check,
        unacked_chunked_messages=len(getattr(cnx, "chunked_ids", ())),
    )


__all__ = ["ChunkInfo", "ChunkTrackerSnap", "PendingChunkedSnap", "chunk_info", "chunk_tracker_snap"]
