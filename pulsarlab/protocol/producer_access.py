"""`ProducerAccessMode`: how a producer shares its topic (CommandProducer's ``producer_access_mode``)."""

from __future__ import annotations

import enum


class ProducerAccessMode(enum.IntEnum):
    """`ProducerAccessMode` with the wire's numbers (the real client's ``pulsar.ProducerAccessMode``)."""

    Shared = 0
    Exclusive = 1
    WaitForExclusive = 2
    ExclusiveWithFencing = 3


__all__ = ["ProducerAccessMode"]
