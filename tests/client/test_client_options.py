"""The lab client's ``subscribe`` / ``create_producer`` speak pulsar-client 3.13: every keyword is a real
parameter of the Python client or visibly lab-only (``lab_``); old names of lab settings fail with the new name;
and every lab passes only such keywords."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

import pulsarlab as pl
from pulsarlab.client.client import Client
from pulsarlab.client.configuration import ConsumerConfiguration, ProducerConfiguration
from pulsarlab.client.options import (
    PULSAR_CLIENT_PRODUCER_PARAMETERS,
    PULSAR_CLIENT_SUBSCRIBE_PARAMETERS,
    RENAMED_PRODUCER_OPTIONS,
    RENAMED_SUBSCRIBE_OPTIONS,
)

LABS = Path(__file__).resolve().parents[2] / "labs"
METHODS = {
    "subscribe": (
        Client.subscribe,
        ConsumerConfiguration,
        PULSAR_CLIENT_SUBSCRIBE_PARAMETERS,
        RENAMED_SUBSCRIBE_OPTIONS,
    ),
    "create_producer": (
        Client.create_producer,
        ProducerConfiguration,
        PULSAR_CLIENT_PRODUCER_PARAMETERS,
        RENAMED_PRODUCER_OPTIONS,
    ),
}


# fields of ConsumerConfiguration that create_reader sets, not subscribe keywords
READER_ONLY_FIELDS = ("durable", "start_message_id")


def _keywords(fn) -> dict[str, inspect.Parameter]:
    return {
        n: p
        for n, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and n not in ("self", "client", "topic", "subscription_name", *READER_ONLY_FIELDS)
    }


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_option_is_a_pulsar_client_parameter_or_lab_only(method):
    public, _, real, _ = METHODS[method]
    names = _keywords(public)
    assert names, f"{method} lists no options"
    for name in names:
        assert name.startswith("lab_") or name in real, f"{method}({name}=...) is not a pulsar-client 3.13 parameter"
        assert name in (public.__doc__ or ""), f"{method}'s docstring does not mention {name}"


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_signature_and_the_model_agree_on_defaults(method):
    """``Client.subscribe`` lists the options; the configuration it builds (`ConsumerConfiguration`,
    `ProducerConfiguration`) has the same names and defaults."""
    public, inner, _, _ = METHODS[method]
    outer, model = _keywords(public), _keywords(inner)
    assert set(outer) == set(model)
    for name, p in outer.items():
        assert p.default == model[name].default, name


@pytest.mark.parametrize("method", sorted(METHODS))
def test_known_parameters_match_the_installed_pulsar_client(method):
    pulsar = pytest.importorskip("pulsar")
    _, _, real, _ = METHODS[method]
    installed = set(inspect.signature(getattr(pulsar.Client, method)).parameters) - {
        "self",
        "topic",
        "subscription_name",
    }
    assert real == installed


@pytest.mark.parametrize(
    "method, old, new",
    [("subscribe", o, n) for o, n in RENAMED_SUBSCRIBE_OPTIONS.items()]
    + [("create_producer", o, n) for o, n in RENAMED_PRODUCER_OPTIONS.items()],
)
def test_an_old_lab_name_fails_with_the_new_one(method, old, new):
    client = pl.Lab().client()
    args = ("t", "s") if method == "subscribe" else ("t",)
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{old}'.*no such parameter.*{new}"):
        getattr(client, method)(*args, **{old: 1})
    assert new in _keywords(METHODS[method][0])


def test_a_real_parameter_the_lab_does_not_model_and_a_typo_fail_clearly():
    client = pl.Lab().client()
    with pytest.raises(TypeError, match="'message_listener': it is a pulsar-client parameter the lab does not model"):
        client.subscribe("t", "s", message_listener=print)
    with pytest.raises(TypeError, match="'compression_type': it is a pulsar-client parameter the lab does not model"):
        client.create_producer("t", compression_type=None)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'recevier_queue_size'$"):
        client.subscribe("t", "s", recevier_queue_size=5)
    assert not client._consumers and not client._producers


def test_lab_settings_still_work_under_their_lab_names():
    lab = pl.Lab()
    client = lab.client()
    client.subscribe("t", "s", pl.ConsumerType.Shared, consumer_name="low", lab_priority_level=1)
    client.subscribe("t", "s", pl.ConsumerType.Shared, consumer_name="high", lab_priority_level=0)
    client.create_producer("t").send(b"m")
    names = {e.consumer: e.name for e in lab.events.of_kind("consumer_subscribed")}
    assert [names[e.consumer] for e in lab.events.of_kind("dispatched")] == ["high"]


def _lab_calls():
    for path in sorted(LABS.glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for i, cell in enumerate(cells):
            if cell["cell_type"] != "code":
                continue
            source = "".join(line for line in cell["source"] if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in METHODS:
                    for kw in node.keywords:
                        if kw.arg is not None:
                            yield path.name, i, node.func.attr, kw.arg


def test_labs_pass_only_real_or_lab_prefixed_keywords():
    calls = list(_lab_calls())
    assert any(kw.startswith("lab_") for *_, kw in calls)
    wrong = [c for c in calls if not (c[3].startswith("lab_") or c[3] in METHODS[c[2]][2])]
    assert not wrong, wrong
