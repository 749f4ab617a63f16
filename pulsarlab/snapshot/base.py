"""What every snapshot module shares: position types, topic and position formatting, the recorder's samples
and their read-only history, and the conversion of frozen snapshot dataclasses to plain JSON.

Models no Pulsar class. The other snapshot modules (`pulsarlab.snapshot.lab`, ``redelivery``, ``delayed``,
``chunks``, ``recorder``) import these from here and from nowhere else, so the snapshot package has no import
cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Iterator, Sequence

Pos = tuple[int, int]  # (ledger id, entry id)
RawRange = tuple[int, int, int, int]  # (ledger, first - 1, ledger, last): the open-closed range (L:a..L:b]

_DEFAULT_PREFIX = "persistent://public/default/"


def short_topic(name: str) -> str:
    """``persistent://public/default/orders`` -> ``orders``; other namespaces keep ``tenant/ns/topic``."""
    if name.startswith(_DEFAULT_PREFIX):
        return name[len(_DEFAULT_PREFIX) :]
    return name.split("://", 1)[-1]


def fmt_pos(pos: Pos | None) -> str:
    """``(3, 4)`` -> ``3:4`` as stats-internal prints positions."""
    return "-" if pos is None else f"{pos[0]}:{pos[1]}"


@dataclass(frozen=True)
class Sample:
    """One consumer's dispatch numbers at one frame (for the dispatch timeline)."""

    event_index: int
    time: int
    topic: str
    subscription: str
    consumer: int
    name: str
    permits: int
    receiver_queue: int | None
    in_flight: int
    blocked: bool


class History(Sequence[Any]):
    """Items 0..i of a list its owner only appends to (a recorder's samples, the redelivery steps): a read-only
    prefix, so each frame shares the list and sees only what existed when it was taken."""

    __slots__ = ("_samples", "_end")

    def __init__(self, samples: list[Any], end: int) -> None:
        self._samples = samples
        self._end = end

    def __len__(self) -> int:
        return self._end

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._end))]
        if i < 0:
            i += self._end
        if not 0 <= i < self._end:
            raise IndexError(f"sample {i} is outside the history (0..{self._end - 1})")
        return self._samples[i]

    def __iter__(self) -> Iterator[Any]:
        samples = self._samples
        for i in range(self._end):
            yield samples[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, History):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash((len(self), self[-1] if len(self) else None))

    def __repr__(self) -> str:
        return f"<History {self._end} samples>"


def jsonable(obj: Any) -> Any:
    """A snapshot (frozen dataclasses, tuples, histories, dicts) as plain dicts, lists, ints, strings and None;
    anything else becomes its ``str``."""
    if is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, (tuple, list, History)):
        return [jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return str(obj)


def frame_at(frames: Sequence[Any], i: Any, what: str) -> Any:
    """``frames[i]`` for a timeline's ``__getitem__``: a slice as it is, a negative index from the end, and a
    TypeError / IndexError that says which frames ``what`` (a recording, a timeline) has."""
    if isinstance(i, slice):
        return frames[i]
    n = len(frames)
    if isinstance(i, bool) or not isinstance(i, int):
        raise TypeError(f"a frame index must be an int, not {type(i).__name__}")
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"frame {i} is outside the {what} (0..{n - 1})")
    return frames[i]


__all__ = ["History", "Pos", "RawRange", "Sample", "fmt_pos", "frame_at", "jsonable", "short_topic"]
