"""The protocol's commands as typed dataclasses: the project's own schema of Pulsar's binary protocol.

Models the messages of `PulsarApi.proto` that a broker reads or writes (`BaseCommand` and the commands it
wraps, `MessageIdData`, `KeySharedMeta`, `Schema`, ...), with Pulsar's field numbers, wire types, proto2
presence and defaults (which is all interoperability needs); names are the lab's own (``MsgId``, ``Subscribe``,
``LookupResponse``...). `CommandType` numbers the commands (the field carrying a command's body in the
envelope has the same number as its type). The enums a command carries are the wire types of `pulsarlab.protocol`.

Simplifies: commands the lab never handles (transactions, topic watchers, authentication challenges) are
known by number only; the envelope itself is read and written by `decode_command` / `encode_command`.

Over 800 lines on purpose: it is a declarative schema, one small dataclass per message of `PulsarApi.proto` with
its field table and no logic, kept in one file as the .proto keeps them, so a message is checked against
Pulsar's in one place and the codec's field tables share one namespace. Splitting it by command family would
scatter the schema without making any piece simpler.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pulsarlab.protocol.acks import AckType
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.protocol.subscription import ConsumerType, InitialPosition, KeySharedMode
from pulsarlab.serve.codec import (
    BOOL,
    BYTES,
    DOUBLE,
    ENUM,
    INT32,
    INT64,
    MESSAGE,
    REPEATED,
    REQUIRED,
    STRING,
    UINT32,
    UINT64,
    CodecError,
    F,
    ProtoMessage,
    encode_varint,
    iter_fields,
    proto,
)


class CommandType(enum.IntEnum):
    """`BaseCommand.Type`."""

    CONNECT = 2
    CONNECTED = 3
    SUBSCRIBE = 4
    PRODUCER = 5
    SEND = 6
    SEND_RECEIPT = 7
    SEND_ERROR = 8
    MESSAGE = 9
    ACK = 10
    FLOW = 11
    UNSUBSCRIBE = 12
    SUCCESS = 13
    ERROR = 14
    CLOSE_PRODUCER = 15
    CLOSE_CONSUMER = 16
    PRODUCER_SUCCESS = 17
    PING = 18
    PONG = 19
    REDELIVER_UNACKNOWLEDGED_MESSAGES = 20
    PARTITIONED_METADATA = 21
    PARTITIONED_METADATA_RESPONSE = 22
    LOOKUP = 23
    LOOKUP_RESPONSE = 24
    CONSUMER_STATS = 25
    CONSUMER_STATS_RESPONSE = 26
    REACHED_END_OF_TOPIC = 27
    SEEK = 28
    GET_LAST_MESSAGE_ID = 29
    GET_LAST_MESSAGE_ID_RESPONSE = 30
    ACTIVE_CONSUMER_CHANGE = 31
    GET_TOPICS_OF_NAMESPACE = 32
    GET_TOPICS_OF_NAMESPACE_RESPONSE = 33
    GET_SCHEMA = 34
    GET_SCHEMA_RESPONSE = 35
    AUTH_CHALLENGE = 36
    AUTH_RESPONSE = 37
    ACK_RESPONSE = 38
    GET_OR_CREATE_SCHEMA = 39
    GET_OR_CREATE_SCHEMA_RESPONSE = 40
    NEW_TXN = 50
    NEW_TXN_RESPONSE = 51
    ADD_PARTITION_TO_TXN = 52
    ADD_PARTITION_TO_TXN_RESPONSE = 53
    ADD_SUBSCRIPTION_TO_TXN = 54
    ADD_SUBSCRIPTION_TO_TXN_RESPONSE = 55
    END_TXN = 56
    END_TXN_RESPONSE = 57
    END_TXN_ON_PARTITION = 58
    END_TXN_ON_PARTITION_RESPONSE = 59
    END_TXN_ON_SUBSCRIPTION = 60
    END_TXN_ON_SUBSCRIPTION_RESPONSE = 61
    TC_CLIENT_CONNECT_REQUEST = 62
    TC_CLIENT_CONNECT_RESPONSE = 63
    WATCH_TOPIC_LIST = 64
    WATCH_TOPIC_LIST_SUCCESS = 65
    WATCH_TOPIC_UPDATE = 66
    WATCH_TOPIC_LIST_CLOSE = 67
    TOPIC_MIGRATED = 68


class ValidationError(enum.IntEnum):
    UncompressedSizeCorruption = 0
    DecompressionError = 1
    ChecksumMismatch = 2
    BatchDeSerializeError = 3
    DecryptionError = 4


class LookupKind(enum.IntEnum):
    """`CommandLookupTopicResponse.LookupType`."""

    Redirect = 0
    Connect = 1
    Failed = 2


class MetadataLookupKind(enum.IntEnum):
    """`CommandPartitionedTopicMetadataResponse.LookupType`."""

    Success = 0
    Failed = 1


class CompressionKind(enum.IntEnum):
    NONE = 0
    LZ4 = 1
    ZLIB = 2
    ZSTD = 3
    SNAPPY = 4


class TopicsMode(enum.IntEnum):
    PERSISTENT = 0
    NON_PERSISTENT = 1
    ALL = 2


class SchemaKind(enum.IntEnum):
    """`Schema.Type` (only the number matters to the lab: schemas are accepted and not checked)."""

    NoSchema = 0
    String = 1
    Json = 2
    Protobuf = 3
    Avro = 4
    Bool = 5
    Int8 = 6
    Int16 = 7
    Int32 = 8
    Int64 = 9
    Float = 10
    Double = 11
    Date = 12
    Time = 13
    Timestamp = 14
    KeyValue = 15
    Instant = 16
    LocalDate = 17
    LocalTime = 18
    LocalDateTime = 19
    ProtobufNative = 20


# --- shared parts -------------------------------------------------------------------------------
@proto(F(1, "key", STRING, REQUIRED), F(2, "value", STRING, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class KeyValue(ProtoMessage):
    """`KeyValue`."""

    key: str = ""
    value: str = ""


@proto(F(1, "key", STRING, REQUIRED), F(2, "value", UINT64, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class KeyLongValue(ProtoMessage):
    """`KeyLongValue`."""

    key: str = ""
    value: int = 0


@proto(F(1, "start", INT32, REQUIRED), F(2, "end", INT32, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class IntRange(ProtoMessage):
    """`IntRange`: a hash range of a Key_Shared consumer."""

    start: int = 0
    end: int = 0


@proto(
    F(1, "name", STRING, REQUIRED),
    F(3, "schema_data", BYTES, REQUIRED),
    F(4, "type", ENUM, REQUIRED, type=SchemaKind),
    F(5, "properties", MESSAGE, REPEATED, type=KeyValue),
)
@dataclass(slots=True, eq=False, repr=False)
class SchemaInfo(ProtoMessage):
    """`Schema`."""

    name: str = ""
    schema_data: bytes = b""
    type: SchemaKind = SchemaKind.NoSchema
    properties: list[KeyValue] = field(default_factory=list)


@proto(
    F(1, "ledger_id", UINT64, REQUIRED),
    F(2, "entry_id", UINT64, REQUIRED),
    F(3, "partition", INT32, default=-1),
    F(4, "batch_index", INT32, default=-1),
    F(5, "ack_set", INT64, REPEATED),
    F(6, "batch_size", INT32),
    F(7, "first_chunk_message_id", MESSAGE, type="MsgId"),
)
@dataclass(slots=True, eq=False, repr=False)
class MsgId(ProtoMessage):
    """`MessageIdData`. Ledger and entry ids are uint64 on the wire, read as Java longs: -1 travels as
    2**64 - 1 and decodes as -1 (``earliest``)."""

    ledger_id: int = 0
    entry_id: int = 0
    partition: int | None = None
    batch_index: int | None = None
    ack_set: list[int] = field(default_factory=list)
    batch_size: int | None = None
    first_chunk_message_id: "MsgId | None" = None

    def ids(self) -> tuple[int, int]:
        """(ledger, entry) as the broker's position reads them (Java longs)."""
        return self.ledger_id, self.entry_id


