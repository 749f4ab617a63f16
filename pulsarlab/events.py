"""The append-only event log: typed events in a compact columnar store.

Models no Pulsar class; it is the lab's record of every state change (docs/architecture.md).
Each event type declares up to six fields; ints, bools and interned strings (or small JSON payloads)
are stored in fixed int64 columns, so an event costs 58 bytes whatever its type. Views, explanations,
time travel and Spark analytics read the log; nothing in it is ever rewritten.

A log may keep only a window of its newest events in memory (`EventLog.set_window`, ``pulsarlab serve
--event-window``): whole chunks of the oldest events are dropped once more than the window is held. Sequence numbers
go on counting (``len(log)`` is every event appended), ``first_seq`` is the oldest one kept, and reading an older one
raises IndexError; iteration, ``since``, ``of_kind``, ``digest`` and the exports cover the kept events. Strings
go with the events: a text only the dropped events used (a redelivery request's ids, a chunked message's uuid) is
dropped once such texts outnumber the ones kept, and its id is reused; an id `EventLog.intern` handed out stays
(its caller may keep it).
"""

from __future__ import annotations

import hashlib
import json
import operator
import struct
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import compress
from typing import TYPE_CHECKING, Any, Callable, Iterator

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


MAX_FIELDS = 6
_NONE = -(2**63)  # stored for a missing int / str / json field
_ROW = 2 + MAX_FIELDS  # ints per pending row: time, type code, the field columns
_FLUSH_EVENTS = 4096  # pending events moved into the columns at once
_BYTES_PER_EVENT = array("q").itemsize * (1 + MAX_FIELDS) + array("H").itemsize  # time, fields, type code
_INT_MAX = 2**63 - 1
_check_row = struct.Struct(f"{_ROW}q").pack  # raises for a value that is not an int or does not fit int64


class EventValueError(TypeError, ValueError):
    """A field value the log cannot store (not an int, or outside the int64 columns): raised where the event is
    appended, which stores nothing, so the log stays readable and the caller learns which event and value it was."""

    def __init__(self, et: "EventType", time: object, detail: str) -> None:
        super().__init__(f"event {et.name} at t={time!r}: {detail}")
        self.kind = et.name


@dataclass(frozen=True)
class EventType:
    """One kind of event: its name, its typed fields and a one-line explanation template.

    ``fields`` is a tuple of ``"name:type"`` with type one of int, bool, str, json. ``template`` is
    ``str.format`` text over the fields; ``rule`` names the Pulsar rule it follows (shown to learners).
    ``explainer``, when given, makes the text from the field values instead (for an event whose explanation
    depends on them).
    """

    code: int
    name: str
    fields: tuple[tuple[str, str], ...]
    template: str
    rule: str = ""
    explainer: Callable[[dict[str, Any]], str] | None = field(default=None, compare=False)

    def explain(self, values: dict[str, Any]) -> str:
        try:
            text = self.explainer(values) if self.explainer is not None else self.template.format(**values)
        except (KeyError, IndexError, ValueError):
            text = f"{self.name} {values}"
        return f"{text} ({self.rule})" if self.rule else text


_TYPES: dict[str, EventType] = {}
_BY_CODE: list[EventType] = []
_FIELD_NAMES: list[frozenset[str]] = []  # by code
# by code, then by the number of values given: what a row of that many values is padded with (None for a
# missing declared field, 0 for the unused columns)
_PADS: list[tuple[tuple[int, ...], ...]] = []
_N_FIELDS: list[int] = []  # by code: the number of declared fields
_TEXT_FIELDS: list[tuple[bool, ...]] = []  # by code: which of the MAX_FIELDS columns hold string ids (str, json)
_PRUNE_MIN = 4096  # unpinned strings a windowed log holds before it looks for ones no kept event uses
_SMALL_FLUSH = 64  # rows fixed up one by one below this many (a numpy pass costs more for a few rows)


def _pads(n_fields: int) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(_NONE if i < n_fields else 0 for i in range(given, MAX_FIELDS)) for given in range(MAX_FIELDS + 1)
    )


