"""Read pulsar-admin JSON as engineers paste it, and fail with a message naming the place when it is not JSON.

Models no Pulsar class: it reads what Pulsar's Jackson ``ObjectMapper`` writes for ``pulsar-admin topics
stats`` / ``stats-internal`` (`TopicStatsImpl` / `PersistentTopicInternalStats`) after it has been through a terminal,
a chat tool or a web
page. Accepted beyond strict JSON, each because pasted broker output really carries it:

* trailing commas before ``}`` or ``]`` (left behind when someone trims fields out of a paste);
* a byte-order mark, and non-breaking or other Unicode spaces between tokens (copies from web pages);
* raw line breaks and tabs inside strings (terminals wrap long lines such as a 10,000-range
  ``individuallyDeletedMessages``; apache/pulsar#23908 shows one split inside a number);
* ``NaN``, ``Infinity``, ``-Infinity`` as bare numbers (what Jackson writes for doubles when
  ``QUOTE_NON_NUMERIC_NUMBERS`` is off; the quoted form is handled by the typed readers);
* ``‥`` (U+2025) wherever it appears: it is just a character to JSON, and the range parser accepts it.

Not accepted, with a hint in the message: comments (Jackson never writes them, so a ``//`` means a
hand annotation), single or typographic quotes, a shell prompt or a second document around the JSON, a
copy cut off early. Duplicate keys keep the last value, as Jackson does by default.

Files are read as UTF-8 (with or without BOM) or, when they start with a UTF-16 BOM, as UTF-16: that is
what PowerShell's ``>`` writes. Every failure is a `StatsFormatError` naming the source, the line and
column (1-based, in characters), the JSON path when known, what was expected and what was found.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PathStep = tuple[str, "str | int"]  # ("field", name) | ("key", map key) | ("index", i)


class StatsFormatError(ValueError):
    """Pulsar stats text or JSON that cannot be read; ``str(e)`` says where, what was expected, what was found."""

    def __init__(
        self,
        source: str,
        what: str,
        *,
        line: int | None = None,
        column: int | None = None,
        path: str | None = None,
    ) -> None:
        self.source = source
        self.line = line
        self.column = column
        self.path = path
        self.what = what
        where = source
        if line is not None:
            where += f", line {line}, column {column}"
        super().__init__(f"{where}: {path}: {what}" if path else f"{where}: {what}")


def format_path(steps: tuple[PathStep, ...]) -> str:
    """``cursors["my-sub"].markDeletePosition``: fields with dots, map keys quoted in brackets, indexes bare."""
    out: list[str] = []
    for kind, value in steps:
        if kind == "field":
            out.append(f".{value}" if out else str(value))
        elif kind == "key":
            out.append(f"[{json.dumps(value, ensure_ascii=False)}]")
        else:
            out.append(f"[{value}]")
    return "".join(out) or "(the document)"


# One pass over the text: keep strings as they are, turn a trailing comma or an exotic space into a
# plain space. Every replacement is one character for one character, so offsets (and so the line and
# column of any later error) stay those of the original text.
_EXOTIC_SPACE = "\ufeff\u00a0\u1680" + "".join(map(chr, range(0x2000, 0x200C))) + "\u202f\u205f\u3000"
_CLEAN = re.compile(
    rf'"[^"\\]*(?:\\.[^"\\]*)*"|,(?=[\s{_EXOTIC_SPACE}]*[}}\]])|[{_EXOTIC_SPACE}]',
    re.DOTALL,
)
_DECODER = json.JSONDecoder(strict=False)


def _clean(text: str) -> str:
    return _CLEAN.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else " ", text)


@dataclass(frozen=True)
class JsonSource:
    """Where a document came from: its name for messages and its text, to find a JSON path's line again."""

    name: str
    text: str | None = None

    def position_of(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        text = self.text or ""
        line = text.count("\n", 0, offset) + 1
        return line, offset - (text.rfind("\n", 0, offset) + 1) + 1

    def locate(self, steps: tuple[PathStep, ...]) -> tuple[int, int] | None:
        """The (line, column) where the value at ``steps`` starts, or None (no text, or the path is absent)."""
        if self.text is None:
            return None
        offset = _locate(_clean(self.text), steps)
        return None if offset is None else self.position_of(offset)

    def error(self, what: str, steps: tuple[PathStep, ...] = ()) -> StatsFormatError:
        """A `StatsFormatError` for the value at ``steps``, with its line and column when they can be found."""
        where = self.locate(steps) if steps else None
        line, column = where if where else (None, None)
        return StatsFormatError(self.name, what, line=line, column=column, path=format_path(steps) if steps else None)


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _locate(text: str, steps: tuple[PathStep, ...]) -> int | None:
    """Offset of the value at ``steps`` in valid (cleaned) JSON; the last duplicate key wins, as in parsing."""
    i = _skip_ws(text, 0)
    for kind, want in steps:
        if i >= len(text):
            return None
        if kind == "index":
            if text[i] != "[":
                return None
            i = _skip_ws(text, i + 1)
            for _ in range(int(want)):
                if text[i] == "]":
                    return None
                _, i = _DECODER.raw_decode(text, i)
                i = _skip_ws(text, i)
                if text[i] != ",":
                    return None
                i = _skip_ws(text, i + 1)
            if text[i] == "]":
                return None
            continue
        if text[i] != "{":
            return None
        i = _skip_ws(text, i + 1)
        found: int | None = None
        while i < len(text) and text[i] != "}":
            key, i = _DECODER.raw_decode(text, i)
            i = _skip_ws(text, _skip_ws(text, i) + 1)  # past ':'
            if key == want:
                found = i
            _, i = _DECODER.raw_decode(text, i)
            i = _skip_ws(text, i)
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
        if found is None:
            return None
        i = found
    return i


_EXPLAIN = {
    "Expecting value": "expected a JSON value",
    "Expecting property name enclosed in double quotes": "expected a field name in double quotes",
    "Expecting ',' delimiter": "expected ',' or the closing bracket",
    "Expecting ':' delimiter": "expected ':' after the field name",
    "Unterminated string starting at": "a string starts here but never ends",
    "Invalid \\escape": "invalid escape sequence in a string",
    "Invalid \\uXXXX escape": "invalid \\uXXXX escape in a string",
    "Extra data": "expected the end of the JSON document",
}


def _found(text: str, pos: int) -> str:
    if pos >= len(text.rstrip()):
        return "the end of the text"
    snippet = text[pos : pos + 12].split("\n")[0]
    return f"{snippet!r}"


def _hint(text: str, pos: int, msg: str) -> str:
    rest = text[pos:]
    if msg.startswith("Unterminated"):
        return " (no closing quote before the end of the text: was the copy cut off?)"
    if pos >= len(text.rstrip()):
        return " (the text ends early: was the copy cut off?)"
    if rest.startswith(("//", "/*", "#")):
        return " (comments are not JSON and pulsar-admin never prints them: delete the annotation)"
    if rest[0] in "\u201c\u201d\u2018\u2019":
        return ' (a typographic quote: the text went through a word processor or chat tool; use plain " quotes)'
    if rest[0] == "'":
        return " (JSON strings and field names use double quotes)"
    if rest.startswith(("...", "\u2026")):
        return " (an ellipsis: the output looks shortened; paste the whole output)"
    if msg == "Extra data":
        return " (a second value starts here: paste one pulsar-admin output at a time, without the shell prompt)"
    if text[:pos].strip() == "" and rest[0] not in "{[":
        return " (the text should start with '{': remove any shell prompt or command line before the JSON)"
    return ""


def loads(text: str, *, source: str = "<text>") -> Any:
    """Parse pasted pulsar-admin JSON leniently (see the module docstring); raise `StatsFormatError`."""
    if not isinstance(text, str):
        raise StatsFormatError(source, f"expected JSON text (str), got {type(text).__name__}")
    if not text.strip(" \t\r\n" + _EXOTIC_SPACE):
        raise StatsFormatError(source, "expected a JSON document, found nothing (the text is empty)")
    try:
        return _DECODER.decode(text)  # most pastes are plain JSON: no second pass needed
    except json.JSONDecodeError:
        pass
    except RecursionError:
        raise StatsFormatError(source, "the JSON nests too deeply to be pulsar-admin output") from None
    cleaned = _clean(text)
    try:
        return _DECODER.decode(cleaned)
    except json.JSONDecodeError as e:
        where = JsonSource(source, text).position_of(e.pos)
        what = _EXPLAIN.get(e.msg, e.msg[:1].lower() + e.msg[1:])
        found = "" if e.msg.startswith("Unterminated") else f", found {_found(cleaned, e.pos)}"
        raise StatsFormatError(
            source, what + found + _hint(cleaned, e.pos, e.msg), line=where[0], column=where[1]
        ) from None
    except RecursionError:
        raise StatsFormatError(source, "the JSON nests too deeply to be pulsar-admin output") from None


def decode_bytes(data: bytes, *, source: str) -> str:
    """UTF-8 (BOM optional) or, after a UTF-16 BOM, UTF-16 text; a clear error otherwise."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as e:
            raise StatsFormatError(
                source, f"expected UTF-16 text after the UTF-16 byte-order mark: {e.reason} at byte {e.start}"
            ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise StatsFormatError(
            source, f"expected UTF-8 text, found byte 0x{data[e.start]:02x} at byte offset {e.start}"
        ) from None


def read(data: Any, *, source: str | None = None) -> tuple[Any, JsonSource]:
    """JSON text (parsed with `loads`) or an already parsed value (e.g. ``lab.admin.topics.stats(t)``);
    returns the value and its `JsonSource`, named ``source`` or ``<text>`` / ``<dict>``."""
    if isinstance(data, str):
        src = JsonSource(source or "<text>", data)
        return loads(data, source=src.name), src
    return data, JsonSource(source or "<dict>")


def load(path: str | Path) -> tuple[Any, JsonSource]:
    """Read and parse a file; returns the value and its `JsonSource` (for located errors further on)."""
    path = Path(path)
    text = decode_bytes(path.read_bytes(), source=str(path))
    return loads(text, source=str(path)), JsonSource(str(path), text)