@proto(
    F(1, "supports_auth_refresh", BOOL, default=False),
    F(2, "supports_broker_entry_metadata", BOOL, default=False),
    F(3, "supports_partial_producer", BOOL, default=False),
    F(4, "supports_topic_watchers", BOOL, default=False),
)
@dataclass(slots=True, eq=False, repr=False)
class FeatureFlags(ProtoMessage):
    """`FeatureFlags` of a CONNECT."""

    supports_auth_refresh: bool | None = None
    supports_broker_entry_metadata: bool | None = None
    supports_partial_producer: bool | None = None
    supports_topic_watchers: bool | None = None


# --- handshake ----------------------------------------------------------------------------------
@proto(
    F(1, "client_version", STRING, REQUIRED),
    F(2, "auth_method", INT32),
    F(3, "auth_data", BYTES),
    F(4, "protocol_version", INT32, default=0),
    F(5, "auth_method_name", STRING),
    F(6, "proxy_to_broker_url", STRING),
    F(7, "original_principal", STRING),
    F(8, "original_auth_data", STRING),
    F(9, "original_auth_method", STRING),
    F(10, "feature_flags", MESSAGE, type=FeatureFlags),
)
@dataclass(slots=True, eq=False, repr=False)
class Connect(ProtoMessage):
    """`CommandConnect`."""

    client_version: str = ""
    auth_method: int | None = None
    auth_data: bytes | None = None
    protocol_version: int | None = None
    auth_method_name: str | None = None
    proxy_to_broker_url: str | None = None
    original_principal: str | None = None
    original_auth_data: str | None = None
    original_auth_method: str | None = None
    feature_flags: FeatureFlags | None = None


@proto(
    F(1, "server_version", STRING, REQUIRED),
    F(2, "protocol_version", INT32, default=0),
    F(3, "max_message_size", INT32),
    F(4, "feature_flags", MESSAGE, type=FeatureFlags),
)
@dataclass(slots=True, eq=False, repr=False)
class Connected(ProtoMessage):
    """`CommandConnected`."""

    server_version: str = ""
    protocol_version: int | None = None
    max_message_size: int | None = None
    feature_flags: FeatureFlags | None = None


