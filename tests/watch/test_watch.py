"""`pulsarlab watch` against constructed real-Pulsar JSON sequences (tests/watch_json/), error paths, the recording
and the reproduction of a recorded moment in the model.

Every broker here is a loopback `FakeAdmin` (tests/watch_support.py); the tests move from poll to poll by
changing what it serves and calling `Watcher.poll` (synchronous), and time by a `FakeClock`: nothing waits on the
wall clock.
"""

from __future__ import annotations

import gzip
import json

import pytest
from watch_support import HANG, SEQUENCES, FakeClock, fake_admin

import pulsarlab as pl
from pulsarlab.cli import main
from pulsarlab.snapshot.timeline_file import load_timeline
from pulsarlab.watch import AdminClient, AdminError, Selection, Watcher
from pulsarlab.watch.findings import format_duration
from pulsarlab.watch.reproduce import WhatIf, key_for_hash, reproduce, what_if
from pulsarlab.watch.terminal import render
from pulsarlab.watch.watcher import MAX_BACKOFF_S

DRAINING = "persistent://public/default/fulfilment-events"
TOKEN = "eyJ-secret-token-never-written"


ANSWERED_S = 60.0


def _watch(server, topic: str, clock: FakeClock, interval: float = 2.0, **kw) -> Watcher:
    return Watcher(AdminClient(server.url, **kw), topic, interval, clock=clock)


def _draining_watch(server, clock: FakeClock, polls: range, **kw) -> Watcher:
    server.routes["/admin/v2/brokers/version"] = (200, b"4.0.0")
    w = _watch(server, "fulfilment-events", clock, **kw)
    for p in polls:
        server.sequence_poll("draining-4x", "fulfilment-events", p)
        w.poll()
        clock.advance(2.0)
    return w


# --- diagnosis over time ---------------------------------------------------------------------------------
def test_findings_appear_persist_and_clear_over_the_draining_sequence():
    clock = FakeClock()
    with fake_admin() as server:
        w = _draining_watch(server, clock, range(1))
        rules = {t.finding.rule for t in w.state.findings}
        assert rules == {"draining-hashes", "ack-holes", "messages-in-replay"}
        assert all(t.polls == 1 for t in w.state.findings)
        assert {t.finding.rule for t in w.state.changes.appeared} == rules

        server.sequence_poll("draining-4x", "fulfilment-events", 1)
        w.poll()
        assert [t.finding.rule for t in w.state.changes.appeared] == ["mark-delete-stuck"]
        stuck = next(t for t in w.state.findings if t.finding.rule == "mark-delete-stuck")
        assert "stayed at 5003:1789" in stuck.finding.message and "12 entries were added" in stuck.finding.message
        clock.advance(2.0)

        server.sequence_poll("draining-4x", "fulfilment-events", 2)
        w.poll()
        holes = next(t for t in w.state.findings if t.finding.rule == "ack-holes")
        assert (holes.polls, holes.duration_ms) == (3, 4000)
        assert "(for 4 s (3 polls))" in holes.line() and "hole at 5003:1790" in holes.line()
        assert not w.state.changes.appeared and not w.state.changes.cleared
        clock.advance(2.0)

        server.sequence_poll("draining-4x", "fulfilment-events", 3)
        w.poll()
        assert w.state.findings == ()
        cleared = {t.finding.rule: t for t in w.state.changes.cleared}
        assert set(cleared) == rules | {"mark-delete-stuck"}
        assert cleared["ack-holes"].duration_ms == 6000 and cleared["mark-delete-stuck"].duration_ms == 4000
        assert "cleared after 6 s" in cleared["ack-holes"].line()
        assert 'ack-holes on subscription "fulfilment" after 6 s' in w.frames[3].explanation


