"""The broker's delayed-delivery tracker factory, chosen by ``delayedDeliveryTrackerFactoryClassName``.

Models `DelayedDeliveryTrackerLoader`, `DelayedDeliveryTrackerFactory`, `InMemoryDelayedDeliveryTrackerFactory`
and `BucketDelayedDeliveryTrackerFactory` (docs/guide/delayed-delivery.md#hold-back, #in-memory-tracker,
#bucket-tracker). The broker loads one factory at start-up
from broker.conf; an unknown class name stops the broker (``IOException`` wrapping ``ClassNotFoundException``).
Each Shared / Key_Shared dispatcher asks it for a tracker the first time it reads a delayed message
(``newTracker(dispatcher)``). The bucket factory hands every tracker the broker's snapshot storage (BookKeeper)
and the subscription cursor's properties, so a tracker built after a restart recovers the sealed buckets; it
falls back to the in-memory tracker when that recovery fails, as Pulsar's does.

Simplifies: the settings are checked once at start-up (Pulsar reads them as longs and ints and fails later, or
never, on odd values); no per-topic or per-namespace delayed-delivery policies (the broker.conf values apply).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, MutableMapping

from pulsarlab.broker.delayed.bucket.snapshot import RecoverDelayedDeliveryTrackerException
from pulsarlab.broker.delayed.tracker_names import BUCKET_TRACKER_FACTORY, IN_MEMORY_TRACKER_FACTORY, is_bucket_tracker
from pulsarlab.clock import Scheduler
from pulsarlab.errors import IllegalArgumentException, PulsarError
from pulsarlab.event_catalogue.delayed_buckets import SNAPSHOT_FAILED
from pulsarlab.events import EventLog
from pulsarlab.profiles import BrokerConfig, Profile, get_profile

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.broker.delayed.bucket.snapshot import BucketSnapshotStorage
    from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker

FACTORY_CLASS_NAMES = (IN_MEMORY_TRACKER_FACTORY, BUCKET_TRACKER_FACTORY)


class DelayedDeliveryTrackerLoadException(PulsarError, ValueError):
    """The broker cannot load its tracker factory and does not start (`DelayedDeliveryTrackerLoader`)."""

    java_class = "java.io.IOException"


@dataclass(frozen=True)
class DelayedDeliverySettings:
    """The broker.conf settings of delayed delivery, checked (docs/guide/delayed-delivery.md#hold-back)."""

    enabled: bool
    tick_time_millis: int
    deliver_at_time_strict: bool
    fixed_delay_detection_lookahead: int
    max_delay_in_millis: int
    factory_class_name: str

    @classmethod
    def from_config(cls, config: BrokerConfig, profile: Profile) -> "DelayedDeliverySettings":
        """Read and check the settings; a bad value fails with the setting's name and what was expected."""
        name = config["delayedDeliveryTrackerFactoryClassName"]
        if not isinstance(name, str):
            raise TypeError(f"delayedDeliveryTrackerFactoryClassName must be a class name (str), got {name!r}")
        if name not in FACTORY_CLASS_NAMES:
            raise DelayedDeliveryTrackerLoadException(f"java.lang.ClassNotFoundException: {name}")
        settings = cls(
            enabled=_bool(config, "delayedDeliveryEnabled"),
            tick_time_millis=_int(config, "delayedDeliveryTickTimeMillis", 0),
            deliver_at_time_strict=_bool(config, "isDelayedDeliveryDeliverAtTimeStrict"),
            fixed_delay_detection_lookahead=_int(config, "delayedDeliveryFixedDelayDetectionLookahead", 0),
            max_delay_in_millis=_int(config, "delayedDeliveryMaxDelayInMillis", 0),
            factory_class_name=name,
        )
        if settings.max_delay_in_millis and not profile.max_delivery_delay_setting:
            raise IllegalArgumentException(
                f"delayedDeliveryMaxDelayInMillis is a Pulsar 4.0+ setting (PIP-315); a {profile.name} broker has "
                "no such limit (it would ignore the line in broker.conf): use version='4.0' or leave it at 0"
            )
        if name == BUCKET_TRACKER_FACTORY:
            _int(config, "delayedDeliveryMinIndexCountPerBucket", 0)
            _int(config, "delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds", 0)
            _int(config, "delayedDeliveryMaxNumBuckets", -1)
            if _int(config, "delayedDeliveryMaxIndexesPerBucketSnapshotSegment", -1) == 0:
                raise IllegalArgumentException(
                    "delayedDeliveryMaxIndexesPerBucketSnapshotSegment must be -1 (no limit) or at least 1, got 0"
                )
        return settings

    @property
    def uses_buckets(self) -> bool:
        return self.factory_class_name == BUCKET_TRACKER_FACTORY


class DelayedDeliveryTrackerFactory:
    """The broker's factory: ``new_tracker(...)`` builds the configured tracker for one dispatcher.

    ``storage`` is the snapshot storage that outlives broker restarts (only the bucket factory uses it).
    """

    def __init__(
        self,
        settings: DelayedDeliverySettings,
        config: BrokerConfig,
        profile: Profile,
        scheduler: Scheduler,
        storage: BucketSnapshotStorage,
        events: EventLog,
    ) -> None:
        self.settings = settings
        self.class_name = settings.factory_class_name
        self._config = BrokerConfig(config)
        self._profile = profile
        self._scheduler = scheduler
        self.storage = storage
        self._events = events

    def new_tracker(
        self, name: str, read_more_entries: Callable[[], object], cursor_properties: MutableMapping[str, str]
    ) -> InMemoryDelayedDeliveryTracker:
        """``newTracker(dispatcher)``: ``name`` is the dispatcher's ``"<topic> / <subscription>"``."""
        return new_delayed_delivery_tracker(
            self._scheduler,
            read_more_entries,
            config=self._config,
            profile=self._profile,
            snapshot_storage=self.storage,
            cursor_properties=cursor_properties,
            name=name,
            events=self._events if self._events.enabled else None,
        )


def load_delayed_delivery_tracker_factory(
    config: BrokerConfig, profile: Profile, scheduler: Scheduler, storage: BucketSnapshotStorage, events: EventLog
) -> DelayedDeliveryTrackerFactory:
    """``DelayedDeliveryTrackerLoader.loadDelayedDeliveryTrackerFactory(conf)`` at broker start-up."""
    return DelayedDeliveryTrackerFactory(
        DelayedDeliverySettings.from_config(config, profile), config, profile, scheduler, storage, events
    )


def new_delayed_delivery_tracker(
    scheduler: Scheduler,
    read_more_entries: Callable[[], object],
    *,
    config: BrokerConfig | None = None,
    profile: str | Profile | None = None,
    snapshot_storage: BucketSnapshotStorage | None = None,
    cursor_properties: MutableMapping[str, str] | None = None,
    name: str = "persistent://public/default/topic / subscription",
    events: EventLog | None = None,
    clock: Callable[[], int] | None = None,
) -> InMemoryDelayedDeliveryTracker:
    """The tracker ``delayedDeliveryTrackerFactoryClassName`` names, built from the broker config.

    ``config`` is the full broker config (`Profile.broker_config()`; the profile's defaults if None).
    The bucket tracker falls back to the in-memory one when recovery fails, as its factory does.
    """
    from pulsarlab.broker.delayed.in_memory import InMemoryDelayedDeliveryTracker

    prof = get_profile(profile)
    conf = config if config is not None else prof.broker_config()
    factory = conf.text("delayedDeliveryTrackerFactoryClassName")
    tick_time_millis = conf.integer("delayedDeliveryTickTimeMillis")
    strict = conf.flag("isDelayedDeliveryDeliverAtTimeStrict")

    def in_memory() -> InMemoryDelayedDeliveryTracker:
        return InMemoryDelayedDeliveryTracker(
            scheduler,
            read_more_entries,
            profile=prof,
            tick_time_millis=tick_time_millis,
            is_delayed_delivery_deliver_at_time_strict=strict,
            fixed_delay_detection_lookahead=conf.integer("delayedDeliveryFixedDelayDetectionLookahead"),
            clock=clock,
        )

    if factory == IN_MEMORY_TRACKER_FACTORY:
        return in_memory()
    if factory != BUCKET_TRACKER_FACTORY:
        raise IllegalArgumentException(
            f"delayedDeliveryTrackerFactoryClassName {factory!r} is not a tracker factory the lab models; "
            f"use {IN_MEMORY_TRACKER_FACTORY!r} or {BUCKET_TRACKER_FACTORY!r}"
        )
    # the bucket tracker loads with the first one (numpy with it), not when the broker starts
    from pulsarlab.broker.delayed.bucket.buckets import check_int
    from pulsarlab.broker.delayed.bucket.tracker import BucketDelayedDeliveryTracker

    step_seconds = conf.integer("delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds")
    check_int("delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds", step_seconds, 0)
    try:
        return BucketDelayedDeliveryTracker(
            scheduler,
            read_more_entries,
            snapshot_storage=snapshot_storage,
            cursor_properties=cursor_properties,
            min_index_count_per_bucket=conf.integer("delayedDeliveryMinIndexCountPerBucket"),
            time_step_per_bucket_snapshot_segment_millis=step_seconds * 1000,
            max_indexes_per_bucket_snapshot_segment=conf.integer("delayedDeliveryMaxIndexesPerBucketSnapshotSegment"),
            max_num_buckets=conf.integer("delayedDeliveryMaxNumBuckets"),
            name=name,
            events=events,
            profile=prof,
            tick_time_millis=tick_time_millis,
            is_delayed_delivery_deliver_at_time_strict=strict,
            clock=clock,
        )
    except RecoverDelayedDeliveryTrackerException as err:
        if events is not None:
            events.append(
                SNAPSHOT_FAILED,
                (clock or scheduler.now)(),
                tracker=name,
                start=-1,
                end=-1,
                op="recover (falling back to InMemoryDelayedDeliveryTracker)",
                error=str(err),
            )
        return in_memory()


def tracker_kind(tracker: Any) -> str:
    """A tracker's Pulsar class name, with the 3.x/4.0 vs 4.1 form of the in-memory one."""
    if is_bucket_tracker(tracker):
        return "BucketDelayedDeliveryTracker"
    form = getattr(tracker, "form", None)
    suffix = f" ({form.value.replace('_', ' ')})" if form is not None else ""
    return "InMemoryDelayedDeliveryTracker" + suffix


def buffer_memory_usage(tracker: Any) -> int:
    """``getBufferMemoryUsage()``: what stats print as ``delayedMessageIndexSizeInBytes``.

    In-memory tracker: its queue's (4.1: its bitmaps') estimated bytes; bucket tracker: the mutable
    bucket's and the shared queue's ``bytesCapacity`` (the bitmaps and stored segments are not counted).
    """
    usage: int = tracker.buffer_memory_usage() if is_bucket_tracker(tracker) else tracker.memory_bytes()
    return usage


def _int(config: BrokerConfig, key: str, minimum: int) -> int:
    value = config.integer(key)
    if value < minimum:
        raise IllegalArgumentException(f"broker setting {key} must be >= {minimum}, got {value}")
    return value


def _bool(config: BrokerConfig, key: str) -> bool:
    return config.flag(key)
