"""The admin REST resources of persistent topics and the HTTP topic lookup.

Models Pulsar's `PersistentTopics` (v2) over ``lab.admin``: topics and partitioned topics listed, created, resized
and deleted; stats, partitioned stats and internal stats; subscriptions created (at a message id) and deleted;
the cursor moves ``skip/{n}``, ``skip_all``, ``expireMessages/{seconds}`` (for one subscription or
``all_subscription``) and ``resetcursor`` (to a time or a message id); ``compaction`` triggered and its status.
And `TopicLookup` (``/lookup/v2/topic/...``), so ``pulsar.Client("http://...")`` finds the binary port. A path
number past Java's ``int`` (``long`` for a timestamp) does not match the resource: 404, as JAX-RS answers.

Simplifies: persistent topics only; topic properties given on creation are accepted and ignored; one broker owns
every topic.
"""

from __future__ import annotations

import json

from aiohttp import web

from pulsarlab.serve.admin_requests import (
    LONG_MAX,
    SUBSCRIPTION,
    TOPIC,
    AdminResource,
    flag,
    int_body,
    json_body,
    long_running_status,
    message_id_of,
    path_number,
    topic_of,
)


class PersistentTopics(AdminResource):
    """``/admin/v2/persistent/...``: topics, their stats, subscriptions, cursor moves and compaction."""

    def add_routes(self, r: web.UrlDispatcher) -> None:
        r.add_get("/admin/v2/persistent/{tenant}/{namespace}", self.topics)
        r.add_get("/admin/v2/persistent/{tenant}/{namespace}/partitioned", self.partitioned_topics)
        r.add_put(TOPIC, self.create_topic)
        r.add_delete(TOPIC, self.delete_topic)
        r.add_get(TOPIC + "/partitions", self.partitions)
        r.add_put(TOPIC + "/partitions", self.create_partitioned)
        r.add_post(TOPIC + "/partitions", self.update_partitions)
        r.add_delete(TOPIC + "/partitions", self.delete_partitioned)
        r.add_get(TOPIC + "/stats", self.stats)
        r.add_get(TOPIC + "/partitioned-stats", self.partitioned_stats)
        r.add_get(TOPIC + "/internalStats", self.internal_stats)
        r.add_get(TOPIC + "/subscriptions", self.subscriptions)
        r.add_put(TOPIC + "/subscription/{subscription}", self.create_subscription)
        r.add_delete(TOPIC + "/subscription/{subscription}", self.delete_subscription)
        r.add_post(SUBSCRIPTION + r"/skip/{n:\d+}", self.skip)
        r.add_post(SUBSCRIPTION + "/skip_all", self.skip_all)
        r.add_post(SUBSCRIPTION + r"/expireMessages/{seconds:\d+}", self.expire_messages)
        r.add_post(TOPIC + r"/all_subscription/expireMessages/{seconds:\d+}", self.expire_all_subscriptions)
        r.add_post(SUBSCRIPTION + r"/resetcursor/{timestamp:\d+}", self.reset_cursor_to_time)
        r.add_post(SUBSCRIPTION + "/resetcursor", self.reset_cursor_to_position)
        r.add_put(TOPIC + "/compaction", self.trigger_compaction)
        r.add_get(TOPIC + "/compaction", self.compaction_status)

    async def topics(self, request: web.Request) -> web.Response:
        ns = self.existing_namespace(request)
        return web.json_response(self.call(self.admin.topics.list, ns))

    async def partitioned_topics(self, request: web.Request) -> web.Response:
        ns = self.existing_namespace(request)
        return web.json_response(self.call(self.admin.topics.list_partitioned_topics, ns))

    async def create_topic(self, request: web.Request) -> web.Response:
        await json_body(request)  # topic properties: accepted, not modelled
        self.call(self.admin.topics.create_non_partitioned_topic, topic_of(request))
        return web.Response(status=204)

    async def delete_topic(self, request: web.Request) -> web.Response:
        self.call(self.admin.topics.delete, topic_of(request))
        return web.Response(status=204)

    async def partitions(self, request: web.Request) -> web.Response:
        return web.json_response(self.call(self.admin.topics.get_partitioned_topic_metadata, topic_of(request)))

    async def create_partitioned(self, request: web.Request) -> web.Response:
        n = int_body(await json_body(request), "The number of partitions")
        self.call(self.admin.topics.create_partitioned_topic, topic_of(request), n)
        return web.Response(status=204)

    async def update_partitions(self, request: web.Request) -> web.Response:
        n = int_body(await json_body(request), "The number of partitions")
        self.call(self.admin.topics.update_partitioned_topic, topic_of(request), n)
        return web.Response(status=204)

    async def delete_partitioned(self, request: web.Request) -> web.Response:
        self.call(self.admin.topics.delete_partitioned_topic, topic_of(request))
        return web.Response(status=204)

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.call(self.admin.topics.stats, topic_of(request)))

    async def partitioned_stats(self, request: web.Request) -> web.Response:
        per_partition = flag(request, "perPartition", True)
        body = self.call(self.admin.topics.partitioned_stats, topic_of(request), per_partition)
        return web.json_response(body)

    async def internal_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.call(self.admin.topics.stats_internal, topic_of(request)))

    async def subscriptions(self, request: web.Request) -> web.Response:
        return web.json_response(self.call(self.admin.topics.subscriptions, topic_of(request)))

    async def create_subscription(self, request: web.Request) -> web.Response:
        message_id = message_id_of(await json_body(request))
        sub = request.match_info["subscription"]
        self.call(self.admin.topics.create_subscription, topic_of(request), sub, message_id)
        return web.Response(status=204)

    async def delete_subscription(self, request: web.Request) -> web.Response:
        force = flag(request, "force", False)
        sub = request.match_info["subscription"]
        self.call(self.admin.topics.delete_subscription, topic_of(request), sub, force)
        return web.Response(status=204)

    async def skip(self, request: web.Request) -> web.Response:
        n = path_number(request, "n")
        self.call(self.admin.topics.skip_messages, topic_of(request), request.match_info["subscription"], n)
        return web.Response(status=204)

    async def skip_all(self, request: web.Request) -> web.Response:
        self.call(self.admin.topics.skip_all_messages, topic_of(request), request.match_info["subscription"])
        return web.Response(status=204)

    async def expire_messages(self, request: web.Request) -> web.Response:
        seconds = path_number(request, "seconds")
        sub = request.match_info["subscription"]
        self.call(self.admin.topics.expire_messages, topic_of(request), sub, seconds)
        return web.Response(status=204)

    async def expire_all_subscriptions(self, request: web.Request) -> web.Response:
        """``.../all_subscription/expireMessages/{seconds}``: every subscription of the topic (or its partitions)."""
        seconds = path_number(request, "seconds")
        topic = topic_of(request)
        topics = self.admin.topics

        def expire_all() -> None:
            for sub in topics.subscriptions(topic):
                topics.expire_messages(topic, sub, seconds)

        self.call(expire_all)
        return web.Response(status=204)

    async def reset_cursor_to_time(self, request: web.Request) -> web.Response:
        """``.../resetcursor/{timestamp}``: a wall-clock time (ms since the epoch), moved onto the lab clock."""
        wall = path_number(request, "timestamp", LONG_MAX)
        sub = request.match_info["subscription"]
        topic = topic_of(request)
        self.call(lambda: self.admin.topics.reset_cursor(topic, sub, self.server.clock.to_virtual(wall)))
        return web.Response(status=204)

    async def reset_cursor_to_position(self, request: web.Request) -> web.Response:
        """``.../resetcursor`` with a `ResetCursorData` body (``ledgerId``, ``entryId``, ``isExcluded``)."""
        body = await json_body(request)
        if not isinstance(body, dict):
            raise web.HTTPBadRequest(reason='The body must be a message id: {"ledgerId": L, "entryId": E}')
        message_id = message_id_of(body)
        excluded = body.get("isExcluded", False)
        if not isinstance(excluded, bool):
            raise web.HTTPBadRequest(reason=f"isExcluded must be true or false, got {json.dumps(excluded)}")
        sub = request.match_info["subscription"]
        topic = topic_of(request)
        self.call(lambda: self.admin.topics.reset_cursor(topic, sub, message_id=message_id, is_excluded=excluded))
        return web.Response(status=204)

    async def trigger_compaction(self, request: web.Request) -> web.Response:
        """``PUT .../compaction`` (`PersistentTopicsBase.internalTriggerCompaction`): 204 once started."""
        self.call(self.admin.topics.trigger_compaction, topic_of(request))
        return web.Response(status=204)

    async def compaction_status(self, request: web.Request) -> web.Response:
        """``GET .../compaction``: `LongRunningProcessStatus` ``{"status": ..., "lastError": ...}``."""
        status = self.call(self.admin.topics.compaction_status, topic_of(request))
        return web.json_response(long_running_status(status))


class TopicLookup(AdminResource):
    """``/lookup/v2/topic/persistent/...``: the broker that owns a topic (always this one)."""

    def add_routes(self, r: web.UrlDispatcher) -> None:
        r.add_get("/lookup/v2/topic/persistent/{tenant}/{namespace}/{topic}", self.lookup)

    async def lookup(self, request: web.Request) -> web.Response:
        """`TopicLookup`'s `LookupData`: this broker owns every topic (the C++ client needs both broker URLs)."""
        self.call(self.server.lab.service.normalize, topic_of(request))
        broker = self.server.url
        return web.json_response(
            {
                "brokerUrl": broker,
                "brokerUrlTls": "",
                "httpUrl": self.http.url,
                "httpUrlTls": "",
                "nativeUrl": broker,
            }
        )


__all__ = ["PersistentTopics", "TopicLookup"]