def test_observed_snapshot_draws_the_cursor_ranges_and_draining_hashes():
    with fake_admin() as server:
        w = _draining_watch(server, FakeClock(), range(2))
    stats = json.loads((SEQUENCES / "draining-4x" / "poll-1.stats.json").read_text())
    snap = w.state.snapshot
    assert snap.version == "4.0" and w.profile_reason == "the broker's version 4.0.0"
    sub = snap.subscription(DRAINING, "fulfilment")
    assert sub.type == "Key_Shared" and sub.dispatcher.key_shared_mode == "AUTO_SPLIT"
    assert sub.cursor.mark_delete == (5003, 1789) and sub.cursor.read_position == (5003, 1872)
    assert sub.cursor.individually_deleted[-1] == (5003, 1847, 5003, 1871)
    assert len(sub.cursor.individually_deleted) == 4
    assert not sub.cursor.is_deleted(5003, 1790) and sub.cursor.is_deleted(5003, 1795)
    a, b = sub.consumers
    observed = stats["subscriptions"]["fulfilment"]["consumers"]
    for c, raw in zip((a, b), observed):
        assert c.name == raw["consumerName"] and c.permits == raw["availablePermits"]
        assert [list(r) for r in sub.hash_ranges(c.id)] == sorted(raw["keyHashRangeArrays"])
    assert [(d.hash, d.consumer, d.ref_count, d.blocked) for d in sub.dispatcher.draining] == [
        (h["hash"], a.id, h["unackMsgs"], h["blockedAttempts"]) for h in observed[0]["drainingHashes"]
    ]
    # consumer ids stay the same from poll to poll
    first = w.frames[0].snapshot.subscription(DRAINING, "fulfilment")
    assert [(c.id, c.name) for c in first.consumers] == [(c.id, c.name) for c in sub.consumers]
    text = render(w.state, "fulfilment-events")
    assert "mark-delete 5003:1789" in text and "draining 72(2 unacked, 7 blocked)" in text


def test_a_3x_sequence_is_diagnosed_on_the_3_0_profile_from_its_fields():
    clock = FakeClock()
    with fake_admin() as server:  # no /brokers/version: 404
        w = _watch(server, "settlement-events", clock)
        for p in range(3):
            server.sequence_poll("ack-holes-3x", "settlement-events", p)
            w.poll()
            clock.advance(2.0)
    assert w.profile == "4.0" and "nothing in the stats names a version" in w.profile_reason
    assert [f.event.fields["findings"] for f in w.frames] == [2, 2, 0]
    assert [f.event.fields["cleared"] for f in w.frames] == [0, 0, 2]


# --- the recording -----------------------------------------------------------------------------------------
def test_recording_replays_frame_for_frame_and_never_holds_the_token(tmp_path):
    with fake_admin(token=TOKEN) as server:
        w = _draining_watch(server, FakeClock(), range(4), token=TOKEN)
        assert all(h.get("Authorization") == f"Bearer {TOKEN}" for _m, _p, h in server.requests)
        assert {m for m, _p, _h in server.requests} == {"GET"}
    out = w.save(tmp_path / "watch.plt.jsonl.gz")
    raw = gzip.decompress(out.read_bytes()).decode()
    assert TOKEN not in raw and "Bearer" not in raw
    tl = load_timeline(out)
    assert len(tl) == 4 and tl.profile == "4.0"
    assert tl.inputs["watch"]["authenticated"] is True and tl.inputs["watch"]["admin_url"] == server.url
    for f, g in zip(w.frames, tl):
        assert g.snapshot.to_json() == f.snapshot.to_json() and g.explanation == f.explanation
        assert g.event.kind == "admin_polled"
    answered = tl[1].event.fields["responses"][DRAINING]
    assert answered["stats"] == json.loads((SEQUENCES / "draining-4x" / "poll-1.stats.json").read_text())
    assert tl.kinds() == ["admin_polled"]


# --- read-only and safe --------------------------------------------------------------------------------------
def test_401_before_any_good_poll_names_the_url_and_status_and_ends_the_watch():
    with fake_admin(token=TOKEN) as server:
        w = _watch(server, "fulfilment-events", FakeClock(), token="wrong")
        with pytest.raises(AdminError) as e:
            w.poll()
    assert e.value.status == 401 and e.value.url.startswith(server.url + "/admin/v2/")
    assert "HTTP 401" in str(e.value) and "Authentication required" in str(e.value) and "wrong" not in str(e.value)
    assert w.frames == []


def test_500_and_a_hang_keep_the_last_good_state_and_back_off():
    clock = FakeClock()
    with fake_admin() as server:
        # a request that is answered gets all the time a loaded machine needs; only the hanging ones time out
        w = _draining_watch(server, clock, range(1), timeout_s=ANSWERED_S)
        good = w.state
        stats_path = "/admin/v2/persistent/public/default/fulfilment-events/stats"
        server.routes[stats_path] = (500, {"reason": "Internal error"})
        state = w.poll()
        assert not state.status.ok and state.status.error.status == 500
        assert state.snapshot is good.snapshot and state.findings == good.findings
        assert state.status.next_delay_s == 4.0 and "trying again in 4 s" in state.status.message
        assert server.url + stats_path in state.status.message and "HTTP 500" in state.status.message
        assert w.frames[-1].event.kind == "admin_poll_failed" and w.frames[-1].snapshot is good.snapshot

        server.routes[stats_path] = (200, HANG)
        w.client.timeout_s = 0.5
        state = w.poll()
        assert server.hanging.is_set()
        assert state.status.error.status == 0 and "timed out after 0.5 s" in state.status.message
        assert state.status.next_delay_s == 8.0 and state.snapshot is good.snapshot

        for _ in range(6):
            state = w.poll()
        assert state.status.next_delay_s == MAX_BACKOFF_S

        server.release.set()
        w.client.timeout_s = ANSWERED_S
        server.sequence_poll("draining-4x", "fulfilment-events", 1)
        state = w.poll()
        assert state.status.ok and state.status.next_delay_s == 2.0 and w.failures_in_a_row == 0
        assert len(w.frames) == 10 and w.good_polls == 2


