"""The watch loop: poll a cluster's admin API at an interval, diagnose each poll, keep every poll as a frame.

Models no Pulsar class. Each poll reads the selected topics (`pulsarlab.watch.readings`), draws a `LabSnapshot`
of them (`pulsarlab.watch.observed`), re-runs `pulsarlab.importers.diagnose` with the previous poll as
``previous_*`` (so "the mark-delete did not move while entries were added" is seen directly) and follows the
findings over time (`pulsarlab.watch.findings`). Every poll, good or failed, becomes a timeline `Frame` whose
event (``admin_polled`` / ``admin_poll_failed``, `pulsarlab.event_catalogue.watch`) carries what the broker
answered, so `save` writes a timeline file the player, ``pulsarlab export`` and `pulsarlab.watch.reproduce` read.

Pacing: the interval is never below `MIN_INTERVAL_S` (0.5 s); a broker that takes longer than the interval to
answer is polled every twice its answer time, and one that fails is tried again after the interval doubled per
failure in a row (at most `MAX_BACKOFF_S`); each says so in the poll's status line. A failed poll keeps the last
good snapshot and findings on screen. A refusal before any good poll (401, 403, 404, or a TLS certificate the
client cannot verify) ends the watch: it will not start working by itself.

Simplifies: polls are sequential GETs (a topic's stats and stats-internal are read a few milliseconds apart, not
atomically, as ``pulsar-admin`` run twice would); times are the watch's own (ms since it started, plus the
wall-clock start in the recording's inputs).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from pulsarlab.event_catalogue.watch import ADMIN_POLL_FAILED, ADMIN_POLLED
from pulsarlab.events import Event
from pulsarlab.importers import Finding, Limits, diagnose
from pulsarlab.snapshot.base import History, Sample
from pulsarlab.snapshot.frame import Frame
from pulsarlab.snapshot.lab import LabSnapshot
from pulsarlab.snapshot.timeline_file import write_timeline
from pulsarlab.watch.admin_client import AdminClient, AdminError
from pulsarlab.watch.findings import Changes, FindingTracker, Tracked, format_duration
from pulsarlab.watch.observed import ObservedSnapshots, profile_for
from pulsarlab.watch.options import DEFAULT_INTERVAL_S, MIN_INTERVAL_S
from pulsarlab.watch.readings import Reading, Selection, read_topic

MAX_BACKOFF_S = 60.0
RESOLVE_EVERY = 15  # polls between two listings of a namespace or regex's topics


@dataclass(frozen=True)
class PollStatus:
    """How the last poll went and when the next comes: ``ok``, a one-line ``message``, ``next_delay_s``."""

    poll: int
    ok: bool
    message: str
    next_delay_s: float
    error: AdminError | None = None


@dataclass(frozen=True)
class WatchState:
    """What the screen shows after a poll: the last good snapshot, readings and findings, and the poll's status."""

    snapshot: LabSnapshot
    readings: tuple[Reading, ...]
    findings: tuple[Tracked, ...]
    changes: Changes
    status: PollStatus
    time_ms: int


