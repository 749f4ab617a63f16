"""The compact live text view of a watch, for a terminal without Jupyter (an SSH session).

Models no Pulsar class. `render` turns a `WatchState` into a screen of plain text: the poll's status line, one
block per subscription (type, backlog, mark-delete and read positions, the ack holes, each consumer's permits,
unacked count and blocked flag, Key_Shared ranges and draining hashes) and the findings with how long each has
held. The ``pulsarlab watch`` command redraws it in place on a terminal (ANSI clear) and appends it otherwise.
"""

from __future__ import annotations

from pulsarlab.snapshot.base import fmt_pos, short_topic
from pulsarlab.snapshot.lab import SubscriptionSnap
from pulsarlab.watch.findings import format_duration
from pulsarlab.watch.watcher import WatchState

WIDTH = 110
MAX_CONSUMERS = 12  # consumers listed per subscription; the rest are counted


def _clip(text: str, width: int = WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _subscription_lines(sub: SubscriptionSnap) -> list[str]:
    c = sub.cursor
    holes = c.individually_deleted_messages
    lines = [
        _clip(
            f"  {sub.name} ({sub.type or 'no consumers'}): backlog {c.backlog}, mark-delete {fmt_pos(c.mark_delete)}, "
            f"read {fmt_pos(c.read_position)}, acked ranges {len(c.individually_deleted)} {holes}"
        )
    ]
    d = sub.dispatcher
    draining: dict[int, list[str]] = {}
    if d is not None:
        for h in d.draining:
            draining.setdefault(h.consumer, []).append(f"{h.hash}({h.ref_count} unacked, {h.blocked} blocked)")
        if d.blocked_on_unacked:
            lines.append("    subscription BLOCKED on unacked messages (maxUnackedMessagesPerSubscription)")
    for con in sub.consumers[:MAX_CONSUMERS]:
        ranges = sub.hash_ranges(con.id)
        text = f"    {con.name}: permits {con.permits}, unacked {con.unacked}"
        if con.blocked:
            text += ", BLOCKED on unacked"
        if con.id in draining:
            text += ", draining " + " ".join(draining[con.id][:5]) + (" …" if len(draining[con.id]) > 5 else "")
        if ranges:
            shown = " ".join(f"[{a}, {b}]" for a, b in ranges[:3])
            text += f", {len(ranges)} hash range(s) {shown}" + (" …" if len(ranges) > 3 else "")
        lines.append(_clip(text))
    if len(sub.consumers) > MAX_CONSUMERS:
        lines.append(f"    … and {len(sub.consumers) - MAX_CONSUMERS} more consumer(s)")
    return lines


def render(state: WatchState, title: str = "") -> str:
    """The whole screen for one state."""
    head = f"pulsarlab watch {title}".rstrip()
    status = ("" if state.status.ok else "ERROR ") + state.status.message
    line = f"t = {state.time_ms / 1000:.1f} s · poll {state.status.poll} · {status}"
    lines = [_clip(head), line if not state.status.ok else _clip(line), ""]  # an error is shown whole
    for topic in state.snapshot.topics:
        lines.append(_clip(f"{short_topic(topic.name)}  (last entry {fmt_pos(topic.last_confirmed)})"))
        for sub in topic.subscriptions:
            lines.extend(_subscription_lines(sub))
    lines.append("")
    if state.findings:
        lines.append(f"findings ({len(state.findings)}):")
        lines.extend(_clip("  " + t.line()) for t in state.findings)
    else:
        lines.append("findings: none")
    for t in state.changes.cleared:
        lines.append(
            _clip(f"  cleared: {t.finding.rule} on {t.finding.subject} after {format_duration(t.duration_ms)}")
        )
    return "\n".join(lines)


CLEAR = "\x1b[H\x1b[2J"

__all__ = ["CLEAR", "render"]
