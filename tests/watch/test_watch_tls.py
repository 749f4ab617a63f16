"""`pulsarlab watch` over real TLS on loopback: pulsar-admin's ``--tls-trust-cert-path``, ``--tls-allow-insecure``
and token, against a `FakeAdmin` serving ``https://127.0.0.1:PORT`` with a certificate signed by a CA made for
the test (`Pki`, tests/watch_support.py).

Checks what a user relies on: with the CA the watch reads and sends ``Authorization: Bearer``; without it the
broker's certificate is refused with a message naming the URL and both fixes, before any request (so the token
never reaches a server that was not verified); the token shows in no recording, log line or error.
"""

from __future__ import annotations

import gzip
import logging
import os
import subprocess
import sys

import pytest
from watch_support import FakeClock, Pki, fake_admin

from pulsarlab.cli import main
from pulsarlab.snapshot.timeline_file import load_timeline
from pulsarlab.watch import AdminClient, AdminError, TlsOptions, Watcher
from pulsarlab.watch.command import TOKEN_ENV

pytestmark = pytest.mark.serve

TOKEN = "eyJ-tls-secret-token-never-written"
TOPIC = "fulfilment-events"
HANG_GUARD_S = 300  # a subprocess that has not ended by then is a hung watch, not a slow machine


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def _serve_draining(server, poll: int = 0) -> None:
    server.routes["/admin/v2/brokers/version"] = (200, b"4.0.0")
    server.sequence_poll("draining-4x", TOPIC, poll)


def _watch(server, **kw) -> Watcher:
    return Watcher(AdminClient(server.url, **kw), TOPIC, 2.0, clock=FakeClock())


