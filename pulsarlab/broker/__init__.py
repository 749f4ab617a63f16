"""The broker side of the model: cursor range set, dispatcher rules (reference §4, §5, §7)."""
