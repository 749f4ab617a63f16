"""The client's start-id filter: messages before a consumer's ``startMessageId`` are dropped on arrival.

Models what the C++ `ConsumerImpl` does for a reader's start id and after ``seek(messageId)``: the broker's
cursor restarts at the start entry (a batch is sent whole), and the client drops the messages up to the start id
(or before it, when inclusive) instead of handing them to the application. The in-process broker dispatches at
once, so the filter runs over the head of the receiver queue right after the (re)subscription.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Mapping

from pulsarlab.client.message import Message
from pulsarlab.ids import MessageId

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.partition_consumer import PartitionConsumer


def _key(mid: MessageId) -> tuple[int, int, int]:
    return (mid.ledger, mid.entry, mid.batch_index)


def drop_before(
    queue: deque[Message],
    inner: Mapping[int, PartitionConsumer],
    start: MessageId,
    inclusive: bool,
    returns_permits: bool,
) -> int:
    """Drop the queued messages at the head of a consumer's receiver ``queue`` that come before ``start`` (or up
    to it when not ``inclusive``), returning each one's permit to its partition's consumer in ``inner`` when
    ``returns_permits`` (a receiver queue above 0); returns how many were dropped."""
    limit = _key(start)
    dropped = 0
    while queue:
        key = _key(queue[0]._id)
        if key > limit or (inclusive and key == limit):
            break
        msg = queue.popleft()
        dropped += 1
        impl = inner.get(msg._id.partition)
        if impl is not None and returns_permits:
            impl.increase_available_permits(1)
    return dropped


__all__ = ["drop_before"]
