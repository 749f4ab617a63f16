"""Who may produce on a topic: the producer access modes and the topic epoch.

Models `AbstractTopic.incrementTopicEpochIfNeeded` / `handleProducerRemoved`:

* ``Shared`` joins unless an exclusive producer holds (or waits for) the topic: ``ProducerBusyException``
  "Topic has an existing exclusive producer: NAME".
* ``Exclusive`` takes the topic if nobody produces on it, else ``ProducerFencedException`` ("Topic has an
  existing exclusive producer: NAME" or "Topic has existing shared producers").
* ``WaitForExclusive`` takes it the same way or queues; the first queued producer takes the topic when the
  exclusive producer leaves (the broker then completes its PRODUCER with a second PRODUCER_SUCCESS).
* ``ExclusiveWithFencing`` closes every producer of the topic (they are fenced: a real client's next send fails
  with ``ProducerFenced``), fails the queued ones ("Fenced out"), and takes the topic.

Taking the topic moves the topic epoch one up (0 first) unless the producer brings its own (a reconnect); a
reconnecting producer whose epoch is behind the topic's is fenced ("Topic epoch has already moved").
Simplifies: the epoch lives with the topic object (Pulsar keeps it in the managed ledger's properties).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from pulsarlab.errors import ProducerBusyException, ProducerFencedException
from pulsarlab.protocol.producer_access import ProducerAccessMode

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.topic import PersistentTopic, ProducerHandle


class ProducerAccess:
    """One topic's exclusive-producer state."""

    __slots__ = ("has_exclusive", "exclusive_name", "topic_epoch", "waiting")

    def __init__(self) -> None:
        self.has_exclusive = False
        self.exclusive_name: str | None = None
        self.topic_epoch: int | None = None
        self.waiting: deque["ProducerHandle"] = deque()

    def admit(self, topic: "PersistentTopic", handle: "ProducerHandle", requested_epoch: int | None) -> bool:
        """True if ``handle`` may produce now, False if it waits (``WaitForExclusive``); raises if refused."""
        mode = handle.access_mode
        busy = self.has_exclusive or bool(self.waiting)
        if mode is ProducerAccessMode.Shared:
            if busy:
                raise ProducerBusyException(f"Topic has an existing exclusive producer: {self.exclusive_name}")
            return True
        if mode is ProducerAccessMode.Exclusive:
            if busy:
                raise ProducerFencedException(f"Topic has an existing exclusive producer: {self.exclusive_name}")
            if topic.producers:
                raise ProducerFencedException("Topic has existing shared producers")
            self._check_epoch(requested_epoch)
        elif mode is ProducerAccessMode.WaitForExclusive:
            if self.has_exclusive or topic.producers:
                handle.requested_epoch = requested_epoch
                self.waiting.append(handle)
                return False
            self._check_epoch(requested_epoch)
        elif mode is ProducerAccessMode.ExclusiveWithFencing:
            if self.has_exclusive or topic.producers:
                queued = list(self.waiting)
                self.waiting.clear()
                for h in queued:
                    h.fenced("Fenced out")
                self.has_exclusive = False
                self.exclusive_name = None
                for h in list(topic.producers.values()):
                    topic.producers.pop(h.producer_id, None)
                    h.fenced(f"Fenced out by the exclusive producer {handle.name}")
            self._check_epoch(requested_epoch)
        else:  # pragma: no cover - the enum has four members
            raise ValueError(f"Invalid producer access mode: {mode}")
        self._take(handle, requested_epoch)
        return True

    def _check_epoch(self, requested_epoch: int | None) -> None:
        current = -1 if self.topic_epoch is None else self.topic_epoch
        if requested_epoch is not None and requested_epoch < current:
            raise ProducerFencedException(
                f"Topic epoch has already moved. Current epoch: {current}, Producer epoch: {requested_epoch}"
            )

    def _take(self, handle: "ProducerHandle", requested_epoch: int | None) -> None:
        self.has_exclusive = True
        self.exclusive_name = handle.name
        if requested_epoch is not None:
            self.topic_epoch = requested_epoch
        else:
            self.topic_epoch = 0 if self.topic_epoch is None else self.topic_epoch + 1
        handle.topic_epoch = self.topic_epoch

    def removed(self, topic: "PersistentTopic", handle: "ProducerHandle") -> None:
        """`handleProducerRemoved`: an exclusive producer left; the first waiting one takes the topic."""
        if handle in self.waiting:
            self.waiting.remove(handle)
            return
        if not self.has_exclusive:
            return
        self.has_exclusive = False
        self.exclusive_name = None
        if self.waiting:
            nxt = self.waiting.popleft()
            self._take(nxt, nxt.requested_epoch)
            topic.producer_admitted(nxt)
            nxt.ready = True
            if nxt.on_ready is not None:
                nxt.on_ready(nxt)

    def reset(self) -> None:
        """A topic unload: nobody holds or waits for the topic (the epoch stays)."""
        self.has_exclusive = False
        self.exclusive_name = None
        self.waiting.clear()


__all__ = ["ProducerAccess"]
