"""Consumer options named as the Python ``pulsar-client`` package names them.

Models the enums ``pulsar.ConsumerType``, ``pulsar.InitialPosition``, ``pulsar.KeySharedMode`` and the classes
``pulsar.ConsumerKeySharedPolicy`` (wrapping Java's `KeySharedPolicy`, reference §2.0) and
``pulsar.ConsumerDeadLetterPolicy`` (Java's `DeadLetterPolicy`, reference §8.4), with the wire names the broker
sees (`CommandSubscribe.SubType`, `KeySharedMode`) as ``.wire``.
"""

from __future__ import annotations

import enum
from typing import Iterable

from pulsarlab.broker.key_shared.sticky_ranges import validate_sticky_policy_ranges


class ConsumerType(enum.Enum):
    """``pulsar.ConsumerType``; ``.wire`` is the broker's SubType name, as stats print it."""

    Exclusive = "Exclusive"
    Shared = "Shared"
    Failover = "Failover"
    KeyShared = "Key_Shared"

    @property
    def wire(self) -> str:
        return self.value

    @property
    def individual_ack_mode(self) -> bool:
        """`Subscription.isIndividualAckMode`: Shared and Key_Shared track pending acks per consumer."""
        return self is ConsumerType.Shared or self is ConsumerType.KeyShared


class InitialPosition(enum.Enum):
    """``pulsar.InitialPosition``: where a new subscription's cursor starts."""

    Latest = "Latest"
    Earliest = "Earliest"


class KeySharedMode(enum.Enum):
    """``pulsar.KeySharedMode``; ``.wire`` is the protocol name (AUTO_SPLIT / STICKY)."""

    AutoSplit = "AUTO_SPLIT"
    Sticky = "STICKY"

    @property
    def wire(self) -> str:
        return self.value


class ConsumerKeySharedPolicy:
    """``pulsar.ConsumerKeySharedPolicy(key_shared_mode, allow_out_of_order_delivery, sticky_ranges)``.

    Sticky ranges are validated like Java's ``KeySharedPolicySticky.validate()`` (Pulsar's texts).
    """

    __slots__ = ("_mode", "_allow_out_of_order", "_ranges")

    def __init__(
        self,
        key_shared_mode: KeySharedMode = KeySharedMode.AutoSplit,
        allow_out_of_order_delivery: bool = False,
        sticky_ranges: Iterable[tuple[int, int]] | None = None,
    ) -> None:
        if not isinstance(key_shared_mode, KeySharedMode):
            raise TypeError(f"key_shared_mode must be a KeySharedMode, not {key_shared_mode!r}")
        if key_shared_mode is KeySharedMode.Sticky and sticky_ranges is None:
            raise ValueError("When using key_shared_mode = KeySharedMode.Sticky you must also provide sticky_ranges")
        self._mode = key_shared_mode
        self._allow_out_of_order = bool(allow_out_of_order_delivery)
        self._ranges: tuple[tuple[int, int], ...] | None = None
        if sticky_ranges is not None:
            self._ranges = tuple((r.start, r.end) for r in validate_sticky_policy_ranges(list(sticky_ranges)))

    @property
    def key_shared_mode(self) -> KeySharedMode:
        return self._mode

    @property
    def allow_out_of_order_delivery(self) -> bool:
        return self._allow_out_of_order

    @property
    def sticky_ranges(self) -> list[tuple[int, int]]:
        return list(self._ranges or ())

    def __repr__(self) -> str:
        return (
            f"ConsumerKeySharedPolicy(key_shared_mode={self._mode}, "
            f"allow_out_of_order_delivery={self._allow_out_of_order}, sticky_ranges={self.sticky_ranges})"
        )


class ConsumerDeadLetterPolicy:
    """``pulsar.ConsumerDeadLetterPolicy(max_redeliver_count, dead_letter_topic=None, initial_subscription_name=None)``.

    Wraps Java's `DeadLetterPolicy` (reference §8.4). ``retry_letter_topic`` is a lab extra for the retry
    topic of ``subscribe(..., retry_enable=True)`` (Java's ``retryLetterTopic``; the Python client has no retry).
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
        if max_redeliver_count is not None and (isinstance(max_redeliver_count, bool)
                                                or not isinstance(max_redeliver_count, int)):
            raise TypeError(f"max_redeliver_count must be an int, not {type(max_redeliver_count).__name__}")
        if max_redeliver_count is None or max_redeliver_count < 1:
            raise ValueError("max_redeliver_count must be greater than 0")
        for name, value in (("dead_letter_topic", dead_letter_topic),
                            ("initial_subscription_name", initial_subscription_name),
                            ("retry_letter_topic", retry_letter_topic)):
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
        return (f"ConsumerDeadLetterPolicy(max_redeliver_count={self._max}, dead_letter_topic={self._dlq!r}, "
                f"initial_subscription_name={self._initial!r}, retry_letter_topic={self._retry!r})")
