"""Version profiles: every switch and default that differs between the Pulsar lines the lab models.

Models no single Pulsar class; it collects the version map of docs/guide/README.md. Each component reads its
switches from a ``Profile``; nothing else in the model branches on a version string. The named
profiles are release lines ("3.0", "4.0", "4.1") plus a few historical patch levels whose
Key_Shared selectors differ ("2.10", "3.0.0", "3.0.3").
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Mapping


class ConsistentHashingVariant(enum.Enum):
    """Which generation of ConsistentHashingStickyKeyConsumerSelector
    (docs/guide/key-shared-selectors.md#consistent-hashing)."""

    LEGACY = "legacy"  # point key name+i, shared points keep a list, select list[hash % size]
    V3_COUNTERS = "v3_counters"  # name\0i, entries ordered by priority/name/selection counter
    V3_IDENTITY = "v3_identity"  # name\0idx\0i, a later put replaces (3.0.7+)
    V4 = "v4"  # name\0idx\0i hashed into [1, 65535], colliding-consumer lists (PIP-379)


class StickyRangesVariant(enum.Enum):
    """Which generation of HashRangeExclusiveStickyKeyConsumerSelector
    (docs/guide/key-shared-selectors.md#sticky-ranges)."""

    LEGACY = "legacy"  # boundary-key map, gaps between a consumer's own ranges select it
    PAIR = "pair"  # Pair<Range, Consumer> map keyed by start, validation as failed futures


class StickyHashMode(enum.Enum):
    """How a sticky key's Murmur3 hash is reduced before selection (docs/guide/sticky-key-hashing.md#hash-reduction)."""

    FULL = "full"  # 3.x: the 31-bit hash; auto-split and sticky take % rangeSize themselves
    RANGED = "ranged"  # 4.x: hash % range.size + range.start, 0 -> 1, per selector range


class NegativeAckTrackerForm(enum.Enum):
    """Client NegativeAcksTracker storage (docs/guide/redelivery.md#negative-acks)."""

    DEADLINE_MAP = "deadline_map"  # 3.x: (ledger, entry) -> deadline, timer every delay/3
    TIME_BUCKETS = "time_buckets"  # 4.0.2+ / 4.1 (PIP-393): deadlines trimmed to 2^bits ms buckets


class DelayedTrackerForm(enum.Enum):
    """In-memory delayed-delivery tracker structure (docs/guide/delayed-delivery.md#in-memory-tracker)."""

    PRIORITY_QUEUE = "priority_queue"  # 3.x and 4.0: (deliverAt, ledger, entry) heap
    TIME_BITMAP = "time_bitmap"  # 4.1: trimmed timestamp -> ledger -> entry bitmap


class SharedDispatcherForm(enum.Enum):
    """Which PersistentDispatcherMultipleConsumers source the Shared rules follow (golden README-dispatch)."""

    V3 = "v3"  # branch-3.0 (and 4.x "classic")
    V4 = "v4"  # branch-4.0: consumer must also have an active connection; 4.x batch formula


class ErrorDelivery(enum.Enum):
    """Whether a selector failure is thrown or returned as a failed future (golden README §2.2)."""

    THROW = "throw"
    FUTURE = "future"


@dataclass(frozen=True)
class Profile:
    """The switches of one modelled Pulsar line. Immutable; derive variants with ``replace``."""

    name: str
    # --- hashing (docs/guide/sticky-key-hashing.md#sticky-key) ---
    sticky_hash_mode: StickyHashMode
    keyless_producer_sequence_key: bool  # 4.0+: keyless messages hash "producerName-sequenceId"
    # --- Key_Shared selectors (docs/guide/key-shared-selectors.md#choosing-a-selector) ---
    consistent_hashing: ConsistentHashingVariant
    sticky_ranges: StickyRangesVariant
    autosplit_errors: ErrorDelivery
    sticky_ranges_errors: ErrorDelivery
    consistent_hashing_key_range_max: int  # 4.x key-hash range is [1, this]; unused in 3.x
    # --- subscription compatibility (docs/guide/key-shared-selectors.md#choosing-a-selector) ---
    detailed_subscription_compat_errors: bool  # 4.x names type/mode/out-of-order; 3.0 checks type only
    # --- dispatch, client trackers, delayed delivery (docs/guide/subscription-types.md#shared-round-robin,
    # docs/guide/acknowledgements.md#command-ack, docs/guide/redelivery.md#ack-timeout,
    # docs/guide/delayed-delivery.md#hold-back) ---
    shared_dispatcher: SharedDispatcherForm = SharedDispatcherForm.V3
    negative_ack_tracker: NegativeAckTrackerForm = NegativeAckTrackerForm.DEADLINE_MAP
    delayed_tracker: DelayedTrackerForm = DelayedTrackerForm.PRIORITY_QUEUE
    # the client default for batch-index acks: the Python client's batch_index_ack_enabled=False in every line (the
    # Java client's batchIndexAckEnabled is true from 4.1, PIP-391; the lab's client models the Python one)
    batch_index_ack_enabled: bool = False
    max_delivery_delay_setting: bool = False  # delayedDeliveryMaxDelayInMillis exists (4.0+, PIP-315)
    # --- client redelivery, retry and dead letters (docs/guide/redelivery.md#ack-timeout) ---
    dead_letter_default_ack_timeout_ms: int = 0  # 30000 up to 2.11: a DLQ policy implied ackTimeout (#19486)
    negative_ack_double_redelivery: bool = False  # MultiTopics nack kept the id in the parent's ack-timeout
    # tracker (and batch ids were not removed) until #20750 (3.1.0; 3.0.7)
    retry_topic_always_shared: bool = True  # the retry topic is subscribed as Shared (#23859: 3.0.10, 4.0.3)
    retry_real_subscription_property: bool = False  # 4.x copies also carry REAL_SUBSCRIPTION
    # --- broker.conf defaults that differ per line (docs/guide/key-shared-selectors.md#choosing-a-selector,
    # docs/guide/key-shared-ordering.md#recently-joined-consumers) ---
    broker_defaults: dict[str, object] = dataclasses.field(default_factory=dict)

    def replace(self, **changes: object) -> "Profile":
        """A copy with some switches changed (for 'what if' scenarios)."""
        return dataclasses.replace(self, **changes)

    def broker_config(self, overrides: Mapping[str, object] | None = None) -> "BrokerConfig":
        """broker.conf settings for this line with the given overrides applied (unknown names rejected)."""
        conf = BrokerConfig(BROKER_DEFAULTS)
        conf.update(self.broker_defaults)
        for key, value in (overrides or {}).items():
            if key not in conf:
                raise ValueError(f"unknown broker setting {key!r}; known settings: {', '.join(sorted(conf))}")
            conf[key] = value
        return conf

    @property
    def is_4x(self) -> bool:
        return self.sticky_hash_mode is StickyHashMode.RANGED


class BrokerConfig(dict[str, object]):
    """broker.conf of one lab (`ServiceConfiguration`): every setting the model reads, with its line's default
    (`Profile.broker_config`), read through the typed accessors below.

    A dict so that it prints, compares and serialises as the settings it holds; the model reads it only through
    ``flag``/``integer``/``number``/``text``, which refuse a value of the wrong type with the setting's name (where
    Pulsar's broker refuses to start). A setting no default names is a KeyError.
    """

    def _value(self, key: str) -> object:
        try:
            return self[key]
        except KeyError:
            raise KeyError(f"unknown broker setting {key!r}") from None

    def flag(self, key: str) -> bool:
        """A boolean setting (``acknowledgmentAtBatchIndexLevelEnabled``, ...)."""
        value = self._value(key)
        if not isinstance(value, bool):
            raise TypeError(f"broker setting {key} must be true or false, got {type(value).__name__} {value!r}")
        return value

    def integer(self, key: str) -> int:
        """An integer setting (counts, sizes, milliseconds)."""
        value = self._value(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"broker setting {key} must be an integer, got {type(value).__name__} {value!r}")
        return value

    def optional_integer(self, key: str) -> int | None:
        """An integer setting Pulsar leaves unset by default (None)."""
        return None if self._value(key) is None else self.integer(key)

    def number(self, key: str) -> float:
        """A numeric setting that may be a fraction (``managedLedgerCacheEvictionWatermark``)."""
        value = self._value(key)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"broker setting {key} must be a number, got {type(value).__name__} {value!r}")
        return value

    def text(self, key: str) -> str:
        """A string setting (class names, modes, strategies)."""
        value = self._value(key)
        if not isinstance(value, str):
            raise TypeError(f"broker setting {key} must be a string, got {type(value).__name__} {value!r}")
        return value


