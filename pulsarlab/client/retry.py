"""Retry topics: ``reconsume_later`` writes a copy to the retry topic with a delay, then acks the original.

Models `ConsumerImpl.doReconsumeLater` with ``enableRetry`` (docs/guide/retry-and-dead-letters.md#dead-letter-topic;
the Python client has no retry,
so the lab follows the Java client): the copy keeps the payload, keys, event time and properties, adds
``REAL_TOPIC`` and ``ORIGIN_MESSAGE_ID`` where absent (so they name the first original), sets
``RECONSUMETIMES`` (previous + 1) and ``DELAY_TIME`` (ms, negative -> 0) fresh, and is sent with
``deliver_after(delay)`` when the delay is > 0. Once ``RECONSUMETIMES`` exceeds ``maxRedeliverCount`` the copy
goes to the dead-letter topic instead. The original is acknowledged (individually or cumulatively) after the
copy is written. Both producers are created at their first use.

Simplifies: sends never fail, so the "send failed: redeliver the original" path is not modelled.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Callable, Mapping

from pulsarlab.client.dead_letter import (
    SYSTEM_PROPERTY_DELAY_TIME,
    SYSTEM_PROPERTY_RECONSUMETIMES,
    DeadLetterPolicy,
    LetterProducer,
    copy_kwargs,
    letter_properties,
    origin_topic_name,
)
from pulsarlab.event_catalogue import redelivery as rev

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.consumer import Message
    from pulsarlab.lab import Lab

RECONSUME_LATER_ERROR_MSG = "reconsumeLater method not support!"  # ConsumerBase, retry not enabled
RECONSUME_LATER_CUMULATIVE_NOT_ALLOWED = "Cannot use cumulative acks on a non-exclusive subscription"


def delay_millis(delay: timedelta | int) -> int:
    """A ``reconsume_later`` delay in ms: a `timedelta` or an int of ms; negative becomes 0 (``DELAY_TIME``)."""
    if isinstance(delay, timedelta):
        ms = delay // timedelta(milliseconds=1)
    elif isinstance(delay, int) and not isinstance(delay, bool):
        ms = delay
    else:
        raise TypeError(f"delay must be a datetime.timedelta or an int of milliseconds, not {delay!r}")
    return max(ms, 0)


def retry_properties(
    message: "Message", custom: Mapping[str, str] | None, delay_ms: int, *, multi_topics: bool, subscription: str | None
) -> dict[str, str]:
    """The copy's properties: ``getPropertiesMap`` + custom properties + ``RECONSUMETIMES`` + ``DELAY_TIME``."""
    props = letter_properties(
        message.properties(),
        str(message.message_id()),
        origin_topic_name(message.topic_name(), multi_topics),
        subscription,
    )
    if custom:
        for k, v in custom.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"properties must map str to str, got {k!r}: {v!r}")
        props.update(custom)
    times = 1
    previous = props.get(SYSTEM_PROPERTY_RECONSUMETIMES)
    if previous is not None:
        times = int(previous) + 1
    props[SYSTEM_PROPERTY_RECONSUMETIMES] = str(times)
    props[SYSTEM_PROPERTY_DELAY_TIME] = str(delay_ms)
    return dict(sorted(props.items()))


class RetryLetters:
    """One `ConsumerImpl`'s retry path: the resolved policy and the lazy retry and dead-letter producers."""

    def __init__(
        self,
        lab: "Lab",
        policy: DeadLetterPolicy,
        *,
        consumer_id: int,
        subscription: str,
        multi_topics: bool,
        real_subscription: bool,
        retry_producer: LetterProducer,
        dead_letter_producer: LetterProducer,
    ) -> None:
        self._lab = lab
        self.policy = policy
        self.consumer_id = consumer_id
        self.subscription = subscription
        self.multi_topics = multi_topics
        self.real_subscription = real_subscription
        self.retry_producer = retry_producer
        self.dead_letter_producer = dead_letter_producer

    def reconsume_later(
        self, message: "Message", delay_ms: int, custom: Mapping[str, str] | None, acknowledge: Callable[[], object]
    ) -> None:
        """Write the copy (retry topic, or DLQ past the limit), then ``acknowledge()`` the original."""
        props = retry_properties(
            message,
            custom,
            delay_ms,
            multi_topics=self.multi_topics,
            subscription=self.subscription if self.real_subscription else None,
        )
        times = int(props[SYSTEM_PROPERTY_RECONSUMETIMES])
        mid = message.message_id()
        events = self._lab.events
        extra = copy_kwargs(message)
        if times > self.policy.max_redeliver_count and self.policy.dead_letter_topic:
            producer = self.dead_letter_producer.get()
            copy = producer.send(message.data(), properties=props, **extra)
            if events.enabled:
                events.append(
                    rev.DEAD_LETTERED,
                    self._lab.now(),
                    consumer=self.consumer_id,
                    ledger=mid.ledger,
                    entry=mid.entry,
                    count=times,
                    reason=rev.REASON_RECONSUME_TIMES,
                    copy={"topic": producer.topic(), "ids": [[copy.ledger, copy.entry]]},
                )
        else:
            producer = self.retry_producer.get()
            if delay_ms > 0:
                extra["deliver_after"] = timedelta(milliseconds=delay_ms)
            copy = producer.send(message.data(), properties=props, **extra)
            if events.enabled:
                events.append(
                    rev.RECONSUMED_LATER,
                    self._lab.now(),
                    consumer=self.consumer_id,
                    ledger=mid.ledger,
                    entry=mid.entry,
                    reconsume_times=times,
                    delay_ms=delay_ms,
                    copy={
                        "topic": producer.topic(),
                        "ids": [[copy.ledger, copy.entry]],
                        "deliver_at": self._lab.now() + delay_ms if delay_ms > 0 else None,
                    },
                )
        acknowledge()


__all__ = [
    "RECONSUME_LATER_CUMULATIVE_NOT_ALLOWED",
    "RECONSUME_LATER_ERROR_MSG",
    "RetryLetters",
    "delay_millis",
    "retry_properties",
]
