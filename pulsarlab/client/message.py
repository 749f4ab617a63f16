"""A received message: ``pulsar.Message``, its id's ints kept as they arrived.

Models the Python client's ``pulsar.Message`` (the C++ `Message` over a `MessageImpl`): payload, the entry's
`MessageMetadata`, and for a message of a batch its stored `SingleMessageMetadata` row. The client's consumer
reads the id's ints (``_ledger``, ``_entry``, ``_partition``, ``_batch_index``), ``_topic``, ``_batch_size`` and
``_redelivery_count`` directly: they are the client package's record of the delivery, kept out of the public
surface so a ``Message`` offers what ``pulsar.Message`` offers. Simplifies: no schema version, no encryption
context.
"""

from __future__ import annotations

from pulsarlab.ids import MessageId, client_message_id
from pulsarlab.messages import ROW_EVENT_TIME, ROW_ORDERING_KEY, ROW_PARTITION_KEY, ROW_PROPERTIES, MessageMetadata

# a stored `SingleMessageMetadata` row (`SingleMessageMetadata.as_row`): payload size, properties or None,
# partition key, partition key base64-encoded, ordering key, event time, sequence id, null value
SingleRow = tuple[int, dict[str, str] | None, str | None, bool, bytes | None, int, int | None, bool]
# the row's fields are read by literal index (so each has its type): they must be where `as_row` puts them
if (ROW_PROPERTIES, ROW_PARTITION_KEY, ROW_ORDERING_KEY, ROW_EVENT_TIME) != (1, 2, 4, 5):
    raise ImportError("SingleMessageMetadata.as_row's fields moved; update pulsarlab.client.message")

# what trusted_message_id does, without its IndexInt conversion (see plain_id)
_new_id = object.__new__
_set_ledger = MessageId.ledger.__set__  # type: ignore[attr-defined,misc]
_set_entry = MessageId.entry.__set__  # type: ignore[attr-defined,misc]
_set_partition = MessageId.partition.__set__  # type: ignore[attr-defined,misc]
_set_batch_index = MessageId.batch_index.__set__  # type: ignore[attr-defined,misc]


class Message:
    """``pulsar.Message``: a received message and its id.

    ``_single`` is the message's stored `SingleMessageMetadata` row (`EntryData.rows`) in a batch, else None
    (the entry's `MessageMetadata` describes the message). The id's ints are kept as they arrived; the
    `MessageId` object (``_id``) is made when first asked for (receiving and acknowledging need only the ints).
    """

    __slots__ = (
        "_data",
        "_meta",
        "_single",
        "_ledger",
        "_entry",
        "_partition",
        "_batch_index",
        "_mid",
        "_topic",
        "_redelivery_count",
        "_batch_size",
    )

    def __init__(
        self,
        data: bytes,
        meta: MessageMetadata,
        single: SingleRow | None,
        ledger: int,
        entry: int,
        partition: int,
        batch_index: int,
        topic: str,
        redelivery_count: int,
        batch_size: int,
        msg_id: MessageId | None = None,
    ) -> None:
        self._data = data
        self._meta = meta
        self._single = single
        self._ledger = ledger
        self._entry = entry
        self._partition = partition
        self._batch_index = batch_index
        self._mid = msg_id  # None: made from the ints at first use
        self._topic = topic
        self._redelivery_count = redelivery_count
        self._batch_size = batch_size

    @property
    def _id(self) -> MessageId:
        mid = self._mid
        if mid is None:
            mid = self._mid = plain_id(self._ledger, self._entry, self._partition, self._batch_index)
        return mid

    def data(self) -> bytes:
        return self._data

    def value(self) -> object:
        return self._data

    def properties(self) -> dict[str, str]:
        row = self._single
        if row is None:
            return dict(self._meta.properties)
        props = row[1]
        return dict(props) if props is not None else {}

    def partition_key(self) -> str:
        row = self._single
        return (self._meta.partition_key if row is None else row[2]) or ""

    def ordering_key(self) -> str:
        key = self._ordering_key_field()
        return key.decode("utf-8", "replace") if isinstance(key, (bytes, bytearray)) else (key or "")

    def publish_timestamp(self) -> int:
        return self._meta.publish_time

    def event_timestamp(self) -> int:
        row = self._single
        return self._meta.event_time if row is None else row[5]

    def message_id(self) -> MessageId:
        return client_message_id(self._id)

    def topic_name(self) -> str:
        return self._topic

    def redelivery_count(self) -> int:
        return self._redelivery_count

    def producer_name(self) -> str:
        return self._meta.producer_name

    def _ordering_key_field(self) -> bytes | str | None:
        """The ordering key as stored (bytes; a str where a caller stored one)."""
        row = self._single
        key: bytes | str | None = self._meta.ordering_key if row is None else row[4]
        return key

    def _ordering_key_bytes(self) -> bytes | None:
        key = self._ordering_key_field()
        return key.encode("utf-8") if isinstance(key, str) else key

    def __repr__(self) -> str:
        return f"Message(id={self._id}, key={self.partition_key()!r}, data={self._data[:32]!r})"


def plain_id(ledger: int, entry: int, partition: int, batch_index: int) -> MessageId:
    """`trusted_message_id` with the partition and batch index kept as the plain ints given (`Message.message_id`
    gives pulsar-client's callable indexes)."""
    mid: MessageId = _new_id(MessageId)
    _set_ledger(mid, ledger)
    _set_entry(mid, entry)
    _set_partition(mid, partition)
    _set_batch_index(mid, batch_index)
    return mid


def message_with_id(
    data: bytes,
    meta: MessageMetadata,
    single: SingleRow | None,
    mid: MessageId,
    topic: str,
    redelivery_count: int,
    batch_size: int,
) -> Message:
    """A `Message` whose `MessageId` object is ``mid`` (a chunked message's `ChunkMessageId`, a batch's id)."""
    return Message(
        data,
        meta,
        single,
        mid.ledger,
        mid.entry,
        mid.partition,
        mid.batch_index,
        topic,
        redelivery_count,
        batch_size,
        mid,
    )


__all__ = ["Message", "SingleRow", "message_with_id", "plain_id"]
