"""The client's acknowledgment grouping events: an ack queued, a flush sent, acks lost before a flush.

Models no Pulsar class; appended by `pulsarlab.client.ack_grouping.AcknowledgmentsGroupingTracker`
(`PersistentAcknowledgmentsGroupingTracker`, docs/guide/acknowledgements.md#ack-grouping).
"""

from __future__ import annotations

from pulsarlab.events import event_type

_RULE = "PersistentAcknowledgmentsGroupingTracker; docs/guide/acknowledgements.md#ack-grouping"
ACK_QUEUED = event_type(
    "ack_queued",
    "consumer:str ack_type:str ledger:int entry:int batch_index:int outcome:str",
    "{consumer}: {ack_type} ack of {ledger}:{entry} (batch index {batch_index}) -> {outcome}",
    rule=_RULE,
)
ACKS_FLUSHED = event_type(
    "acks_flushed",
    "consumer:str reason:str individual:int batch_index:int cumulative_ledger:int cumulative_entry:int",
    "{consumer} sent acks ({reason}): {individual} entries, {batch_index} batch-index acks, "
    "cumulative up to {cumulative_ledger}:{cumulative_entry}",
    rule=_RULE,
)
ACKS_LOST = event_type(
    "acks_lost",
    "consumer:str reason:str individual:int batch_index:int cumulative_ledger:int cumulative_entry:int",
    "{consumer} lost acks that were never sent ({reason}): {individual} entries, {batch_index} "
    "batch-index acks, cumulative up to {cumulative_ledger}:{cumulative_entry}; the broker will "
    "deliver those messages again",
    rule=_RULE,
)
