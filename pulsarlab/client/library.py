"""Which client library the model follows: Pulsar's Java client or the C++ client under the Python package.

Models no class of its own: it names the two clients whose batching rules differ (`pulsarlab.client.batching`),
in a module of its own so that the lab can name the default without importing the client.
"""

from __future__ import annotations

import enum


class ClientLibrary(enum.Enum):
    """Whose batching rules a container follows (`pulsarlab.client.batching` describes the differences)."""

    JAVA = "java"  # org.apache.pulsar.client.impl (docs/guide/producer-batching.md#key-based-batching)
    CPP = "cpp"  # pulsar-client-cpp, under the Python pulsar-client package
