"""Producer batching: how sends become ledger entries (one message, or a batch routed by its first key).

Models the client-side batch containers (docs/guide/sticky-key-hashing.md#sticky-key,
docs/guide/producer-batching.md#key-based-batching, docs/guide/delayed-delivery.md#hold-back):

* `BatchMessageContainer` - Java `BatchMessageContainerImpl` / C++ `BatchMessageContainer`: every
  batchable message goes into one batch, whose entry metadata copies the *first* message's
  partition key and ordering key (`Commands.initBatchMessageMetadata`), so the broker routes the
  whole entry by that key.
* `KeyBasedBatchMessageContainer` - Java `BatchMessageKeyBasedContainer` / C++
  `BatchMessageKeyBasedContainer`: one sub-batch per key, each flushed as its own entry.

Both clients are modelled, chosen by `ClientLibrary` (default JAVA, the client the reference reads).
Where they differ, as read from apache/pulsar (pulsar-client) and apache/pulsar-client-cpp (which the
Python ``pulsar-client`` package wraps):

=============================  ==========================================  =================================
                               JAVA (2.11+)                                CPP
=============================  ==========================================  =================================
flush of a single message      a plain entry with the message's own        a batch entry of 1
                               metadata (PIP-189, #16605)
batch ``sequence_id``          first message's; ``highest_sequence_id``    first message's; no
                               = last message's                            ``highest_sequence_id``
key-based group key            Base64(ordering key), else partition key    raw ordering key, else partition
                               (no key is its own group)                   key, no key counting as ``""``
key-based sub-batch id         its last (highest) id, also written as      its first id
                               ``highest_sequence_id`` (#15413)
sub-batch send order           sorted by that id                           sorted by that id
``max_messages`` / bytes <= 0  unlimited / the broker's maxMessageSize     ``max_messages`` must be > 1
``uncompressed_size``          the payload size on a plain entry, unset    unset (set only with compression)
                               on a batch (set only with compression)
=============================  ==========================================  =================================

Space rules (Java `haveEnoughSpace`/`isBatchFull`, C++ `hasEnoughSpace`/`isFull`): a message fits
while the container holds fewer than ``max_messages`` and ``current_bytes + len(payload) <=
max_bytes``; sizes count payload bytes only. An empty container reports no space for a payload
larger than ``max_bytes`` too, but both producers then flush (a no-op when empty) and add the
message anyway, so `add` never refuses: the oversize message makes a batch of its own and `add`
reports the container full.

Left to the producer: delayed messages bypass the containers (`canAddToBatch`) and go out through
`non_batched_entry`; the Java producer flushes the open batch before such a message, the C++ one
sends it at once, ahead of the batch. The C++ producer (re)arms its batch timer whenever a message
opens a batch, for key-based batching a new key's sub-batch (`is_first_message_to_add`).

Simplifies: no compression, encryption, schema versions, transactions or replication fields; the
batch payload is not serialised, so the broker-side max message size check is left to the caller.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass, field, fields
from typing import Callable

from pulsarlab.client.library import ClientLibrary
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.ids import MessageId
from pulsarlab.messages import EntryData, MessageMetadata, SingleMessageMetadata

DEFAULT_BATCHING_MAX_MESSAGES = 1000
DEFAULT_BATCHING_MAX_BYTES = 128 * 1024
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # broker.conf maxMessageSize (Commands.DEFAULT_MAX_MESSAGE_SIZE)


class BatchingType(enum.Enum):
    """`pulsar.BatchingType` (C++ `ProducerConfiguration::BatchingType`), same values."""

    Default = 0
    KeyBased = 1


_JAVA = ClientLibrary.JAVA  # for the per-entry and per-message checks (an enum member lookup costs a call in 3.11)


# ``callback(result, message id)``: "Ok" with the id, or a failure's ``pulsar.Result`` name with None
SendCallback = Callable[[str, MessageId | None], object]


@dataclass(slots=True)
class OutgoingMessage:
    """One ``producer.send()`` call after the producer stamped it, before batching.

    ``publish_time`` is the client clock at the send call (Pulsar stamps each message, and a batch
    keeps its first message's); when None, the time given to `flush` / `non_batched_entry` is used.
    ``callback`` is opaque here: the producer completes the send with it.
    """

    payload: bytes
    sequence_id: int
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    ordering_key: bytes | None = None
    event_time: int = 0
    deliver_at: int | None = None
    callback: SendCallback | None = None
    publish_time: int | None = None


Flushed = list[tuple[EntryData, list[OutgoingMessage]]]

_SMM_FIELDS = (
    "payload_size",
    "properties",
    "partition_key",
    "partition_key_b64_encoded",
    "ordering_key",
    "event_time",
    "sequence_id",
    "null_value",
)
if tuple(f.name for f in fields(SingleMessageMetadata)) != _SMM_FIELDS:
    raise ImportError("SingleMessageMetadata's fields changed order; update client.batching._batch_entry")
_MM_FIELDS = (
    "producer_name",
    "sequence_id",
    "publish_time",
    "properties",
    "partition_key",
    "partition_key_b64_encoded",
    "ordering_key",
    "event_time",
    "num_messages_in_batch",
    "highest_sequence_id",
    "deliver_at_time",
    "uncompressed_size",
)
if tuple(f.name for f in fields(MessageMetadata))[: len(_MM_FIELDS)] != _MM_FIELDS:
    raise ImportError("MessageMetadata's fields changed order; update client.batching.non_batched_entry")


def non_batched_entry(
    producer_name: str,
    msg: OutgoingMessage,
    publish_time: int,
    *,
    client: ClientLibrary = ClientLibrary.JAVA,
) -> EntryData:
    """The entry of a message sent on its own (batching off, a delayed message, a Java batch of one)."""
    payload = msg.payload
    # MessageMetadata(producer_name, sequence_id, publish_time, properties, partition_key,
    # partition_key_b64_encoded, ordering_key, event_time, num_messages_in_batch, highest_sequence_id,
    # deliver_at_time, uncompressed_size), positionally (keywords cost more; once per unbatched message)
    metadata = MessageMetadata(
        producer_name,
        msg.sequence_id,
        publish_time if msg.publish_time is None else msg.publish_time,
        msg.properties,
        msg.partition_key,
        False,
        msg.ordering_key,
        msg.event_time,
        None,
        None,
        msg.deliver_at,
        len(payload) if client is ClientLibrary.JAVA else 0,
    )
    return EntryData.single(metadata, payload)


def _batch_entry(
    producer_name: str,
    msgs: list[OutgoingMessage],
    publish_time: int,
    sequence_id: int,
    highest_sequence_id: int | None,
) -> EntryData:
    first = msgs[0]
    metadata = MessageMetadata(
        producer_name=producer_name,
        sequence_id=sequence_id,
        publish_time=publish_time if first.publish_time is None else first.publish_time,
        partition_key=first.partition_key,
        ordering_key=first.ordering_key,
        num_messages_in_batch=len(msgs),
        highest_sequence_id=highest_sequence_id,
    )
    # one stored row per message, SingleMessageMetadata.as_row() of SingleMessageMetadata(payload_size,
    # properties, partition_key, partition_key_b64_encoded, ordering_key, event_time, sequence_id) (field order
    # checked against the class above)
    rows = tuple(
        [
            (
                len(m.payload),
                m.properties or None,
                m.partition_key,
                False,
                m.ordering_key,
                m.event_time,
                m.sequence_id,
                False,
            )
            for m in msgs
        ]
    )
    return EntryData.of_rows(metadata, tuple([m.payload for m in msgs]), rows)


def _flush_group(
    producer_name: str, msgs: list[OutgoingMessage], publish_time: int, client: ClientLibrary, sequence_id: int
) -> tuple[EntryData, list[OutgoingMessage]]:
    """One batch (or sub-batch) as the entry it is sent as; ``sequence_id`` is the batch's id."""
    if client is _JAVA:
        if len(msgs) == 1:  # PIP-189: no batch of one
            return non_batched_entry(producer_name, msgs[0], publish_time, client=client), msgs
        return _batch_entry(producer_name, msgs, publish_time, sequence_id, msgs[-1].sequence_id), msgs
    return _batch_entry(producer_name, msgs, publish_time, sequence_id, None), msgs


class _Container:
    """The counting and space rules both containers share (`AbstractBatchMessageContainer`)."""

    def __init__(
        self,
        producer_name: str,
        max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES,
        max_bytes: int = DEFAULT_BATCHING_MAX_BYTES,
        *,
        client: ClientLibrary = ClientLibrary.JAVA,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        if not isinstance(producer_name, str):
            raise TypeError(f"producer_name must be a str, not {type(producer_name).__name__}")
        if not isinstance(client, ClientLibrary):
            raise TypeError(f"client must be a ClientLibrary, not {client!r}")
        for name, value in (("max_messages", max_messages), ("max_bytes", max_bytes)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an int, not {type(value).__name__} ({value!r})")
        if client is ClientLibrary.CPP:
            if max_messages <= 1:  # ProducerConfiguration::setBatchingMaxMessages
                raise IllegalArgumentException("batchingMaxMessages needs to be greater than 1")
            if max_bytes < 0:
                raise IllegalArgumentException(
                    f"batching_max_allowed_size_in_bytes is unsigned in the C++ client, got {max_bytes}"
                )
        self.producer_name = producer_name
        self.client = client
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        # Java: <= 0 means no count limit, and the connection's maxMessageSize as the byte limit.
        self._count_limit = max_messages if (client is ClientLibrary.CPP or max_messages > 0) else None
        self._byte_limit = max_bytes if (client is ClientLibrary.CPP or max_bytes > 0) else max_message_size
        self.num_messages = 0
        self.current_bytes = 0

    def is_empty(self) -> bool:
        return self.num_messages == 0

    def has_space_for(self, msg: OutgoingMessage) -> bool:
        """`haveEnoughSpace`: room for one more message and for its payload bytes."""
        limit = self._count_limit
        return (limit is None or self.num_messages < limit) and (
            self.current_bytes + len(msg.payload) <= self._byte_limit
        )

    def is_full(self) -> bool:
        """`isBatchFull`: the message count or the byte size reached its limit."""
        limit = self._count_limit
        return (limit is not None and self.num_messages >= limit) or self.current_bytes >= self._byte_limit

    def _count(self, msg: OutgoingMessage) -> bool:
        """Count ``msg`` in after `canAddToBatch`'s checks; True when the container is now full (`isBatchFull`)."""
        payload = msg.payload
        if msg.deliver_at is not None or not isinstance(payload, (bytes, bytearray)):
            if not isinstance(payload, (bytes, bytearray)):
                raise TypeError(f"payload must be bytes, not {type(payload).__name__}")
            raise ValueError(
                f"message {msg.sequence_id} has deliver_at={msg.deliver_at}: delayed messages are never "
                "batched (canAddToBatch); send it with non_batched_entry"
            )
        n = self.num_messages = self.num_messages + 1
        size = self.current_bytes = self.current_bytes + len(payload)
        limit = self._count_limit
        return (limit is not None and n >= limit) or size >= self._byte_limit

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(producer={self.producer_name!r}, client={self.client.value}, "
            f"messages={self.num_messages}/{self.max_messages}, bytes={self.current_bytes}/{self.max_bytes})"
        )


class BatchMessageContainer(_Container):
    """The default batcher: all batchable messages in one batch entry, keyed by its first message."""

    def __init__(
        self,
        producer_name: str,
        max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES,
        max_bytes: int = DEFAULT_BATCHING_MAX_BYTES,
        *,
        client: ClientLibrary = ClientLibrary.JAVA,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        super().__init__(producer_name, max_messages, max_bytes, client=client, max_message_size=max_message_size)
        self._messages: list[OutgoingMessage] = []

    def is_first_message_to_add(self, msg: OutgoingMessage) -> bool:
        """True when ``msg`` would start a new batch (the C++ producer re-arms its batch timer then)."""
        return not self._messages

    def add(self, msg: OutgoingMessage) -> bool:
        """Add ``msg``; True when the container is now full and should be flushed."""
        full = self._count(msg)
        self._messages.append(msg)
        return full

    def add_and_check_first(self, msg: OutgoingMessage) -> tuple[bool, bool]:
        """``(is_first_message_to_add(msg), add(msg))`` in one call (the producer's per-message path)."""
        first = not self._messages
        return first, self.add(msg)

    def flush(self, publish_time: int) -> Flushed:
        """The entry to send (none when empty) with the messages it holds, and empty the container."""
        msgs = self._messages
        if not msgs:
            return []
        self._messages = []
        self.num_messages = 0
        self.current_bytes = 0
        return [_flush_group(self.producer_name, msgs, publish_time, self.client, msgs[0].sequence_id)]


class KeyBasedBatchMessageContainer(_Container):
    """The key-based batcher: one sub-batch per key, each its own entry, sent in sequence-id order."""

    def __init__(
        self,
        producer_name: str,
        max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES,
        max_bytes: int = DEFAULT_BATCHING_MAX_BYTES,
        *,
        client: ClientLibrary = ClientLibrary.JAVA,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        super().__init__(producer_name, max_messages, max_bytes, client=client, max_message_size=max_message_size)
        self._batches: dict[str | bytes | None, list[OutgoingMessage]] = {}

    def batch_key(self, msg: OutgoingMessage) -> str | bytes | None:
        """The sub-batch a message joins (`getKey`): see the module docstring for each client."""
        if self.client is _JAVA:
            if msg.ordering_key is not None:
                return base64.b64encode(msg.ordering_key).decode("ascii")
            return msg.partition_key
        if msg.ordering_key is not None:
            return bytes(msg.ordering_key)
        return (msg.partition_key or "").encode("utf-8")

    @property
    def num_batches(self) -> int:
        """Sub-batches currently open (one per key seen since the last flush)."""
        return len(self._batches)

    def is_first_message_to_add(self, msg: OutgoingMessage) -> bool:
        """True when ``msg`` would open a new sub-batch (the C++ producer re-arms its batch timer then)."""
        return self.batch_key(msg) not in self._batches

    def add(self, msg: OutgoingMessage) -> bool:
        """Add ``msg`` to its key's sub-batch; True when the container as a whole is now full."""
        return self.add_and_check_first(msg)[1]

    def add_and_check_first(self, msg: OutgoingMessage) -> tuple[bool, bool]:
        """``(is_first_message_to_add(msg), add(msg))`` in one call, the key computed once (the producer's
        per-message path)."""
        full = self._count(msg)
        key = self.batch_key(msg)
        batches = self._batches
        group = batches.get(key)
        first = group is None
        if group is None:
            batches[key] = [msg]
        else:
            group.append(msg)
        return first, full

    def flush(self, publish_time: int) -> Flushed:
        """One entry per sub-batch, sorted by the sub-batch's sequence id, and empty the container."""
        if not self._batches:
            return []
        groups = list(self._batches.values())
        self._batches = {}
        self.num_messages = 0
        self.current_bytes = 0
        pick = -1 if self.client is _JAVA else 0  # Java: highest (last); C++: first
        groups.sort(key=lambda g: g[pick].sequence_id)
        name, client = self.producer_name, self.client
        return [_flush_group(name, g, publish_time, client, g[pick].sequence_id) for g in groups]


def make_container(
    batching_type: BatchingType,
    producer_name: str,
    max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES,
    max_bytes: int = DEFAULT_BATCHING_MAX_BYTES,
    *,
    client: ClientLibrary = ClientLibrary.JAVA,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> BatchMessageContainer | KeyBasedBatchMessageContainer:
    """The container for a producer's ``batching_type`` (`BatcherBuilder.DEFAULT` / `KEY_BASED`)."""
    if batching_type is BatchingType.Default:
        cls: type[BatchMessageContainer] | type[KeyBasedBatchMessageContainer] = BatchMessageContainer
    elif batching_type is BatchingType.KeyBased:
        cls = KeyBasedBatchMessageContainer
    else:
        raise TypeError(f"batching_type must be a BatchingType (Default or KeyBased), not {batching_type!r}")
    return cls(producer_name, max_messages, max_bytes, client=client, max_message_size=max_message_size)
