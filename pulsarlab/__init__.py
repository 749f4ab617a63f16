"""pulsarlab: a faithful, deterministic Python model of how Apache Pulsar consumes messages.

Layers (docs/architecture.md): this package is the model and imports no widget, plotting or Spark library.
The names below load on first use (PEP 562 ``__getattr__``), so ``python -m pulsarlab serve`` and the pytest
plugin import only what they run: ``pulsarlab.Lab`` costs the import of `pulsarlab.lab`, not the whole model.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from pulsarlab.version import __version__ as __version__

# public name -> the module that defines it
_WHERE = {
    "BatchingType": "pulsarlab.client.batching",
    "ClientLibrary": "pulsarlab.client.batching",
    "ChunkMessageId": "pulsarlab.client.chunking",
    "MessageTooBig": "pulsarlab.client.chunking",
    "MultiplierRedeliveryBackoff": "pulsarlab.client.negative_acks",
    "ConsumerDeadLetterPolicy": "pulsarlab.client.policies",
    "PartitionsRoutingMode": "pulsarlab.client.routing",
    "Scheduler": "pulsarlab.clock",
    "ConsumerBusyException": "pulsarlab.errors",
    "IllegalArgumentException": "pulsarlab.errors",
    "InvalidConfigurationException": "pulsarlab.errors",
    "PulsarClientException": "pulsarlab.errors",
    "PulsarError": "pulsarlab.errors",
    "ServerMetadataException": "pulsarlab.errors",
    "SubscriptionBusyException": "pulsarlab.errors",
    "Timeout": "pulsarlab.errors",
    "EventLog": "pulsarlab.events",
    "murmur3_32": "pulsarlab.hashing",
    "sticky_key": "pulsarlab.hashing",
    "MessageId": "pulsarlab.ids",
    "Lab": "pulsarlab.lab",
    "DEFAULT_PROFILE": "pulsarlab.profiles",
    "PROFILES": "pulsarlab.profiles",
    "Profile": "pulsarlab.profiles",
    "get_profile": "pulsarlab.profiles",
    "ProducerAccessMode": "pulsarlab.protocol.producer_access",
    "ConsumerKeySharedPolicy": "pulsarlab.protocol.subscription",
    "ConsumerType": "pulsarlab.protocol.subscription",
    "InitialPosition": "pulsarlab.protocol.subscription",
    "KeySharedMode": "pulsarlab.protocol.subscription",
    "TimelineFileError": "pulsarlab.snapshot.timeline_file",
    "load_timeline": "pulsarlab.snapshot.timeline_file",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'pulsarlab' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
