"""The result of checking one exercise answer: OK, or what is wrong and why.

Models no Pulsar class. A notebook cell that ends with a checker call shows the message as plain text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CheckResult:
    """``ok`` and the lines to show the learner; truthy when the answer is right."""

    ok: bool
    lines: tuple[str, ...]

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


def failed(problems: list[str], hint: str = "") -> CheckResult:
    lines = [f"Not yet: {len(problems)} problem{'s' if len(problems) != 1 else ''}."]
    lines += [f"  - {p}" for p in problems]
    if hint:
        lines.append(hint)
    return CheckResult(False, tuple(lines))
