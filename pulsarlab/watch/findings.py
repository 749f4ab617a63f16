"""The diagnosis over time: each poll's findings matched with the previous poll's, so a finding appears, persists
(for how long) and clears.

Models no Pulsar class: it follows `pulsarlab.importers.diagnose` across polls. A finding is the same finding
from one poll to the next when its topic, subject and rule are (its numbers may change); it persists while every
poll reports it and clears at the first poll that does not. A failed poll changes nothing (nothing was seen).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from pulsarlab.importers import Finding

Key = tuple[str | None, str, str]  # (topic, subject, rule)


def key_of(f: Finding) -> Key:
    return (f.topic, f.subject, f.rule)


@dataclass(frozen=True)
class Tracked:
    """A finding followed over polls: first and last seen (ms since the watch started), and when it cleared."""

    finding: Finding
    topic: str  # the watched topic it was diagnosed on
    first_ms: int
    last_ms: int
    polls: int
    cleared_ms: int | None = None

    @property
    def key(self) -> Key:
        return key_of(self.finding)

    @property
    def open(self) -> bool:
        return self.cleared_ms is None

    @property
    def duration_ms(self) -> int:
        return (self.cleared_ms if self.cleared_ms is not None else self.last_ms) - self.first_ms

    def line(self) -> str:
        """One line: severity, where, rule and message, then for how long it has held (or when it cleared)."""
        f = self.finding
        where = f"[{_short(f.topic or self.topic)}] "
        if self.cleared_ms is not None:
            state = f"cleared after {format_duration(self.duration_ms)}"
        elif self.polls == 1:
            state = "new"
        else:
            state = f"for {format_duration(self.duration_ms)} ({self.polls} polls)"
        return f"{f.severity.name:<8} {where}{f.subject} · {f.rule} ({state}): {f.message}"


@dataclass(frozen=True)
class Changes:
    """What one poll changed: findings that appeared, persist, and cleared."""

    appeared: tuple[Tracked, ...]
    persisting: tuple[Tracked, ...]
    cleared: tuple[Tracked, ...]

    @property
    def open(self) -> tuple[Tracked, ...]:
        return self.appeared + self.persisting


class FindingTracker:
    """Findings across polls (`update` once per good poll); `history` keeps every finding that ever cleared."""

    def __init__(self) -> None:
        self._open: dict[Key, Tracked] = {}
        self.history: list[Tracked] = []

    @property
    def open(self) -> list[Tracked]:
        """The findings of the last poll, most severe first, then the longest held."""
        return sorted(self._open.values(), key=lambda t: (-t.finding.severity, t.first_ms))

    def update(self, now_ms: int, findings: Iterable[tuple[str, Finding]]) -> Changes:
        """Match this poll's findings (``(watched topic, finding)``) with the open ones."""
        seen: dict[Key, Tracked] = {}
        appeared, persisting = [], []
        for topic, f in findings:
            k = key_of(f)
            if k in seen:  # the same rule twice on one subject: keep the first, as diagnose orders them
                continue
            before = self._open.get(k)
            if before is None:
                t = Tracked(f, topic, now_ms, now_ms, 1)
                appeared.append(t)
            else:
                t = replace(before, finding=f, last_ms=now_ms, polls=before.polls + 1)
                persisting.append(t)
            seen[k] = t
        cleared = tuple(replace(t, cleared_ms=now_ms) for k, t in self._open.items() if k not in seen)
        self.history.extend(cleared)
        self._open = seen
        return Changes(tuple(appeared), tuple(persisting), cleared)


def format_duration(ms: int) -> str:
    """``950 ms``, ``12 s``, ``4 min 5 s``, ``2 h 3 min``."""
    if ms < 1000:
        return f"{ms} ms"
    s = ms // 1000
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s} s" if s else f"{m} min"
    h, m = divmod(m, 60)
    return f"{h} h {m} min" if m else f"{h} h"


def _short(topic: str) -> str:
    return topic.removeprefix("persistent://public/default/").removeprefix("persistent://")


__all__ = ["Changes", "FindingTracker", "Tracked", "format_duration", "key_of"]
