"""The Failover ring view draws the ring the broker uses: its owner is the broker's active consumer."""

from __future__ import annotations

import inspect

import pytest

import pulsarlab as pl
from pulsarlab.client.client import Client
from pulsarlab.snapshot.lab import snapshot
from pulsarlab_widgets.views.failover_ring import failover_ring_owner, failover_ring_view

# the lab-only priority keyword (being renamed lab_priority_level on another branch)
PRIORITY = next(
    p for p in ("lab_priority_level", "priority_level") if p in inspect.signature(Client.subscribe).parameters
)


@pytest.mark.parametrize(
    ("topic", "names"),
    [("my-topic", ["c1", "c2"]), ("my-topic", ["c1", "c2", "c3"]), ("invoices", ["c1", "c2", "c3", "c4"])]
    + [(f"t{i}", [f"consumer-{j}" for j in range(i % 5 + 2)]) for i in range(12)],
)
def test_ring_owner_is_the_brokers_active_consumer(topic, names):
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    for name in names:
        client.subscribe(topic, "sub", consumer_type=pl.ConsumerType.Failover, consumer_name=name)
    lab.advance(1000)
    active = lab.admin.topics.stats(topic)["subscriptions"]["sub"]["activeConsumerName"]
    assert failover_ring_owner(names, f"persistent://public/default/{topic}")[1] == active
    fig = failover_ring_view(snapshot(lab))
    assert f"active {active}" in fig.layout.title.text
    assert sum(len(tr.x) for tr in fig.data if tr.name and "(100 points)" in tr.name) == 100 * len(names)


def test_pulsars_documented_examples():
    # Pulsar's own numbers for my-topic: {c1, c2} -> c1, {c1, c2, c3} -> c3
    assert failover_ring_owner(["c1", "c2"], "persistent://public/default/my-topic")[1] == "c1"
    assert failover_ring_owner(["c1", "c2", "c3"], "persistent://public/default/my-topic")[1] == "c3"


def test_lower_priority_consumers_are_left_off_and_named():
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    client.subscribe("t", "sub", consumer_type=pl.ConsumerType.Failover, consumer_name="a")
    client.subscribe("t", "sub", consumer_type=pl.ConsumerType.Failover, consumer_name="b", **{PRIORITY: 1})
    lab.advance(1000)
    fig = failover_ring_view(snapshot(lab))
    assert "not on the ring (lower priority): b" in fig.layout.title.text


def test_no_failover_subscription_gives_an_empty_figure():
    lab = pl.Lab()
    lab.client().subscribe("t", "sub", consumer_type=pl.ConsumerType.Shared)
    assert "no Failover subscription" in str(failover_ring_view(snapshot(lab)).to_plotly_json())
