"""The client: ``pulsar.Client`` in the lab (producers and consumers talk to the lab's one broker).

Models the Python ``pulsar.Client`` surface (``create_producer``, ``subscribe``, ``create_reader``,
``get_topic_partitions``, ``close``); the real client's enum values (``pulsar.ConsumerType.Shared``, ...) are
accepted where the lab's are expected, so a pulsar-client script runs unchanged. ``client_library`` picks
whose batching and chunking rules the producers follow (default the C++ client the Python package wraps;
`ClientLibrary.JAVA` for the Java client the reference reads). On connect the client learns the broker's
``maxMessageSize`` (CONNECTED's ``max_message_size``, `ClientCnx.getMaxMessageSize`); its producers size
messages and chunks against it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, cast

from pulsarlab.client.batching import (
    DEFAULT_BATCHING_MAX_BYTES,
    DEFAULT_BATCHING_MAX_MESSAGES,
    BatchingType,
)
from pulsarlab.client.chunk_reassembly import (
    DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
    DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
)
from pulsarlab.client.chunking import DEFAULT_CHUNK_MAX_MESSAGE_SIZE
from pulsarlab.client.compat import lab_enum
from pulsarlab.client.configuration import (
    DEFAULT_ACK_GROUP_TIME_MS,
    DEFAULT_BATCHING_MAX_PUBLISH_DELAY_MS,
    DEFAULT_MAX_ACK_GROUP_SIZE,
    DEFAULT_MAX_TOTAL_RECEIVER_QUEUE_SIZE_ACROSS_PARTITIONS,
    DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS,
    DEFAULT_RECEIVER_QUEUE_SIZE,
    ConsumerConfiguration,
    MessageRouterFunction,
    ProducerConfiguration,
    ReaderConfiguration,
)
from pulsarlab.client.consumer import Consumer
from pulsarlab.client.library import ClientLibrary
from pulsarlab.client.negative_acks import MultiplierRedeliveryBackoff
from pulsarlab.client.options import (
    PULSAR_CLIENT_PRODUCER_PARAMETERS,
    PULSAR_CLIENT_SUBSCRIBE_PARAMETERS,
    RENAMED_PRODUCER_OPTIONS,
    RENAMED_SUBSCRIBE_OPTIONS,
    refuse_unknown_options,
)
from pulsarlab.client.policies import ConsumerDeadLetterPolicy
from pulsarlab.client.producer import AlreadyClosedException, Producer
from pulsarlab.client.reader import Reader
from pulsarlab.client.routing import PartitionsRoutingMode
from pulsarlab.client.schemas import Schema
from pulsarlab.client.unacked_tracker import DEFAULT_TICK_DURATION_MILLIS
from pulsarlab.errors import PulsarError
from pulsarlab.ids import MessageId
from pulsarlab.protocol.handles import ClientCommands
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, InitialPosition

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.lab import Lab


class Client:
    """``pulsar.Client`` bound to a lab."""

    def __init__(self, lab: "Lab", *, client_library: ClientLibrary = ClientLibrary.CPP) -> None:
        if not isinstance(client_library, ClientLibrary):
            raise TypeError(f"client_library must be a ClientLibrary, not {client_library!r}")
        max_size = lab.config["maxMessageSize"]
        if not isinstance(max_size, int) or isinstance(max_size, bool) or max_size <= 0:
            raise ValueError(f"broker setting maxMessageSize must be an int > 0 (bytes), got {max_size!r}")
        self._lab = lab
        # BrokerService's command methods name its own handle classes, the ones it hands out; the client passes
        # back only those, so it holds the service as the protocol (tests/test_client_configuration.py keeps the
        # two signatures in step)
        self._commands = cast(ClientCommands, lab.service)
        self._client_library = client_library
        self._max_message_size = max_size
        self._producers: list[Producer] = []
        self._consumers: list[Consumer] = []
        self._closed = False

    @property
    def lab(self) -> "Lab":
        """The lab whose broker this client talks to."""
        return self._lab

    @property
    def commands(self) -> ClientCommands:
        """The broker's command surface, as this client sends to it."""
        return self._commands

    @property
    def client_library(self) -> ClientLibrary:
        """Whose batching, chunking and seek rules the client follows (`ClientLibrary`)."""
        return self._client_library

    @property
    def max_message_size(self) -> int:
        """The broker's ``maxMessageSize``, learnt on connect (CONNECTED's ``max_message_size``)."""
        return self._max_message_size

    def create_producer(
        self,
        topic: str,
        producer_name: str | None = None,
        *,
        initial_sequence_id: int | None = None,
        batching_enabled: bool = False,
        batching_max_messages: int = DEFAULT_BATCHING_MAX_MESSAGES,
        batching_max_allowed_size_in_bytes: int = DEFAULT_BATCHING_MAX_BYTES,
        batching_max_publish_delay_ms: int = DEFAULT_BATCHING_MAX_PUBLISH_DELAY_MS,
        batching_type: BatchingType = BatchingType.Default,
        message_routing_mode: PartitionsRoutingMode = PartitionsRoutingMode.RoundRobinDistribution,
        message_router: MessageRouterFunction | None = None,
        properties: dict[str, str] | None = None,
        chunking_enabled: bool = False,
        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
        schema: Schema | None = None,
        lab_chunk_max_message_size: int = DEFAULT_CHUNK_MAX_MESSAGE_SIZE,
        lab_chunk_send_interval_ms: int = 0,
        **unknown: object,
    ) -> Producer:
        """``pulsar.Client.create_producer``: a producer on ``topic`` (every partition of a partitioned topic).

        pulsar-client 3.13 parameters the lab models (same names, same defaults): ``producer_name``,
        ``initial_sequence_id``, ``batching_enabled``, ``batching_max_messages``,
        ``batching_max_allowed_size_in_bytes``, ``batching_max_publish_delay_ms``, ``batching_type``,
        ``message_routing_mode``, ``message_router``, ``properties``, ``chunking_enabled``, ``access_mode``
        (pulsarlab's or the real client's ``ProducerAccessMode``; a ``WaitForExclusive`` producer is returned at
        once and ``is_connected()`` is False until it gets the topic, where the real call blocks), ``schema`` (the
        real client's schema objects: the broker keeps or refuses the schema, ``send`` encodes values).

        Lab-only settings (no such parameter in pulsar-client):

        * ``lab_chunk_send_interval_ms``: virtual time between a producer's SENDs of chunks (0: all at once), so
          the chunks of several producers interleave on the topic as they do on a busy network;
        * ``lab_chunk_max_message_size``: the Java client's ``chunkMaxMessageSize`` (only with
          ``lab.client(client_library=ClientLibrary.JAVA)``; -1 uses the broker's ``maxMessageSize``).

        A keyword the lab does not take raises `TypeError`, naming the new name of a renamed lab setting
        (``chunk_send_interval_ms`` -> ``lab_chunk_send_interval_ms``).
        """
        refuse_unknown_options("create_producer", unknown, RENAMED_PRODUCER_OPTIONS, PULSAR_CLIENT_PRODUCER_PARAMETERS)
        self._check()
        config = ProducerConfiguration(
            producer_name=producer_name,
            initial_sequence_id=initial_sequence_id,
            batching_enabled=batching_enabled,
            batching_max_messages=batching_max_messages,
            batching_max_allowed_size_in_bytes=batching_max_allowed_size_in_bytes,
            batching_max_publish_delay_ms=batching_max_publish_delay_ms,
            batching_type=lab_enum(batching_type, BatchingType),
            message_routing_mode=lab_enum(message_routing_mode, PartitionsRoutingMode),
            message_router=message_router,
            properties=properties,
            chunking_enabled=chunking_enabled,
            access_mode=access_mode,
            schema=schema,
            lab_chunk_max_message_size=lab_chunk_max_message_size,
            lab_chunk_send_interval_ms=lab_chunk_send_interval_ms,
        )
        producer = Producer(self, topic, config)
        self._producers.append(producer)
        return producer

    def subscribe(
        self,
        topic: str,
        subscription_name: str,
        consumer_type: ConsumerType = ConsumerType.Exclusive,
        *,
        receiver_queue_size: int = DEFAULT_RECEIVER_QUEUE_SIZE,
        max_total_receiver_queue_size_across_partitions: int = DEFAULT_MAX_TOTAL_RECEIVER_QUEUE_SIZE_ACROSS_PARTITIONS,
        consumer_name: str | None = None,
        unacked_messages_timeout_ms: int | None = None,
        negative_ack_redelivery_delay_ms: int = DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS,
        properties: dict[str, str] | None = None,
        initial_position: InitialPosition = InitialPosition.Latest,
        max_pending_chunked_message: int = DEFAULT_MAX_PENDING_CHUNKED_MESSAGE,
        auto_ack_oldest_chunked_message_on_queue_full: bool = False,
        key_shared_policy: ConsumerKeySharedPolicy | None = None,
        batch_index_ack_enabled: bool | None = None,
        dead_letter_policy: ConsumerDeadLetterPolicy | None = None,
        is_read_compacted: bool = False,
        schema: Schema | None = None,
        lab_priority_level: int = 0,
        lab_ack_group_time_ms: int = DEFAULT_ACK_GROUP_TIME_MS,
        lab_max_ack_group_size: int = DEFAULT_MAX_ACK_GROUP_SIZE,
        lab_tick_duration_ms: int = DEFAULT_TICK_DURATION_MILLIS,
        lab_negative_ack_redelivery_backoff: MultiplierRedeliveryBackoff | None = None,
        lab_retry_enable: bool = False,
        lab_expire_time_of_incomplete_chunked_message_ms: int = DEFAULT_EXPIRE_TIME_OF_INCOMPLETE_CHUNKED_MESSAGE_MS,
        **unknown: object,
    ) -> Consumer:
        """``pulsar.Client.subscribe``: a consumer of ``topic`` (every partition of a partitioned topic) on the
        subscription ``subscription_name``.

        pulsar-client 3.13 parameters the lab models (same names, same defaults): ``consumer_type``,
        ``receiver_queue_size``, ``max_total_receiver_queue_size_across_partitions``, ``consumer_name``,
        ``unacked_messages_timeout_ms`` (ack timeout; the lab follows Java's rule, 0/None or >= 1000 ms, where
        the C++ client under the Python one asks for >= 10 s), ``negative_ack_redelivery_delay_ms``,
        ``properties``, ``initial_position``, ``max_pending_chunked_message``,
        ``auto_ack_oldest_chunked_message_on_queue_full``, ``key_shared_policy``, ``batch_index_ack_enabled``
        (``None``, the lab's default, takes the version profile's client default, False in every profile as in
        pulsar-client), ``dead_letter_policy``, ``is_read_compacted`` (Exclusive/Failover: the compacted view,
        then the tail) and ``schema`` (the real client's schema objects; ``Message.value()`` decodes).

        Lab-only settings (other clients' or the protocol's; no such parameter in pulsar-client):

        * ``lab_priority_level``: CommandSubscribe's ``priority_level`` (Java ``priorityLevel``; 0 is the highest);
        * ``lab_ack_group_time_ms``, ``lab_max_ack_group_size``: the ack grouping tracker's flush period and
          size (Java ``acknowledgmentGroupTime`` / ``maxAcknowledgmentGroupSize``; 0 ms sends each ack at once);
        * ``lab_tick_duration_ms``: the ack-timeout tracker's tick (Java ``ackTimeoutTickTime``);
        * ``lab_negative_ack_redelivery_backoff``: a `MultiplierRedeliveryBackoff` (Java
          ``negativeAckRedeliveryBackoff``);
        * ``lab_retry_enable``: Java's ``enableRetry``: also subscribe to the retry topic, for
          ``reconsume_later``;
        * ``lab_expire_time_of_incomplete_chunked_message_ms``: the C++ ``ConsumerConfiguration`` setting the
          Python client does not expose (0 turns expiry off).

        A keyword the lab does not take raises `TypeError`, naming the new name of a renamed lab setting
        (``priority_level`` -> ``lab_priority_level``) or saying that a pulsar-client parameter is not modelled.
        """
        refuse_unknown_options("subscribe", unknown, RENAMED_SUBSCRIBE_OPTIONS, PULSAR_CLIENT_SUBSCRIBE_PARAMETERS)
        self._check()
        config = ConsumerConfiguration(
            subscription_name,
            consumer_type=lab_enum(consumer_type, ConsumerType),
            receiver_queue_size=receiver_queue_size,
            max_total_receiver_queue_size_across_partitions=max_total_receiver_queue_size_across_partitions,
            consumer_name=consumer_name,
            unacked_messages_timeout_ms=unacked_messages_timeout_ms,
            negative_ack_redelivery_delay_ms=negative_ack_redelivery_delay_ms,
            initial_position=lab_enum(initial_position, InitialPosition),
            key_shared_policy=key_shared_policy,
            batch_index_ack_enabled=batch_index_ack_enabled,
            dead_letter_policy=dead_letter_policy,
            is_read_compacted=is_read_compacted,
            schema=schema,
            properties=properties,
            max_pending_chunked_message=max_pending_chunked_message,
            auto_ack_oldest_chunked_message_on_queue_full=auto_ack_oldest_chunked_message_on_queue_full,
            lab_priority_level=lab_priority_level,
            lab_ack_group_time_ms=lab_ack_group_time_ms,
            lab_max_ack_group_size=lab_max_ack_group_size,
            lab_expire_time_of_incomplete_chunked_message_ms=lab_expire_time_of_incomplete_chunked_message_ms,
            lab_tick_duration_ms=lab_tick_duration_ms,
            lab_negative_ack_redelivery_backoff=lab_negative_ack_redelivery_backoff,
            lab_retry_enable=lab_retry_enable,
        )
        consumer = Consumer(self, topic, config)
        self._consumers.append(consumer)
        return consumer

    def create_reader(
        self,
        topic: str,
        start_message_id: object,
        *,
        reader_listener: object = None,
        receiver_queue_size: int = DEFAULT_RECEIVER_QUEUE_SIZE,
        reader_name: str | None = None,
        subscription_role_prefix: str | None = None,
        is_read_compacted: bool = False,
        crypto_key_reader: object = None,
        start_message_id_inclusive: bool = False,
        schema: Schema | None = None,
        **unsupported: object,
    ) -> Reader:
        """``Client.create_reader(topic, start_message_id, reader_listener=None, receiver_queue_size=1000,
        reader_name=None, subscription_role_prefix=None, is_read_compacted=False, crypto_key_reader=None,
        start_message_id_inclusive=False)``: ``start_message_id`` is ``MessageId.earliest``, ``MessageId.latest``
        or a message's id (the lab's or pulsar-client's). ``schema`` is accepted and not used (a reader reads
        bytes); a reader listener and a crypto key reader are not modelled."""
        self._check()
        if unsupported:
            raise TypeError(f"create_reader() got unexpected keyword arguments {sorted(unsupported)}")
        if reader_listener is not None or crypto_key_reader is not None:
            raise NotImplementedError("reader listeners and encryption are not modelled by the lab")
        config = ReaderConfiguration(
            MessageId.of(start_message_id),
            receiver_queue_size=receiver_queue_size,
            reader_name=reader_name,
            subscription_role_prefix=subscription_role_prefix,
            is_read_compacted=is_read_compacted,
            start_message_id_inclusive=start_message_id_inclusive,
        )
        reader = Reader(self, topic, config)
        self._consumers.append(reader.consumer)
        return reader

    def get_topic_partitions(self, topic: str) -> list[str]:
        """The partition topic names, or ``[topic]`` for a non-partitioned topic."""
        name = self._commands.normalize(topic)
        n = self._commands.ensure_topic(name)
        return [f"{name}-partition-{i}" for i in range(n)] if n else [name]

    def _reconnect(self, before: Callable[[Consumer], object], failed: Callable[[Consumer, Exception], object]) -> None:
        """Lab extension: after a broker restart, producers register again, then consumers subscribe again, in
        creation order; ``before(consumer)`` runs before each consumer reconnects, ``failed(consumer, error)``
        when its SUBSCRIBE is refused (the consumer then stays disconnected)."""
        if self._closed:
            return
        for p in self._producers:
            p._reconnect()
        for c in self._consumers:
            if not c.is_connected():
                continue
            before(c)
            try:
                c._reconnect()
            except PulsarError as error:
                failed(c, error)

    def close(self) -> None:
        """Close every producer (flushing) and consumer (flushing acks)."""
        if self._closed:
            return
        for p in self._producers:
            p.close()
        for c in self._consumers:
            c.close()
        self._closed = True

    def _check(self) -> None:
        if self._closed:
            raise AlreadyClosedException("Client already closed")
