"""The real Python client's enum values accepted where the lab's are expected.

Models no Pulsar class: a script written for ``pulsar.Client`` passes ``pulsar.ConsumerType.Shared`` (a
``_pulsar`` enum) where the lab expects `pulsarlab.ConsumerType.Shared`; the two enums have the same member
names, so the value is taken by name. Anything else is left as it is (the callee says what is wrong with it).
"""

from __future__ import annotations

import enum
from typing import Any

from pulsarlab.client.batching import BatchingType
from pulsarlab.client.routing import PartitionsRoutingMode
from pulsarlab.protocol.subscription import ConsumerType, InitialPosition

ENUM_PARAMETERS: dict[str, type[enum.Enum]] = {
    "consumer_type": ConsumerType,
    "initial_position": InitialPosition,
    "batching_type": BatchingType,
    "message_routing_mode": PartitionsRoutingMode,
}


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


def lab_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a client call with the real client's enums mapped onto the lab's."""
    out = dict(kwargs)
    for key, enum_cls in ENUM_PARAMETERS.items():
        if key in out:
            out[key] = lab_enum(out[key], enum_cls)
    return out


__all__ = ["ENUM_PARAMETERS", "lab_enum", "lab_kwargs"]
