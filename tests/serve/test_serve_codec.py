"""The serve codec: proto2 encoding, framing, checksums, entries as bytes; fuzzed with Hypothesis."""

from __future__ import annotations

import struct

import google_crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.client.batching import ClientLibrary, OutgoingMessage, make_container, non_batched_entry
from pulsarlab.messages import MessageMetadata
from pulsarlab.protocol.acks import AckType
from pulsarlab.serve import codec
from pulsarlab.serve.codec import CodecError, Kind, Label, decode_varint, encode_varint
from pulsarlab.serve.commands import (
    BODIES,
    Ack,
    CommandType,
    Connected,
    MessageCmd,
    MsgId,
    ProducerSuccess,
    Send,
    Subscribe,
    UnknownCommand,
    WireMetadata,
    WireSingleMetadata,
    decode_command,
    encode_command,
    read_envelope,
)
from pulsarlab.serve.entries import (
    NotSplittable,
    WireEntry,
    entry_wire,
    message_frame,
    read_metadata,
)
from pulsarlab.serve.frames import (
    ChecksumMismatch,
    FrameDecoder,
    FrameError,
    FrameTooLarge,
    payload_frame,
    read_payload_section,
    simple_frame,
    wire_section,
)

# --- strategies built from the declarations ----------------------------------------------------------
# the values each kind decodes to: Pulsar's broker reads uint64 into a Java long and uint32 into an int
_INT_RANGES = {
    Kind.UINT64: (-(2**63), 2**63 - 1),
    Kind.INT64: (-(2**63), 2**63 - 1),
    Kind.UINT32: (-(2**31), 2**31 - 1),
    Kind.INT32: (-(2**31), 2**31 - 1),
}


def _scalar(field: codec.Field, depth: int) -> st.SearchStrategy:
    kind = field.kind
    if kind in _INT_RANGES:
        lo, hi = _INT_RANGES[kind]
        return st.integers(lo, hi)
    if kind is Kind.BOOL:
        return st.booleans()
    if kind is Kind.ENUM:
        return st.sampled_from(list(codec._resolve(field)))
    if kind is Kind.STRING:
        return st.text(max_size=12)
    if kind is Kind.BYTES:
        return st.binary(max_size=12)
    if kind is Kind.DOUBLE:
        return st.floats(allow_nan=False)
    return message_strategy(codec._resolve(field), depth + 1)


def message_strategy(cls: type, depth: int = 0) -> st.SearchStrategy:
    """Any valid instance of a declared message (required fields always set, optional ones maybe)."""
    parts = {}
    for f in cls.FIELDS:
        if f.kind is Kind.MESSAGE and depth >= 2:
            if f.label is Label.REQUIRED:
                parts[f.name] = st.just(codec._resolve(f)())
            elif f.label is Label.REPEATED:
                parts[f.name] = st.just([])
            else:
                parts[f.name] = st.none()
            continue
        value = _scalar(f, depth)
        if f.label is Label.REPEATED:
            parts[f.name] = st.lists(value, max_size=3)
        elif f.label is Label.REQUIRED:
            parts[f.name] = value
        else:
            parts[f.name] = st.none() | value
    return st.builds(cls, **parts)


ALL_BODIES = sorted(set(BODIES.values()) | {WireMetadata, WireSingleMetadata}, key=lambda c: c.__name__)


@settings(max_examples=15, deadline=None)
@given(st.data())
def test_every_declared_message_round_trips(data):
    for cls in ALL_BODIES:
        msg = data.draw(message_strategy(cls), label=cls.__name__)
        assert cls.decode(msg.encode()) == msg


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(BODIES.values(), key=lambda c: c.__name__)).flatmap(message_strategy))
def test_commands_round_trip_through_the_envelope(body):
    kind, decoded = decode_command(encode_command(body))
    assert decoded == body
    assert BODIES[kind] is type(body)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_commands_raise_only_codec_errors(data):
    try:
        decode_command(data)
    except CodecError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_garbage_metadata_raises_only_codec_errors(data):
    try:
        read_metadata(data, 0, len(data))
    except CodecError:
        pass
    try:
        WireMetadata.decode(data)
    except CodecError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=64), max_size=8))
