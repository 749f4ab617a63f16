"""The lab's message id: ledger, entry, partition and batch index, ordered and printed like Pulsar's.

Models the client's `MessageIdImpl` / `BatchMessageIdImpl` behind the `MessageIdAdv` interface
(reference §7-§8): ordering is `MessageIdAdv.compareTo`, i.e. (ledgerId, entryId, partitionIndex,
batchIndex); `str()` is Java's `toString()`, "L:E:P" and "L:E:P:B" for a message inside a batch.
Simplifies: no batch size or ack set, no chunk ids, no topic name (`TopicMessageIdImpl`).
"""

from __future__ import annotations

from dataclasses import dataclass

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True, order=True, slots=True)
class MessageId:
    """A message id; frozen, hashable and ordered as Java's ``MessageIdAdv.compareTo``.

    ``partition`` is -1 on a non-partitioned topic; ``batch_index`` is -1 for a message that is not
    in a batch (or for the whole batch entry).
    """

    ledger: int
    entry: int
    partition: int = -1
    batch_index: int = -1

    def __post_init__(self) -> None:
        ledger, entry, partition, batch_index = self.ledger, self.entry, self.partition, self.batch_index
        if (
            type(ledger) is int
            and type(entry) is int
            and type(partition) is int
            and type(batch_index) is int
            and _LONG_MIN <= ledger <= _LONG_MAX
            and _LONG_MIN <= entry <= _LONG_MAX
            and _INT_MIN <= partition <= _INT_MAX
            and _INT_MIN <= batch_index <= _INT_MAX
        ):
            return  # the common case; the loop below finds what is wrong and says so
        for name, lo, hi in (
            ("ledger", _LONG_MIN, _LONG_MAX),
            ("entry", _LONG_MIN, _LONG_MAX),
            ("partition", _INT_MIN, _INT_MAX),
            ("batch_index", _INT_MIN, _INT_MAX),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"MessageId.{name} must be an int, got {type(value).__name__} {value!r}")
            if not lo <= value <= hi:
                raise ValueError(f"MessageId.{name} {value} is outside the Java range [{lo}, {hi}]")

    def __str__(self) -> str:
        base = f"{self.ledger}:{self.entry}:{self.partition}"
        return f"{base}:{self.batch_index}" if self.is_batch else base

    @property
    def is_batch(self) -> bool:
        """True for the id of one message inside a batch (``BatchMessageIdImpl``)."""
        return self.batch_index >= 0

    def discard_batch(self) -> "MessageId":
        """The entry-level id (``MessageIdAdvUtils.discardBatch``): same ledger, entry and partition."""
        return self if self.batch_index == -1 else MessageId(self.ledger, self.entry, self.partition)

    def as_list(self) -> list[int]:
        """``[ledger, entry, partition]`` as the golden vectors write ids (batch index dropped)."""
        return [self.ledger, self.entry, self.partition]

    @classmethod
    def of(cls, value: "MessageId | tuple[int, ...] | list[int]") -> "MessageId":
        """A MessageId from itself or from ``(ledger, entry[, partition[, batch_index]])``."""
        if isinstance(value, MessageId):
            return value
        if isinstance(value, (tuple, list)) and 2 <= len(value) <= 4:
            return cls(*value)
        raise TypeError(f"a message id is a MessageId or (ledger, entry[, partition[, batch_index]]), got {value!r}")

    @classmethod
    def parse(cls, text: str) -> "MessageId":
        """The inverse of ``str()``: "L:E:P" or "L:E:P:B"."""
        parts = text.split(":")
        if len(parts) not in (3, 4):
            raise ValueError(f"a message id reads 'ledger:entry:partition[:batchIndex]', got {text!r}")
        try:
            numbers = [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"a message id reads 'ledger:entry:partition[:batchIndex]', got {text!r}") from None
        return cls(*numbers)


_new = object.__new__
_set_ledger = MessageId.ledger.__set__  # type: ignore[attr-defined]
_set_entry = MessageId.entry.__set__  # type: ignore[attr-defined]
_set_partition = MessageId.partition.__set__  # type: ignore[attr-defined]
_set_batch_index = MessageId.batch_index.__set__  # type: ignore[attr-defined]


def trusted_message_id(ledger: int, entry: int, partition: int, batch_index: int) -> MessageId:
    """A MessageId of ints the model itself produced (ledger positions, partition and batch indexes).

    For the model's hot paths (one id per delivered message): skips the validation the public constructor
    does at the API edge; the result is equal, hashes and orders the same as ``MessageId(...)``.
    """
    mid = _new(MessageId)
    _set_ledger(mid, ledger)
    _set_entry(mid, entry)
    _set_partition(mid, partition)
    _set_batch_index(mid, batch_index)
    return mid


# MessageId.earliest and MessageId.latest of the Java client (MessageIdImpl constants).
EARLIEST = MessageId(-1, -1, -1)
LATEST = MessageId(_LONG_MAX, _LONG_MAX, -1)