@proto()
@dataclass(slots=True, eq=False, repr=False)
class Ping(ProtoMessage):
    """`CommandPing`."""

    pass


@proto()
@dataclass(slots=True, eq=False, repr=False)
class Pong(ProtoMessage):
    """`CommandPong`."""

    pass


# --- lookup -------------------------------------------------------------------------------------
@proto(
    F(1, "topic", STRING, REQUIRED),
    F(2, "request_id", UINT64, REQUIRED),
    F(3, "original_principal", STRING),
    F(4, "original_auth_data", STRING),
    F(5, "original_auth_method", STRING),
)
@dataclass(slots=True, eq=False, repr=False)
class PartitionMetadataRequest(ProtoMessage):
    """`CommandPartitionedTopicMetadata`."""

    topic: str = ""
    request_id: int = 0
    original_principal: str | None = None
    original_auth_data: str | None = None
    original_auth_method: str | None = None


@proto(
    F(1, "partitions", UINT32),
    F(2, "request_id", UINT64, REQUIRED),
    F(3, "response", ENUM, type=MetadataLookupKind),
    F(4, "error", ENUM, type=ServerError),
    F(5, "message", STRING),
)
@dataclass(slots=True, eq=False, repr=False)
class PartitionMetadataResponse(ProtoMessage):
    """`CommandPartitionedTopicMetadataResponse`."""

    partitions: int | None = None
    request_id: int = 0
    response: MetadataLookupKind | None = None
    error: ServerError | None = None
    message: str | None = None


@proto(
    F(1, "topic", STRING, REQUIRED),
    F(2, "request_id", UINT64, REQUIRED),
    F(3, "authoritative", BOOL, default=False),
    F(4, "original_principal", STRING),
    F(5, "original_auth_data", STRING),
    F(6, "original_auth_method", STRING),
    F(7, "advertised_listener_name", STRING),
)
@dataclass(slots=True, eq=False, repr=False)
class LookupRequest(ProtoMessage):
    """`CommandLookupTopic`."""

    topic: str = ""
    request_id: int = 0
    authoritative: bool | None = None
    original_principal: str | None = None
    original_auth_data: str | None = None
    original_auth_method: str | None = None
    advertised_listener_name: str | None = None


@proto(
    F(1, "broker_service_url", STRING),
    F(2, "broker_service_url_tls", STRING),
    F(3, "response", ENUM, type=LookupKind),
    F(4, "request_id", UINT64, REQUIRED),
    F(5, "authoritative", BOOL, default=False),
    F(6, "error", ENUM, type=ServerError),
    F(7, "message", STRING),
    F(8, "proxy_through_service_url", BOOL, default=False),
)
@dataclass(slots=True, eq=False, repr=False)
class LookupResponse(ProtoMessage):
    """`CommandLookupTopicResponse`."""

    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None
    response: LookupKind | None = None
    request_id: int = 0
    authoritative: bool | None = None
    error: ServerError | None = None
    message: str | None = None
    proxy_through_service_url: bool | None = None


# --- producing ----------------------------------------------------------------------------------
@proto(
    F(1, "topic", STRING, REQUIRED),
    F(2, "producer_id", UINT64, REQUIRED),
    F(3, "request_id", UINT64, REQUIRED),
    F(4, "producer_name", STRING),
    F(5, "encrypted", BOOL, default=False),
    F(6, "metadata", MESSAGE, REPEATED, type=KeyValue),
    F(7, "schema", MESSAGE, type=SchemaInfo),
    F(8, "epoch", UINT64, default=0),
    F(9, "user_provided_producer_name", BOOL, default=True),
    F(10, "producer_access_mode", ENUM, default=ProducerAccessMode.Shared, type=ProducerAccessMode),
    F(11, "topic_epoch", UINT64),
    F(12, "txn_enabled", BOOL, default=False),
    F(13, "initial_subscription_name", STRING),
)
@dataclass(slots=True, eq=False, repr=False)
class ProducerRequest(ProtoMessage):
    """`CommandProducer`."""

    topic: str = ""
    producer_id: int = 0
    request_id: int = 0
    producer_name: str | None = None
    encrypted: bool | None = None
    metadata: list[KeyValue] = field(default_factory=list)
    schema: SchemaInfo | None = None
    epoch: int | None = None
    user_provided_producer_name: bool | None = None
    producer_access_mode: ProducerAccessMode | None = None
    topic_epoch: int | None = None
    txn_enabled: bool | None = None
    initial_subscription_name: str | None = None


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "producer_name", STRING, REQUIRED),
    F(3, "last_sequence_id", INT64, default=-1),
    F(4, "schema_version", BYTES),
    F(5, "topic_epoch", UINT64),
    F(6, "producer_ready", BOOL, default=True),
)
@dataclass(slots=True, eq=False, repr=False)
class ProducerSuccess(ProtoMessage):
    """`CommandProducerSuccess`."""

    request_id: int = 0
    producer_name: str = ""
    last_sequence_id: int | None = None
    schema_version: bytes | None = None
    topic_epoch: int | None = None
    producer_ready: bool | None = None


