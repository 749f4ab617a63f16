"""The real Python client's enum values accepted where the lab's are expected.

Models no Pulsar class: a script written for ``pulsar.Client`` passes ``pulsar.ConsumerType.Shared`` (a
``_pulsar`` enum) where the lab expects `pulsarlab.ConsumerType.Shared`; the two enums have the same member
names, so the value is taken by name. Anything else is left as it is (the callee says what is wrong with it).
"""

from __future__ import annotations

import enum
from typing import Any


def lab_enum(value: Any, enum_cls: type[enum.Enum]) -> Any:
    """``value`` as a member of the lab's ``enum_cls`` when it is the real client's member of the same name."""
    if isinstance(value, enum_cls):
        return value
    name = getattr(value, "name", None)
    if (
        isinstance(name, str)
        and name in enum_cls.__members__
        and type(value).__module__.startswith(("_pulsar", "pulsar"))
    ):
        return enum_cls[name]
    return value


__all__ = ["lab_enum"]
