"""Framing: splitting a byte stream into commands, and the checksummed payload section of SEND and MESSAGE.

Models the broker's frame handling (Netty's `LengthFieldBasedFrameDecoder` in front of `PulsarDecoder`, and
`Commands.serializeCommandSendWithSize` / `newMessage` for writing): a frame is ``[total u32][command size u32]
[BaseCommand]`` plus, for SEND and MESSAGE, ``[magic 0x0e01][CRC32C u32][metadata size u32][MessageMetadata]
[payload]`` where the CRC32C covers everything after itself; a frame whose total size exceeds the limit is
refused before it is buffered. An optional broker-entry-metadata section (magic ``0x0e02``) is skipped on read.

Simplifies: the buffer of one connection holds at most one partial frame (the limit bounds memory per
connection); no TLS, no proxy framing.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import google_crc32c

from pulsarlab.serve.codec import CodecError

MAGIC_CRC32C_BYTES = b"\x0e\x01"  # then the CRC32C; 0x0e02 would introduce broker entry metadata
FRAME_PADDING = 10 * 1024  # Commands.MESSAGE_SIZE_FRAME_PADDING: room for the command around a max-size message

_U32 = struct.Struct(">I")
_TWO_U32 = struct.Struct(">II")
_pack_u32 = _U32.pack
_pack_two = _TWO_U32.pack
_unpack_u32 = _U32.unpack_from


class FrameError(CodecError):
    """A frame that breaks the framing rules (too large, shorter than its own header, a bad payload section)."""


class ProtocolViolation(Exception):
    """The client broke the protocol (a command before CONNECT, a SEND for no producer, a malformed command); the
    connection is closed with this reason."""


class FrameTooLarge(FrameError):
    """A frame announcing more bytes than the connection's limit."""


class ChecksumMismatch(FrameError):
    """The CRC32C in a payload section does not match the bytes it covers."""


@dataclass(slots=True)
class Frame:
    """One frame cut from the stream: the buffer holding it and the spans of its command and payload."""

    buf: bytes
    command_start: int
    command_end: int
    payload_start: int  # == end when the frame has no payload section
    end: int


class FrameDecoder:
    """Cuts frames out of the bytes a connection receives; at most ``max_frame_size`` bytes per frame.

    ``feed(data)`` returns the complete frames in order and keeps a trailing partial frame for the next call;
    a frame that announces more than the limit raises `FrameTooLarge` at once (before its body arrives).
    """

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._pending = bytearray()
        self._need = 0  # bytes the partial frame in _pending needs before it is complete (0: unknown)

    @property
    def buffered(self) -> int:
        """Bytes held for a partial frame."""
        return len(self._pending)

    def feed(self, data: bytes) -> list[Frame]:
        if self._pending:
            self._pending += data
            if len(self._pending) < self._need:  # a large frame still arriving: do not re-scan it
                return []
            buf = bytes(self._pending)
        else:
            buf = data
        frames: list[Frame] = []
        self._need = 0
        pos = 0
        n = len(buf)
        limit = self.max_frame_size
        while n - pos >= 4:
            total = _unpack_u32(buf, pos)[0]
            if total > limit:
                raise FrameTooLarge(f"frame of {total} bytes exceeds the limit of {limit} bytes")
            if total < 4:
                raise FrameError(f"frame of {total} bytes is shorter than its command size field")
            if n - pos - 4 < total:
                if n - pos >= 8:  # the command size can be checked before the frame is complete
                    cmd_size = _unpack_u32(buf, pos + 4)[0]
                    if cmd_size > total - 4:
                        raise FrameError(f"command of {cmd_size} bytes does not fit a frame of {total} bytes")
                self._need = 4 + total
                break
            cmd_size = _unpack_u32(buf, pos + 4)[0]
            end = pos + 4 + total
            cmd_start = pos + 8
            cmd_end = cmd_start + cmd_size
            if cmd_end > end:
                raise FrameError(f"command of {cmd_size} bytes does not fit a frame of {total} bytes")
            frames.append(Frame(buf, cmd_start, cmd_end, cmd_end, end))
            pos = end
        if pos == n:
            if self._pending:
                self._pending = bytearray()
        elif self._pending:
            del self._pending[:pos]
        else:
            self._pending = bytearray(buf[pos:])
        return frames


@dataclass(slots=True)
class PayloadSection:
    """The payload section of a SEND or MESSAGE frame.

    ``wire`` is ``[metadata size][metadata][payload]`` (what the CRC covers and what a broker stores as the
    entry), the metadata at ``wire[4:metadata_end]``; ``checksum`` is the CRC32C read from the frame, or None
    when the frame carried none.
    """

    wire: bytes
    metadata_end: int
    checksum: int | None

    @property
    def metadata(self) -> bytes:
        return self.wire[4 : self.metadata_end]

    @property
    def payload(self) -> bytes:
        return self.wire[self.metadata_end :]


def read_payload_section(buf: bytes, start: int, end: int, *, verify: bool = True) -> PayloadSection:
    """Parse ``[magic][crc][metadata size][metadata][payload]`` at ``buf[start:end]``; with ``verify`` a CRC
    mismatch raises `ChecksumMismatch`. A leading broker-entry-metadata section is skipped."""
    pos = start
    if end - pos >= 2 and buf[pos] == 0x0E and buf[pos + 1] == 0x02:
        if end - pos < 6:
            raise FrameError("truncated broker entry metadata")
        size = _unpack_u32(buf, pos + 2)[0]
        pos += 6 + size
        if pos > end:
            raise FrameError("broker entry metadata runs past the end of the frame")
    checksum = None
    if end - pos >= 2 and buf[pos] == 0x0E and buf[pos + 1] == 0x01:
        if end - pos < 6:
            raise FrameError("truncated checksum")
        checksum = _unpack_u32(buf, pos + 2)[0]
        pos += 6
    if end - pos < 4:
        raise FrameError("payload section without a metadata size")
    meta_size = _unpack_u32(buf, pos)[0]
    if meta_size > end - pos - 4:
        raise FrameError(f"metadata of {meta_size} bytes runs past the end of the frame")
    wire = buf[pos:end]
    if verify and checksum is not None:
        actual = google_crc32c.value(wire)
        if actual != checksum:
            raise ChecksumMismatch(f"checksum mismatch: frame says {checksum:#010x}, content gives {actual:#010x}")
    return PayloadSection(wire, 4 + meta_size, checksum)


def simple_frame(command: bytes) -> bytes:
    """A frame of one command without payload."""
    n = len(command)
    return _pack_two(n + 4, n) + command


def payload_frame(command: bytes, wire: bytes, checksum: int | None = None) -> bytes:
    """A frame of a command followed by a checksummed payload section (``wire`` = metadata size, metadata,
    payload); ``checksum`` saves recomputing a CRC32C that is already known."""
    if checksum is None:
        checksum = google_crc32c.value(wire)
    n = len(command)
    return b"".join((_pack_two(n + 10 + len(wire), n), command, MAGIC_CRC32C_BYTES, _pack_u32(checksum), wire))


def wire_section(metadata: bytes, payload: bytes) -> bytes:
    """``[metadata size][metadata][payload]``."""
    return _pack_u32(len(metadata)) + metadata + payload


__all__ = [
    "ChecksumMismatch",
    "FRAME_PADDING",
    "Frame",
    "FrameDecoder",
    "FrameError",
    "FrameTooLarge",
    "PayloadSection",
    "ProtocolViolation",
    "payload_frame",
    "read_payload_section",
    "simple_frame",
    "wire_section",
]
