"""Consumer options named as the Python ``pulsar-client`` package names them.

Models the enums ``pulsar.ConsumerType``, ``pulsar.InitialPosition``, ``pulsar.KeySharedMode`` and the class
``pulsar.ConsumerKeySharedPolicy`` (wrapping Java's `KeySharedPolicy`, reference §2.0), with the wire names
the broker sees (`CommandSubscribe.SubType`, `KeySharedMode`) as ``.wire``.
"""

from __future__ import annotations

import enum
from typing import Iterable

from ..keyshared.sticky_ranges import validate_sticky_policy_ranges


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