def test_a_slow_broker_is_polled_less_often_and_told_so():
    clock = FakeClock()
    with fake_admin() as server:
        server.sequence_poll("draining-4x", "fulfilment-events", 0)
        server.on_get = lambda path: clock.advance(1.5) if path.endswith("/stats") else None
        w = _watch(server, "fulfilment-events", clock, interval=1.0)
        state = w.poll()
    assert state.status.ok and state.status.next_delay_s == 3.0
    assert "took 1.5 s to answer" in state.status.message and "every 3.0 s" in state.status.message


def test_the_interval_is_never_below_half_a_second_and_urls_carry_no_credentials():
    with pytest.raises(ValueError, match="at least 0.5 s"):
        Watcher(AdminClient("http://127.0.0.1:1"), "orders", 0.4)
    with pytest.raises(ValueError, match="must not carry credentials"):
        AdminClient("http://admin:secret@127.0.0.1:8080")
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        AdminClient("pulsar://127.0.0.1:6650")
    assert "secret" not in repr(AdminClient("http://127.0.0.1:1", token="secret"))


def test_selection_reads_topics_namespaces_and_regexes():
    assert Selection.parse("orders").topic.full == "persistent://public/default/orders"
    assert Selection.parse("acme/payments").kind == "namespace"
    sel = Selection.parse("persistent://acme/payments/settle-.*")
    assert (sel.kind, sel.tenant, sel.namespace) == ("regex", "acme", "payments")
    assert sel.pattern.fullmatch("persistent://acme/payments/settle-eu")
    with pytest.raises(ValueError, match="not a valid regex"):
        Selection.parse("orders-(")
    with pytest.raises(ValueError, match="only persistent"):
        Selection.parse("non-persistent://public/default/x")


# --- the command ----------------------------------------------------------------------------------------------
def test_cli_records_polls_and_refuses_bad_options(tmp_path, capsys):
    with fake_admin() as server:
        server.sequence_poll("draining-4x", "fulfilment-events", 0)
        out = tmp_path / "w.plt.jsonl.gz"
        args = ["watch", "--admin-url", server.url, "fulfilment-events", "--interval", "0.5", "--polls", "2"]
        assert main([*args, "--out", str(out), "--plain"]) == 0
        printed = capsys.readouterr()
        assert "fulfilment-a: permits 70, unacked 30" in printed.out and "recorded 2 poll(s)" in printed.err
        assert len(pl.load_timeline(out)) == 2
        assert main([*args, "--out", str(out)]) == 2
        assert "exists; pass --overwrite" in capsys.readouterr().err
        assert main([*args[:-2], "--polls", "1", "--interval", "0.1"]) == 2
        assert "at least 0.5 s" in capsys.readouterr().err
    with fake_admin(token=TOKEN) as server:
        token_file = tmp_path / "token"
        token_file.write_text("token:" + TOKEN + "\n")  # pulsar-admin's --auth-params form
        args = ["watch", "--admin-url", server.url, "fulfilment-events", "--polls", "1", "--plain"]
        assert main(args) == 1
        err = capsys.readouterr().err
        assert f"{server.url}/admin/v2/" in err and "HTTP 401" in err
        server.sequence_poll("draining-4x", "fulfilment-events", 0)
        assert main([*args, "--token-file", str(token_file)]) == 0


