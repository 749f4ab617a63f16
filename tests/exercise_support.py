"""What the exercise-checker tests share: reading a checker's rejection.

Models no Pulsar class: the checkers (`pulsarlab.exercises`) answer with a result whose message starts
"Not yet" and names the mistake; the tests of labs 02, 05, 06 and 08 assert on that message.
"""

from __future__ import annotations


def rejected(result, *needles: str) -> str:
    """The message of a rejected answer, after checking it starts "Not yet" and names every one of ``needles``."""
    assert not result.ok, result.message
    assert result.message.startswith("Not yet")
    for needle in needles:
        assert needle in result.message, f"{needle!r} not in:\n{result.message}"
    return result.message


__all__ = ["rejected"]
