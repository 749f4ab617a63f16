"""Entries as bytes: a producer's SEND payload stored as a ledger entry, and a model entry written out as MESSAGE.

Models what Pulsar's broker does with ``headersAndPayload``: it stores the producer's metadata and payload
bytes as the entry (`Producer.publishMessage` -> `ManagedLedger.addEntry`) and hands the same bytes to every
consumer in a MESSAGE command (`Commands.newMessage`), reading only what dispatch needs from the metadata
(`Commands.parseMessageMetadata`: keys, batch size, delivery time, chunk fields).

A `WireEntry` is an `EntryData` that keeps those bytes (and their CRC32C, reused on every delivery) and decodes
its batch - per-message payloads and `SingleMessageMetadata` rows - only when something in the model asks for
them (an in-process consumer, a view), so a batch from a real producer to a real consumer is never split into
per-message objects. Entries from the model's own producers are encoded on their first delivery to a real
consumer (`encode_entry`).

Times: the model's metadata is on the lab's clock (``publish_time`` and ``deliver_at_time`` minus the server's
clock offset, see `serve.realtime`); the stored bytes keep the producer's wall-clock values, which is what real
consumers see. Simplifies: compressed or encrypted batches are stored and forwarded but cannot be split for
in-process consumers (no decompression).
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from typing import Any

import google_crc32c

from pulsarlab.messages import RECORD_READERS, EntryData, MessageMetadata
from pulsarlab.protocol.acks import ack_set_words
from pulsarlab.serve.codec import (
    CodecError,
    as_signed32,
    as_signed64,
    decode_varint,
    encode_varint,
    skip_field,
)
from pulsarlab.serve.commands import KeyValue, WireMetadata, WireSingleMetadata

_U32 = struct.Struct(">I")
_unpack_u32 = _U32.unpack_from
_pack_u32 = _U32.pack
_pack_frame_header = struct.Struct(">II").pack
_new = object.__new__


class NotSplittable(CodecError):
    """A stored batch whose messages cannot be read (compressed, encrypted, or malformed)."""


def _read_str(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    n, pos = decode_varint(buf, pos, end)
    stop = pos + n
    if stop > end:
        raise CodecError("string runs past the end of the metadata")
    try:
        return buf[pos:stop].decode("utf-8"), stop
    except UnicodeDecodeError as e:
        raise CodecError(f"metadata string is not UTF-8: {e}") from None


def _read_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes, int]:
    n, pos = decode_varint(buf, pos, end)
    stop = pos + n
    if stop > end:
        raise CodecError("bytes run past the end of the metadata")
    return buf[pos:stop], stop


def _read_key_value(buf: bytes, pos: int, end: int) -> tuple[str, str, int]:
    n, pos = decode_varint(buf, pos, end)
    stop = pos + n
    if stop > end:
        raise CodecError("key/value runs past the end of the metadata")
    key = value = None
    p = pos
    while p < stop:
        t, p = decode_varint(buf, p, stop)
        if t == 0x0A:
            key, p = _read_str(buf, p, stop)
        elif t == 0x12:
            value, p = _read_str(buf, p, stop)
        else:
            p = skip_field(buf, p, stop, t)
    if key is None or value is None:
        raise CodecError("KeyValue is missing its key or value")
    return key, value, stop


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _on_lab_clock(wall_ms: int, clock_offset_ms: int) -> int:
    """A producer's wall-clock time (a Java long) on the lab's clock, kept a long: a time that would pass
    Long.MIN_VALUE (or MAX_VALUE) stays at the end of the range, as far in the past (or future) as it was."""
    return min(max(wall_ms - clock_offset_ms, _LONG_MIN + 1), _LONG_MAX)


def read_metadata(buf: bytes, start: int, end: int, clock_offset_ms: int = 0) -> tuple[MessageMetadata, bool]:
    """The model's `MessageMetadata` of the `MessageMetadata` bytes at ``buf[start:end]``, and whether the
    payload is plain (no compression, no encryption). Times move onto the lab clock by ``clock_offset_ms``."""
    producer_name = None
    sequence_id = publish_time = None
    properties: dict[str, str] = {}
    partition_key = None
    b64 = False
    ordering_key = None
    event_time = 0
    num_in_batch = None
    highest = None
    deliver_at = None
    uncompressed = 0
    uuid = chunk_id = num_chunks = total_chunk = None
    plain = True
    pos = start
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # a one-byte tag (fields 1-15), read inline
            pos += 1
        else:
            key, pos = decode_varint(buf, pos, end)
        if key == 0x0A:  # 1 producer_name
            producer_name, pos = _read_str(buf, pos, end)
        elif key == 0x10:  # 2 sequence_id
            sequence_id, pos = decode_varint(buf, pos, end)
            sequence_id = as_signed64(sequence_id)
        elif key == 0x18:  # 3 publish_time
            publish_time, pos = decode_varint(buf, pos, end)
            publish_time = as_signed64(publish_time)
        elif key == 0x22:  # 4 properties
            k, v, pos = _read_key_value(buf, pos, end)
            properties[k] = v
        elif key == 0x32:  # 6 partition_key
            partition_key, pos = _read_str(buf, pos, end)
        elif key == 0x40:  # 8 compression
            c, pos = decode_varint(buf, pos, end)
            if c:
                plain = False
        elif key == 0x48:  # 9 uncompressed_size
            uncompressed, pos = decode_varint(buf, pos, end)
            uncompressed = as_signed32(uncompressed)
        elif key == 0x58:  # 11 num_messages_in_batch
            n, pos = decode_varint(buf, pos, end)
            num_in_batch = as_signed32(n)
        elif key == 0x60:  # 12 event_time
            event_time, pos = decode_varint(buf, pos, end)
            event_time = as_signed64(event_time)
        elif key == 0x6A:  # 13 encryption_keys
            plain = False
            pos = skip_field(buf, pos, end, key)
        elif key == 0x88:  # 17 partition_key_b64_encoded (the tag value; two bytes on the wire)
            v, pos = decode_varint(buf, pos, end)
            b64 = v != 0
        elif key == 0x92:  # 18 ordering_key
            ordering_key, pos = _read_bytes(buf, pos, end)
        elif key == 0x98:  # 19 deliver_at_time
            v, pos = decode_varint(buf, pos, end)
            deliver_at = as_signed64(v)
        elif key == 0xC0:  # 24 highest_sequence_id
            highest, pos = decode_varint(buf, pos, end)
            highest = as_signed64(highest)
        elif key == 0xD2:  # 26 uuid
            uuid, pos = _read_str(buf, pos, end)
        elif key == 0xD8:  # 27 num_chunks_from_msg
            v, pos = decode_varint(buf, pos, end)
            num_chunks = as_signed32(v)
        elif key == 0xE0:  # 28 total_chunk_msg_size
            v, pos = decode_varint(buf, pos, end)
            total_chunk = as_signed32(v)
        elif key == 0xE8:  # 29 chunk_id
            v, pos = decode_varint(buf, pos, end)
            chunk_id = as_signed32(v)
        else:
            pos = skip_field(buf, pos, end, key)
    if producer_name is None or sequence_id is None or publish_time is None:
        raise CodecError("MessageMetadata is missing a required field (producer_name, sequence_id, publish_time)")
    meta = MessageMetadata(
        producer_name,
        sequence_id,
        _on_lab_clock(publish_time, clock_offset_ms),
        properties,
        partition_key,
        b64,
        ordering_key,
        event_time,
        num_in_batch,
        highest,
        None if deliver_at is None else _on_lab_clock(deliver_at, clock_offset_ms),
        uncompressed,
        uuid,
        chunk_id,
        num_chunks,
        total_chunk,
    )
    return meta, plain


def _read_single(buf: bytes, pos: int, end: int) -> tuple:
    """A `SingleMessageMetadata` as the model's stored row (see `SingleMessageMetadata.as_row`)."""
    payload_size = None
    props: dict[str, str] | None = None
    partition_key = None
    b64 = False
    ordering_key = None
    event_time = 0
    sequence_id = None
    null_value = False
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # a one-byte tag (fields 1-15), read inline
            pos += 1
        else:
            key, pos = decode_varint(buf, pos, end)
        if key == 0x0A:
            k, v, pos = _read_key_value(buf, pos, end)
            if props is None:
                props = {}
            props[k] = v
        elif key == 0x12:
            partition_key, pos = _read_str(buf, pos, end)
        elif key == 0x18:
            v, pos = decode_varint(buf, pos, end)
            payload_size = as_signed32(v)
        elif key == 0x28:
            event_time, pos = decode_varint(buf, pos, end)
        elif key == 0x30:
            v, pos = decode_varint(buf, pos, end)
            b64 = v != 0
        elif key == 0x3A:
            ordering_key, pos = _read_bytes(buf, pos, end)
        elif key == 0x40:
            sequence_id, pos = decode_varint(buf, pos, end)
        elif key == 0x48:
            v, pos = decode_varint(buf, pos, end)
            null_value = v != 0
        else:
            pos = skip_field(buf, pos, end, key)
    if payload_size is None:
        raise CodecError("SingleMessageMetadata without payload_size")
    return (payload_size, props, partition_key, b64, ordering_key, event_time, sequence_id, null_value)


