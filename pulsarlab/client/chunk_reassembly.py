"""Consumer-side chunk reassembly: the pending chunked messages, their discard, eviction and expiry rules.

Models the chunk handling of the Java client's `ConsumerImpl` - ``processMessageChunk``,
``ChunkedMessageCtx``, ``chunkedMessagesMap``, ``pendingChunkedMessageUuidQueue``,
``pendingChunkedMessageCount``, ``removeOldestPendingChunkedMessage``,
``removeExpireIncompleteChunkedMessages``, ``removeChunkMessage`` and the assembly step of
``messageReceived`` - as read on master/4.x (docs/guide/chunked-messages.md#chunk-count,
docs/guide/flow-control.md#flow-permits). Per chunk, in Java's order:

1. A non-final chunk (``chunk_id != num_chunks_from_msg - 1``) returns 1 permit at once, whatever happens
   to it next. The first chunk ever processed starts the expiry task (period
   ``expire_time_of_incomplete_chunked_message_ms``, default 1 min; 0 disables it).
2. Chunk 0 of a uuid that already has a context: if chunk 0's (ledger, entry) is not among the stored
   chunks' the old chunks are corrupt and are acked; either way the old context is dropped. Then chunk 0
   counts one more pending message; above ``max_pending_chunked_message`` (default 10; 0 = no limit) the
   oldest pending message is removed - its chunks acked with ``auto_ack_oldest_chunked_message_on_queue_full``
   (default false), else handed to ack-timeout tracking. A new context starts and its uuid joins the queue.
3. No context, or ``chunk_id != last + 1``: a duplicate (``chunk_id <= last``) is dropped, and acked only
   if its position is not one of the stored chunks' (a redelivered chunk at the same position is not);
   anything else drops the context and the chunk is acked if ``now > publish_time + expiry`` (expiry > 0),
   else tracked for ack timeout.
4. The chunk is stored; the final chunk assembles the message: id ``ChunkMessageId(first, last)``, the
   chunk ids kept for the ack (an individual ack expands to every chunk), one pending message less.
5. The expiry task looks at the queue's head: while the head uuid has a context older than the expiry
   (``now > received + expiry``) it is removed and its chunks are **acked**; it stops at the first uuid it
   cannot expire.

Java quirks kept on purpose (they change what a learner sees): a completed or dropped message's uuid stays
in the queue (only eviction polls such stale uuids away), so a stale uuid at the head holds back expiry of
the messages behind it; and dropping a context on restart (rule 2) or out of order (rule 3) does not lower
the pending count, so the limit can evict sooner than the map's size suggests.

Model choices: a chunk whose id is at or beyond the context's chunk count, or whose bytes overflow
``total_chunk_msg_size``, makes Java's ``processMessageChunk`` throw (array index / buffer capacity); the
model drops that chunk instead (reason ``beyond_total``), keeps the context and tracks the chunk for ack
timeout. A final chunk (by its own count) that comes before the count chunk 0 announced assembles what was
stored, where Java would fail on the missing last id. The expiry task keeps Java's fixed-rate instants
(first chunk time + k * period) but is armed only while a run could expire something - while the uuid at
the head of the queue still has a context - so an idle lab can ``run_until_idle``. The C++ client (under the
Python ``pulsar-client``) reassembles with rules that are close to these (as read on its main branch: the
limit counts the map's size and evicts before adding, and a discarded final chunk returns its permit); the
lab's consumer follows Java's for both client libraries.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from pulsarlab.client.chunking import ChunkMessageId
from pulsarlab.clock import Scheduler, Timer
from pulsarlab.event_catalogue.chunk_reassembly import (
    CHUNK_DISCARDED,
    CHUNK_RECEIVED,
    CHUNKED_MESSAGE_ASSEMBLED,
    CHUNKED_MESSAGE_EVICTED,
    CHUNKED_MESSAGE_EXPIRED,
)
from pulsarlab.events import EventLog
from pulsarlab.ids import MessageId
from pulsarlab.messages import MessageMetadata

DEFAULT_MAX_PENDING_CHUNKED_MESSAGE = 10
DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS = 60_000


class ChunkFate(enum.Enum):
    """What happened to one chunk."""

    STORED = "stored"  # kept in its context, the message is not complete yet
    ASSEMBLED = "assembled"  # the final chunk: the message is complete
    DISCARDED = "discarded"


class DiscardReason(enum.Enum):
    """Why a chunk was dropped (rule 3 of the module docstring, and the model's ``beyond_total``)."""

    UNKNOWN_UUID = "unknown_uuid"  # no context: chunk 0 lost, evicted, expired or the message already done
    OUT_OF_ORDER = "out_of_order"  # chunk id skips ahead of last + 1: the context is dropped too
    DUPLICATE = "duplicate"  # chunk id <= the last stored one
    BEYOND_TOTAL = "beyond_total"  # chunk id or bytes beyond what chunk 0 announced (model choice)


class ChunkAction(enum.Enum):
    """What the consumer did with dropped chunk ids."""

    ACKED = "acked"
    TRACKED = "tracked"  # handed to the ack-timeout tracker (redelivered if ack timeout is on)
    DROPPED = "dropped"  # nothing: a redelivery at a known position, or a non-corrupt restart


@dataclass(slots=True)
class ChunkedMessageCtx:
    """`ConsumerImpl.ChunkedMessageCtx`: one chunked message being reassembled."""

    uuid: str
    total_chunks: int
    total_chunk_msg_size: int
    received_time: int
    chunk_ids: list[MessageId | None]
    buffer: bytearray = field(default_factory=bytearray)
    last_chunk_id: int = -1

    def stored_ids(self) -> list[MessageId]:
        return [i for i in self.chunk_ids if i is not None]

    def holds_position(self, msg_id: MessageId) -> bool:
        """True when a stored chunk has the same (ledger, entry) - Java's redelivery test."""
        return any(i is not None and i.ledger == msg_id.ledger and i.entry == msg_id.entry for i in self.chunk_ids)


@dataclass(frozen=True, slots=True)
class AssembledMessage:
    """A complete chunked message, ready to be queued for the application."""

    uuid: str
    payload: bytes
    message_id: ChunkMessageId
    chunk_ids: tuple[MessageId, ...]  # every chunk, for the ack (unAckedChunkedMessageIdSequenceMap)
    metadata: MessageMetadata  # the final chunk's
    first_chunk_time: int
    assembled_time: int


@dataclass(frozen=True, slots=True)
class ChunkOutcome:
    """The result of `ChunkedMessageTracker.process_chunk`."""

    uuid: str
    chunk_id: int
    position: MessageId
    fate: ChunkFate
    permits_returned: int
    reason: DiscardReason | None = None
    action: ChunkAction | None = None
    message: AssembledMessage | None = None


def _noop(*_: object) -> None:
    return None


class ChunkedMessageTracker:
    """The chunk state of one `ConsumerImpl`: ``chunkedMessagesMap``, the uuid queue and the expiry task.

    The consumer calls `process_chunk` for every received entry whose metadata ``is_chunk``. Callbacks:
    ``ack(ids)`` - acknowledge these chunk ids individually (``doAcknowledge``); ``return_permits(n)`` -
    ``increaseAvailablePermits``; ``track(id)`` - add the id to the ack-timeout tracker (``trackMessage``);
    ``deliver(message)`` - the assembled message (also returned in the outcome: use one or the other);
    ``expired(uuids)`` - after a run of the expiry task expired some messages (their chunks went to ``ack``).
    """

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        max_pending_chunked_message: int = DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
        expire_time_of_incomplete_chunked_message_ms: int = DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
        ack: Callable[[list[MessageId]], object] | None = None,
        return_permits: Callable[[int], object] | None = None,
        track: Callable[[MessageId], object] | None = None,
        deliver: Callable[[AssembledMessage], object] | None = None,
        expired: Callable[[list[str]], object] | None = None,
        events: EventLog | None = None,
        consumer_id: int = 0,
    ) -> None:
        for name, value in (
            ("max_pending_chunked_message", max_pending_chunked_message),
            ("expire_time_of_incomplete_chunked_message_ms", expire_time_of_incomplete_chunked_message_ms),
        ):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, not {type(value).__name__} ({value!r})")
            if value < 0:
                raise ValueError(f"{name} must be >= 0 (0 turns it off), got {value}")
        self.scheduler = scheduler
        self.max_pending_chunked_message = max_pending_chunked_message
        self.auto_ack_oldest_chunked_message_on_queue_full = bool(auto_ack_oldest_chunked_message_on_queue_full)
        self.expire_time_of_incomplete_chunked_message_ms = expire_time_of_incomplete_chunked_message_ms
        self._ack = ack or _noop
        self._return_permits = return_permits or _noop
        self._track = track or _noop
        self._deliver = deliver
        self._expired = expired
        self._events = events if events is not None and events.enabled else None
        self.consumer_id = consumer_id
        self.chunked_messages: dict[str, ChunkedMessageCtx] = {}  # chunkedMessagesMap
        self.pending_uuid_queue: deque[str] = deque()  # pendingChunkedMessageUuidQueue
        self.pending_chunked_message_count = 0
        self._expiry_phase: int | None = None  # when the lazy fixed-rate task was scheduled
        self._expiry_period = 0
        self._timer: Timer | None = None
        self._closed = False

    # --- per chunk -------------------------------------------------------------------------------------

    def process_chunk(self, msg_id: MessageId, metadata: MessageMetadata, payload: bytes) -> ChunkOutcome:
        """Handle one received chunk (``processMessageChunk`` plus the assembly in ``messageReceived``)."""
        if self._closed:
            raise RuntimeError("the chunk tracker is closed")
        if not metadata.is_chunk or metadata.chunk_id is None or metadata.total_chunk_msg_size is None:
            raise ValueError(
                f"{msg_id} is not a chunk (uuid={metadata.uuid!r}, chunk_id={metadata.chunk_id}, "
                f"num_chunks_from_msg={metadata.num_chunks_from_msg}); only chunks go to the tracker"
            )
        uuid, chunk_id, num_chunks = metadata.uuid, metadata.chunk_id, metadata.num_chunks_from_msg
        assert uuid is not None and num_chunks is not None
        now = self.scheduler.now()
        permits = 0
        if chunk_id != num_chunks - 1:
            permits = 1
            self._return_permits(1)
        self._start_expiry_task(now)
        if self._events is not None:
            events = self._events  # one per chunk: the row form, fields in CHUNK_RECEIVED's order
            events.append_row(
                CHUNK_RECEIVED,
                now,
                self.consumer_id,
                events.text_id(uuid),
                chunk_id,
                num_chunks,
                events.text_id(_pos(msg_id)),
                permits,
            )

        ctx = self.chunked_messages.get(uuid)
        if chunk_id == 0:
            if ctx is not None:
                self._restart(ctx, msg_id, now)
            self.pending_chunked_message_count += 1
            if 0 < self.max_pending_chunked_message < self.pending_chunked_message_count:
                self._remove_oldest_pending(now)
            ctx = ChunkedMessageCtx(uuid, num_chunks, metadata.total_chunk_msg_size, now, [None] * num_chunks)
            self.chunked_messages[uuid] = ctx
            self.pending_uuid_queue.append(uuid)
            self._arm_expiry()

        if ctx is None or chunk_id != ctx.last_chunk_id + 1:
            if ctx is not None and chunk_id <= ctx.last_chunk_id:
                if ctx.holds_position(msg_id):
                    action = ChunkAction.DROPPED
                else:
                    action = ChunkAction.ACKED
                    self._ack([msg_id])
                return self._discarded(uuid, chunk_id, msg_id, permits, DiscardReason.DUPLICATE, action, now)
            reason = DiscardReason.UNKNOWN_UUID if ctx is None else DiscardReason.OUT_OF_ORDER
            self.chunked_messages.pop(uuid, None)
            expiry = self.expire_time_of_incomplete_chunked_message_ms
            if expiry > 0 and now > metadata.publish_time + expiry:
                action = ChunkAction.ACKED
                self._ack([msg_id])
            else:
                action = ChunkAction.TRACKED
                self._track(msg_id)
            return self._discarded(uuid, chunk_id, msg_id, permits, reason, action, now)

        if chunk_id >= ctx.total_chunks or len(ctx.buffer) + len(payload) > ctx.total_chunk_msg_size:
            self._track(msg_id)
            return self._discarded(
                uuid, chunk_id, msg_id, permits, DiscardReason.BEYOND_TOTAL, ChunkAction.TRACKED, now
            )

        ctx.chunk_ids[chunk_id] = msg_id
        ctx.buffer += payload
        ctx.last_chunk_id = chunk_id
        if chunk_id != num_chunks - 1:
            return ChunkOutcome(uuid, chunk_id, msg_id, ChunkFate.STORED, permits)
        return self._assemble(ctx, metadata, msg_id, permits, now)

    def _assemble(
        self, ctx: ChunkedMessageCtx, metadata: MessageMetadata, msg_id: MessageId, permits: int, now: int
    ) -> ChunkOutcome:
        del self.chunked_messages[ctx.uuid]
        self.pending_chunked_message_count -= 1
        ids = tuple(i for i in ctx.chunk_ids if i is not None)
        message = AssembledMessage(
            uuid=ctx.uuid,
            payload=bytes(ctx.buffer),
            message_id=ChunkMessageId(ids[0], ids[-1]),
            chunk_ids=ids,
            metadata=metadata,
            first_chunk_time=ctx.received_time,
            assembled_time=now,
        )
        if self._events is not None:
            self._events.append(
                CHUNKED_MESSAGE_ASSEMBLED,
                now,
                consumer=self.consumer_id,
                uuid=ctx.uuid,
                chunks=len(ids),
                size=len(message.payload),
                message_id=str(message.message_id),
            )
        if self._deliver is not None:
            self._deliver(message)
        return ChunkOutcome(ctx.uuid, ctx.last_chunk_id, msg_id, ChunkFate.ASSEMBLED, permits, message=message)

    def _discarded(
        self,
        uuid: str,
        chunk_id: int,
        msg_id: MessageId,
        permits: int,
        reason: DiscardReason,
        action: ChunkAction,
        now: int,
    ) -> ChunkOutcome:
        if self._events is not None:
            self._events.append(
                CHUNK_DISCARDED,
                now,
                consumer=self.consumer_id,
                uuid=uuid,
                chunk_id=chunk_id,
                position=_pos(msg_id),
                reason=reason.value,
                action=action.value,
            )
        return ChunkOutcome(uuid, chunk_id, msg_id, ChunkFate.DISCARDED, permits, reason, action)

    def _restart(self, ctx: ChunkedMessageCtx, chunk0: MessageId, now: int) -> None:
        """Chunk 0 again for a pending uuid: ack the old chunks if they are a corrupt copy, drop the context."""
        stored = ctx.stored_ids()
        if ctx.holds_position(chunk0):
            action = ChunkAction.DROPPED  # a redelivery of the same entries: nothing to ack
        else:
            action = ChunkAction.ACKED
            if stored:
                self._ack(stored)
        del self.chunked_messages[ctx.uuid]  # the uuid stays in the queue and the count is not lowered
        if self._events is not None:
            self._events.append(
                CHUNKED_MESSAGE_EVICTED,
                now,
                consumer=self.consumer_id,
                uuid=ctx.uuid,
                chunks=len(stored),
                cause="restarted by chunk 0",
                action=action.value,
                pending=self.pending_chunked_message_count,
            )

    def _remove_oldest_pending(self, now: int) -> None:
        """``removeOldestPendingChunkedMessage``: poll the queue until a uuid with a context turns up."""
        uuid, ctx = None, None
        while ctx is None and self.pending_uuid_queue:
            uuid = self.pending_uuid_queue.popleft()
            ctx = self.chunked_messages.get(uuid)
        if ctx is None or uuid is None:
            return  # only stale uuids: nothing removed, and the count stays as it is
        auto_ack = self.auto_ack_oldest_chunked_message_on_queue_full
        stored = self._remove_chunk_message(uuid, ctx, auto_ack)
        if self._events is not None:
            self._events.append(
                CHUNKED_MESSAGE_EVICTED,
                now,
                consumer=self.consumer_id,
                uuid=uuid,
                chunks=len(stored),
                cause="queue full",
                action=(ChunkAction.ACKED if auto_ack else ChunkAction.TRACKED).value,
                pending=self.pending_chunked_message_count,
            )

    def _remove_chunk_message(self, uuid: str, ctx: ChunkedMessageCtx, auto_ack: bool) -> list[MessageId]:
        """``removeChunkMessage``: drop the context, ack or track its chunks, one pending message less."""
        self.chunked_messages.pop(uuid, None)
        stored = ctx.stored_ids()
        if auto_ack:
            if stored:
                self._ack(stored)
        else:
            for msg_id in stored:
                self._track(msg_id)
        self.pending_chunked_message_count -= 1
        return stored

    # --- expiry ----------------------------------------------------------------------------------------

    def remove_expired(self) -> list[str]:
        """``removeExpireIncompleteChunkedMessages`` now; returns the uuids it expired (and acked)."""
        expiry = self.expire_time_of_incomplete_chunked_message_ms
        if expiry <= 0:
            return []
        now = self.scheduler.now()
        expired = []
        while self.pending_uuid_queue:
            uuid = self.pending_uuid_queue[0]
            ctx = self.chunked_messages.get(uuid)
            if ctx is None or not now > ctx.received_time + expiry:
                break
            self.pending_uuid_queue.popleft()
            stored = self._remove_chunk_message(uuid, ctx, True)
            expired.append(uuid)
            if self._events is not None:
                self._events.append(
                    CHUNKED_MESSAGE_EXPIRED,
                    now,
                    consumer=self.consumer_id,
                    uuid=uuid,
                    chunks=len(stored),
                    age=now - ctx.received_time,
                )
        return expired

    def _start_expiry_task(self, now: int) -> None:
        if self._expiry_phase is None and self.expire_time_of_incomplete_chunked_message_ms > 0:
            self._expiry_phase = now
            self._expiry_period = self.expire_time_of_incomplete_chunked_message_ms

    def _arm_expiry(self) -> None:
        queue = self.pending_uuid_queue
        if self._timer is not None or self._expiry_phase is None or self._closed:
            return
        if not queue or queue[0] not in self.chunked_messages:
            return  # a run would stop at once: the head uuid has no context (Java's task finds nothing to do)
        now, phase, period = self.scheduler.now(), self._expiry_phase, self._expiry_period
        deadline = phase + ((now - phase) // period + 1) * period
        self._timer = self.scheduler.call_at(deadline, self._on_expiry_timer, "chunk expiry")

    def _on_expiry_timer(self) -> None:
        self._timer = None
        expired = self.remove_expired()
        if expired and self._expired is not None:
            self._expired(expired)
        self._arm_expiry()

    @property
    def next_expiry_check(self) -> int | None:
        """When the expiry task runs next while something is pending (None when it is idle)."""
        return None if self._timer is None else self._timer.deadline

    # --- views -----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the expiry task (the consumer closed); pending contexts are simply forgotten."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def snapshot(self) -> dict[str, object]:
        """A JSON-friendly picture of the pending map, the uuid queue and the counters."""
        return {
            "pending": {
                uuid: {
                    "total_chunks": ctx.total_chunks,
                    "last_chunk_id": ctx.last_chunk_id,
                    "chunk_ids": [None if i is None else str(i) for i in ctx.chunk_ids],
                    "bytes": len(ctx.buffer),
                    "total_chunk_msg_size": ctx.total_chunk_msg_size,
                    "received_time": ctx.received_time,
                }
                for uuid, ctx in self.chunked_messages.items()
            },
            "uuid_queue": list(self.pending_uuid_queue),
            "pending_chunked_message_count": self.pending_chunked_message_count,
            "max_pending_chunked_message": self.max_pending_chunked_message,
            "next_expiry_check": self.next_expiry_check,
        }

    def __repr__(self) -> str:
        return (
            f"ChunkedMessageTracker(pending={list(self.chunked_messages)}, queue={list(self.pending_uuid_queue)}, "
            f"count={self.pending_chunked_message_count}/{self.max_pending_chunked_message})"
        )


def _pos(msg_id: MessageId) -> str:
    return f"{msg_id.ledger}:{msg_id.entry}"
