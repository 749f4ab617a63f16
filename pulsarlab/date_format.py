"""Pulsar's broker-side timestamp format, as printed in stats and stats-internal JSON.

Models `org.apache.pulsar.common.util.DateFormatter.format` on a broker running in UTC.
"""

from __future__ import annotations

import datetime as _dt


def format_timestamp(millis: int) -> str:
    """Pulsar's `DateFormatter.format(ms)` on a UTC broker: ISO_OFFSET_DATE_TIME, e.g. ``2026-01-01T00:00:00.5Z``.

    Seconds are always printed; the fraction is omitted when zero and otherwise printed without
    trailing zeros (Java's ``appendFraction(NANO_OF_SECOND, 0, 9, true)``).
    """
    seconds, ms = divmod(int(millis), 1000)
    moment = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(seconds=seconds)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if ms:
        text += "." + f"{ms:03d}".rstrip("0")
    return text + "Z"
