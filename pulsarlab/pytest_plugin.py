"""A pytest plugin for an app's own test suite: a lab broker to test against, and what it did when a test failed.

Installed with the package (the ``pytest11`` entry point ``pulsarlab``), so ``pip install pulsarlab`` is all an
app's suite needs. Fixtures, all on demand (a suite that uses none starts nothing and imports nothing more):

* ``pulsarlab_broker`` (session): the running lab broker, a `pulsarlab.serve.ServerThread` (``.url``,
  ``.admin_url``, ``.lab``, ``.stats(topic)``, ``.call(fn)``);
* ``pulsarlab_service_url`` / ``pulsarlab_admin_url`` (session): ``pulsar://127.0.0.1:PORT`` for
  ``pulsar.Client`` and ``http://127.0.0.1:PORT`` for the admin REST API (``pulsar-admin``'s v2 paths);
* ``pulsarlab_namespace`` (function): a namespace made for this test (``public/t<N>-<test name>``), so a test
  sees no other test's topics: name topics ``f"persistent://{pulsarlab_namespace}/orders"``.

When a test that used the broker fails, its report gets two sections: the lab's event log from the test's
start (each event in Pulsar's terms, with the rule it follows; the last ``--pulsarlab-events`` of them) and the
``topics stats`` of its namespace's topics.

The broker runs in-process, on a background thread of the test process (`pulsarlab.serve.start`), not as a
subprocess: the plugin reads the event log and the stats straight from the model (under the server's lock) to
attach them to a failing test's report, which a subprocess could only offer over a protocol of its own; it
costs no second interpreter's start; and the real client's C++ threads release the GIL while they wait, so the
app's client and the broker share the process well. Options: ``--pulsarlab-version`` (the Pulsar line modelled,
see ``pulsarlab profiles``), ``--pulsarlab-events N`` (events attached to a failing test, default 200).

The broker runs as ``pulsarlab serve`` does, so a long session stays in flat memory: Pulsar's retention (0/0: a
ledger goes once every subscription consumed it), entries in bookie storage behind a bounded entry cache, idle
topics deleted, and a window of the newest events in memory (``--pulsarlab-event-window N``, serve's
``--event-window`` default; 0 keeps all). ``--pulsarlab-broker-config KEY=VALUE`` (repeatable) changes a setting,
e.g. ``defaultRetentionTimeInMinutes=-1`` to keep every ledger.

Models no Pulsar class; it is how testcontainers' Pulsar module or an embedded broker is used in a suite.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from pulsarlab.serve.server import ServerThread

DEFAULT_EVENTS = 200


@dataclass
class _TestRecord:
    """What the report hook needs of a test that used the broker: the broker, where its events began, and its
    namespace (if it asked for one)."""

    broker: "ServerThread"
    first_event: int
    namespace: str | None = None


_RECORD = pytest.StashKey[_TestRecord]()
_counter = itertools.count(1)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pulsarlab", "pulsarlab: a lab Pulsar broker for the tests")
    group.addoption(
        "--pulsarlab-version",
        default=None,
        help="the Pulsar line the lab broker models (`pulsarlab profiles` lists them; default: the lab's default)",
    )
    group.addoption(
        "--pulsarlab-events",
        type=int,
        default=DEFAULT_EVENTS,
        metavar="N",
        help=f"events of the lab's log attached to a failing test's report (default {DEFAULT_EVENTS})",
    )
    group.addoption(
        "--pulsarlab-event-window",
        type=int,
        default=None,
        metavar="N",
        help="keep about the newest N events of the lab's log in memory (default: `pulsarlab serve`'s "
        "--event-window; 0 keeps all)",
    )
    group.addoption(
        "--pulsarlab-broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting for the lab broker (repeatable; default: what `pulsarlab serve` runs with)",
    )


@pytest.fixture(scope="session")
def pulsarlab_broker(request: pytest.FixtureRequest) -> Iterator["ServerThread"]:
    """The lab broker for the whole session: binary protocol and admin REST API on free loopback ports."""
    from pulsarlab.cli import DEFAULT_EVENT_WINDOW, broker_config_overrides
    from pulsarlab.lab import SERVE_BROKER_CONFIG, Lab
    from pulsarlab.serve import start

    config = request.config
    window = config.getoption("--pulsarlab-event-window")
    window = DEFAULT_EVENT_WINDOW if window is None else window
    if window < 0:
        raise pytest.UsageError(f"--pulsarlab-event-window takes a number of events >= 0 (0 keeps all), got {window}")
    try:
        overrides = broker_config_overrides(config.getoption("--pulsarlab-broker-config"), "--pulsarlab-broker-config")
        lab = Lab(version=config.getoption("--pulsarlab-version"), broker_config={**SERVE_BROKER_CONFIG, **overrides})
    except ValueError as e:
        raise pytest.UsageError(f"pulsarlab: {e}") from None
    lab.events.set_window(window or None)
    server = start(lab, "127.0.0.1", 0, admin_port=0)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pulsarlab_service_url(pulsarlab_broker: "ServerThread") -> str:
    """``pulsar://127.0.0.1:PORT``: what ``pulsar.Client`` connects to."""
    return pulsarlab_broker.url


