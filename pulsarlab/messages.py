"""What an entry in a topic holds: entry metadata, per-message metadata in batches, and payloads.

Models the protobuf messages `MessageMetadata` and `SingleMessageMetadata` of Pulsar's wire protocol
(PulsarApi.proto; reference §1.2, §3.4, §9, §10) as the broker stores them in a ledger entry. Only the
fields the lab models are present; proto2 defaults are the dataclass defaults. An entry is either one
message (``num_messages_in_batch`` is None) or a batch of ``SingleMessageMetadata`` + payload pairs,
routed as a whole by the entry metadata's keys (which are the first message's).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .hashing import sticky_key
from .profiles import Profile


@dataclass
class MessageMetadata:
    """Entry-level metadata (`MessageMetadata`): one per ledger entry, batch or not."""

    producer_name: str
    sequence_id: int
    publish_time: int
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    partition_key_b64_encoded: bool = False
    ordering_key: bytes | None = None
    event_time: int = 0
    num_messages_in_batch: int | None = None  # set (>= 1) only for batch entries
    highest_sequence_id: int | None = None
    deliver_at_time: int | None = None
    uncompressed_size: int = 0
    # chunking (reference §9)
    uuid: str | None = None
    chunk_id: int | None = None
    num_chunks_from_msg: int | None = None
    total_chunk_msg_size: int | None = None

    @property
    def is_batch(self) -> bool:
        return self.num_messages_in_batch is not None

    @property
    def message_count(self) -> int:
        """Messages in the entry (a batch's count, else 1): what dispatch charges in permits."""
        return self.num_messages_in_batch if self.num_messages_in_batch is not None else 1

    @property
    def is_chunk(self) -> bool:
        return self.uuid is not None and self.num_chunks_from_msg is not None and self.num_chunks_from_msg > 1

    def sticky_key(self, profile: Profile) -> bytes:
        """The bytes a Key_Shared dispatcher hashes for this entry (reference §1.2)."""
        return sticky_key(
            profile,
            ordering_key=self.ordering_key,
            partition_key=self.partition_key,
            partition_key_b64_encoded=self.partition_key_b64_encoded,
            producer_name=self.producer_name,
            sequence_id=self.sequence_id,
        )


@dataclass
class SingleMessageMetadata:
    """Per-message metadata inside a batch entry (`SingleMessageMetadata`)."""

    payload_size: int
    properties: dict[str, str] = field(default_factory=dict)
    partition_key: str | None = None
    partition_key_b64_encoded: bool = False
    ordering_key: bytes | None = None
    event_time: int = 0
    sequence_id: int | None = None
    null_value: bool = False


@dataclass
class EntryData:
    """The content of one ledger entry: its metadata and its message payloads.

    A non-batch entry has one ``(None, payload)`` pair; a batch has one ``(SingleMessageMetadata,
    payload)`` pair per message, in batch-index order.
    """

    metadata: MessageMetadata
    messages: list[tuple[SingleMessageMetadata | None, bytes]]

    def __post_init__(self) -> None:
        if self.metadata.is_batch:
            if len(self.messages) != self.metadata.num_messages_in_batch:
                raise ValueError(
                    f"batch entry declares {self.metadata.num_messages_in_batch} messages but holds "
                    f"{len(self.messages)}"
                )
        elif len(self.messages) != 1 or self.messages[0][0] is not None:
            raise ValueError("a non-batch entry holds exactly one (None, payload) message")

    @property
    def size(self) -> int:
        """Payload bytes in the entry (what stats count as entry size in the model)."""
        return sum(len(p) for _, p in self.messages)
