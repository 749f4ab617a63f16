"""The consumer's, producer's and reader's settings: one frozen object each, built once and validated there.

Models the Java client's `ConsumerConfigurationData`, `ProducerConfigurationData` and `ReaderConfigurationData`:
``Client.subscribe``, ``create_producer`` and ``create_reader`` take the Python client's keywords (same names and
defaults as pulsar-client 3.13, plus the lab's ``lab_`` settings), build the configuration, and the consumer,
producer or reader reads its settings from it (``consumer.config``, ``producer.config``). Each field is named as
its keyword. A bad value fails at the build with the real client's text where it has one (the Python client's
``_check_type`` ``ValueError``; `ConsumerBuilderImpl`'s ``InvalidConfigurationException`` /
``IllegalArgumentException``), else with a `TypeError` / `ValueError` naming the keyword. Settings whose default
depends on the version profile (``batch_index_ack_enabled=None``, the ack timeout a dead-letter policy implies
on 2.x) are resolved by methods that take the profile. Simplifies: the configuration holds only what the lab
models; a producer's checks that depend on its client library run in `ProducerConfiguration.check_for`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pulsarlab.client.ack_grouping import DEFAULT_ACK_GROUP_TIME_MS, DEFAULT_MAX_ACK_GROUP_SIZE
from pulsarlab.client.batching import (
    DEFAULT_BATCHING_MAX_BYTES,
    DEFAULT_BATCHING_MAX_MESSAGES,
    BatchingType,
)
from pulsarlab.client.chunk_reassembly import (
    DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
    DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
)
from pulsarlab.client.chunking import DEFAULT_CHUNK_MAX_MESSAGE_SIZE, check_chunking_config
from pulsarlab.client.library import ClientLibrary
from pulsarlab.client.negative_acks import DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MICROS, MultiplierRedeliveryBackoff
from pulsarlab.client.policies import ConsumerDeadLetterPolicy
from pulsarlab.client.routing import MessageView, PartitionsRoutingMode
from pulsarlab.client.schemas import Schema, schema_data
from pulsarlab.client.unacked_tracker import DEFAULT_TICK_DURATION_MILLIS, check_ack_timeout, check_tick_time
from pulsarlab.errors import IllegalArgumentException, InvalidConfigurationException
from pulsarlab.ids import EARLIEST, LATEST, MessageId
from pulsarlab.profiles import Profile
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.schema import SchemaData
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, InitialPosition

DEFAULT_RECEIVER_QUEUE_SIZE = 1000  # ConsumerConfigurationData.receiverQueueSize
DEFAULT_MAX_TOTAL_RECEIVER_QUEUE_SIZE_ACROSS_PARTITIONS = 50_000
DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS = DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MICROS // 1000
DEFAULT_BATCHING_MAX_PUBLISH_DELAY_MS = 10  # the Python client's batching_max_publish_delay_ms
TOPICS_CONSUMER_QUEUE_SIZE = "Receiver queue size needs to be greater than 0 for Topics Consumer"

MessageRouterFunction = Callable[[MessageView, int], int]


@dataclass(frozen=True, slots=True)
class ConsumerConfiguration:
    """`ConsumerConfigurationData`: the settings of one ``subscribe`` (fields named as its keywords).

    ``durable`` and ``start_message_id`` are not keywords: ``create_reader`` sets them for a reader's
    non-durable subscription that starts at a ``(ledger, entry)``.
    """

    subscription_name: str
    consumer_type: ConsumerType = ConsumerType.Exclusive
    receiver_queue_size: int = DEFAULT_RECEIVER_QUEUE_SIZE
    max_total_receiver_queue_size_across_partitions: int = DEFAULT_MAX_TOTAL_RECEIVER_QUEUE_SIZE_ACROSS_PARTITIONS
    consumer_name: str | None = None
    unacked_messages_timeout_ms: int | None = None
    negative_ack_redelivery_delay_ms: int = DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS
    properties: dict[str, str] | None = None
    initial_position: InitialPosition = InitialPosition.Latest
    max_pending_chunked_message: int = DEFAULT_MAX_PENDING_CHUNKED_MESSAGE
    auto_ack_oldest_chunked_message_on_queue_full: bool = False
    key_shared_policy: ConsumerKeySharedPolicy | None = None
    batch_index_ack_enabled: bool | None = None
    dead_letter_policy: ConsumerDeadLetterPolicy | None = None
    is_read_compacted: bool = False
    schema: Schema | None = None
    lab_priority_level: int = 0
    lab_ack_group_time_ms: int = DEFAULT_ACK_GROUP_TIME_MS
    lab_max_ack_group_size: int = DEFAULT_MAX_ACK_GROUP_SIZE
    lab_tick_duration_ms: int = DEFAULT_TICK_DURATION_MILLIS
    lab_negative_ack_redelivery_backoff: MultiplierRedeliveryBackoff | None = None
    lab_retry_enable: bool = False
    lab_expire_time_of_incomplete_chunked_message_ms: int = DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS
    durable: bool = True
    start_message_id: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        """The checks of ``subscribe``, in the order the consumer made them."""
        if not isinstance(self.is_read_compacted, bool):
            raise ValueError(
                "Argument is_read_compacted is expected to be of type 'bool' and not "
                f"'{type(self.is_read_compacted).__name__}'"
            )
        schema_data(self.schema)  # a schema object the client cannot use is refused here
        _check_chunk_settings(
            self.max_pending_chunked_message,
            self.auto_ack_oldest_chunked_message_on_queue_full,
            self.lab_expire_time_of_incomplete_chunked_message_ms,
        )
        if not isinstance(self.consumer_type, ConsumerType):
            raise TypeError(f"consumer_type must be a pulsarlab.ConsumerType, not {self.consumer_type!r}")
        if not isinstance(self.initial_position, InitialPosition):
            raise TypeError(f"initial_position must be a pulsarlab.InitialPosition, not {self.initial_position!r}")
        if not isinstance(self.subscription_name, str) or not self.subscription_name:
            raise InvalidConfigurationException("Empty subscription name")
        size = self.receiver_queue_size
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise InvalidConfigurationException("receiverQueueSize needs to be >= 0")
        policy = self.key_shared_policy
        if policy is not None and not isinstance(policy, ConsumerKeySharedPolicy):
            raise TypeError(f"key_shared_policy must be a ConsumerKeySharedPolicy, not {policy!r}")
        _check_redelivery_options(self)

    @property
    def schema_data(self) -> SchemaData | None:
        """The `SchemaData` SUBSCRIBE carries (None: no schema, or BYTES)."""
        return schema_data(self.schema)

    @property
    def has_dead_letter_policy(self) -> bool:
        """Whether the consumer runs a dead-letter policy (given, or the one ``lab_retry_enable`` implies)."""
        return self.dead_letter_policy is not None or self.lab_retry_enable

    def ack_timeout_ms(self, profile: Profile) -> int:
        """The ack timeout the consumer runs (0: off): ``unacked_messages_timeout_ms``, or with a dead-letter
        policy on the 2.x lines the 30 s it implied (``dead_letter_default_ack_timeout_ms``)."""
        timeout = self.unacked_messages_timeout_ms or 0
        if timeout == 0 and self.has_dead_letter_policy:
            return profile.dead_letter_default_ack_timeout_ms
        return timeout

    def batch_index_ack(self, profile: Profile) -> bool:
        """``batch_index_ack_enabled``; None takes the profile's client default."""
        if self.batch_index_ack_enabled is None:
            return profile.batch_index_ack_enabled
        return bool(self.batch_index_ack_enabled)

    def queue_sizes(self, topic: str, partitions: int) -> list[tuple[str, int, int]]:
        """``(topic, partition index, receiver queue size)`` of the inner consumers of one topic: per partition
        ``min(receiver_queue_size, max_total_receiver_queue_size_across_partitions / partitions)``."""
        if partitions:
            per = min(self.receiver_queue_size, self.max_total_receiver_queue_size_across_partitions // partitions)
            return [(f"{topic}-partition-{i}", i, per) for i in range(partitions)]
        return [(topic, -1, self.receiver_queue_size)]


@dataclass(frozen=True, slots=True)
class ReaderConfiguration:
    """`ReaderConfigurationData`: the settings of one ``create_reader`` (fields named as its keywords)."""

    start_message_id: MessageId
    receiver_queue_size: int = DEFAULT_RECEIVER_QUEUE_SIZE
    reader_name: str | None = None
    subscription_role_prefix: str | None = None
    is_read_compacted: bool = False
    start_message_id_inclusive: bool = False

    def consumer_configuration(self, subscription: str) -> ConsumerConfiguration:
        """The settings of the reader's consumer: Exclusive on the non-durable ``subscription``, from the start
        id (the broker's cursor starts at its entry; earliest and latest are initial positions)."""
        start = self.start_message_id
        explicit = start != EARLIEST and start != LATEST
        return ConsumerConfiguration(
            subscription,
            consumer_type=ConsumerType.Exclusive,
            initial_position=InitialPosition.Earliest if start == EARLIEST else InitialPosition.Latest,
            receiver_queue_size=self.receiver_queue_size,
            consumer_name=self.reader_name,
            is_read_compacted=bool(self.is_read_compacted),
            durable=False,
            start_message_id=(start.ledger, start.entry) if explicit else None,
        )


@dataclass(frozen=True, slots=True)
class ProducerConfiguration:
    """`ProducerConfigurationData`: the settings of one ``create_producer`` (fields named as its keywords;
    ``access_mode`` is the lab's `ProducerAccessMode` once built, whichever enum was given)."""

    producer_name: str | None = None
    initial_sequence_id: int | None = None
    batching_enabled: bool = False
    batching_max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES
    batching_max_allowed_size_in_bytes: int = DEFAULT_BATCHING_MAX_BYTES
    batching_max_publish_delay_ms: int = DEFAULT_BATCHING_MAX_PUBLISH_DELAY_MS
    batching_type: BatchingType = BatchingType.Default
    message_routing_mode: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution
    message_router: MessageRouterFunction | None = None
    properties: dict[str, str] | None = None
    chunking_enabled: bool = False
    access_mode: ProducerAccessMode = ProducerAccessMode.Shared
    schema: Schema | None = None
    lab_chunk_max_message_size: int = DEFAULT_CHUNK_MAX_MESSAGE_SIZE
    lab_chunk_send_interval_ms: int = 0

    def __post_init__(self) -> None:
        """The checks of ``create_producer`` that do not depend on the client library (`check_for` does)."""
        _check_python_bool(self.chunking_enabled, "chunking_enabled")
        mode: object = self.access_mode
        try:  # pulsarlab's enum, or the real client's pulsar.ProducerAccessMode (same numbers)
            normalized = ProducerAccessMode(int(getattr(mode, "value", mode)))  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise ValueError(f"access_mode must be a ProducerAccessMode, not {mode!r}") from None
        object.__setattr__(self, "access_mode", normalized)
        size = self.lab_chunk_max_message_size
        if not isinstance(size, int) or isinstance(size, bool):
            raise TypeError(f"lab_chunk_max_message_size must be an int, not {type(size).__name__}")
        interval = self.lab_chunk_send_interval_ms
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 0:
            raise ValueError(f"lab_chunk_send_interval_ms must be an int >= 0, got {interval!r}")
        if interval and not self.chunking_enabled:
            raise ValueError("lab_chunk_send_interval_ms spaces the SENDs of chunks: it needs chunking_enabled=True")
        if not isinstance(self.batching_type, BatchingType):
            raise TypeError(f"batching_type must be a pulsarlab.BatchingType, not {self.batching_type!r}")
        if not isinstance(self.message_routing_mode, PartitionsRoutingMode):
            raise TypeError(
                f"message_routing_mode must be a pulsarlab.PartitionsRoutingMode, not {self.message_routing_mode!r}"
            )
        delay = self.batching_max_publish_delay_ms
        if not isinstance(delay, int) or isinstance(delay, bool) or delay < 0:
            raise ValueError(f"batching_max_publish_delay_ms must be an int >= 0, got {delay!r}")
        schema_data(self.schema)  # a schema object the client cannot use is refused here

    def check_for(self, client_library: ClientLibrary, profile: Profile) -> None:
        """The checks that depend on whose client the producer follows: batching with chunking
        (`check_chunking_config`), and ``lab_chunk_max_message_size``, which only the Java client has."""
        check_chunking_config(
            chunking_enabled=self.chunking_enabled,
            batching_enabled=bool(self.batching_enabled),
            profile=profile,
            client=client_library,
        )
        if (
            self.lab_chunk_max_message_size != DEFAULT_CHUNK_MAX_MESSAGE_SIZE
            and client_library is not ClientLibrary.JAVA
        ):
            raise ValueError(
                "lab_chunk_max_message_size is the Java client's chunkMaxMessageSize (lab.client(client_library="
                "pl.ClientLibrary.JAVA)); the Python client has no such setting: lower the broker's maxMessageSize "
                "instead, pl.Lab(broker_config={'maxMessageSize': ...})"
            )

    @property
    def schema_data(self) -> SchemaData | None:
        """The `SchemaData` PRODUCER carries (None: no schema, or BYTES)."""
        return schema_data(self.schema)

    @property
    def first_sequence_id(self) -> int:
        """The sequence id before the first one sent: ``initial_sequence_id``, -1 when not given."""
        return -1 if self.initial_sequence_id is None else int(self.initial_sequence_id)


def _check_python_bool(value: object, name: str) -> None:
    """The Python client's ``_check_type(bool, ...)``."""
    if not isinstance(value, bool):
        raise ValueError(f"Argument {name} is expected to be of type 'bool' and not '{type(value).__name__}'")


def _check_chunk_settings(max_pending: object, auto_ack: object, expire_ms: object) -> None:
    """The Python client's type checks of the chunk settings, then the ranges the tracker accepts."""
    for name, value, kind in (
        ("max_pending_chunked_message", max_pending, int),
        ("auto_ack_oldest_chunked_message_on_queue_full", auto_ack, bool),
        ("lab_expire_time_of_incomplete_chunked_message_ms", expire_ms, int),
    ):
        if not isinstance(value, kind):
            raise ValueError(
                f"Argument {name} is expected to be of type '{kind.__name__}' and not '{type(value).__name__}'"
            )
    for name, number in (
        ("max_pending_chunked_message", max_pending),
        ("lab_expire_time_of_incomplete_chunked_message_ms", expire_ms),
    ):
        assert isinstance(number, int)
        if number < 0:
            raise ValueError(f"{name} must be >= 0 (0 turns it off), got {number}")


def _check_redelivery_options(conf: ConsumerConfiguration) -> None:
    """Type and range checks of the redelivery options, with Pulsar's texts."""
    check_ack_timeout(conf.unacked_messages_timeout_ms or 0)  # "Ack timeout should be greater than 1000 ms"
    check_tick_time(conf.lab_tick_duration_ms)  # "Ack timeout tick time should be greater than 100 ms"
    nack_delay = conf.negative_ack_redelivery_delay_ms
    if not isinstance(nack_delay, int) or isinstance(nack_delay, bool):
        raise TypeError(f"negative_ack_redelivery_delay_ms must be an int of ms, not {nack_delay!r}")
    if nack_delay < 0:
        raise IllegalArgumentException("redeliveryDelay needs to be >= 0")
    backoff = conf.lab_negative_ack_redelivery_backoff
    if backoff is not None and not isinstance(backoff, MultiplierRedeliveryBackoff):
        raise TypeError(f"lab_negative_ack_redelivery_backoff must be a MultiplierRedeliveryBackoff, not {backoff!r}")
    policy = conf.dead_letter_policy
    if policy is not None and not isinstance(policy, ConsumerDeadLetterPolicy):
        raise TypeError(f"dead_letter_policy must be a pulsarlab.ConsumerDeadLetterPolicy, not {policy!r}")
    if not isinstance(conf.lab_retry_enable, bool):
        raise TypeError(f"lab_retry_enable must be a bool, not {conf.lab_retry_enable!r}")


__all__ = [
    "DEFAULT_ACK_GROUP_TIME_MS",
    "DEFAULT_MAX_ACK_GROUP_SIZE",
    "DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS",
    "DEFAULT_RECEIVER_QUEUE_SIZE",
    "TOPICS_CONSUMER_QUEUE_SIZE",
    "ConsumerConfiguration",
    "ProducerConfiguration",
    "ReaderConfiguration",
]
