"""The client's settings are one frozen configuration per consumer, producer and reader, built and checked once by
``subscribe`` / ``create_producer`` / ``create_reader``; the client reaches the broker only through the
`ClientCommands` protocol, whose signatures stay those of `BrokerService`."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

import pulsarlab as pl
from pulsarlab.broker.service import BrokerService
from pulsarlab.client.configuration import ConsumerConfiguration, ProducerConfiguration, ReaderConfiguration
from pulsarlab.errors import IllegalArgumentException, InvalidConfigurationException
from pulsarlab.profiles import get_profile
from pulsarlab.protocol.handles import ClientCommands
from pulsarlab.protocol.producer_access import ProducerAccessMode

CLIENT = Path(pl.__file__).resolve().parent / "client"


def _protocol_methods(proto: type) -> list[str]:
    return sorted(n for n, v in vars(proto).items() if not n.startswith("_") and callable(v))


@pytest.mark.parametrize("name", _protocol_methods(ClientCommands))
def test_the_command_protocol_matches_the_broker_service(name):
    """`Client` holds the broker service as `ClientCommands` (a cast: the service's methods name its own handle
    classes), so the protocol must say what `BrokerService` takes: the same parameters, kinds and defaults."""
    ours = inspect.signature(getattr(ClientCommands, name))
    theirs = inspect.signature(getattr(BrokerService, name))
    shape = [(p.name, p.kind, p.default) for p in ours.parameters.values()]
    if isinstance(inspect.getattr_static(BrokerService, name), staticmethod):
        shape = shape[1:]  # the protocol's self
    assert shape == [(p.name, p.kind, p.default) for p in theirs.parameters.values()]


def test_subscribe_builds_one_frozen_configuration():
    lab = pl.Lab(seed=1)
    client = lab.client()
    consumer = client.subscribe(
        "t", "s", pl.ConsumerType.Shared, receiver_queue_size=7, negative_ack_redelivery_delay_ms=1500
    )
    conf = consumer.config
    assert isinstance(conf, ConsumerConfiguration)
    assert (conf.subscription_name, conf.consumer_type, conf.receiver_queue_size) == ("s", pl.ConsumerType.Shared, 7)
    assert conf.negative_ack_redelivery_delay_ms == 1500
    with pytest.raises(dataclasses.FrozenInstanceError):
        conf.receiver_queue_size = 8  # type: ignore[misc]
    # the consumer runs on what the configuration says: FLOW(7) went to the broker at subscribe
    broker_consumer = consumer.inner_consumer(-1).broker_consumer
    assert broker_consumer is not None and broker_consumer.available_permits == 7


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"receiver_queue_size": -1}, InvalidConfigurationException, "receiverQueueSize needs to be >= 0"),
        ({"unacked_messages_timeout_ms": 500}, IllegalArgumentException, "Ack timeout should be greater than 1000 ms"),
        ({"negative_ack_redelivery_delay_ms": -1}, IllegalArgumentException, "redeliveryDelay needs to be >= 0"),
        ({"is_read_compacted": 1}, ValueError, "Argument is_read_compacted is expected to be of type 'bool'"),
        ({"max_pending_chunked_message": "9"}, ValueError, "Argument max_pending_chunked_message is expected"),
    ],
)
def test_a_bad_setting_fails_at_subscribe_with_the_clients_text_and_subscribes_nothing(options, error, text):
    lab = pl.Lab(seed=1)
    client = lab.client()
    with pytest.raises(error, match=text):
        client.subscribe("t", "s", **options)
    with pytest.raises(error, match=text):
        ConsumerConfiguration("s", **options)
    assert not any(t.subscriptions for t in lab.service.topics.values())


def test_profile_defaults_are_resolved_by_the_configuration():
    conf = ConsumerConfiguration("s", dead_letter_policy=pl.ConsumerDeadLetterPolicy(max_redeliver_count=3))
    old, new = get_profile("2.10"), get_profile("4.0")
    assert conf.ack_timeout_ms(old) == 30_000  # a DLQ policy implied a 30 s ack timeout on 2.x
    assert conf.ack_timeout_ms(new) == 0
    assert ConsumerConfiguration("s", unacked_messages_timeout_ms=2000).ack_timeout_ms(old) == 2000
    assert ConsumerConfiguration("s").batch_index_ack(new) is new.batch_index_ack_enabled
    assert ConsumerConfiguration("s", batch_index_ack_enabled=True).batch_index_ack(new) is True


def test_queue_sizes_split_the_total_across_partitions():
    conf = ConsumerConfiguration("s", receiver_queue_size=1000, max_total_receiver_queue_size_across_partitions=1500)
    assert conf.queue_sizes("t", 0) == [("t", -1, 1000)]
    assert conf.queue_sizes("t", 3) == [(f"t-partition-{i}", i, 500) for i in range(3)]


def test_create_producer_normalizes_the_access_mode_and_checks_the_client_library():
    lab = pl.Lab(seed=1)
    producer = lab.client().create_producer("t", access_mode=1)
    assert isinstance(producer.config, ProducerConfiguration)
    assert producer.config.access_mode is ProducerAccessMode.Exclusive
    with pytest.raises(ValueError, match="access_mode must be a ProducerAccessMode"):
        ProducerConfiguration(access_mode="sideways")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Java client's chunkMaxMessageSize"):
        lab.client().create_producer("t2", chunking_enabled=True, lab_chunk_max_message_size=100)
    java = lab.client(client_library=pl.ClientLibrary.JAVA)
    assert java.create_producer("t3", chunking_enabled=True, lab_chunk_max_message_size=100).config.chunking_enabled


def test_a_reader_reads_with_a_non_durable_exclusive_configuration():
    lab = pl.Lab(seed=1)
    client = lab.client()
    producer = client.create_producer("t")
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    reader = client.create_reader("t", ids[0], reader_name="r", start_message_id_inclusive=True)
    assert isinstance(reader.config, ReaderConfiguration)
    conf = reader.consumer.config
    assert (conf.consumer_type, conf.durable, conf.consumer_name) == (pl.ConsumerType.Exclusive, False, "r")
    assert conf.start_message_id == (ids[0].ledger, ids[0].entry)
    assert [reader.read_next(0).data() for _ in range(3)] == [b"m0", b"m1", b"m2"]
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        client.create_reader("t", pl.MessageId.earliest, listener=None)


def _counts(path: Path) -> tuple[int, dict[str, int]]:
    tree = ast.parse(path.read_text())
    methods = {
        node.name: sum(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) for f in node.body)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    }
    return len(path.read_text().splitlines()), methods


@pytest.mark.parametrize("path", sorted(CLIENT.glob("*.py")), ids=lambda p: p.name)
def test_client_modules_and_classes_stay_small(path):
    """No client module over 800 lines, no class over 40 methods (issue 23's limits)."""
    lines, methods = _counts(path)
    assert lines <= 800, f"{path.name}: {lines} lines"
    assert all(n <= 40 for n in methods.values()), methods