class WireEntry(EntryData):
    """An entry that arrived as bytes: ``wire`` = ``[metadata size][metadata][payload]`` and its CRC32C as 4
    bytes. ``payloads`` and ``rows`` are decoded on first use. ``size`` is the stored bytes, as Pulsar counts
    an entry (``headersAndPayload.readableBytes()`` in the byte counters and the ledger size); the model's own
    entries count their payload bytes only."""

    __slots__ = ("wire", "checksum", "plain", "_payloads", "_rows")

    @classmethod
    def from_wire(
        cls, metadata: MessageMetadata, wire: bytes, checksum: bytes, plain: bool, metadata_end: int
    ) -> "WireEntry":
        """The entry for a SEND: ``metadata`` already decoded from ``wire[4:metadata_end]``."""
        entry = _new(cls)
        entry.metadata = metadata
        entry.wire = wire
        entry.checksum = checksum
        entry.plain = plain
        entry._payloads = None
        entry._rows = None
        entry.size = len(wire)
        return entry

    def stored(self) -> "WireEntry":  # type: ignore[override]
        """A ledger keeps the entry itself: its bytes are what every later read hands out (the metadata fields
        the model does not decode - encryption keys, compression, schema version - travel in them), and a
        compressed batch is never split."""
        return self

    def record(self) -> tuple:
        """The entry as plain values (`pulsarlab.messages.entry_record`): its metadata row and its bytes."""
        return (WIRE_RECORD, self.metadata.as_row(), self.wire, self.checksum, self.plain)

    @classmethod
    def from_record(cls, record: tuple) -> "WireEntry":
        """The inverse of `record` (an equal entry, its batch not split yet)."""
        _, row, wire, checksum, plain = record
        return cls.from_wire(MessageMetadata.from_row(row), wire, checksum, plain, 0)

    def _split(self) -> None:
        wire = self.wire
        meta_end = 4 + _unpack_u32(wire, 0)[0]
        n = self.metadata.num_messages_in_batch
        if n is None:
            self._payloads = (wire[meta_end:],)
            self._rows = (None,)
            return
        if not self.plain:
            raise NotSplittable("a compressed or encrypted batch cannot be split by the lab (no decompression)")
        payloads = []
        rows = []
        pos = meta_end
        end = len(wire)
        try:
            for _ in range(n):
                size = _unpack_u32(wire, pos)[0]
                pos += 4
                header_end = pos + size
                if header_end > end:
                    raise CodecError("batch message header runs past the end of the payload")
                row = _read_single(wire, pos, header_end)
                stop = header_end + row[0]
                if row[0] < 0 or stop > end:
                    raise CodecError("batch message payload runs past the end of the payload")
                payloads.append(wire[header_end:stop])
                rows.append(row)
                pos = stop
        except (CodecError, struct.error) as e:
            raise NotSplittable(f"the batch payload cannot be read: {e}") from None
        self._payloads = tuple(payloads)
        self._rows = tuple(rows)

    @property
    def payloads(self) -> tuple[bytes, ...]:  # type: ignore[override]
        if self._payloads is None:
            self._split()
        return self._payloads  # type: ignore[return-value]

    @property
    def rows(self) -> tuple:  # type: ignore[override]
        if self._rows is None:
            self._split()
        return self._rows  # type: ignore[return-value]


