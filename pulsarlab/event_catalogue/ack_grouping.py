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


def _acks_sent(v: dict) -> str:
    """The acks a flush carried (``ACKS_FLUSHED``) or a close dropped (``ACKS_LOST``); the cumulative position
    only when there was one (a Shared consumer's flush carries none)."""
    acks = f"{v['individual']} entries, {v['batch_index']} batch-index acks"
    if v["cumulative_ledger"] is not None:
        acks += f", cumulative up to {v['cumulative_ledger']}:{v['cumulative_entry']}"
    else:
        acks += ", no cumulative ack"
    return acks


def _acks_flushed(v: dict) -> str:
    return f"{v['consumer']} sent acks ({v['reason']}): {_acks_sent(v)}"


def _acks_lost(v: dict) -> str:
    return (
        f"{v['consumer']} lost acks that were never sent ({v['reason']}): {_acks_sent(v)}; the broker will "
        "deliver those messages again"
    )


ACKS_FLUSHED = event_type(
    "acks_flushed",
    "consumer:str reason:str individual:int batch_index:int cumulative_ledger:int cumulative_entry:int",
    "{consumer} sent acks ({reason}): {individual} entries, {batch_index} batch-index acks, "
    "cumulative up to {cumulative_ledger}:{cumulative_entry}",
    rule=_RULE,
    explainer=_acks_flushed,
)
ACKS_LOST = event_type(
    "acks_lost",
    "consumer:str reason:str individual:int batch_index:int cumulative_ledger:int cumulative_entry:int",
    "{consumer} lost acks that were never sent ({reason}): {individual} entries, {batch_index} "
    "batch-index acks, cumulative up to {cumulative_ledger}:{cumulative_entry}; the broker will "
    "deliver those messages again",
    rule=_RULE,
    explainer=_acks_lost,
)
