"""The bucket delayed-delivery tracker (PIP-195): buckets, segments and their snapshots in ledger storage.

Models `org.apache.pulsar.broker.delayed.bucket` (`BucketDelayedDeliveryTracker`, `MutableBucket`,
`ImmutableBucket`, `BookkeeperBucketSnapshotStorage`).
"""
