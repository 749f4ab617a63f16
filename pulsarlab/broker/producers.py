"""The producers the broker holds, by producer id, and their lifecycle in the event log.

Models the broker's side of a producer's life (`ServerCnx.handleProducer` registering a `Producer`,
`Producer.close` / `ServerCnx.handleCloseProducer` removing it, both logged by the broker): ``producer_created``
when a producer id first registers on a topic, ``producer_closed`` when its last registration goes (closed by its
client, its connection gone, or fenced out by an ``ExclusiveWithFencing`` producer). The in-process client and
`pulsarlab serve` both reach it through `BrokerService.register_producer` / ``unregister_producer``, so each
producer is logged once whichever way it came. Simplifies: the in-process client's producer on a partitioned
topic registers every partition under one id (one created/closed pair, naming the topic the application gave),
where the binary protocol has one producer id per partition; a registration again after a broker restart (the
client reconnecting) is the same producer and is not logged again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulsarlab.event_catalogue import broker as ev

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.topic import ProducerHandle
    from pulsarlab.clock import Scheduler
    from pulsarlab.events import EventLog


class ProducerRegistry:
    """Producer id -> the topics (or partitions) it is registered on."""

    def __init__(self, events: "EventLog", scheduler: "Scheduler") -> None:
        self._events = events
        self._scheduler = scheduler
        self._topics: dict[int, set[str]] = {}

    def added(self, handle: "ProducerHandle", created_on: str | None, batching: bool | None) -> None:
        """A registration the topic took (admitted or queued); the first of its id is logged, naming
        ``created_on`` (else the topic) and ``batching`` (None: the broker is not told)."""
        topics = self._topics.get(handle.producer_id)
        if topics is not None:
            topics.add(handle.topic.name)
            return
        self._topics[handle.producer_id] = {handle.topic.name}
        if self._events.enabled:
            self._events.append(
                ev.PRODUCER_CREATED,
                self._scheduler.now_ms,
                producer=handle.producer_id,
                name=handle.name,
                topic=created_on if created_on is not None else handle.topic.name,
                batching=batching,
            )

    def removed(self, handle: "ProducerHandle") -> None:
        """A registration gone (closed, disconnected or fenced out); the last of its id is logged. A handle
        already removed (a fenced producer its client then closes) is not logged twice."""
        topics = self._topics.get(handle.producer_id)
        if topics is None or handle.topic.name not in topics:
            return
        topics.discard(handle.topic.name)
        if topics:
            return
        del self._topics[handle.producer_id]
        if self._events.enabled:
            self._events.append(ev.PRODUCER_CLOSED, self._scheduler.now_ms, producer=handle.producer_id)