# broker.conf names with Pulsar's defaults, as far as the model uses them
# (docs/guide/key-shared-selectors.md#choosing-a-selector, docs/guide/key-shared-ordering.md#recently-joined-consumers,
# docs/guide/subscription-types.md#failover-switch, #shared-round-robin, docs/guide/flow-control.md#flow-permits,
# docs/guide/acknowledgements.md#command-ack, docs/guide/redelivery.md#ack-timeout,
# docs/guide/chunked-messages.md#chunk-count, docs/guide/delayed-delivery.md#hold-back).
BROKER_DEFAULTS: dict[str, object] = {
    "subscriptionKeySharedUseConsistentHashing": True,
    "subscriptionKeySharedConsistentHashingReplicaPoints": 100,
    "subscriptionKeySharedUseClassicPersistentImplementation": False,
    "subscriptionSharedUseClassicPersistentImplementation": False,
    "activeConsumerFailoverDelayTimeMillis": 1000,
    "activeConsumerFailoverConsistentHashing": False,
    "managedLedgerMaxEntriesPerLedger": 50000,
    "managedLedgerMaxSizePerLedgerMbytes": 2048,
    "managedLedgerMaxLedgerRolloverTimeMinutes": 240,
    # Pulsar's default is 10: the lab rolls small ledgers at once, as Pulsar's own ManagedCursorTest does
    "managedLedgerMinLedgerRolloverTimeMinutes": 0,
    # retention of consumed ledgers (the same in 3.0, 4.0 and 4.1): 0/0 deletes a ledger once every durable cursor
    # consumed it, -1 is no limit; the broker checks every retentionCheckIntervalInSeconds
    "defaultRetentionTimeInMinutes": 0,
    "defaultRetentionSizeInMB": 0,
    "retentionCheckIntervalInSeconds": 120,
    # the entry cache (pulsarlab.managed_ledger.entry_cache): Pulsar sizes it at a fifth of the broker's direct memory
    # by default; the lab's bound is fixed. It applies with lab_entryStorage "disk" (bookie storage, what `pulsarlab
    # serve` uses); "memory" keeps every entry in memory (an in-process Lab's default)
    "managedLedgerCacheSizeMB": 64,
    "managedLedgerCacheEvictionWatermark": 0.9,
    "lab_entryStorage": "memory",
    "managedLedgerUnackedRangesOpenCacheSetEnabled": True,
    # what a cursor's individual-ack ranges and batch ack sets persist at most (pulsarlab.managed_ledger.cursor)
    "managedLedgerMaxUnackedRangesToPersist": 10000,
    "managedLedgerMaxBatchDeletedIndexToPersist": 10000,
    "dispatcherMaxReadBatchSize": 100,
    "dispatcherMinReadBatchSize": 1,
    "dispatcherMaxRoundRobinBatchSize": 20,
    "dispatcherMaxReadSizeBytes": 5242880,
    "maxUnackedMessagesPerConsumer": 50000,
    "maxUnackedMessagesPerSubscription": 4 * 50000,
    "keySharedLookAheadMsgInReplayThresholdPerConsumer": 2000,
    "keySharedLookAheadMsgInReplayThresholdPerSubscription": 20000,
    "keySharedUnblockingIntervalMs": 10,
    "acknowledgmentAtBatchIndexLevelEnabled": False,
    "maxMessageSize": 5242880,
    "delayedDeliveryEnabled": True,
    "delayedDeliveryTickTimeMillis": 1000,
    "isDelayedDeliveryDeliverAtTimeStrict": False,
    "delayedDeliveryFixedDelayDetectionLookahead": 50000,
    "delayedDeliveryMaxDelayInMillis": 0,
    "delayedDeliveryTrackerFactoryClassName": "org.apache.pulsar.broker.delayed.InMemoryDelayedDeliveryTrackerFactory",
    "delayedDeliveryMinIndexCountPerBucket": 50000,
    "delayedDeliveryMaxTimeStepPerBucketSnapshotSegmentSeconds": 300,
    "delayedDeliveryMaxIndexesPerBucketSnapshotSegment": 5000,
    "delayedDeliveryMaxNumBuckets": -1,
    "subscriptionRedeliveryTrackerEnabled": True,
    "statsUpdateFrequencyInSecs": 60,
    "brokerDeduplicationEnabled": False,
    "brokerDeduplicationProducerInactivityTimeoutMinutes": 360,
    # inactive topic deletion (pulsarlab.broker.inactive_topics; the same in 3.0, 4.0 and 4.1); the duration None is
    # Pulsar's unset: the frequency
    "brokerDeleteInactiveTopicsEnabled": True,
    "brokerDeleteInactiveTopicsFrequencySeconds": 60,
    "brokerDeleteInactiveTopicsMode": "delete_when_no_subscriptions",
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": None,
    "brokerDeleteInactivePartitionedTopicMetadataEnabled": False,
    "topicCompactionRetainNullKey": False,
    "schemaCompatibilityStrategy": "FULL",
}

