"""The lab's broker on a TCP port: real Pulsar clients in front of the same broker model, on wall time.

Models the binary-protocol listener of `PulsarService` / `BrokerService` (``brokerServicePort``, 6650 by
default): an asyncio server whose connections (`ServerConnection`, the lab's `ServerCnx`) call the lab's own
`BrokerService` - there is no second broker, so in-process clients, views, the player and ``lab.admin`` see the
same topics. While it serves, a `RealTimeDriver` keeps the lab's virtual clock on the wall clock: it catches up
before each batch of frames and wakes the loop for the next timer due. ``lock`` guards the model: the network
loop holds it while it handles frames or fires timers; any other thread must hold it to read or change the lab
(`ServerThread.call`, `ServerThread.snapshot`).

Beside it, in the same loop, the admin REST API and HTTP lookup (`admin_http.AdminHttp`, ``webServicePort``)
when ``admin_port`` is given (0 picks a free port; ``admin_url``). With ``admin_in_background`` (what
``pulsarlab serve`` uses) the admin port is bound at once, but aiohttp and the admin resources load only when its
first connection arrives, on a worker thread while the binary port serves on: the first producer never waits for
them, and a broker whose admin port nobody uses never loads them; that first request waits in the port's backlog.

It listens on loopback unless ``allow_remote`` is given (the lab has no authentication); the same rule holds
for the admin port. `start` runs it on a background thread for a notebook and returns a `ServerThread` handle
(``url``, ``admin_url``, ``stop()``); `serve_forever` runs it in the foreground (``pulsarlab serve``).

Simplifies: one broker, no TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import ipaddress
import logging
import os
import signal
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from pulsarlab.serve.connection import ServerConnection
from pulsarlab.serve.entries import EncodedEntries
from pulsarlab.serve.frames import FRAME_PADDING
from pulsarlab.serve.realtime import RealTimeDriver

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.lab import Lab
    from pulsarlab.snapshot.lab import LabSnapshot
    from pulsarlab.snapshot.recorder import Recorder

log = logging.getLogger("pulsarlab.serve")

DEFAULT_PORT = 6650
DEFAULT_ADMIN_PORT = 8080
POLL_S = 0.1  # how often the clock catches up when no frame or timer wakes the loop (other threads' changes)
T = TypeVar("T")


def check_record_path(path: str | os.PathLike[str]) -> Path:
    """The file ``--record`` names, refused before serving when it could not be written at the end."""
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"--record {target}: is a directory; name a file, e.g. {target / 'run.plt.jsonl.gz'}")
    if not target.parent.is_dir():
        raise ValueError(f"--record {target}: folder {target.parent} does not exist")
    if not os.access(target.parent, os.W_OK):
        raise PermissionError(f"--record {target}: folder {target.parent} is not writable")
    return target


def check_bind_address(host: str, allow_remote: bool) -> None:
    """Refuse an address that is not loopback unless ``allow_remote`` (the lab has no authentication)."""
    if allow_remote:
        return
    if host in ("", "0.0.0.0", "::"):
        bad = [host or "every interface"]
    else:
        try:
            infos = socket.getaddrinfo(host, None)
        except socket.gaierror as e:
            raise ValueError(f"cannot resolve {host!r}: {e}") from None
        bad = sorted(
            {info[4][0] for info in infos if not ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback}
        )
    if bad:
        raise PermissionError(
            f"refusing to listen on {host!r} ({', '.join(bad)}): not a loopback address, and the lab broker has "
            "no authentication; pass allow_remote=True (pulsarlab serve --allow-remote) if you mean it"
        )


@dataclass(frozen=True)
class ClosedConnection:
    """A connection that ended: who, which client, why, and how much it sent."""

    peer: str
    client_version: str | None
    reason: str
    opened_at: float
    closed_at: float
    frames_in: int


@dataclass(frozen=True)
class ClientInfo:
    """One open connection, for a notebook: its producers ``(topic, name)`` and consumers
    ``(topic, subscription, name)``."""

    peer: str
    client_version: str | None
    producers: tuple[tuple[str, str], ...]
    consumers: tuple[tuple[str, str, str], ...]


def parse_advertised_listeners(listeners: dict[str, str] | str | None) -> dict[str, str]:
    """``advertisedListeners`` (``name:pulsar://host:port,...`` or a dict): the broker URL a lookup with that
    ``listener_name`` gets. Only ``pulsar://`` URLs (the lab has no TLS)."""
    if not listeners:
        return {}
    if isinstance(listeners, str):
        pairs = []
        for item in listeners.split(","):
            name, sep, url = item.strip().partition(":")
            if not sep or not name:
                raise ValueError(f"an advertised listener reads name:pulsar://host:port, got {item!r}")
            pairs.append((name, url))
        listeners = dict(pairs)
    for name, url in listeners.items():
        if not isinstance(url, str) or not url.startswith("pulsar://"):
            raise ValueError(f"advertised listener {name!r}: a pulsar:// URL, got {url!r}")
    return dict(listeners)


class LabServer:
    """The lab's broker listening for real Pulsar clients (run it with `start` or `serve_forever`)."""

    def __init__(
        self,
        lab: "Lab",
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        allow_remote: bool = False,
        advertised_host: str | None = None,
        keepalive_s: float = 30.0,
        max_write_buffer: int = 64 * 1024 * 1024,
        record: str | os.PathLike[str] | None = None,
        admin_port: int | None = None,
        advertised_listeners: dict[str, str] | None = None,
        admin_in_background: bool = False,
    ) -> None:
        check_bind_address(host, allow_remote)
        self.advertised_listeners = parse_advertised_listeners(advertised_listeners)
        self.record_path = None if record is None else check_record_path(record)
        self.admin_port = admin_port
        self.admin: Any = None
        self.admin_url: str | None = None
        self.admin_in_background = admin_in_background
        self._admin_task: asyncio.Task | None = None
        self._admin_sock: socket.socket | None = None  # bound, served from its first connection on
        self.lab = lab
        self.host = host
        self.port = port
        self.advertised_host = advertised_host or ("127.0.0.1" if host in ("", "0.0.0.0", "::") else host)
        self.keepalive_s = keepalive_s
        self.max_write_buffer = max_write_buffer
        self.lock = threading.RLock()
        self.max_message_size = int(lab.config["maxMessageSize"])
        self.max_frame_size = self.max_message_size + FRAME_PADDING
        self.server_version = f"Pulsar Server {lab.version} (pulsarlab)"
        self.encoded = EncodedEntries()
        self.clock = RealTimeDriver(lab.scheduler)
        self.connections: set[ServerConnection] = set()
        self.closed_connections: deque[ClosedConnection] = deque(maxlen=200)
        self.url: str | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._server: asyncio.base_events.Server | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due = 0.0
        self._poll: asyncio.TimerHandle | None = None
        # every event of the served run becomes a frame, written to ``record_path`` when the server stops
        self.recorder: Recorder | None = None
        if self.record_path is not None:
            from pulsarlab.snapshot.recorder import Recorder  # the view-model loads only when recording

            self.recorder = Recorder(lab)
        self.record_error: BaseException | None = None

    # --- lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind and listen; the clock follows the wall clock from now on (virtual time continues from
        ``lab.now()``)."""
        loop = asyncio.get_running_loop()
        self.loop = loop
        self._loop_thread = threading.get_ident()
        with self.lock:
            self.clock = RealTimeDriver(self.lab.scheduler)
        self._server = await loop.create_server(lambda: ServerConnection(self), self.host, self.port)
        bound = self._server.sockets[0].getsockname()
        self.port = bound[1]
        host = self.advertised_host
        self.url = f"pulsar://[{host}]:{self.port}" if ":" in host else f"pulsar://{host}:{self.port}"
        if self.admin_port is not None:
            try:
                if self.admin_in_background:
                    self._admin_on_first_connection(self._bind_admin())
                else:
                    await self._start_admin()
            except BaseException:
                self._server.close()
                await self._server.wait_closed()
                self._server = None
                raise
        self._poll = loop.call_later(POLL_S, self._on_poll)
        log.info("pulsarlab broker (profile %s) listening on %s", self.lab.version, self.url)

    async def _start_admin(self, sock: socket.socket | None = None) -> None:
        from pulsarlab.serve.admin_http import AdminHttp  # aiohttp (lab extra): only when the port is on

        admin = AdminHttp(self)
        await admin.start(self.host, self.admin_port or 0, sock)
        self.admin, self.admin_url, self.admin_port = admin, admin.url, admin.port
        log.info("admin REST API on %s", self.admin_url)

    def _bind_admin(self) -> socket.socket:
        """The admin port, bound and listening now (what comes in waits in its backlog until aiohttp serves it)."""
        family, _type, _proto, _name, address = socket.getaddrinfo(
            self.host, self.admin_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.create_server(address[:2], family=family)
        self.admin_port = sock.getsockname()[1]
        host = self.advertised_host
        self.admin_url = f"http://[{host}]:{self.admin_port}" if ":" in host else f"http://{host}:{self.admin_port}"
        return sock

    def _admin_on_first_connection(self, sock: socket.socket) -> None:
        """Start the admin REST API on ``sock`` when its first connection arrives (`pulsarlab serve`: a broker whose
        admin port nobody uses never loads aiohttp, and its first producer never waits for it)."""
        loop = self.loop
        assert loop is not None
        sock.setblocking(False)
        self._admin_sock = sock

        def wanted() -> None:
            loop.remove_reader(sock.fileno())
            self._admin_sock = None
            self._admin_task = loop.create_task(self._start_admin_later(sock))

        loop.add_reader(sock.fileno(), wanted)

    async def _start_admin_later(self, sock: socket.socket) -> None:
        """Load aiohttp and the admin resources on a worker thread while the binary port serves on, then serve the
        admin REST API on ``sock`` (the connection that asked waits in its backlog meanwhile)."""
        loop = asyncio.get_running_loop()
        try:
            for module in ("pulsarlab.serve.admin_http", "pulsarlab.admin"):
                await loop.run_in_executor(None, importlib.import_module, module)
            await self._start_admin(sock)
        except asyncio.CancelledError:
            sock.close()
            raise
        except Exception as e:
            sock.close()
            self.admin_url = None
            log.error("the admin REST API did not start: %s: %s", type(e).__name__, e)

    async def stop(self) -> None:
        """Stop listening, close every connection (their consumers and producers close in the model)."""
        if self._admin_sock is not None:  # the admin port was never used
            if self.loop is not None:
                self.loop.remove_reader(self._admin_sock.fileno())
            self._admin_sock.close()
            self._admin_sock = None
        if self._admin_task is not None and not self._admin_task.done():
            self._admin_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._admin_task
        if self.admin is not None:
            await self.admin.stop()
            self.admin = None
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close("the lab broker is stopping")
        for _ in range(100):
            if not self.connections:
                break
            await asyncio.sleep(0.01)
        for conn in list(self.connections):  # transports that did not finish closing
            if conn.transport is not None:
                conn.transport.abort()
        await asyncio.sleep(0)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None
        for handle in (self._timer, self._poll):
            if handle is not None:
                handle.cancel()
        self._timer = self._poll = None
        self.save_recording()

    def save_recording(self) -> Path | None:
        """Write the recorded timeline to ``record_path`` (the server calls it on stop); None when not recording."""
        if self.recorder is None or self.record_path is None:
            return None
        with self.lock:
            self.recorder.close()
            inputs = {
                "source": "pulsarlab serve",
                "url": self.url,
                "clients": sorted({c.client_version or "?" for c in self.closed_connections}),
            }
            try:
                path = self.recorder.save(self.record_path, inputs=inputs)
            except Exception as e:
                self.record_error = e
                log.error("could not write the recording to %s: %s", self.record_path, e)
                return None
        log.info("recorded %d frames to %s", len(self.recorder), path)
        return path

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_thread

    # --- the clock ------------------------------------------------------------------------------
    def rearm(self) -> None:
        """Wake the loop when the next model timer is due (call after changing the model, lock held)."""
        loop = self.loop
        if loop is None:
            return
        if self.in_loop_thread():
            self._rearm()
        else:
            loop.call_soon_threadsafe(self._rearm_locked)

    def _rearm_locked(self) -> None:
        with self.lock:
            self._rearm()

    def _rearm(self) -> None:
        wake = self.clock.next_wake()
        loop = self.loop
        if wake is None or loop is None:
            return
        due = loop.time() + wake
        if self._timer is not None and self._timer_due <= due + 0.0005:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_due = due
        self._timer = loop.call_at(due, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        with self.lock:
            self.clock.catch_up()
            self._rearm()

    def _on_poll(self) -> None:
        with self.lock:
            self.clock.catch_up()
            self._rearm()
        if self.loop is not None:
            self._poll = self.loop.call_later(POLL_S, self._on_poll)

    # --- connections ----------------------------------------------------------------------------
    def connection_opened(self, conn: ServerConnection) -> None:
        self.connections.add(conn)
        log.info("connection from %s", conn.peer)

    def connection_closed(self, conn: ServerConnection) -> None:
        self.connections.discard(conn)
        self.closed_connections.append(
            ClosedConnection(
                conn.peer,
                conn.client_version,
                conn.close_reason or "closed",
                conn.opened_at,
                time.time(),
                conn.frames_in,
            )
        )

    def clients(self) -> list[ClientInfo]:
        """The open connections with their producers and consumers (take ``lock`` from another thread)."""
        out = []
        for conn in list(self.connections):
            producers = tuple((p.topic, p.name) for p in conn.producers.values())
            consumers = tuple(
                (c.topic, c.subscription, c.name) for c in conn.consumers.values() if c.broker_consumer is not None
            )
            out.append(ClientInfo(conn.peer, conn.client_version, producers, consumers))
        return out

    def drop_connections(self) -> int:
        """Close every client connection now (as a broker restart or a network cut would); clients reconnect.
        Call from the loop thread (`ServerThread.drop_connections` does)."""
        conns = list(self.connections)
        for conn in conns:
            conn.close("dropped by the lab (drop_connections)")
        return len(conns)


class ServerThread:
    """A `LabServer` running on a background thread with its own event loop; what `start` returns.

    ``url`` is what a client connects to; ``stop()`` closes it (also on leaving a ``with`` block). Any read
    or change of the lab from another thread goes through ``call`` (or ``with handle.lock:``).
    """

    def __init__(self, server: LabServer, thread: threading.Thread, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.lab = server.lab
        self.lock = server.lock
        self._thread = thread
        self._loop = loop
        self._stopped = False

    @property
    def url(self) -> str:
        return self.server.url  # type: ignore[return-value]

    @property
    def admin_url(self) -> str | None:
        """The admin REST API's base URL (``http://127.0.0.1:PORT``), None when it is off."""
        return self.server.admin_url

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._stopped

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` with the model locked (the network loop waits meanwhile)."""
        with self.lock:
            try:
                return fn(*args, **kwargs)
            finally:
                self.server.rearm()

    def stats(self, topic: str) -> dict[str, Any]:
        """``pulsar-admin topics stats`` of the served lab."""
        return self.call(self.lab.admin.topics.stats, topic)

    def stats_internal(self, topic: str) -> dict[str, Any]:
        """``pulsar-admin topics stats-internal`` of the served lab."""
        return self.call(self.lab.admin.topics.stats_internal, topic)

    def snapshot(self, topics: Any = None) -> "LabSnapshot":
        """A `LabSnapshot` of the served lab, taken with the model locked."""
        from pulsarlab.snapshot.lab import snapshot

        return self.call(snapshot, self.lab, topics)

    def clients(self) -> list[ClientInfo]:
        return self.call(self.server.clients)

    @property
    def closed_connections(self) -> list[ClosedConnection]:
        return list(self.server.closed_connections)

    def drop_connections(self, timeout: float = 10.0) -> int:
        """Close every client connection (clients reconnect), as a network cut would; returns how many."""
        future = asyncio.run_coroutine_threadsafe(self._drop(), self._loop)
        return future.result(timeout)

    async def _drop(self) -> int:
        return self.server.drop_connections()

    def stop(self, timeout: float = 10.0) -> None:
        """Close every connection and the listener, and end the thread."""
        if self._stopped:
            return
        self._stopped = True
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        if self.server.record_error is not None:
            raise self.server.record_error

    def __enter__(self) -> "ServerThread":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<pulsarlab server {self.server.url} {state}, {len(self.server.connections)} connection(s)>"


def start(
    lab: "Lab",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    admin_port: int | None = 0,
    timeout: float = 10.0,
    **options: Any,
) -> ServerThread:
    """Serve ``lab`` on a background thread: ``server = start(lab, port=0)``; ``server.url``; ``server.stop()``.

    ``port=0`` picks a free port; the admin REST API listens on ``admin_port`` (by default a free one,
    ``server.admin_url``; None turns it off). Options: ``advertised_host``, ``keepalive_s``, ``max_write_buffer``,
    ``advertised_listeners`` (``{"internal": "pulsar://127.0.0.1:6650"}``: what a client's ``listener_name`` looks up).
    ``record`` (a file: every event becomes a frame, saved as a timeline file on ``stop()``, see
    `pulsarlab.snapshot.timeline_file`; ``server.server.recorder`` is the live recorder).
    """
    server = LabServer(lab, host, port, allow_remote=allow_remote, admin_port=admin_port, **options)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(server.start())
        except BaseException as e:  # reported to the caller of start()
            failure.append(e)
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(server.stop())
            loop.close()

    thread = threading.Thread(target=run, name=f"pulsarlab-serve-{port}", daemon=True)
    thread.start()
    if not ready.wait(timeout):
        raise TimeoutError(f"the lab broker did not start within {timeout} s")
    if failure:
        thread.join(timeout)
        raise failure[0]
    return ServerThread(server, thread, loop)


def serve_forever(
    lab: "Lab",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    allow_remote: bool = False,
    on_ready: Callable[[LabServer], None] | None = None,
    **options: Any,
) -> None:
    """Serve ``lab`` in this thread until SIGINT (Ctrl-C) or SIGTERM."""
    server = LabServer(lab, host, port, allow_remote=allow_remote, **options)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop.set)
        await server.start()
        if on_ready is not None:
            on_ready(server)
        try:
            await stop.wait()
        finally:
            await server.stop()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    if server.record_error is not None:
        raise server.record_error


__all__ = [
    "ClientInfo",
    "ClosedConnection",
    "DEFAULT_ADMIN_PORT",
    "DEFAULT_PORT",
    "LabServer",
    "ServerThread",
    "check_bind_address",
    "serve_forever",
    "start",
]
