"""The recorder: one frame per lab event (or per n events, or per chosen kind) for the player to step through.

Usage (also in `pulsarlab.snapshot.lab`'s docstring)::

    rec = Recorder(lab)                     # subscribe before the run
    ...                                     # drive the lab
    Player(rec, [cursor_view])              # len(rec), rec[i].snapshot, rec[i].explanation, rec[i].event
    rec.find("mark_delete_moved"); rec.capture("after step 2"); rec.close()
    rec.save("run.plt.jsonl.gz")            # a file; pulsarlab.load_timeline(path) gives a timeline back

Models no Pulsar class. Each frame holds the event (a `pulsarlab.events.Event`), the `LabSnapshot` taken
in the event log's listener right after the event was logged, and the event's explanation (which cites
its rule) with consumer, subscription and topic names in place of their numeric ids. With
``history=True`` every snapshot also carries the per-consumer samples of all frames so far (a shared,
append-only list: frame i sees only samples 0..i), which the dispatch timeline draws.

Simplifies: frames are taken at event granularity; a model operation may still be running when its
event is logged (see `pulsarlab.snapshot.lab`).
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from pulsarlab.events import Event
from pulsarlab.snapshot.base import History, Sample, frame_at, short_topic
from pulsarlab.snapshot.frame import Frame
from pulsarlab.snapshot.lab import SnapshotBuilder
from pulsarlab.snapshot.timeline_file import save_timeline

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.lab import Lab


# the event kinds the views in widgets/views need (every=VIEW_KINDS keeps only these)
VIEW_KINDS = frozenset(
    {
        "consumer_subscribed",
        "consumer_closed",
        "flow",
        "entries_read",
        "dispatched",
        "received",
        "acknowledged",
        "ack_applied",
        "mark_delete_moved",
        "individually_deleted",
        "batch_index_deleted",
        "ledger_rolled",
        "entry_persisted",
        "replay_added",
        "consumer_blocked",
        "dispatcher_blocked",
        "active_consumer_change",
        "active_consumer_picked",
        "cursor_rewound",
        "redeliver_requested",
        "recently_joined",
        "draining_hash",
        "hash_blocked",
        "ack_queued",
        "acks_flushed",
        "acks_lost",
        "duplicate_dropped",
        "chunk_published",
        "chunk_received",
        "chunk_discarded",
        "chunked_message_assembled",
        "chunked_message_evicted",
        "chunked_message_expired",
        "chunked_message_acked",
        "chunk_pinned",
        "chunk_held",
        "negative_acked",
        "nack_timer_fired",
        "ack_timeout_tick",
        "redeliver_ids",
        "redelivery_counted",
        "dead_letter_candidate",
        "dead_lettered",
        "reconsumed_later",
        "letter_producer_created",
    }
)

_ID_WORDS = re.compile(r"\b(consumer|subscription|topic) (-?\d+)\b")


class Recorder(Sequence[Frame]):
    """Listens to ``lab.events`` and keeps frames ``(event index, snapshot, explanation)`` for a player.

    ``every``: 1 for a frame per event, an int n for every n-th event, or a collection of event kinds
    (e.g. `VIEW_KINDS`); ``topics`` limits the snapshots to some topics; ``history=False`` leaves out the
    per-consumer samples the dispatch timeline draws. A first frame shows the state when recording starts
    (``initial=False`` to skip it). ``capture(text)`` adds a frame by hand, e.g. after a step of a script.
    ``keep`` bounds the frames held to the newest ``keep`` (an eighth more between trims; None: all), for a
    recording that follows a long-running lab (the live views of a served lab); a frame's ``index`` counts every
    frame taken.
    """

    def __init__(
        self,
        lab: "Lab",
        every: int | Iterable[str] = 1,
        *,
        topics: Iterable[str] | None = None,
        history: bool = True,
        initial: bool = True,
        keep: int | None = None,
    ) -> None:
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
            raise ValueError(f"keep must be a number of frames >= 1 (or None), got {keep!r}")
        if not lab.events.enabled:
            raise ValueError("this lab was made with record_events=False: there are no events to record")
        self.lab = lab
        if isinstance(every, bool) or not (isinstance(every, int) or isinstance(every, Iterable)):
            raise TypeError(f"every must be an int or a collection of event kinds, not {every!r}")
        if isinstance(every, int):
            if every < 1:
                raise ValueError(f"every must be >= 1, got {every}")
            self._every: int | None = every
            self._kinds: frozenset[str] | None = None
        else:
            if isinstance(every, str):
                every = (every,)
            self._every = None
            self._kinds = frozenset(every)
        self._builder = SnapshotBuilder(lab, topics)
        self._keep_history = history
        self._samples: list[Sample] = []
        self._frames: list[Frame] = []
        self.keep = keep
        self._trim_at = None if keep is None else keep + max(keep // 8, 1)
        self.taken = 0  # frames taken, the kept ones and those trimmed
        self._names: dict[str, dict[int, str]] = {"consumer": {}, "subscription": {}, "topic": {}}
        self._seen = 0
        self.errors: list[tuple[int, Exception]] = []  # (event index, error) of frames that could not be taken
        self.inputs: dict[str, Any] = {}  # scenario inputs `save` writes into the file's header (e.g. a scenario row)
        self._unsubscribe: Callable[[], Any] | None = lab.events.subscribe(self._on_event)
        if initial:
            self.capture(f"recording starts at t = {lab.now()} ms")

    # --- timeline protocol ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._frames)

    def __getitem__(self, i):  # type: ignore[override]
        return frame_at(self._frames, i, "recording")

    def __iter__(self) -> Iterator[Frame]:
        return iter(list(self._frames))

    def kinds(self) -> list[str]:
        """Event kinds recorded, in order of first appearance."""
        seen: dict[str, None] = {}
        for f in self._frames:
            if f.kind is not None:
                seen.setdefault(f.kind, None)
        return list(seen)

    def find(self, kind: str, start: int = 0, direction: int = 1) -> int | None:
        """Index of the next frame of ``kind`` from ``start`` (inclusive) in ``direction`` (+1 / -1)."""
        i = start
        step = 1 if direction >= 0 else -1
        while 0 <= i < len(self._frames):
            if self._frames[i].kind == kind:
                return i
            i += step
        return None

    def frame_of(self, event_index: int) -> int | None:
        """The index of the frame taken for event ``event_index`` (None if that event got no frame)."""
        for i, f in enumerate(self._frames):
            if f.event is not None and f.event.seq == event_index:
                return i
        return None

    def frame_for_event(self, event_index: int) -> int:
        """The last frame whose state includes event ``event_index``."""
        best = None
        for i, f in enumerate(self._frames):
            if f.event_index <= event_index:
                best = i
            else:
                break
        if best is None:
            raise IndexError(f"no frame at or before event {event_index}")
        return best

    @property
    def last(self) -> Frame:
        return self[-1]

    # --- recording -----------------------------------------------------------------------------
    def capture(self, explanation: str = "") -> Frame:
        """Add a frame of the state now (no event), e.g. to mark the end of a step."""
        return self._add(None, explanation or f"state at t = {self.lab.now()} ms")

    def options(self) -> dict[str, Any]:
        """How this recorder was made (``every`` as an int or sorted kinds, ``topics``, ``history``), as JSON."""
        topics = self._builder._wanted
        return {
            "every": self._every if self._kinds is None else sorted(self._kinds),
            "topics": None if topics is None else sorted(topics),
            "history": self._keep_history,
        }

    def save(self, path: "str | os.PathLike[str]", inputs: dict[str, Any] | None = None) -> Path:
        """Write the frames to a timeline file (`pulsarlab.snapshot.timeline_file`: gzip JSON lines, versioned)
        that `pulsarlab.load_timeline` reads back; ``inputs`` adds scenario inputs to its header (to
        ``self.inputs``). Atomic."""
        return save_timeline(self, path, {**self.inputs, **(inputs or {})})

    def close(self) -> None:
        """Stop listening to the lab's events; the frames stay."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    @property
    def recording(self) -> bool:
        return self._unsubscribe is not None

    def _on_event(self, event: Event) -> None:
        self._learn(event)
        self._seen += 1
        if self._kinds is not None:
            if event.kind not in self._kinds:
                return
        elif (self._seen - 1) % self._every:  # type: ignore[operator]
            return
        try:
            self._add(event, self.explain(event))
        except Exception as error:  # never break the lab run because a picture of it failed
            self.errors.append((event.seq, error))
            if len(self.errors) == 1:
                warnings.warn(
                    f"Recorder: no frame for event {event.seq} ({event.kind}): "
                    f"{type(error).__name__}: {error}; see recorder.errors",
                    RuntimeWarning,
                    stacklevel=2,
                )

    def _learn(self, event: Event) -> None:
        f = event.fields
        if event.kind == "consumer_subscribed":
            self._names["consumer"][f["consumer"]] = f["name"]
        elif event.kind == "topic_created" and f.get("topic", -1) >= 0:
            self._names["topic"][f["topic"]] = short_topic(f["name"])

    def _add(self, event: Event | None, explanation: str) -> Frame:
        snap = self._builder.build()
        for t in snap.topics:
            self._names["topic"].setdefault(t.id, t.short_name)
            for s in t.subscriptions:
                self._names["subscription"][s.id] = f"{t.short_name}/{s.name}"
                for c in s.consumers:
                    self._names["consumer"].setdefault(c.id, c.name)
        if self._keep_history:
            self._samples.extend(snap.consumer_samples())
            snap = replace(snap, history=History(self._samples, len(self._samples)))
        frame = Frame(self.taken, event.seq if event is not None else snap.event_index, event, snap, explanation)
        self._frames.append(frame)
        self.taken += 1
        if self._trim_at is not None and len(self._frames) >= self._trim_at:
            del self._frames[: len(self._frames) - self.keep]  # type: ignore[operator]
        return frame

    def explain(self, event: Event) -> str:
        """The event's explanation with consumer, subscription and topic names in place of their ids."""
        text = event.explain()
        names = self._names

        def name(m: re.Match) -> str:
            word, num = m.group(1), int(m.group(2))
            known = names[word].get(num)
            return f"{word} {known}" if known is not None else m.group(0)

        return _ID_WORDS.sub(name, text)

    def __repr__(self) -> str:
        state = "recording" if self.recording else "closed"
        return f"<Recorder {len(self._frames)} frames, {state}>"


__all__ = ["Recorder", "VIEW_KINDS"]