WIRE_RECORD = 1  # the kind of `WireEntry.record` (pulsarlab.messages.RECORD_READERS)
RECORD_READERS[WIRE_RECORD] = WireEntry.from_record


# --- model entries written out ------------------------------------------------------------------
def metadata_bytes(meta: MessageMetadata, clock_offset_ms: int = 0) -> bytes:
    """The `MessageMetadata` bytes of a model entry (times back on the wall clock)."""
    wm = WireMetadata(
        producer_name=meta.producer_name,
        sequence_id=meta.sequence_id,
        publish_time=meta.publish_time + clock_offset_ms,
        properties=[KeyValue(k, v) for k, v in meta.properties.items()],
        partition_key=meta.partition_key,
        uncompressed_size=meta.uncompressed_size or None,
        num_messages_in_batch=meta.num_messages_in_batch,
        event_time=meta.event_time or None,
        partition_key_b64_encoded=True if meta.partition_key_b64_encoded else None,
        ordering_key=meta.ordering_key,
        deliver_at_time=None if meta.deliver_at_time is None else meta.deliver_at_time + clock_offset_ms,
        highest_sequence_id=meta.highest_sequence_id,
        uuid=meta.uuid,
        num_chunks_from_msg=meta.num_chunks_from_msg,
        total_chunk_msg_size=meta.total_chunk_msg_size,
        chunk_id=meta.chunk_id,
    )
    return wm.encode()


