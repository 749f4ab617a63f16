"""The lab's message id: ledger, entry, partition and batch index, ordered and printed like Pulsar's.

Models the client's `MessageIdImpl` / `BatchMessageIdImpl` behind the `MessageIdAdv` interface
(docs/guide/acknowledgements.md#command-ack, docs/guide/redelivery.md#ack-timeout): ordering is
`MessageIdAdv.compareTo`, i.e. (ledgerId, entryId, partitionIndex,
batchIndex); `str()` is Java's `toString()`, "L:E:P" and "L:E:P:B" for a message inside a batch.
The Python client's ``pulsar.MessageId`` methods work too, so a pulsar-client script runs unchanged:
``ledger_id()``, ``entry_id()``, ``partition()`` and ``batch_index()`` (the two indexes are `IndexInt`s: ints
the model reads as attributes that also answer a call), ``serialize()`` / ``MessageId.deserialize`` (the
``MessageIdData`` protobuf bytes the C++ client writes), ``MessageId.earliest`` / ``MessageId.latest``.
Simplifies: no batch size or ack set, no chunk ids, no topic name (`TopicMessageIdImpl`).
"""

from __future__ import annotations

from dataclasses import dataclass

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_U64 = (1 << 64) - 1


class IndexInt(int):
    """A partition or batch index: an int for the model (``mid.partition``), and, called, pulsar-client's
    ``MessageId.partition()`` / ``batch_index()``."""

    __slots__ = ()

    def __call__(self) -> int:
        return int(self)


_N_INDEXES = 4096
_INDEXES = tuple(IndexInt(i) for i in range(-1, _N_INDEXES - 1))


def index_int(value: int) -> IndexInt:
    """``value`` as an `IndexInt` (small ones shared)."""
    return _INDEXES[value + 1] if -1 <= value < _N_INDEXES - 1 else IndexInt(value)


def _varint(value: int) -> bytes:
    value &= _U64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


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
            and type(partition) in (int, IndexInt)
            and type(batch_index) in (int, IndexInt)
            and _LONG_MIN <= ledger <= _LONG_MAX
            and _LONG_MIN <= entry <= _LONG_MAX
            and _INT_MIN <= partition <= _INT_MAX
            and _INT_MIN <= batch_index <= _INT_MAX
        ):
            if -1 <= partition < _N_INDEXES - 1 and -1 <= batch_index < _N_INDEXES - 1:
                _set_partition(self, _INDEXES[partition + 1])
                _set_batch_index(self, _INDEXES[batch_index + 1])
            else:
                _set_partition(self, index_int(partition))
                _set_batch_index(self, index_int(batch_index))
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
        _set_partition(self, index_int(int(partition)))  # an int subclass (IntEnum, ...) passes the checks
        _set_batch_index(self, index_int(int(batch_index)))

    # --- pulsar-client's MessageId methods ------------------------------------------------------
    def ledger_id(self) -> int:
        return self.ledger

    def entry_id(self) -> int:
        return self.entry

    def serialize(self) -> bytes:
        """``MessageId.serialize()``: the ``MessageIdData`` protobuf the C++ client writes (ledger and entry as
        uint64, partition and batch index only when >= 0)."""
        out = b"\x08" + _varint(self.ledger) + b"\x10" + _varint(self.entry)
        if self.partition >= 0:
            out += b"\x18" + _varint(self.partition)
        if self.batch_index >= 0:
            out += b" " + _varint(self.batch_index)
        return out

    @staticmethod
    def deserialize(data: bytes) -> "MessageId":
        """``MessageId.deserialize(bytes)``: the inverse of `serialize` (other ``MessageIdData`` fields are
        skipped); ValueError for bytes that are not one."""
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"MessageId.deserialize takes bytes, not {type(data).__name__}")
        fields = {1: None, 2: None, 3: -1, 4: -1}
        pos, end = 0, len(data)
        while pos < end:
            key, pos = _read_varint(data, pos)
            number, wire = key >> 3, key & 7
            if wire == 0:
                value, pos = _read_varint(data, pos)
                if number in fields:
                    fields[number] = value
            elif wire == 2:
                size, pos = _read_varint(data, pos)
                pos += size
            elif wire in (1, 5):
                pos += 8 if wire == 1 else 4
            else:
                raise ValueError(f"not a serialized MessageId: wire type {wire}")
        if pos != end or fields[1] is None or fields[2] is None:
            raise ValueError("not a serialized MessageId: ledger and entry ids are required")
        return MessageId(*(_signed(fields[n]) for n in (1, 2, 3, 4)))  # type: ignore[arg-type]

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
    def of(cls, value: object) -> "MessageId":
        """A MessageId from itself or from ``(ledger, entry[, partition[, batch_index]])``."""
        if isinstance(value, MessageId):
            return value
        if isinstance(value, (tuple, list)) and 2 <= len(value) <= 4:
            return cls(*value)
        if callable(getattr(value, "ledger_id", None)) and callable(getattr(value, "batch_index", None)):
            # pulsar-client's own MessageId (e.g. pulsar.MessageId.earliest)
            part = getattr(value, "partition")
            return cls(
                getattr(value, "ledger_id")(), getattr(value, "entry_id")(), part(), getattr(value, "batch_index")()
            )
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
    _set_partition(mid, _INDEXES[partition + 1] if -1 <= partition < _N_INDEXES - 1 else IndexInt(partition))
    _set_batch_index(mid, _INDEXES[batch_index + 1] if -1 <= batch_index < _N_INDEXES - 1 else IndexInt(batch_index))
    return mid


def client_message_id(mid: MessageId) -> MessageId:
    """``mid`` with pulsar-client's callable ``partition()`` / ``batch_index()`` (a hot path may have built it
    from plain ints): the same id, equal and hashing the same."""
    if type(mid.partition) is IndexInt and type(mid.batch_index) is IndexInt:
        return mid
    if type(mid) is not MessageId:
        object.__setattr__(mid, "partition", index_int(mid.partition))
        object.__setattr__(mid, "batch_index", index_int(mid.batch_index))
        return mid
    return trusted_message_id(mid.ledger, mid.entry, mid.partition, mid.batch_index)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("not a serialized MessageId: truncated varint")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value & _U64, pos
        shift += 7


def _signed(value: int) -> int:
    """A protobuf int64/int32 varint read as uint64, back to its signed value (negatives are 64-bit)."""
    return value - (1 << 64) if value >= 1 << 63 else value


# MessageId.earliest and MessageId.latest of the Java client (MessageIdImpl constants).
EARLIEST = MessageId(-1, -1, -1)
LATEST = MessageId(_LONG_MAX, _LONG_MAX, -1)
MessageId.earliest = EARLIEST  # type: ignore[attr-defined]
MessageId.latest = LATEST  # type: ignore[attr-defined]
