"""Where the wire meets the model: the broker consumer's connection object, producers of a connection, errors.

Models the parts of `ServerCnx` the broker's `Consumer` and `Producer` hold on to: the broker model sends MESSAGE
and ACTIVE_CONSUMER_CHANGE (and, on a seek, CLOSE_CONSUMER) through a consumer's ``cnx``; for a real client that
``cnx`` is a `RemoteConsumer`, which writes the commands to its connection. `server_error` maps the model's
exceptions (which carry Pulsar's texts) to Pulsar's `ServerError` codes as
`BrokerServiceException.getClientErrorCode` does.

Simplifies: the connection is always writable (Pulsar pauses dispatch to a consumer whose channel is not; the
lab closes a connection whose unsent bytes pass a limit instead, see `connection`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pulsarlab.admin import ConflictException, NotFoundException, PreconditionFailedException
from pulsarlab.managed_ledger.exceptions import ManagedLedgerException
from pulsarlab.errors import (
    ConsumerAssignException, ConsumerBusyException, IllegalArgumentException, NotAllowedException,
    ServerMetadataException, SubscriptionBusyException,
)
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.serve.commands import ActiveConsumerChange, CloseConsumer, encode_command
from pulsarlab.serve.entries import consumer_prefix, message_frame
from pulsarlab.serve.frames import simple_frame

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.consumer import Consumer
    from pulsarlab.broker.topic import ProducerHandle
    from pulsarlab.serve.connection import ServerConnection


def server_error(error: BaseException) -> ServerError:
    """`BrokerServiceException.getClientErrorCode` for the model's exceptions."""
    if isinstance(error, ServerMetadataException):
        return ServerError.MetadataError
    if isinstance(error, (ConsumerBusyException, SubscriptionBusyException)):
        return ServerError.ConsumerBusy
    if isinstance(error, ConsumerAssignException):
        return ServerError.ConsumerAssignError
    if isinstance(error, NotAllowedException):
        return ServerError.NotAllowedError
    if isinstance(error, NotFoundException):
        return ServerError.TopicNotFound
    if isinstance(error, ManagedLedgerException):
        return ServerError.PersistenceError
    if isinstance(error, (PreconditionFailedException, ConflictException)):
        return ServerError.MetadataError
    if isinstance(error, IllegalArgumentException) and str(error).startswith("Invalid topic"):
        return ServerError.InvalidTopicName
    return ServerError.UnknownError


@dataclass(slots=True)
class RemoteProducer:
    """A producer of one connection: the client's producer id, the broker's handle (lab-wide id), and the start
    of its SEND_RECEIPTs (field 1, the client's id)."""

    client_id: int
    handle: "ProducerHandle"
    name: str
    topic: str
    prefix: bytes


class RemoteConsumer:
    """The ``cnx`` of a broker `Consumer` whose client is behind a binary-protocol connection.

    ``consumer_id`` is the client's id on its connection (what MESSAGE carries); the broker consumer has a
    lab-wide id of its own. ``partition`` is the topic's partition index (-1 when not partitioned), read by
    snapshots. ``durable`` False marks a reader's subscription, deleted when its consumer goes.
    """

    __slots__ = ("connection", "consumer_id", "partition", "prefix", "broker_consumer", "durable")

    def __init__(self, connection: "ServerConnection", consumer_id: int, partition: int, durable: bool) -> None:
        self.connection = connection
        self.consumer_id = consumer_id
        self.partition = partition
        self.prefix = consumer_prefix(consumer_id)
        self.broker_consumer: "Consumer | None" = None
        self.durable = durable

    # --- what the broker model calls -----------------------------------------------------------
    def message_received(self, ledger: int, entry: int, data: Any, redelivery_count: int,
                         ack_set: int | None) -> None:
        conn = self.connection
        wire, checksum = conn.encoded_entry(data)
        conn.write(message_frame(self.prefix, ledger, entry, redelivery_count, ack_set, wire, checksum))

    def active_consumer_changed(self, is_active: bool) -> None:
        self.connection.write(simple_frame(encode_command(ActiveConsumerChange(self.consumer_id, is_active))))

    def closed_by_broker(self) -> None:
        """The broker closed this consumer (a seek): tell the client, which subscribes again."""
        self.connection.forget_consumer(self)
        self.connection.write(simple_frame(encode_command(CloseConsumer(self.consumer_id, 0))))

    def __repr__(self) -> str:
        return f"<RemoteConsumer {self.consumer_id} on {self.connection.peer}>"


__all__ = ["RemoteConsumer", "RemoteProducer", "server_error"]
