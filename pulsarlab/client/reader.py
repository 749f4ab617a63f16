"""``pulsar.Reader``: reading a topic from a message id, without a durable subscription.

Models the C++ client's `ReaderImpl` over a `ConsumerImpl`: the reader subscribes Exclusive on a non-durable
subscription named ``reader-<10 hex digits>`` (or ``<subscription_role_prefix>-...``) whose cursor the broker
starts at the reader's message id (earliest, latest, or that entry); the client then drops the messages up to
the start id (``start_message_id_inclusive=False``, the default) or before it, as `ConsumerImpl` does with
``startMessageId``. ``has_message_available`` answers as GET_LAST_MESSAGE_ID's comparison would: a message is
queued, or the broker's cursor still has entries to read (the in-process broker dispatches at once, so nothing
is in flight). Closing the reader deletes its subscription. Simplifies: no reader listener, no compacted reads,
no schema or encryption; a specific start id only on a non-partitioned topic, as the Java client requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulsarlab.client.configuration import ConsumerConfiguration, ReaderConfiguration
from pulsarlab.client.consumer import Consumer, Message
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.ids import EARLIEST, LATEST, MessageId

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.client import Client


class ReaderConsumer(Consumer):
    """The consumer behind a `Reader`: Exclusive, on a non-durable subscription starting at the reader's start
    id (`ReaderConfiguration.consumer_configuration`); after ``seek(message id)`` it keeps the reader's
    ``start_message_id_inclusive``."""

    def __init__(
        self, client: "Client", topic: str, config: ConsumerConfiguration, start: MessageId, inclusive: bool
    ) -> None:
        self._start_inclusive = inclusive
        super().__init__(client, topic, config)
        if start != EARLIEST and start != LATEST:  # ConsumerImpl's startMessageId: drop what comes before it
            self._state.drop_before(start, inclusive)

    def has_message_available(self) -> bool:
        """A message is queued, or the broker's cursor has entries it has not read (`ManagedCursor.hasMoreEntries`;
        the in-process broker dispatches at once, so nothing is in flight)."""
        if self._queue:
            return True
        return any(
            impl.broker_consumer is not None and impl.broker_consumer.has_more_entries() for impl in self._all_impls
        )


class Reader:
    """``pulsar.Reader``: made by ``client.create_reader(topic, start_message_id, ...)`` from a
    `ReaderConfiguration` (``config``)."""

    def __init__(self, client: "Client", topic: str, config: ReaderConfiguration) -> None:
        start = config.start_message_id
        commands = client.commands
        name = commands.normalize(topic)
        explicit = start != EARLIEST and start != LATEST
        if explicit and commands.ensure_topic(name):
            raise IllegalArgumentException("The topic is partitioned: a reader starts at earliest or latest there")
        self.config = config
        number = commands.new_subscription_id()
        subscription = f"{config.subscription_role_prefix or 'reader'}-{number:010x}"
        inclusive = bool(config.start_message_id_inclusive)
        self._consumer = ReaderConsumer(client, topic, config.consumer_configuration(subscription), start, inclusive)

    @property
    def consumer(self) -> ReaderConsumer:
        """Lab extension: the consumer the reader reads with (its receiver queue and trackers, for views)."""
        return self._consumer

    def topic(self) -> str:
        return self._consumer.topic()

    def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message (virtual time runs up to ``timeout_millis``); ``Timeout`` if none comes."""
        return self._consumer.receive(timeout_millis)

    def has_message_available(self) -> bool:
        return self._consumer.has_message_available()

    def seek(self, messageid: object) -> None:
        """Read again from a message id (after it, as the C++ client does) or a publish time (ms, lab clock)."""
        self._consumer.seek(messageid)

    def is_connected(self) -> bool:
        return self._consumer.is_connected()

    def close(self) -> None:
        self._consumer.close()

    def __repr__(self) -> str:
        return f"Reader(topic={self.topic()!r})"


__all__ = ["Reader", "ReaderConsumer"]
