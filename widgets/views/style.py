"""Shared look of the Key_Shared views: one colour per consumer id, labels and number formatting.

Models no Pulsar class. Colours are a pure function of the consumer id, so a consumer keeps its colour
in every view, frame and notebook.
"""

from __future__ import annotations

from typing import Any

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