def _zero_undeclared(flat: array, kinds: array) -> None:
    """Set to 0 the None (``_NONE``) values `EventLog.append_row` put in the columns an event type does not
    declare: the stored form `EventLog.append` gives (0 in those columns), whichever way a row was appended.
    One by one, for a few rows (`_split_rows` does it for many)."""
    n_fields = _N_FIELDS
    for r in range(len(kinds)):
        base = r * _ROW + 2
        for j in range(base + n_fields[kinds[r]], base + MAX_FIELDS):
            if flat[j] == _NONE:
                flat[j] = 0


def _split_rows(flat: array) -> tuple[array, array, list[array]]:
    """Many flat rows (`_ROW` ints each) as the stored columns: times, kind codes, the field columns with the
    undeclared ones zeroed as `_zero_undeclared` does (in numpy: a pass per column, not per value)."""
    import numpy as np  # loaded on first use: `pulsarlab serve` starts without it

    view = np.frombuffer(flat, dtype=np.int64).reshape(len(flat) // _ROW, _ROW)
    codes = view[:, 1]
    declared = np.asarray(_N_FIELDS, dtype=np.int64)[codes]
    for i in range(MAX_FIELDS):
        col = view[:, 2 + i]
        col[(declared <= i) & (col == _NONE)] = 0
    times = array("q", view[:, 0].tobytes())
    kinds = array("H", codes.astype(np.uint16).tobytes())
    return times, kinds, [array("q", view[:, 2 + i].tobytes()) for i in range(MAX_FIELDS)]


def event_type(
    name: str,
    fields: str = "",
    template: str = "",
    rule: str = "",
    explainer: Callable[[dict[str, Any]], str] | None = None,
) -> EventType:
    """Declare (or fetch, if identical) an event type. Modules declare theirs at import time."""
    parsed: list[tuple[str, str]] = []
    for spec in fields.split():
        fname, _, ftype = spec.partition(":")
        ftype = ftype or "int"
        if ftype not in ("int", "bool", "str", "json"):
            raise ValueError(f"event {name}: field {fname} has unknown type {ftype!r}")
        parsed.append((fname, ftype))
    if len(parsed) > MAX_FIELDS:
        raise ValueError(f"event {name} declares {len(parsed)} fields; at most {MAX_FIELDS}")
    existing = _TYPES.get(name)
    if existing is not None:
        if existing.fields != tuple(parsed):
            raise ValueError(f"event type {name} is already declared with other fields")
        return existing
    et = EventType(len(_BY_CODE), name, tuple(parsed), template or name, rule, explainer)
    _TYPES[name] = et
    _BY_CODE.append(et)
    _FIELD_NAMES.append(frozenset(f for f, _ in et.fields))
    _PADS.append(_pads(len(et.fields)))
    _N_FIELDS.append(len(et.fields))
    text = [ftype in ("str", "json") for _, ftype in et.fields]
    _TEXT_FIELDS.append(tuple(text + [False] * (MAX_FIELDS - len(text))))
    return et


def get_event_type(name: str) -> EventType:
    try:
        return _TYPES[name]
    except KeyError:
        raise KeyError(f"no event type {name!r}; declared: {', '.join(sorted(_TYPES))}") from None


@dataclass(frozen=True)
class Event:
    """A decoded event: sequence number, virtual time, type name and field values."""

    seq: int
    time: int
    kind: str
    fields: dict[str, Any]

    def __getattr__(self, item: str) -> Any:
        try:
            return self.fields[item]
        except KeyError:
            raise AttributeError(item) from None

    def explain(self) -> str:
        return _TYPES[self.kind].explain(self.fields)


class EventLog:
    """Append-only columnar log of typed events.

    ``enabled=False`` keeps the API but stores nothing (for bulk runs that need no history).
    """

    def __init__(self, enabled: bool = True, window: int | None = None) -> None:
        self.enabled = enabled
        self.window: int | None = None  # the most events kept in memory (None: all), see set_window
        # The columns, in chunks of about _FLUSH_EVENTS events: each chunk is (times, kinds, field column 0..5),
        # parallel arrays; ``_chunk_starts`` holds each chunk's first sequence number. Chunks are never copied again
        # once full (one growing array per column was copied whole every few flushes, array.extend growing by 1/16).
        self._chunks: list[tuple[array, ...]] = []
        self._chunk_starts: list[int] = []
        self._stored = 0  # events in the chunks
        self._strings: list[str] = []
        self._string_ids: dict[str, int] = {}
        self._pinned: set[int] = set()  # string ids `intern` handed out: they stay while the log lives
        self._free: list[int] = []  # ids of strings a window dropped, reused
        self._prune_at = _PRUNE_MIN  # unpinned strings held before a window drop looks for unused ones
        self._listeners: list[Callable[[Event], None]] = []
        # Rows appended but not yet moved into the columns, flat: ``_ROW`` ints per event (time, type code,
        # the six field columns). Extending a list of ints is much cheaper than nine array appends and keeps
        # nothing the garbage collector tracks; `_flush` moves the rows in bulk (every _FLUSH_EVENTS events and
        # before any read), so the stored form, the sizes and the digest are what per-event appends give.
        self._pending: list[int] = []
        self._count = 0  # events appended: stored + pending
        # the sequence number whose append flushes the pending rows; -1 (every append) while listeners wait
        self._flush_at = _FLUSH_EVENTS - 1
        if window is not None:
            self.set_window(window)

    # -- writing ------------------------------------------------------------------------------
    def append(self, kind: str | EventType, time: int, **values: Any) -> int:
        """Record an event; returns its sequence number (-1 when the log is disabled)."""
        et = kind if isinstance(kind, EventType) else get_event_type(kind)
        if not self.enabled:
            return -1
        if values and not _FIELD_NAMES[et.code].issuperset(values):
            unknown = set(values) - _FIELD_NAMES[et.code]
            raise ValueError(f"event {et.name} has no field(s) {sorted(unknown)}")
        encode = self._encode
        try:
            row = [encode(values.get(fname), ftype) for fname, ftype in et.fields]
        except (TypeError, ValueError, OverflowError) as e:
            raise EventValueError(et, time, str(e)) from None
        try:
            _check_row(time, et.code, *row, *_PADS[et.code][len(row)])
        except (struct.error, TypeError) as e:
            raise EventValueError(et, time, f"time {time!r} does not fit the log's int64 column ({e})") from None
        pending = self._pending
        pending.append(time if type(time) is int else operator.index(time))
        pending.append(et.code)
        pending += row
        pending += _PADS[et.code][len(row)]
        seq = self._count
        self._count = seq + 1
        if seq >= self._flush_at:
            return self._flush_and_notify()
        return seq

    def append_row(
        self,
        et: EventType,
        time: int,
        v0: int = _NONE,
        v1: int = _NONE,
        v2: int = _NONE,
        v3: int = _NONE,
        v4: int = _NONE,
        v5: int = _NONE,
    ) -> int:
        """Fast path for hot events: the values are the already-encoded ints of ``et``'s fields, in order.

        Ints and bools pass as ints, str/json fields as ids from ``intern()``; missing trailing fields are stored
        as None (so is the value -2**63, the log's None). Returns the sequence number (-1 when the log is
        disabled). A value that is not an int or does not fit int64 (a uint64 id read without Java's sign, say)
        raises `EventValueError` here, naming the event, and nothing is stored: a bad row never reaches the
        buffer, where it would fail a later, unrelated append or read.
        """
        # one fixed-size row per call (a call with fixed parameters is cheaper than one with *values, and so is
        # one extend); the columns an event type does not declare hold 0, set when the rows are flushed
        if not self.enabled:
            return -1
        try:
            _check_row(time, et.code, v0, v1, v2, v3, v4, v5)
        except (struct.error, TypeError) as e:
            values = [v for v in (v0, v1, v2, v3, v4, v5) if v is not _NONE]
            raise EventValueError(
                et, time, f"field values {values!r} do not fit the log's int64 columns ({e})"
            ) from None
        self._pending.extend((time, et.code, v0, v1, v2, v3, v4, v5))
        seq = self._count
        self._count = seq + 1
        if seq < self._flush_at:
            return seq
        return self._flush_and_notify()

    def _flush_and_notify(self) -> int:
        self._flush()
        seq = self._stored - 1
        if self._listeners:
            ev = self[seq]
            for listener in list(self._listeners):
                listener(ev)
        return seq

    def _flush(self) -> None:
        """Move the pending rows into the columns."""
        rows = self._pending
        if not rows:
            return
        self._flush_at = self._next_flush_at()
        try:
            # struct converts the ints in one C loop (array(..., list) parses each item)
            flat = array("q", struct.pack(f"{len(rows)}q", *rows))
            if len(rows) < _SMALL_FLUSH * _ROW:
                kinds = array("H", struct.pack(f"{len(rows) // _ROW}H", *rows[1::_ROW]))
        except (struct.error, TypeError, OverflowError, ValueError):
            self._flush_slowly()
            return
        rows.clear()
        if len(flat) >= _SMALL_FLUSH * _ROW:
            self._store(*_split_rows(flat))
            return
        _zero_undeclared(flat, kinds)
        self._store(flat[0::_ROW], kinds, [flat[i::_ROW] for i in range(2, _ROW)])

    def _store(self, times: array, kinds: array, cols: list[array]) -> None:
        """Append equal-length arrays (owned by the log from now on) to the columns."""
        chunks = self._chunks
        if chunks and len(chunks[-1][0]) < _FLUSH_EVENTS:  # the last chunk is not full: it grows
            for col, values in zip(chunks[-1], (times, kinds, *cols)):
                col.extend(values)
        else:
            chunks.append((times, kinds, *cols))
            self._chunk_starts.append(self._stored)
        self._stored += len(times)
        if self.window is not None:
            self._drop_outside_window()

    def set_window(self, events: int | None) -> None:
        """Keep about the newest ``events`` events in memory (at least that many, dropped a chunk of
        `_FLUSH_EVENTS` at a time); None keeps everything from now on."""
        if events is not None and (type(events) is not int or events < 1):
            raise ValueError(f"the event window is a number of events >= 1 (or None), got {events!r}")
        self.window = events
        if events is not None:
            self._drop_outside_window()

    def _drop_outside_window(self) -> None:
        chunks, starts, window = self._chunks, self._chunk_starts, self.window
        assert window is not None
        drop = 0
        while drop < len(chunks) - 1 and self._stored - starts[drop + 1] >= window:
            drop += 1
        if drop:
            del chunks[:drop], starts[:drop]
            if len(self._string_ids) - len(self._pinned) > self._prune_at:
                self._drop_unused_strings()

    def _drop_unused_strings(self) -> None:
        """Forget the strings no kept event uses and no caller of `intern` holds; their ids are reused."""
        used: set[int] = set()
        for chunk in self._chunks:
            kinds = chunk[1]
            codes = set(kinds)
            for j in range(MAX_FIELDS):
                texts = sum(_TEXT_FIELDS[c][j] for c in codes)
                if texts == len(codes):  # every event of the chunk has a text there
                    used.update(chunk[2 + j])
                elif texts:
                    used.update(compress(chunk[2 + j], [_TEXT_FIELDS[c][j] for c in kinds]))
        strings, ids, free = self._strings, self._string_ids, self._free
        unused = set(range(len(strings)))  # set operations on ints: no tuple per string for the collector
        unused -= used
        unused -= self._pinned
        unused.difference_update(free)
        for sid in unused:
            del ids[strings[sid]]
            strings[sid] = ""
        free.extend(unused)
        self._prune_at = max(_PRUNE_MIN, 2 * (len(ids) - len(self._pinned)))

    @property
    def first_seq(self) -> int:
        """The sequence number of the oldest event kept in memory (0 unless a window dropped older ones)."""
        if self._pending:
            self._flush()
        return self._chunk_starts[0] if self._chunk_starts else self._stored

    def _next_flush_at(self) -> int:
        return -1 if self._listeners else self._count + _FLUSH_EVENTS - 1

    def _flush_slowly(self) -> None:
        """Row by row: keep the good rows, drop malformed ones and raise for the first (a caller's bug)."""
        rows = self._pending[:]
        self._pending.clear()
        error: Exception | None = None
        for i in range(0, len(rows), _ROW):
            row = rows[i : i + _ROW]
            n_fields = _N_FIELDS[row[1]] if type(row[1]) is int and 0 <= row[1] < len(_N_FIELDS) else MAX_FIELDS
            for j in range(2 + n_fields, _ROW):  # append_row's default for a column the type does not declare
                if row[j] == _NONE:
                    row[j] = 0
            try:
                t, k, cols = array("q", row[:1]), array("H", row[1:2]), [array("q", [v]) for v in row[2:]]
            except (TypeError, OverflowError, ValueError) as e:
                if error is None:
                    et = _BY_CODE[row[1]]
                    error = TypeError(f"event {et.name} at t={row[0]!r}: bad field values {row[2:]!r} ({e})")
                continue
            self._store(t, k, cols)
        self._count = self._stored
        self._flush_at = self._next_flush_at()
        if error is not None:
            raise error

    def intern(self, text: str) -> int:
        """The id a str field stores for ``text`` (for ``append_row``), kept for as long as the log lives: a
        caller may hold it for later events (a name, a reason)."""
        sid = self._encode(text, "str")
        self._pinned.add(sid)
        return sid

    def text_id(self, text: str) -> int:
        """The id of ``text`` for the event about to be appended with ``append_row`` (a per-message value: a
        redelivery request's ids, a chunked message's uuid), dropped with the events that use it (see
        `set_window`); do not keep it for later events."""
        return self._encode(text, "str")

    def _encode(self, value: Any, ftype: str) -> int:
        if value is None:
            return _NONE
        if ftype == "int":
            n = int(value)
            if not _NONE < n <= _INT_MAX:
                raise OverflowError(f"int value {n} is outside the log's int64 range (-2**63 stands for None)")
            return n
        if ftype == "bool":
            return 1 if value else 0
        text = value if ftype == "str" else json.dumps(value, separators=(",", ":"), sort_keys=True)
        if ftype == "str" and not isinstance(value, str):
            text = str(value)
        sid = self._string_ids.get(text)
        if sid is None:
            if self._free:
                sid = self._free.pop()
                self._strings[sid] = text
            else:
                sid = len(self._strings)
                self._strings.append(text)
            self._string_ids[text] = sid
        return sid

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``listener(event)`` on every append; returns an unsubscribe function."""
        self._listeners.append(listener)
        self._flush_at = -1
        return lambda: self._unsubscribe(listener)

    def _unsubscribe(self, listener: Callable[[Event], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)
        self._flush_at = self._next_flush_at()

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._count

    def __getitem__(self, seq: int) -> Event:
        if self._pending:
            self._flush()
        if seq < 0:
            seq += len(self)
        if not 0 <= seq < len(self):
            raise IndexError(f"event {seq} is outside the log (0..{len(self) - 1})")
        if self._chunk_starts and seq < self._chunk_starts[0]:
            raise IndexError(
                f"event {seq} is older than the log's window (events {self._chunk_starts[0]}..{len(self) - 1} are kept)"
            )
        k = bisect_right(self._chunk_starts, seq) - 1
        chunk = self._chunks[k]
        i = seq - self._chunk_starts[k]
        et = _BY_CODE[chunk[1][i]]
        values = {}
        for j, (fname, ftype) in enumerate(et.fields):
            values[fname] = self._decode(chunk[2 + j][i], ftype)
        return Event(seq, chunk[0][i], et.name, values)

    def _decode(self, raw: int, ftype: str) -> Any:
        if raw == _NONE:
            return None
        if ftype == "int":
            return raw
        if ftype == "bool":
            return bool(raw)
        text = self._strings[raw]
        return text if ftype == "str" else json.loads(text)

    def __iter__(self) -> Iterator[Event]:
        for i in range(self.first_seq, len(self)):
            yield self[i]

    def since(self, seq: int) -> list[Event]:
        """Events with sequence number >= seq (of those the window keeps)."""
        return [self[i] for i in range(max(seq, self.first_seq), len(self))]

    def of_kind(self, *kinds: str) -> list[Event]:
        codes = {get_event_type(k).code for k in kinds}
        self._flush()
        return [
            self[start + i]
            for start, chunk in zip(self._chunk_starts, self._chunks)
            for i, c in enumerate(chunk[1])
            if c in codes
        ]

    def explain(self, seq: int) -> str:
        return self[seq].explain()

    # -- sizes, identity, export --------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        """Bytes held by the columns (strings excluded: they are interned once)."""
        first = self.first_seq  # flushes the pending rows first
        return (self._stored - first) * _BYTES_PER_EVENT

    def digest(self) -> str:
        """SHA-256 over the log's content: equal for the same scenario and seed on every machine."""
        self._flush()
        h = hashlib.sha256()
        for column in range(_ROW):  # column by column, as one array per column would hash
            for chunk in self._chunks:
                h.update(chunk[column])
        for s in self._strings:
            h.update(s.encode("utf-8") + b"\0")
        return h.hexdigest()

    def to_records(self) -> list[dict[str, Any]]:
        return [{"seq": e.seq, "time": e.time, "kind": e.kind, **e.fields} for e in self]

    def to_pandas(self):
        """A pandas DataFrame, one row per event, one column per field name (needs pandas)."""
        import pandas as pd

        df = pd.DataFrame.from_records(self.to_records())
        if df.empty:
            df = pd.DataFrame(columns=["seq", "time", "kind"])
        return df

    def to_arrow(self):
        import pyarrow as pa

        return pa.Table.from_pandas(self.to_pandas(), preserve_index=False)

    def to_parquet(self, path: str) -> None:
        import pyarrow.parquet as pq

        pq.write_table(self.to_arrow(), path)

    def columns(self) -> "LogColumns":
        """The stored columns as numpy arrays (copies; no per-event Python object), for bulk export and analysis."""
        import numpy as np

        self._flush()

        def joined(column: int, dtype: "type[np.generic]") -> "np.ndarray":
            parts = [np.frombuffer(chunk[column], dtype=dtype) for chunk in self._chunks]
            return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)

        return LogColumns(
            time=joined(0, np.int64),
            kind=joined(1, np.uint16),
            fields=tuple(joined(2 + j, np.int64) for j in range(MAX_FIELDS)),
            kind_names=tuple(et.name for et in _BY_CODE),
            strings=tuple(self._strings),
        )


NONE_VALUE = _NONE
# What `EventLog.append_row` stores in a column the event type does not declare. Passing it for those columns gives
# the same stored row as leaving them to the None default, whose 64-bit value costs more to convert at a flush.
UNDECLARED = 0


@dataclass(frozen=True)
class LogColumns:
    """An event log as parallel numpy arrays: ``time`` (int64 ms), ``kind`` (uint16 code), ``fields`` (six int64
    columns: ints and bools as stored, str/json fields as ids into ``strings``, ``NONE_VALUE`` for a missing value).

    ``kind_names[code]`` names a kind code; codes are this process's declaration order, so they are only meaningful
    beside this ``kind_names``.
    """

    time: "np.ndarray"
    kind: "np.ndarray"
    fields: "tuple[np.ndarray, ...]"
    kind_names: tuple[str, ...]
    strings: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.time)

    def code(self, name: str) -> int:
        """The kind code of event type ``name`` (-1 if no such type is declared in this process)."""
        try:
            return self.kind_names.index(name)
        except ValueError:
            return -1

    def string_id(self, text: str) -> int:
        """The id a str field stores for ``text`` in this log (-1 if the log never interned it)."""
        try:
            return self.strings.index(text)
        except ValueError:
            return -1
