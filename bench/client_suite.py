"""The real Python client's own tests against ``pulsarlab serve``: passed, failed, errors and left out, per run.

Run: ``.venv/bin/python bench/client_suite.py --suite PATH [--runs 3]``, PATH a checkout of
apache/pulsar-client-python at the tag of the installed pulsar-client (the checkout or its ``tests/`` folder;
``$PULSARLAB_CLIENT_SUITE`` when ``--suite`` is not given; with neither it prints that nothing was measured).
Each run starts a fresh ``python -m pulsarlab serve`` on free loopback ports (`tests/soak_clients.py`) with the
broker settings the suite's standalone is started with (those of ``test-conf/standalone-ssl.conf`` the lab models),
creates ``public/default-2`` and ``public/default-3`` through serve's admin REST API as the suite's set-up script
does, then runs ``pulsar_test.py``, ``reader_test.py``, ``asyncio_test.py`` and ``table_view_test.py`` with pytest
and the installed pulsar-client in a process of its own. The suite dials ``pulsar://localhost:6650`` and
``http://localhost:8080``: a pytest plugin in that process sets the suite's URL constants to the served URLs and
gives a ``pulsar.Client`` made with the literal default URL the served one; nothing in the checkout is edited.
The tests in LEFT_OUT never run, each for the reason printed. On a loaded machine asyncio_test's
``test_batch_end_to_end`` can fail: it expects five sends in one batch, which the client closes after its 10 ms
``batching_max_publish_delay_ms`` (the message ids then show two entries, batch indexes restarting at 0).
Not a test: it prints figures.
"""

from __future__ import annotations

# ruff: noqa: E402 - the imports below come after bench/ leaves sys.path
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/selectors.py would shadow the standard library's selectors module (subprocess imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT / "tests"))

import argparse
import json
import os
import subprocess
import tempfile
import threading
import time
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import IO, Any

from soak_clients import start_server, stop_server

SUITE_FILES = ("pulsar_test.py", "reader_test.py", "asyncio_test.py", "table_view_test.py")
SUITE_SERVICE_URL = "pulsar://localhost:6650"
SUITE_ADMIN_URL = "http://localhost:8080"
SUITE_BROKER_CONF = "test-conf/standalone-ssl.conf"  # what build-support/start-test-service-inside-container.sh uses
NAMESPACES = ("public/default-2", "public/default-3")
RUN_TIMEOUT_S = 1800.0
SUITE_ENV = "PULSARLAB_CLIENT_SUITE"

_TLS = "needs TLS (pulsar+ssl://localhost:6651 and the suite's certificates); serve speaks plain TCP only"
_AUTH = "needs authentication (the private/auth namespace behind token or basic auth); serve has no auth provider"
_REMOTE = "dials 192.0.2.1, outside loopback (house rule: never run such a test)"
# asyncio_test's test_token_auth_supplier_exception runs: its AuthenticationError is raised by the client's own
# token supplier before anything reaches the broker, so it needs no authentication from serve
LEFT_OUT = {
    "pulsar_test.py::PulsarTest::test_tls_auth": _TLS,
    "pulsar_test.py::PulsarTest::test_tls_auth2": _TLS,
    "pulsar_test.py::PulsarTest::test_tls_auth3": _TLS,
    "pulsar_test.py::PulsarTest::test_auth_junk_params": _TLS,
    "pulsar_test.py::PulsarTest::test_tls_encryption_with_other_auth": _TLS,
    "pulsar_test.py::PulsarTest::test_token_auth": _AUTH,
    "pulsar_test.py::PulsarTest::test_token_auth_supplier": _AUTH,
    "pulsar_test.py::PulsarTest::test_basic_auth": _AUTH,
    "pulsar_test.py::PulsarTest::test_basic_auth_method": _AUTH,
    "pulsar_test.py::PulsarTest::test_invalid_basic_auth": _AUTH,
    "pulsar_test.py::PulsarTest::test_connect_timeout": _REMOTE + " (pulsar://192.0.2.1:1234)",
    "pulsar_test.py::PulsarTest::test_auto_cluster_failover_client": _REMOTE + " (the failover's secondary)",
    "pulsar_test.py::PulsarTest::test_service_info_provider_client": _REMOTE + " (switches the client to it)",
    "pulsar_test.py::PulsarTest::test_auto_cluster_failover_argument_errors": "hands 192.0.2.1 (outside loopback) "
    "to AutoClusterFailover as a secondary; every Client it makes from that raises ValueError before connecting, "
    "but the house rule runs no test that gives a client an address outside loopback",
}


