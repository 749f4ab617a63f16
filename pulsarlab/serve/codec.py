"""A small proto2 codec: varints, tags, and messages declared as typed dataclasses.

Models the part of protobuf's wire format that Pulsar's binary protocol uses (what `PulsarDecoder` parses and
`Commands` writes): varint, 64-bit and length-delimited fields, proto2 presence (an absent optional field is
None; `value` returns its declared default) and required fields (decoding fails without them, encoding refuses
to leave them out, zero values included, as the C++ client insists). Unknown fields are skipped; a repeated
number field is read packed or unpacked and written unpacked; an enum value the declaration does not know is
treated as absent, as proto2 does. The schema is the project's own: field numbers, wire types and defaults are
what interoperability needs, the names are ours.

Numbers are read as Pulsar's broker reads them: its generated Java classes hold a uint64 in a ``long`` and a
uint32 in an ``int``, so every uint64 decodes as a signed 64-bit value (2**64 - 1 is -1, the C++ client's entry
id -1) and every uint32 as a signed 32-bit one; writing a negative value gives the same bytes back.

Simplifies: no groups (wire types 3/4 fail), no fixed32/sfixed/sint types, no maps or oneofs (Pulsar's
protocol uses none of them).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import MISSING, dataclass
from dataclasses import fields as dc_fields
from typing import Any, Callable, ClassVar, TypeVar

MASK64 = (1 << 64) - 1
_SIGN64 = 1 << 63
_DOUBLE = struct.Struct("<d")


class CodecError(ValueError):
    """A byte string that is not a valid encoding of the expected message (the only error the decoder raises)."""


class Kind(enum.Enum):
    """The scalar type of a field, which fixes its wire type and how its value is read."""

    UINT64 = "uint64"
    INT64 = "int64"
    UINT32 = "uint32"
    INT32 = "int32"
    BOOL = "bool"
    ENUM = "enum"
    STRING = "string"
    BYTES = "bytes"
    MESSAGE = "message"
    DOUBLE = "double"


class Label(enum.Enum):
    REQUIRED = "required"
    OPTIONAL = "optional"
    REPEATED = "repeated"


REQUIRED, OPTIONAL, REPEATED = Label.REQUIRED, Label.OPTIONAL, Label.REPEATED
UINT64, INT64, UINT32, INT32 = Kind.UINT64, Kind.INT64, Kind.UINT32, Kind.INT32
BOOL, ENUM, STRING, BYTES, MESSAGE, DOUBLE = Kind.BOOL, Kind.ENUM, Kind.STRING, Kind.BYTES, Kind.MESSAGE, Kind.DOUBLE

_VARINT_KINDS = frozenset({UINT64, INT64, UINT32, INT32, BOOL, ENUM})
WIRE_VARINT, WIRE_FIXED64, WIRE_LEN, WIRE_FIXED32 = 0, 1, 2, 5


@dataclass(frozen=True, slots=True)
class Field:
    """One declared field: number, attribute name, kind, label, proto2 default, and the enum or message type."""

    number: int
    name: str
    kind: Kind
    label: Label = OPTIONAL
    default: Any = None
    type: Any = None  # an enum class, a message class, or a message class name (resolved on first use)

    @property
    def wire_type(self) -> int:
        if self.kind in _VARINT_KINDS:
            return WIRE_VARINT
        if self.kind is DOUBLE:
            return WIRE_FIXED64
        return WIRE_LEN


# --- varints ------------------------------------------------------------------------------------
_SMALL = [bytes((i,)) for i in range(128)]


def encode_varint(n: int) -> bytes:
    """Base-128 varint of ``n``; a negative value is written as its 64-bit two's complement (10 bytes)."""
    if 0 <= n < 0x80:
        return _SMALL[n]
    if 0 < n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    if 0 < n < 0x200000:
        return bytes(((n & 0x7F) | 0x80, ((n >> 7) & 0x7F) | 0x80, n >> 14))
    if n < 0:
        n &= MASK64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    """``(value, next position)`` of the varint at ``pos``; at most 10 bytes, value masked to 64 bits."""
    if pos >= end:
        raise CodecError("truncated varint")
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= end:
            raise CodecError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & MASK64, pos
        shift += 7
        if shift >= 70:
            raise CodecError("varint longer than 10 bytes")


