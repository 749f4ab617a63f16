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

from typing import TYPE_CHECKING, Any

from pulsarlab.client.consumer import Consumer, Message
from pulsarlab.client.start_filter import drop_before
from pulsarlab.errors import IllegalArgumentException
from pulsarlab.ids import EARLIEST, LATEST, MessageId
from pulsarlab.protocol.subscription import ConsumerType, InitialPosition

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.client import Client


class ReaderConsumer(Consumer):
    """The consumer behind a `Reader`: Exclusive, on a non-durable subscription starting at ``start``."""

    def __init__(self, client: "Client", topic: str, subscription: str, start: MessageId, **kwargs: Any) -> None:
        self._start = start
        self._start_inclusive = False
        initial = InitialPosition.Earliest if start == EARLIEST else InitialPosition.Latest
        super().__init__(
            client, topic, subscription, consumer_type=ConsumerType.Exclusive, initial_position=initial, **kwargs
        )

    def _subscribe_options(self) -> dict[str, Any]:
        start = self._start
        explicit = start != EARLIEST and start != LATEST
        return {"durable": False, "start_message_id": (start.ledger, start.entry) if explicit else None}


class Reader:
    """``pulsar.Reader``: made by ``client.create_reader(topic, start_message_id, ...)``."""

    def __init__(
        self,
        client: "Client",
        topic: str,
        start_message_id: Any,
        *,
        reader_listener: Any = None,
        receiver_queue_size: int = 1000,
        reader_name: str | None = None,
        subscription_role_prefix: str | None = None,
        is_read_compacted: bool = False,
        crypto_key_reader: Any = None,
        start_message_id_inclusive: bool = False,
        **unsupported: Any,
    ) -> None:
        if unsupported:
            raise TypeError(f"create_reader() got unexpected keyword arguments {sorted(unsupported)}")
        if reader_listener is not None or crypto_key_reader is not None:
            raise NotImplementedError("reader listeners and encryption are not modelled by the lab")
        start = MessageId.of(start_message_id)
        lab = client._lab
        name = lab.service.normalize(topic)
        explicit = start != EARLIEST and start != LATEST
        if explicit and lab.service.ensure_topic(name):
            raise IllegalArgumentException("The topic is partitioned: a reader starts at earliest or latest there")
        self._client = client
        self._inclusive = bool(start_message_id_inclusive)
        number = lab.service.new_subscription_id()
        subscription = f"{subscription_role_prefix or 'reader'}-{number:010x}"
        self._consumer = ReaderConsumer(
            client,
            topic,
            subscription,
            start,
            receiver_queue_size=receiver_queue_size,
            consumer_name=reader_name,
            is_read_compacted=bool(is_read_compacted),
        )
        self._consumer._start_inclusive = self._inclusive
        if explicit:
            drop_before(self._consumer, start, self._inclusive)

    def topic(self) -> str:
        return self._consumer.topic()

    def read_next(self, timeout_millis: int | None = None) -> Message:
        """The next message (virtual time runs up to ``timeout_millis``); ``Timeout`` if none comes."""
        return self._consumer.receive(timeout_millis)

    def has_message_available(self) -> bool:
        consumer = self._consumer
        if consumer._queue:
            return True
        return any(
            impl.broker_consumer is not None and impl.broker_consumer.has_more_entries() for impl in consumer._all_impls
        )

    def seek(self, messageid: Any) -> None:
        """Read again from a message id (after it, as the C++ client does) or a publish time (ms, lab clock)."""
        self._consumer.seek(messageid)

    def is_connected(self) -> bool:
        return self._consumer.is_connected()

    def close(self) -> None:
        self._consumer.close()

    def __repr__(self) -> str:
        return f"Reader(topic={self.topic()!r})"


__all__ = ["Reader", "ReaderConsumer"]
