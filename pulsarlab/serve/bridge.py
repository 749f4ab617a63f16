"""Where the wire meets the model: the broker consumer's connection object and the producers of a connection.

Models the parts of `ServerCnx` the broker's `Consumer` and `Producer` hold on to: the broker model sends MESSAGE
and ACTIVE_CONSUMER_CHANGE (and, on a seek, CLOSE_CONSUMER) through a consumer's ``cnx``; for a real client that
``cnx`` is a `RemoteConsumer`, which writes the commands to its connection.

Simplifies: the connection is always writable (Pulsar pauses dispatch to a consumer whose channel is not; the
lab closes a connection whose unsent bytes pass a limit instead, see `connection`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pulsarlab.serve.commands import ActiveConsumerChange, CloseConsumer, encode_command
from pulsarlab.serve.entries import consumer_prefix, message_frame
from pulsarlab.serve.frames import simple_frame

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.topic import ProducerHandle
    from pulsarlab.serve.connection import ServerConnection


@dataclass(slots=True)
class RemoteProducer:
    """A producer of one connection: the client's producer id, the broker's handle (lab-wide id), the start
    of its SEND_RECEIPTs (field 1, the client's id) and the request id of its PRODUCER (answered again when a
    waiting producer gets the topic)."""

    client_id: int
    handle: "ProducerHandle"
    name: str
    topic: str
    prefix: bytes
    request_id: int = 0
    schema_version: int | None = None


class RemoteConsumer:
    """The ``cnx`` of a broker `Consumer` whose client is behind a binary-protocol connection.

    ``consumer_id`` is the client's id on its connection (what MESSAGE carries); the broker consumer has a
    lab-wide id of its own. ``topic``, ``subscription`` and ``name`` are what it subscribed with (the consumer
    name the broker's, given or made up); ``partition`` is the topic's partition index (-1 when not
    partitioned), read by snapshots. ``broker_consumer`` is the handle SUBSCRIBE returned, passed back to the
    broker's commands.
    """

    __slots__ = (
        "connection",
        "consumer_id",
        "topic",
        "subscription",
        "name",
        "partition",
        "prefix",
        "broker_consumer",
    )

    def __init__(
        self, connection: "ServerConnection", consumer_id: int, topic: str, subscription: str, name: str, partition: int
    ) -> None:
        self.connection = connection
        self.consumer_id = consumer_id
        self.topic = topic
        self.subscription = subscription
        self.name = name
        self.partition = partition
        self.prefix = consumer_prefix(consumer_id)
        self.broker_consumer: "Consumer | None" = None

    # --- what the broker model calls -----------------------------------------------------------
    def message_received(self, ledger: int, entry: int, data: Any, redelivery_count: int, ack_set: int | None) -> None:
        conn = self.connection
        wire, checksum = conn.encoded_entry(data)
        conn.write(message_frame(self.prefix, ledger, entry, redelivery_count, ack_set, wire, checksum, self.partition))

    def active_consumer_changed(self, is_active: bool) -> None:
        self.connection.write(simple_frame(encode_command(ActiveConsumerChange(self.consumer_id, is_active))))

    def closed_by_broker(self) -> None:
        """The broker closed this consumer (a seek): tell the client, which subscribes again."""
        self.connection.forget_consumer(self)
        self.connection.write(simple_frame(encode_command(CloseConsumer(self.consumer_id, 0))))

    def __repr__(self) -> str:
        return f"<RemoteConsumer {self.consumer_id} on {self.connection.peer}>"


__all__ = ["RemoteConsumer", "RemoteProducer"]