def single_metadata_bytes(row: tuple) -> bytes:
    """The `SingleMessageMetadata` bytes of a stored row."""
    payload_size, props, partition_key, b64, ordering_key, event_time, sequence_id, null_value = row
    return WireSingleMetadata(
        properties=[KeyValue(k, v) for k, v in (props or {}).items()],
        partition_key=partition_key,
        payload_size=payload_size,
        event_time=event_time or None,
        partition_key_b64_encoded=True if b64 else None,
        ordering_key=ordering_key,
        sequence_id=sequence_id,
        null_value=True if null_value else None,
    ).encode()


def entry_wire(data: EntryData, clock_offset_ms: int = 0) -> tuple[bytes, bytes]:
    """``(wire, checksum)`` of any entry: a `WireEntry`'s own bytes, else the model entry encoded."""
    if type(data) is WireEntry:
        return data.wire, data.checksum  # type: ignore[attr-defined]
    meta = metadata_bytes(data.metadata, clock_offset_ms)
    if data.metadata.num_messages_in_batch is None:
        body = data.payloads[0]
    else:
        parts = []
        for row, payload in zip(data.rows, data.payloads):
            header = single_metadata_bytes(row)
            parts.append(_pack_u32(len(header)))
            parts.append(header)
            parts.append(payload)
        body = b"".join(parts)
    wire = _pack_u32(len(meta)) + meta + body
    return wire, _pack_u32(google_crc32c.value(wire))


class EncodedEntries:
    """A bounded cache of model entries already written out (entries never change once stored)."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._cache: OrderedDict[int, tuple[Any, bytes, bytes]] = OrderedDict()

    def get(self, data: EntryData, clock_offset_ms: int) -> tuple[bytes, bytes]:
        if type(data) is WireEntry:
            return data.wire, data.checksum  # type: ignore[attr-defined]
        key = id(data)
        hit = self._cache.get(key)
        if hit is not None and hit[0] is data:
            return hit[1], hit[2]
        wire, crc = entry_wire(data, clock_offset_ms)
        self._cache[key] = (data, wire, crc)
        if len(self._cache) > self.capacity:
            self._cache.popitem(last=False)
        return wire, crc


# --- MESSAGE ------------------------------------------------------------------------------------
def consumer_prefix(consumer_id: int) -> bytes:
    """The start of a `CommandMessage` body for one consumer (field 1, its id), computed once per consumer."""
    return b"\x08" + encode_varint(consumer_id)


def message_frame(
    prefix: bytes,
    ledger: int,
    entry: int,
    redelivery_count: int,
    ack_set: int | None,
    wire: bytes,
    checksum: bytes,
    partition: int = -1,
) -> bytes:
    """A complete MESSAGE frame: ``CommandMessage`` for one entry, then the stored bytes with their CRC32C. The
    message id carries the consumer's partition index when it reads a partition (`Commands.newMessageCommand`:
    clients take the received ids' ``partition()`` from it)."""
    mid = b"\x08" + encode_varint(ledger) + b"\x10" + encode_varint(entry)
    if partition >= 0:
        mid += b"\x18" + encode_varint(partition)
    body = prefix + b"\x12" + encode_varint(len(mid)) + mid
    if redelivery_count:
        body += b"\x18" + encode_varint(redelivery_count)
    if ack_set is not None:
        body += b"".join(b"\x20" + encode_varint(w) for w in ack_set_words(ack_set))
    cmd = b"\x08\x09\x4a" + encode_varint(len(body)) + body
    n = len(cmd)
    return b"".join((_pack_frame_header(n + 10 + len(wire), n), cmd, b"\x0e\x01", checksum, wire))


__all__ = [
    "EncodedEntries",
    "NotSplittable",
    "WireEntry",
    "consumer_prefix",
    "entry_wire",
    "message_frame",
    "metadata_bytes",
    "read_metadata",
    "single_metadata_bytes",
]
