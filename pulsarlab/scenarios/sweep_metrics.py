"""The per-run metrics of a scenario sweep, computed in process from one run's event log.

Models no Pulsar class; it reads the events `pulsarlab.scenarios.run` leaves (the broker's, the client's and the
application's ``app_received``). `pulsarlab.spark.sweep` computes the same metrics with Spark SQL over the Parquet
event dataset; the two are independent implementations of the definitions below and must agree run for run.

* ``published``: ``message_published`` events (``send_async`` calls). ``received``: ``app_received`` events.
  ``acked`` / ``nacked`` / ``crashed``: ``app_received`` events with that action (acknowledge calls, negative
  acknowledge calls, crashes of the consumer holding the message). ``dead_lettered``: ``dead_lettered`` events.
* ``duplicates``: deliveries to the application after a message's first (``received`` - distinct messages).
* ``redeliveries``: deliveries with a redelivery count > 0 (the broker counted a redelivery request).
* ``out_of_order``: per-key order violations: deliveries of a message whose number (publish order) is below the
  highest number of the same key delivered before it, whichever consumer took either.
* ``max_ack_holes``: the most individually-acknowledged ranges a cursor held at once (Pulsar's
  ``nonContiguousDeletedMessagesRanges``): after each event, per cursor, the entries that an ``individually_deleted``
  event added and no ``mark_delete_moved`` has covered yet, counted as runs of consecutive entry ids in one ledger.
* ``md_lag_ms_p50/p90/p99/max``: mark-delete lag of each entry of a subscribed topic: the time from its
  ``entry_persisted`` to the first ``mark_delete_moved`` of the topic's cursor reaching it (nearest-rank
  percentiles over the entries covered; ``md_covered_entries`` counts them).
* ``blocked_hash_episodes`` / ``blocked_hash_ms_total`` / ``blocked_hash_ms_max``: Key_Shared holding an entry back
  for ordering (``hash_blocked`` with reason ``hash_in_replay_set``, ``hash_draining`` or ``recently_joined``):
  an episode runs from the first such event of an entry to that entry's next ``dispatched`` (or the run's last
  event); its length in ms.
* ``end_ms``: the time of the run's last event.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sortedcontainers import SortedList

from pulsarlab.events import NONE_VALUE, LogColumns, get_event_type
from pulsarlab.scenarios.run import ACK, CRASH, NACK

ORDERING_REASONS = ("hash_in_replay_set", "hash_draining", "recently_joined")
PERCENTILES = (50, 90, 99)
ENTRY_BITS = 32  # a position as one int64: ledger * 2**32 + entry (entry -1 sorts before entry 0 of its ledger)

METRIC_COLUMNS = [
    "published",
    "received",
    "acked",
    "nacked",
    "crashed",
    "dead_lettered",
    "duplicates",
    "redeliveries",
    "out_of_order",
    "max_ack_holes",
    "md_covered_entries",
    "md_lag_ms_p50",
    "md_lag_ms_p90",
    "md_lag_ms_p99",
    "md_lag_ms_max",
    "blocked_hash_episodes",
    "blocked_hash_ms_total",
    "blocked_hash_ms_max",
    "end_ms",
]


def field_index(kind: str, name: str) -> int:
    """Which of the six field columns holds field ``name`` of event type ``kind``."""
    names = [f for f, _ in get_event_type(kind).fields]
    return names.index(name)


def _select(cols: LogColumns, kind: str, *names: str) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(sequence numbers, times, the named field columns) of the events of one kind, in log order."""
    mask = cols.kind == cols.code(kind)
    seq = np.flatnonzero(mask)
    return seq, cols.time[mask], [cols.fields[field_index(kind, n)][mask] for n in names]


