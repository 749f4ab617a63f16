"""The Shared dispatcher's chunk events: a chunked message pinned to a consumer, a chunk held back or lost.

Models no Pulsar class; appended by the Shared dispatcher with `pulsarlab.broker.dispatch.chunk_assignor`
(`SharedConsumerAssignor`, PIP-37, docs/guide/chunked-messages.md#chunks-on-shared).
"""

from __future__ import annotations

from pulsarlab.events import event_type

CHUNK_PINNED = event_type(
    "chunk_pinned",
    "subscription:int consumer:int uuid:str ledger:int entry:int",
    "subscription {subscription} pinned chunked message {uuid} to consumer {consumer} (its chunk 0 at "
    "{ledger}:{entry}); every later chunk goes to that consumer",
    rule="SharedConsumerAssignor, PIP-37; docs/guide/chunked-messages.md#chunks-on-shared",
)
CHUNK_HELD = event_type(
    "chunk_held",
    "subscription:int consumer:int uuid:str chunk_id:int position:str reason:str",
    "chunk {chunk_id} of {uuid} at {position} waits in the replay set of subscription {subscription}: {reason} "
    "(pinned to consumer {consumer}; -1: none)",
    rule=(
        "SharedConsumerAssignor unassigned entries -> addMessageToReplay; "
        "docs/guide/chunked-messages.md#chunks-on-shared"
    ),
)
CHUNK_LOST = event_type(
    "chunk_lost",
    "subscription:int consumer:int uuid:str chunk_id:int position:str",
    "chunk {chunk_id} of {uuid} at {position} went to consumer {consumer}, which has left: its message stays pinned "
    "there (3.0/4.0), the closed consumer refuses the entry, and it is lost to an ack hole until the topic reloads",
    rule=(
        "SharedConsumerAssignor keeps uuidToConsumer after removeConsumer; "
        "docs/guide/chunked-messages.md#chunks-on-shared"
    ),
)
