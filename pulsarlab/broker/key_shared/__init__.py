"""Key_Shared on the broker: the three sticky-key consumer selectors and their 4.x assignment diffs.

Models `PersistentStickyKeyDispatcherMultipleConsumers`' choice of selector
(docs/guide/key-shared-selectors.md#choosing-a-selector).
"""

from __future__ import annotations

from typing import Any

from pulsarlab.broker.key_shared.base import NO_CONSUMER, Consumer, ImpactedConsumers, StickyKeyConsumerSelector
from pulsarlab.profiles import Profile, get_profile

SELECTOR_KINDS = ("auto_split", "consistent_hashing", "sticky")


def make_selector(kind: str, version: str | Profile | None = None, **kwargs: Any) -> StickyKeyConsumerSelector[Any]:
    """A selector by kind: "auto_split" (range_size=65536), "consistent_hashing" (points=100) or
    "sticky" (range_size=65536), for a version profile."""
    profile = get_profile(version)
    if kind == "auto_split":
        from pulsarlab.broker.key_shared.autosplit import HashRangeAutoSplitSelector

        return HashRangeAutoSplitSelector(profile, **kwargs)
    if kind == "consistent_hashing":
        from pulsarlab.broker.key_shared.consistent_hashing import ConsistentHashingSelector

        return ConsistentHashingSelector(profile, **kwargs)
    if kind == "sticky":
        from pulsarlab.broker.key_shared.sticky_ranges import HashRangeExclusiveSelector

        return HashRangeExclusiveSelector(profile, **kwargs)
    raise ValueError(f"unknown selector kind {kind!r}; choose one of: {', '.join(SELECTOR_KINDS)}")


def selector_for_subscription(
    key_shared_mode: str | None, version: str | Profile | None = None, broker_config: dict[str, object] | None = None
) -> StickyKeyConsumerSelector[Any]:
    """The selector a Key_Shared dispatcher builds for a mode ("AUTO_SPLIT" or "STICKY") and broker.conf."""
    profile = get_profile(version)
    conf = profile.broker_config(broker_config)
    if key_shared_mode == "STICKY":
        return make_selector("sticky", profile)
    if key_shared_mode != "AUTO_SPLIT":
        raise ValueError(f"key_shared mode must be AUTO_SPLIT or STICKY, not {key_shared_mode!r}")
    if conf.flag("subscriptionKeySharedUseConsistentHashing"):
        return make_selector(
            "consistent_hashing", profile, points=conf.integer("subscriptionKeySharedConsistentHashingReplicaPoints")
        )
    return make_selector("auto_split", profile)


__all__ = [
    "NO_CONSUMER",
    "Consumer",
    "ImpactedConsumers",
    "StickyKeyConsumerSelector",
    "SELECTOR_KINDS",
    "make_selector",
    "selector_for_subscription",
]
