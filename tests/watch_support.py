"""A loopback HTTP server that answers like a Pulsar broker's admin REST API, from files or canned answers.

`FakeAdmin` serves ``GET`` paths from a dict the test sets before each poll (status, body); a path can be made to
hang until the test releases it (a broker that never answers) and a ``token`` makes every path answer 401 without
``Authorization: Bearer <token>``. Answers to anything but GET are 405. Every request is logged (method, path,
headers) for the tests to check. Binds 127.0.0.1 port 0; `fake_admin` stops it whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

HANG = object()  # a path answered with this never answers (until the server stops)
SEQUENCES = Path(__file__).resolve().parent / "watch_json"


class FakeAdmin:
    def __init__(self, token: str | None = None) -> None:
        self.routes: dict[str, tuple[int, Any]] = {}
        self.token = token
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.on_get: Callable[[str], None] | None = None  # called before answering (e.g. to move a fake clock)
        self.release = threading.Event()
        self.hanging = threading.Event()  # set once a request hangs
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _refuse(self) -> None:
                owner.requests.append((self.command, self.path, dict(self.headers)))
                self._send(405, {"reason": "Method Not Allowed"})

            do_POST = do_PUT = do_DELETE = _refuse

            def do_GET(self) -> None:
                owner.requests.append(("GET", self.path, dict(self.headers)))
                if owner.on_get is not None:
                    owner.on_get(self.path)
                if owner.token is not None and self.headers.get("Authorization") != f"Bearer {owner.token}":
                    self._send(401, {"reason": "Authentication required"})
                    return
                status, body = owner.routes.get(self.path, (404, {"reason": "Topic not found"}))
                if body is HANG:
                    owner.hanging.set()
                    owner.release.wait(30)
                    return
                self._send(status, body)

            def _send(self, status: int, body: Any) -> None:
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="fake-admin", daemon=True)
        self._thread.start()

    def topic(self, name: str, stats: Any, internal: Any, partitions: int = 0) -> None:
        """Answer ``stats``/``internalStats``/``partitions`` of ``public/default/name``."""
        base = f"/admin/v2/persistent/public/default/{name}"
        self.routes[base + "/partitions"] = (200, {"partitions": partitions})
        self.routes[base + "/stats"] = (200, stats)
        self.routes[base + "/internalStats"] = (200, internal)

    def sequence_poll(self, folder: str, topic: str, poll: int) -> None:
        """Serve poll ``poll`` of tests/watch_json/``folder`` as topic ``topic`` (the files' bytes, as printed)."""
        d = SEQUENCES / folder
        stats = (d / f"poll-{poll}.stats.json").read_bytes()
        internal = (d / f"poll-{poll}.stats-internal.json").read_bytes()
        self.topic(topic, stats, internal)

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(10)


@contextlib.contextmanager
def fake_admin(token: str | None = None) -> Iterator[FakeAdmin]:
    server = FakeAdmin(token)
    try:
        yield server
    finally:
        server.stop()


class FakeClock:
    """A monotonic clock the test moves (the watcher's ``clock=``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, s: float) -> None:
        self.now += s


__all__ = ["HANG", "SEQUENCES", "FakeAdmin", "FakeClock", "fake_admin"]
