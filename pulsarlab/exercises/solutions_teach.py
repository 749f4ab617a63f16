"""The solutions of the exercises on mechanisms (`pulsarlab.exercises.mechanisms`), per lab notebook.

Models no Pulsar class. Each lab's answers as ``{"answer_N": value}``, keyed by the notebook's file name
without ``.ipynb``; the notebooks ship these cells unsolved (``answer_N = ...``) and the tests run them both ways.
"""

from __future__ import annotations

from typing import Any

SOLUTIONS: dict[str, dict[str, Any]] = {
    "01-key-shared": {"answer_3": {"entries": 3, "keyless_consumer": "c3"}},
    "02-subscription-types": {"answer_4": {"one_left": "SubscriptionBusyException", "all_left": "Failover"}},
    "03-acks-and-the-cursor": {
        "answer_4": {
            "off": {"position": "3:3", "ack_set": None},
            "on": {"position": "3:4", "ack_set": [192]},
        }
    },
    "04-failover": {"answer_3": "c2"},
    "05-key-shared-ordering": {"answer_3": {"3.0": 1, "4.0": 3}},
    "06-debug-your-cluster": {"answer_4": 16},
    "07-redelivery-and-dead-letters": {
        "answer_4": {
            "received_from": ["payments", "payments-billing-RETRY", "payments-billing-RETRY"],
            "dead_letter_topic": "payments-billing-DLQ",
        }
    },
    "08-chunked-messages": {"answer_7": {"chunks": 2, "callbacks": 1}},
    "09-delayed-delivery": {"answer_4": {"segment_loads_at": [5000, 9000], "merged_buckets": 3}},
    "10-watch-your-app": {"answer_1": {"msgInCounter": 60, "msgBacklog": 0, "crasher_closed": "disconnected"}},
}
