"""What an acknowledgement carries on the wire: `CommandAck.AckType`, the ack command, and batch ack sets.

Models `CommandAck` (`PulsarApi.proto`): its ack type, the acked ids with their ack sets (Java's
``BitSet.toLongArray()`` words, set bit = not yet acked) and its properties. The client's ack grouping tracker
builds `AckCommand`s, the broker's subscription applies them, the front end decodes them from ACK frames.
Simplifies: no transaction ids, validation errors or request ids (the front end answers receipts itself).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable

_WORD = (1 << 64) - 1
_SIGN = 1 << 63


class AckType(enum.Enum):
    """`CommandAck.AckType`; the value is the wire number, ``label`` the name events print (also accepted:
    ``AckType("Cumulative")``)."""

    INDIVIDUAL = 0
    CUMULATIVE = 1

    def __int__(self) -> int:
        return self.value

    @property
    def label(self) -> str:
        return "Individual" if self is AckType.INDIVIDUAL else "Cumulative"

    @classmethod
    def _missing_(cls, value: object) -> AckType | None:
        # AckType("Cumulative"): the label
        return next((t for t in cls if t.label == value), None)


@dataclass(frozen=True)
class AckCommand:
    """What one `CommandAck` carries to the broker.

    ``message_ids`` holds ``(ledger, entry, ack_set)`` where ``ack_set`` is the Java
    ``BitSet.toLongArray()`` words (set bit = not yet acked) or None for a whole entry.
    """

    ack_type: AckType
    message_ids: tuple[tuple[int, int, tuple[int, ...] | None], ...]
    properties: dict[str, int] = field(default_factory=dict)


def ack_set_words(bits: int | Iterable[int], size: int | None = None) -> tuple[int, ...]:
    """Java ``BitSet.toLongArray()`` of a bit set: little-endian signed 64-bit words, no trailing zeros.

    ``bits`` is an int mask (bit i set = index i set) or the set indexes; ``size`` (the batch size),
    if given, bounds them. Batch 10 with index 3 acked -> ``(1015,)``; cumulative up to 3 -> ``(1008,)``.
    """
    if isinstance(bits, int) and not isinstance(bits, bool):
        mask = bits
        if mask < 0:
            raise ValueError(f"a bit set mask is non-negative, got {mask}")
        if size is not None and mask >> size:
            raise ValueError(f"mask {mask:#x} has bits at or above the batch size {size}")
    elif isinstance(bits, bool):
        raise TypeError(f"a bit set is an int mask or the set indexes, not {bits!r}")
    else:
        mask = 0
        for i in bits:
            if not isinstance(i, int) or isinstance(i, bool) or i < 0 or (size is not None and i >= size):
                bound = f"[0, {size})" if size is not None else ">= 0"
                raise ValueError(f"bit index {i!r} is not an int in {bound}")
            mask |= 1 << i
    words = []
    while mask:
        w = mask & _WORD
        words.append(w - (1 << 64) if w & _SIGN else w)
        mask >>= 64
    return tuple(words)


def ack_set_mask(words: Iterable[int]) -> int:
    """The int mask of ``BitSet.valueOf(long[])``: the inverse of ``ack_set_words``."""
    mask = 0
    for i, w in enumerate(words):
        mask |= (w & _WORD) << (64 * i)
    return mask


__all__ = ["AckCommand", "AckType", "ack_set_mask", "ack_set_words"]