def as_signed64(v: int) -> int:
    return v - (1 << 64) if v & _SIGN64 else v


def as_signed32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def tag(number: int, wire_type: int) -> bytes:
    return encode_varint((number << 3) | wire_type)


def skip_field(buf: Any, pos: int, end: int, key: int) -> int:
    """The position after the value of the field whose tag ``key`` was just read (the hand-written readers of
    `hot_commands` and `entries` use it for the fields they do not know)."""
    wire = key & 7
    if key >> 3 == 0:
        raise CodecError("field number 0")
    if wire == 0:
        return decode_varint(buf, pos, end)[1]
    if wire == 2:
        n, pos = decode_varint(buf, pos, end)
        if n > end - pos:
            raise CodecError("field runs past the end of its message")
        return pos + n
    if wire == 1:
        if pos + 8 > end:
            raise CodecError("truncated 64-bit field")
        return pos + 8
    if wire == 5:
        if pos + 4 > end:
            raise CodecError("truncated 32-bit field")
        return pos + 4
    raise CodecError(f"unsupported wire type {wire}")


# --- message declarations -----------------------------------------------------------------------
M = TypeVar("M")
_REGISTRY: dict[str, type] = {}


class ProtoMessage:
    """Base of the declared messages: ``FIELDS`` plus ``encode()``, ``decode()`` and ``value(name)`` (presence is
    the attribute not being None)."""

    __slots__ = ()
    FIELDS: ClassVar[tuple[Field, ...]] = ()
    _BY_NUMBER: ClassVar[dict[int, Field]] = {}
    _BY_NAME: ClassVar[dict[str, Field]] = {}

    # one __eq__ and __repr__ for every message (the declarations pass eq=False, repr=False to dataclass: the
    # generated ones cost an exec per class when `pulsarlab serve` starts)
    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f.name) == getattr(other, f.name) for f in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        values = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.FIELDS)
        return f"{type(self).__name__}({values})"

    def value(self, name: str) -> Any:
        """The field's value, or its proto2 default when absent (None for a message without a default)."""
        v = getattr(self, name)
        if v is None:
            return self._BY_NAME[name].default
        return v

    def encode(self) -> bytes:
        return encode_message(self)

    @classmethod
    def decode(cls: type[M], buf: Any, start: int = 0, end: int | None = None) -> M:
        return decode_message(cls, buf, start, len(buf) if end is None else end)


def proto(*declared: Field) -> Callable[[type[M]], type[M]]:
    """Class decorator: attach the field declarations to a dataclass (checked against its attributes)."""

    def wrap(cls: type[M]) -> type[M]:
        attributes = dc_fields(cls)  # type: ignore[arg-type]
        names = {f.name for f in attributes}
        numbers: dict[int, Field] = {}
        for f in declared:
            if f.name not in names:
                raise TypeError(f"{cls.__name__} declares field {f.name} but has no such attribute")
            if f.number in numbers or f.number <= 0:
                raise TypeError(f"{cls.__name__}: field number {f.number} is invalid or declared twice")
            numbers[f.number] = f
        by_name = {f.name: f for f in declared}
        for dc in attributes:
            f = by_name.get(dc.name)
            if f is None:
                raise TypeError(f"{cls.__name__}.{dc.name} has no field declaration")
            if f.label is REPEATED and dc.default_factory is MISSING:  # type: ignore[misc]
                raise TypeError(f"{cls.__name__}.{dc.name} is repeated: give it default_factory=list")
        cls.FIELDS = tuple(sorted(declared, key=lambda f: f.number))  # type: ignore[attr-defined]
        cls._BY_NUMBER = numbers  # type: ignore[attr-defined]
        cls._BY_NAME = by_name  # type: ignore[attr-defined]
        _REGISTRY[cls.__name__] = cls
        return cls

    return wrap