def test_with_the_ca_file_the_watch_polls_over_tls_and_sends_the_token_nowhere_else(pki, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with fake_admin(token=TOKEN, tls=pki.server_context()) as server:
        assert server.url.startswith("https://127.0.0.1:")
        w = _watch(server, token=TOKEN, tls=TlsOptions(ca_file=str(pki.ca_file)))
        for poll in range(2):
            _serve_draining(server, poll)
            state = w.poll()
            assert state.status.ok, state.status.message
        assert server.requests and server.handshake_failures == []
        assert all(h.get("Authorization") == f"Bearer {TOKEN}" for _m, _p, h in server.requests)
        # the token is asked for: a client without it is refused by the same server
        with pytest.raises(AdminError) as e:
            _watch(server, tls=TlsOptions(ca_file=str(pki.ca_file))).poll()
    assert e.value.status == 401
    assert w.good_polls == 2 and {t.finding.rule for t in w.state.findings} >= {"draining-hashes", "ack-holes"}
    out = w.save(tmp_path / "tls.plt.jsonl.gz")
    raw = gzip.decompress(out.read_bytes()).decode()
    assert TOKEN not in raw and "Bearer" not in raw
    tl = load_timeline(out)
    assert tl.inputs["watch"]["admin_url"] == server.url and tl.inputs["watch"]["authenticated"] is True
    assert TOKEN not in caplog.text and TOKEN not in repr(w) and TOKEN not in repr(w.client)


def test_without_the_ca_file_the_certificate_is_refused_before_any_request_and_the_watch_ends(pki):
    with fake_admin(token=TOKEN, tls=pki.server_context()) as server:
        _serve_draining(server)
        w = _watch(server, token=TOKEN)  # the system's CAs only: they did not sign the test CA
        with pytest.raises(AdminError) as e:
            w.poll()
        assert server.handshake_failed.wait(30)  # the server saw the client break the handshake off
        assert server.requests == []  # no request, so no token, went to the unverified server
    err = e.value
    assert err.status == 0 and err.permanent and not err.retryable and w.frames == []
    text = str(err)
    assert err.url.startswith(server.url + "/admin/v2/") and text.startswith(err.url)
    assert "TLS certificate could not be verified" in text and "(self-signed certificate in certificate chain)" in text
    assert "--tls-trust-cert-path CA.pem" in text and "--tls-allow-insecure" in text
    assert TOKEN not in text


def test_a_certificate_for_another_host_name_is_refused_and_says_so(tmp_path):
    other = Pki(tmp_path, names=("broker.example.internal",))
    with fake_admin(tls=other.server_context()) as server:
        with pytest.raises(AdminError) as e:
            _watch(server, tls=TlsOptions(ca_file=str(other.ca_file))).poll()
        assert server.requests == []
    assert "could not be verified" in str(e.value) and "127.0.0.1" in str(e.value)
    assert "host name the certificate lists" in str(e.value) and "--tls-allow-insecure" in str(e.value)


def test_skip_verify_polls_a_server_whose_ca_it_does_not_know(pki):
    with fake_admin(token=TOKEN, tls=pki.server_context()) as server:
        _serve_draining(server)
        w = _watch(server, token=TOKEN, tls=TlsOptions(skip_verify=True))
        assert w.poll().status.ok
        assert server.requests and all(h.get("Authorization") == f"Bearer {TOKEN}" for _m, _p, h in server.requests)


def test_a_ca_file_that_is_missing_or_not_pem_is_a_clear_option_error(tmp_path, capsys):
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    with pytest.raises(ValueError, match=r"--tls-trust-cert-path .*ca\.pem: not a PEM file of CA certificates"):
        AdminClient("https://127.0.0.1:1", tls=TlsOptions(ca_file=str(not_pem)))
    missing = tmp_path / "nope.pem"
    args = ["watch", "--admin-url", "https://127.0.0.1:1", TOPIC, "--polls", "1", "--ca-file", str(missing)]
    assert main(args) == 2
    assert f"--tls-trust-cert-path {missing}: No such file or directory" in capsys.readouterr().err


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    """``pulsarlab watch`` in its own process, as a user runs it (output captured, a hang fails the test)."""
    return subprocess.run(
        [sys.executable, "-m", "pulsarlab", "watch", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        env={**os.environ, TOKEN_ENV: TOKEN},
    )


def test_the_cli_over_tls_with_the_ca_polls_and_without_it_names_the_fix(pki, tmp_path):
    out = tmp_path / "tls.plt.jsonl.gz"
    with fake_admin(token=TOKEN, tls=pki.server_context()) as server:
        _serve_draining(server)
        base = ["--admin-url", server.url, TOPIC, "--interval", "0.5", "--plain"]
        good = _cli(*base, "--polls", "2", "--tls-trust-cert-path", str(pki.ca_file), "--out", str(out), cwd=tmp_path)
        assert good.returncode == 0, good.stderr
        assert "fulfilment-a: permits 70, unacked 30" in good.stdout and "recorded 2 poll(s)" in good.stderr
        assert server.requests and all(h.get("Authorization") == f"Bearer {TOKEN}" for _m, _p, h in server.requests)
        seen = len(server.requests)

        # no --polls: an unverifiable certificate ends the watch by itself instead of retrying for ever
        bad = _cli(*base, cwd=tmp_path)
        assert bad.returncode == 1 and len(server.requests) == seen and server.handshake_failed.wait(30)

        insecure = _cli(*base, "--polls", "1", "--tls-allow-insecure", cwd=tmp_path)
        assert insecure.returncode == 0, insecure.stderr
    assert f"pulsarlab watch: {server.url}/admin/v2/" in bad.stderr
    assert "TLS certificate could not be verified" in bad.stderr
    assert "--tls-trust-cert-path CA.pem" in bad.stderr and "--tls-allow-insecure" in bad.stderr
    assert "Traceback" not in bad.stderr
    for run in (good, bad, insecure):
        assert TOKEN not in run.stdout + run.stderr
    assert TOKEN not in gzip.decompress(out.read_bytes()).decode() and len(load_timeline(out)) == 2