# --- reproduce in the model ---------------------------------------------------------------------------------
def test_a_recorded_moment_with_a_draining_hash_and_a_stuck_mark_delete_is_reproduced_in_the_model(tmp_path):
    with fake_admin() as server:
        w = _draining_watch(server, FakeClock(), range(3))
    tl = load_timeline(w.save(tmp_path / "w.plt.jsonl.gz"))
    rep = reproduce(tl, frame=2)
    assert rep.lab.version == "4.0" and rep.subscription == "fulfilment"
    stats = rep.stats()["subscriptions"]["fulfilment"]
    a, b = stats["consumers"]
    assert (a["consumerName"], b["consumerName"]) == ("fulfilment-a", "fulfilment-b")
    assert {h["hash"] for h in a["drainingHashes"]} == {72, 12864, 23522, 42395, 58977}
    assert a["unackedMessages"] == 30 and b["unackedMessages"] == 0
    observed = json.loads((SEQUENCES / "draining-4x" / "poll-2.stats.json").read_text())
    for mine, theirs in zip((a, b), observed["subscriptions"]["fulfilment"]["consumers"]):
        assert mine["keyHashRangeArrays"] == theirs["keyHashRangeArrays"]
    # the mark-delete is stuck behind the first hole, as observed: the model's cursor has the same shape
    cursor = rep.lab.admin.topics.stats_internal(rep.topic)["cursors"]["fulfilment"]
    first_hole = rep.positions[(5003, 1790)]
    assert cursor["markDeletePosition"] == f"{first_hole[0]}:{first_hole[1] - 1}"
    assert cursor["individuallyDeletedMessages"].count("(") == 4
    selector = rep.lab.service.topics[rep.topic].subscriptions["fulfilment"].dispatcher.selector
    for h, key in rep.keys.items():
        assert selector.make_sticky_key_hash(key.encode()) == h
    text = rep.explain()
    assert "fulfilment-a drains hash(es) [72, 12864, 23522, 42395, 58977] as observed" in text
    assert "fulfilment-a's Key_Shared hash ranges" in text
    assert "not inferred: the cluster's broker.conf is not in the admin API" in text
    assert "observed blocked attempt(s) count the broker's reads" in text
    # the hashes wait for fulfilment-a: fulfilment-b got none of the messages sent after it joined
    assert rep.held["fulfilment-b"] == [] and len(rep.held["fulfilment-a"]) == 30


def test_what_ifs_run_on_the_reproduced_moment(tmp_path):
    with fake_admin() as server:
        w = _draining_watch(server, FakeClock(), range(2))
    joined = what_if(w, WhatIf("consumer_joins"), frame=1, messages=10)
    assert joined.first_divergence == 0 and "what-if-new joined" in joined.summary()
    last = joined.branch[-1].snapshot
    sub = next(s for _t, s in last.subscriptions())
    assert "what-if-new" in {c.name for c in sub.consumers}
    batch = what_if(w, WhatIf("setting_changes", setting="acknowledgmentAtBatchIndexLevelEnabled", value=True), 1)
    assert batch.branch.lab.config["acknowledgmentAtBatchIndexLevelEnabled"] is True
    with pytest.raises(ValueError, match="unknown what-if"):
        WhatIf("nack_next")


def test_key_for_hash_finds_a_key_of_that_hash_under_the_selectors_range():
    lab = pl.Lab(version="4.0")
    lab.client().subscribe("t", "s", pl.ConsumerType.KeyShared, consumer_name="c")
    selector = lab.service.topics[lab.service.normalize("t")].subscriptions["s"].dispatcher.selector
    key = key_for_hash(42395, selector)
    assert selector.make_sticky_key_hash(key.encode()) == 42395
    assert selector.key_hash_range() == (1, 65535)  # 4.x consistent hashing reduces into [1, 65535]


def test_format_duration():
    assert [format_duration(ms) for ms in (950, 12_000, 245_000, 3_600_000, 7_380_000)] == [
        "950 ms",
        "12 s",
        "4 min 5 s",
        "1 h",
        "2 h 3 min",
    ]


def test_an_error_answer_is_read_and_its_connection_closed():
    import io
    import urllib.error

    body = io.BytesIO(b'{"reason": "Topic not found"}')

    class Refusing:
        def open(self, request, timeout):
            raise urllib.error.HTTPError(request.full_url, 404, "Not Found", {}, body)

    client = AdminClient("http://127.0.0.1:8080")
    client._opener = Refusing()
    try:
        client.get("/admin/v2/persistent/public/default/gone/stats")
    except AdminError as error:
        assert "Topic not found" in str(error)
        assert body.closed  # was left open while the error lived (a socket per failed poll)
    else:
        pytest.fail("a 404 answer raises AdminError")


def test_wait_for_returns_the_first_poll_that_shows_what_was_asked_and_none_once_the_watch_stops():
    """A notebook waits for the watch to have recorded a moment (a poll with a finding), not for a time."""
    clock = FakeClock()
    with fake_admin() as server:
        w = _draining_watch(server, clock, range(3))
        with_findings = [f.index for f in w.frames if f.event.fields.get("findings", 0) > 0]
        assert with_findings, "the sequence has no poll with a finding"
        seen = w.wait_for(lambda f: f.event.fields.get("findings", 0) > 0, timeout_s=60)
        assert seen is not None and seen.index == with_findings[0]
        assert w.wait_for(lambda f: f.index == 1, timeout_s=60).index == 1
        w.stop()
        assert w.wait_for(lambda f: f.index == 99, timeout_s=60) is None
