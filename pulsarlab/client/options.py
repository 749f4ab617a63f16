"""Which keywords of ``subscribe`` / ``create_producer`` are pulsar-client's and which are the lab's own.

Models no Pulsar class: it records the parameters of the Python client (pulsar-client 3.13,
``pulsar.Client.subscribe`` and ``create_producer``) so the lab can tell a learner who passes a keyword the lab
does not take whether it is a setting the lab renamed (the lab's own settings all start with ``lab_``, so code
copied from a lab never passes a parameter pulsar-client lacks), a real parameter the lab does not model, or
neither.
"""

from __future__ import annotations

from typing import Mapping

# The lab-only settings under their old names: settings of the Java or C++ client (or the broker's protocol) that
# pulsar-client 3.13 does not take as keywords.
RENAMED_SUBSCRIBE_OPTIONS = {
    "priority_level": "lab_priority_level",
    "ack_group_time_ms": "lab_ack_group_time_ms",
    "max_ack_group_size": "lab_max_ack_group_size",
    "expire_time_of_incomplete_chunked_message_ms": "lab_expire_time_of_incomplete_chunked_message_ms",
    "tick_duration_ms": "lab_tick_duration_ms",
    "negative_ack_redelivery_backoff": "lab_negative_ack_redelivery_backoff",
    "retry_enable": "lab_retry_enable",
}
RENAMED_PRODUCER_OPTIONS = {
    "chunk_max_message_size": "lab_chunk_max_message_size",
    "chunk_send_interval_ms": "lab_chunk_send_interval_ms",
}

# pulsar-client 3.13's keyword parameters (inspect.signature of pulsar.Client.subscribe / create_producer).
PULSAR_CLIENT_SUBSCRIBE_PARAMETERS = frozenset(
    "consumer_type schema message_listener receiver_queue_size max_total_receiver_queue_size_across_partitions "
    "consumer_name unacked_messages_timeout_ms broker_consumer_stats_cache_time_ms negative_ack_redelivery_delay_ms "
    "is_read_compacted properties pattern_auto_discovery_period initial_position crypto_key_reader "
    "replicate_subscription_state_enabled max_pending_chunked_message auto_ack_oldest_chunked_message_on_queue_full "
    "start_message_id_inclusive batch_receive_policy key_shared_policy batch_index_ack_enabled regex_subscription_mode "
    "dead_letter_policy crypto_failure_action".split()
)
PULSAR_CLIENT_PRODUCER_PARAMETERS = frozenset(
    "producer_name schema initial_sequence_id send_timeout_millis compression_type max_pending_messages "
    "max_pending_messages_across_partitions block_if_queue_full batching_enabled batching_max_messages "
    "batching_max_allowed_size_in_bytes batching_max_publish_delay_ms chunking_enabled message_routing_mode "
    "lazy_start_partitioned_producers properties batching_type encryption_key crypto_key_reader access_mode "
    "message_router".split()
)


def refuse_unknown_options(
    method: str, unknown: Mapping[str, object], renamed: Mapping[str, str], real: frozenset[str]
) -> None:
    """Raise `TypeError` for the first keyword in ``unknown``, saying what it is: a renamed lab setting (and its
    new name), a pulsar-client parameter the lab does not model, or no parameter at all."""
    for name in unknown:
        head = f"{method}() got an unexpected keyword argument {name!r}"
        if name in renamed:
            raise TypeError(
                f"{head}: pulsar-client has no such parameter; in the lab it is the lab-only setting {renamed[name]}"
            )
        if name in real:
            raise TypeError(f"{head}: it is a pulsar-client parameter the lab does not model")
        raise TypeError(head)


__all__ = [
    "PULSAR_CLIENT_PRODUCER_PARAMETERS",
    "PULSAR_CLIENT_SUBSCRIBE_PARAMETERS",
    "RENAMED_PRODUCER_OPTIONS",
    "RENAMED_SUBSCRIBE_OPTIONS",
    "refuse_unknown_options",
]
