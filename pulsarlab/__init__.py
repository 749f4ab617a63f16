"""pulsarlab: a faithful, deterministic Python model of how Apache Pulsar consumes messages.

Layers (design.md): this package is the model and imports no widget, plotting or Spark library.
"""

from .clock import Scheduler
from .errors import PulsarError, Timeout
from .events import EventLog
from .hashing import murmur3_32, sticky_key
from .profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile
from .ids import MessageId
from .errors import (
    ConsumerBusyException,
    IllegalArgumentException,
    InvalidConfigurationException,
    PulsarClientException,
    ServerMetadataException,
    SubscriptionBusyException,
)
from .client.batching import BatchingType, ClientLibrary
from .client.chunking import ChunkMessageId, MessageTooBig
from .client.routing import PartitionsRoutingMode
from .client.policies import (
    ConsumerDeadLetterPolicy,
    ConsumerKeySharedPolicy,
    ConsumerType,
    InitialPosition,
    KeySharedMode,
)
from .client.negative_acks import MultiplierRedeliveryBackoff
from .lab import Lab

__version__ = "0.1.0"

__all__ = [
    "BatchingType",
    "ChunkMessageId",
    "ClientLibrary",
    "ConsumerBusyException",
    "ConsumerDeadLetterPolicy",
    "ConsumerKeySharedPolicy",
    "ConsumerType",
    "IllegalArgumentException",
    "InitialPosition",
    "InvalidConfigurationException",
    "KeySharedMode",
    "Lab",
    "MessageId",
    "MessageTooBig",
    "MultiplierRedeliveryBackoff",
    "PartitionsRoutingMode",
    "ServerMetadataException",
    "SubscriptionBusyException",
    "DEFAULT_PROFILE",
    "PROFILES",
    "EventLog",
    "Profile",
    "PulsarClientException",
    "PulsarError",
    "Scheduler",
    "Timeout",
    "get_profile",
    "murmur3_32",
    "sticky_key",
]
