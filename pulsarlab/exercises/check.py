"""The result of checking one exercise answer: not answered yet, OK and why, or what is wrong and where to look.

Models no Pulsar class. A notebook cell that ends with a checker call shows the message as plain text. Exercises
ship unsolved (``answer_N = ...``): every checker is wrapped by `exercise`, which answers ``...`` with
`unanswered` and ends every rejection with where to look (the lab's section and the guide page in docs/guide/).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

NOT_ANSWERED = "not answered yet"

Checker = TypeVar("Checker", bound=Callable[..., "CheckResult"])


@dataclass(frozen=True)
class CheckResult:
    """``ok`` and the lines to show the learner; truthy when the answer is right. ``answered`` is False while
    the answer is still ``...``."""

    ok: bool
    lines: tuple[str, ...]
    answered: bool = True

    @property
    def message(self) -> str:
        return "\n".join(self.lines)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return self.message


def passed(text: str) -> CheckResult:
    return CheckResult(True, (f"OK: {text}",))


def failed(problems: list[str], hint: str = "", see: str = "") -> CheckResult:
    """A rejection: the problems, then a hint, then ``see`` (where in the lab and the guide to look)."""
    lines = [f"Not yet: {len(problems)} problem{'s' if len(problems) != 1 else ''}."]
    lines += [f"  - {p}" for p in problems]
    if hint:
        lines.append(hint)
    if see:
        lines.append(f"Where to look: {see}")
    return CheckResult(False, tuple(lines))


def unanswered(todo: str) -> CheckResult:
    """The result for an answer that is still ``...``: what to write in its place."""
    return CheckResult(False, (f"{NOT_ANSWERED}: {todo}",), answered=False)


def exercise(*, todo: str, see: tuple[str, ...]) -> Callable[[Checker], Checker]:
    """Make a function ``check(answer, ...)`` an exercise checker: ``answer is ...`` (the exercise as shipped)
    gives `unanswered` with ``todo``; a rejection ends with ``Where to look:`` and the places in ``see`` (the
    lab's section, then guide pages as ``docs/guide/<page>.md#<anchor>``)."""
    where = "; ".join(see)

    def wrap(check: Checker) -> Checker:
        @functools.wraps(check)
        def run(answer: Any, *args: Any, **kwargs: Any) -> CheckResult:
            if answer is ...:
                return unanswered(todo)
            result = check(answer, *args, **kwargs)
            if result.ok or any(line.startswith("Where to look:") for line in result.lines):
                return result
            return CheckResult(False, result.lines + (f"Where to look: {where}",))

        run.see = see  # type: ignore[attr-defined]
        run.todo = todo  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return wrap


__all__ = ["NOT_ANSWERED", "CheckResult", "exercise", "failed", "passed", "unanswered"]
