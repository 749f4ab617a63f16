"""GET_TOPICS_OF_NAMESPACE's answer: the topics a pattern consumer watches, filtered and hashed.

Models `TopicList` as `ServerCnx.handleGetTopicsOfNamespace` uses it: with ``topics_pattern`` the broker keeps
the topics whose name (without domain and partition suffix) matches the whole pattern (``filtered``); it always
sends the list's hash (CRC32C of the names, as Guava prints it) and, when the client's ``topics_hash`` is that
same hash, an empty list with ``changed`` false. Simplifies: the pattern is a Python regular expression (Java's
syntax for the common cases); a pattern that does not compile is not applied, as when the broker's pattern
evaluation is off.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import google_crc32c

_PARTITION = re.compile(r"-partition-\d+$")
_SCHEME = re.compile(r"^(persistent|non-persistent)://")


def topics_hash(topics: list[str]) -> str:
    """`TopicList.calculateHash`: CRC32C over the names in order, as ``HashCode.toString()`` (little-endian hex)."""
    crc = 0
    for t in topics:
        crc = google_crc32c.extend(crc, t.encode("utf-8"))
    return crc.to_bytes(4, "little").hex()


def filter_topics(topics: list[str], pattern: str) -> list[str] | None:
    """`TopicList.filterTopics`: the topics whose partitioned name, without its domain, matches ``pattern``;
    None when the pattern does not compile."""
    try:
        compiled = re.compile(_SCHEME.sub("", pattern))
    except re.error:
        return None
    return [t for t in topics if compiled.fullmatch(_SCHEME.sub("", _PARTITION.sub("", t)))]


@dataclass(frozen=True)
class TopicListAnswer:
    """What a GET_TOPICS_OF_NAMESPACE is answered with (`CommandGetTopicsOfNamespaceResponse`'s fields)."""

    topics: list[str]
    topics_hash: str
    filtered: bool
    changed: bool


def answer(topics: list[str], pattern: str | None, client_hash: str | None) -> TopicListAnswer:
    """What GET_TOPICS_OF_NAMESPACE_RESPONSE carries for the namespace's ``topics``."""
    filtered = False
    if pattern:
        kept = filter_topics(topics, pattern)
        if kept is not None:
            topics, filtered = kept, True
    digest = topics_hash(topics)
    if client_hash is not None and client_hash == digest:
        return TopicListAnswer([], digest, filtered, False)
    return TopicListAnswer(topics, digest, filtered, True)


__all__ = ["TopicListAnswer", "answer", "filter_topics", "topics_hash"]
