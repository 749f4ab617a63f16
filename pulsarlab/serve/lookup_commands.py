"""The lookup and metadata commands of one connection: where a topic lives, how many partitions it has, the topics
of a namespace, and its schemas.

Models `ServerCnx.handlePartitionMetadataRequest`, `handleLookup` (with `NamespaceService`'s advertised listeners),
`handleGetTopicsOfNamespace` (`TopicList`'s filter and hash), `handleGetSchema` and `handleGetOrCreateSchema`:
each calls the broker's command surface and answers on the connection that asked. A lookup on a topic of a
namespace that does not exist fails with TopicNotFound, an invalid name with InvalidTopicName.

Simplifies: one broker, so every lookup answers with this server (``authoritative``, no redirect).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulsarlab.broker.service import client_error_code, namespace_of
from pulsarlab.errors import PulsarError
from pulsarlab.protocol.server_errors import ServerError
from pulsarlab.serve import topic_list
from pulsarlab.serve.commands import (
    GetOrCreateSchema,
    GetOrCreateSchemaResponse,
    GetSchema,
    GetSchemaResponse,
    GetTopicsOfNamespace,
    GetTopicsOfNamespaceResponse,
    LookupKind,
    LookupRequest,
    LookupResponse,
    MetadataLookupKind,
    PartitionMetadataRequest,
    PartitionMetadataResponse,
)
from pulsarlab.serve.frames import Frame
from pulsarlab.serve.schema_wire import model_schema, schema_version, wire_schema

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.connection import ServerConnection


class LookupCommands:
    """The lookup, metadata and schema handlers of one `ServerConnection`."""

    def __init__(self, connection: "ServerConnection") -> None:
        self.server = connection.server
        self.service = connection.service
        self.send = connection.send

    def lookup_topic(self, name: str) -> tuple[str, None] | tuple[None, tuple[ServerError, str]]:
        """A lookup's topic, or why the lookup fails: an invalid name, or a namespace that does not exist."""
        try:
            topic = self.service.normalize(name)
        except PulsarError as e:
            return None, (ServerError.InvalidTopicName, str(e))
        if not self.service.namespace_exists(namespace_of(topic)):
            return None, (ServerError.TopicNotFound, "Namespace does not exist")
        return topic, None

    def on_partition_metadata(self, cmd: PartitionMetadataRequest, frame: Frame) -> None:
        topic, failure = self.lookup_topic(cmd.topic)
        if failure is not None:
            error, message = failure
            self.send(
                PartitionMetadataResponse(
                    request_id=cmd.request_id, response=MetadataLookupKind.Failed, error=error, message=message
                )
            )
            return
        self.send(
            PartitionMetadataResponse(
                partitions=self.service.partition_count(topic),
                request_id=cmd.request_id,
                response=MetadataLookupKind.Success,
            )
        )

    def on_lookup(self, cmd: LookupRequest, frame: Frame) -> None:
        _, failure = self.lookup_topic(cmd.topic)
        if failure is not None:
            error, message = failure
            self.send(
                LookupResponse(request_id=cmd.request_id, response=LookupKind.Failed, error=error, message=message)
            )
            return
        url = self.server.url
        listener = cmd.advertised_listener_name
        if listener:  # NamespaceService: a listener name the broker does not advertise fails the lookup
            url = self.server.advertised_listeners.get(listener)
            if url is None:
                self.send(
                    LookupResponse(
                        request_id=cmd.request_id,
                        response=LookupKind.Failed,
                        error=ServerError.ServiceNotReady,
                        message=f"the broker do not have {listener} listener",
                    )
                )
                return
        self.send(
            LookupResponse(
                broker_service_url=url,
                response=LookupKind.Connect,
                request_id=cmd.request_id,
                authoritative=True,
            )
        )

    def on_get_topics(self, cmd: GetTopicsOfNamespace, frame: Frame) -> None:
        topics = self.service.topics_of_namespace(cmd.namespace, cmd.value("mode").name)
        found = topic_list.answer(topics, cmd.topics_pattern, cmd.topics_hash)
        self.send(
            GetTopicsOfNamespaceResponse(
                request_id=cmd.request_id,
                topics=found.topics,
                filtered=found.filtered,
                topics_hash=found.topics_hash,
                changed=found.changed,
            )
        )

    def on_get_schema(self, cmd: GetSchema, frame: Frame) -> None:
        """`ServerCnx.handleGetSchema`: the topic's latest schema, or the version asked for."""
        version = int.from_bytes(cmd.schema_version, "big", signed=True) if cmd.schema_version else None
        try:
            found = self.service.get_schema(self.service.normalize(cmd.topic), version)
        except PulsarError:
            found = None
        if found is None:
            self.send(
                GetSchemaResponse(
                    request_id=cmd.request_id,
                    error_code=ServerError.TopicNotFound,
                    error_message="Topic not found or no-schema",
                )
            )
            return
        number, schema = found
        self.send(
            GetSchemaResponse(
                request_id=cmd.request_id, schema=wire_schema(schema), schema_version=schema_version(number)
            )
        )

    def on_get_or_create_schema(self, cmd: GetOrCreateSchema, frame: Frame) -> None:
        try:
            version = self.service.add_schema(self.service.normalize(cmd.topic), model_schema(cmd.schema))
        except PulsarError as e:
            self.send(
                GetOrCreateSchemaResponse(
                    request_id=cmd.request_id, error_code=client_error_code(e), error_message=str(e)
                )
            )
            return
        self.send(GetOrCreateSchemaResponse(request_id=cmd.request_id, schema_version=schema_version(version)))


__all__ = ["LookupCommands"]
