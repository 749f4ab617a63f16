"""A test-only simulator of consumer-side chunk reassembly: hand-made chunks fed to a fresh tracker.

Not part of the package: it drives `pulsarlab.client.chunk_reassembly.ChunkedMessageTracker` with its own
scheduler and no event log, the way ``MessageChunkingTest`` feeds hand-built chunks (``sendSingleChunk``), and
records what the tracker did at each delivery (fate, discard reason, acks, ack-timeout tracking, eviction,
expiry) so tests can check the rules over interleaved, duplicated and out-of-order deliveries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from pulsarlab.client.chunk_reassembly import (
    DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
    DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
    ChunkAction,
    ChunkedMessageTracker,
    ChunkFate,
    DiscardReason,
)
from pulsarlab.clock import Scheduler
from pulsarlab.ids import MessageId
from pulsarlab.messages import MessageMetadata


def chunk_metadata(
    uuid: str,
    chunk_id: int,
    num_chunks: int,
    *,
    total_chunk_msg_size: int = 100,
    producer_name: str = "test",
    sequence_id: int = 0,
    publish_time: int = 0,
) -> MessageMetadata:
    """Metadata of one hand-made chunk, like ``MessageChunkingTest.sendSingleChunk`` builds."""
    return MessageMetadata(
        producer_name=producer_name,
        sequence_id=sequence_id,
        publish_time=publish_time,
        uuid=uuid,
        chunk_id=chunk_id,
        num_chunks_from_msg=num_chunks,
        total_chunk_msg_size=total_chunk_msg_size,
    )


@dataclass(frozen=True, slots=True)
class ReassemblyStep:
    """One step of a reassembly timeline: a delivery, or a run of the expiry task that expired something."""

    time: int
    kind: str  # "chunk", "plain" (a non-chunked message, delivered as is) or "expiry"
    position: MessageId | None
    uuid: str | None
    chunk_id: int | None
    fate: ChunkFate | None
    reason: DiscardReason | None
    action: ChunkAction | None
    permits_returned: int
    acked: tuple[MessageId, ...]
    tracked: tuple[MessageId, ...]
    evicted: tuple[str, ...]
    expired: tuple[str, ...]
    delivered: bytes | None
    message_id: MessageId | None
    pending: tuple[str, ...]  # uuids in the map, in insertion order
    uuid_queue: tuple[str, ...]
    pending_count: int


@dataclass(frozen=True, slots=True)
class ReassemblyTimeline:
    """What `simulate_reassembly` saw, step by step, and its totals."""

    steps: tuple[ReassemblyStep, ...]
    delivered: tuple[tuple[MessageId, bytes], ...]
    acked: tuple[MessageId, ...]
    tracked: tuple[MessageId, ...]
    permits_returned: int
    pending: tuple[str, ...]  # uuids still incomplete at the end
    uuid_queue: tuple[str, ...]  # the pending uuid queue at the end (stale uuids included)

    def explain(self) -> list[str]:
        """One line per step, for a notebook cell or a test failure message."""
        lines = []
        for s in self.steps:
            if s.kind == "expiry":
                lines.append(
                    f"t={s.time} expiry task expired {', '.join(s.expired)} and acked "
                    f"{', '.join(map(str, s.acked)) or 'nothing'}"
                )
                continue
            what = s.fate.value if s.fate is not None else "delivered"
            if s.reason is not None:
                what += f" ({s.reason.value}, {s.action.value if s.action else ''})"
            extra = []
            if s.evicted:
                extra.append(f"evicted {', '.join(s.evicted)}")
            if s.acked:
                extra.append(f"acked {', '.join(map(str, s.acked))}")
            if s.tracked:
                extra.append(f"tracked {', '.join(map(str, s.tracked))}")
            if s.delivered is not None:
                extra.append(f"delivered {s.message_id} {s.delivered[:40]!r}")
            head = f"t={s.time} {s.position} " + (f"{s.uuid}#{s.chunk_id} " if s.uuid is not None else "")
            lines.append(
                head
                + what
                + ("; " + "; ".join(extra) if extra else "")
                + f" | pending {list(s.pending)} queue {list(s.uuid_queue)} count {s.pending_count}"
            )
        return lines


Delivery = tuple  # (position, metadata, payload) or (position, metadata, payload, at_ms)


def simulate_reassembly(
    deliveries: Iterable[Delivery],
    *,
    max_pending_chunked_message: int = DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
    auto_ack_oldest_chunked_message_on_queue_full: bool = False,
    expire_time_of_incomplete_chunked_message_ms: int = DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
    start_ms: int = 0,
    until_ms: int | None = None,
) -> ReassemblyTimeline:
    """Feed chunk deliveries (interleaved, duplicated, out of order) to a fresh tracker; return the timeline.

    Each delivery is ``(position, metadata, payload)`` or ``(position, metadata, payload, at_ms)``; a
    position is a `MessageId` or ``(ledger, entry[, partition])``. Times must not go backwards; a delivery
    without a time happens at the previous one's. The clock is advanced to each delivery's time first (so
    the expiry task can run in between), and at the end to ``until_ms`` if given. A non-chunked message is
    delivered as is. Pure: its own scheduler, no event log.
    """
    scheduler = Scheduler(start_ms)
    acked: list[MessageId] = []
    tracked: list[MessageId] = []
    permits = [0]
    tracker = ChunkedMessageTracker(
        scheduler,
        max_pending_chunked_message=max_pending_chunked_message,
        auto_ack_oldest_chunked_message_on_queue_full=auto_ack_oldest_chunked_message_on_queue_full,
        expire_time_of_incomplete_chunked_message_ms=expire_time_of_incomplete_chunked_message_ms,
        ack=acked.extend,
        return_permits=lambda n: permits.__setitem__(0, permits[0] + n),
        track=tracked.append,
        expired=lambda uuids: record_expiry(uuids),
    )
    steps: list[ReassemblyStep] = []
    delivered: list[tuple[MessageId, bytes]] = []
    marks = [0, 0]  # how much of acked / tracked earlier steps already reported

    def take() -> tuple[tuple[MessageId, ...], tuple[MessageId, ...]]:
        a, t = tuple(acked[marks[0] :]), tuple(tracked[marks[1] :])
        marks[0], marks[1] = len(acked), len(tracked)
        return a, t

    def state() -> tuple[tuple[str, ...], tuple[str, ...], int]:
        return (
            tuple(tracker.chunked_messages),
            tuple(tracker.pending_uuid_queue),
            tracker.pending_chunked_message_count,
        )

    def record_expiry(uuids: list[str]) -> None:
        a, t = take()
        steps.append(
            ReassemblyStep(
                scheduler.now(),
                "expiry",
                None,
                None,
                None,
                None,
                None,
                None,
                0,
                a,
                t,
                (),
                tuple(uuids),
                None,
                None,
                *state(),
            )
        )

    for item in deliveries:
        if not isinstance(item, tuple) or len(item) not in (3, 4):
            raise ValueError(f"a delivery is (position, metadata, payload[, at_ms]), got {item!r}")
        position, metadata, payload = MessageId.of(item[0]), item[1], bytes(item[2])
        if len(item) == 4 and item[3] is not None:
            if item[3] < scheduler.now():
                raise ValueError(f"delivery times must not go backwards: {item[3]} after {scheduler.now()}")
            scheduler.run_until(item[3])
        now = scheduler.now()
        if not isinstance(metadata, MessageMetadata):
            raise TypeError(f"the metadata of {position} must be a MessageMetadata, not {type(metadata).__name__}")
        if not metadata.is_chunk:
            delivered.append((position, payload))
            steps.append(
                ReassemblyStep(
                    now, "plain", position, None, None, None, None, None, 0, (), (), (), (), payload, position, *state()
                )
            )
            continue
        queue_before = tuple(tracker.pending_uuid_queue)
        map_before = set(tracker.chunked_messages)
        before = permits[0]
        outcome = tracker.process_chunk(position, metadata, payload)
        a, t = take()
        evicted = tuple(
            u for u in queue_before if u in map_before and u not in tracker.chunked_messages and u != outcome.uuid
        )
        message = outcome.message
        if message is not None:
            delivered.append((message.message_id, message.payload))
        steps.append(
            ReassemblyStep(
                now,
                "chunk",
                position,
                outcome.uuid,
                outcome.chunk_id,
                outcome.fate,
                outcome.reason,
                outcome.action,
                permits[0] - before,
                a,
                t,
                evicted,
                (),
                None if message is None else message.payload,
                None if message is None else message.message_id,
                *state(),
            )
        )
    if until_ms is not None:
        scheduler.run_until(max(until_ms, scheduler.now()))
    tracker.close()
    return ReassemblyTimeline(
        tuple(steps),
        tuple(delivered),
        tuple(acked),
        tuple(tracked),
        permits[0],
        tuple(tracker.chunked_messages),
        tuple(tracker.pending_uuid_queue),
    )


def interleave_chunks(*messages: Sequence[Delivery], order: Sequence[int]) -> list[Delivery]:
    """Merge per-message delivery lists, taking the next item of message ``order[k]`` at step k.

    Each message's own deliveries keep their order; ``order`` must name each message as often as it has
    deliveries (e.g. ``[0, 1, 0, 1]`` alternates two two-chunk messages).
    """
    cursors = [0] * len(messages)
    out: list[Delivery] = []
    for k in order:
        if not 0 <= k < len(messages) or cursors[k] >= len(messages[k]):
            raise ValueError(f"order names message {k} more often than it has deliveries")
        out.append(messages[k][cursors[k]])
        cursors[k] += 1
    if any(c != len(m) for c, m in zip(cursors, messages)):
        raise ValueError("order leaves some deliveries out")
    return out
