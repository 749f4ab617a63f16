"""The names that choose and mark a delayed-delivery tracker: Pulsar's factory class names
(``delayedDeliveryTrackerFactoryClassName``) and the cursor-property prefix of the bucket tracker's snapshots
(`BucketDelayedDeliveryTracker` ``DELAYED_BUCKET_KEY_PREFIX``).

Kept apart from the trackers so the broker, its dispatchers and its restart name them without loading the bucket
tracker (and numpy under it) until a bucket tracker is configured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.delayed.bucket.tracker import BucketDelayedDeliveryTracker

CURSOR_INTERNAL_PROPERTY_PREFIX = "#pulsar.internal."
DELAYED_BUCKET_KEY_PREFIX = CURSOR_INTERNAL_PROPERTY_PREFIX + "delayed.bucket"
IN_MEMORY_TRACKER_FACTORY = "org.apache.pulsar.broker.delayed.InMemoryDelayedDeliveryTrackerFactory"
BUCKET_TRACKER_FACTORY = "org.apache.pulsar.broker.delayed.BucketDelayedDeliveryTrackerFactory"


def is_bucket_tracker(tracker: object) -> TypeGuard["BucketDelayedDeliveryTracker"]:
    """Whether ``tracker`` (or None) is a `BucketDelayedDeliveryTracker` (which sets ``BUCKET_BASED``)."""
    return getattr(tracker, "BUCKET_BASED", False) is True
