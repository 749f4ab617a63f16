"""``pulsarlab serve``: the lab's broker speaking Pulsar's binary protocol, so real clients drive the model.

    server = pulsarlab.serve.start(lab, port=6650)     # port=0 picks a free one
    client = pulsar.Client(server.url)                  # the real pulsar-client package
    ...
    server.stats_internal("orders"); server.snapshot()  # read the lab while it serves (the model is locked)
    server.stop()

Modules: `codec` (proto2 wire format), `commands` (the protocol's commands), `hot_commands` (SEND and ACK read
and SEND_RECEIPT written without dataclasses), `frames` (framing, checksums), `entries` (entries as bytes),
`bridge` (the broker consumer's connection, error codes), `connection` (`ServerCnx`: handshake, dispatch,
keepalive, writing) with its handlers `lookup_commands`, `producer_commands` and `consumer_commands`, and
`schema_wire` (schemas on the wire), `topic_list` (pattern consumers' topic lists), `realtime` (the clock on wall
time), `admin_http` (the admin REST listener and HTTP lookup, ``server.admin_url``) with its resources
`admin_namespaces`, `admin_topics` and what they share, `admin_requests`, `server` (the listener, background
thread, foreground loop). Live views: `pulsarlab_widgets.live`.
"""

from pulsarlab.serve.server import (
    DEFAULT_PORT,
    ClientInfo,
    ClosedConnection,
    LabServer,
    ServerThread,
    serve_forever,
    start,
)

__all__ = ["DEFAULT_PORT", "ClientInfo", "ClosedConnection", "LabServer", "ServerThread", "serve_forever", "start"]
