"""The events of a watch over a real cluster's admin REST API: one per poll, good or failed.

Models no Pulsar class; appended to a watch's timeline by `pulsarlab.watch.watcher.Watcher` (never by the
model). ``responses`` holds what the admin API returned, topic by topic (``stats``, the partitions'
``stats-internal``), so a recording keeps the broker's own JSON and nothing else (no payloads, no token).
"""

from __future__ import annotations

from pulsarlab.events import event_type

_RULE = "read-only GETs of the broker's admin REST API (PersistentTopics.getStats / getInternalStats)"
ADMIN_POLLED = event_type(
    "admin_polled",
    "poll:int topics:int findings:int appeared:int cleared:int responses:json",
    "poll {poll}: stats of {topics} topic(s) read; {findings} finding(s), {appeared} new, {cleared} cleared",
    rule=_RULE,
)
ADMIN_POLL_FAILED = event_type(
    "admin_poll_failed",
    "poll:int url:str status:int reason:str retry_ms:int",
    "poll {poll}: {url} answered {status} ({reason}); the last good state stays on screen, next try in {retry_ms} ms",
    rule=_RULE,
)