# --- in the pytest process: point the suite at the served URLs ----------------------------------------
class PointAtServe:
    """A pytest plugin: the suite's URL constants and ``pulsar.Client('pulsar://localhost:6650')`` go to serve."""

    def __init__(self, service_url: str, admin_url: str) -> None:
        self.urls = {SUITE_SERVICE_URL: service_url, SUITE_ADMIN_URL: admin_url}
        import pulsar

        init = pulsar.Client.__init__
        urls = self.urls

        def client_init(client: Any, service_url: Any, *args: Any, **kwargs: Any) -> None:
            init(
                client,
                urls.get(service_url, service_url) if isinstance(service_url, str) else service_url,
                *args,
                **kwargs,
            )

        pulsar.Client.__init__ = client_init  # type: ignore[method-assign]

    def pytest_collection_modifyitems(self, config: Any, items: list[Any]) -> None:
        left_out = [item for item in items if item.nodeid in LEFT_OUT]
        missing = set(LEFT_OUT) - {item.nodeid for item in left_out}
        if missing:
            import pytest

            raise pytest.UsageError(f"tests to leave out are not in this checkout: {sorted(missing)}")
        items[:] = [item for item in items if item.nodeid not in LEFT_OUT]
        config.hook.pytest_deselected(items=left_out)
        for owner in {item.module for item in items} | {item.cls for item in items if item.cls is not None}:
            for name, value in list(vars(owner).items()):
                if isinstance(value, str) and value in self.urls:
                    setattr(owner, name, self.urls[value])


def run_child(args: argparse.Namespace) -> int:
    import pytest

    return int(pytest.main(args.pytest_args, plugins=[PointAtServe(args.service_url, args.admin_url)]))


# --- in the bench process -----------------------------------------------------------------------------
@dataclass
class RunResult:
    seconds: float
    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    note: str = ""


def suite_tests_dir(path: Path) -> Path:
    for d in (path / "tests", path):
        if all((d / f).is_file() for f in SUITE_FILES):
            return d
    raise SystemExit(f"{path} is not a checkout of apache/pulsar-client-python: no tests/{SUITE_FILES[0]} etc.")


def checkout_version(tests_dir: Path) -> str:
    """The client version the checkout is (its ``pulsar/__about__.py``), or "unknown"."""
    about = tests_dir.parent / "pulsar" / "__about__.py"
    for line in about.read_text().splitlines() if about.is_file() else ():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("'\"")
    return "unknown"


def suite_broker_config(tests_dir: Path) -> list[str]:
    """The settings of the suite's standalone configuration that the lab models, as KEY=VALUE."""
    from pulsarlab.profiles import BROKER_DEFAULTS

    conf = tests_dir / SUITE_BROKER_CONF
    if not conf.is_file():
        raise SystemExit(f"{conf} is missing: the checkout's tests/ folder is incomplete")
    out = []
    for line in conf.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#") and key in BROKER_DEFAULTS:
            out.append(f"{key}={value.strip()}")
    return out


def create_namespace(admin_url: str, namespace: str) -> None:
    req = urllib.request.Request(f"{admin_url}/admin/v2/namespaces/{namespace}", data=b"{}", method="PUT")
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as resp:
        if resp.status not in (200, 204):
            raise RuntimeError(f"PUT namespaces/{namespace}: HTTP {resp.status}")


def _drain(stream: IO[str], sink: IO[str]) -> None:
    for line in stream:
        sink.write(line)


def _results(junit: Path, seconds: float) -> RunResult:
    r = RunResult(seconds)
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None:
            r.failed.append(name)
        elif case.find("error") is not None:
            r.errors.append(name)
        elif case.find("skipped") is not None:
            r.skipped.append(name)
        else:
            r.passed.append(name)
    return r


