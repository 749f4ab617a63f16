"""Importers: real ``pulsar-admin topics stats`` / ``stats-internal`` JSON into typed objects and a diagnosis.

Models the admin output classes of `TopicStatsImpl` / `PersistentTopicInternalStats` (see `stats` and `stats_internal`)
and reads pasted or
saved broker output leniently (`lenient_json`), the lab's own ``lab.admin.topics.stats(t)`` /
``stats_internal(t)`` dicts alike. `diagnose` turns them into findings citing the broker rules.

    from pulsarlab.importers import load, diagnose, format_findings, samples_dir
    stats = load(samples_dir() / "ack-holes.stats.json")          # data/broker-json/ in the checkout
    internal = load(samples_dir() / "ack-holes.stats-internal.json")
    print(format_findings(diagnose(stats, internal)))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pulsarlab.importers import lenient_json
from pulsarlab.importers.diagnose import Finding, Limits, Severity, diagnose, format_findings, infer_line
from pulsarlab.importers.fields import describe
from pulsarlab.importers.lenient_json import JsonSource, StatsFormatError
from pulsarlab.importers.ranges import (
    AckRange,
    RangeFormatError,
    format_ranges,
    parse_ranges,
    ranges_from_set,
    ranges_to_set,
)
from pulsarlab.importers.samples import samples_dir
from pulsarlab.importers.stats import (
    ConsumerStats,
    DrainingHash,
    HashRange,
    SubscriptionStats,
    TopicStats,
    load_stats,
    read_stats,
)
from pulsarlab.importers.stats import from_json as _stats_from_json
from pulsarlab.importers.stats_internal import (
    CursorStats,
    LedgerInfo,
    PartitionedTopicInternalStats,
    PersistentTopicInternalStats,
    load_stats_internal,
    read_stats_internal,
)
from pulsarlab.importers.stats_internal import from_json as _internal_from_json

Imported = TopicStats | PersistentTopicInternalStats | PartitionedTopicInternalStats


def read(data: Any, *, source: str | None = None) -> Imported:
    """stats or stats-internal, told apart by their fields (``cursors``/``ledgers`` vs ``subscriptions``)."""
    data, src = lenient_json.read(data, source=source)
    return _dispatch(data, src)


def load(path: str | Path) -> Imported:
    """Read a saved stats or stats-internal file, whichever it is."""
    data, src = lenient_json.load(path)
    return _dispatch(data, src)


def _dispatch(data: Any, src: JsonSource) -> Imported:
    if not isinstance(data, dict):
        raise src.error(
            f"expected the JSON object of pulsar-admin topics stats or stats-internal, got {describe(data)}"
        )
    partitions = data.get("partitions")
    first = next(iter(partitions.values()), None) if isinstance(partitions, dict) else None
    internal = (
        "cursors" in data
        or "ledgers" in data
        or "entriesAddedCounter" in data
        or ("subscriptions" not in data and isinstance(first, dict) and ("cursors" in first or "ledgers" in first))
    )
    return _internal_from_json(data, src) if internal else _stats_from_json(data, src)


__all__ = [
    "AckRange",
    "ConsumerStats",
    "CursorStats",
    "DrainingHash",
    "Finding",
    "HashRange",
    "Imported",
    "JsonSource",
    "LedgerInfo",
    "Limits",
    "PartitionedTopicInternalStats",
    "PersistentTopicInternalStats",
    "RangeFormatError",
    "Severity",
    "StatsFormatError",
    "SubscriptionStats",
    "TopicStats",
    "diagnose",
    "format_findings",
    "format_ranges",
    "infer_line",
    "load",
    "load_stats",
    "load_stats_internal",
    "parse_ranges",
    "ranges_from_set",
    "ranges_to_set",
    "read",
    "read_stats",
    "read_stats_internal",
    "samples_dir",
]
