"""The producer's chunking events: each chunk sent, a producer that crashes part way, a message too big.

Models no Pulsar class; appended by `pulsarlab.client.chunking` and the model producer (docs/guide/chunked-messages.md).
"""

from __future__ import annotations

from pulsarlab.events import event_type

CHUNK_PUBLISHED = event_type(
    "chunk_published",
    "producer:int uuid:str chunk_id:int num_chunks:int size:int partition:int",
    "producer {producer} sent chunk {chunk_id} of {num_chunks} of {uuid} ({size} bytes) to partition {partition}",
    rule=(
        "ProducerImpl.sendAsync chunk loop: each chunk is its own SEND and ledger entry; "
        "docs/guide/chunked-messages.md#chunk-count"
    ),
)
PRODUCER_CRASHED = event_type(
    "producer_crashed",
    "producer:int chunks:int messages:int",
    "producer {producer} crashed: {chunks} chunk(s) of {messages} message(s) were never sent",
    rule="lab extension Producer.crash(): a publisher that fails part way through a chunked message",
)
MESSAGE_TOO_BIG_EVENT = event_type(
    "message_too_big",
    "producer:int sequence_id:int size:int max_message_size:int error:str",
    "producer {producer} could not send sequence id {sequence_id} ({size} bytes): {error}",
    rule=(
        "ProducerImpl.sendAsync size check against the broker's maxMessageSize; "
        "docs/guide/chunked-messages.md#chunk-count"
    ),
)