@proto(
    F(1, "producer_id", UINT64, REQUIRED),
    F(2, "sequence_id", UINT64, REQUIRED),
    F(3, "num_messages", INT32, default=1),
    F(4, "txnid_least_bits", UINT64, default=0),
    F(5, "txnid_most_bits", UINT64, default=0),
    F(6, "highest_sequence_id", UINT64, default=0),
    F(7, "is_chunk", BOOL, default=False),
    F(8, "marker", BOOL, default=False),
    F(9, "message_id", MESSAGE, type=MsgId),
)
@dataclass(slots=True, eq=False, repr=False)
class Send(ProtoMessage):
    """`CommandSend` (its payload follows the command in the frame)."""

    producer_id: int = 0
    sequence_id: int = 0
    num_messages: int | None = None
    txnid_least_bits: int | None = None
    txnid_most_bits: int | None = None
    highest_sequence_id: int | None = None
    is_chunk: bool | None = None
    marker: bool | None = None
    message_id: MsgId | None = None


@proto(
    F(1, "producer_id", UINT64, REQUIRED),
    F(2, "sequence_id", UINT64, REQUIRED),
    F(3, "message_id", MESSAGE, type=MsgId),
    F(4, "highest_sequence_id", UINT64, default=0),
)
@dataclass(slots=True, eq=False, repr=False)
class SendReceipt(ProtoMessage):
    """`CommandSendReceipt`."""

    producer_id: int = 0
    sequence_id: int = 0
    message_id: MsgId | None = None
    highest_sequence_id: int | None = None


@proto(
    F(1, "producer_id", UINT64, REQUIRED),
    F(2, "sequence_id", UINT64, REQUIRED),
    F(3, "error", ENUM, REQUIRED, type=ServerError),
    F(4, "message", STRING, REQUIRED),
)
@dataclass(slots=True, eq=False, repr=False)
class SendError(ProtoMessage):
    """`CommandSendError`."""

    producer_id: int = 0
    sequence_id: int = 0
    error: ServerError = ServerError.UnknownError
    message: str = ""


@proto(
    F(1, "producer_id", UINT64, REQUIRED),
    F(2, "request_id", UINT64, REQUIRED),
    F(3, "assigned_broker_service_url", STRING),
    F(4, "assigned_broker_service_url_tls", STRING),
)
@dataclass(slots=True, eq=False, repr=False)
class CloseProducer(ProtoMessage):
    """`CommandCloseProducer`."""

    producer_id: int = 0
    request_id: int = 0
    assigned_broker_service_url: str | None = None
    assigned_broker_service_url_tls: str | None = None


# --- consuming ----------------------------------------------------------------------------------
@proto(
    F(1, "mode", ENUM, REQUIRED, type=KeySharedMode),
    F(3, "hash_ranges", MESSAGE, REPEATED, type=IntRange),
    F(4, "allow_out_of_order_delivery", BOOL, default=False),
)
@dataclass(slots=True, eq=False, repr=False)
class KeySharedMeta(ProtoMessage):
    """`KeySharedMeta` of a Key_Shared SUBSCRIBE."""

    mode: KeySharedMode = KeySharedMode.AutoSplit
    hash_ranges: list[IntRange] = field(default_factory=list)
    allow_out_of_order_delivery: bool | None = None


@proto(
    F(1, "topic", STRING, REQUIRED),
    F(2, "subscription", STRING, REQUIRED),
    F(3, "sub_type", ENUM, REQUIRED, type=ConsumerType),
    F(4, "consumer_id", UINT64, REQUIRED),
    F(5, "request_id", UINT64, REQUIRED),
    F(6, "consumer_name", STRING),
    F(7, "priority_level", INT32),
    F(8, "durable", BOOL, default=True),
    F(9, "start_message_id", MESSAGE, type=MsgId),
    F(10, "metadata", MESSAGE, REPEATED, type=KeyValue),
    F(11, "read_compacted", BOOL),
    F(12, "schema", MESSAGE, type=SchemaInfo),
    F(13, "initial_position", ENUM, default=InitialPosition.Latest, type=InitialPosition),
    F(14, "replicate_subscription_state", BOOL),
    F(15, "force_topic_creation", BOOL, default=True),
    F(16, "start_message_rollback_duration_sec", UINT64, default=0),
    F(17, "key_shared_meta", MESSAGE, type=KeySharedMeta),
    F(18, "subscription_properties", MESSAGE, REPEATED, type=KeyValue),
    F(19, "consumer_epoch", UINT64),
)
@dataclass(slots=True, eq=False, repr=False)
class Subscribe(ProtoMessage):
    """`CommandSubscribe`."""

    topic: str = ""
    subscription: str = ""
    sub_type: ConsumerType = ConsumerType.Exclusive
    consumer_id: int = 0
    request_id: int = 0
    consumer_name: str | None = None
    priority_level: int | None = None
    durable: bool | None = None
    start_message_id: MsgId | None = None
    metadata: list[KeyValue] = field(default_factory=list)
    read_compacted: bool | None = None
    schema: SchemaInfo | None = None
    initial_position: InitialPosition | None = None
    replicate_subscription_state: bool | None = None
    force_topic_creation: bool | None = None
    start_message_rollback_duration_sec: int | None = None
    key_shared_meta: KeySharedMeta | None = None
    subscription_properties: list[KeyValue] = field(default_factory=list)
    consumer_epoch: int | None = None


