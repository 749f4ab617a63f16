"""The broker side of the model: the service and its command surface, topics, subscriptions, consumers."""
