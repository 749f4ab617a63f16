"""The player's keyboard: → / ← step, space plays or pauses, Home / End jump to the first / last frame.

Models no Pulsar class. A tiny anywidget whose front end listens for those keys and sends each to Python, where
`PlayerKeys.press` moves the player exactly as its buttons do. In JupyterLab the keys reach a player only while the
focus is inside it (a click on one of its controls), so the notebook's own shortcuts keep working; in presenter
mode (`pulsarlab present`, whose page body has the class ``pulsarlab-present``) they go to the player that fills
most of the window.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import anywidget
import ipywidgets as widgets

KEYS = ("ArrowRight", "ArrowLeft", " ", "Home", "End")


class PlayerKeys(anywidget.AnyWidget):
    """Sends the player's keys from the browser to ``on_key`` (one call per key press)."""

    _esm = Path(__file__).with_name("static") / "player_keys.js"

    def __init__(self, on_key: Callable[[str], None], **kwargs: Any) -> None:
        super().__init__(layout=widgets.Layout(width="0px", height="0px", overflow="hidden"), **kwargs)
        self._on_key = on_key
        self.on_msg(self._received)

    def _received(self, _widget: Any, content: Any, _buffers: Any) -> None:
        key = content.get("key") if isinstance(content, dict) else None
        if key in KEYS:
            self._on_key(key)


__all__ = ["KEYS", "PlayerKeys"]
