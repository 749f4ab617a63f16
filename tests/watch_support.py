"""A loopback HTTP server that answers like a Pulsar broker's admin REST API, from files or canned answers.

`FakeAdmin` serves ``GET`` paths from a dict the test sets before each poll (status, body); a path can be made to
hang until the test releases it (a broker that never answers) and a ``token`` makes every path answer 401 without
``Authorization: Bearer <token>``. Answers to anything but GET are 405. Every request is logged (method, path,
headers) for the tests to check. Binds 127.0.0.1 port 0; `fake_admin` stops it whatever happens. Given an
``ssl.SSLContext`` it serves ``https://127.0.0.1:PORT`` (the handshake runs on the request's thread, and one the
client breaks off is counted in ``handshake_failures``); `Pki` makes a throwaway CA and a certificate it signed.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

HANG = object()  # a path answered with this never answers (until the server stops)
SEQUENCES = Path(__file__).resolve().parent / "watch_json"


class FakeAdmin:
    def __init__(self, token: str | None = None, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, tuple[int, Any]] = {}
        self.token = token
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.handshake_failures: list[str] = []  # TLS handshakes the client broke off (it refused the certificate)
        self.handshake_failed = threading.Event()
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

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def finish_request(self, request: Any, client_address: Any) -> None:
                if tls is not None:
                    request.settimeout(30)  # a client that never finishes its handshake frees the thread
                    try:
                        request = tls.wrap_socket(request, server_side=True)
                    except (ssl.SSLError, OSError) as e:
                        owner.handshake_failures.append(str(e))
                        owner.handshake_failed.set()
                        return
                super().finish_request(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
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
def fake_admin(token: str | None = None, tls: ssl.SSLContext | None = None) -> Iterator[FakeAdmin]:
    server = FakeAdmin(token, tls)
    try:
        yield server
    finally:
        server.stop()


class Pki:
    """A throwaway CA (``ca_file``, PEM) and a server certificate it signed (`server_context` serves it)."""

    def __init__(self, folder: Path, names: tuple[str, ...] = ("127.0.0.1", "localhost")) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

        now = datetime.datetime.now(datetime.timezone.utc)
        valid = (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1))

        def cert(subject: str, key: Any, issuer: Any, issuer_key: Any, ca: bool) -> Any:
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
            b = (
                x509.CertificateBuilder()
                .subject_name(name)
                .issuer_name(issuer or name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(valid[0])
                .not_valid_after(valid[1])
                .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            )
            if ca:
                b = b.add_extension(
                    x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
                )
            else:
                sans = [_san(x509, n) for n in names]
                b = b.add_extension(x509.SubjectAlternativeName(sans), critical=False)
                b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                b = b.add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False
                )
            return b.sign(issuer_key, hashes.SHA256())

        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca = cert("pulsarlab test CA", ca_key, None, ca_key, True)
        key = ec.generate_private_key(ec.SECP256R1())
        server = cert(names[0], key, ca.subject, ca_key, False)
        pem = serialization.Encoding.PEM
        self.ca_file = folder / "ca.pem"
        self.ca_file.write_bytes(ca.public_bytes(pem))
        self.cert_file = folder / "broker.pem"
        self.cert_file.write_bytes(server.public_bytes(pem) + ca.public_bytes(pem))
        self.key_file = folder / "broker.key.pem"
        self.key_file.write_bytes(
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def _san(x509: Any, name: str) -> Any:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


class FakeClock:
    """A monotonic clock the test moves (the watcher's ``clock=``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, s: float) -> None:
        self.now += s


__all__ = ["HANG", "SEQUENCES", "FakeAdmin", "FakeClock", "Pki", "fake_admin"]
