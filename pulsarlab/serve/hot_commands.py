"""The commands on the hot path (SEND, ACK, SEND_RECEIPT), read and written without building dataclasses.

Models the same `CommandSend`, `CommandAck` and `CommandSendReceipt` as `commands` (field numbers, proto2
rules and the Java reading of uint64 as a signed long are the same; `tests/serve/test_serve_codec.py` checks both
readings agree): a producer's every SEND and a
consumer's every ACK pass through here, so the fields go straight into tuples.
"""

from __future__ import annotations

import struct

from pulsarlab.serve.codec import CodecError, as_signed64, decode_varint, encode_varint, skip_field

_pack_frame_header = struct.Struct(">II").pack


def read_send(buf: bytes, pos: int, end: int) -> tuple[int, int, int | None, bool]:
    """`CommandSend`: ``(producer_id, sequence_id, highest_sequence_id or None, transactional)``."""
    producer_id = sequence_id = highest = None
    txn = False
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # a one-byte tag (fields 1-15), read inline
            pos += 1
        else:
            key, pos = decode_varint(buf, pos, end)
        if key == 0x08:
            producer_id, pos = decode_varint(buf, pos, end)
        elif key == 0x10:
            sequence_id, pos = decode_varint(buf, pos, end)
        elif key == 0x30:
            highest, pos = decode_varint(buf, pos, end)
        elif key == 0x20 or key == 0x28:
            v, pos = decode_varint(buf, pos, end)
            txn = txn or v != 0
        else:
            pos = skip_field(buf, pos, end, key)
    if producer_id is None or sequence_id is None:
        raise CodecError("CommandSend is missing producer_id or sequence_id")
    return as_signed64(producer_id), as_signed64(sequence_id), None if highest is None else as_signed64(highest), txn


def _read_message_id(buf: bytes, pos: int, end: int) -> tuple[int, int, tuple[int, ...] | None]:
    """`MessageIdData` as the model's ack entry ``(ledger, entry, ack set words or None)``."""
    ledger = entry = None
    words: list[int] | None = None
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # a one-byte tag (fields 1-15), read inline
            pos += 1
        else:
            key, pos = decode_varint(buf, pos, end)
        if key == 0x08:
            ledger, pos = decode_varint(buf, pos, end)
        elif key == 0x10:
            entry, pos = decode_varint(buf, pos, end)
        elif key == 0x28:
            v, pos = decode_varint(buf, pos, end)
            if words is None:
                words = []
            words.append(as_signed64(v))
        elif key == 0x2A:  # ack_set written packed
            n, pos = decode_varint(buf, pos, end)
            stop = pos + n
            if stop > end:
                raise CodecError("packed ack set runs past the end of the message id")
            if words is None:
                words = []
            while pos < stop:
                v, pos = decode_varint(buf, pos, stop)
                words.append(as_signed64(v))
        else:
            pos = skip_field(buf, pos, end, key)
    if ledger is None or entry is None:
        raise CodecError("MessageIdData is missing ledgerId or entryId")
    return as_signed64(ledger), as_signed64(entry), tuple(words) if words else None


def read_ack(buf: bytes, pos: int, end: int) -> tuple[int, int, tuple, dict[str, int], int | None]:
    """`CommandAck`: ``(consumer_id, ack_type, ((ledger, entry, ack_set), ...), properties, request_id)``."""
    consumer_id = ack_type = request_id = None
    ids = []
    props: dict[str, int] = {}
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # a one-byte tag (fields 1-15), read inline
            pos += 1
        else:
            key, pos = decode_varint(buf, pos, end)
        if key == 0x1A:
            n, pos = decode_varint(buf, pos, end)
            stop = pos + n
            if stop > end:
                raise CodecError("message id runs past the end of the ack")
            ids.append(_read_message_id(buf, pos, stop))
            pos = stop
        elif key == 0x08:
            consumer_id, pos = decode_varint(buf, pos, end)
        elif key == 0x10:
            v, pos = decode_varint(buf, pos, end)
            if v in (0, 1):  # an unknown AckType value is absent, as proto2 reads it
                ack_type = v
        elif key == 0x40:
            request_id, pos = decode_varint(buf, pos, end)
        elif key == 0x2A:
            n, pos = decode_varint(buf, pos, end)
            stop = pos + n
            if stop > end:
                raise CodecError("ack property runs past the end of the ack")
            name, value = _read_key_long(buf, pos, stop)
            props[name] = value
            pos = stop
        else:
            pos = skip_field(buf, pos, end, key)
    if consumer_id is None or ack_type is None:
        raise CodecError("CommandAck is missing consumer_id or ack_type")
    return (
        as_signed64(consumer_id),
        ack_type,
        tuple(ids),
        props,
        None if request_id is None else as_signed64(request_id),
    )


def _read_key_long(buf: bytes, pos: int, end: int) -> tuple[str, int]:
    name = value = None
    while pos < end:
        key = buf[pos]
        if key < 0x80:  # a one-byte tag (fields 1-15), read inline
            pos += 1
        else:
            key, pos = decode_varint(buf, pos, end)
        if key == 0x0A:
            n, pos = decode_varint(buf, pos, end)
            if n > end - pos:
                raise CodecError("key runs past the end of the property")
            try:
                name = buf[pos : pos + n].decode("utf-8")
            except UnicodeDecodeError as e:
                raise CodecError(f"property key is not UTF-8: {e}") from None
            pos += n
        elif key == 0x10:
            value, pos = decode_varint(buf, pos, end)
            value = as_signed64(value)
        else:
            pos = skip_field(buf, pos, end, key)
    if name is None or value is None:
        raise CodecError("KeyLongValue is missing its key or value")
    return name, value


def send_receipt_frame(producer_prefix: bytes, sequence_id: int, highest: int | None, ledger: int, entry: int) -> bytes:
    """A SEND_RECEIPT frame; ``producer_prefix`` is field 1 (the producer id), written once per producer."""
    mid = b"\x08" + encode_varint(ledger) + b"\x10" + encode_varint(entry)
    body = producer_prefix + b"\x10" + encode_varint(sequence_id) + b"\x1a" + encode_varint(len(mid)) + mid
    if highest is not None:
        body += b"\x20" + encode_varint(highest)
    cmd = b"\x08\x07\x3a" + encode_varint(len(body)) + body
    return _pack_frame_header(len(cmd) + 4, len(cmd)) + cmd


def producer_prefix(producer_id: int) -> bytes:
    return b"\x08" + encode_varint(producer_id)


__all__ = ["producer_prefix", "read_ack", "read_send", "send_receipt_frame", "skip_field"]
