"""pulsarlab: a faithful, deterministic Python model of how Apache Pulsar consumes messages.

Layers (docs/architecture.md): this package is the model and imports no widget, plotting or Spark library.
"""

from pulsarlab.client.batching import BatchingType, ClientLibrary
from pulsarlab.client.chunking import ChunkMessageId, MessageTooBig
from pulsarlab.client.negative_acks import MultiplierRedeliveryBackoff
from pulsarlab.client.policies import ConsumerDeadLetterPolicy
from pulsarlab.client.routing import PartitionsRoutingMode
from pulsarlab.clock import Scheduler
from pulsarlab.errors import (
    ConsumerBusyException,
    IllegalArgumentException,
    InvalidConfigurationException,
    PulsarClientException,
    PulsarError,
    ServerMetadataException,
    SubscriptionBusyException,
    Timeout,
)
from pulsarlab.events import EventLog
from pulsarlab.hashing import murmur3_32, sticky_key
from pulsarlab.ids import MessageId
from pulsarlab.lab import Lab
from pulsarlab.profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile
from pulsarlab.protocol.producer_access import ProducerAccessMode
from pulsarlab.protocol.subscription import ConsumerKeySharedPolicy, ConsumerType, InitialPosition, KeySharedMode
from pulsarlab.snapshot.timeline_file import TimelineFileError, load_timeline
from pulsarlab.version import __version__ as __version__

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
    "ProducerAccessMode",
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
    "TimelineFileError",
    "get_profile",
    "load_timeline",
    "murmur3_32",
    "sticky_key",
]
