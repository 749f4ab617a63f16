"""The timeline of a `KeySharedScenario`: one frame per logged event, for stepping back and forth.

Models no Pulsar class. Frame i pairs event i of the scenario's log with the selector snapshot the driver
(`pulsarlab.scenarios.key_shared`) recorded right after it and the event's explanation; the views and the
player draw frames. The timeline reads the scenario as it runs, so it grows with the log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from pulsarlab.events import Event

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.scenarios.key_shared import KeySharedScenario


@dataclass(frozen=True)
class Frame:
    """Frame i of a timeline: event i, the selector snapshot right after it, and its explanation."""

    index: int
    event: Event
    snapshot: dict[str, Any]
    explanation: str

    @property
    def time(self) -> int:
        return self.event.time

    @property
    def kind(self) -> str:
        return self.event.kind


class Timeline(Sequence[Frame]):
    """The scenario's frames, one per event, for stepping back and forth (grows as the scenario runs)."""

    def __init__(self, scenario: "KeySharedScenario") -> None:
        self._scenario = scenario

    def __len__(self) -> int:
        return len(self._scenario._frame_snapshots)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"frame {i} is outside the timeline (0..{n - 1})")
        event = self._scenario.log[i]
        return Frame(i, event, self._scenario._frame_snapshots[i], event.explain())

    def __iter__(self) -> Iterator[Frame]:
        for i in range(len(self)):
            yield self[i]

    def kinds(self) -> list[str]:
        """Event kinds present, in order of first appearance."""
        seen: dict[str, None] = {}
        for i in range(len(self)):
            seen.setdefault(self._scenario.log[i].kind, None)
        return list(seen)

    def find(self, kind: str, start: int = 0, direction: int = 1) -> int | None:
        """Index of the next frame of ``kind`` from ``start`` (inclusive) in ``direction`` (+1 / -1)."""
        i = start
        while 0 <= i < len(self):
            if self._scenario.log[i].kind == kind:
                return i
            i += 1 if direction >= 0 else -1
        return None


__all__ = ["Frame", "Timeline"]