def F(number: int, name: str, kind: Kind, label: Label = OPTIONAL, default: Any = None, type: Any = None) -> Field:
    return Field(number, name, kind, label, default, type)


def _resolve(f: Field) -> Any:
    t = f.type
    if isinstance(t, str):
        t = _REGISTRY[t]
    return t


# --- encoding -----------------------------------------------------------------------------------
def _encode_scalar(f: Field, v: Any, out: bytearray) -> None:
    kind = f.kind
    if kind in _VARINT_KINDS:
        if kind is BOOL:
            n = 1 if v else 0
        elif kind is UINT32:  # an int written as uint32 (`writeUInt32`): at most 5 bytes, -1 is 2**32 - 1
            n = int(v) & 0xFFFFFFFF
        else:
            n = int(v)
        out += tag(f.number, WIRE_VARINT)
        out += encode_varint(n)
    elif kind is STRING:
        data = v.encode("utf-8")
        out += tag(f.number, WIRE_LEN)
        out += encode_varint(len(data))
        out += data
    elif kind is BYTES:
        data = bytes(v)
        out += tag(f.number, WIRE_LEN)
        out += encode_varint(len(data))
        out += data
    elif kind is MESSAGE:
        data = encode_message(v)
        out += tag(f.number, WIRE_LEN)
        out += encode_varint(len(data))
        out += data
    elif kind is DOUBLE:
        out += tag(f.number, WIRE_FIXED64)
        out += _DOUBLE.pack(float(v))
    else:  # pragma: no cover - every Kind is handled above
        raise CodecError(f"cannot encode kind {kind}")


def encode_message(obj: Any) -> bytes:
    """The message's bytes, fields in number order; a required field left None is an error."""
    out = bytearray()
    for f in type(obj).FIELDS:
        v = getattr(obj, f.name)
        if f.label is REPEATED:
            for item in v:
                _encode_scalar(f, item, out)
        elif v is None:
            if f.label is REQUIRED:
                raise CodecError(f"{type(obj).__name__}.{f.name} is required")
        else:
            _encode_scalar(f, v, out)
    return bytes(out)


# --- decoding -----------------------------------------------------------------------------------
def _convert(f: Field, wire: int, raw: Any, buf: Any) -> Any:
    """A raw wire value as the field's Python value; ``_ABSENT`` for an unknown enum value."""
    kind = f.kind
    if kind in _VARINT_KINDS:
        if wire != WIRE_VARINT:
            raise CodecError(f"field {f.name} ({f.number}) expects a varint, got wire type {wire}")
        if kind is UINT64 or kind is INT64:  # Java reads uint64 into a long: 2**64 - 1 is -1
            return as_signed64(raw)
        if kind is INT32 or kind is UINT32:  # and uint32 into an int
            return as_signed32(raw)
        if kind is BOOL:
            return raw != 0
        enum_type = _resolve(f)
        n = as_signed32(raw)
        try:
            return enum_type(n)
        except ValueError:
            return _ABSENT
    if kind is DOUBLE:
        if wire != WIRE_FIXED64:
            raise CodecError(f"field {f.name} ({f.number}) expects a 64-bit value, got wire type {wire}")
        return _DOUBLE.unpack(raw)[0]
    if wire != WIRE_LEN:
        raise CodecError(f"field {f.name} ({f.number}) expects a length-delimited value, got wire type {wire}")
    start, end = raw
    if kind is STRING:
        try:
            return bytes(buf[start:end]).decode("utf-8")
        except UnicodeDecodeError as e:
            raise CodecError(f"field {f.name} ({f.number}) is not UTF-8: {e}") from None
    if kind is BYTES:
        return bytes(buf[start:end])
    return decode_message(_resolve(f), buf, start, end)


