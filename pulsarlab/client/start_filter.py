"""The client's start-id filter: messages before a consumer's ``startMessageId`` are dropped on arrival.

Models what the C++ `ConsumerImpl` does for a reader's start id and after ``seek(messageId)``: the broker's
cursor restarts at the start entry (a batch is sent whole), and the client drops the messages up to the start id
(or before it, when inclusive) instead of handing them to the application. The in-process broker dispatches at
once, so the filter runs over the head of the receiver queue right after the (re)subscription.
"""

from __future__ import annotations

from typing import Any

from pulsarlab.ids import MessageId


def _key(mid: MessageId) -> tuple[int, int, int]:
    return (mid.ledger, mid.entry, mid.batch_index)


def drop_before(consumer: Any, start: MessageId, inclusive: bool) -> int:
    """Drop the queued messages at the head of ``consumer``'s receiver queue that come before ``start`` (or up
    to it when not ``inclusive``), returning their permits; returns how many were dropped."""
    queue = consumer._queue
    limit = _key(start)
    dropped = 0
    while queue:
        key = _key(queue[0]._id)
        if key > limit or (inclusive and key == limit):
            break
        msg = queue.popleft()
        dropped += 1
        impl = consumer._impls.get(msg._id.partition)
        if impl is not None and consumer._receiver_queue_size > 0:
            impl.increase_available_permits(1)
    return dropped


__all__ = ["drop_before"]
