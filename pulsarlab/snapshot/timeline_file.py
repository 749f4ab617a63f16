"""A recorded timeline as a file: what `Recorder.save` writes and `load_timeline` reads back for the player.

Models no Pulsar class. The format is gzip-compressed JSON lines (``.plt.jsonl.gz`` by convention), chosen over
Parquet because a snapshot is a deep tree (topics > subscriptions > consumers > trackers) that JSON holds as it is
while Parquet would need a schema per nesting level; because ``zcat FILE | head`` or any JSON tool reads it and
two runs diff line by line; and because it needs nothing beyond the standard library (the model may import only
mmh3, sortedcontainers and numpy). Every frame's snapshot repeats most of the previous one, which gzip removes.

Line 1, the header (a JSON object)::

    {"format": "pulsarlab-timeline", "version": 1, "pulsarlab": "0.1.0", "frames": N,
     "profile": "4.0", "inputs": {"seed": 0, "start_ms": 0, "broker_config": {...},
                                   "recorder": {"every": 1 | [kinds], "topics": null | [...], "history": true},
                                   ...whatever the caller passed as ``inputs=``}}

Lines 2..N+1, one per frame, in order::

    {"index": i, "event_index": k, "explanation": "...",
     "event": null | {"seq": k, "time": t, "kind": "...", "fields": {...}},
     "snapshot": {LabSnapshot.to_dict() without "history" and "redelivery.steps"},
     "history": null | {"end": n, "new": [samples appended since the previous frame]},
     "steps": null | {"end": n, "new": [redelivery steps appended since the previous frame]}}

A snapshot's ``history`` (the dispatch samples) and redelivery ``steps`` are prefixes of one append-only list the
recorder shares across frames; the file stores each item once, at the first frame that sees it, so its size grows
with the run and not with its square. Loading rebuilds the frozen snapshot dataclasses from their type hints, so a
loaded frame's ``snapshot.to_json()`` and ``explanation`` are those of the recorded frame, character for character.

Compatibility: a reader reads every version up to `FORMAT_VERSION` and refuses a newer one by name; a version
adds fields, and fields a reader does not know are rejected (a snapshot dataclass gets no unknown keyword).
Writing goes to a temporary file beside the target, renamed over it when complete: a reader never sees half a file.

Simplifies: the live objects behind a snapshot (the lab, its clients) are not stored, only their pictures; the
``inputs`` are what is needed to rebuild and check the lab (profile, seed, broker settings), not the script that
drove it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import tempfile
import types
import typing
import zlib
from dataclasses import is_dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Sequence, Union

from pulsarlab.events import Event
from pulsarlab.snapshot.base import History, Sample, frame_at, jsonable
from pulsarlab.snapshot.frame import Frame
from pulsarlab.snapshot.lab import LabSnapshot
from pulsarlab.snapshot.redelivery import LifeStep, RedeliverySnap
from pulsarlab.version import __version__

FORMAT = "pulsarlab-timeline"
FORMAT_VERSION = 1
SUFFIX = ".plt.jsonl.gz"


class TimelineFileError(ValueError):
    """A timeline file that cannot be read: not a timeline, corrupt or truncated, or from a newer pulsarlab."""


class SavedTimeline(Sequence[Frame]):
    """A timeline loaded from a file: ``len()``, ``[i]``, ``header``, ``inputs``; what the player steps through."""

    def __init__(self, path: Path, header: dict[str, Any], frames: list[Frame]) -> None:
        self.path = path
        self.header = header
        self._frames = frames

    @property
    def inputs(self) -> dict[str, Any]:
        return self.header["inputs"]

    @property
    def profile(self) -> str:
        return self.header["profile"]

    def __len__(self) -> int:
        return len(self._frames)

    def __getitem__(self, i):  # type: ignore[override]
        return frame_at(self._frames, i, "timeline")

    def __iter__(self) -> Iterator[Frame]:
        return iter(self._frames)

    def kinds(self) -> list[str]:
        """Event kinds recorded, in order of first appearance."""
        seen: dict[str, None] = {}
        for f in self._frames:
            if f.kind is not None:
                seen.setdefault(f.kind, None)
        return list(seen)

    def __repr__(self) -> str:
        return f"<SavedTimeline {self.path.name}: {len(self._frames)} frames, profile {self.profile}>"


# --- writing -----------------------------------------------------------------------------------------


def recorder_inputs(recorder: Any) -> dict[str, Any]:
    """What rebuilds and checks the recorded lab: profile settings, seed, start time, the recorder's own options
    (``recorder``: a `pulsarlab.snapshot.recorder.Recorder`)."""
    lab = recorder.lab
    return {
        "seed": lab.seed,
        "start_ms": recorder[0].time if len(recorder) else lab.now(),
        "broker_config": jsonable(lab.config),
        "recorder": recorder.options(),
    }


def header_for(recorder: Any, inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    merged = recorder_inputs(recorder)
    if inputs:
        merged.update(jsonable(inputs))
    return _header(len(recorder), recorder.lab.version, merged)


def _header(frames: int, profile: str, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "pulsarlab": __version__,
        "frames": frames,
        "profile": profile,
        "inputs": inputs,
    }


def _delta(seq: Any, written: list[int], slot: int) -> dict[str, Any] | None:
    """The items of an append-only prefix not yet written (``written[slot]``: how many are)."""
    if seq is None:
        return None
    end = len(seq)
    start = written[slot]
    if end < start:  # not a prefix of what came before: write it whole
        start = 0
    written[slot] = end
    return {"end": end, "start": start, "new": [jsonable(x) for x in seq[start:end]]}


def _without(snap: Any, skipped: str) -> dict[str, Any]:
    """``jsonable(snap)`` without the field ``skipped``, which is never converted."""
    return {f.name: jsonable(getattr(snap, f.name)) for f in dataclasses.fields(snap) if f.name != skipped}


def frame_lines(frames: Sequence[Any]) -> Iterator[str]:
    """The JSON line of each frame (history and steps as deltas, see the module docstring)."""
    written = [0, 0]
    for f in frames:
        snap = f.snapshot
        body = _without(snap, "history")  # the shared lists are written as deltas, not whole in every frame
        steps = None
        if snap.redelivery is not None:
            body["redelivery"] = _without(snap.redelivery, "steps")
            steps = _delta(snap.redelivery.steps, written, 1)
        event = None
        if f.event is not None:
            event = {"seq": f.event.seq, "time": f.event.time, "kind": f.event.kind, "fields": f.event.fields}
        line = {
            "index": f.index,
            "event_index": f.event_index,
            "explanation": f.explanation,
            "event": event,
            "snapshot": body,
            "history": _delta(snap.history, written, 0),
            "steps": steps,
        }
        yield json.dumps(line, separators=(",", ":"), ensure_ascii=False)


def save_timeline(recorder: Any, path: str | os.PathLike[str], inputs: dict[str, Any] | None = None) -> Path:
    """Write ``recorder``'s frames to ``path`` (atomically: a temporary file renamed over it). Returns the path."""
    return _write(path, header_for(recorder, inputs), list(recorder))


