"""Timelines as files: `Recorder.save` and `pulsarlab.load_timeline` give back the recorded frames exactly, the
player renders from a loaded file, and bad files fail with an error that names them."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from pathlib import Path

import pytest

import pulsarlab as pl
from pulsarlab.broker.delayed.factory import BUCKET_TRACKER_FACTORY
from pulsarlab.snapshot import timeline_file
from pulsarlab.snapshot.recorder import VIEW_KINDS, Recorder
from pulsarlab.snapshot.timeline_file import FORMAT_VERSION, SavedTimeline
from pulsarlab_widgets.player import Player, render
from pulsarlab_widgets.views.cursor import cursor_view
from pulsarlab_widgets.views.dispatch_timeline import dispatch_timeline_view
from pulsarlab_widgets.views.key_shared_blocking import key_shared_blocking_view


def key_shared_run(version: str = "4.0", every=1, history: bool = True) -> Recorder:
    """Key_Shared with batches, a consumer joining and leaving, negative acks (redelivery steps) and acks."""
    lab = pl.Lab(version=version, seed=5, broker_config={"managedLedgerMaxEntriesPerLedger": 3})
    rec = Recorder(lab, every, history=history)
    client = lab.client()
    c1 = client.subscribe(
        "orders",
        "s",
        consumer_type=pl.ConsumerType.KeyShared,
        consumer_name="c1",
        receiver_queue_size=5,
        negative_ack_redelivery_delay_ms=100,
    )
    producer = client.create_producer("orders", batching_enabled=True, batching_max_messages=3)
    for i in range(12):
        producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i % 4}")
    lab.run_until_idle()
    c2 = client.subscribe("orders", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c2")
    for n in range(4):
        if c1.receiver_queue:
            m = c1.receive(0)
            (c1.negative_acknowledge if n % 2 else c1.acknowledge)(m)
    lab.advance(300)
    c2.close()
    lab.advance(50)
    rec.capture("after the script")
    rec.close()
    return rec


def delayed_chunk_run() -> Recorder:
    """Delayed delivery on a bucket tracker and a chunked message, on Shared."""
    conf = {
        "delayedDeliveryTrackerFactoryClassName": BUCKET_TRACKER_FACTORY,
        "delayedDeliveryMinIndexCountPerBucket": 2,
        "managedLedgerMaxEntriesPerLedger": 2,
        "maxMessageSize": 100,
    }
    lab = pl.Lab(version="4.0", seed=1, broker_config=conf)
    rec = Recorder(lab)
    client = lab.client()
    client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, lab_ack_group_time_ms=0)
    producer = client.create_producer("t")
    for i in range(5):
        producer.send(f"m{i}".encode(), deliver_after=timedelta(seconds=2 + i))
    client.create_producer("t", chunking_enabled=True).send(bytes(250))
    lab.advance(4000)
    rec.close()
    return rec


def assert_same_frames(rec: Recorder, loaded: SavedTimeline) -> None:
    assert len(loaded) == len(rec) > 1
    for a, b in zip(rec, loaded):
        assert b.snapshot.to_json() == a.snapshot.to_json(), f"frame {a.index}"
        assert b.explanation == a.explanation
        assert (b.index, b.event_index, b.kind, b.time) == (a.index, a.event_index, a.kind, a.time)
        assert b.event == a.event
        if a.event is not None:
            assert b.event.explain() == a.event.explain()


@pytest.mark.parametrize("version", ["3.0", "4.0", "4.1"])
def test_saved_key_shared_timeline_loads_back_to_identical_frames(tmp_path: Path, version: str) -> None:
    rec = key_shared_run(version)
    assert rec.errors == []
    assert any(f.snapshot.redelivery is not None and len(f.snapshot.redelivery.steps) for f in rec)
    path = rec.save(tmp_path / "run.plt.jsonl.gz", inputs={"script": "key_shared_run", "version": version})
    loaded = pl.load_timeline(path)
    assert_same_frames(rec, loaded)
    assert loaded.profile == version
    assert loaded.inputs["seed"] == 5 and loaded.inputs["script"] == "key_shared_run"
    assert loaded.inputs["broker_config"]["managedLedgerMaxEntriesPerLedger"] == 3
    assert loaded.header["pulsarlab"] == pl.__version__ and loaded.header["version"] == FORMAT_VERSION


def test_delayed_buckets_and_chunks_survive_the_file(tmp_path: Path) -> None:
    rec = delayed_chunk_run()
    last = rec[-1].snapshot
    assert last.subscription("t", "s").dispatcher.delayed is not None
    assert any(c is not None for t in last.topics for led in t.ledgers for c in led.chunks)
    assert_same_frames(rec, pl.load_timeline(rec.save(tmp_path / "d.plt.jsonl.gz")))


@pytest.mark.parametrize("every", [3, VIEW_KINDS], ids=["every-3", "view-kinds"])
def test_recorder_options_are_kept_and_frames_still_identical(tmp_path: Path, every) -> None:
    rec = key_shared_run(every=every, history=False)
    loaded = pl.load_timeline(rec.save(tmp_path / "r.plt.jsonl.gz"))
    assert_same_frames(rec, loaded)
    opts = loaded.inputs["recorder"]
    assert opts["history"] is False
    assert opts["every"] == (3 if every == 3 else sorted(VIEW_KINDS))


def test_loaded_frames_share_one_history_list_so_the_file_stays_linear(tmp_path: Path) -> None:
    rec = key_shared_run()
    path = rec.save(tmp_path / "h.plt.jsonl.gz")
    with gzip.open(path, "rt") as f:
        lines = [json.loads(x) for x in f][1:]
    written = sum(len(line["history"]["new"]) for line in lines)
    assert written == len(rec[-1].snapshot.history), "every sample is written once"
    loaded = pl.load_timeline(path)
    assert len(loaded[3].snapshot.history) == len(rec[3].snapshot.history) < len(loaded[-1].snapshot.history)


def test_the_player_renders_a_loaded_timeline_as_it_renders_the_recorder(tmp_path: Path) -> None:
    rec = key_shared_run()
    loaded = pl.load_timeline(rec.save(tmp_path / "p.plt.jsonl.gz"))
    views = [cursor_view, dispatch_timeline_view, key_shared_blocking_view]
    for i in (0, len(rec) // 2, len(rec) - 1):
        for view in views:
            assert (
                render(view, loaded, i, since=i - 1 if i else None).to_json()
                == render(view, rec, i, since=i - 1 if i else None).to_json()
            )
    player = Player(loaded, views)
    player.press("End")
    assert player.index == len(loaded) - 1 and player.explanation == rec[-1].explanation
    assert "dispatched" in player.kinds()
    player.jump_to_kind("dispatched", -1)
    assert loaded[player.index].kind == "dispatched"


def test_saving_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    rec = key_shared_run()
    a = rec.save(tmp_path / "a.plt.jsonl.gz").read_bytes()
    b = rec.save(tmp_path / "b.plt.jsonl.gz").read_bytes()
    assert a == b


# --- bad input ------------------------------------------------------------------------------------


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no timeline file .*nope.plt.jsonl.gz"):
        pl.load_timeline(tmp_path / "nope.plt.jsonl.gz")


def test_a_file_that_is_not_gzip_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(pl.TimelineFileError, match=f"{bad}.*not a readable timeline file"):
        pl.load_timeline(bad)


def test_gzip_of_something_else_is_not_a_timeline(tmp_path: Path) -> None:
    bad = tmp_path / "other.gz"
    with gzip.open(bad, "wt") as f:
        f.write('{"hello": 1}\n')
    with pytest.raises(pl.TimelineFileError, match=f"{bad} is not a pulsarlab timeline"):
        pl.load_timeline(bad)


def test_truncated_file_is_reported(tmp_path: Path) -> None:
    path = key_shared_run().save(tmp_path / "t.plt.jsonl.gz")
    data = path.read_bytes()
    cut = tmp_path / "cut.plt.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(pl.TimelineFileError, match=f"{cut} is truncated: its gzip stream ends early"):
        pl.load_timeline(cut)
    cut.write_bytes(data[:-3])  # only the gzip trailer's last bytes missing: every frame there, still refused
    with pytest.raises(pl.TimelineFileError, match=f"{cut} is truncated.*{len(pl.load_timeline(path))} whole frames"):
        pl.load_timeline(cut)


def test_an_empty_file_is_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty.plt.jsonl.gz"
    empty.write_bytes(b"")
    with pytest.raises(pl.TimelineFileError, match=f"{empty} is empty"):
        pl.load_timeline(empty)


def test_changed_bytes_are_caught_by_the_gzip_checksum_or_the_json(tmp_path: Path) -> None:
    path = key_shared_run().save(tmp_path / "t.plt.jsonl.gz")
    data = path.read_bytes()
    crc = tmp_path / "crc.plt.jsonl.gz"
    crc.write_bytes(data[:-6] + bytes([data[-6] ^ 1]) + data[-5:])  # a bit of the CRC32 in the trailer
    with pytest.raises(pl.TimelineFileError, match=f"{crc} is corrupt after frame .*CRC check failed"):
        pl.load_timeline(crc)
    junk = tmp_path / "junk.plt.jsonl.gz"
    junk.write_bytes(data + b"junk")
    with pytest.raises(pl.TimelineFileError, match=f"{junk} is corrupt after frame"):
        pl.load_timeline(junk)
    flipped = tmp_path / "flipped.plt.jsonl.gz"
    middle = len(data) // 2
    flipped.write_bytes(data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :])
    with pytest.raises(pl.TimelineFileError, match=f"{flipped}"):
        pl.load_timeline(flipped)


def rewrite(path: Path, out: Path, change) -> Path:
    with gzip.open(path, "rt") as f:
        lines = [json.loads(x) for x in f]
    change(lines)
    with gzip.open(out, "wt") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")
    return out


def test_missing_frames_are_reported(tmp_path: Path) -> None:
    path = key_shared_run().save(tmp_path / "t.plt.jsonl.gz")
    short = rewrite(path, tmp_path / "short.plt.jsonl.gz", lambda lines: lines.pop())
    with pytest.raises(pl.TimelineFileError, match="truncated or corrupt: its header promises"):
        pl.load_timeline(short)


def test_a_corrupt_frame_names_file_and_line(tmp_path: Path) -> None:
    path = key_shared_run().save(tmp_path / "t.plt.jsonl.gz")

    def damage(lines):
        lines[4]["snapshot"]["topics"][0]["ledgers"] = "garbage"

    bad = rewrite(path, tmp_path / "bad.plt.jsonl.gz", damage)
    with pytest.raises(pl.TimelineFileError, match=f"{bad}: line 5 is corrupt"):
        pl.load_timeline(bad)

    def unknown_field(lines):
        lines[2]["snapshot"]["topics"][0]["surprise"] = 1

    bad = rewrite(path, tmp_path / "bad2.plt.jsonl.gz", unknown_field)
    with pytest.raises(pl.TimelineFileError, match="line 3 is corrupt.*surprise"):
        pl.load_timeline(bad)


def test_a_newer_format_version_is_refused_by_name(tmp_path: Path) -> None:
    path = key_shared_run().save(tmp_path / "t.plt.jsonl.gz")

    def newer(lines):
        lines[0]["version"] = FORMAT_VERSION + 1
        lines[0]["pulsarlab"] = "9.0.0"

    new = rewrite(path, tmp_path / "new.plt.jsonl.gz", newer)
    with pytest.raises(pl.TimelineFileError, match=f"{new} is timeline format version {FORMAT_VERSION + 1}.*upgrade"):
        pl.load_timeline(new)


@pytest.mark.parametrize("version", [0, "1", None, True])
def test_a_header_without_a_valid_version_is_refused(tmp_path: Path, version) -> None:
    path = key_shared_run().save(tmp_path / "t.plt.jsonl.gz")

    def set_version(lines):
        lines[0]["version"] = version

    bad = rewrite(path, tmp_path / "bad.plt.jsonl.gz", set_version)
    with pytest.raises(pl.TimelineFileError, match="the header has no valid format version"):
        pl.load_timeline(bad)


def test_a_file_whose_fork_changes_are_corrupt_cannot_be_forked(tmp_path: Path) -> None:
    from pulsarlab.scenarios.fork import Change, fork, record_row
    from pulsarlab.scenarios.spec import ScenarioSpec

    row = next(ScenarioSpec.from_dict({"messages": 10, "consumers": 2, "subscription_type": "Shared"}).rows())
    base = record_row(row)[1]
    branch = fork(base, 5, Change("consumer_joins")).branch
    path = branch.save(tmp_path / "branch.plt.jsonl.gz")

    def unknown_change(lines):
        lines[0]["inputs"]["fork_changes"][0]["change"]["kind"] = "meteor_strike"

    bad = pl.load_timeline(rewrite(path, tmp_path / "bad.plt.jsonl.gz", unknown_change))
    with pytest.raises(ValueError, match="fork_changes holds a change this pulsarlab cannot make.*meteor_strike"):
        fork(bad, 3, Change("consumer_joins"))


def test_writing_is_atomic_a_failed_save_leaves_the_old_file_and_no_temp(tmp_path: Path, monkeypatch) -> None:
    rec = key_shared_run()
    path = rec.save(tmp_path / "keep.plt.jsonl.gz")
    before = path.read_bytes()
    real = timeline_file.frame_lines

    def failing(frames):
        for n, line in enumerate(real(frames)):
            if n == 5:
                raise OSError("disk full")
            yield line

    monkeypatch.setattr(timeline_file, "frame_lines", failing)
    with pytest.raises(OSError, match="disk full"):
        rec.save(path)
    with pytest.raises(OSError, match="disk full"):
        rec.save(tmp_path / "new.plt.jsonl.gz")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.plt.jsonl.gz"]


def test_saving_into_a_missing_folder_or_onto_a_folder_fails_clearly(tmp_path: Path) -> None:
    rec = key_shared_run()
    with pytest.raises(FileNotFoundError, match="folder .*missing does not exist"):
        rec.save(tmp_path / "missing" / "x.plt.jsonl.gz")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        rec.save(tmp_path)