@proto(F(1, "consumer_id", UINT64, REQUIRED), F(2, "message_permits", UINT32, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class Flow(ProtoMessage):
    """`CommandFlow`."""

    consumer_id: int = 0
    message_permits: int = 0


@proto(
    F(1, "consumer_id", UINT64, REQUIRED),
    F(2, "message_id", MESSAGE, REQUIRED, type=MsgId),
    F(3, "redelivery_count", UINT32, default=0),
    F(4, "ack_set", INT64, REPEATED),
    F(5, "consumer_epoch", UINT64),
)
@dataclass(slots=True, eq=False, repr=False)
class MessageCmd(ProtoMessage):
    """`CommandMessage` (broker to client; the entry's metadata and payload follow it in the frame)."""

    consumer_id: int = 0
    message_id: MsgId = field(default_factory=MsgId)
    redelivery_count: int | None = None
    ack_set: list[int] = field(default_factory=list)
    consumer_epoch: int | None = None


@proto(
    F(1, "consumer_id", UINT64, REQUIRED),
    F(2, "ack_type", ENUM, REQUIRED, type=AckType),
    F(3, "message_ids", MESSAGE, REPEATED, type=MsgId),
    F(4, "validation_error", ENUM, type=ValidationError),
    F(5, "properties", MESSAGE, REPEATED, type=KeyLongValue),
    F(6, "txnid_least_bits", UINT64, default=0),
    F(7, "txnid_most_bits", UINT64, default=0),
    F(8, "request_id", UINT64),
)
@dataclass(slots=True, eq=False, repr=False)
class Ack(ProtoMessage):
    """`CommandAck`."""

    consumer_id: int = 0
    ack_type: AckType = AckType.INDIVIDUAL
    message_ids: list[MsgId] = field(default_factory=list)
    validation_error: ValidationError | None = None
    properties: list[KeyLongValue] = field(default_factory=list)
    txnid_least_bits: int | None = None
    txnid_most_bits: int | None = None
    request_id: int | None = None


@proto(
    F(1, "consumer_id", UINT64, REQUIRED),
    F(2, "txnid_least_bits", UINT64, default=0),
    F(3, "txnid_most_bits", UINT64, default=0),
    F(4, "error", ENUM, type=ServerError),
    F(5, "message", STRING),
    F(6, "request_id", UINT64),
)
@dataclass(slots=True, eq=False, repr=False)
class AckResponse(ProtoMessage):
    """`CommandAckResponse`."""

    consumer_id: int = 0
    txnid_least_bits: int | None = None
    txnid_most_bits: int | None = None
    error: ServerError | None = None
    message: str | None = None
    request_id: int | None = None


@proto(F(1, "consumer_id", UINT64, REQUIRED), F(2, "is_active", BOOL, default=False))
@dataclass(slots=True, eq=False, repr=False)
class ActiveConsumerChange(ProtoMessage):
    """`CommandActiveConsumerChange`."""

    consumer_id: int = 0
    is_active: bool | None = None


@proto(F(1, "consumer_id", UINT64, REQUIRED), F(2, "request_id", UINT64, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class Unsubscribe(ProtoMessage):
    """`CommandUnsubscribe`."""

    consumer_id: int = 0
    request_id: int = 0


@proto(
    F(1, "consumer_id", UINT64, REQUIRED),
    F(2, "request_id", UINT64, REQUIRED),
    F(3, "message_id", MESSAGE, type=MsgId),
    F(4, "message_publish_time", UINT64),
)
@dataclass(slots=True, eq=False, repr=False)
class Seek(ProtoMessage):
    """`CommandSeek`."""

    consumer_id: int = 0
    request_id: int = 0
    message_id: MsgId | None = None
    message_publish_time: int | None = None


@proto(F(1, "consumer_id", UINT64, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class ReachedEndOfTopic(ProtoMessage):
    """`CommandReachedEndOfTopic`."""

    consumer_id: int = 0


@proto(
    F(1, "consumer_id", UINT64, REQUIRED),
    F(2, "request_id", UINT64, REQUIRED),
    F(3, "assigned_broker_service_url", STRING),
    F(4, "assigned_broker_service_url_tls", STRING),
)
@dataclass(slots=True, eq=False, repr=False)
class CloseConsumer(ProtoMessage):
    """`CommandCloseConsumer`."""

    consumer_id: int = 0
    request_id: int = 0
    assigned_broker_service_url: str | None = None
    assigned_broker_service_url_tls: str | None = None


@proto(
    F(1, "consumer_id", UINT64, REQUIRED),
    F(2, "message_ids", MESSAGE, REPEATED, type=MsgId),
    F(3, "consumer_epoch", UINT64),
)
@dataclass(slots=True, eq=False, repr=False)
class RedeliverUnacked(ProtoMessage):
    """`CommandRedeliverUnacknowledgedMessages`."""

    consumer_id: int = 0
    message_ids: list[MsgId] = field(default_factory=list)
    consumer_epoch: int | None = None


# --- generic replies ----------------------------------------------------------------------------
@proto(F(1, "request_id", UINT64, REQUIRED), F(2, "schema", MESSAGE, type=SchemaInfo))
@dataclass(slots=True, eq=False, repr=False)
class Success(ProtoMessage):
    """`CommandSuccess`."""

    request_id: int = 0
    schema: SchemaInfo | None = None


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "error", ENUM, REQUIRED, type=ServerError),
    F(3, "message", STRING, REQUIRED),
)
@dataclass(slots=True, eq=False, repr=False)
class Error(ProtoMessage):
    """`CommandError`."""

    request_id: int = 0
    error: ServerError = ServerError.UnknownError
    message: str = ""


# --- queries ------------------------------------------------------------------------------------
@proto(F(1, "request_id", UINT64, REQUIRED), F(4, "consumer_id", UINT64, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class ConsumerStats(ProtoMessage):
    """`CommandConsumerStats`."""

    request_id: int = 0
    consumer_id: int = 0


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "error_code", ENUM, type=ServerError),
    F(3, "error_message", STRING),
    F(4, "msg_rate_out", DOUBLE),
    F(5, "msg_throughput_out", DOUBLE),
    F(6, "msg_rate_redeliver", DOUBLE),
    F(7, "consumer_name", STRING),
    F(8, "available_permits", UINT64),
    F(9, "unacked_messages", UINT64),
    F(10, "blocked_consumer_on_unacked_msgs", BOOL),
    F(11, "address", STRING),
    F(12, "connected_since", STRING),
    F(13, "type", STRING),
    F(14, "msg_rate_expired", DOUBLE),
    F(15, "msg_backlog", UINT64),
    F(16, "message_ack_rate", DOUBLE),
)
@dataclass(slots=True, eq=False, repr=False)
class ConsumerStatsResponse(ProtoMessage):
    """`CommandConsumerStatsResponse`."""

    request_id: int = 0
    error_code: ServerError | None = None
    error_message: str | None = None
    msg_rate_out: float | None = None
    msg_throughput_out: float | None = None
    msg_rate_redeliver: float | None = None
    consumer_name: str | None = None
    available_permits: int | None = None
    unacked_messages: int | None = None
    blocked_consumer_on_unacked_msgs: bool | None = None
    address: str | None = None
    connected_since: str | None = None
    type: str | None = None
    msg_rate_expired: float | None = None
    msg_backlog: int | None = None
    message_ack_rate: float | None = None


@proto(F(1, "consumer_id", UINT64, REQUIRED), F(2, "request_id", UINT64, REQUIRED))
@dataclass(slots=True, eq=False, repr=False)
class GetLastMessageId(ProtoMessage):
    """`CommandGetLastMessageId`."""

    consumer_id: int = 0
    request_id: int = 0


@proto(
    F(1, "last_message_id", MESSAGE, REQUIRED, type=MsgId),
    F(2, "request_id", UINT64, REQUIRED),
    F(3, "consumer_mark_delete_position", MESSAGE, type=MsgId),
)
@dataclass(slots=True, eq=False, repr=False)
class GetLastMessageIdResponse(ProtoMessage):
    """`CommandGetLastMessageIdResponse`."""

    last_message_id: MsgId = field(default_factory=MsgId)
    request_id: int = 0
    consumer_mark_delete_position: MsgId | None = None


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "namespace", STRING, REQUIRED),
    F(3, "mode", ENUM, default=TopicsMode.PERSISTENT, type=TopicsMode),
    F(4, "topics_pattern", STRING),
    F(5, "topics_hash", STRING),
)
@dataclass(slots=True, eq=False, repr=False)
class GetTopicsOfNamespace(ProtoMessage):
    """`CommandGetTopicsOfNamespace`."""

    request_id: int = 0
    namespace: str = ""
    mode: TopicsMode | None = None
    topics_pattern: str | None = None
    topics_hash: str | None = None


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "topics", STRING, REPEATED),
    F(3, "filtered", BOOL, default=False),
    F(4, "topics_hash", STRING),
    F(5, "changed", BOOL, default=True),
)
@dataclass(slots=True, eq=False, repr=False)
class GetTopicsOfNamespaceResponse(ProtoMessage):
    """`CommandGetTopicsOfNamespaceResponse`."""

    request_id: int = 0
    topics: list[str] = field(default_factory=list)
    filtered: bool | None = None
    topics_hash: str | None = None
    changed: bool | None = None