class Watcher:
    """Polls ``selection`` on ``client`` every ``interval_s``; `poll` once, `run` for a while, or `start` a thread."""

    def __init__(
        self,
        client: AdminClient,
        selection: Selection | str,
        interval_s: float = DEFAULT_INTERVAL_S,
        *,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s < MIN_INTERVAL_S:
            raise ValueError(f"the interval must be at least {MIN_INTERVAL_S} s, got {interval_s} s")
        self.client = client
        self.selection = Selection.parse(selection) if isinstance(selection, str) else selection
        self.interval_s = float(interval_s)
        self.limits = limits or Limits()
        self._clock = clock
        self._t0 = clock()
        self.started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.frames: list[Frame] = []
        self.tracker = FindingTracker()
        self._snapshots = ObservedSnapshots()
        self._topics: list[Any] | None = None
        self._samples: list[Sample] = []
        self._previous: dict[str, tuple[Any, Any]] = {}  # topic -> its last good (stats, internal), parsed
        self.broker_version: str | None = None
        self.profile: str | None = None
        self.profile_reason = ""
        self.state: WatchState | None = None
        self.failures_in_a_row = 0
        self.good_polls = 0
        self._listeners: list[Callable[[Frame, WatchState], None]] = []
        self._changed = threading.Condition()
        self._poll_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None  # what ended a background watch

    # --- listeners ------------------------------------------------------------------------------------
    def listen(self, fn: Callable[[Frame, WatchState], None]) -> None:
        """Call ``fn(frame, state)`` after every poll (on the polling thread)."""
        self._listeners.append(fn)

    def wait_for_frames(self, n: int, timeout_s: float = 30.0) -> bool:
        """Block until ``n`` frames exist, the watch stopped, or ``timeout_s`` passed; True when they exist."""
        with self._changed:
            return (
                self._changed.wait_for(
                    lambda: len(self.frames) >= n or self.error is not None or self._stop.is_set(), timeout_s
                )
                and len(self.frames) >= n
            )

    def wait_for(self, seen: Callable[[Frame], bool], timeout_s: float = 60.0) -> Frame | None:
        """Block until a frame for which ``seen(frame)`` is true exists (one already kept counts), the watch
        stopped, or ``timeout_s`` passed; the first such frame, or None. For a notebook or a test that must not go
        on before the watch has recorded a moment (a poll with a finding), however slowly the machine polls."""
        checked = 0
        hit: list[Frame] = []

        def found() -> bool:
            nonlocal checked
            frames = self.frames
            hit.extend(f for f in frames[checked:] if seen(f))
            checked = len(frames)
            return bool(hit) or self.error is not None or self._stop.is_set()

        with self._changed:
            self._changed.wait_for(found, timeout_s)
        return hit[0] if hit else None

    # --- one poll -------------------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(round((self._clock() - self._t0) * 1000))

    def poll(self) -> WatchState:
        """Read every selected topic once, diagnose, and add a frame; an `AdminError` before any good poll that
        a retry will not cure (401, 403, 404, an unverifiable certificate) is raised. One poll at a time (a call
        while the background thread polls waits for it)."""
        with self._poll_lock:
            return self._poll()

    def _poll(self) -> WatchState:
        index = len(self.frames)
        started = self._clock()
        try:
            readings = self._read()
        except AdminError as e:
            self.failures_in_a_row += 1
            if self.state is None and not e.retryable:
                raise
            return self._failed(index, e)
        elapsed = self._clock() - started
        self.failures_in_a_row = 0
        self.good_polls += 1
        return self._good(index, readings, elapsed)

    def _read(self) -> list[Reading]:
        if self.broker_version is None and not self.frames:
            self.broker_version = self.client.broker_version()
        if self._topics is None or (self.selection.kind != "topic" and len(self.frames) % RESOLVE_EVERY == 0):
            self._topics = self.selection.resolve(self.client)
        return [read_topic(self.client, t, n) for t, n in self._topics]

    def _good(self, index: int, readings: list[Reading], elapsed: float) -> WatchState:
        now = self.now_ms()
        parsed = {r.topic: r.parsed() for r in readings}
        if self.profile is None:
            self.profile, self.profile_reason = profile_for(self.broker_version, [s for s, _ in parsed.values()])
        found: list[tuple[str, Finding]] = []
        for topic, (stats, internal) in parsed.items():
            prev_stats, prev_internal = self._previous.get(topic, (None, None))
            for f in diagnose(
                stats, internal, previous_stats=prev_stats, previous_internal=prev_internal, limits=self.limits
            ):
                found.append((topic, f))
        self._previous = parsed
        changes = self.tracker.update(now, found)
        snap = self._snapshots.build(readings, now, index, self.profile)
        self._samples.extend(snap.consumer_samples())  # each consumer's permits and unacked over the polls
        snap = replace(snap, history=History(self._samples, len(self._samples)))
        if elapsed > self.interval_s:
            delay = min(MAX_BACKOFF_S, max(self.interval_s, 2 * elapsed))
            message = (
                f"the broker took {elapsed:.1f} s to answer (interval {self.interval_s:g} s): polling every "
                f"{delay:.1f} s until it is faster"
            )
        else:
            delay = self.interval_s
            message = f"polled {len(readings)} topic(s) in {elapsed * 1000:.0f} ms; next in {delay:g} s"
        status = PollStatus(index, True, message, delay)
        event = Event(
            index,
            now,
            ADMIN_POLLED.name,
            {
                "poll": index,
                "topics": len(readings),
                "findings": len(changes.open),
                "appeared": len(changes.appeared),
                "cleared": len(changes.cleared),
                "responses": {r.topic: r.as_json() for r in readings},
            },
        )
        state = WatchState(snap, tuple(readings), tuple(self.tracker.open), changes, status, now)
        return self._add(Frame(index, index, event, snap, _explain(now, changes, readings)), state)

    def _failed(self, index: int, e: AdminError) -> WatchState:
        now = self.now_ms()
        delay = min(MAX_BACKOFF_S, self.interval_s * 2**self.failures_in_a_row)
        shown = "the last good state stays on screen" if self.state is not None else "nothing read yet"
        status = PollStatus(index, False, f"{e}; {shown}; trying again in {delay:g} s", delay, e)
        event = Event(
            index,
            now,
            ADMIN_POLL_FAILED.name,
            {"poll": index, "url": e.url, "status": e.status, "reason": e.reason, "retry_ms": int(delay * 1000)},
        )
        if self.state is not None:
            snap = self.state.snapshot
            state = WatchState(
                snap, self.state.readings, self.state.findings, Changes((), (), ()), status, self.state.time_ms
            )
        else:
            snap = LabSnapshot(self.profile or "4.0", now, index, (), (), ())
            state = WatchState(snap, (), (), Changes((), (), ()), status, now)
        text = f"t = {now / 1000:.1f} s: poll {index} failed: {e} (the last good state is shown)"
        return self._add(Frame(index, index, event, snap, text), state)

    def _add(self, frame: Frame, state: WatchState) -> WatchState:
        with self._changed:
            self.frames.append(frame)
            self.state = state
            self._changed.notify_all()
        for fn in self._listeners:
            fn(frame, state)
        return state

    # --- running --------------------------------------------------------------------------------------
    def run(self, duration_s: float | None = None, max_polls: int | None = None) -> None:
        """Poll until ``duration_s`` passed, ``max_polls`` were made, or `stop` (each wait honours the pacing)."""
        end = None if duration_s is None else self._clock() + duration_s
        polls = 0
        try:
            while not self._stop.is_set():
                state = self.poll()
                polls += 1
                if max_polls is not None and polls >= max_polls:
                    return
                delay = state.status.next_delay_s
                if end is not None:
                    left = end - self._clock()
                    if left <= 0:
                        return
                    delay = min(delay, left)
                if self._stop.wait(delay):
                    return
        except BaseException as e:
            self.error = e
            raise
        finally:
            with self._changed:
                self._changed.notify_all()

    def start(self, duration_s: float | None = None) -> None:
        """Watch on a background thread (a notebook's live views); `stop` ends it, ``error`` says what ended it."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()

        def target() -> None:
            try:
                self.run(duration_s)
            except BaseException:  # kept in self.error for whoever shows the watch
                pass

        self._thread = threading.Thread(target=target, name="pulsarlab-watch", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 15.0) -> None:
        self._stop.set()
        with self._changed:
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- the recording ----------------------------------------------------------------------------------
    def inputs(self) -> dict[str, Any]:
        """What a recording's header says about the watch (never the token)."""
        return {
            "watch": {
                "admin_url": self.client.url,
                "selection": self.selection.text,
                "interval_s": self.interval_s,
                "started_at": self.started_at,
                "broker_version": self.broker_version,
                "profile_reason": self.profile_reason,
                "authenticated": self.client.authenticated,
            }
        }

    def save(self, path: str | Path) -> Path:
        """Write every frame so far as a timeline file (atomically); `pulsarlab.load_timeline` reads it."""
        return write_timeline(path, self.frames, self.profile or "4.0", self.inputs())

    def __len__(self) -> int:
        return len(self.frames)

    def __getitem__(self, i: int) -> Frame:
        return self.frames[i]

    def __repr__(self) -> str:
        return f"<Watcher {self.selection.text} on {self.client.url}: {len(self.frames)} poll(s)>"


def _explain(now_ms: int, changes: Changes, readings: list[Reading]) -> str:
    parts = [f"t = {now_ms / 1000:.1f} s: {len(readings)} topic(s) read"]
    if changes.appeared:
        parts.append("new: " + "; ".join(f"{t.finding.rule} on {t.finding.subject}" for t in changes.appeared))
    if changes.cleared:
        parts.append(
            "cleared: "
            + "; ".join(
                f"{t.finding.rule} on {t.finding.subject} after {format_duration(t.duration_ms)}"
                for t in changes.cleared
            )
        )
    if changes.persisting:
        longest = max(changes.persisting, key=lambda t: t.duration_ms)
        parts.append(
            f"{len(changes.persisting)} finding(s) persist, the longest {longest.finding.rule} on "
            f"{longest.finding.subject} for {format_duration(longest.duration_ms)}"
        )
    if len(parts) == 1:
        parts.append("no findings")
    return "; ".join(parts)


__all__ = ["DEFAULT_INTERVAL_S", "MAX_BACKOFF_S", "MIN_INTERVAL_S", "PollStatus", "WatchState", "Watcher"]
