"""The view-model: frozen pictures of a lab per event, and the recorder that keeps them for the player.

Models no Pulsar class. Sits between the model and the views: snapshots read state and rules through read-only
methods of the broker, dispatchers, cursors and trackers, and never re-derive a rule.
"""
