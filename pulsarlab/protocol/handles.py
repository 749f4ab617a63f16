"""The typed seams between the broker's command surface and its callers: the handles it returns and the connection
it sends to.

Models the two ends of a Pulsar connection as the lab splits them: `ServerCnx` keeps a `Producer` or `Consumer`
per id that the client names in each command, and sends MESSAGE, ACTIVE_CONSUMER_CHANGE and CLOSE_CONSUMER to the
client's `ClientCnx`. In the lab, `BrokerService.register_producer` returns a `RegisteredProducer` and
`BrokerService.subscribe` a `SubscribedConsumer`, which the caller (the in-process client, the binary front end)
passes back with each command and asks only what these protocols say; the broker's consumer sends to the
`ConsumerConnection` it was given at SUBSCRIBE (the client's consumer, or `pulsarlab serve`'s `RemoteConsumer`).
A snapshot reaches the application's consumer behind a connection of the lab's own client through
`ClientConsumerConnection.application_consumer` (`ClientConsumerTrackers`: its id, negative-ack delay and
per-topic consumers; the rest it reads through the client consumer's public API).
The broker's classes (`pulsarlab.broker.topic.ProducerHandle`, `pulsarlab.broker.consumer.Consumer`) satisfy
them structurally; nothing here imports the broker or the client (docs/architecture.md). Simplifies: the
handles' other attributes are the broker's own and are not part of the seam.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence, runtime_checkable

from pulsarlab.messages import EntryData
from pulsarlab.protocol.acks import AckCommand
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.schema import SchemaData
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, InitialPosition


class ConsumerConnection(Protocol):
    """What the broker's consumer sends to (`ClientCnx` on the client's side of the connection)."""

    def message_received(
        self, ledger: int, entry: int, data: EntryData, redelivery_count: int, ack_set: int | None
    ) -> None:
        """MESSAGE: one entry dispatched, with its redelivery count and, for a batch partly acknowledged, the
        ack set of the indexes still to deliver."""

    def active_consumer_changed(self, is_active: bool) -> None:
        """ACTIVE_CONSUMER_CHANGE (Exclusive and Failover): whether this consumer is now the active one."""

    def closed_by_broker(self) -> None:
        """CLOSE_CONSUMER from the broker (a seek, a reset cursor, a deleted subscription): a real client
        subscribes again."""


class TopicConsumerTrackers(Protocol):
    """One topic's (or partition's) consumer of an application's consumer, as a redelivery snapshot reads it
    (`ConsumerImpl` of a `MultiTopicsConsumerImpl`): its topic and the trackers made on first use."""

    @property
    def topic(self) -> str: ...

    @property
    def nacks(self) -> object | None:
        """Its `NegativeAcksTracker`, None before the first negative ack."""

    @property
    def dead_letters(self) -> object | None:
        """Its dead-letter bookkeeping, None without a dead-letter policy."""


class ClientConsumerTrackers(Protocol):
    """What a snapshot may ask of an application's consumer about its redelivery trackers (the Java client's
    `ConsumerBase` getters): its id, the negative-ack delay and the per-topic consumers that hold the trackers."""

    @property
    def consumer_id(self) -> int: ...

    @property
    def negative_ack_redelivery_delay_ms(self) -> int: ...

    def topic_consumers(self) -> Sequence[TopicConsumerTrackers]:
        """The per-topic consumers, retry-letter topics' included, in subscribe order."""


@runtime_checkable
class ClientConsumerConnection(ConsumerConnection, Protocol):
    """A `ConsumerConnection` of the lab's own client: it names the application's consumer behind it (a real
    `ClientCnx` keeps its consumers by id). `pulsarlab serve`'s remote consumers have none in the lab."""

    def application_consumer(self) -> ClientConsumerTrackers: ...


class RegisteredProducer(Protocol):
    """What PRODUCER returns: the broker's producer, passed back with each SEND and at CLOSE_PRODUCER."""

    @property
    def producer_id(self) -> int: ...

    @property
    def ready(self) -> bool:
        """False while a ``WaitForExclusive`` producer waits for the topic (or once fenced out)."""

    @property
    def topic_epoch(self) -> int | None: ...

    @property
    def access_mode(self) -> ProducerAccessMode: ...

    def last_published_sequence_id(self) -> int:
        """PRODUCER_SUCCESS' ``last_sequence_id`` (`PersistentTopic.getLastPublishedSequenceId`): the highest
        sequence id the topic stored from a producer of this name, -1 without deduplication."""


