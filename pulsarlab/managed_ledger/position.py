"""A position in a managed ledger: which ledger, which entry.

Models `org.apache.bookkeeper.mledger.Position` / `PositionImpl` (docs/guide/cursor.md#mark-delete, `TopicStatsImpl` /
`PersistentTopicInternalStats`): ordered by
(ledgerId, entryId), printed as ``"L:E"`` as stats-internal prints it. Entry id -1 is the position just
before a ledger's first entry (a fresh cursor's mark-delete position on an empty topic is ``"L:-1"``).
Simplifies: no ack-set attachment (the cursor API passes ack sets beside positions).
"""

from __future__ import annotations

from dataclasses import dataclass

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, order=True, slots=True)
class Position:
    """A ledger entry address; frozen, hashable, ordered like ``PositionImpl.compareTo``."""

    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"

    def next(self) -> "Position":
        """`getNext()`: ``(L, E+1)``, or ``(L, 0)`` from a negative entry id. It never changes ledger."""
        return Position(self.ledger_id, self.entry_id + 1 if self.entry_id >= 0 else 0)

    @classmethod
    def parse(cls, text: str) -> "Position":
        """The inverse of ``str()``: ``Position.parse("3:4")``."""
        parts = text.split(":") if isinstance(text, str) else []
        if len(parts) != 2:
            raise ValueError(f"a position reads 'ledgerId:entryId', got {text!r}")
        try:
            ledger_id, entry_id = int(parts[0]), int(parts[1])
        except ValueError:
            raise ValueError(f"a position reads 'ledgerId:entryId', got {text!r}") from None
        if not (_LONG_MIN <= ledger_id <= _LONG_MAX and _LONG_MIN <= entry_id <= _LONG_MAX):
            raise ValueError(f"position {text!r} does not fit two Java longs")
        return cls(ledger_id, entry_id)


_new = object.__new__
_set_ledger_id = Position.__dict__["ledger_id"].__set__  # the slots' descriptors
_set_entry_id = Position.__dict__["entry_id"].__set__


def make_position(ledger_id: int, entry_id: int) -> Position:
    """``Position(ledger_id, entry_id)`` without the frozen dataclass's ``__init__`` (about twice as fast):
    for the model's per-entry paths. The result is equal, hashes and orders the same."""
    pos = _new(Position)
    _set_ledger_id(pos, ledger_id)
    _set_entry_id(pos, entry_id)
    return pos


# PositionFactory.EARLIEST and PositionFactory.LATEST
EARLIEST = Position(-1, -1)
LATEST = Position(_LONG_MAX, _LONG_MAX)
