"""Dead-letter topics: the policy's names, the properties a copy carries, and sending by redelivery count.

Models the client's `DeadLetterPolicy` with its name defaults (`ConsumerImpl` constructor and, for the retry
path, `ConsumerBuilderImpl.subscribeAsync`), `RetryMessageUtil`'s constants, ``getPropertiesMap`` and
``copyMessageKeysIfNeeded``, the lazily created dead-letter producer (``initDeadLetterProducerIfNeeded``) and
``possibleSendToDeadLetterTopicMessages`` / ``processPossibleToDLQ``
(docs/guide/retry-and-dead-letters.md#dead-letter-topic):

* A message that arrives with ``redeliveryCount >= maxRedeliverCount`` is remembered; one that arrives with
  more than that is also redelivered at once (a single message is then not shown to the application).
* The next time a remembered message would be redelivered (ack timeout, negative ack, a skip), it is written
  to the dead-letter topic - payload, key, ordering key, event time and properties plus ``REAL_TOPIC`` and
  ``ORIGIN_MESSAGE_ID`` - and the original is acknowledged instead. So the application sees a message
  ``maxRedeliverCount + 1`` times.

Simplifies: sends never fail (no producer back-off, no "send failed, redeliver instead" path); the producer
is created with batching off (chunking belongs to another issue); schemas are bytes only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Callable, TypedDict

from pulsarlab.errors import IllegalArgumentException
from pulsarlab.event_catalogue import redelivery as rev
from pulsarlab.ids import MessageId

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.client.consumer import Message
    from pulsarlab.client.policies import ConsumerDeadLetterPolicy
    from pulsarlab.client.producer import Producer
    from pulsarlab.lab import Lab

# RetryMessageUtil
SYSTEM_PROPERTY_RECONSUMETIMES = "RECONSUMETIMES"
SYSTEM_PROPERTY_DELAY_TIME = "DELAY_TIME"
SYSTEM_PROPERTY_REAL_TOPIC = "REAL_TOPIC"
SYSTEM_PROPERTY_REAL_SUBSCRIPTION = "REAL_SUBSCRIPTION"  # 4.x
SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_IDY_TIME"  # the misspelt legacy key, still written
PROPERTY_ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
MAX_RECONSUMETIMES = 16
RETRY_GROUP_TOPIC_SUFFIX = "-RETRY"
DLQ_GROUP_TOPIC_SUFFIX = "-DLQ"

MAX_REDELIVER_COUNT_TEXT = "MaxRedeliverCount must be > 0."  # ConsumerBuilderImpl.deadLetterPolicy
_PARTITION_SUFFIX = "-partition-"


@dataclass(frozen=True)
class DeadLetterPolicy:
    """Java's `DeadLetterPolicy` with every name resolved (blank: not set)."""

    max_redeliver_count: int
    dead_letter_topic: str = ""
    retry_letter_topic: str = ""
    initial_subscription_name: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.max_redeliver_count, bool) or not isinstance(self.max_redeliver_count, int):
            raise TypeError(f"maxRedeliverCount must be an int, not {self.max_redeliver_count!r}")
        if self.max_redeliver_count <= 0:
            raise IllegalArgumentException(MAX_REDELIVER_COUNT_TEXT)

    @classmethod
    def of(cls, policy: "ConsumerDeadLetterPolicy") -> "DeadLetterPolicy":
        return cls(
            policy.max_redeliver_count,
            policy.dead_letter_topic,
            policy.retry_letter_topic,
            policy.initial_subscription_name,
        )


def default_dead_letter_topic(topic: str, subscription: str) -> str:
    """``<topic>-<subscription>-DLQ`` (since 2.8, #10129)."""
    return f"{topic}-{subscription}{DLQ_GROUP_TOPIC_SUFFIX}"


def default_retry_letter_topic(topic: str, subscription: str) -> str:
    """``<topic>-<subscription>-RETRY`` (since 2.8, #10129)."""
    return f"{topic}-{subscription}{RETRY_GROUP_TOPIC_SUFFIX}"


def legacy_letter_topics(topic: str, subscription: str) -> tuple[str, str]:
    """The names before 2.8, one pair per namespace: ``(<domain>://<tenant>/<ns>/<subscription>-RETRY, ...-DLQ)``."""
    domain, rest = topic.split("://", 1)
    tenant, namespace = rest.split("/")[:2]
    base = f"{domain}://{tenant}/{namespace}/{subscription}"
    return base + RETRY_GROUP_TOPIC_SUFFIX, base + DLQ_GROUP_TOPIC_SUFFIX


