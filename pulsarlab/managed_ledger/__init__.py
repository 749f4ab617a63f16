"""The managed ledger: a topic's stored log and each subscription's cursor over it.

Models the `org.apache.bookkeeper.mledger` package (`ManagedLedgerImpl`, `ManagedCursorImpl`, `Position`,
`OpenLongPairRangeSet`). Below the broker: nothing here imports `pulsarlab.broker`. BookKeeper itself (ensembles,
replication, ledger storage on bookies) is not modelled; a ledger is an in-memory list of entries.
"""