def one_run(tests_dir: Path, broker_config: list[str], log_dir: Path, n: int, timeout_s: float) -> RunResult:
    server, service_url, admin_url = start_server(
        "--log-level", "warning", *(arg for item in broker_config for arg in ("--broker-config", item))
    )
    serve_log = open(log_dir / f"serve-{n}.log", "w")  # noqa: SIM115 - closed in the finally
    drains = [threading.Thread(target=_drain, args=(s, serve_log), daemon=True) for s in (server.stdout, server.stderr)]
    for t in drains:
        t.start()
    junit = log_dir / f"junit-{n}.xml"
    try:
        for ns in NAMESPACES:
            create_namespace(admin_url, ns)
        cmd = [
            sys.executable, __file__, "--child", "--service-url", service_url, "--admin-url", admin_url, "--",
            *SUITE_FILES, "-p", "no:cacheprovider", "-p", "no:pulsarlab", "-q", f"--rootdir={tests_dir}", f"--junitxml={junit}",
        ]  # fmt: skip
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        t0 = time.monotonic()
        with open(log_dir / f"suite-{n}.log", "w") as out:
            try:
                subprocess.run(cmd, cwd=tests_dir, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return RunResult(time.monotonic() - t0, note=f"timed out after {timeout_s:.0f} s")
        seconds = time.monotonic() - t0
        if not junit.is_file():
            return RunResult(seconds, note="pytest wrote no report (see the suite log)")
        return _results(junit, seconds)
    finally:
        stop_server(server)
        for t in drains:
            t.join(timeout=10)
        serve_log.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--suite",
        type=Path,
        default=os.environ.get(SUITE_ENV) or None,
        help=f"a checkout of apache/pulsar-client-python (or its tests/ folder); default: ${SUITE_ENV}",
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, help="seconds one run of the suite may take")
    ap.add_argument("--logs", type=Path, default=None, help="folder for serve's and the suite's logs (default: a temp)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--service-url", help=argparse.SUPPRESS)
    ap.add_argument("--admin-url", help=argparse.SUPPRESS)
    ap.add_argument("pytest_args", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return run_child(args)
    if args.suite is None:
        # `make bench` runs every benchmark with its defaults; without a checkout there is nothing to measure
        print(f"not measured: no checkout of apache/pulsar-client-python (pass --suite PATH or set {SUITE_ENV})")
        return 0
    if args.runs < 1:
        ap.error("--runs takes a number >= 1")
    import pulsar

    tests_dir = suite_tests_dir(args.suite.resolve())
    broker_config = suite_broker_config(tests_dir)
    log_dir = args.logs or Path(tempfile.mkdtemp(prefix="client-suite-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    version = checkout_version(tests_dir)
    print(f"suite: {tests_dir} ({', '.join(SUITE_FILES)}) of version {version}; pulsar-client {pulsar.__version__}")
    if version != pulsar.__version__:
        print(f"warning: the checkout is {version}, the installed client {pulsar.__version__}: check out the tag")
    print(f"serve broker settings (from {SUITE_BROKER_CONF}): {' '.join(broker_config)}")
    print(f"namespaces created first: {', '.join(NAMESPACES)}; logs in {log_dir}")
    print(f"left out ({len(LEFT_OUT)}):")
    for name, reason in LEFT_OUT.items():
        print(f"  {name}: {reason}")
    summary = []
    for n in range(1, args.runs + 1):
        r = one_run(tests_dir, broker_config, log_dir, n, args.timeout)
        ran = len(r.passed) + len(r.failed) + len(r.errors) + len(r.skipped)
        print(
            f"run {n}: {len(r.passed)}/{ran} passed, {len(r.failed)} failed, {len(r.errors)} errors, "
            f"{len(r.skipped)} skipped, {len(LEFT_OUT)} left out; {r.seconds:.1f} s {r.note}".rstrip(),
            flush=True,
        )
        for kind, names in (("failed", r.failed), ("error", r.errors), ("skipped", r.skipped)):
            for name in names:
                print(f"  {kind}: {name}")
        summary.append({"run": n, "seconds": round(r.seconds, 1), "passed": len(r.passed), "ran": ran,
                        "failed": r.failed, "errors": r.errors, "skipped": r.skipped, "note": r.note})  # fmt: skip
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
