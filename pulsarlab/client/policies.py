"""The dead letter policy a consumer is given, named as the Python ``pulsar-client`` package names it.

Models ``pulsar.ConsumerDeadLetterPolicy`` (Java's `DeadLetterPolicy`,
docs/guide/retry-and-dead-letters.md#dead-letter-topic). The subscription options
the broker sees too (``pulsar.ConsumerType``, ``InitialPosition``, ``KeySharedMode``, ``ConsumerKeySharedPolicy``)
are wire types: `pulsarlab.protocol.subscription`.
"""

from __future__ import annotations


class ConsumerDeadLetterPolicy:
    """``pulsar.ConsumerDeadLetterPolicy(max_redeliver_count, dead_letter_topic=None, initial_subscription_name=None)``.

    Wraps Java's `DeadLetterPolicy` (docs/guide/retry-and-dead-letters.md#dead-letter-topic). ``retry_letter_topic`` is
    a lab extra for the retry
    topic of ``subscribe(..., lab_retry_enable=True)`` (Java's ``retryLetterTopic``; the Python client has no retry).
    Blank names mean the defaults ``<topic>-<subscription>-DLQ`` / ``-RETRY``; the getters return ``""`` for
    them, as the C++ policy does. ``max_redeliver_count`` below 1 fails with the Python client's text.
    """

    __slots__ = ("_max", "_dlq", "_initial", "_retry")

    def __init__(
        self,
        max_redeliver_count: int,
        dead_letter_topic: str | None = None,
        initial_subscription_name: str | None = None,
        retry_letter_topic: str | None = None,
    ) -> None:
        if max_redeliver_count is not None and (
            isinstance(max_redeliver_count, bool) or not isinstance(max_redeliver_count, int)
        ):
            raise TypeError(f"max_redeliver_count must be an int, not {type(max_redeliver_count).__name__}")
        if max_redeliver_count is None or max_redeliver_count < 1:
            raise ValueError("max_redeliver_count must be greater than 0")
        for name, value in (
            ("dead_letter_topic", dead_letter_topic),
            ("initial_subscription_name", initial_subscription_name),
            ("retry_letter_topic", retry_letter_topic),
        ):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str, not {type(value).__name__}")
        self._max = max_redeliver_count
        self._dlq = dead_letter_topic or ""
        self._initial = initial_subscription_name or ""
        self._retry = retry_letter_topic or ""

    @property
    def max_redeliver_count(self) -> int:
        return self._max

    @property
    def dead_letter_topic(self) -> str:
        return self._dlq

    @property
    def initial_subscription_name(self) -> str:
        return self._initial

    @property
    def retry_letter_topic(self) -> str:
        return self._retry

    def __repr__(self) -> str:
        return (
            f"ConsumerDeadLetterPolicy(max_redeliver_count={self._max}, dead_letter_topic={self._dlq!r}, "
            f"initial_subscription_name={self._initial!r}, retry_letter_topic={self._retry!r})"
        )
