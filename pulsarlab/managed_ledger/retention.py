"""The retention policy of a managed ledger and the rule that picks which consumed ledgers to delete.

Models `RetentionPolicies` (``retentionTimeInMinutes``, ``retentionSizeInMB``: 0 keeps nothing once consumed, -1
means no limit of that kind, both 0 or both non-zero) and the selection step of
`ManagedLedgerImpl.internalTrimLedgers` (with `hasLedgerRetentionExpired` and `isLedgerRetentionOverSizeQuota`):
the candidates are the ledgers before the slowest durable cursor's ledger (all but the current one when there is
no durable cursor); the current ledger is never deleted; walking from the oldest, a ledger is deleted while it is
older than the time limit or the ledgers left after deleting it would still hold at least the size limit, and the
walk stops at the first ledger kept. Pure functions; `pulsarlab.managed_ledger.ledger` applies the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

_MB = 1024 * 1024
_MINUTE_MS = 60_000
INVALID_RETENTION = (
    "Invalid retention policy: Setting a single time or size limit to 0 is invalid when one of the limits has a "
    "non-zero value. Use the value of -1 instead of 0 to ignore a specific limit. To disable retention both limits "
    "must be set to 0."
)


def _integer(name: str, value: object) -> int:
    if type(value) is not int:
        raise ValueError(f"Invalid retention policy: {name} must be an integer, got {value!r}")
    return value


@dataclass(frozen=True)
class RetentionPolicies:
    """`RetentionPolicies`: how long (minutes) and how much (MB) consumed data a topic keeps; -1 is no limit."""

    retention_time_in_minutes: int = 0
    retention_size_in_mb: int = 0

    def __post_init__(self) -> None:
        _integer("retentionTimeInMinutes", self.retention_time_in_minutes)
        _integer("retentionSizeInMB", self.retention_size_in_mb)

    @classmethod
    def of(cls, time_in_minutes: object, size_in_mb: object) -> "RetentionPolicies":
        """A policy from untyped input (broker.conf, a request body): ValueError with Pulsar's text unless both
        are integers."""
        return cls(_integer("retentionTimeInMinutes", time_in_minutes), _integer("retentionSizeInMB", size_in_mb))

    def validate(self) -> None:
        """`AdminResource.validateRetentionPolicies`: ValueError with Pulsar's text for a policy it refuses."""
        if self.retention_size_in_mb < -1:
            raise ValueError("Invalid retention policy: size limit must be >= -1")
        if self.retention_time_in_minutes < -1:
            raise ValueError("Invalid retention policy: time limit must be >= -1")
        if (self.retention_time_in_minutes == 0) != (self.retention_size_in_mb == 0):
            raise ValueError(INVALID_RETENTION)

    @property
    def time_ms(self) -> int:
        """`ManagedLedgerConfig.getRetentionTimeMillis`: negative means no time limit."""
        t = self.retention_time_in_minutes
        return t * _MINUTE_MS if t >= 0 else -1

    @property
    def keeps_everything(self) -> bool:
        """Both limits -1: no consumed ledger is ever deleted."""
        return self.retention_time_in_minutes < 0 and self.retention_size_in_mb < 0

    def to_json(self) -> dict[str, int]:
        return {
            "retentionTimeInMinutes": self.retention_time_in_minutes,
            "retentionSizeInMB": self.retention_size_in_mb,
        }


@dataclass(frozen=True)
class TrimCandidate:
    """A closed ledger before the slowest durable cursor: id, bytes, and when it was closed (`LedgerInfo`)."""

    ledger_id: int
    size: int
    closed_at: int


def ledgers_to_delete(
    candidates: Iterable[TrimCandidate], policy: RetentionPolicies, total_size: int, now: int
) -> tuple[list[int], TrimCandidate | None]:
    """The leading candidates `internalTrimLedgers` deletes, and the first one it keeps (None: none kept).

    ``total_size`` is the managed ledger's ``totalSize`` before the trim."""
    time_ms = policy.time_ms
    size_limit = policy.retention_size_in_mb
    out: list[int] = []
    to_delete = 0
    for c in candidates:
        to_delete += c.size
        over_quota = size_limit >= 0 and total_size - to_delete >= size_limit * _MB
        expired = time_ms >= 0 and now - c.closed_at > time_ms
        if not (over_quota or expired):
            return out, c
        out.append(c.ledger_id)
    return out, None


def next_check_at(kept: TrimCandidate, policy: RetentionPolicies, start: int, interval_ms: int) -> int | None:
    """When the broker's periodic check (`BrokerService.checkConsumedLedgers`, every ``interval_ms`` from
    ``start``) first finds ``kept`` past the time limit; None when no time limit can delete it or no check runs."""
    time_ms = policy.time_ms
    if time_ms < 0 or interval_ms <= 0:
        return None
    expires = kept.closed_at + time_ms + 1
    ticks = max(1, -(-(expires - start) // interval_ms))
    return start + ticks * interval_ms
