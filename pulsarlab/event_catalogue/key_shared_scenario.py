"""The events a `KeySharedScenario` logs, each with the one-line explanation and the Pulsar rule it cites.

Models no Pulsar class: these are the lab's event declarations (`pulsarlab.events.event_type`) for what
`PersistentStickyKeyDispatcherMultipleConsumers` does to its selector when consumers subscribe and close
(docs/guide/key-shared-selectors.md, and docs/guide/producer-batching.md for how a batch entry is routed). Where
the rule is the same for every selector generation it is declared here as ``rule=``; where it depends on the
generation or the selector kind the driver (`pulsarlab.scenarios.key_shared`) computes it into the event's ``why`` field.
"""

from __future__ import annotations

from pulsarlab.events import event_type

CONSUMER_ADDED = event_type(
    "consumer_added",
    "consumer:int name:str priority:int selector:str why:str",
    "{name} joined as consumer id {consumer} ({why})",
)
CONSUMER_REMOVED = event_type(
    "consumer_removed",
    "consumer:int name:str selector:str why:str",
    "{name} (consumer id {consumer}) left ({why})",
)
ASSIGN_REJECTED = event_type(
    "assign_rejected",
    "consumer:int name:str ranges:json exception:str error:str why:str",
    "{name} was rejected: {exception}: {error} ({why})",
)
SELECTOR_EMPTY = event_type(
    "selector_empty",
    "name:str",
    "{name} was the last consumer: every key hash now selects nobody and its messages wait",
    rule="an empty selector returns null; the dispatcher keeps the entries for replay",
)
RANGE_ASSIGNED = event_type(
    "range_assigned",
    "consumer:int name:str range:json",
    "{name} is the only consumer: it owns the whole range {range}",
    rule="auto-split: the first consumer gets upper bound rangeSize, one past the largest slot",
)
RANGE_SPLIT = event_type(
    "range_split",
    "consumer:int name:str donor:int donor_name:str taken:json donor_range:json",
    "{name} joined: took the lower half {taken} of {donor_name}'s range {donor_range}",
    rule="auto-split: the newcomer takes the lower half of the largest range; ties go to the lowest range",
)
RANGE_MERGED = event_type(
    "range_merged",
    "name:str into:int into_name:str freed:json result:json why:str",
    "{name} left: its range {freed} went to {into_name}, who now owns {result} ({why})",
)
_CLOCKWISE = "consistent hashing: a key goes to the first ring point at or after its hash, wrapping past the top"
RING_POINT_ADDED = event_type(
    "ring_point_added",
    "consumer:int name:str point:int moved_from:int change:str",
    "{name} placed ring point {point}: {change}",
    rule=_CLOCKWISE,
)
RING_POINT_COLLISION = event_type(
    "ring_point_collision",
    "consumer:int name:str point:int holder:int holder_name:str why:str",
    "{name}'s ring point {point} collides with {holder_name}'s ({why})",
)
RING_POINT_REMOVED = event_type(
    "ring_point_removed",
    "consumer:int name:str point:int moved_to:int change:str",
    "{name} left: ring point {point} removed, {change}",
    rule=_CLOCKWISE,
)
RING_POINT_TAKEN_OVER = event_type(
    "ring_point_taken_over",
    "consumer:int name:str point:int new:int new_name:str why:str",
    "{name} left: {new_name} takes over ring point {point} ({why})",
)
RING_POINT_COLLISION_CLEARED = event_type(
    "ring_point_collision_cleared",
    "consumer:int name:str point:int holder:int holder_name:str",
    "{name} left: it is dropped from the colliding list of ring point {point}, which stays with {holder_name}",
    rule="a colliding consumer that never held the point leaves no trace on the ring",
)
STICKY_RANGES_ADDED = event_type(
    "sticky_ranges_added",
    "consumer:int name:str ranges:json text:str unowned:int",
    "{name} joined owning exactly {text}; {unowned} hashes now select no consumer",
    rule="STICKY: a consumer owns the ranges it asks for; the broker never checks coverage, "
    "so hashes nobody owns select null and their messages wait",
)
STICKY_RANGES_REMOVED = event_type(
    "sticky_ranges_removed",
    "consumer:int name:str ranges:json text:str unowned:int",
    "{name} left: {text} now select no consumer; {unowned} hashes select no consumer",
    rule="STICKY: removing a consumer deletes its ranges and nobody takes them over",
)
HASH_RANGES_MOVED = event_type(
    "hash_ranges_moved",
    "from_id:int from_name:str to_id:int to_name:str ranges:json summary:str",
    "hash ranges moved from {from_name} to {to_name}: {summary}",
    rule="the impacted-consumers diff of the assignments before and after, as 4.x diffRanges computes it",
)
KEY_SELECTED = event_type(
    "key_selected",
    "key:str hash:int consumer:int name:str point:int why:str",
    "key {key} -> sticky hash {hash} -> {name} ({why})",
)
ENTRY_ROUTED = event_type(
    "entry_routed",
    "keys:json sticky_key:str hash:int consumer:int name:str why:str",
    "entry {keys} -> sticky key {sticky_key} -> hash {hash} -> {name} ({why})",
)

NOBODY = "nobody"  # the name an event gives "no consumer"


__all__ = [
    "ASSIGN_REJECTED",
    "CONSUMER_ADDED",
    "CONSUMER_REMOVED",
    "ENTRY_ROUTED",
    "HASH_RANGES_MOVED",
    "KEY_SELECTED",
    "NOBODY",
    "RANGE_ASSIGNED",
    "RANGE_MERGED",
    "RANGE_SPLIT",
    "RING_POINT_ADDED",
    "RING_POINT_COLLISION",
    "RING_POINT_COLLISION_CLEARED",
    "RING_POINT_REMOVED",
    "RING_POINT_TAKEN_OVER",
    "SELECTOR_EMPTY",
    "STICKY_RANGES_ADDED",
    "STICKY_RANGES_REMOVED",
]