def resolve_retry_policy(
    policy: DeadLetterPolicy | None, first_topic: str, subscription: str, topic_exists: Callable[[str], bool]
) -> DeadLetterPolicy:
    """`ConsumerBuilderImpl.subscribeAsync` with ``enableRetry``: fill blank names from the first topic, keep
    the pre-2.8 names when such topics exist already (``checkDlqAlreadyExists``), default 16 redeliveries."""
    old_retry, old_dlq = legacy_letter_topics(first_topic, subscription)
    retry = old_retry if topic_exists(old_retry) else default_retry_letter_topic(first_topic, subscription)
    dlq = old_dlq if topic_exists(old_dlq) else default_dead_letter_topic(first_topic, subscription)
    if policy is None:
        return DeadLetterPolicy(MAX_RECONSUMETIMES, dlq, retry)
    return DeadLetterPolicy(
        policy.max_redeliver_count,
        policy.dead_letter_topic or dlq,
        policy.retry_letter_topic or retry,
        policy.initial_subscription_name,
    )


def resolve_consumer_policy(policy: DeadLetterPolicy, topic: str, subscription: str) -> DeadLetterPolicy:
    """The `ConsumerImpl` constructor: a blank name becomes the default for this consumer's own topic (the
    partition's name on a partitioned topic)."""
    return DeadLetterPolicy(
        policy.max_redeliver_count,
        policy.dead_letter_topic or default_dead_letter_topic(topic, subscription),
        policy.retry_letter_topic or default_retry_letter_topic(topic, subscription),
        policy.initial_subscription_name,
    )


def origin_topic_name(topic: str, multi_topics: bool) -> str:
    """``getOriginTopicNameStr``: a multi-topic consumer's owner topic without its ``-partition-N`` suffix;
    a single-topic consumer's topic as it is."""
    if multi_topics:
        i = topic.rfind(_PARTITION_SUFFIX)
        if i >= 0:
            return topic[:i]
    return topic


def letter_properties(
    properties: dict[str, str], origin_message_id: str, origin_topic: str, subscription: str | None
) -> dict[str, str]:
    """``getPropertiesMap``: the message's properties, then (only where absent) ``REAL_TOPIC``, the legacy
    ``ORIGIN_MESSAGE_IDY_TIME`` and ``ORIGIN_MESSAGE_ID`` (and 4.x ``REAL_SUBSCRIPTION``), sorted by key."""
    out = dict(properties)
    out.setdefault(SYSTEM_PROPERTY_REAL_TOPIC, origin_topic)
    out.setdefault(SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID, origin_message_id)
    out.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, origin_message_id)
    if subscription is not None:
        out.setdefault(SYSTEM_PROPERTY_REAL_SUBSCRIPTION, subscription)
    return dict(sorted(out.items()))


class LetterOwner(TypedDict):
    """Who writes the letters (`DeadLetters`, `RetryLetters` take these keywords): the consumer, its
    subscription, whether it is a multi-topic consumer, and whether copies carry ``REAL_SUBSCRIPTION``."""

    consumer_id: int
    subscription: str
    multi_topics: bool
    real_subscription: bool


class CopyKeywords(TypedDict, total=False):
    """The keywords of ``Producer.send`` a dead-letter or retry copy passes besides payload and properties."""

    partition_key: str
    ordering_key: bytes
    event_timestamp: int
    deliver_after: timedelta


def copy_kwargs(message: "Message") -> CopyKeywords:
    """``copyMessageKeysIfNeeded`` plus the event time: what a copy keeps besides payload and properties."""
    out: CopyKeywords = {}
    key = message.partition_key()
    if key:
        out["partition_key"] = key
    ordering = message._ordering_key_bytes()
    if ordering:
        out["ordering_key"] = ordering
    event_time = message.event_timestamp()
    if event_time:
        out["event_timestamp"] = event_time
    return out


class LetterProducer:
    """A dead-letter or retry producer, created at its first use (``init...ProducerIfNeeded``)."""

    def __init__(
        self,
        lab: "Lab",
        create: Callable[[str], "Producer"],
        consumer_id: int,
        kind: str,
        topic: str,
        initial_subscription_name: str = "",
    ) -> None:
        self._lab = lab
        self._create = create
        self.consumer_id = consumer_id
        self.kind = kind
        self.topic = topic
        self.initial_subscription_name = initial_subscription_name
        self.producer: "Producer | None" = None

    def get(self) -> "Producer":
        if self.producer is None:
            svc = self._lab.service
            topic = svc.normalize(self.topic)
            if self.initial_subscription_name:
                svc.create_initial_subscription(topic, self.initial_subscription_name)
            producer = self._create(topic)
            self.producer = producer
            events = self._lab.events
            if events.enabled:
                events.append(
                    rev.LETTER_PRODUCER_CREATED,
                    self._lab.now(),
                    consumer=self.consumer_id,
                    letter=self.kind,
                    topic=topic,
                    producer=producer._id,
                )
        return self.producer

    def close(self) -> None:
        if self.producer is not None:
            self.producer.close()


