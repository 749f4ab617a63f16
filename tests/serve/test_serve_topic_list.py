"""GET_TOPICS_OF_NAMESPACE with a pattern and a topics hash (`serve.topic_list`), on the wire and as functions."""

from __future__ import annotations

import pytest
from serve_support import raw_client, served_lab

from pulsarlab.serve.commands import CommandType, GetTopicsOfNamespace, TopicsMode
from pulsarlab.serve.topic_list import answer, filter_topics, topics_hash

pytestmark = pytest.mark.serve

A = "persistent://public/default/orders-a"
B = "persistent://public/default/orders-b-partition-1"
C = "persistent://public/default/other"
N = "non-persistent://public/default/orders-n"


def test_filter_matches_the_whole_name_without_domain_and_partition():
    topics = [A, B, C, N]
    assert filter_topics(topics, "persistent://public/default/orders-.*") == [A, B, N]
    assert filter_topics(topics, "public/default/orders-b") == [B]
    assert filter_topics(topics, "public/default/orders") == []
    assert filter_topics(topics, "(unclosed") is None


def test_hash_is_crc32c_of_the_names_little_endian_and_unchanged_lists_are_empty():
    assert topics_hash(["123456789"]) == (0xE3069283).to_bytes(4, "little").hex()  # CRC-32C check value
    assert topics_hash([A, C]) == topics_hash([A + C])
    first = answer([A, B, C], "public/default/orders-.*", None)
    assert (first.topics, first.filtered, first.changed) == ([A, B], True, True)
    again = answer([A, B, C], "public/default/orders-.*", first.topics_hash)
    assert (again.topics, again.changed, again.topics_hash) == ([], False, first.topics_hash)
    plain = answer([A, C], None, None)
    assert (plain.topics, plain.filtered) == ([A, C], False)


def test_on_the_wire():
    with served_lab() as (lab, server), raw_client(server.url) as raw:
        with server.lock:
            for t in ("orders-a", "other", "non-persistent://public/default/orders-n"):
                lab.service.ensure_topic(lab.service.normalize(t))
        raw.handshake()
        raw.send(
            GetTopicsOfNamespace(
                request_id=1, namespace="public/default", mode=TopicsMode.ALL, topics_pattern="public/default/orders-.*"
            )
        )
        r = raw.expect(CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE)
        assert (r.topics, r.filtered, r.changed) == ([N, A], True, True)  # sorted names
        raw.send(
            GetTopicsOfNamespace(
                request_id=2,
                namespace="public/default",
                mode=TopicsMode.ALL,
                topics_pattern="public/default/orders-.*",
                topics_hash=r.topics_hash,
            )
        )
        r2 = raw.expect(CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE)
        assert (r2.topics, r2.changed) == ([], False)
        raw.send(GetTopicsOfNamespace(request_id=3, namespace="public/default", mode=TopicsMode.NON_PERSISTENT))
        assert raw.expect(CommandType.GET_TOPICS_OF_NAMESPACE_RESPONSE).topics == [N]