@proto(F(1, "request_id", UINT64, REQUIRED), F(2, "topic", STRING, REQUIRED), F(3, "schema_version", BYTES))
@dataclass(slots=True, eq=False, repr=False)
class GetSchema(ProtoMessage):
    """`CommandGetSchema`."""

    request_id: int = 0
    topic: str = ""
    schema_version: bytes | None = None


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "error_code", ENUM, type=ServerError),
    F(3, "error_message", STRING),
    F(4, "schema", MESSAGE, type=SchemaInfo),
    F(5, "schema_version", BYTES),
)
@dataclass(slots=True, eq=False, repr=False)
class GetSchemaResponse(ProtoMessage):
    """`CommandGetSchemaResponse`."""

    request_id: int = 0
    error_code: ServerError | None = None
    error_message: str | None = None
    schema: SchemaInfo | None = None
    schema_version: bytes | None = None


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "topic", STRING, REQUIRED),
    F(3, "schema", MESSAGE, REQUIRED, type=SchemaInfo),
)
@dataclass(slots=True, eq=False, repr=False)
class GetOrCreateSchema(ProtoMessage):
    """`CommandGetOrCreateSchema`."""

    request_id: int = 0
    topic: str = ""
    schema: SchemaInfo = field(default_factory=SchemaInfo)


