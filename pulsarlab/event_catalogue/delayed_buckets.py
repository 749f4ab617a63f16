"""The bucket delayed-delivery tracker's events: buckets sealed, loaded, merged, deleted, recovered, failed.

Models no Pulsar class; appended by `pulsarlab.broker.delayed.bucket.tracker.BucketDelayedDeliveryTracker`
(docs/guide/delayed-delivery.md#bucket-tracker). The dispatcher's delayed-delivery events are in
`pulsarlab.event_catalogue.delayed`.
"""

from __future__ import annotations

from pulsarlab.events import event_type

BUCKET_SEALED = event_type(
    "bucket_sealed",
    "tracker:str start:int end:int messages:int segments:int snapshot:int",
    "{tracker}: mutable bucket [{start}, {end}] sealed: {messages} indexes in {segments} segment(s), "
    "segment 1 moved to the shared queue, snapshot ledger {snapshot}",
    rule=(
        "BucketDelayedDeliveryTracker.addMessage -> MutableBucket.sealBucketAndAsyncPersistent; "
        "docs/guide/delayed-delivery.md#bucket-snapshots"
    ),
)
SEGMENT_LOADED = event_type(
    "segment_loaded",
    "tracker:str start:int end:int segment:int segments:int indexes:int",
    "{tracker}: bucket [{start}, {end}] loaded segment {segment}/{segments} ({indexes} indexes) into the shared queue",
    rule="getScheduledMessages reached the loaded segment's last index; docs/guide/delayed-delivery.md#bucket-tracker",
)
BUCKETS_MERGED = event_type(
    "buckets_merged",
    "tracker:str start:int end:int buckets:int messages:int snapshot:int",
    "{tracker}: {buckets} adjacent buckets merged into [{start}, {end}] ({messages} stored indexes), "
    "snapshot ledger {snapshot}",
    rule=(
        "delayedDeliveryMaxNumBuckets exceeded: asyncMergeBucketSnapshot; docs/guide/delayed-delivery.md#bucket-merging"
    ),
)
BUCKET_DELETED = event_type(
    "bucket_deleted",
    "tracker:str start:int end:int snapshot:int reason:str",
    "{tracker}: bucket [{start}, {end}] deleted ({reason}); snapshot ledger {snapshot} and its cursor property removed",
    rule="ImmutableBucket.asyncDeleteBucketSnapshot; docs/guide/delayed-delivery.md#bucket-snapshots",
)
BUCKET_RECOVERED = event_type(
    "bucket_recovered",
    "tracker:str start:int end:int skipped:int segments:int messages:int",
    "{tracker}: bucket [{start}, {end}] recovered: {skipped} of {segments} segment(s) already due and "
    "skipped, {messages} indexes remain, next segment loaded",
    rule="BucketDelayedDeliveryTracker.recoverBucketSnapshot; docs/guide/broker-restart.md#restart",
)
SNAPSHOT_FAILED = event_type(
    "snapshot_failed",
    "tracker:str start:int end:int op:str error:str",
    "{tracker}: bucket [{start}, {end}] {op} failed after retries: {error}",
    rule="executeWithRetry(MaxRetryTimes=3); create failure puts the indexes back in the shared queue",
)
