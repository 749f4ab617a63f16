"""The client side of the model: redelivery trackers and, later, producer and consumer (reference §6-§9)."""