@proto(
    F(1, "request_id", UINT64, REQUIRED),
    F(2, "error_code", ENUM, type=ServerError),
    F(3, "error_message", STRING),
    F(4, "schema_version", BYTES),
)
@dataclass(slots=True, eq=False, repr=False)
class GetOrCreateSchemaResponse(ProtoMessage):
    """`CommandGetOrCreateSchemaResponse`."""

    request_id: int = 0
    error_code: ServerError | None = None
    error_message: str | None = None
    schema_version: bytes | None = None


# --- entry metadata -----------------------------------------------------------------------------
@proto(
    F(1, "producer_name", STRING, REQUIRED),
    F(2, "sequence_id", UINT64, REQUIRED),
    F(3, "publish_time", UINT64, REQUIRED),
    F(4, "properties", MESSAGE, REPEATED, type=KeyValue),
    F(5, "replicated_from", STRING),
    F(6, "partition_key", STRING),
    F(7, "replicate_to", STRING, REPEATED),
    F(8, "compression", ENUM, default=CompressionKind.NONE, type=CompressionKind),
    F(9, "uncompressed_size", UINT32, default=0),
    F(11, "num_messages_in_batch", INT32, default=1),
    F(12, "event_time", UINT64, default=0),
    F(14, "encryption_algo", STRING),
    F(15, "encryption_param", BYTES),
    F(16, "schema_version", BYTES),
    F(17, "partition_key_b64_encoded", BOOL, default=False),
    F(18, "ordering_key", BYTES),
    F(19, "deliver_at_time", INT64),
    F(20, "marker_type", INT32),
    F(22, "txnid_least_bits", UINT64),
    F(23, "txnid_most_bits", UINT64),
    F(24, "highest_sequence_id", UINT64, default=0),
    F(25, "null_value", BOOL, default=False),
    F(26, "uuid", STRING),
    F(27, "num_chunks_from_msg", INT32),
    F(28, "total_chunk_msg_size", INT32),
    F(29, "chunk_id", INT32),
    F(30, "null_partition_key", BOOL, default=False),
)
@dataclass(slots=True, eq=False, repr=False)
class WireMetadata(ProtoMessage):
    """`MessageMetadata` as it travels (the broker stores and forwards these bytes unchanged)."""

    producer_name: str = ""
    sequence_id: int = 0
    publish_time: int = 0
    properties: list[KeyValue] = field(default_factory=list)
    replicated_from: str | None = None
    partition_key: str | None = None
    replicate_to: list[str] = field(default_factory=list)
    compression: CompressionKind | None = None
    uncompressed_size: int | None = None
    num_messages_in_batch: int | None = None
    event_time: int | None = None
    encryption_algo: str | None = None
    encryption_param: bytes | None = None
    schema_version: bytes | None = None
    partition_key_b64_encoded: bool | None = None
    ordering_key: bytes | None = None
    deliver_at_time: int | None = None
    marker_type: int | None = None
    txnid_least_bits: int | None = None
    txnid_most_bits: int | None = None
    highest_sequence_id: int | None = None
    null_value: bool | None = None
    uuid: str | None = None
    num_chunks_from_msg: int | None = None
    total_chunk_msg_size: int | None = None
    chunk_id: int | None = None
    null_partition_key: bool | None = None


@proto(
    F(1, "properties", MESSAGE, REPEATED, type=KeyValue),
    F(2, "partition_key", STRING),
    F(3, "payload_size", INT32, REQUIRED),
    F(4, "compacted_out", BOOL, default=False),
    F(5, "event_time", UINT64, default=0),
    F(6, "partition_key_b64_encoded", BOOL, default=False),
    F(7, "ordering_key", BYTES),
    F(8, "sequence_id", UINT64),
    F(9, "null_value", BOOL, default=False),
    F(10, "null_partition_key", BOOL, default=False),
)
@dataclass(slots=True, eq=False, repr=False)
class WireSingleMetadata(ProtoMessage):
    """`SingleMessageMetadata`: one message's header inside a batch payload."""

    properties: list[KeyValue] = field(default_factory=list)
    partition_key: str | None = None
    payload_size: int = 0
    compacted_out: bool | None = None
    event_time: int | None = None
    partition_key_b64_encoded: bool | None = None
    ordering_key: bytes | None = None
    sequence_id: int | None = None
    null_value: bool | None = None
    null_partition_key: bool | None = None


