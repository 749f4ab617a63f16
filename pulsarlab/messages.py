"""What an entry in a topic holds: entry metadata, per-message metadata in batches, and payloads.

Models the protobuf messages `MessageMetadata` and `SingleMessageMetadata` of Pulsar's wire protocol
(PulsarApi.proto; docs/guide/sticky-key-hashing.md#sticky-key, docs/guide/producer-batching.md#key-based-batching,
docs/guide/chunked-messages.md#chunk-count, docs/guide/delayed-delivery.md#hold-back) as the broker stores them in a
ledger entry. Only the
fields the lab models are present; proto2 defaults are the dataclass defaults. An entry is either one
message (``num_messages_in_batch`` is None) or a batch of ``SingleMessageMetadata`` + payload pairs,
routed as a whole by the entry metadata's keys (which are the first message's). A ledger keeps every
entry for the lab's lifetime, so `EntryData` stores a batch's per-message metadata as plain tuples (see its
docstring) rather than one object per message.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable

from pulsarlab.hashing import sticky_key
from pulsarlab.profiles import Profile


@dataclass(slots=True)
class MessageMetadata:
    """Entry-level metadata (`MessageMetadata`): one per ledger entry, batch or not."""

    producer_name: str
    sequence_id: int
    publish_time: int
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    partition_key_b64_encoded: bool = False
    ordering_key: bytes | None = None
    event_time: int = 0
    num_messages_in_batch: int | None = None  # set (>= 1) only for batch entries
    highest_sequence_id: int | None = None
    deliver_at_time: int | None = None
    uncompressed_size: int = 0
    # chunking (docs/guide/chunked-messages.md#chunk-count)
    uuid: str | None = None
    chunk_id: int | None = None
    num_chunks_from_msg: int | None = None
    total_chunk_msg_size: int | None = None

    @property
    def is_batch(self) -> bool:
        return self.num_messages_in_batch is not None

    @property
    def message_count(self) -> int:
        """Messages in the entry (a batch's count, else 1): what dispatch charges in permits."""
        return self.num_messages_in_batch if self.num_messages_in_batch is not None else 1

    @property
    def is_chunk(self) -> bool:
        return self.uuid is not None and self.num_chunks_from_msg is not None and self.num_chunks_from_msg > 1

    def as_row(self) -> tuple:
        """The stored form (see `EntryData.stored`): the fields in order, empty ``properties`` as None."""
        row = _metadata_values(self)
        if not self.properties:  # an empty dict would keep the row in the collector's view
            row = row[:_PROPERTIES] + (None,) + row[_PROPERTIES + 1 :]
        return row

    @classmethod
    def from_row(cls, row: tuple) -> "MessageMetadata":
        """The inverse of `as_row` (equal to the metadata the row was made from)."""
        meta = cls(*row)
        if meta.properties is None:
            meta.properties = {}
        return meta

    def sticky_key(self, profile: Profile) -> bytes:
        """The bytes a Key_Shared dispatcher hashes for this entry (docs/guide/sticky-key-hashing.md#sticky-key)."""
        return sticky_key(
            profile,
            ordering_key=self.ordering_key,
            partition_key=self.partition_key,
            partition_key_b64_encoded=self.partition_key_b64_encoded,
            producer_name=self.producer_name,
            sequence_id=self.sequence_id,
        )


_METADATA_FIELDS = tuple(f.name for f in fields(MessageMetadata))


def _fields_getter(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    """``operator.attrgetter(*names)`` for several slot names (a tuple always), as a function reading each ``obj.name``:
    the interpreter's specialised slot reads cost less than attrgetter's generic lookup per name (dataclasses
    generates its methods the same way)."""
    if not all(name.isidentifier() for name in names):
        raise ValueError(f"not attribute names: {names!r}")
    return eval("lambda obj: (" + ", ".join(f"obj.{name}" for name in names) + ",)")  # noqa: S307


_metadata_values = _fields_getter(_METADATA_FIELDS)
_PROPERTIES = _METADATA_FIELDS.index("properties")
# EntryData.stored: every field but properties, in order (a tuple: the dataclass has more than two of them)
_metadata_but_properties = _fields_getter(tuple(f for f in _METADATA_FIELDS if f != "properties"))
_N_BUT_PROPERTIES = len(_METADATA_FIELDS) - 1


@dataclass(slots=True)
class SingleMessageMetadata:
    """Per-message metadata inside a batch entry (`SingleMessageMetadata`)."""

    payload_size: int
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    partition_key_b64_encoded: bool = False
    ordering_key: bytes | None = None
    event_time: int = 0
    sequence_id: int | None = None
    null_value: bool = False

    def as_row(self) -> tuple:
        """The stored form (see `EntryData`): the fields in order, empty ``properties`` as None."""
        return (
            self.payload_size,
            self.properties or None,
            self.partition_key,
            self.partition_key_b64_encoded,
            self.ordering_key,
            self.event_time,
            self.sequence_id,
            self.null_value,
        )

    @classmethod
    def from_row(cls, row: tuple) -> "SingleMessageMetadata":
        """The inverse of `as_row` (equal to the metadata the row was made from)."""
        props = row[1]
        return cls(row[0], props if props is not None else {}, row[2], row[3], row[4], row[5], row[6], row[7])


# indexes of the fields in a stored row (SingleMessageMetadata.as_row)
ROW_PROPERTIES = 1
ROW_PARTITION_KEY = 2
ROW_ORDERING_KEY = 4
ROW_EVENT_TIME = 5
_NON_BATCH_ROWS = (None,)
_new_entry = object.__new__


class EntryData:
    """The content of one ledger entry: its metadata and its message payloads.

    ``EntryData(metadata, messages)``: a non-batch entry has one ``(None, payload)`` pair; a batch has one
    ``(SingleMessageMetadata, payload)`` pair per message, in batch-index order. ``messages`` gives that list
    back (a new list of new, equal objects on each call).

    Stored compactly, because a ledger keeps every entry for the lab's lifetime: ``payloads`` (a tuple of
    bytes), ``rows`` (per message None or the `SingleMessageMetadata.as_row` tuple, whose values are ints,
    strings, bytes, None or a non-empty properties dict) and ``size`` (payload bytes, computed once). Tuples of
    such values are ones CPython's cyclic garbage collector stops tracking once a collection has seen them
    (the rows at the first, the tuple holding them at the next), so stored batches do not make every later full
    collection longer by two objects per message, as a `SingleMessageMetadata` and a pair per message did. Equality and repr are
    the dataclass's over ``(metadata, messages)``.
    """

    __slots__ = ("metadata", "payloads", "rows", "size")
    __hash__ = None  # type: ignore[assignment]  (mutable metadata, as the dataclass was)

    def __init__(self, metadata: MessageMetadata, messages: list[tuple[SingleMessageMetadata | None, bytes]]) -> None:
        if metadata.is_batch:
            if len(messages) != metadata.num_messages_in_batch:
                raise ValueError(
                    f"batch entry declares {metadata.num_messages_in_batch} messages but holds {len(messages)}"
                )
        elif len(messages) != 1 or messages[0][0] is not None:
            raise ValueError("a non-batch entry holds exactly one (None, payload) message")
        self.metadata = metadata
        self.payloads = payloads = tuple(p for _, p in messages)
        self.rows = tuple([None if s is None else s.as_row() for s, _ in messages])
        self.size = sum(len(p) for p in payloads)

    @classmethod
    def of_rows(cls, metadata: MessageMetadata, payloads: tuple[bytes, ...], rows: tuple) -> "EntryData":
        """A batch entry from its stored form, for the model's producers (trusted: one row per payload,
        ``len(payloads) == metadata.num_messages_in_batch``, rows as `SingleMessageMetadata.as_row` makes)."""
        entry = _new_entry(cls)
        entry.metadata = metadata
        entry.payloads = payloads
        entry.rows = rows
        entry.size = sum(map(len, payloads))
        return entry

    @classmethod
    def single(cls, metadata: MessageMetadata, payload: bytes) -> "EntryData":
        """``EntryData(metadata, [(None, payload)])`` for a non-batch ``metadata`` (trusted)."""
        entry = _new_entry(cls)
        entry.metadata = metadata
        entry.payloads = (payload,)
        entry.rows = _NON_BATCH_ROWS
        entry.size = len(payload)
        return entry

    def stored(self) -> tuple:
        """The form a ledger keeps the entry in: one flat tuple, the metadata fields but ``properties`` in field
        order, then ``properties`` (None when empty), ``payloads``, ``rows``, ``size``. Plain values in an exact
        tuple, which the cyclic garbage collector stops tracking (an `EntryData` and its `MessageMetadata` stay
        tracked, two objects per stored entry for every full collection to walk). See `from_stored`."""
        meta = self.metadata
        return _metadata_but_properties(meta) + (meta.properties or None, self.payloads, self.rows, self.size)

    @classmethod
    def from_stored(cls, stored: tuple) -> "EntryData":
        """The entry `stored` was made from (an equal, new object; trusted input). An entry whose `stored` is
        itself (an immutable subclass that keeps its bytes, such as serve's `WireEntry`) comes back as is."""
        if type(stored) is not tuple:
            return stored
        entry = _new_entry(cls)
        properties, entry.payloads, entry.rows, entry.size = stored[_N_BUT_PROPERTIES:]
        entry.metadata = MessageMetadata(
            *stored[:_PROPERTIES], properties if properties is not None else {}, *stored[_PROPERTIES:_N_BUT_PROPERTIES]
        )
        return entry

    @property
    def messages(self) -> list[tuple[SingleMessageMetadata | None, bytes]]:
        """``(SingleMessageMetadata | None, payload)`` per message, in batch-index order."""
        from_row = SingleMessageMetadata.from_row
        return [(None if r is None else from_row(r), p) for r, p in zip(self.rows, self.payloads)]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.metadata, self.payloads, self.rows) == (other.metadata, other.payloads, other.rows)

    def __repr__(self) -> str:
        return f"EntryData(metadata={self.metadata!r}, messages={self.messages!r})"


# --- entries as plain-value records, for storage outside the process's objects (bookie storage) ---------------------
MODEL_RECORD = 0  # the kind of record of an entry in `EntryData.stored` tuple form
# record kind -> the function making an entry's stored form from its record, for entry classes that keep
# themselves as their stored form (`EntryData.from_stored`); each registers its kind here and has a ``record()``
RECORD_READERS: dict[int, Callable[[tuple], Any]] = {}


def entry_record(stored: Any) -> tuple:
    """A stored entry (`EntryData.stored`) as a tuple of plain values (ints, strings, bytes, None, dicts and
    tuples of them: what ``marshal`` writes): ``(kind, ...)``, read back by `entry_from_record`."""
    if type(stored) is tuple:
        return (MODEL_RECORD, stored)
    return stored.record()


def entry_from_record(record: tuple) -> Any:
    """The stored form (`EntryData.stored`) `entry_record` made ``record`` from (an equal entry)."""
    kind = record[0]
    if kind == MODEL_RECORD:
        return record[1]
    reader = RECORD_READERS.get(kind)
    if reader is None:
        raise ValueError(f"no reader for entry records of kind {kind!r}")
    return reader(record)