@pytest.fixture(scope="session")
def pulsarlab_admin_url(pulsarlab_broker: "ServerThread") -> str:
    """``http://127.0.0.1:PORT``: the admin REST API (``/admin/v2/...``)."""
    return pulsarlab_broker.admin_url  # type: ignore[return-value]


def _record(item: pytest.Item, broker: "ServerThread") -> _TestRecord:
    """The test's record, made the first time it is asked for: where the event log stands now."""
    record = item.stash.get(_RECORD, None)
    if record is None:
        record = _TestRecord(broker, broker.call(lambda: len(broker.lab.events)))
        item.stash[_RECORD] = record
    return record


@pytest.fixture
def pulsarlab_namespace(request: pytest.FixtureRequest, pulsarlab_broker: "ServerThread") -> str:
    """A namespace of tenant ``public`` made for this test: ``public/t<N>-<test name>``."""
    record = _record(request.node, pulsarlab_broker)
    slug = re.sub(r"[^-=:.\w]", "_", request.node.name)[:60]
    namespace = f"public/t{next(_counter)}-{slug}"
    pulsarlab_broker.call(pulsarlab_broker.lab.admin.namespaces.create_namespace, namespace)
    record.namespace = namespace
    return namespace


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that uses the broker (but not a namespace) is recorded as its body starts."""
    funcargs = getattr(item, "funcargs", {})
    broker = funcargs.get("pulsarlab_broker")
    if broker is not None:
        _record(item, broker)
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    record = item.stash.get(_RECORD, None)
    if record is None or not report.failed:
        return
    limit = item.config.getoption("--pulsarlab-events")
    try:
        events, stats = record.broker.call(_what_happened, record, limit)
    except Exception as e:  # the report must not fail because the lab could not be read
        report.sections.append(("pulsarlab", f"could not read the lab broker: {type(e).__name__}: {e}"))
        return
    report.sections.append((f"pulsarlab events ({call.when})", events))
    if stats:
        report.sections.append((f"pulsarlab topic stats of {record.namespace}", stats))


def _what_happened(record: _TestRecord, limit: int) -> tuple[str, str]:
    """The events since the test began, explained (the last ``limit``), and the stats of its namespace's topics
    (call with the lab locked)."""
    lab = record.broker.lab
    log = lab.events
    end = len(log)
    start = max(record.first_event, end - limit) if limit > 0 else end
    lines = []
    if start > record.first_event:
        lines.append(f"... {start - record.first_event} earlier event(s) of this test left out (--pulsarlab-events)")
    gone = 0
    for seq in range(start, end):
        try:
            event = log[seq]
        except IndexError:  # the event window let it go
            gone += 1
            continue
        lines.append(f"#{event.seq} t={event.time}ms {event.kind}: {event.explain()}")
    if gone:
        lines.insert(
            0, f"... {gone} earlier event(s) of this test already left the event window (--pulsarlab-event-window)"
        )
    if end == record.first_event:
        lines.append("(the lab logged no event during this test)")
    stats = ""
    if record.namespace is not None:
        topics = lab.admin.topics.list(record.namespace)
        stats = json.dumps({t: _stats(lab, t) for t in topics}, indent=2) if topics else "(no topics)"
    return "\n".join(lines), stats


def _stats(lab: Any, topic: str) -> Any:
    try:
        return lab.admin.topics.stats(topic)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