class DeadLetters:
    """One `ConsumerImpl`'s dead-letter state: its resolved policy, the messages that may go to the DLQ, the
    lazy DLQ producer.

    ``acknowledge(entry_id)`` acks the original once its copy is written; ``redeliver(ids)`` asks the broker
    again (the consumer's ``redeliverUnacknowledgedMessages(ids)``, which itself consults `process`).
    """

    def __init__(
        self,
        lab: "Lab",
        policy: DeadLetterPolicy,
        *,
        consumer_id: int,
        subscription: str,
        multi_topics: bool,
        real_subscription: bool,
        producer: LetterProducer,
        acknowledge: Callable[[MessageId], object],
    ) -> None:
        self._lab = lab
        self.policy = policy
        self.consumer_id = consumer_id
        self.subscription = subscription
        self.multi_topics = multi_topics
        self.real_subscription = real_subscription
        self.producer = producer
        self._acknowledge = acknowledge
        self.possible: dict[tuple[int, int], list["Message"]] = {}  # possibleSendToDeadLetterTopicMessages

    def on_received(self, ledger: int, entry: int, messages: list["Message"], redelivery_count: int) -> bool:
        """``messageReceived``: remember the entry's messages when the count reaches the limit; True when it
        is over the limit (the entry is to be redelivered at once, straight to the DLQ)."""
        limit = self.policy.max_redeliver_count
        if redelivery_count < limit:
            return False
        self.possible[(ledger, entry)] = messages
        over = redelivery_count > limit
        events = self._lab.events
        if events.enabled:
            events.append_row(
                rev.DEAD_LETTER_CANDIDATE,
                self._lab.now(),
                self.consumer_id,
                ledger,
                entry,
                redelivery_count,
                limit,
                int(over),
            )
        return over

    def forget(self, ledger: int, entry: int) -> None:
        """The entry was acknowledged as a whole: nothing to send any more."""
        self.possible.pop((ledger, entry), None)

    def process(self, mid: MessageId) -> bool:
        """``processPossibleToDLQ``: write a remembered entry's messages to the DLQ and ack the original.
        True when it went to the DLQ (the caller then leaves it out of the redeliver command)."""
        key = (mid.ledger, mid.entry)
        messages = self.possible.get(key)
        if messages is None:
            return False
        producer = self.producer.get()
        copies = []
        for message in messages:
            props = letter_properties(
                message.properties(),
                str(message.message_id()),
                origin_topic_name(message.topic_name(), self.multi_topics),
                self.subscription if self.real_subscription else None,
            )
            copy = producer.send(message.data(), properties=props, **copy_kwargs(message))
            copies.append([copy.ledger, copy.entry])
        del self.possible[key]
        entry_id = MessageId(mid.ledger, mid.entry, messages[0].message_id().partition)
        events = self._lab.events
        if events.enabled:
            events.append(
                rev.DEAD_LETTERED,
                self._lab.now(),
                consumer=self.consumer_id,
                ledger=mid.ledger,
                entry=mid.entry,
                count=messages[0].redelivery_count(),
                reason=rev.REASON_REDELIVERY_COUNT,
                copy={"topic": producer.topic(), "ids": copies},
            )
        self._acknowledge(entry_id)
        return True


__all__ = [
    "DLQ_GROUP_TOPIC_SUFFIX",
    "DeadLetterPolicy",
    "DeadLetters",
    "LetterProducer",
    "MAX_RECONSUMETIMES",
    "MAX_REDELIVER_COUNT_TEXT",
    "PROPERTY_ORIGIN_MESSAGE_ID",
    "RETRY_GROUP_TOPIC_SUFFIX",
    "SYSTEM_PROPERTY_DELAY_TIME",
    "SYSTEM_PROPERTY_ORIGIN_MESSAGE_ID",
    "SYSTEM_PROPERTY_REAL_SUBSCRIPTION",
    "SYSTEM_PROPERTY_REAL_TOPIC",
    "SYSTEM_PROPERTY_RECONSUMETIMES",
    "copy_kwargs",
    "default_dead_letter_topic",
    "default_retry_letter_topic",
    "legacy_letter_topics",
    "letter_properties",
    "origin_topic_name",
    "resolve_consumer_policy",
    "resolve_retry_policy",
]