_ABSENT = object()


def _packed(f: Field, buf: Any, start: int, end: int) -> list[Any]:
    out = []
    pos = start
    while pos < end:
        if f.kind is DOUBLE:
            if pos + 8 > end:
                raise CodecError(f"truncated packed field {f.name}")
            v = _convert(f, WIRE_FIXED64, bytes(buf[pos : pos + 8]), buf)
            pos += 8
        else:
            raw, pos = decode_varint(buf, pos, end)
            v = _convert(f, WIRE_VARINT, raw, buf)
        if v is not _ABSENT:
            out.append(v)
    return out


def iter_fields(buf: Any, start: int, end: int):
    """``(number, wire type, raw)`` of each field: raw is an int (varint), 8 bytes (fixed64), 4 bytes (fixed32)
    or a ``(start, end)`` span (length-delimited)."""
    pos = start
    while pos < end:
        key, pos = decode_varint(buf, pos, end)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise CodecError("field number 0")
        if wire == WIRE_VARINT:
            raw, pos = decode_varint(buf, pos, end)
        elif wire == WIRE_LEN:
            n, pos = decode_varint(buf, pos, end)
            if n > end - pos:
                raise CodecError(f"field {number}: length {n} runs past the end of the message")
            raw = (pos, pos + n)
            pos += n
        elif wire == WIRE_FIXED64:
            if pos + 8 > end:
                raise CodecError(f"field {number}: truncated 64-bit value")
            raw = bytes(buf[pos : pos + 8])
            pos += 8
        elif wire == WIRE_FIXED32:
            if pos + 4 > end:
                raise CodecError(f"field {number}: truncated 32-bit value")
            raw = bytes(buf[pos : pos + 4])
            pos += 4
        else:
            raise CodecError(f"field {number}: unsupported wire type {wire}")
        yield number, wire, raw


def decode_message(cls: type[M], buf: Any, start: int, end: int) -> M:
    """Decode ``buf[start:end]`` as ``cls``; raises `CodecError` on malformed bytes or a missing required field."""
    if start < 0 or end > len(buf) or start > end:
        raise CodecError("message span outside the buffer")
    by_number = cls._BY_NUMBER  # type: ignore[attr-defined]
    values: dict[str, Any] = {}
    for number, wire, raw in iter_fields(buf, start, end):
        f = by_number.get(number)
        if f is None:
            continue
        if f.label is REPEATED:
            items = values.setdefault(f.name, [])
            if wire == WIRE_LEN and f.kind not in (STRING, BYTES, MESSAGE):
                items.extend(_packed(f, buf, raw[0], raw[1]))
            else:
                v = _convert(f, wire, raw, buf)
                if v is not _ABSENT:
                    items.append(v)
        else:
            v = _convert(f, wire, raw, buf)
            if v is not _ABSENT:
                values[f.name] = v  # the last occurrence wins (proto2 merge for scalars)
    for f in cls.FIELDS:  # type: ignore[attr-defined]
        if f.label is REQUIRED and f.name not in values:
            raise CodecError(f"{cls.__name__} is missing required field {f.name} ({f.number})")
    return cls(**values)


__all__ = [
    "BOOL",
    "BYTES",
    "CodecError",
    "DOUBLE",
    "ENUM",
    "F",
    "Field",
    "INT32",
    "INT64",
    "Kind",
    "Label",
    "MESSAGE",
    "OPTIONAL",
    "ProtoMessage",
    "REPEATED",
    "REQUIRED",
    "STRING",
    "UINT32",
    "UINT64",
    "as_signed32",
    "as_signed64",
    "decode_message",
    "decode_varint",
    "encode_message",
    "encode_varint",
    "iter_fields",
    "proto",
    "skip_field",
    "tag",
]