_3X = dict(
    sticky_hash_mode=StickyHashMode.FULL,
    keyless_producer_sequence_key=False,
    autosplit_errors=ErrorDelivery.THROW,
    sticky_ranges_errors=ErrorDelivery.FUTURE,
    consistent_hashing_key_range_max=65535,
    detailed_subscription_compat_errors=False,
)
_4X = dict(
    sticky_hash_mode=StickyHashMode.RANGED,
    keyless_producer_sequence_key=True,
    consistent_hashing=ConsistentHashingVariant.V4,
    sticky_ranges=StickyRangesVariant.PAIR,
    autosplit_errors=ErrorDelivery.FUTURE,
    sticky_ranges_errors=ErrorDelivery.FUTURE,
    consistent_hashing_key_range_max=65535,
    detailed_subscription_compat_errors=True,
    shared_dispatcher=SharedDispatcherForm.V4,
    negative_ack_tracker=NegativeAckTrackerForm.TIME_BUCKETS,
    max_delivery_delay_setting=True,
    retry_real_subscription_property=True,
)
# patch levels before #20750 (3.0.7) and #23859 (3.0.10)
_BEFORE_NACK_FIX = dict(negative_ack_double_redelivery=True, retry_topic_always_shared=False)

PROFILES: dict[str, Profile] = {
    "2.10": Profile(
        name="2.10",
        consistent_hashing=ConsistentHashingVariant.LEGACY,
        sticky_ranges=StickyRangesVariant.LEGACY,
        dead_letter_default_ack_timeout_ms=30_000,
        **{**_3X, **_BEFORE_NACK_FIX, "sticky_ranges_errors": ErrorDelivery.THROW},
    ),
    "3.0.0": Profile(
        name="3.0.0",
        consistent_hashing=ConsistentHashingVariant.LEGACY,
        sticky_ranges=StickyRangesVariant.PAIR,
        **_3X,
        **_BEFORE_NACK_FIX,
    ),
    "3.0.3": Profile(
        name="3.0.3",
        consistent_hashing=ConsistentHashingVariant.V3_COUNTERS,
        sticky_ranges=StickyRangesVariant.PAIR,
        **_3X,
        **_BEFORE_NACK_FIX,
    ),
    "3.0": Profile(
        name="3.0",
        consistent_hashing=ConsistentHashingVariant.V3_IDENTITY,
        sticky_ranges=StickyRangesVariant.PAIR,
        **_3X,
    ),
    "4.0": Profile(name="4.0", **_4X),
    "4.1": Profile(
        name="4.1",
        broker_defaults={"acknowledgmentAtBatchIndexLevelEnabled": True},
        **{**_4X, "delayed_tracker": DelayedTrackerForm.TIME_BITMAP},
    ),
}

DEFAULT_PROFILE = "4.0"


def get_profile(version: str | Profile | None = None) -> Profile:
    """The profile for a version name ("3.0", "4.0", ...); None gives the default LTS line."""
    if isinstance(version, Profile):
        return version
    if version is None:
        version = DEFAULT_PROFILE
    if not isinstance(version, str):
        raise TypeError(f"version must be a string such as '4.0', not {type(version).__name__}")
    try:
        return PROFILES[version]
    except KeyError:
        raise ValueError(f"unknown Pulsar version profile {version!r}; choose one of: {', '.join(PROFILES)}") from None
