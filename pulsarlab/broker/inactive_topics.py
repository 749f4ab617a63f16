"""Inactive topic deletion: the broker's periodic sweep that deletes topics nobody uses.

Models `BrokerService.checkGC` (run every ``brokerDeleteInactiveTopicsFrequencySeconds``, 60, from the broker's
start while ``brokerDeleteInactiveTopicsEnabled``, true) and `PersistentTopic.checkGC` with its
`InactiveTopicPolicies`: at each sweep a topic that is active (`isActive(deleteMode)`: a producer or consumer
connected, or in mode ``delete_when_no_subscriptions`` any subscription, in ``delete_when_subscriptions_caught_up``
any subscription with a backlog) notes the time (``lastActive``, also set when the topic is loaded); one inactive
for ``brokerDeleteInactiveTopicsMaxInactiveDurationSeconds`` (unset: the frequency) is deleted unless its
retention time keeps it (`shouldTopicBeRetained`: a negative time keeps it forever, a positive one while the
topic was active more recently). Deleting frees what the topic holds: subscriptions with their cursors, the
managed ledger's entries, cache and bookie files, deduplication state, its schema when it is not a partition.
A partition goes like any topic; the partitioned topic's metadata goes with its last partition only when
``brokerDeleteInactivePartitionedTopicMetadataEnabled`` (false). docs/guide/retention.md#inactive-topics.

Simplifies: no namespace- or topic-level ``inactiveTopicPolicies`` (the broker's settings apply to every topic);
a non-persistent topic follows the same rule without the retention check (`NonPersistentTopic.checkGC`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pulsarlab.event_catalogue.broker import TOPIC_DELETED_INACTIVE

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.service import BrokerService
    from pulsarlab.broker.topic import PersistentTopic
    from pulsarlab.profiles import BrokerConfig


class InactiveTopicDeleteMode(enum.Enum):
    """`InactiveTopicDeleteMode`: what keeps an idle topic besides producers and consumers."""

    delete_when_no_subscriptions = "delete_when_no_subscriptions"
    delete_when_subscriptions_caught_up = "delete_when_subscriptions_caught_up"


@dataclass(frozen=True)
class InactiveTopicPolicies:
    """`InactiveTopicPolicies` as the broker's settings give them."""

    delete_while_inactive: bool
    mode: InactiveTopicDeleteMode
    max_inactive_ms: int
    frequency_ms: int
    delete_partitioned_metadata: bool

    @classmethod
    def from_config(cls, config: BrokerConfig) -> "InactiveTopicPolicies":
        """The broker.conf settings, checked as Pulsar's `ServiceConfiguration` would refuse them."""
        frequency = config["brokerDeleteInactiveTopicsFrequencySeconds"]
        if not isinstance(frequency, int) or isinstance(frequency, bool) or frequency <= 0:
            raise ValueError(
                f"brokerDeleteInactiveTopicsFrequencySeconds must be a positive integer, got {frequency!r}"
            )
        max_inactive = config["brokerDeleteInactiveTopicsMaxInactiveDurationSeconds"]
        if max_inactive is None:
            max_inactive = frequency
        elif not isinstance(max_inactive, int) or isinstance(max_inactive, bool) or max_inactive < 0:
            raise ValueError(
                "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds must be an integer >= 0 or unset, "
                f"got {max_inactive!r}"
            )
        mode_name = config["brokerDeleteInactiveTopicsMode"]
        try:
            mode = InactiveTopicDeleteMode(mode_name)
        except ValueError:
            known = ", ".join(m.value for m in InactiveTopicDeleteMode)
            raise ValueError(f"brokerDeleteInactiveTopicsMode must be one of {known}, got {mode_name!r}") from None
        return cls(
            delete_while_inactive=config.flag("brokerDeleteInactiveTopicsEnabled"),
            mode=mode,
            max_inactive_ms=max_inactive * 1000,
            frequency_ms=frequency * 1000,
            delete_partitioned_metadata=config.flag("brokerDeleteInactivePartitionedTopicMetadataEnabled"),
        )


def is_active(topic: "PersistentTopic", mode: InactiveTopicDeleteMode) -> bool:
    """`PersistentTopic.isActive(deleteMode)`."""
    subs = topic.subscriptions.values()
    if mode is InactiveTopicDeleteMode.delete_when_no_subscriptions:
        if subs:
            return True
    elif any(_backlog(sub) > 0 for sub in subs):
        return True
    return bool(topic.producers or topic.access.waiting or any(sub.consumers() for sub in subs))


def _backlog(sub: Any) -> int:
    cursor = getattr(sub, "cursor", None)  # a non-persistent subscription keeps no backlog
    return 0 if cursor is None else cursor.number_of_entries_in_backlog(False)


def retained(service: "BrokerService", topic: "PersistentTopic", now: int) -> bool:
    """`shouldTopicBeRetained`: the retention time keeps an idle topic (negative: forever)."""
    if getattr(topic, "non_persistent", False):
        return False
    minutes = topic.ledger.retention.retention_time_in_minutes  # the namespace's, else the broker's defaults
    return minutes < 0 or now - topic.last_active_ms < minutes * 60_000


class InactivityMonitor:
    """The broker's inactivity monitor: one `checkGC` sweep over every topic each period."""

    def __init__(self, service: "BrokerService") -> None:
        self.service = service
        self.policies = InactiveTopicPolicies.from_config(service.config)
        self._periodic = (
            service.scheduler.call_every(self.policies.frequency_ms, self.check_gc, "checkGC")
            if self.policies.delete_while_inactive
            else None
        )

    def check_gc(self) -> list[str]:
        """`BrokerService.checkGC`: each topic's `checkGC`; returns the names deleted."""
        service, policies = self.service, self.policies
        now = service.scheduler.now_ms
        deleted = []
        for topic in [*service.topics.values(), *service.non_persistent_topics.values()]:
            if is_active(topic, policies.mode):
                topic.last_active_ms = now
            elif now - topic.last_active_ms >= policies.max_inactive_ms and not retained(service, topic, now):
                self._delete(topic, now)
                deleted.append(topic.name)
        return deleted

    def _delete(self, topic: "PersistentTopic", now: int) -> None:
        service = self.service
        service.remove_topic(topic, drop_schema=topic.partition_index < 0)
        if service.events.enabled:
            service.events.append(
                TOPIC_DELETED_INACTIVE,
                now,
                topic=topic.id,
                name=topic.name,
                inactive_ms=now - topic.last_active_ms,
                mode=self.policies.mode.value,
            )
        if topic.partition_index >= 0 and self.policies.delete_partitioned_metadata:
            service.drop_partitioned_metadata_if_empty(topic.name)

    def cancel(self) -> None:
        """Stop the sweeps (the broker closes)."""
        if self._periodic is not None:
            self._periodic.cancel()
