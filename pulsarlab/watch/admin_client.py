"""A read-only client of a Pulsar broker's admin REST API: GET only, with pulsar-admin's token and TLS options.

Models the calls `PulsarAdmin.topics()` makes for ``pulsar-admin topics stats``, ``stats-internal``,
``partitioned-stats``, ``list`` and ``list-partitioned-topics`` (`PersistentTopics` on the broker, under
``/admin/v2/persistent/...``), and ``pulsar-admin brokers version`` (``/admin/v2/brokers/version``).
Authentication is pulsar-admin's ``AuthenticationToken`` (an ``Authorization: Bearer`` header); TLS takes a CA
file (``--tls-trust-cert-path``) or skips verification (``--tls-allow-insecure``); a certificate that cannot be
verified is an `AdminError` that says why and names both options. Simplifies: no client certificate
(pulsar-admin's ``--tls-cert-file``/``--tls-key-file``).

Library: the standard library's ``urllib.request`` and ``ssl``. A watch makes one GET at a time from one thread
and needs nothing an HTTP library adds (no pooling, no async, no retries of its own: the watcher decides when to
try again), so it adds no dependency to the model's install.

Safe by construction: the only method is GET; the token lives in this object and in the request header, never in
an error, a ``repr``, a log line or a recording (`AdminError` names the URL, which carries no credentials: a URL
with ``user:password@`` is refused).
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from pulsarlab.watch.options import DEFAULT_TIMEOUT_S

MAX_BODY = 64 * 1024 * 1024  # bytes; a larger answer is refused rather than held in memory
ADMIN = "/admin/v2"


class AdminError(Exception):
    """A GET that did not give JSON: ``status`` is the HTTP status (0: no answer: refused, timed out, TLS).

    ``permanent``: no answer, and trying again will not change that (a certificate this client cannot verify)."""

    def __init__(self, url: str, status: int, reason: str, *, permanent: bool = False) -> None:
        self.url = url
        self.status = status
        self.reason = reason
        self.permanent = permanent
        what = f"HTTP {status}" if status else "no answer"
        super().__init__(f"{url}: {what}: {reason}")

    @property
    def retryable(self) -> bool:
        """Worth trying again later (a slow or failing broker), as opposed to a request that will never work."""
        return not self.permanent and (self.status == 0 or self.status == 429 or self.status >= 500)


_HINTS = {
    401: "the broker wants a token: pass --token-file FILE (or PULSARLAB_ADMIN_TOKEN)",
    403: "the token's role may not read this topic's stats (it needs the produce/consume or admin role)",
    404: "no such topic, namespace or endpoint on this broker (check the topic name and the admin URL)",
}


@dataclass(frozen=True)
class TlsOptions:
    """pulsar-admin's TLS flags: ``ca_file`` (``--tls-trust-cert-path``), ``skip_verify`` (``--tls-allow-insecure``)."""

    ca_file: str | None = None
    skip_verify: bool = False

    def context(self) -> ssl.SSLContext:
        """The client context; a CA file that cannot be read or holds no certificate is a `ValueError`."""
        try:
            ctx = ssl.create_default_context(cafile=self.ca_file)
        except ssl.SSLError as e:
            raise ValueError(
                f"--tls-trust-cert-path {self.ca_file}: not a PEM file of CA certificates ({e.reason or e})"
            ) from None
        except OSError as e:
            raise ValueError(f"--tls-trust-cert-path {self.ca_file}: {e.strerror or e}") from None
        if self.skip_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


