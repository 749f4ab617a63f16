"""Shared look of the Key_Shared views: one colour per consumer id, labels and number formatting.

Models no Pulsar class. Colours are a pure function of the consumer id, so a consumer keeps its colour
in every view, frame and notebook.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import plotly.express as px

PALETTE: tuple[str, ...] = tuple(px.colors.qualitative.Plotly) + tuple(px.colors.qualitative.D3[1::2])
NOBODY_COLOR = "#d9d9d9"
REJECTED_COLOR = "#d62728"
HIGHLIGHT_COLOR = "#111111"


def consumer_color(consumer_id: int | None) -> str:
    """The colour of a consumer id (grey for "no consumer")."""
    if consumer_id is None:
        return NOBODY_COLOR
    return PALETTE[(int(consumer_id) - 1) % len(PALETTE)]


def consumer_label(consumer_id: int | None, names: dict[int, str]) -> str:
    """``c1 (id 1)``, or ``no consumer``."""
    if consumer_id is None:
        return "no consumer"
    return f"{names.get(consumer_id, '?')} (id {consumer_id})"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 entry``, ``2 entries`` (``words`` for irregular plurals)."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def kind_label(snapshot: dict[str, Any]) -> str:
    """``consistent_hashing, Pulsar 4.0`` for a snapshot from the scenario driver."""
    kind = snapshot.get("kind", "?")
    version = snapshot.get("version")
    return f"{kind}, Pulsar {version}" if version else str(kind)


def event_kind(event: Any) -> str | None:
    """The kind of an event object (a pulsarlab Event, or anything with ``.kind``)."""
    return getattr(event, "kind", None)


def event_fields(event: Any) -> dict[str, Any]:
    return getattr(event, "fields", {}) or {}


def check_snapshot(snapshot: Any, needs: str, view: str) -> dict[str, Any]:
    """Fail clearly when a view gets something that is not the snapshot it draws."""
    if not isinstance(snapshot, dict) or needs not in snapshot:
        got = sorted(snapshot) if isinstance(snapshot, dict) else type(snapshot).__name__
        raise ValueError(f"{view} draws a selector snapshot with a {needs!r} entry; got {got}")
    if "key_hash_range" not in snapshot:
        raise ValueError(
            f"{view} needs the snapshot's 'key_hash_range'; take snapshots from KeySharedScenario.snapshot() "
            "or its timeline"
        )
    return snapshot


def nice_step(raw: float) -> int:
    """The smallest of 1, 2, 5, 10, 20, 50, ... that is at least ``raw`` (a tick step for a count axis)."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if step * m >= raw:
                return step * m
        step *= 10


def count_axis(values: Iterable[float | None], min_top: int = 1, max_ticks: int = 5) -> dict[str, Any]:
    """Axis settings for a count: integer ticks (``dtick`` >= 1) from 0, a range from 0 (or from the lowest value
    when one is negative) to a little over the highest value (at least ``min_top``)."""
    vals = [v for v in values if v is not None]
    lo = min([0, *vals])
    hi = max([min_top, *vals])
    dtick = nice_step((hi - lo) / max_ticks)
    pad = max(0.05 * (hi - lo), 0.2)
    return dict(range=[lo - pad if lo < 0 else 0, hi + pad], tick0=0, dtick=dtick, tickformat="d")


def index_axis(first: int, last: int, max_ticks: int = 10) -> dict[str, Any]:
    """Axis settings for integer positions ``first..last`` (event indexes, entry ids): integer ticks, half a step
    of room either side, never a range narrower than 0..1 around a single value."""
    last = max(last, first + 1)
    return dict(range=[first - 0.5, last + 0.5], tick0=0, dtick=nice_step((last - first) / max_ticks), tickformat="d")


def legend_below(height: int, top: int, bottom: int, gap_px: int = 50, **extra: Any) -> dict[str, Any]:
    """A horizontal legend ``gap_px`` pixels under the plot area (clear of the x axis' ticks and title) of a figure
    ``height`` px high with margins ``top`` and ``bottom``; the bottom margin must hold the gap and the legend."""
    plot = max(height - top - bottom, 1)
    return dict(orientation="h", x=0, xanchor="left", yanchor="top", y=-gap_px / plot, **extra)


def step_points(values: Sequence[Any]) -> list[int]:
    """The indexes of ``values`` a ``line_shape="hv"`` step line needs to draw all of them exactly: the first, each
    change, the last, and the last value before a gap (None), where the step would otherwise stop early.

    Drawn at these points the step line is the line through every value (each dropped value repeats the one
    before it), so a series of 2,000 samples with 40 changes sends 40 points to the browser, not 2,000."""
    last = len(values) - 1
    return [
        i
        for i, v in enumerate(values)
        if i == 0 or i == last or v != values[i - 1] or (v is not None and values[i + 1] is None)
    ]


def translucent(color: str, alpha: float) -> str:
    """``#rrggbb`` as ``rgba(r, g, b, alpha)``."""
    r, g, b = (int(color[k : k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"
