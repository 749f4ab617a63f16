"""Dispatch: which consumer gets which entry, per subscription type, and the rules each dispatcher applies.

Models the dispatchers of `org.apache.pulsar.broker.service.persistent`: `PersistentDispatcherSingleActiveConsumer`
(`single_active`, with the Failover choice in `failover`), `PersistentDispatcherMultipleConsumers` (`shared`, with
`round_robin` and `entries_per_turn`), `PersistentStickyKeyDispatcherMultipleConsumers` (`key_shared`, with
`draining` and `pending_acks`), and `SharedConsumerAssignor` (`chunk_assignor`).
"""