class AdminClient:
    """GETs against one admin URL (``http://host:8080`` or ``https://host:8443``)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        tls: TlsOptions | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"--admin-url must be http://HOST:PORT or https://HOST:PORT, got {url!r}")
        if parsed.username or parsed.password:
            raise ValueError(
                "the admin URL must not carry credentials (they would be shown in messages and recordings); "
                "pass the token with --token-file or PULSARLAB_ADMIN_TOKEN"
            )
        if timeout_s <= 0:
            raise ValueError(f"the request timeout must be > 0 s, got {timeout_s}")
        self.url = url.rstrip("/")
        self.timeout_s = float(timeout_s)
        self._token = token.strip() if token else None
        tls = tls or TlsOptions()
        self.tls = tls
        handlers: list[Any] = []
        if parsed.scheme == "https":
            handlers.append(urllib.request.HTTPSHandler(context=tls.context()))
        self._opener = urllib.request.build_opener(*handlers)
        self.requests = 0  # GETs made (answered or not)

    @property
    def authenticated(self) -> bool:
        return self._token is not None

    def __repr__(self) -> str:
        auth = ", token set" if self._token else ""
        return f"<AdminClient {self.url}{auth}>"

    # --- one GET ------------------------------------------------------------------------------------
    def get(self, path: str) -> Any:
        """The JSON the broker answers to ``GET {url}{path}``; `AdminError` naming the URL and status otherwise."""
        url, status, body = self._fetch(path)
        if status == 204 or not body:
            return None
        try:
            return json.loads(body)
        except ValueError:
            raise AdminError(url, status, "the answer is not JSON (is this a Pulsar admin URL?)") from None

    def _fetch(self, path: str) -> tuple[str, int, bytes]:
        url = self.url + path
        request = urllib.request.Request(url, method="GET", headers={"Accept": "application/json"})
        if self._token:
            request.add_unredirected_header("Authorization", f"Bearer {self._token}")
        self.requests += 1
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                body = response.read(MAX_BODY + 1)
                status = response.status
        except urllib.error.HTTPError as e:
            with e:  # an error answer holds its connection open until closed
                raise AdminError(url, e.code, _reason_of(e)) from None
        except urllib.error.URLError as e:
            raise _no_answer(url, e.reason, self.timeout_s) from None
        except (TimeoutError, OSError) as e:
            raise _no_answer(url, e, self.timeout_s) from None
        if len(body) > MAX_BODY:
            raise AdminError(url, status, f"the answer is larger than {MAX_BODY // (1024 * 1024)} MiB")
        return url, status, body

    # --- the calls a watch makes ----------------------------------------------------------------------
    def partitions(self, topic: "TopicName") -> int:
        """``GET .../partitions``: the partition count, 0 for a topic that is not partitioned."""
        meta = self.get(topic.path + "/partitions")
        return int(meta.get("partitions", 0)) if isinstance(meta, dict) else 0

    def stats(self, topic: "TopicName", partitioned: bool) -> Any:
        return self.get(topic.path + ("/partitioned-stats?perPartition=true" if partitioned else "/stats"))

    def internal_stats(self, topic: "TopicName") -> Any:
        return self.get(topic.path + "/internalStats")

    def topics(self, tenant: str, namespace: str) -> list[str]:
        """Every persistent topic of the namespace, partitions included (``pulsar-admin topics list``)."""
        return list(self.get(f"{ADMIN}/persistent/{_q(tenant)}/{_q(namespace)}") or [])

    def partitioned_topics(self, tenant: str, namespace: str) -> list[str]:
        return list(self.get(f"{ADMIN}/persistent/{_q(tenant)}/{_q(namespace)}/partitioned") or [])

    def broker_version(self) -> str | None:
        """``pulsar-admin brokers version`` (plain text or a JSON string; None when the broker does not answer)."""
        try:
            _url, _status, body = self._fetch(f"{ADMIN}/brokers/version")
        except AdminError as e:
            if e.status in (401, 403) or e.permanent:
                raise
            return None
        text = body.decode("utf-8", "replace").strip()
        if text.startswith('"'):
            try:
                text = json.loads(text)
            except ValueError:
                return None
        return text if text and len(text) < 64 and "<" not in text else None


@dataclass(frozen=True)
class TopicName:
    """A persistent topic's parts, as the admin paths spell them."""

    tenant: str
    namespace: str
    local: str

    @classmethod
    def parse(cls, name: str) -> "TopicName":
        """``orders``, ``public/default/orders`` or ``persistent://public/default/orders``."""
        rest = name
        if "://" in name:
            domain, rest = name.split("://", 1)
            if domain != "persistent":
                raise ValueError(f"only persistent topics have stats-internal to watch, got {name!r}")
        parts = rest.split("/")
        if len(parts) == 1:
            parts = ["public", "default", parts[0]]
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"not a topic name: {name!r} (orders, tenant/namespace/orders or persistent://...)")
        return cls(*parts)

    @property
    def full(self) -> str:
        return f"persistent://{self.tenant}/{self.namespace}/{self.local}"

    @property
    def path(self) -> str:
        return f"{ADMIN}/persistent/{_q(self.tenant)}/{_q(self.namespace)}/{_q(self.local)}"

    def partition(self, i: int) -> "TopicName":
        return TopicName(self.tenant, self.namespace, f"{self.local}-partition-{i}")


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _reason_of(e: urllib.error.HTTPError) -> str:
    """Pulsar's ``{"reason": ...}`` body when there is one, the status text otherwise, and what to check."""
    text = ""
    try:
        raw = e.read(4096)
        body = json.loads(raw) if raw else None
        if isinstance(body, dict) and isinstance(body.get("reason"), str):
            text = body["reason"]
    except (ValueError, OSError):
        pass
    text = text or (e.reason if isinstance(e.reason, str) else "") or "error"
    hint = _HINTS.get(e.code)
    if hint is None and e.code >= 500:
        hint = "the broker failed to answer; the watch tries again"
    return f"{text} ({hint})" if hint else text


def _no_answer(url: str, reason: Any, timeout_s: float) -> AdminError:
    """The `AdminError` of a GET that got no HTTP answer: what went wrong and what to do about it."""
    if isinstance(reason, ssl.SSLCertVerificationError):
        return AdminError(url, 0, _unverified(reason), permanent=True)
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return AdminError(url, 0, f"timed out after {timeout_s:g} s")
    if isinstance(reason, ssl.SSLError):
        return AdminError(
            url,
            0,
            f"TLS failed: {reason.reason or reason} (is this an https port? --tls-trust-cert-path CA.pem "
            "names the CA to trust, --tls-allow-insecure skips the check)",
        )
    if isinstance(reason, ConnectionRefusedError):
        return AdminError(url, 0, "connection refused (is the broker's web service on this port?)")
    return AdminError(url, 0, str(reason) or type(reason).__name__)


def _unverified(e: ssl.SSLCertVerificationError) -> str:
    """Why the broker's certificate was refused, and the pulsar-admin option that fixes it."""
    why = e.verify_message or e.reason or str(e)
    if "hostname mismatch" in why.lower() or "ip address mismatch" in why.lower():
        fix = "connect with a host name the certificate lists, or pass --tls-allow-insecure to skip the check"
    else:
        fix = "pass the CA that signed it with --tls-trust-cert-path CA.pem, or --tls-allow-insecure to skip the check"
    return f"the broker's TLS certificate could not be verified ({why}): {fix}"


__all__ = ["AdminClient", "AdminError", "TlsOptions", "TopicName"]