# --- the envelope -------------------------------------------------------------------------------
BODIES: dict[CommandType, type[ProtoMessage]] = {
    CommandType.CONNECT: Connect,
    CommandType.CONNECTED: Connected,
    CommandType.SUBSCRIBE: Subscribe,
    CommandType.PRODUCER: ProducerRequest,
    CommandType.SEND: Send,
    CommandType.SEND_RECEIPT: SendReceipt,
    CommandType.SEND_ERROR: SendError,
    CommandType.MESSAGE: MessageCmd,
    CommandType.ACK: Ack,
    CommandType.FLOW: Flow,
    CommandType.UNSUBSCRIBE: Unsubscribe,
    CommandType.SUCCESS: Success,
    CommandType.ERROR: Error,
    CommandType.CLOSE_PRODUCER: CloseProducer,
    CommandType.CLOSE_CONSUMER: CloseConsumer,
    CommandType.PRODUCER_SUCCESS: ProducerSuccess,
    CommandType.PING: Ping,
    CommandType.PONG: Pong,
    CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES: RedeliverUnacked,
    CommandType.PARTITIONED_METADATA: PartitionMetadataRequest,
    CommandType.PARTITIONED_METADATA_RESPONSE: PartitionMetadataResponse,
    CommandType.LOOKUP: LookupRequest,
    CommandType.LOOKUP_RESPONSE: LookupResponse,
    CommandType.CONSUMER_STATS: ConsumerStats,
    CommandType.CONSUMER_STATS_RESPONSE: ConsumerStatsResponse,
    CommandType.REACHED_END_OF_TOPIC: ReachedEndOfTopic,
    CommandType.SEEK: Seek,
    CommandType.GET_LAST_MESSAGE_ID: GetLastMessageId,
    CommandType.GET_LAST_MESSAGE_ID_RESPONSE: GetLastMessageIdResponse,
    CommandType.ACTIVE_CONSUMER_CHANGE: ActiveConsumerChange,
    CommandType.GET_TOPICS_OF_NAMESPACE: GetTopicsOfNamespace,
    CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE: GetTopicsOfNamespaceResponse,
    CommandType.GET_SCHEMA: GetSchema,
    CommandType.GET_SCHEMA_RESPONSE: GetSchemaResponse,
    CommandType.ACK_RESPONSE: AckResponse,
    CommandType.GET_OR_CREATE_SCHEMA: GetOrCreateSchema,
    CommandType.GET_OR_CREATE_SCHEMA_RESPONSE: GetOrCreateSchemaResponse,
}
BODY_TYPES: dict[type, CommandType] = {cls: t for t, cls in BODIES.items()}


class UnknownCommand(CodecError):
    """The envelope names a command type that is not in `CommandType` (or none at all)."""


@dataclass(slots=True, eq=False, repr=False)
class RawCommand:
    """An envelope read without decoding its body: the type and where the body lies in the buffer."""

    type: CommandType
    body_start: int
    body_end: int

    def decode_body(self, buf) -> ProtoMessage:
        cls = BODIES.get(self.type)
        if cls is None:
            raise UnknownCommand(f"no body declared for command {self.type.name}")
        return cls.decode(buf, self.body_start, self.body_end)


def read_envelope(buf, start: int, end: int) -> RawCommand:
    """The `BaseCommand` at ``buf[start:end]``: its type (required) and the span of the matching body field.

    A body that is absent reads as empty (a command without required fields, such as PING, decodes from it).
    """
    type_value = None
    bodies: dict[int, tuple[int, int]] = {}
    for number, wire, raw in iter_fields(buf, start, end):
        if number == 1:
            if wire != 0:
                raise CodecError("BaseCommand.type is not a varint")
            type_value = raw
        elif wire == 2:
            bodies[number] = raw
    if type_value is None:
        raise UnknownCommand("BaseCommand has no type")
    try:
        ctype = CommandType(type_value)
    except ValueError:
        raise UnknownCommand(f"unknown command type {type_value}") from None
    span = bodies.get(int(ctype), (end, end))
    return RawCommand(ctype, span[0], span[1])


def decode_command(buf, start: int = 0, end: int | None = None) -> tuple[CommandType, ProtoMessage]:
    """``(type, body)`` of an encoded `BaseCommand`."""
    raw = read_envelope(buf, start, len(buf) if end is None else end)
    return raw.type, raw.decode_body(buf)


def encode_command(body: ProtoMessage) -> bytes:
    """The `BaseCommand` carrying ``body`` (its type follows from the body's class)."""
    ctype = BODY_TYPES[type(body)]
    data = body.encode()
    n = int(ctype)
    return b"\x08" + encode_varint(n) + encode_varint((n << 3) | 2) + encode_varint(len(data)) + data


def request_id_of(buf, start: int, end: int) -> int | None:
    """Field 1 of a body as a request id (the transaction and watcher requests keep it there), else None."""
    try:
        for number, wire, raw in iter_fields(buf, start, end):
            if number == 1 and wire == 0:
                return raw
    except CodecError:
        return None
    return None
