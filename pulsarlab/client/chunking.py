"""Producer-side chunking: the checks, the chunk size and count, the chunk entries, and the chunk message id.

Models the chunking path of the Java client's `ProducerImpl.sendAsync` / `serializeAndSendMessage`,
`ProducerBuilderImpl` (the batching check), `ProducerImpl.setChunkMaxMessageSize` and
`ChunkMessageIdImpl` (docs/guide/chunked-messages.md#chunk-count), as read on branch-4.0 and master:

* Chunking needs ``chunking_enabled`` and batching off, else ``IllegalArgumentException("Batching and
  chunking of messages can't be enabled together")`` - thrown on 3.x, a failed future on 4.x.
* The chunk limit is ``min(chunkMaxMessageSize, maxMessageSize)`` when ``chunkMaxMessageSize > 0``, else
  ``maxMessageSize`` (the broker's, learnt on connect). ``payloadChunkSize = min(limit, maxMessageSize -
  metadataSize)``; if ``maxMessageSize - metadataSize <= 0`` the send fails with Pulsar's "metadata that
  exceeds" text. ``totalChunks = ceil(max(1, payloadBytes) / payloadChunkSize)``; one chunk means an
  ordinary message without any chunk field.
* Every chunk repeats the message's metadata (keys, properties, event time, the *same* sequence id) and adds
  ``uuid = "<producerName>-<sequenceId>"``, ``chunk_id``, ``num_chunks_from_msg`` and
  ``total_chunk_msg_size`` (the whole payload's size); chunk ``i`` carries bytes
  ``[i * payloadChunkSize, min((i + 1) * payloadChunkSize, size))``.
* Without chunking, a payload over ``maxMessageSize`` sent on its own (not batched) fails with
  ``InvalidMessageException`` and Pulsar's text (``"...sends a %s message..."``: "Compressed" or an empty
  string, hence the double space); a batch is checked when it is sent.
* The send returns ``ChunkMessageId(first, last)``: it *is* the last chunk's id (equality, hash and order
  are the last id's), and prints ``first;last``.

The metadata size. Java sizes the metadata (`MessageMetadata.getSerializedSize`, LightProto) *before* the
loop that assigns the sequence id and adds the chunk fields, so the size counts: ``producer_name``,
``sequence_id`` (a required field, always counted: 0 - one varint byte - unless the application set the id),
``publish_time``, ``uncompressed_size`` (always set by the producer), and whatever the message carries
(properties, partition key, ordering key, event time, deliver-at time, a schema version when the producer has
a schema). `serialized_metadata_size` computes the protobuf encoding of those fields: tag bytes (1 for field
numbers below 16, 2 from 16) plus varint or length-prefixed values. ``MessageChunkingTest.testChunkSize``'s
32 bytes ("the default message metadata size for string schema") come out as producer name "test-0-0" (1 + 1
+ 8) + sequence id 0 (2) + an epoch-millisecond publish time (1 + 6) + uncompressed size below 128 (2) + an
8-byte schema version (2 + 1 + 8) = 32, so payloads up to 50 - 32 = 18 bytes go out whole at
``maxMessageSize`` 50. That breakdown is this model's reading, not a number printed by Pulsar. The lab's
virtual clock starts near 0, so its publish times take fewer varint bytes and its producer names differ:
the same threshold appears only when a scenario uses an epoch-millisecond clock and the same name.

The C++ client (under the Python ``pulsar-client``; `ClientLibrary.CPP`, the lab's default) differs, as read
in apache/pulsar-client-cpp `ProducerImpl::sendAsyncWithStatsUpdate` and the Python wrapper
(`check_chunking_config(client=...)`, `plan_for_message(client=...)`, `check_send_size`):

* The Python ``create_producer`` refuses batching with chunking itself, with a plain ``ValueError`` whose text
  ends with a full stop ("...enabled together."), whatever the Pulsar line.
* The metadata is sized *after* the producer stamped name, publish time and its own sequence id, and without
  ``uncompressed_size`` (set only with compression); there is no ``chunkMaxMessageSize``: the chunk size is
  ``maxMessageSize - metadataSize``; metadata of ``maxMessageSize`` bytes or more fails the send.
* Without chunking a non-batched message fails when *metadata plus payload* exceed ``maxMessageSize``; both
  failures are ``ResultMessageTooBig``, which Python raises as ``pulsar.MessageTooBig("Pulsar error:
  MessageTooBig")`` (`MessageTooBig`). Batches are size-checked when the batch is sent; the model does not
  check batches.
* The C++ `ChunkMessageIdImpl` prints each id as ``(ledger,entry,partition,batchIndex)``; the lab prints Java's
  ``L:E:P;L:E:P`` for both clients.

Simplifies: no compression or encryption (the "compressed" payload is the payload), no schemas unless a
schema-version size is passed, no send-queue permits or memory limits for the extra chunks; the lab models
persistent topics only, so the non-persistent branch (no chunk fields) is not modelled. Older lines (3.0)
may assign the sequence id before sizing; that changes the size only once ids reach 128.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pulsarlab.client.batching import OutgoingMessage, non_batched_entry
from pulsarlab.client.library import ClientLibrary
from pulsarlab.errors import IllegalArgumentException, InvalidMessageException, PulsarClientException
from pulsarlab.ids import MessageId
from pulsarlab.messages import EntryData, MessageMetadata
from pulsarlab.profiles import Profile, get_profile

BATCHING_AND_CHUNKING = "Batching and chunking of messages can't be enabled together"
PYTHON_BATCHING_AND_CHUNKING = BATCHING_AND_CHUNKING + "."  # the Python wrapper's own check
MESSAGE_TOO_BIG = "Pulsar error: MessageTooBig"  # str() of the Python client's pulsar.MessageTooBig
DEFAULT_CHUNK_MAX_MESSAGE_SIZE = -1  # ProducerConfigurationData.chunkMaxMessageSize: use the broker's limit


class MessageTooBig(PulsarClientException):
    """``pulsar.MessageTooBig``: the C++ client's ``ResultMessageTooBig``, as the Python client raises it.

    The Java client fails the same send with ``InvalidMessageException`` (`check_message_size`).
    """

    java_class = "org.apache.pulsar.client.api.PulsarClientException$InvalidMessageException"


# MessageMetadata field numbers (PulsarApi.proto) of the fields the size estimate counts.
_PRODUCER_NAME, _SEQUENCE_ID, _PUBLISH_TIME, _PROPERTIES = 1, 2, 3, 4
_PARTITION_KEY, _UNCOMPRESSED_SIZE, _NUM_MESSAGES_IN_BATCH, _EVENT_TIME = 6, 9, 11, 12
_SCHEMA_VERSION, _PARTITION_KEY_B64, _ORDERING_KEY, _DELIVER_AT_TIME = 16, 17, 18, 19
_HIGHEST_SEQUENCE_ID, _UUID, _NUM_CHUNKS, _TOTAL_CHUNK_MSG_SIZE, _CHUNK_ID = 24, 26, 27, 28, 29


# --- protobuf sizes ----------------------------------------------------------------------------------


def varint_size(value: int) -> int:
    """Bytes of a protobuf varint; a negative int32/int64 takes 10 (two's complement on 64 bits)."""
    if value < 0:
        return 10
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def _tag(field_number: int) -> int:
    return varint_size(field_number << 3)


def _varint_field(field_number: int, value: int) -> int:
    return _tag(field_number) + varint_size(value)


def _bytes_field(field_number: int, length: int) -> int:
    return _tag(field_number) + varint_size(length) + length


def serialized_metadata_size(
    metadata: MessageMetadata,
    *,
    schema_version_size: int | None = None,
    uncompressed_size_set: bool | None = None,
) -> int:
    """The protobuf size of ``metadata`` as Java's `MessageMetadata.getSerializedSize` counts it.

    Required fields (producer name, sequence id, publish time) always count; optional ones count when set
    (``None`` / ``event_time`` 0 / ``partition_key_b64_encoded`` False mean unset).
    ``schema_version_size`` is the schema version's byte length when the producer has a schema (8 for
    the broker's long versions). ``uncompressed_size`` counts when non-zero, or when
    ``uncompressed_size_set`` says so (the producer sets it even for an empty payload).
    """
    size = _bytes_field(_PRODUCER_NAME, len(metadata.producer_name.encode("utf-8")))
    size += _varint_field(_SEQUENCE_ID, metadata.sequence_id)
    size += _varint_field(_PUBLISH_TIME, metadata.publish_time)
    for key, value in metadata.properties.items():
        entry = _bytes_field(1, len(key.encode("utf-8"))) + _bytes_field(2, len(value.encode("utf-8")))
        size += _bytes_field(_PROPERTIES, entry)
    if metadata.partition_key is not None:
        size += _bytes_field(_PARTITION_KEY, len(metadata.partition_key.encode("utf-8")))
    if uncompressed_size_set or (uncompressed_size_set is None and metadata.uncompressed_size):
        size += _varint_field(_UNCOMPRESSED_SIZE, metadata.uncompressed_size)
    if metadata.num_messages_in_batch is not None:
        size += _varint_field(_NUM_MESSAGES_IN_BATCH, metadata.num_messages_in_batch)
    if metadata.event_time:
        size += _varint_field(_EVENT_TIME, metadata.event_time)
    if schema_version_size is not None:
        size += _bytes_field(_SCHEMA_VERSION, schema_version_size)
    if metadata.partition_key_b64_encoded:
        size += _varint_field(_PARTITION_KEY_B64, 1)
    if metadata.ordering_key is not None:
        size += _bytes_field(_ORDERING_KEY, len(metadata.ordering_key))
    if metadata.deliver_at_time is not None:
        size += _varint_field(_DELIVER_AT_TIME, metadata.deliver_at_time)
    if metadata.highest_sequence_id is not None:
        size += _varint_field(_HIGHEST_SEQUENCE_ID, metadata.highest_sequence_id)
    if metadata.uuid is not None:
        size += _bytes_field(_UUID, len(metadata.uuid.encode("utf-8")))
    if metadata.num_chunks_from_msg is not None:
        size += _varint_field(_NUM_CHUNKS, metadata.num_chunks_from_msg)
    if metadata.total_chunk_msg_size is not None:
        size += _varint_field(_TOTAL_CHUNK_MSG_SIZE, metadata.total_chunk_msg_size)
    if metadata.chunk_id is not None:
        size += _varint_field(_CHUNK_ID, metadata.chunk_id)
    return size


def _stamped_metadata(
    producer_name: str,
    msg: OutgoingMessage,
    publish_time: int,
    sequence_id: int,
    *,
    properties: dict[str, str] | None = None,
    uncompressed_size: int = 0,
    uuid: str | None = None,
    chunk_id: int | None = None,
    num_chunks_from_msg: int | None = None,
    total_chunk_msg_size: int | None = None,
) -> MessageMetadata:
    """The `MessageMetadata` a producer stamps on ``msg`` (`ProducerImpl.sendAsync`, C++ ``setMessageMetadata``):
    name, ``sequence_id``, publish time (the message's own if it has one), properties (``msg.properties``
    unless given), keys, event and delivery time, and the chunk's fields when given."""
    return MessageMetadata(
        producer_name=producer_name,
        sequence_id=sequence_id,
        publish_time=publish_time if msg.publish_time is None else msg.publish_time,
        properties=msg.properties if properties is None else properties,
        partition_key=msg.partition_key,
        ordering_key=msg.ordering_key,
        event_time=msg.event_time,
        deliver_at_time=msg.deliver_at,
        uncompressed_size=uncompressed_size,
        uuid=uuid,
        chunk_id=chunk_id,
        num_chunks_from_msg=num_chunks_from_msg,
        total_chunk_msg_size=total_chunk_msg_size,
    )


def sizing_metadata_size(
    producer_name: str,
    msg: OutgoingMessage,
    publish_time: int,
    *,
    sequence_id_set_by_application: bool = False,
    schema_version_size: int | None = None,
) -> int:
    """The metadata size `ProducerImpl.sendAsync` subtracts from ``maxMessageSize`` for ``msg``.

    The producer has stamped name, publish time and uncompressed size, but not yet its own sequence id
    (counted as 0) nor any chunk field; an id the application gave (``sequence_id_set_by_application``)
    is already there.
    """
    metadata = _stamped_metadata(
        producer_name,
        msg,
        publish_time,
        msg.sequence_id if sequence_id_set_by_application else 0,
        uncompressed_size=len(msg.payload),
    )
    return serialized_metadata_size(metadata, schema_version_size=schema_version_size, uncompressed_size_set=True)


# --- configuration checks ----------------------------------------------------------------------------


def check_chunking_config(
    *,
    chunking_enabled: bool,
    batching_enabled: bool,
    profile: Profile | str | None = None,
    client: ClientLibrary = ClientLibrary.JAVA,
) -> None:
    """`ProducerBuilderImpl.createAsync`'s check: batching and chunking together are refused.

    Java: 3.x throws the ``IllegalArgumentException`` from ``checkArgument``; 4.x returns it as a failed future
    (``via="future"``). The Python client (`ClientLibrary.CPP`) checks first, in ``create_producer``, and
    raises a plain ``ValueError`` with its own text (`PYTHON_BATCHING_AND_CHUNKING`).
    """
    if chunking_enabled and batching_enabled:
        if client is ClientLibrary.CPP:
            raise ValueError(PYTHON_BATCHING_AND_CHUNKING)
        via = "future" if get_profile(profile).is_4x else "throw"
        raise IllegalArgumentException(BATCHING_AND_CHUNKING, via=via)


def _check_size_arg(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__} ({value!r})")


def effective_chunk_max_message_size(chunk_max_message_size: int, max_message_size: int) -> int:
    """`setChunkMaxMessageSize`: ``min(chunkMaxMessageSize, maxMessageSize)`` if set (> 0), else the latter."""
    _check_size_arg("chunk_max_message_size", chunk_max_message_size)
    _check_size_arg("max_message_size", max_message_size)
    if max_message_size <= 0:
        raise ValueError(f"max_message_size must be > 0 bytes, got {max_message_size}")
    return min(chunk_max_message_size, max_message_size) if chunk_max_message_size > 0 else max_message_size


def check_message_size(
    payload_size: int, max_message_size: int, *, producer_name: str, topic: str, compressed: bool = False
) -> None:
    """The non-chunking size check: a payload over ``maxMessageSize`` fails with Pulsar's text."""
    if payload_size > max_message_size:
        kind = "Compressed" if compressed else ""
        raise InvalidMessageException(
            f"The producer {producer_name} of the topic {topic} sends a {kind} message with {payload_size} "
            f"bytes that exceeds {max_message_size} bytes",
            via="future",
        )


# --- chunk size and count ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ChunkPlan:
    """How one payload is cut: the sizes `ProducerImpl.sendAsync` computes before its send loop."""

    payload_size: int
    metadata_size: int
    max_message_size: int
    chunk_limit: int  # the effective chunkMaxMessageSize
    payload_chunk_size: int
    total_chunks: int

    @property
    def chunked(self) -> bool:
        """True when the message goes out as chunks (more than one)."""
        return self.total_chunks > 1

    def chunk_bounds(self, chunk_id: int) -> tuple[int, int]:
        """The ``[start, end)`` payload bytes of chunk ``chunk_id``."""
        if not 0 <= chunk_id < self.total_chunks:
            raise IndexError(f"chunk {chunk_id} is outside 0..{self.total_chunks - 1}")
        start = chunk_id * self.payload_chunk_size
        return start, min(start + self.payload_chunk_size, self.payload_size)


def plan_chunks(
    payload_size: int,
    metadata_size: int,
    *,
    max_message_size: int,
    chunk_max_message_size: int = DEFAULT_CHUNK_MAX_MESSAGE_SIZE,
    producer_name: str,
    topic: str,
) -> ChunkPlan:
    """Chunk size and count for a chunking producer, or Pulsar's "metadata that exceeds" failure."""
    _check_size_arg("payload_size", payload_size)
    _check_size_arg("metadata_size", metadata_size)
    if payload_size < 0 or metadata_size < 0:
        raise ValueError(f"sizes must be >= 0, got payload {payload_size} and metadata {metadata_size}")
    limit = effective_chunk_max_message_size(chunk_max_message_size, max_message_size)
    room = max_message_size - metadata_size
    if room <= 0:
        raise InvalidMessageException(
            f"The producer {producer_name} of the topic {topic} sends a message with {metadata_size} bytes "
            f"metadata that exceeds {max_message_size} bytes",
            via="future",
        )
    chunk_size = min(limit, room)
    total = -(-max(1, payload_size) // chunk_size)
    return ChunkPlan(payload_size, metadata_size, max_message_size, limit, chunk_size, total)


def cpp_metadata_size(producer_name: str, msg: OutgoingMessage, publish_time: int) -> int:
    """The metadata size the C++ producer subtracts from ``maxMessageSize`` (``msgMetadata.ByteSizeLong()``).

    Counted after ``setMessageMetadata``: producer name, publish time and the message's real sequence id, plus
    what the message carries; no ``uncompressed_size`` (set only with compression) and no chunk field yet.
    """
    metadata = _stamped_metadata(producer_name, msg, publish_time, msg.sequence_id)
    return serialized_metadata_size(metadata, uncompressed_size_set=False)


def _cpp_plan(producer_name: str, msg: OutgoingMessage, publish_time: int, max_message_size: int) -> ChunkPlan:
    _check_size_arg("max_message_size", max_message_size)
    if max_message_size <= 0:
        raise ValueError(f"max_message_size must be > 0 bytes, got {max_message_size}")
    metadata_size = cpp_metadata_size(producer_name, msg, publish_time)
    if metadata_size >= max_message_size:
        raise MessageTooBig(MESSAGE_TOO_BIG, via="future")
    chunk_size = max_message_size - metadata_size
    total = -(-max(1, len(msg.payload)) // chunk_size)
    return ChunkPlan(len(msg.payload), metadata_size, max_message_size, max_message_size, chunk_size, total)


def plan_for_message(
    producer_name: str,
    topic: str,
    msg: OutgoingMessage,
    publish_time: int,
    *,
    max_message_size: int,
    chunk_max_message_size: int = DEFAULT_CHUNK_MAX_MESSAGE_SIZE,
    sequence_id_set_by_application: bool = False,
    schema_version_size: int | None = None,
    client: ClientLibrary = ClientLibrary.JAVA,
) -> ChunkPlan:
    """`plan_chunks` for one outgoing message of a chunking producer of ``client``.

    Java: the metadata size `sizing_metadata_size` gives. C++ (the Python client): `cpp_metadata_size`, no
    ``chunk_max_message_size``, and `MessageTooBig` when the metadata alone reaches ``max_message_size``.
    """
    if client is ClientLibrary.CPP:
        if chunk_max_message_size != DEFAULT_CHUNK_MAX_MESSAGE_SIZE:
            raise ValueError(
                "chunk_max_message_size is the Java client's chunkMaxMessageSize; the C++ client has no such setting"
            )
        return _cpp_plan(producer_name, msg, publish_time, max_message_size)
    metadata_size = sizing_metadata_size(
        producer_name,
        msg,
        publish_time,
        sequence_id_set_by_application=sequence_id_set_by_application,
        schema_version_size=schema_version_size,
    )
    return plan_chunks(
        len(msg.payload),
        metadata_size,
        max_message_size=max_message_size,
        chunk_max_message_size=chunk_max_message_size,
        producer_name=producer_name,
        topic=topic,
    )


def metadata_size_bound(producer_name_field: int, msg: OutgoingMessage) -> int:
    """An upper bound of `cpp_metadata_size` that costs a few ``len`` calls (no encoding).

    ``producer_name_field`` is the exact size of the producer-name field (the same for every message of a
    producer); every varint counts 10 bytes, every tag 2, every length prefix 5, every character 4 bytes.
    """
    bound = producer_name_field + 4 * 12  # sequence id, publish time, event time, deliver-at time
    key = msg.partition_key
    if key is not None:
        bound += 7 + 4 * len(key)
    okey = msg.ordering_key
    if okey is not None:
        bound += 7 + len(okey)
    props = msg.properties
    if props:
        for k, v in props.items():
            bound += 21 + 4 * (len(k) + len(v))
    return bound


def producer_name_field_size(producer_name: str) -> int:
    """The protobuf size of the ``producer_name`` field."""
    return _bytes_field(_PRODUCER_NAME, len(producer_name.encode("utf-8")))


def check_send_size(
    client: ClientLibrary,
    producer_name: str,
    topic: str,
    msg: OutgoingMessage,
    publish_time: int,
    max_message_size: int,
) -> None:
    """The size check of a producer without chunking: Java's `check_message_size` (the payload alone), or the
    C++ client's metadata-plus-payload check that fails with `MessageTooBig`."""
    if client is ClientLibrary.JAVA:
        check_message_size(len(msg.payload), max_message_size, producer_name=producer_name, topic=topic)
        return
    if cpp_metadata_size(producer_name, msg, publish_time) + len(msg.payload) > max_message_size:
        raise MessageTooBig(MESSAGE_TOO_BIG, via="future")


# --- the chunk entries -------------------------------------------------------------------------------


def chunk_uuid(producer_name: str, sequence_id: int) -> str:
    """The uuid every chunk of a message carries: ``"<producerName>-<sequenceId>"``."""
    return f"{producer_name}-{sequence_id}"


def split_into_chunks(
    producer_name: str,
    msg: OutgoingMessage,
    publish_time: int,
    plan: ChunkPlan,
    *,
    client: ClientLibrary = ClientLibrary.JAVA,
) -> list[EntryData]:
    """The entries the producer sends for ``msg``: one plain entry, or ``plan.total_chunks`` chunk entries.

    All chunks share the message's sequence id, keys, properties and publish time; each gets its own copy of
    the properties so a later change to one entry's metadata cannot leak into another.
    """
    if plan.payload_size != len(msg.payload):
        raise ValueError(f"the plan was made for {plan.payload_size} bytes but the message has {len(msg.payload)}")
    if not plan.chunked:
        return [non_batched_entry(producer_name, msg, publish_time, client=client)]
    uuid = chunk_uuid(producer_name, msg.sequence_id)
    entries = []
    for chunk_id in range(plan.total_chunks):
        start, end = plan.chunk_bounds(chunk_id)
        metadata = _stamped_metadata(
            producer_name,
            msg,
            publish_time,
            msg.sequence_id,
            properties=dict(msg.properties),
            uncompressed_size=len(msg.payload) if client is ClientLibrary.JAVA else 0,
            uuid=uuid,
            chunk_id=chunk_id,
            num_chunks_from_msg=plan.total_chunks,
            total_chunk_msg_size=plan.payload_size,
        )
        entries.append(EntryData(metadata, [(None, msg.payload[start:end])]))
    return entries


# --- the chunk message id ----------------------------------------------------------------------------


class ChunkMessageId(MessageId):
    """`ChunkMessageIdImpl`: the id of a chunked message - the last chunk's id that also knows the first.

    Equality, hashing and ordering are the last chunk's (Java's ``equals`` and ``compareTo`` come from
    `MessageIdImpl`), so ``MessageId(1, 1, 1) == ChunkMessageId(MessageId(0, 0, 0), MessageId(1, 1, 1))``.
    Java's ``hashCode`` also mixes in the first id; here the hash is the last id's so that equal ids hash
    equal, as Python's dicts require. ``str()`` is Java's ``first.toString() + ";" + last.toString()``.
    """

    __slots__ = ("first",)
    first: MessageId

    def __init__(self, first: MessageId, last: MessageId) -> None:
        if not isinstance(first, MessageId) or not isinstance(last, MessageId):
            raise TypeError(f"a chunk message id is made of two MessageIds, got {first!r} and {last!r}")
        super().__init__(last.ledger, last.entry, last.partition)
        object.__setattr__(self, "first", MessageId(first.ledger, first.entry, first.partition))

    @property
    def last(self) -> MessageId:
        """The last chunk's id as a plain `MessageId`."""
        return MessageId(self.ledger, self.entry, self.partition)

    def _key(self) -> tuple[int, int, int, int]:
        return (self.ledger, self.entry, self.partition, self.batch_index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageId):
            return self._key() == (other.ledger, other.entry, other.partition, other.batch_index)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self) -> int:
        return hash(self._key())

    def _compare(self, other: object) -> int | None:
        if not isinstance(other, MessageId):
            return None
        a, b = self._key(), (other.ledger, other.entry, other.partition, other.batch_index)
        return (a > b) - (a < b)

    def __lt__(self, other: object) -> bool:
        c = self._compare(other)
        return NotImplemented if c is None else c < 0

    def __le__(self, other: object) -> bool:
        c = self._compare(other)
        return NotImplemented if c is None else c <= 0

    def __gt__(self, other: object) -> bool:
        c = self._compare(other)
        return NotImplemented if c is None else c > 0

    def __ge__(self, other: object) -> bool:
        c = self._compare(other)
        return NotImplemented if c is None else c >= 0

    def __str__(self) -> str:
        return f"{self.first};{MessageId.__str__(self)}"

    def __repr__(self) -> str:
        return f"ChunkMessageId(first={self.first!r}, last={self.last!r})"

    def __reduce__(self) -> tuple[type["ChunkMessageId"], tuple[MessageId, MessageId]]:
        return (ChunkMessageId, (self.first, self.last))

    def __copy__(self) -> "ChunkMessageId":
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> "ChunkMessageId":
        return self


def sent_message_id(chunk_ids: Sequence[MessageId]) -> MessageId:
    """The id a send completes with: the single entry's id, or ``ChunkMessageId(first, last)``."""
    if not chunk_ids:
        raise ValueError("a sent message has at least one entry id")
    if len(chunk_ids) == 1:
        return chunk_ids[0]
    return ChunkMessageId(chunk_ids[0], chunk_ids[-1])
