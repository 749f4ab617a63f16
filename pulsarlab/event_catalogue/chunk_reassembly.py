"""The consumer's chunk reassembly events: chunks received, discarded, assembled, evicted, acked, expired.

Models no Pulsar class; appended by `pulsarlab.client.chunk_reassembly.ChunkedMessageTracker` and the model
consumer (`ConsumerImpl.processMessageChunk`, docs/guide/chunked-messages.md#reassembly).
"""

from __future__ import annotations

from pulsarlab.events import event_type

CHUNK_RECEIVED = event_type(
    "chunk_received",
    "consumer:int uuid:str chunk_id:int num_chunks:int position:str permits:int",
    "consumer {consumer} got chunk {chunk_id} of {num_chunks} of {uuid} at {position}; {permits} permit(s) "
    "returned at once",
    rule="ConsumerImpl.processMessageChunk; docs/guide/chunked-messages.md#reassembly",
)
CHUNK_DISCARDED = event_type(
    "chunk_discarded",
    "consumer:int uuid:str chunk_id:int position:str reason:str action:str",
    "consumer {consumer} discarded chunk {chunk_id} of {uuid} at {position} ({reason}); it was {action}",
    rule="ConsumerImpl.processMessageChunk discard rules; docs/guide/chunked-messages.md#reassembly",
)
CHUNKED_MESSAGE_ASSEMBLED = event_type(
    "chunked_message_assembled",
    "consumer:int uuid:str chunks:int size:int message_id:str",
    "consumer {consumer} assembled {uuid} from {chunks} chunks ({size} bytes) as {message_id}",
    rule="ConsumerImpl.messageReceived; docs/guide/chunked-messages.md#reassembly",
)
CHUNKED_MESSAGE_EVICTED = event_type(
    "chunked_message_evicted",
    "consumer:int uuid:str chunks:int cause:str action:str pending:int",
    "consumer {consumer} dropped incomplete {uuid} ({chunks} chunk(s), {cause}); its chunks were {action}; "
    "pending count now {pending}",
    rule="removeOldestPendingChunkedMessage / chunk 0 restart; docs/guide/chunked-messages.md#chunk-expiry",
)
CHUNKED_MESSAGE_ACKED = event_type(
    "chunked_message_acked",
    "consumer:int message_id:str chunks:int cumulative:bool positions:str",
    "consumer {consumer} acknowledged chunked message {message_id} (cumulative={cumulative}): the ack goes to "
    "{positions}",
    rule=(
        "acks of a ChunkMessageId expand to every chunk (unAckedChunkedMessageIdSequenceMap); "
        "docs/guide/chunked-messages.md#chunk-message-id"
    ),
)
CHUNKED_MESSAGE_EXPIRED = event_type(
    "chunked_message_expired",
    "consumer:int uuid:str chunks:int age:int",
    "consumer {consumer} expired incomplete {uuid} after {age} ms and acked its {chunks} chunk(s)",
    rule="removeExpireIncompleteChunkedMessages; docs/guide/chunked-messages.md#chunk-expiry",
)
