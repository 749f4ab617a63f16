"""A player or a figure as static HTML: plotly figures that a page steps through without a kernel.

Models no Pulsar class. `player_html` draws every frame of a `Player`'s timeline with each of its views, as the
live player draws it when stepping forward (frame ``i`` gets the events since frame ``i - 1``), and writes them with
the frame's label (number, time, event kind, the one-line explanation) into the page. There the script
``static/static_player.js`` shows them as a plotly animation: the first figure carries a plotly slider over the
frames and play / pause buttons, the other views follow it, and → / ← / space / Home / End work as in the live
player once the player has the focus.

Simplifies: a frame is drawn once, as reached by a step forward; the live player's jump (slider) gives a view the
events of every frame passed, the page shows the stored frame. The script applies a frame with ``Plotly.react``,
a full redraw of that frame, rather than ``Plotly.animate``, which merges a frame into the figure shown and leaves
traces, annotations and shapes of the previous frame behind when frames differ in them (our views' frames do).
Figures inside the page share one plotly template per view instead of one per frame.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
from plotly.io.json import to_json_plotly

from pulsarlab_widgets.player import events_between

if TYPE_CHECKING:
    from pulsarlab_widgets.player import Player

STATIC = Path(__file__).with_name("static")
_ids = itertools.count(1)


def page_script() -> str:
    """The script a page needs (once, after plotly.js) to draw `player_html` and `figure_html` output."""
    return (STATIC / "static_player.js").read_text()


def page_css() -> str:
    """The styles of the static players and figures."""
    return (STATIC / "static_player.css").read_text()


def _json_for_script(obj: Any) -> str:
    """JSON that is safe inside <script type="application/json"> (no ``</script>`` or ``<!--`` can occur)."""
    return to_json_plotly(obj).replace("</", "<\\/").replace("<!--", "<\\u0021--")


def _split_template(fig: go.Figure) -> tuple[dict, dict]:
    spec = fig.to_plotly_json()
    layout = dict(spec.get("layout") or {})
    template = layout.pop("template", None) or {}
    return {"data": spec.get("data") or [], "layout": layout}, template


MAX_FRAMES = 200


def frame_indices(last: int, start: int, max_frames: int | None = MAX_FRAMES) -> list[int]:
    """The frames a page carries: all of 0..last, or ``max_frames`` of them evenly spread (first, start and last
    always among them) when there are more."""
    if max_frames is not None and max_frames < 2:
        raise ValueError(f"max_frames must be at least 2, got {max_frames}")
    if max_frames is None or last + 1 <= max_frames:
        return list(range(last + 1))
    picked = {round(j * last / (max_frames - 1)) for j in range(max_frames - 1)} | {start, last}
    return sorted(picked)


def delta(prev: Any, cur: Any) -> Any:
    """``cur`` written against ``prev`` (plain JSON values): ``{"$same": 1}`` for an equal value, ``{"$ext": tail}``
    for a list that extends ``prev``, ``{"$list": [...]}`` / ``{"$dict": {...}}`` for lists of the same length and
    dicts taken apart. Plotly figures carry no ``$`` keys, so a plain dict never reads as one of these."""
    if prev == cur:
        return {"$same": 1}
    if isinstance(prev, dict) and isinstance(cur, dict):
        return {"$dict": {k: delta(prev[k], v) if k in prev else v for k, v in cur.items()}}
    if isinstance(prev, list) and isinstance(cur, list) and prev:
        if len(cur) > len(prev) and cur[: len(prev)] == prev:
            return {"$ext": cur[len(prev) :]}
        if len(cur) == len(prev):
            return {"$list": [delta(a, b) for a, b in zip(prev, cur)]}
    return cur


def undelta(prev: Any, d: Any) -> Any:
    """The value `delta` wrote (what the page script does to show a frame)."""
    if isinstance(d, dict) and len(d) == 1:
        ((key, value),) = d.items()
        if key == "$same":
            return prev
        if key == "$ext":
            return prev + value
        if key == "$list":
            return [undelta(a, b) for a, b in zip(prev, value)]
        if key == "$dict":
            return {k: undelta(prev[k], v) if k in prev else v for k, v in value.items()}
    return d


def player_spec(player: Player, max_frames: int | None = MAX_FRAMES) -> dict[str, Any]:
    """The frames the player can show (0..its slider's max; at most ``max_frames`` of them, evenly spread) drawn by
    each of its views, and each frame's label. Frame 0 of a view is whole, each later one its `delta` from the one
    before (a growing timeline repeats its history in every frame: lab 06's 200 frames are 220 MB whole).
    A frame gets the events since the frame carried before it, as after
    a step (every frame carried) or a jump (some left out) in the live player."""
    last = player.slider.max
    start = min(player.index, last)
    indices = frame_indices(last, start, max_frames)
    views: list[dict[str, Any]] = [{"template": None, "frames": [], "last": None} for _ in player.views]
    labels = []
    previous = None
    for i in indices:
        snapshot = player.timeline[i].snapshot
        events = events_between(player.timeline, previous, i)
        previous = i
        for view, out in zip(player.views, views):
            frame, template = _split_template(view(snapshot, events))
            if out["template"] is None:
                out["template"] = template
            frame = json.loads(to_json_plotly(frame))
            out["frames"].append(frame if out["last"] is None else delta(out["last"], frame))
            out["last"] = frame
        label = player._label_html(i)
        if len(indices) < last + 1:
            label += f' <span class="pl-sampled">({len(indices)} of the {last + 1} frames on this page)</span>'
        labels.append(label)
    return {
        "start": indices.index(start),
        "interval": player.base_interval,
        "indices": indices,
        "labels": labels,
        "views": views,
    }


def player_html(player: Player, div_id: str | None = None, max_frames: int | None = MAX_FRAMES) -> str:
    """The player as a static block: label, one plotly figure per view, the frames as JSON for the page script."""
    spec = player_spec(player, max_frames)
    div_id = div_id or f"pulsarlab-player-{next(_ids)}"
    title = f'<div class="pl-title"><b>{html.escape(player.title)}</b></div>' if player.title else ""
    views = "".join(f'<div class="pl-view" data-view="{v}"></div>' for v in range(len(spec["views"])))
    return (
        f'<div class="pulsarlab-static-player" id="{html.escape(div_id)}" tabindex="0" data-frame="{spec["start"]}">'
        f'{title}<div class="pl-label">{spec["labels"][spec["start"]]}</div>{views}'
        f'<script type="application/json" class="pl-spec">{_json_for_script(spec)}</script></div>'
    )


def figure_html(fig: go.Figure | dict, div_id: str | None = None) -> str:
    """A plotly figure as a static block the page script draws."""
    spec = fig.to_plotly_json() if isinstance(fig, go.Figure) else dict(fig)
    spec = {"data": spec.get("data") or [], "layout": spec.get("layout") or {}}
    div_id = div_id or f"pulsarlab-figure-{next(_ids)}"
    return (
        f'<div class="pulsarlab-static-figure" id="{html.escape(div_id)}">'
        f'<script type="application/json" class="pl-spec">{_json_for_script(spec)}</script></div>'
    )


def spec_of(html_text: str) -> dict[str, Any]:
    """The JSON a `player_html` or `figure_html` block carries (for tests and tools)."""
    found = re.search(r'<script\b[^>]*class="pl-spec"[^>]*>(.*?)</script>', html_text, flags=re.S)
    if found is None:
        raise ValueError("no pulsarlab player or figure block in this HTML")
    return json.loads(found.group(1))


__all__ = [
    "MAX_FRAMES",
    "frame_indices",
    "figure_html",
    "page_css",
    "page_script",
    "player_html",
    "player_spec",
    "spec_of",
]
