"""pulsarlab: a faithful, deterministic Python model of how Apache Pulsar consumes messages.

Layers (design.md): this package is the model and imports no widget, plotting or Spark library.
"""

from .clock import Scheduler
from .errors import PulsarError, Timeout
from .events import EventLog
from .hashing import murmur3_32, sticky_key
from .profiles import DEFAULT_PROFILE, PROFILES, Profile, get_profile

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PROFILE",
    "PROFILES",
    "EventLog",
    "Profile",
    "PulsarError",
    "Scheduler",
    "Timeout",
    "get_profile",
    "murmur3_32",
    "sticky_key",
]
