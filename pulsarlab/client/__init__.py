"""The client side of the model: redelivery trackers and, later, producer and consumer
(docs/guide/flow-control.md#flow-permits, docs/guide/acknowledgements.md#command-ack,
docs/guide/redelivery.md#ack-timeout, docs/guide/chunked-messages.md#chunk-count)."""
