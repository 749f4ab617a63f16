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

from typing import TYPE_CHECKING, Any, Callable

from pulsarlab.client.batching import ClientLibrary
from pulsarlab.client.compat import lab_kwargs
from pulsarlab.client.consumer import Consumer
from pulsarlab.client.producer import AlreadyClosedException, Producer
from pulsarlab.client.reader import Reader
from pulsarlab.errors import PulsarError

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
        self._client_library = client_library
        self._max_message_size = max_size
        self._producers: list[Producer] = []
        self._consumers: list[Consumer] = []
        self._closed = False

    def create_producer(self, topic: str, **kwargs: Any) -> Producer:
        """``Client.create_producer(topic, producer_name=None, initial_sequence_id=None, batching_enabled=False,
        batching_max_messages=1000, batching_max_allowed_size_in_bytes=131072, batching_max_publish_delay_ms=10,
        batching_type=BatchingType.Default, message_routing_mode=RoundRobinDistribution, message_router=None,
        properties=None, chunking_enabled=False,
        access_mode=ProducerAccessMode.Shared)``; lab extras: ``chunk_send_interval_ms=0``, and
        ``chunk_max_message_size=-1`` (Java client only)."""
        self._check()
        producer = Producer(self, topic, **lab_kwargs(kwargs))
        self._producers.append(producer)
        return producer

    def subscribe(self, topic: str, subscription_name: str, **kwargs: Any) -> Consumer:
        """``Client.subscribe(topic, subscription_name, consumer_type=ConsumerType.Exclusive, receiver_queue_size=1000,
        max_total_receiver_queue_size_across_partitions=50000, consumer_name=None, unacked_messages_timeout_ms=None,
        negative_ack_redelivery_delay_ms=60000, initial_position=InitialPosition.Latest, priority_level=0,
        key_shared_policy=None, batch_index_ack_enabled=None, dead_letter_policy=None, max_pending_chunked_message=10,
        auto_ack_oldest_chunked_message_on_queue_full=False)``; lab extras: ``ack_group_time_ms=100``,
        ``max_ack_group_size=1000``, ``expire_time_of_incomplete_chunked_message_ms=60000`` (the C++
        ``ConsumerConfiguration`` setting, which the Python client does not expose), and from the Java client
        ``tick_duration_ms=1000`` (``ackTimeoutTickTime``), ``negative_ack_redelivery_backoff=None`` (a
        `MultiplierRedeliveryBackoff`) and ``retry_enable=False`` (``enableRetry``: subscribe to the retry topic
        too, for ``reconsume_later``). ``batch_index_ack_enabled=None`` takes the profile's client default (true
        from 4.1). The ack timeout follows Java's rule (0/None or >= 1000 ms); the C++ client under the Python one
        asks for >= 10 s."""
        self._check()
        consumer = Consumer(self, topic, subscription_name, **lab_kwargs(kwargs))
        self._consumers.append(consumer)
        return consumer

    def create_reader(self, topic: str, start_message_id: Any, **kwargs: Any) -> Reader:
        """``Client.create_reader(topic, start_message_id, reader_listener=None, receiver_queue_size=1000,
        reader_name=None, subscription_role_prefix=None, is_read_compacted=False, crypto_key_reader=None,
        start_message_id_inclusive=False)``: ``start_message_id`` is ``MessageId.earliest``, ``MessageId.latest``
        or a message's id (the lab's or pulsar-client's)."""
        self._check()
        kwargs.pop("schema", None)  # bytes only: the lab has no schemas
        reader = Reader(self, topic, start_message_id, **kwargs)
        self._consumers.append(reader._consumer)
        return reader

    def get_topic_partitions(self, topic: str) -> list[str]:
        """The partition topic names, or ``[topic]`` for a non-partitioned topic."""
        name = self._lab.service.normalize(topic)
        n = self._lab.service.ensure_topic(name)
        return [f"{name}-partition-{i}" for i in range(n)] if n else [name]

    def _reconnect(self, before: Callable[[Any], Any], failed: Callable[[Any, Exception], Any]) -> None:
        """Lab extension: after a broker restart, producers register again, then consumers subscribe again, in
        creation order; ``before(consumer)`` runs before each consumer reconnects, ``failed(consumer, error)``
        when its SUBSCRIBE is refused (the consumer then stays disconnected)."""
        if self._closed:
            return
        for p in self._producers:
            p._reconnect()
        for c in self._consumers:
            if c._closed:
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