def test_garbage_streams_raise_only_frame_errors(chunks):
    decoder = FrameDecoder(256)
    for chunk in chunks:
        try:
            frames = decoder.feed(chunk)
        except FrameError:
            return
        for f in frames:
            assert f.command_start <= f.command_end <= f.end <= len(f.buf)
            try:
                read_envelope(f.buf, f.command_start, f.command_end)
                read_payload_section(f.buf, f.payload_start, f.end)
            except CodecError:
                pass
        assert decoder.buffered <= 256 + 4


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100), st.integers(1, 5))
def test_garbage_batches_raise_only_not_splittable(payload, n):
    meta = WireMetadata(producer_name="p", sequence_id=0, publish_time=0, num_messages_in_batch=n).encode()
    wire = wire_section(meta, payload)
    m, plain = read_metadata(wire, 4, 4 + len(meta))
    entry = WireEntry.from_wire(m, wire, b"\0\0\0\0", plain, 4 + len(meta))
    assert entry.size == len(wire)
    try:
        assert len(entry.payloads) == n
    except NotSplittable:
        pass


# --- varints and presence ----------------------------------------------------------------------------
@given(st.integers(-(2**63), 2**64 - 1))
def test_varint_round_trip(n):
    data = encode_varint(n)
    value, end = decode_varint(data, 0, len(data))
    assert end == len(data)
    assert value == n & codec.MASK64
    assert len(data) == (10 if n < 0 else max(1, (n.bit_length() + 6) // 7))


def test_required_zero_values_are_on_the_wire():
    # SEND{producer_id 0, sequence_id 0} as the notes annotate a real frame: 08 06 32 04 08 00 10 00
    assert encode_command(Send(producer_id=0, sequence_id=0)) == bytes.fromhex("0806320408001000")


def test_missing_required_fields_fail_both_ways():
    with pytest.raises(CodecError, match="missing required field server_version"):
        Connected.decode(Connected(server_version="x", protocol_version=3).encode()[3:])
    with pytest.raises(CodecError, match="required"):
        ProducerSuccess(request_id=1, producer_name=None).encode()  # type: ignore[arg-type]


def test_absent_optional_fields_read_their_proto2_defaults():
    mid = MsgId.decode(MsgId(ledger_id=3, entry_id=4).encode())
    assert mid.partition is None and mid.value("partition") == -1 and mid.value("batch_index") == -1
    sub = Subscribe.decode(Subscribe(topic="t", subscription="s", consumer_id=1, request_id=2).encode())
    assert sub.durable is None and sub.value("durable") is True
    assert sub.value("force_topic_creation") is True
    assert WireMetadata.decode(WireMetadata(producer_name="p").encode()).value("num_messages_in_batch") == 1


def test_minus_one_ids_travel_as_uint64_and_read_as_java_longs():
    data = MsgId(ledger_id=-1, entry_id=-1).encode()
    assert data == b"\x08" + b"\xff" * 9 + b"\x01" + b"\x10" + b"\xff" * 9 + b"\x01"  # 2**64 - 1, as the C++ client
    assert MsgId.decode(data).ids() == (-1, -1)
    assert MsgId.decode(MsgId(ledger_id=2**63 - 1, entry_id=2**63).encode()).ids() == (2**63 - 1, -(2**63))


@pytest.mark.parametrize(
    ("wire", "read"), [(0, 0), (2**31 - 1, 2**31 - 1), (2**31, -(2**31)), (2**32 - 1, -1), (2**64 - 1, -1)]
)
def test_uint32_reads_as_a_java_int_and_writes_back_the_same_value(wire, read):
    from pulsarlab.serve.commands import Flow

    data = b"\x08\x01\x10" + encode_varint(wire)  # FLOW{consumer_id 1, message_permits}
    flow = Flow.decode(data)
    assert flow.message_permits == read
    assert Flow.decode(flow.encode()).message_permits == read
    assert len(flow.encode()) <= 2 + 1 + 5  # a uint32 is written in at most 5 bytes


def test_packed_and_unpacked_repeated_fields_read_the_same():
    unpacked = MessageCmd(consumer_id=1, message_id=MsgId(ledger_id=1, entry_id=2), ack_set=[5, -1]).encode()
    body = b"".join(encode_varint(v) for v in (5, -1))
    # field 4 as one length-delimited (packed) run instead of two varint fields
    head = unpacked[: unpacked.index(b"\x20")]
    packed = head + b"\x22" + encode_varint(len(body)) + body
    assert MessageCmd.decode(packed) == MessageCmd.decode(unpacked)
    assert MessageCmd.decode(packed).ack_set == [5, -1]


def test_unknown_fields_are_skipped_and_unknown_enum_values_are_absent():
    extra = Ack(consumer_id=7, ack_type=AckType.CUMULATIVE).encode() + b"\xf8\x07\x01" + b"\xa2\x06\x00"
    ack = Ack.decode(extra)
    assert ack.consumer_id == 7 and ack.ack_type is AckType.CUMULATIVE
    with pytest.raises(CodecError, match="missing required field ack_type"):
        Ack.decode(b"\x08\x07\x10\x09")  # ack_type 9 is no AckType


def test_unknown_command_types_are_refused():
    with pytest.raises(UnknownCommand, match="unknown command type 99"):
        read_envelope(b"\x08\x63", 0, 2)
    with pytest.raises(UnknownCommand, match="no type"):
        read_envelope(b"\x12\x00", 0, 2)


# --- framing --------------------------------------------------------------------------------------------
def test_frames_split_wherever_the_stream_is_cut():
    frames = [simple_frame(encode_command(Send(producer_id=i, sequence_id=i))) for i in range(5)]
    stream = b"".join(frames)
    for cut in range(1, len(stream)):
        decoder = FrameDecoder(1024)
        got = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert [decode_command(f.buf, f.command_start, f.command_end)[1].producer_id for f in got] == list(range(5))
        assert decoder.buffered == 0


def test_an_oversized_frame_is_refused_from_its_header():
    decoder = FrameDecoder(1000)
    with pytest.raises(FrameTooLarge, match="1001 bytes exceeds the limit of 1000"):
        decoder.feed(struct.pack(">I", 1001))
    assert decoder.buffered == 0


def test_a_command_larger_than_its_frame_is_refused():
    with pytest.raises(FrameError, match="does not fit"):
        FrameDecoder(1000).feed(struct.pack(">II", 10, 50) + b"\0" * 6)


def test_payload_sections_are_checksummed():
    meta = WireMetadata(producer_name="p", sequence_id=1, publish_time=2).encode()
    wire = wire_section(meta, b"hello")
    frame = payload_frame(encode_command(Send(producer_id=0, sequence_id=1)), wire)
    f = FrameDecoder(10_000).feed(frame)[0]
    section = read_payload_section(f.buf, f.payload_start, f.end)
    assert section.wire == wire and section.payload == b"hello" and section.metadata == meta
    assert section.checksum == google_crc32c.value(wire)
    corrupt = frame[:-1] + b"X"
    f = FrameDecoder(10_000).feed(corrupt)[0]
    with pytest.raises(ChecksumMismatch):
        read_payload_section(f.buf, f.payload_start, f.end)


# --- entries as bytes -----------------------------------------------------------------------------------
def _cpp_batch(n: int) -> tuple:
    container = make_container(
        __import__("pulsarlab").BatchingType.Default, "prod", 100, 1 << 20, client=ClientLibrary.CPP
    )
    for i in range(n):
        container.add(
            OutgoingMessage(
                f"payload-{i}".encode() * (i + 1),
                i,
                {"i": str(i)} if i % 2 else {},
                f"key-{i}" if i % 3 else None,
                b"ok" if i == 4 else None,
                7 * i,
            )
        )
    ((entry, _),) = container.flush(1000)
    return entry


def test_a_model_batch_written_out_reads_back_equal():
    entry = _cpp_batch(6)
    wire, checksum = entry_wire(entry, clock_offset_ms=5000)
    assert checksum == struct.pack(">I", google_crc32c.value(wire))
    meta_end = 4 + struct.unpack(">I", wire[:4])[0]
    meta, plain = read_metadata(wire, 4, meta_end, clock_offset_ms=5000)
    assert plain and meta == entry.metadata
    back = WireEntry.from_wire(meta, wire, checksum, plain, meta_end)
    assert back.size == len(wire) and entry.size == sum(len(p) for p in back.payloads)
    assert back.payloads == entry.payloads and back.rows == entry.rows
    assert back.messages == entry.messages


def test_a_single_message_entry_reads_back_equal():
    msg = OutgoingMessage(b"solo", 3, {"a": "b"}, "k", None, 0, 12345)
    entry = non_batched_entry("prod", msg, 99, client=ClientLibrary.CPP)
    wire, checksum = entry_wire(entry)
    meta_end = 4 + struct.unpack(">I", wire[:4])[0]
    meta, _ = read_metadata(wire, 4, meta_end)
    assert meta == entry.metadata and meta.deliver_at_time == 12345
    back = WireEntry.from_wire(meta, wire, checksum, True, meta_end)
    assert back.payloads == (b"solo",) and back.rows == (None,) and back.size == len(wire) == meta_end + 4


def test_message_frames_carry_the_entry_and_its_checksum():
    entry = _cpp_batch(3)
    wire, checksum = entry_wire(entry)
    frame = message_frame(b"\x08\x05", 3, 7, 2, (1 << 70) | 0b101, wire, checksum)
    f = FrameDecoder(1 << 20).feed(frame)[0]
    kind, cmd = decode_command(f.buf, f.command_start, f.command_end)
    assert kind is CommandType.MESSAGE
    assert (cmd.consumer_id, cmd.message_id.ledger_id, cmd.message_id.entry_id, cmd.redelivery_count) == (5, 3, 7, 2)
    assert cmd.ack_set == [0b101, 1 << 6]
    assert read_payload_section(f.buf, f.payload_start, f.end).wire == wire


def test_metadata_times_move_onto_the_lab_clock():
    meta = WireMetadata(
        producer_name="p", sequence_id=1, publish_time=1_700_000_000_500, deliver_at_time=1_700_000_001_500
    ).encode()
    m, _ = read_metadata(meta, 0, len(meta), clock_offset_ms=1_700_000_000_000)
    assert (m.publish_time, m.deliver_at_time) == (500, 1500)
    assert isinstance(m, MessageMetadata)


# --- the hand-written readers of the hot commands agree with the declarations --------------------------
@settings(max_examples=200, deadline=None)
@given(message_strategy(Ack))
def test_the_fast_ack_reader_agrees_with_the_declaration(ack):
    from pulsarlab.serve.hot_commands import read_ack

    data = ack.encode()
    consumer_id, ack_type, ids, props, request_id = read_ack(data, 0, len(data))
    assert (consumer_id, ack_type, request_id) == (ack.consumer_id, int(ack.ack_type), ack.request_id)
    assert ids == tuple((m.ledger_id, m.entry_id, tuple(m.ack_set) or None) for m in ack.message_ids)
    assert props == {p.key: p.value for p in ack.properties}


@settings(max_examples=200, deadline=None)
@given(message_strategy(Send), st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))
def test_the_fast_send_reader_and_receipt_writer_agree_with_the_declarations(send, producer_id, ledger, entry):
    from pulsarlab.serve.commands import SendReceipt
    from pulsarlab.serve.hot_commands import producer_prefix, read_send, send_receipt_frame

    data = send.encode()
    assert read_send(data, 0, len(data)) == (
        send.producer_id,
        send.sequence_id,
        send.highest_sequence_id,
        bool(send.txnid_least_bits or send.txnid_most_bits),
    )
    frame = send_receipt_frame(producer_prefix(producer_id), send.sequence_id, send.highest_sequence_id, ledger, entry)
    f = FrameDecoder(1024).feed(frame)[0]
    kind, receipt = decode_command(f.buf, f.command_start, f.command_end)
    assert kind is CommandType.SEND_RECEIPT and receipt == SendReceipt(
        producer_id, send.sequence_id, MsgId(ledger_id=ledger, entry_id=entry), send.highest_sequence_id
    )


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_the_fast_readers_raise_only_codec_errors_on_garbage(data):
    from pulsarlab.serve.hot_commands import read_ack, read_send

    for reader in (read_ack, read_send):
        try:
            reader(data, 0, len(data))
        except CodecError:
            pass