def write_timeline(path: str | os.PathLike[str], frames: Sequence[Frame], profile: str, inputs: dict[str, Any]) -> Path:
    """Write frames made without a recorder (a watch of a real cluster: `pulsarlab.watch`) with the header's
    ``profile`` and ``inputs``; atomically, as `save_timeline`."""
    return _write(path, _header(len(frames), profile, jsonable(inputs)), list(frames))


def _write(path: str | os.PathLike[str], header: dict[str, Any], frames: list[Any]) -> Path:
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a directory: name a file, e.g. {target / ('run' + SUFFIX)}")
    if not target.parent.exists():
        raise FileNotFoundError(f"cannot write the timeline to {target}: folder {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write((json.dumps(header, separators=(",", ":")) + "\n").encode())
            for line in frame_lines(frames):
                gz.write(line.encode() + b"\n")
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


# --- reading -----------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _hints(cls: type) -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls))


def _decode(tp: Any, value: Any) -> Any:
    """``value`` (plain JSON) as the type ``tp`` a snapshot field declares (dataclasses, tuples, unions)."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        if value is None:
            return None
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return _decode(options[0], value)
        return value  # a union of plain types (int | str): JSON kept it as it was
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(value, list):
            raise TypeError(f"expected a list for {tp}, got {type(value).__name__}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v) for v in value)
        if len(args) != len(value):
            raise TypeError(f"expected {len(args)} items for {tp}, got {len(value)}")
        return tuple(_decode(a, v) for a, v in zip(args, value))
    if isinstance(tp, type) and is_dataclass(tp):
        return _dataclass(tp, value)
    if tp is History:
        raise TypeError("a history is stored beside the snapshot, not in it")
    if tp in (int, str, bool, float):
        if tp is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise TypeError(f"expected {tp.__name__}, got {value!r}")
        return value
    return value


def _dataclass(cls: type, value: Any, **given: Any) -> Any:
    if not isinstance(value, dict):
        raise TypeError(f"expected an object for {cls.__name__}, got {type(value).__name__}")
    kwargs = dict(given)
    for name, tp in _hints(cls):
        if name in kwargs:
            continue
        if name in value:
            kwargs[name] = _decode(tp, value[name])
    unknown = set(value) - {n for n, _ in _hints(cls)}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    return cls(**kwargs)


class _Prefixes:
    """Rebuilds the shared append-only lists behind the frames' histories."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.items: list[Any] = []

    def history(self, delta: dict[str, Any] | None) -> History | None:
        if delta is None:
            return None
        start, end, new = delta["start"], delta["end"], delta["new"]
        if start == 0:  # the first frame, or a list written whole: a list of its own
            self.items = []
        elif start != len(self.items):
            raise TypeError(f"history delta starts at {start}, but {len(self.items)} items were read")
        self.items.extend(_decode(self.cls, x) for x in new)
        if len(self.items) != end:
            raise TypeError(f"history says {end} items, {len(self.items)} were read")
        return History(self.items, end)


def _read_header(path: Path, line: bytes) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TimelineFileError(f"{path} is not a pulsarlab timeline (its first line is no {FORMAT} header)")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TimelineFileError(f"{path}: the header has no valid format version ({version!r})")
    if version > FORMAT_VERSION:
        raise TimelineFileError(
            f"{path} is timeline format version {version}, written by pulsarlab {header.get('pulsarlab', '?')}; "
            f"this pulsarlab reads versions up to {FORMAT_VERSION}: upgrade pulsarlab to load it"
        )
    for key in ("frames", "profile", "inputs"):
        if key not in header:
            raise TimelineFileError(f"{path}: the header has no {key!r}")
    return header


def load_timeline(path: str | os.PathLike[str]) -> SavedTimeline:
    """Read a timeline file written by `Recorder.save` (or ``pulsarlab serve --record``) for the player.

    Raises FileNotFoundError for a missing file and `TimelineFileError` (a ValueError) naming the file for one
    that is not a timeline, is corrupt or truncated, or was written in a newer format version.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no timeline file {path}")
    if path.is_dir():
        raise TimelineFileError(f"{path} is a directory, not a timeline file")
    if path.stat().st_size == 0:
        raise TimelineFileError(f"{path} is empty: not a timeline file (an interrupted copy?)")
    lineno = 1
    frames: list[Frame] = []
    try:
        with gzip.open(path, "rb") as gz:
            header = _read_header(path, gz.readline())
            history = _Prefixes(Sample)
            steps = _Prefixes(LifeStep)
            for lineno, raw in enumerate(gz, start=2):
                frames.append(_frame(json.loads(raw), history, steps))
    except TimelineFileError:
        raise
    except EOFError:
        raise TimelineFileError(
            f"{path} is truncated: its gzip stream ends early (an interrupted copy or download?); "
            f"{len(frames)} whole frames were read before the end"
        ) from None
    except gzip.BadGzipFile as e:
        if lineno == 1:
            raise TimelineFileError(f"{path} is not a readable timeline file (not gzip: {e})") from None
        raise TimelineFileError(f"{path} is corrupt after frame {len(frames)} (gzip: {e})") from None
    except zlib.error as e:
        raise TimelineFileError(f"{path} is corrupt after frame {len(frames)} (gzip: {e})") from None
    except OSError as e:
        raise TimelineFileError(f"{path} cannot be read ({e})") from None
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        raise TimelineFileError(f"{path}: line {lineno} is corrupt ({type(e).__name__}: {e})") from None
    if len(frames) != header["frames"]:
        raise TimelineFileError(
            f"{path} is truncated or corrupt: its header promises {header['frames']} frames, it holds {len(frames)}"
        )
    for i, f in enumerate(frames):
        if f.index != i:
            raise TimelineFileError(f"{path}: frame {i} is stored as frame {f.index}")
    return SavedTimeline(path, header, frames)


def _frame(line: dict[str, Any], history: _Prefixes, steps: _Prefixes) -> Frame:
    body = line["snapshot"]
    redelivery = None
    if body.get("redelivery") is not None:
        redelivery = _dataclass(RedeliverySnap, body["redelivery"], steps=steps.history(line["steps"]))
    snap = _dataclass(
        LabSnapshot,
        {k: v for k, v in body.items() if k != "redelivery"},
        history=history.history(line["history"]),
        redelivery=redelivery,
    )
    ev = line["event"]
    event = None if ev is None else Event(ev["seq"], ev["time"], ev["kind"], ev["fields"])
    explanation = line["explanation"]
    if not isinstance(explanation, str):
        raise TypeError("the explanation is not a string")
    return Frame(line["index"], line["event_index"], event, snap, explanation)


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "SUFFIX",
    "SavedTimeline",
    "TimelineFileError",
    "load_timeline",
    "save_timeline",
    "write_timeline",
]
