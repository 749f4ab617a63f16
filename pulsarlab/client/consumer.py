"""The consumer: receiver queue, FLOW permits, receive, acknowledgements, ack timeout, negative acks, retry, DLQ.

Models the Python ``pulsar.Consumer`` over `ConsumerImpl` (one per topic or partition; a partitioned topic,
or a topic with its retry topic, gets a `MultiTopicsConsumerImpl`-like parent whose queue merges the inner
consumers' messages in arrival order) and `ZeroQueueConsumerImpl` (docs/guide/flow-control.md#flow-permits,
docs/guide/acknowledgements.md#ack-grouping, docs/guide/redelivery.md#ack-timeout):

* On subscribe each partition consumer sends FLOW(receiver queue size) (per partition
  ``min(receiver_queue_size, max_total_receiver_queue_size_across_partitions / partitions)``); none with 0.
* Every message the application takes returns one permit; when the returned permits reach half the queue
  size, FLOW(returned) is sent (``increaseAvailablePermits``). A batch entry costs as many permits as it holds
  messages; messages the client drops (already acked batch indexes, ``isDuplicate``) return their permits.
* ``receiver_queue_size=0``: each ``receive()`` sends FLOW(1) and waits; a batch entry closes the consumer with
  Pulsar's text; ``receive(timeout_millis=...)`` is refused as the C++ client refuses it.
* Acks go through `AcknowledgmentsGroupingTracker` (group time, size, batch ack sets, duplicates);
  cumulative acks on Shared / Key_Shared fail with Pulsar's text.
* Ack timeout (``unacked_messages_timeout_ms``, tick ``lab_tick_duration_ms``): a received message enters the
  `UnAckedMessageTracker` (the parent's on a multi-topic consumer) until it is acked or nacked; when it times
  out, Shared and Key_Shared ask the broker to redeliver those ids (in commands of at most 1000), Exclusive and
  Failover redeliver everything unacked (the broker rewinds the cursor).
* ``negative_acknowledge``: the inner consumer's `NegativeAcksTracker` (3.x deadline map or 4.x time buckets, by
  profile; optional `MultiplierRedeliveryBackoff`) redelivers after ``negative_ack_redelivery_delay_ms``; the
  id leaves the ack-timeout tracker (not on a multi-topic consumer, nor for a batch id, before #20750: the
  profile switch ``negative_ack_double_redelivery``).
* ``dead_letter_policy``: see `client.dead_letter` (by redelivery count, Shared / Key_Shared only). With a
  policy the 2.x lines imply a 30 s ack timeout (``dead_letter_default_ack_timeout_ms``); 3.0+ do not.
* ``lab_retry_enable=True`` (Java's ``enableRetry``; the Python client has none): the consumer also subscribes to
  the retry topic (as Shared since 3.0.10 / 4.0.3) and ``reconsume_later`` writes copies there (`client.retry`).
* ``crash()`` (a lab extension): the process dies - pending acks are lost, the broker sees the connection close.
* Chunked messages (docs/guide/chunked-messages.md#chunk-count): each chunk entry goes to the partition consumer's
  `ChunkedMessageTracker`
  (``max_pending_chunked_message``, ``auto_ack_oldest_chunked_message_on_queue_full``, and the lab extra
  ``lab_expire_time_of_incomplete_chunked_message_ms``); non-final chunks return their permit at once, an
  assembled message is queued under its `ChunkMessageId`, and its acks expand to every chunk: an individual
  ack acks each chunk's position, a cumulative ack goes to the last chunk's position. Ids the tracker hands to
  ack-timeout tracking go to `PartitionConsumer.track_message`, which does nothing while the consumer has no ack
  timeout.

Simplifies: no listeners or pause/resume (``seek`` is modelled, below); no reconnection (the model's connections never drop by
themselves), so no consumer epochs: a redeliver-all clears the queue before the broker resends. Reactions to a
message the broker is still delivering (redelivering one over ``maxRedeliverCount``) run right after it, on
the scheduler, as they run on the client's own thread in Pulsar. The ack-timeout tracker keeps entry-level ids
(the Java parent tracker keeps each batch message's id; an entry then times out until all its messages are
acked either way).

The module is `Consumer`, the application's side; each topic or partition's `ConsumerImpl` is
`client.partition_consumer`, what they share `client.consumer_state`, the settings `client.configuration`, a
received message `client.message`.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Mapping

from pulsarlab.client.ack_grouping import AcknowledgmentsGroupingTracker
from pulsarlab.client.chunking import ChunkMessageId
from pulsarlab.client.configuration import (
    DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS,
    TOPICS_CONSUMER_QUEUE_SIZE,
    ConsumerConfiguration,
)
from pulsarlab.client.consumer_state import ConsumerState
from pulsarlab.client.dead_letter import DeadLetterPolicy, resolve_retry_policy
from pulsarlab.client.library import ClientLibrary
from pulsarlab.client.message import Message
from pulsarlab.client.negative_acks import NegativeAcksTracker
from pulsarlab.client.partition_consumer import MAX_REDELIVER_UNACKNOWLEDGED, PartitionConsumer
from pulsarlab.client.producer import AlreadyClosedException
from pulsarlab.client.retry import (
    RECONSUME_LATER_CUMULATIVE_NOT_ALLOWED,
    RECONSUME_LATER_ERROR_MSG,
    delay_millis,
)
from pulsarlab.client.schemas import IncompatibleSchema, message_class
from pulsarlab.client.unacked_tracker import UnAckedMessageTracker
from pulsarlab.errors import (
    IllegalArgumentException,
    InvalidConfigurationException,
    PulsarClientException,
    Timeout,
)
from pulsarlab.errors import IncompatibleSchemaException as BrokerIncompatibleSchema
from pulsarlab.event_catalogue import broker as ev
from pulsarlab.event_catalogue import redelivery as rev
from pulsarlab.ids import LATEST, MessageId
from pulsarlab.protocol.subscription import ConsumerType

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.client import Client

CUMULATIVE_NOT_ALLOWED = "Cannot use cumulative acks on a non-exclusive/non-failover subscription"
_RECEIVED = ev.RECEIVED
_ACKNOWLEDGED = ev.ACKNOWLEDGED
_ChunkMessageId = ChunkMessageId


class Consumer:
    """``pulsar.Consumer``: made by ``client.subscribe`` from a `ConsumerConfiguration` (``config``)."""

    _start_inclusive = False  # after seek(message id): the C++ client drops up to the id, inclusive for a reader

    def __init__(self, client: "Client", topic: str, config: ConsumerConfiguration) -> None:
        lab = client.lab
        commands = client.commands
        consumer_id = commands.new_consumer_id()
        name = config.consumer_name if config.consumer_name is not None else f"consumer-{consumer_id}"
        self._schema_data = config.schema_data
        self._message_class = (
            message_class(Message, config.schema)
            if config.schema is not None and self._schema_data is not None
            else None
        )
        full_topic = commands.normalize(topic)
        partitions = commands.ensure_topic(full_topic)
        queue_size = config.receiver_queue_size
        if partitions and queue_size == 0:
            raise InvalidConfigurationException(
                "Can't use receiverQueueSize=0 with a partitioned topic (ZeroQueueConsumerImpl needs a single topic)"
            )
        if config.lab_retry_enable and queue_size == 0:
            raise IllegalArgumentException(TOPICS_CONSUMER_QUEUE_SIZE)
        subscription = config.subscription_name
        policy = DeadLetterPolicy.of(config.dead_letter_policy) if config.dead_letter_policy is not None else None
        if config.lab_retry_enable:
            policy = resolve_retry_policy(policy, full_topic, subscription, commands.topic_exists)
        self._state = state = ConsumerState(
            consumer=self,
            client=client,
            lab=lab,
            commands=commands,
            scheduler=lab.scheduler,
            events=lab.events if lab.events.enabled else None,
            config=config,
            consumer_id=consumer_id,
            name=name,
            topic=full_topic,
            multi_topics=bool(partitions) or config.lab_retry_enable,
            batch_index_ack_enabled=config.batch_index_ack(lab.profile),
            dead_letter_policy=policy,
        )
        ack_timeout = config.ack_timeout_ms(lab.profile)
        self._entry_hooks = policy is not None or ack_timeout > 0
        # the names the hot paths (receive, acknowledge) and the lab's tools read
        self._lab = lab
        self._id = consumer_id
        self._scheduler = lab.scheduler
        self._events = state.events
        self._queue = state.queue
        inner = state.inner
        self._impls = inner.by_partition
        self._all_impls = inner.all
        for t, p, per in config.queue_sizes(full_topic, partitions):
            inner.add(PartitionConsumer(state, t, p, per, config.consumer_type), retry=False)
        if config.lab_retry_enable:
            assert policy is not None
            retry_topic = commands.normalize(policy.retry_letter_topic)
            retry_type = ConsumerType.Shared if lab.profile.retry_topic_always_shared else config.consumer_type
            for t, p, per in config.queue_sizes(retry_topic, commands.ensure_topic(retry_topic)):
                inner.add(PartitionConsumer(state, t, p, per, retry_type), retry=True)
        if self._schema_data is not None:  # SUBSCRIBE's schema: compatible, or the idle topic's first
            try:
                for impl in inner.by_partition.values():
                    commands.check_consumer_schema(impl.topic, self._schema_data)
            except BrokerIncompatibleSchema as e:
                raise IncompatibleSchema(str(e)) from None
        subscribed: list[PartitionConsumer] = []
        try:
            for impl in inner.all:
                impl.subscribe()
                subscribed.append(impl)
        except Exception:
            for impl in subscribed:
                impl.close_on_broker("subscribe_failed")
            raise
        if ack_timeout > 0:
            state.unacked = UnAckedMessageTracker(
                lab.scheduler,
                state.on_ack_timeout,
                ack_timeout,
                config.lab_tick_duration_ms,
                tick_listener=state.ack_timeout_ticked,
                idle_stop=True,
            )
        for impl in inner.all:
            if impl.queue_size > 0:
                impl.send_flow(impl.queue_size)

    # --- identity ---------------------------------------------------------------------------------
    @property
    def config(self) -> ConsumerConfiguration:
        """The settings this consumer was subscribed with (`ConsumerConfiguration`)."""
        return self._state.config

    def topic(self) -> str:
        return self._state.topic

    def subscription_name(self) -> str:
        return self._state.config.subscription_name

    def consumer_name(self) -> str:
        return self._state.name

    @property
    def consumer_id(self) -> int:
        """The lab-wide id this consumer was created with (`ConsumerBase.consumerId`)."""
        return self._id

    @property
    def negative_ack_redelivery_delay_ms(self) -> int:
        """``negative_ack_redelivery_delay_ms`` as subscribed with."""
        return self._state.config.negative_ack_redelivery_delay_ms

    def is_connected(self) -> bool:
        return not self._state.closed

    @property
    def consumer_type(self) -> ConsumerType:
        return self._state.config.consumer_type

    @property
    def receiver_queue(self) -> list[Message]:
        """The messages waiting in the receiver queue (read-only copy, for views)."""
        return list(self._queue)

    @property
    def available_permits(self) -> int:
        """Permits handed back by the application and not yet sent in a FLOW (sum over partitions)."""
        return sum(i.available_permits for i in self._all_impls)

    @property
    def is_active(self) -> bool | None:
        """Failover: the last ACTIVE_CONSUMER_CHANGE this consumer received (None before any)."""
        active = self._state.active
        if not active:
            return None
        return any(active.values())

    def ack_tracker(self, partition: int = -1) -> AcknowledgmentsGroupingTracker:
        """The grouping tracker of one partition consumer (-1 on a non-partitioned topic)."""
        return self._impls[partition].tracker

    # --- redelivery state (read-only, for views and tests) ---------------------------------------------
    @property
    def unacked_message_tracker(self) -> UnAckedMessageTracker | None:
        """The ack-timeout tracker (the parent's on a multi-topic consumer), None with the ack timeout off."""
        return self._state.unacked

    def negative_acks_tracker(self, topic_or_partition: int | str = -1) -> NegativeAcksTracker | None:
        """An inner consumer's NegativeAcksTracker (None before its first negative ack)."""
        return self.inner_consumer(topic_or_partition).nacks

    @property
    def dead_letter_policy(self) -> DeadLetterPolicy | None:
        """The policy as subscribed (with the retry path's names filled in); each inner consumer resolves a
        blank dead-letter topic for its own topic (`dead_letter_topics`)."""
        return self._state.dead_letter_policy

    def dead_letter_topics(self) -> dict[str, str]:
        """Inner consumer topic -> the dead-letter topic it writes to."""
        return {i.topic: i.dead_letters.policy.dead_letter_topic for i in self._all_impls if i.dead_letters}

    @property
    def retry_letter_topic(self) -> str | None:
        policy = self._state.dead_letter_policy
        return policy.retry_letter_topic if self._state.config.lab_retry_enable and policy else None

    def topics(self) -> list[str]:
        """Every topic (or partition) this consumer is subscribed to, retry topic included."""
        return [i.topic for i in self._all_impls]

    def topic_consumers(self) -> list[PartitionConsumer]:
        """Every inner consumer (`ConsumerImpl`): the partitions' (or the topic's own), then the retry topic's."""
        return list(self._all_impls)

    def inner_consumer(self, key: int | str) -> PartitionConsumer:
        """The inner consumer (`ConsumerImpl`) of a partition index (-1: the topic's own) or of a topic name."""
        if isinstance(key, str):
            for impl in self._all_impls:
                if impl.topic == key or impl.topic == self._state.commands.normalize(key):
                    return impl
            raise KeyError(f"{key!r} is not one of this consumer's topics: {self.topics()}")
        return self._impls[key]

    # --- receive ---------------------------------------------------------------------------------
    def receive(self, timeout_millis: int | None = None) -> Message:
        """The next message of the receiver queue.

        ``timeout_millis=0``: only what is queued now, else ``Timeout``. ``timeout_millis=t``: virtual time
        runs up to t ms until a message arrives. ``None``: virtual time runs until one arrives; if nothing
        more can happen the call raises ``Timeout`` instead of blocking forever.
        """
        state = self._state
        if state.closed:
            raise AlreadyClosedException("Consumer already closed")
        if timeout_millis is not None and (not isinstance(timeout_millis, int) or timeout_millis < 0):
            raise ValueError(f"timeout_millis must be an int >= 0 or None, got {timeout_millis!r}")
        queue = self._queue
        zero_queue = state.config.receiver_queue_size == 0
        if zero_queue:
            if timeout_millis is not None:
                raise InvalidConfigurationException("Can't use receive with timeout, if the queue size is 0")
            if not queue:
                impl = next(iter(self._impls.values()))
                impl.send_flow(1)
            self._raise_pending_error()
        if not queue:
            if timeout_millis == 0:
                raise Timeout("Pulsar error: TimeOut")
            deadline = None if timeout_millis is None else self._scheduler.now_ms + timeout_millis
            self._lab.wait_for(lambda: bool(queue) or state.closed, deadline, what="a message", raise_on_idle=False)
            self._raise_pending_error()
            self._check_open()
            if not queue:
                raise Timeout("Pulsar error: TimeOut")
        msg = queue.popleft()
        inner = state.inner
        impl = inner.taken(msg) if inner.by_retry_topic else self._impls[msg._partition]
        events = self._events
        if events is not None:
            events.append_row(
                _RECEIVED, self._scheduler.now_ms, self._id, msg._ledger, msg._entry, msg._batch_index, len(queue)
            )
        if not zero_queue:  # increase_available_permits(1), inlined
            permits = impl.available_permits = impl.available_permits + 1
            if permits >= impl.queue_size // 2 and impl.queue_size > 0:
                impl.available_permits = 0
                impl.send_flow(permits)
        if state.unacked is not None:  # trackMessage: the ack timeout starts when the application takes it
            state.unacked.add(msg._id)
        if self._message_class is not None:
            msg.__class__ = self._message_class  # value() decodes with the consumer's schema
        return msg

    def _raise_pending_error(self) -> None:
        error = self._state.pending_error
        if error is not None:
            self._state.pending_error = None
            self._close("closed")
            raise error

    def _check_open(self) -> None:
        if self._state.closed:
            raise AlreadyClosedException("Consumer already closed")

    # --- acknowledgements ----------------------------------------------------------------------------
    def _resolve(self, message: Message | MessageId) -> tuple[MessageId, int, PartitionConsumer]:
        state = self._state
        if isinstance(message, Message):
            return message._id, message._batch_size, state.inner.of_message(message, state.topic)
        if isinstance(message, MessageId):
            impl = state.inner.of_id(message, state.topic)
            size = impl.batch_sizes.get((message.ledger, message.entry), 0)
            return message, size if message.batch_index >= 0 else 0, impl
        raise TypeError(f"acknowledge takes a Message or a MessageId, not {type(message).__name__}")

    def acknowledge(self, message: Message | MessageId) -> None:
        """Acknowledge one message (grouped; sent at the next flush)."""
        state = self._state
        if state.closed:
            raise AlreadyClosedException("Consumer already closed")
        mid: MessageId | None
        if type(message) is Message and not state.inner.by_retry_topic:
            batch_size = message._batch_size
            ledger, entry, partition, batch_index = (
                message._ledger,
                message._entry,
                message._partition,
                message._batch_index,
            )
            impl = self._impls.get(partition)
            if impl is None:
                impl = state.inner.for_id(message._id, state.topic)
            mid = message._mid  # None while no one asked for the MessageId object
        else:
            mid, batch_size, impl = self._resolve(message)
            ledger, entry, partition, batch_index = mid.ledger, mid.entry, mid.partition, mid.batch_index
        events = self._events
        if events is not None:
            events.append_row(_ACKNOWLEDGED, self._scheduler.now_ms, self._id, ledger, entry, batch_index, 0)
        if type(mid) is _ChunkMessageId:
            impl.acknowledge_chunked(mid, False)
            return
        if batch_index < 0 or batch_size <= 0:  # not a batch message; either way the tracker takes the id's ints
            impl.tracker.add_entry_ack(ledger, entry, partition, batch_index)
        else:
            impl.tracker.add_batch_message_ack(ledger, entry, partition, batch_index, batch_size)
        if self._entry_hooks:
            if mid is None:
                assert isinstance(message, Message)
                mid = message._id
            impl.after_individual_ack(mid, batch_size)

    def acknowledge_cumulative(self, message: Message | MessageId) -> None:
        """Acknowledge every message up to this one (Exclusive and Failover only)."""
        self._check_open()
        if self._state.config.consumer_type.individual_ack_mode:
            raise InvalidConfigurationException(CUMULATIVE_NOT_ALLOWED)
        mid, batch_size, impl = self._resolve(message)
        impl.acknowledge_cumulative(mid, batch_size)

    # --- negative acks, retry ------------------------------------------------------------------------
    def negative_acknowledge(self, message: Message | MessageId) -> None:
        """Tell the broker, after ``negative_ack_redelivery_delay_ms``, to deliver this message again.

        A `Message` passes its redelivery count to the redelivery backoff; a `MessageId` counts as 0. The id
        leaves the ack-timeout tracker (see the module docstring for the pre-#20750 lines).
        """
        self._check_open()
        state = self._state
        if isinstance(message, Message):
            mid, count, impl = message._id, message._redelivery_count, state.inner.of_message(message, state.topic)
        elif isinstance(message, MessageId):
            mid, count, impl = message, 0, state.inner.of_id(message, state.topic)
        else:
            raise TypeError(f"negative_acknowledge takes a Message or a MessageId, not {type(message).__name__}")
        tracker = impl.nack_tracker()
        due = tracker.due_ms(count)
        tracker.add(mid, count)
        unacked = state.unacked
        if unacked is not None:
            double = self._lab.profile.negative_ack_double_redelivery
            if state.multi_topics:
                if not double:
                    unacked.remove(mid)
            elif not double or mid.batch_index < 0:
                unacked.remove(mid)
        if self._events is not None:
            self._events.append_row(
                rev.NEGATIVE_ACKED,
                self._scheduler.now_ms,
                self._id,
                mid.ledger,
                mid.entry,
                mid.batch_index,
                due,
                self._events.intern(tracker.form.value),
            )

    def reconsume_later(
        self, message: Message, delay: timedelta | int, properties: Mapping[str, str] | None = None
    ) -> None:
        """Write a copy to the retry topic, delivered after ``delay`` (a timedelta, or ms), and ack this one.

        Java's ``reconsumeLater(message, customProperties, delay, unit)`` with ``enableRetry`` (the Python client
        has no retry): needs ``subscribe(..., lab_retry_enable=True)``; past ``maxRedeliverCount`` retries the copy
        goes to the dead-letter topic instead.
        """
        impl, delay_ms = self._retry_target(message, delay)
        assert impl.retry is not None
        impl.retry.reconsume_later(message, delay_ms, properties, partial(impl.acknowledge_retried, message))

    def reconsume_later_cumulative(
        self, message: Message, delay: timedelta | int, properties: Mapping[str, str] | None = None
    ) -> None:
        """`reconsume_later`, then a cumulative ack (Exclusive and Failover only, as Java's
        ``reconsumeLaterCumulative``)."""
        impl, delay_ms = self._retry_target(message, delay)
        if self._state.config.consumer_type.individual_ack_mode or impl.sub_type.individual_ack_mode:
            raise InvalidConfigurationException(RECONSUME_LATER_CUMULATIVE_NOT_ALLOWED)
        assert impl.retry is not None
        impl.retry.reconsume_later(
            message, delay_ms, properties, partial(impl.acknowledge_cumulative, message._id, message._batch_size)
        )

    def _retry_target(self, message: Message, delay: timedelta | int) -> tuple[PartitionConsumer, int]:
        self._check_open()
        state = self._state
        if not state.config.lab_retry_enable:
            raise PulsarClientException(RECONSUME_LATER_ERROR_MSG)
        if not isinstance(message, Message):
            raise TypeError(
                f"reconsume_later takes a Message (its payload and properties are copied), not {type(message).__name__}"
            )
        return state.inner.of_message(message, state.topic), delay_millis(delay)

    # --- redelivery ----------------------------------------------------------------------------------
    def redeliver_unacknowledged_messages(self) -> None:
        """Ask the broker to send every unacked message again; the receiver queue and ack-timeout tracker are
        cleared (Shared/Key_Shared: all pending acks go to the replay set, each counting one redelivery;
        Exclusive/Failover: the cursor rewinds)."""
        self._check_open()
        self._state.redeliver_all()

    # --- closing ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Flush pending acks, then CLOSE_CONSUMER."""
        if self._state.closed:
            return
        for impl in self._all_impls:
            impl.tracker.close()
        self._close("closed")

    def crash(self) -> None:
        """Lab extension: the consumer's process dies. Acks still pending in the grouping tracker are lost;
        the broker sees the connection close and hands the unacked messages to other consumers."""
        if self._state.closed:
            return
        for impl in self._all_impls:
            impl.tracker.abandon()
        self._close("crashed")

    def _close(self, reason: str) -> None:
        self._state.closed = True
        self._state.close_tasks()
        for impl in self._all_impls:
            impl.close_on_broker(reason)
        self._queue.clear()

    def _reconnect(self) -> None:
        """Lab extension: connect again after the broker closed the connection (`Lab.restart_broker`).

        As ``ConsumerImpl.connectionOpened`` does on a durable subscription: the receiver queue is cleared (the
        broker sends those messages again from the cursor), returned permits start from 0, SUBSCRIBE goes out
        again with the same consumer id, then FLOW(receiver queue size). Acks pending in the grouping tracker stay
        and are flushed to the new broker at the next flush; until then the redelivered messages they cover are
        dropped as duplicates (``isDuplicate``).
        """
        state = self._state
        if state.closed:
            return
        self._queue.clear()
        state.pending_error = None
        state.active.clear()
        for impl in self._all_impls:
            impl.available_permits = 0
            impl.subscribe()
            impl.tracker.connection_opened()
        for impl in self._all_impls:
            if impl.queue_size > 0:
                impl.send_flow(impl.queue_size)

    def seek(self, messageid: object) -> None:
        """``Consumer.seek(messageid | timestamp)`` (C++ `ConsumerImpl::seekAsync`): SEEK resets the subscription
        and the broker disconnects its consumers; this one flushes its pending acks first, then clears its queue
        and subscribes again. By message id
        (a lab or pulsar-client MessageId) the C++ client then drops messages up to that id, so the next one is
        the message after it (the Java client reads from the id itself); by publish time (an int, ms on the lab's
        clock) reading restarts at the first message published at or after it. A message id on a partitioned
        topic is refused, as the C++ client refuses it. Other in-process consumers of the subscription stay
        disconnected (a real client would reconnect)."""
        self._check_open()
        commands = self._state.commands
        for impl in self._all_impls:  # seekAsync: ackGroupingTracker.flushAndClean() first
            impl.tracker.flush_and_clean()
        if isinstance(messageid, int) and not isinstance(messageid, bool):
            for impl in self._impls.values():
                assert impl.broker_consumer is not None
                commands.reset_cursor(impl.broker_consumer, publish_time=messageid)
            self._reconnect()
            return
        mid = MessageId.of(messageid)
        if self._state.multi_topics:
            raise IllegalArgumentException(
                "seek by message id is not supported on a partitioned or multi-topic consumer"
            )
        impl = next(iter(self._impls.values()))
        assert impl.broker_consumer is not None
        commands.reset_cursor(impl.broker_consumer, (mid.ledger, mid.entry))
        self._reconnect()
        special = mid.ledger < 0 or mid.entry < 0 or (mid.ledger, mid.entry) == (LATEST.ledger, LATEST.entry)
        if not special and self._state.client.client_library is ClientLibrary.CPP:
            self._state.drop_before(mid, self._start_inclusive)

    def unsubscribe(self) -> None:
        """Close and delete the subscription (only when this is its last consumer)."""
        self._check_open()
        commands = self._state.commands
        for impl in self._all_impls:
            assert impl.broker_consumer is not None
            commands.unsubscribe(impl.broker_consumer)
        for impl in self._all_impls:
            impl.tracker.close()
        self._state.closed = True
        self._state.close_tasks()
        self._queue.clear()

    def __repr__(self) -> str:
        state = self._state
        return (
            f"<Consumer {state.name!r} {state.config.consumer_type.name} on {state.topic} / "
            f"{state.config.subscription_name}, {len(self._queue)} queued>"
        )


__all__ = [
    "CUMULATIVE_NOT_ALLOWED",
    "DEFAULT_NEGATIVE_ACK_REDELIVERY_DELAY_MS",
    "MAX_REDELIVER_UNACKNOWLEDGED",
    "Consumer",
    "Message",
]
