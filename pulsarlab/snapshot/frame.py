"""A frame of a timeline: one step of a recorded run, as the recorder takes it and as a timeline file gives it back.

Models no Pulsar class: the player's unit of time (`pulsarlab.snapshot.recorder.Recorder` makes them,
`pulsarlab.snapshot.timeline_file` saves and loads them).
"""

from __future__ import annotations

from dataclasses import dataclass

from pulsarlab.events import Event
from pulsarlab.snapshot.lab import LabSnapshot


@dataclass(frozen=True)
class Frame:
    """One step of a recorded run: the event (None for a frame taken by hand), the snapshot right after it,
    and a one-line explanation that cites the rule."""

    index: int
    event_index: int
    event: Event | None
    snapshot: LabSnapshot
    explanation: str

    @property
    def time(self) -> int:
        return self.snapshot.time

    @property
    def kind(self) -> str | None:
        return self.event.kind if self.event is not None else None


__all__ = ["Frame"]
