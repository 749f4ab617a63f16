"""The entry cache and bookie storage: entries leave memory for a file per ledger and come back identical.

`pulsarlab.managed_ledger.entry_cache` and `bookie_storage` (docs/guide/retention.md#entry-cache). A cache of 0 MB
evicts every block as soon as it fills, so these tests read evicted entries back on every path that reads old
positions: a consumer's seek, an admin reset-cursor, a redelivery, a reader from the earliest position, compaction,
and real clients of `pulsarlab serve` (whose entries are the producers' bytes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab

import pulsarlab as pl
from pulsarlab.lab import PULSAR_RETENTION, SERVE_BROKER_CONFIG
from pulsarlab.managed_ledger.bookie_storage import BookieStorage
from pulsarlab.managed_ledger.entry_cache import EntryCacheManager

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/t"
DISK = {"lab_entryStorage": "disk", "managedLedgerCacheSizeMB": 0}
N = 2500  # 19 full blocks of 128 and a partial one, in a ledger of 3000


def _publish(lab: pl.Lab, n: int = N, **producer: object) -> None:
    p = lab.client().create_producer(TOPIC, **producer)
    for i in range(n):
        p.send_async(
            f"m{i}".encode(),
            None,
            properties={"i": str(i)} if i % 3 else {},
            partition_key=f"k{i % 7}" if i % 2 else None,
        )
    p.flush()
    p.close()
    lab.run_until_idle()


def _entries(lab: pl.Lab) -> list:
    ml = lab.service.topics[TOPIC].ledger
    return [e for lid in ml.ledgers for e in ml.entries_of(lid.ledger_id)]


def _drain(consumer: object, lab: pl.Lab, ack: bool = True) -> list[bytes]:
    got = []
    while True:
        lab.run_until_idle()
        try:
            msg = consumer.receive(timeout_millis=0)  # type: ignore[attr-defined]
        except pl.Timeout:
            return got
        got.append(msg.data())
        if ack:
            consumer.acknowledge(msg)  # type: ignore[attr-defined]


@pytest.mark.parametrize("batching", [False, True])
def test_evicted_entries_read_back_identical_to_a_memory_lab(batching: bool) -> None:
    ledgers = {"managedLedgerMaxEntriesPerLedger": 3000}
    memory = pl.Lab(broker_config=ledgers)
    disk = pl.Lab(broker_config={**ledgers, **DISK})
    for lab in (memory, disk):
        lab.client().subscribe(TOPIC, "s")  # a cursor that never reads: the size bound (0 MB) evicts
        _publish(lab, N * 5 if batching else N, batching_enabled=batching, batching_max_messages=5)
    ml = disk.service.topics[TOPIC].ledger
    assert sum(ml.in_bookie_storage(info.ledger_id) for info in ml.ledgers) > 0
    assert disk.service.entry_cache.size == 0
    assert _entries(disk) == _entries(memory)
    assert ml.stats_internal() == memory.service.topics[TOPIC].ledger.stats_internal()


def test_seek_reset_cursor_and_redelivery_read_evicted_entries() -> None:
    lab = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": 3000, **DISK})
    consumer = lab.client().subscribe(TOPIC, "s", consumer_type=pl.ConsumerType.Shared)
    _publish(lab)
    want = [f"m{i}".encode() for i in range(N)]
    assert _drain(consumer, lab) == want
    ml = lab.service.topics[TOPIC].ledger
    first = ml.ledgers[0].ledger_id
    assert ml.in_bookie_storage(first) == N // 128 * 128  # read by the only cursor: its full blocks left the cache

    consumer.seek(pl.MessageId.earliest)
    assert _drain(consumer, lab) == want

    consumer.close()
    lab.run_until_idle()
    lab.admin.topics.reset_cursor(TOPIC, "s", message_id=(first, 1000))
    consumer = lab.client().subscribe(TOPIC, "s", consumer_type=pl.ConsumerType.Shared)
    assert _drain(consumer, lab) == want[1000:]

    consumer.seek(pl.MessageId.earliest)
    assert _drain(consumer, lab, ack=False) == want
    consumer.redeliver_unacknowledged_messages()
    assert sorted(_drain(consumer, lab)) == sorted(want)


def test_a_reader_from_earliest_and_compaction_read_evicted_entries() -> None:
    lab = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": 3000, **DISK})
    _publish(lab)
    client = lab.client()
    reader = client.create_reader(TOPIC, pl.MessageId.earliest)
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(timeout_millis=0).data())
    assert got == [f"m{i}".encode() for i in range(N)]
    memory = pl.Lab(broker_config={"managedLedgerMaxEntriesPerLedger": 3000})
    _publish(memory)
    for each in (lab, memory):
        each.admin.topics.trigger_compaction(TOPIC)
    compacted = lab.service.topics[TOPIC].compacted
    assert compacted.positions == memory.service.topics[TOPIC].compacted.positions
    assert len(compacted.positions) == 7  # the last message of each key (keyless ones are not retained)
    view = client.create_reader(TOPIC, pl.MessageId.earliest, is_read_compacted=True)
    latest = {}
    while view.has_message_available():
        msg = view.read_next(timeout_millis=0)
        latest[msg.partition_key()] = msg.data()
    assert latest == {f"k{k}": f"m{max(i for i in range(N) if i % 2 and i % 7 == k)}".encode() for k in range(7)}


def test_trimmed_and_deleted_ledgers_lose_their_files() -> None:
    lab = pl.Lab(broker_config={**PULSAR_RETENTION, "managedLedgerMaxEntriesPerLedger": 1100, **DISK})
    consumer = lab.client().subscribe(TOPIC, "s")
    _publish(lab)
    storage = lab.service.entry_cache.storage
    ml = lab.service.topics[TOPIC].ledger
    assert len(_drain(consumer, lab)) == N
    live = [info.ledger_id for info in ml.ledgers]
    assert len(live) == 1  # the consumed ledgers were trimmed
    on_disk = sorted(int(name.split(".")[0]) for name in os.listdir(storage.path))
    assert on_disk == storage.ledgers and set(on_disk) <= set(live)
    consumer.close()
    lab.run_until_idle()
    lab.admin.topics.delete(TOPIC)
    assert os.listdir(storage.path) == [] and storage.ledgers == []


def test_the_size_bound_evicts_the_largest_caches_first() -> None:
    lab = pl.Lab(broker_config={"lab_entryStorage": "disk", "managedLedgerCacheSizeMB": 1})
    client = lab.client()
    big = "x" * 300
    for name, n in (("a", 1024), ("b", 4096)):
        client.subscribe(f"persistent://public/default/{name}", "s").close()  # a cursor that stays at the start
        p = client.create_producer(f"persistent://public/default/{name}", batching_enabled=False)
        for i in range(n):
            p.send_async(big.encode(), None)
        p.flush()
    lab.run_until_idle()
    cache = lab.service.entry_cache
    a = lab.service.topics["persistent://public/default/a"].ledger
    b = lab.service.topics["persistent://public/default/b"].ledger
    assert cache.size == a.cached_bytes + b.cached_bytes <= 1024 * 1024
    assert a.in_bookie_storage(a.current_ledger_id) == 0  # the smaller cache kept its block
    assert b.in_bookie_storage(b.current_ledger_id) > 0


def test_storage_refuses_bad_settings_and_removes_its_folder_on_close(tmp_path: Path) -> None:
    for bad in (
        {"lab_entryStorage": "tape"},
        {"managedLedgerCacheSizeMB": -1},
        {"managedLedgerCacheEvictionWatermark": 0},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            EntryCacheManager.from_config({"lab_entryStorage": "disk", **bad})
    storage = BookieStorage(tmp_path)
    storage.append(7, [("p", 1, 2, None)])
    assert storage.read(7, 0, 1) == [("p", 1, 2, None)]
    with pytest.raises(IndexError):
        storage.read(7, 0, 2)
    storage.close()
    assert not storage.path.exists() and storage.closed
    with pytest.raises(ValueError, match="closed"):
        storage.append(7, [("p", 1, 2, None)])


def test_real_clients_seek_back_to_evicted_wire_entries() -> None:
    conf = {**SERVE_BROKER_CONFIG, "managedLedgerCacheSizeMB": 0}
    with served_lab(broker_config=conf) as (lab, server), client_for(server) as client:
        topic = "persistent://public/default/wire"
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic, batching_enabled=False)
        n = 2100
        for i in range(n):
            producer.send(f"w{i}".encode(), properties={"i": str(i)})
        first = [consumer.receive(timeout_millis=RECEIVE_MS * 50) for _ in range(n)]
        for msg in first:
            consumer.acknowledge(msg)
        ml = lab.service.topics[topic].ledger
        assert ml.in_bookie_storage(ml.current_ledger_id) == n // 128 * 128
        consumer.seek(pulsar.MessageId.earliest)
        again = [consumer.receive(timeout_millis=RECEIVE_MS * 50) for _ in range(n)]
        assert [(m.data(), m.properties(), m.message_id().entry_id()) for m in again] == [
            (m.data(), m.properties(), m.message_id().entry_id()) for m in first
        ]


def test_serve_removes_its_bookie_folder_when_stopped(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    server = subprocess.Popen(
        [sys.executable, "-m", "pulsarlab", "serve", "--port", "0", "--no-admin", "--log-level", "warning"],
        cwd=repo,
        env=dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(repo)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()  # type: ignore[union-attr]
        assert "listening on" in line, server.stderr.read()  # type: ignore[union-attr]
        folders = [p.name for p in tmp_path.iterdir()]
        assert len(folders) == 1 and folders[0].startswith("pulsarlab-bookie-")
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert list(tmp_path.iterdir()) == []
