"""pulsarlab's pytest plugin, as an app's suite uses it: run with pytester in a pytest process of its own.

The suite below is what an app would write: real pulsar-client producers and consumers against
``pulsarlab_service_url``, topics in ``pulsarlab_namespace``, the admin REST API at ``pulsarlab_admin_url``.
It checks that each test gets a namespace of its own, that a failing test's report carries the lab's event log
(in Pulsar's terms) and its topics' stats, and that a test using none of the fixtures starts nothing.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.serve

APP_SUITE = r"""
import json
import os
import sys
import threading
import urllib.request

import pulsar
import pytest


def client(url):
    return pulsar.Client(url, operation_timeout_seconds=5,
                         logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull))


def test_uses_nothing_of_the_lab():
    # first in the file: the plugin is loaded, but no test has asked for the broker yet
    assert "pulsarlab.serve" not in sys.modules and "pulsarlab.lab" not in sys.modules
    assert not any(t.name.startswith("pulsarlab-serve") for t in threading.enumerate())


def test_orders_in_a_namespace_of_its_own(pulsarlab_service_url, pulsarlab_admin_url, pulsarlab_namespace):
    topic = f"persistent://{pulsarlab_namespace}/orders"
    c = client(pulsarlab_service_url)
    consumer = c.subscribe(topic, "app")
    c.create_producer(topic).send(b"order-1")
    assert consumer.receive(5000).data() == b"order-1"
    with urllib.request.urlopen(f"{pulsarlab_admin_url}/admin/v2/persistent/{pulsarlab_namespace}") as r:
        assert json.load(r) == [topic]
    c.close()


def test_the_next_test_sees_none_of_those_topics(pulsarlab_service_url, pulsarlab_admin_url, pulsarlab_namespace):
    with urllib.request.urlopen(f"{pulsarlab_admin_url}/admin/v2/persistent/{pulsarlab_namespace}") as r:
        assert json.load(r) == []
    c = client(pulsarlab_service_url)
    consumer = c.subscribe(f"persistent://{pulsarlab_namespace}/orders", "app",
                           initial_position=pulsar.InitialPosition.Earliest)
    with pytest.raises(pulsar.Timeout):
        consumer.receive(300)  # the other test's order-1 is in another namespace
    c.close()


def test_a_failing_test(pulsarlab_service_url, pulsarlab_namespace):
    topic = f"persistent://{pulsarlab_namespace}/payments"
    c = client(pulsarlab_service_url)
    consumer = c.subscribe(topic, "billing", consumer_type=pulsar.ConsumerType.Shared)
    c.create_producer(topic).send(b"payment-1")
    consumer.receive(5000)  # received, never acknowledged
    c.close()
    assert False, "the app forgot to acknowledge"
"""


def test_an_apps_suite_gets_a_broker_namespaces_and_the_lab_log_of_a_failure(pytester):
    pytester.makepyfile(test_app=APP_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1)
    out = result.stdout.str()
    # the failing test's report: the events of its test, explained, then its namespace's stats
    assert "pulsarlab events (call)" in out
    assert "pulsarlab topic stats of public/t" in out and "test_a_failing_test" in out
    events = out.split("pulsarlab events (call)", 1)[1].split("pulsarlab topic stats", 1)[0]
    assert "subscribed to persistent://public/t" in events and "/payments / billing as Shared" in events
    assert "stored entry" in events and "its 1 unacked message(s) go back to the replay set" in events
    stats = out.split("pulsarlab topic stats of", 1)[1]
    assert '"billing"' in stats and '"msgBacklog": 1,' in stats  # received, never acknowledged
    # a passing test carries nothing
    assert out.count("pulsarlab events (") == 1


def test_a_suite_that_uses_no_fixture_starts_no_broker(pytester):
    pytester.makepyfile(
        test_plain="""
        import sys, threading

        def test_plain():
            assert "pulsarlab" in {p.split(".")[0] for p in sys.modules}  # the plugin itself is loaded
            assert "pulsarlab.serve" not in sys.modules and "pulsarlab.lab" not in sys.modules
            assert not any(t.name.startswith("pulsarlab-serve") for t in threading.enumerate())

        def test_fails():
            assert False
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    assert "pulsarlab events" not in result.stdout.str()


SETTINGS_SUITE = r"""
def test_settings(pulsarlab_broker):
    lab = pulsarlab_broker.lab
    print("SETTINGS", lab.config["defaultRetentionTimeInMinutes"], lab.config["defaultRetentionSizeInMB"],
          lab.config["lab_entryStorage"], lab.events.window)
"""


def test_the_lab_broker_runs_with_serves_bounded_defaults_unless_asked(pytester):
    # what `pulsarlab serve` runs with: Pulsar's retention 0/0, bookie storage, the event window of serve
    from pulsarlab.cli import DEFAULT_EVENT_WINDOW

    pytester.makepyfile(test_settings=SETTINGS_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    assert f"SETTINGS 0 0 disk {DEFAULT_EVENT_WINDOW}" in result.stdout.str()
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-s",
        "--pulsarlab-broker-config=defaultRetentionTimeInMinutes=-1",
        "--pulsarlab-broker-config=defaultRetentionSizeInMB=-1",
        "--pulsarlab-event-window=0",
    )
    result.assert_outcomes(passed=1)
    assert "SETTINGS -1 -1 disk None" in result.stdout.str()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pulsarlab-broker-config=nosuch=1")
    assert "unknown broker setting 'nosuch'" in result.stderr.str() + result.stdout.str()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pulsarlab-broker-config=nosuch")
    assert "--pulsarlab-broker-config takes KEY=VALUE, got 'nosuch'" in result.stderr.str() + result.stdout.str()
