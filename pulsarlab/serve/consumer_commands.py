"""The consumer commands of one connection: SUBSCRIBE, FLOW, ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES, UNSUBSCRIBE,
CLOSE_CONSUMER, SEEK, GET_LAST_MESSAGE_ID and CONSUMER_STATS.

Models `ServerCnx.handleSubscribe`, `handleFlow`, `handleAck`, `handleRedeliverUnacknowledged`, `handleUnsubscribe`,
`handleCloseConsumer`, `handleSeek`, `handleGetLastMessageId` and `handleConsumerStats`: each calls the broker's
command surface with the command's fields for the broker consumer the client's id names (a `RemoteConsumer` is
the ``cnx`` the broker sends MESSAGE through) and answers with Pulsar's error codes and texts.

Simplifies: a reader's non-durable cursor is a subscription deleted with its consumer; a seek to a batch index
resets to its entry; CONSUMER_STATS reports no rates (0.0).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulsarlab.broker.service import client_error_code
from pulsarlab.errors import PulsarError
from pulsarlab.protocol.acks import AckCommand, AckType
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, KeySharedMode
from pulsarlab.serve.bridge import RemoteConsumer
from pulsarlab.serve.commands import (
    Ack,
    AckResponse,
    CloseConsumer,
    ConsumerStats,
    ConsumerStatsResponse,
    Flow,
    GetLastMessageId,
    GetLastMessageIdResponse,
    MsgId,
    RedeliverUnacked,
    Seek,
    Subscribe,
    Success,
    Unsubscribe,
)
from pulsarlab.serve.frames import Frame
from pulsarlab.serve.schema_wire import model_schema

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.connection import ServerConnection


class ConsumerCommands:
    """The consumer handlers of one `ServerConnection`."""

    def __init__(self, connection: "ServerConnection") -> None:
        self.connection = connection
        self.server = connection.server
        self.service = connection.service
        self.consumers = connection.consumers  # the connection's: client consumer id -> its consumer
        self.send = connection.send
        self.error = connection.error

    def on_subscribe(self, cmd: Subscribe, frame: Frame) -> None:
        if cmd.consumer_id in self.consumers:
            self.send(Success(cmd.request_id))  # "Consumer with the same id is already created"
            return
        try:
            topic = self.service.normalize(cmd.topic)
        except PulsarError as e:
            self.error(cmd.request_id, ServerError.InvalidTopicName, str(e))
            return
        sub_type = cmd.sub_type
        policy = None
        if sub_type is ConsumerType.KeyShared:
            meta = cmd.key_shared_meta
            try:
                if meta is not None and meta.mode is KeySharedMode.Sticky:
                    policy = ConsumerKeySharedPolicy(
                        KeySharedMode.Sticky,
                        bool(meta.allow_out_of_order_delivery),
                        [(r.start, r.end) for r in meta.hash_ranges],
                    )
                else:
                    policy = ConsumerKeySharedPolicy(
                        KeySharedMode.AutoSplit, bool(meta is not None and meta.allow_out_of_order_delivery)
                    )
            except PulsarError as e:
                self.error(cmd.request_id, ServerError.ConsumerAssignError, str(e))
                return
        initial = cmd.value("initial_position")
        durable = cmd.value("durable")
        svc = self.service
        lab_id = svc.new_consumer_id()
        name = cmd.consumer_name if cmd.consumer_name else f"consumer-{lab_id}"
        cnx = RemoteConsumer(
            self.connection, cmd.consumer_id, topic, cmd.subscription, name, svc.partition_index(topic)
        )
        start = cmd.start_message_id
        try:
            if cmd.schema is not None:
                svc.check_consumer_schema(topic, model_schema(cmd.schema))
            consumer = svc.subscribe(
                cnx,
                consumer_id=lab_id,
                topic=topic,
                subscription=cmd.subscription,
                sub_type=sub_type,
                name=name,
                priority=cmd.value("priority_level") or 0,
                initial_position=initial,
                key_shared_policy=policy,
                partition_index=cnx.partition,
                durable=durable,
                start_message_id=start.ids() if start is not None else None,
                read_compacted=bool(cmd.read_compacted),
            )
        except PulsarError as e:
            self.error(cmd.request_id, client_error_code(e), str(e))
            return
        cnx.broker_consumer = consumer
        self.consumers[cmd.consumer_id] = cnx
        self.send(Success(cmd.request_id))

    def on_flow(self, cmd: Flow, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is not None and cmd.message_permits > 0:
            self.service.flow(cnx.broker_consumer, cmd.message_permits)

    def on_ack(self, cmd: Ack, frame: Frame) -> None:  # only when the fast path did not recognise the frame
        ids = tuple((m.ledger_id, m.entry_id, tuple(m.ack_set) if m.ack_set else None) for m in cmd.message_ids)
        self.apply_ack(
            cmd.consumer_id, int(cmd.ack_type), ids, {p.key: p.value for p in cmd.properties}, cmd.request_id
        )

    def apply_ack(
        self, consumer_id: int, ack_type: int, ids: tuple, props: dict[str, int], request_id: int | None
    ) -> None:
        """`Consumer.messageAcked`; an ACK_RESPONSE when the client asked for a receipt (``request_id``)."""
        cnx = self.consumers.get(consumer_id)
        if cnx is None:
            if request_id is not None:
                self.send(
                    AckResponse(
                        consumer_id=consumer_id,
                        error=ServerError.ConsumerNotFound,
                        message=f"Consumer {consumer_id} not found",
                        request_id=request_id,
                    )
                )
            return
        kind = AckType.CUMULATIVE if ack_type == 1 else AckType.INDIVIDUAL  # CommandAck.AckType's numbers
        try:
            self.service.ack(cnx.broker_consumer, AckCommand(kind, ids, props))
        except PulsarError as e:
            if request_id is not None:
                self.send(
                    AckResponse(
                        consumer_id=consumer_id, error=client_error_code(e), message=str(e), request_id=request_id
                    )
                )
            return
        if request_id is not None:
            self.send(AckResponse(consumer_id=consumer_id, request_id=request_id))

    def on_redeliver(self, cmd: RedeliverUnacked, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            return
        positions = [(m.ledger_id, m.entry_id) for m in cmd.message_ids] if cmd.message_ids else None
        self.service.redeliver_unacknowledged(cnx.broker_consumer, positions)

    def on_unsubscribe(self, cmd: Unsubscribe, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.error(cmd.request_id, ServerError.MetadataError, "Consumer not found")
            return
        try:
            self.service.unsubscribe(cnx.broker_consumer)
        except PulsarError as e:
            self.error(cmd.request_id, client_error_code(e), str(e))
            return
        self.connection.forget_consumer(cnx)
        self.send(Success(cmd.request_id))

    def on_close_consumer(self, cmd: CloseConsumer, frame: Frame) -> None:
        cnx = self.consumers.pop(cmd.consumer_id, None)
        if cnx is not None:
            self.release_consumer(cnx, "closed")
        self.send(Success(cmd.request_id))

    def release_consumer(self, cnx: RemoteConsumer, reason: str) -> None:
        consumer = cnx.broker_consumer
        if consumer is None:
            return
        self.service.close_consumer(consumer, reason)

    def on_seek(self, cmd: Seek, frame: Frame) -> None:
        if cmd.message_id is None and cmd.message_publish_time is None:
            self.error(
                cmd.request_id, ServerError.MetadataError, "Message id and message publish time were not present"
            )
            return
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.error(cmd.request_id, ServerError.MetadataError, "Consumer not found")
            return
        try:
            if cmd.message_id is not None:
                self.service.reset_cursor(cnx.broker_consumer, cmd.message_id.ids())
            else:
                self.service.reset_cursor(
                    cnx.broker_consumer, publish_time=self.server.clock.to_virtual(cmd.message_publish_time)
                )
        except PulsarError as e:
            prefix = (
                "Error when resetting subscription: "
                if cmd.message_id is not None
                else "Reset subscription to publish time error: "
            )
            self.error(cmd.request_id, ServerError.UnknownError, prefix + str(e))
            return
        self.send(Success(cmd.request_id))

    def on_get_last_message_id(self, cmd: GetLastMessageId, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.error(cmd.request_id, ServerError.MetadataError, "Consumer not found")
            return
        last = self.service.get_last_message_id(cnx.broker_consumer)
        last_id = MsgId(
            ledger_id=last.ledger_id, entry_id=last.entry_id, partition=last.partition, batch_index=last.batch_index
        )
        self.send(
            GetLastMessageIdResponse(
                last_message_id=last_id,
                request_id=cmd.request_id,
                consumer_mark_delete_position=MsgId(
                    ledger_id=last.mark_delete_ledger_id, entry_id=last.mark_delete_entry_id
                ),
            )
        )

    def on_consumer_stats(self, cmd: ConsumerStats, frame: Frame) -> None:
        cnx = self.consumers.get(cmd.consumer_id)
        if cnx is None:
            self.send(
                ConsumerStatsResponse(
                    request_id=cmd.request_id,
                    error_code=ServerError.ConsumerNotFound,
                    error_message=f"Consumer {cmd.consumer_id} not found",
                )
            )
            return
        stats = self.service.consumer_stats(cnx.broker_consumer)
        self.send(
            ConsumerStatsResponse(
                request_id=cmd.request_id,
                msg_rate_out=0.0,
                msg_throughput_out=0.0,
                msg_rate_redeliver=0.0,
                consumer_name=stats.consumer_name,
                available_permits=stats.available_permits,
                unacked_messages=stats.unacked_messages,
                blocked_consumer_on_unacked_msgs=stats.blocked_consumer_on_unacked_msgs,
                address=self.connection.peer,
                connected_since=stats.connected_since,
                type=stats.type,
                msg_rate_expired=0.0,
                msg_backlog=stats.msg_backlog,
                message_ack_rate=0.0,
            )
        )


__all__ = ["ConsumerCommands"]