class SubscribedConsumer(Protocol):
    """What SUBSCRIBE returns: the broker's consumer, passed back with each FLOW, ACK, REDELIVER and CLOSE."""

    @property
    def closed(self) -> bool: ...

    def has_more_entries(self) -> bool:
        """Whether the subscription's cursor has entries it has not read yet (`ManagedCursor.hasMoreEntries`):
        what a reader's ``has_message_available`` asks beside its own queue."""


class StoredPosition(Protocol):
    """Where SEND stored an entry (SEND_RECEIPT's message id): ``-1:-1`` for a duplicate."""

    @property
    def ledger_id(self) -> int: ...

    @property
    def entry_id(self) -> int: ...


class ClientCommands(Protocol):
    """The broker's command surface as the in-process client sends to it (`ClientCnx` -> `ServerCnx` in Pulsar).

    Each method is one command (or the lookup before it); the handles the client passes back are the ones
    ``register_producer`` and ``subscribe`` returned. `pulsarlab.broker.service.BrokerService` implements it; its
    methods name the broker's own handle classes, so the client takes it through this protocol
    (`pulsarlab.client.client.Client`), and a test keeps the two signatures in step.
    """

    def normalize(self, name: str) -> str:
        """The topic's full name (``persistent://public/default/`` added to a short name)."""

    def ensure_topic(self, name: str) -> int:
        """LOOKUP / PARTITIONED_METADATA: the topic's partition count (0: not partitioned), creating it."""

    def topic_exists(self, name: str) -> bool: ...

    def new_consumer_id(self) -> int: ...

    def new_producer_id(self) -> int: ...

    def new_subscription_id(self) -> int: ...

    def add_schema(self, topic: str, schema: SchemaData) -> int:
        """PRODUCER's schema: its version, once the broker keeps it (or ``IncompatibleSchemaException``)."""

    def check_consumer_schema(self, topic: str, schema: SchemaData) -> None:
        """SUBSCRIBE's schema: compatible with the topic's, or the idle topic's first."""

    def register_producer(
        self,
        producer_id: int,
        name: str,
        topic: str,
        initial_subscription: str | None = None,
        *,
        access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
        topic_epoch: int | None = None,
        on_ready: Callable[[RegisteredProducer], None] | None = None,
        on_fenced: Callable[[RegisteredProducer, str], None] | None = None,
        created_on: str | None = None,
        batching: bool | None = None,
    ) -> RegisteredProducer:
        """PRODUCER."""

    def unregister_producer(self, handle: RegisteredProducer) -> None:
        """CLOSE_PRODUCER."""

    def publish(
        self, handle: RegisteredProducer, entry: EntryData, highest_sequence_id: int | None = None
    ) -> StoredPosition:
        """SEND."""

    def subscribe(
        self,
        cnx: ConsumerConnection,
        *,
        consumer_id: int,
        topic: str,
        subscription: str,
        sub_type: ConsumerType,
        name: str,
        priority: int,
        initial_position: InitialPosition,
        key_shared_policy: ConsumerKeySharedPolicy | None,
        partition_index: int = -1,
        durable: bool = True,
        start_message_id: tuple[int, int] | None = None,
        read_compacted: bool = False,
    ) -> SubscribedConsumer:
        """SUBSCRIBE."""

    def flow(self, consumer: SubscribedConsumer, permits: int) -> None:
        """FLOW."""

    def ack(self, consumer: SubscribedConsumer, cmd: AckCommand) -> None:
        """ACK."""

    def redeliver_unacknowledged(
        self, consumer: SubscribedConsumer, positions: Sequence[tuple[int, int]] | None = None
    ) -> None:
        """REDELIVER_UNACKNOWLEDGED_MESSAGES (None: everything the consumer has pending)."""

    def reset_cursor(
        self,
        consumer: SubscribedConsumer,
        position: tuple[int, int] | None = None,
        *,
        publish_time: int | None = None,
    ) -> StoredPosition:
        """SEEK, by a ``(ledger, entry)`` message id or by publish time: the new read position."""

    def close_consumer(self, consumer: SubscribedConsumer, reason: str = "closed") -> None:
        """CLOSE_CONSUMER."""

    def unsubscribe(self, consumer: SubscribedConsumer) -> None:
        """UNSUBSCRIBE."""


__all__ = [
    "ClientCommands",
    "ClientConsumerConnection",
    "ClientConsumerTrackers",
    "ConsumerConnection",
    "RegisteredProducer",
    "StoredPosition",
    "SubscribedConsumer",
    "TopicConsumerTrackers",
]
