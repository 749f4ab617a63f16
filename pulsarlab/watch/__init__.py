"""Watch a real Pulsar cluster through its admin REST API: live views, diagnosis over time, a recording, and a
reproduction of a recorded moment in the model.

Above the model, beside `pulsarlab.serve` (see docs/architecture.md): the HTTP polling is I/O, not the model.
`admin_client` (read-only GETs with pulsar-admin's token and TLS options), `readings` (which topics, what the
broker answered), `observed` (a `LabSnapshot` of it for the views), `findings` (the diagnosis across polls),
`watcher` (the loop, pacing and back-off, the frames, the timeline file), `terminal` (the text view),
`reproduce` (a `Lab` in the state a recorded moment shows, and what-ifs on it)::

    from pulsarlab.watch import AdminClient, Watcher
    w = Watcher(AdminClient("http://127.0.0.1:8080"), "orders", interval_s=2)
    w.poll(); w.state.findings; w.save("watch.plt.jsonl.gz")

The notebook's live views are `pulsarlab_widgets.live_watch.WatchViews`; the command is ``pulsarlab watch``.
"""

from __future__ import annotations

import importlib
from typing import Any

# names load on first use, so `pulsarlab serve` (whose parser names the watch command) imports none of this
_HOMES = {
    "AdminClient": "admin_client",
    "AdminError": "admin_client",
    "TlsOptions": "admin_client",
    "TopicName": "admin_client",
    "FindingTracker": "findings",
    "Tracked": "findings",
    "Reading": "readings",
    "Selection": "readings",
    "DEFAULT_INTERVAL_S": "options",
    "MIN_INTERVAL_S": "options",
    "PollStatus": "watcher",
    "Watcher": "watcher",
    "WatchState": "watcher",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pulsarlab.watch' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pulsarlab.watch.{home}"), name)


__all__ = sorted(_HOMES)
