"""The events a whole-model scenario run logs besides the model's own: what its application did with each message.

Models no Pulsar class: the sweep driver (`pulsarlab.scenarios.run`) plays the application, and logs each message it
takes so the sweep's metrics (duplicates, per-key order) can be computed from the event log alone.
"""

from __future__ import annotations

from pulsarlab.events import event_type

APP_RECEIVED = event_type(
    "app_received",
    "consumer:int msg:int key:int redelivery_count:int action:int",
    "the application of consumer {consumer} took message {msg} (key k{key}, redelivery count {redelivery_count}); "
    "action {action} (0 ack, 1 nack, 2 crash)",
    rule="the sweep driver's application log (pulsarlab.scenarios.run)",
)