def nearest_rank(values: np.ndarray, percent: int) -> int:
    """The nearest-rank percentile: the ceil(percent/100 * n)-th smallest value (integer arithmetic)."""
    ordered = np.sort(values)
    rank = max(1, (percent * len(ordered) + 99) // 100)
    return int(ordered[rank - 1])


def position(ledger: np.ndarray | int, entry: np.ndarray | int) -> Any:
    return ledger * (1 << ENTRY_BITS) + entry


def _max_ack_holes(cols: LogColumns) -> int:
    """Replays individually_deleted / mark_delete_moved in log order, one sorted set of positions per cursor."""
    d_seq, _, (d_cursor, d_ledger, d_entry) = _select(cols, "individually_deleted", "cursor", "ledger", "entry")
    m_seq, _, (m_cursor, m_ledger, m_entry) = _select(cols, "mark_delete_moved", "cursor", "to_ledger", "to_entry")
    ops = sorted(
        [(int(s), 0, int(c), int(position(ld, e))) for s, c, ld, e in zip(d_seq, d_cursor, d_ledger, d_entry)]
        + [(int(s), 1, int(c), int(position(ld, e))) for s, c, ld, e in zip(m_seq, m_cursor, m_ledger, m_entry)]
    )
    held: dict[int, SortedList] = {}
    marks: dict[int, int] = {}
    runs: dict[int, int] = {}
    best = 0
    first_entry = (1 << ENTRY_BITS) - 1

    def starts_run(s: SortedList, x: int) -> bool:  # x in s begins a run: x - 1 (same ledger) is not in s
        return (x & first_entry) == 0 or (x - 1) not in s

    for _seq, op, cursor, pos in ops:
        s = held.setdefault(cursor, SortedList())
        count = runs.get(cursor, 0)
        if op == 0:
            if pos in s or pos <= marks.get(cursor, -1):
                continue
            before = (pos & first_entry) != 0 and (pos - 1) in s
            after = (pos + 1) in s
            s.add(pos)
            count += 1 - before - after
        else:
            marks[cursor] = max(marks.get(cursor, -1), pos)
            cut = s.bisect_right(pos)
            if cut:
                removed = sum(1 for x in s[:cut] if starts_run(s, x))
                # the first position left starts a run now; it did not before iff it continued a removed one
                gained = cut < len(s) and not starts_run(s, s[cut])
                del s[:cut]
                count += int(gained) - removed
        runs[cursor] = count
        best = max(best, count)
    return best


def _md_lag(cols: LogColumns) -> np.ndarray:
    """Mark-delete lag (ms) of every entry a cursor's mark-delete position reached, cursor by cursor."""
    _, p_time, (p_topic, p_ledger, p_entry) = _select(cols, "entry_persisted", "topic", "ledger", "entry")
    _, m_time, (m_cursor, m_ledger, m_entry) = _select(cols, "mark_delete_moved", "cursor", "to_ledger", "to_entry")
    topic_of_ledger = dict(zip(p_ledger.tolist(), p_topic.tolist()))
    lags = []
    for cursor in np.unique(m_cursor):
        mine = m_cursor == cursor
        ledgers = [ld for ld, e in zip(m_ledger[mine].tolist(), m_entry[mine].tolist()) if e >= 0]
        topics = {topic_of_ledger[ld] for ld in ledgers if ld in topic_of_ledger}
        if len(topics) != 1:
            continue
        topic = topics.pop()
        marks = position(m_ledger[mine], m_entry[mine])
        if np.any(np.diff(marks) < 0):
            raise AssertionError("a mark-delete position moved back")
        times = m_time[mine]
        entries = p_topic == topic
        where = np.searchsorted(marks, position(p_ledger[entries], p_entry[entries]), side="left")
        covered = where < len(marks)
        lags.append(times[where[covered]] - p_time[entries][covered])
    return np.concatenate(lags) if lags else np.empty(0, dtype=np.int64)


def _blocked_episodes(cols: LogColumns, end_ms: int) -> list[int]:
    reasons = {cols.string_id(r) for r in ORDERING_REASONS} - {-1}
    b_seq, b_time, (b_ledger, b_entry, b_reason) = _select(cols, "hash_blocked", "ledger", "entry", "reason")
    d_seq, d_time, (d_ledger, d_entry) = _select(cols, "dispatched", "ledger", "entry")
    ops = sorted(
        [
            (int(s), 0, int(t), int(ld), int(e))
            for s, t, ld, e, r in zip(b_seq, b_time, b_ledger, b_entry, b_reason)
            if int(r) in reasons
        ]
        + [(int(s), 1, int(t), int(ld), int(e)) for s, t, ld, e in zip(d_seq, d_time, d_ledger, d_entry)]
    )
    open_since: dict[tuple[int, int], int] = {}
    episodes = []
    for _seq, op, t, ld, e in ops:
        if op == 0:
            open_since.setdefault((ld, e), t)
        elif (ld, e) in open_since:
            episodes.append(t - open_since.pop((ld, e)))
    episodes.extend(end_ms - t for t in open_since.values())
    return episodes


def run_metrics(cols: LogColumns) -> dict[str, int]:
    """The metrics of one run (see the module docstring), from its log's columns."""
    end_ms = int(cols.time.max()) if len(cols) else 0
    _, _, (msg, key, rc, action) = _select(cols, "app_received", "msg", "key", "redelivery_count", "action")
    out_of_order = 0
    highest: dict[int, int] = {}
    for m, k in zip(msg.tolist(), key.tolist()):
        top = highest.get(k, -1)
        if m < top:
            out_of_order += 1
        else:
            highest[k] = m
    lags = _md_lag(cols)
    episodes = _blocked_episodes(cols, end_ms)
    metrics = {
        "published": int(np.count_nonzero(cols.kind == cols.code("message_published"))),
        "received": len(msg),
        "acked": int(np.count_nonzero(action == ACK)),
        "nacked": int(np.count_nonzero(action == NACK)),
        "crashed": int(np.count_nonzero(action == CRASH)),
        "dead_lettered": int(np.count_nonzero(cols.kind == cols.code("dead_lettered"))),
        "duplicates": len(msg) - len(np.unique(msg)),
        "redeliveries": int(np.count_nonzero((rc > 0) & (rc != NONE_VALUE))),
        "out_of_order": out_of_order,
        "max_ack_holes": _max_ack_holes(cols),
        "md_covered_entries": len(lags),
        **{f"md_lag_ms_p{p}": (nearest_rank(lags, p) if len(lags) else None) for p in PERCENTILES},
        "md_lag_ms_max": int(lags.max()) if len(lags) else None,
        "blocked_hash_episodes": len(episodes),
        "blocked_hash_ms_total": int(sum(episodes)),
        "blocked_hash_ms_max": max(episodes) if episodes else None,
        "end_ms": end_ms,
    }
    return metrics


__all__ = ["METRIC_COLUMNS", "ORDERING_REASONS", "field_index", "nearest_rank", "run_metrics"]
