"""Delayed delivery on the broker: the trackers, their factory, the dispatcher's hold-back and JVM memory pricing.

Models the `org.apache.pulsar.broker.delayed` package: `InMemoryDelayedDeliveryTracker` (`in_memory`), the bucket
tracker (`bucket/`), `DelayedDeliveryTrackerFactory` (`factory`), and the delayed parts of
`PersistentDispatcherMultipleConsumers` (`dispatch`).
"""
