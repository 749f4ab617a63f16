"""What the exercise-checker tests share: reading a checker's rejection.

Models no Pulsar class: the checkers (`pulsarlab.exercises`) answer with a result whose message starts
"Not yet" and names the mistake; the tests of labs 02, 05, 06 and 08 assert on that message. An exercise as
shipped (``answer_N = ...``) gets "not answered yet" and what to write.
"""

from __future__ import annotations


def rejected(result, *needles: str) -> str:
    """The message of a rejected answer, after checking it starts "Not yet" and names every one of ``needles``."""
    assert not result.ok, result.message
    assert result.message.startswith("Not yet")
    for needle in needles:
        assert needle in result.message, f"{needle!r} not in:\n{result.message}"
    return result.message


def unanswered(result) -> str:
    """The message of a checker given the shipped ``...``: "not answered yet", what to write, and nothing else."""
    assert not result.ok and not result.answered, result.message
    assert result.message.startswith("not answered yet: write "), result.message
    assert "\n" not in result.message and "Not yet" not in result.message
    return result.message


def where_to_look(result, lab: int) -> str:
    """The "Where to look" line of a rejection: it names the lab's section and at least one guide page."""
    line = result.lines[-1]
    assert line.startswith(f"Where to look: Lab {lab}, section"), result.message
    assert "docs/guide/" in line, line
    return line


__all__ = ["rejected", "unanswered", "where_to_look"]
