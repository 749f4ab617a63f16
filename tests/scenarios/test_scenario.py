"""KeySharedScenario: events and explanations from snapshot diffs, determinism, time travel, scheduling."""

from __future__ import annotations

import pytest

from pulsarlab.broker.key_shared import make_selector
from pulsarlab.errors import ConsumerAssignException
from pulsarlab.hashing import murmur3_32
from pulsarlab.scenarios.key_shared import (
    KeySharedScenario,
    ring_arc,
    ring_point_for,
    snapshot_assignments,
    unowned_hashes,
)


def ranges_by_name(sc: KeySharedScenario) -> dict[str, tuple[int, int]]:
    names = {c.id: c.name for c in sc.consumers}
    out: dict[str, list] = {}
    for s, e, cid in sc.assignments():
        out.setdefault(names.get(cid), []).append((s, e))
    return {n: r[0] if len(r) == 1 else tuple(r) for n, r in out.items()}


def kinds(sc: KeySharedScenario, start: int = 0) -> list[str]:
    return [e.kind for e in sc.log.since(start)]


# -- auto-split ---------------------------------------------------------------------------------


def test_autosplit_ranges_follow_the_reference_table():
    # reference §2.1 "Computed, default size, c1..c4 added", then the two removals
    sc = KeySharedScenario("auto_split", "4.0")
    for name in ("c1", "c2", "c3", "c4"):
        sc.add(name)
    assert ranges_by_name(sc) == {
        "c3": (0, 16384),
        "c2": (16385, 32768),
        "c4": (32769, 49152),
        "c1": (49153, 65536),
    }
    sc.remove("c2")
    assert ranges_by_name(sc)["c4"] == (16385, 49152)
    sc.remove("c1")
    assert ranges_by_name(sc)["c4"] == (16385, 65536)


def test_autosplit_events_and_explanations():
    sc = KeySharedScenario("auto_split")
    sc.add("c1")
    assert kinds(sc) == ["consumer_added", "range_assigned", "hash_ranges_moved"]
    n = len(sc.log)
    sc.add("c2")
    assert kinds(sc, n) == ["consumer_added", "range_split", "hash_ranges_moved"]
    split = sc.log.of_kind("range_split")[-1]
    assert (split.name, split.donor_name, split.taken, split.donor_range) == ("c2", "c1", [0, 32768], [0, 65536])
    assert split.explain().startswith("c2 joined: took the lower half [0, 32768] of c1's range [0, 65536]")
    assert "newcomer takes the lower half of the largest range" in split.explain()
    moved = sc.log.of_kind("hash_ranges_moved")[-1]
    assert (moved.from_name, moved.to_name, moved.ranges) == ("c1", "c2", [[0, 32768]])

    sc.add("c3")  # c2's [0, 32768] and c1's (32768, 65536] tie: the lowest range is split
    split = sc.log.of_kind("range_split")[-1]
    assert (split.donor_name, split.taken) == ("c2", [0, 16384])

    n = len(sc.log)
    sc.remove("c3")
    assert kinds(sc, n) == ["consumer_removed", "range_merged", "hash_ranges_moved"]
    merged = sc.log[n + 1]
    assert (merged.into_name, merged.freed, merged.result) == ("c2", [0, 16384], [0, 32768])
    assert "next higher upper bound" in merged.explain()

    sc.remove("c1")  # the top range: the lower neighbour moves up to rangeSize
    merged = sc.log.of_kind("range_merged")[-1]
    assert (merged.into_name, merged.freed, merged.result) == ("c2", [32769, 65536], [0, 65536])
    assert "top range" in merged.explain() and "moves up" in merged.explain()

    sc.remove("c2")
    assert kinds(sc)[-2:] == ["selector_empty", "hash_ranges_moved"]
    assert sc.log[-1].to_name == "nobody"


def test_every_explanation_is_one_line_naming_the_consumer():
    sc = KeySharedScenario("consistent_hashing", points=4)
    for name in ("alpha", "beta"):
        sc.add(name)
    sc.remove("alpha")
    for frame in sc.timeline:
        assert "\n" not in frame.explanation
        assert frame.explanation == frame.event.explain()
        if frame.kind.startswith("ring_point") or frame.kind.startswith("consumer_"):
            assert frame.event.name in frame.explanation


def test_autosplit_exhaustion_is_rejected_with_pulsars_text():
    sc = KeySharedScenario("auto_split", range_size=2)
    assert sc.add("c1") is not None and sc.add("c2") is not None
    assert sc.add("c3") is None
    rejected = sc.log[-1]
    assert rejected.kind == "assign_rejected"
    assert rejected.error == "No more range can assigned to new consumer, assigned consumers 2"
    assert rejected.exception == "ConsumerAssignException"
    assert isinstance(sc.last_error, ConsumerAssignException)


# -- consistent hashing -------------------------------------------------------------------------


def test_ring_points_added_one_frame_each_and_final_frame_is_the_selector_snapshot():
    sc = KeySharedScenario("consistent_hashing", "4.0", points=6)
    sc.add("c1")
    before = sc.snapshot()
    start = len(sc.timeline)
    sc.add("c2")
    after = sc.snapshot()
    frames = sc.timeline[start:]
    assert frames[0].kind == "consumer_added"
    assert frames[0].snapshot["ring"] == before["ring"]
    assert [c for c, _n in frames[0].snapshot["consumers"]] == [1, 2]
    added = [f for f in frames if f.kind == "ring_point_added"]
    new_points = {p for p, _s, _o in after["ring"]} - {p for p, _s, _o in before["ring"]}
    assert {f.event.point for f in added} == new_points
    for f in added:  # each frame shows its point owned by c2, and one more point than the frame before
        ring = {p: s for p, s, _o in f.snapshot["ring"]}
        assert ring[f.event.point] == 2
        assert "c2 placed ring point" in f.explanation
    sizes = [len(f.snapshot["ring"]) for f in added]
    assert sizes == list(range(len(before["ring"]) + 1, len(before["ring"]) + 1 + len(added)))
    last_structural = [f for f in frames if f.kind != "hash_ranges_moved"][-1]
    assert last_structural.snapshot == after


def test_ring_point_added_names_the_hashes_it_takes_and_from_whom():
    sc = KeySharedScenario("consistent_hashing", points=5)
    sc.add("c1")
    start = len(sc.log)
    sc.add("c2")
    for f in sc.timeline[start:]:
        if f.kind == "ring_point_added" and f.event.moved_from is not None:
            assert f.event.moved_from == 1
            assert "move from c1 to c2" in f.explanation
            arc = ring_arc(f.snapshot, f.event.point)
            assert f"[{arc[-1][0]}, {arc[-1][1]}]" in f.explanation
            break
    else:
        pytest.fail("c2 took no hashes from c1")


def test_v4_collision_keeps_the_holder_and_takeover_on_leave():
    # a tiny key-hash range forces collisions (golden README §4, rangeMax-63 scenarios)
    sc = KeySharedScenario("consistent_hashing", "4.0", points=10, range_max=63)
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    collisions = sc.log.of_kind("ring_point_collision")
    assert collisions, "expected collisions on a 63-slot ring"
    names = {c.id: c.name for c in sc.consumers}
    ring = {p: (s, o) for p, s, o in sc.snapshot()["ring"]}
    for ev in collisions:
        selected, others = ring[ev.point]
        assert selected == ev.holder != ev.consumer  # the holder keeps the point
        assert ev.consumer in others
        assert "appended to its colliding list" in ev.explain()
        assert names[ev.holder] == ev.holder_name
    holder = collisions[0].holder
    start = len(sc.log)
    sc.remove(holder)
    taken = [e for e in sc.log.since(start) if e.kind == "ring_point_taken_over"]
    assert taken
    ring_after = {p: s for p, s, _o in sc.snapshot()["ring"]}
    for ev in taken:
        assert ring_after[ev.point] == ev.new
        assert ring[ev.point][1][0] == ev.new  # the first colliding consumer


def test_legacy_point_key_collision_c1_and_c11():
    # <=3.0.2 point key name+i: "c1"+"10" == "c11"+"0" (issue #22050, reference §2.2)
    sc = KeySharedScenario("consistent_hashing", "2.10", points=12)
    sc.add("c1")
    sc.add("c11")
    collisions = sc.log.of_kind("ring_point_collision")
    assert murmur3_32("c110") in {ev.point for ev in collisions}
    assert all("list" in ev.explain() for ev in collisions)


def test_ring_point_removed_sends_hashes_clockwise():
    sc = KeySharedScenario("consistent_hashing", points=5)
    sc.add("c1")
    sc.add("c2")
    start = len(sc.log)
    sc.remove("c2")
    removed = [e for e in sc.log.since(start) if e.kind == "ring_point_removed"]
    assert len(removed) == 5
    assert all(e.moved_to == 1 and "go on clockwise" in e.explain() for e in removed)
    assert {cid for _s, _e, cid in sc.assignments()} == {1}


def test_selected_key_lands_on_the_next_point_clockwise():
    sc = KeySharedScenario("consistent_hashing", points=20)
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    snap = sc.snapshot()
    for sel in sc.select_keys(["key1", "key2", "k1", "NONE_KEY"]):
        point = ring_point_for(snap, sel.hash)
        assert sel.point == point
        owner = {p: s for p, s, _o in snap["ring"]}[point]
        assert sel.consumer_id == owner == sc.selector.select(sel.hash).id


# -- sticky ---------------------------------------------------------------------------------------


def test_sticky_rejections_recorded_with_pulsars_text_and_state_unchanged():
    sc = KeySharedScenario("sticky", "4.0")
    assert sc.add("c1", ranges=[(2, 5)]) is not None
    before = sc.snapshot()
    n = len(sc.timeline)
    assert sc.add("c2", ranges=[(5, 10)]) is None  # ranges are inclusive: [2,5] and [5,10] conflict
    assert sc.add("c3", ranges=[(1, 3), (2, 2)]) is None
    assert sc.add("c4") is None
    assert sc.add("c5", ranges=[(8, 6)]) is None
    errors = [e.error for e in sc.log.since(n)]
    assert errors == [
        "Range conflict with consumer Consumer{subscription=PersistentSubscription{topic=persistent://public/default/"
        "my-topic, name=my-subscription}, consumerId=1, consumerName=c1, address=/127.0.0.1:6650}",
        "Consumer's own ranges conflict: [1,3] overlaps with [2,2]",
        "Must specify key shared meta for consumer.",
        "Fixed hash range start > end for range: [8,6]",
    ]
    assert kinds(sc, n) == ["assign_rejected"] * 4
    for frame in sc.timeline[n:]:
        assert frame.snapshot == before
        assert frame.explanation.startswith(f"{frame.event.name} was rejected: ConsumerAssignException: ")
    assert [c.name for c in sc.consumers] == ["c1"]
    assert sc.log[n].ranges == [[5, 10]]


def test_sticky_gaps_select_nobody():
    sc = KeySharedScenario("sticky")
    sc.add("c1", ranges=[(0, 99)])
    added = sc.log.of_kind("sticky_ranges_added")[-1]
    assert added.unowned == 65536 - 100 == unowned_hashes(sc.snapshot())
    gaps = [(s, e) for s, e, cid in sc.assignments() if cid is None]
    assert gaps == [(100, 65535)]
    slot = next(sel for sel in sc.select_keys(["Order-3459134"]))  # slot 6067 (stack notes)
    assert slot.hash == 6067 and slot.consumer_id is None
    assert "no consumer owns hash 6067: its messages wait" in sc.log[-1].explain()


# -- hashing, batching --------------------------------------------------------------------------


def test_docs_order_key_example():
    sc = KeySharedScenario("auto_split", "4.0")
    sc.add("c1")
    (sel,) = sc.select_keys(["Order-3459134"])
    assert murmur3_32("Order-3459134") == 964695987  # the docs' 3112179635 after Pulsar's mask
    assert sel.hash == 6067


def test_default_batch_follows_its_first_key_and_key_based_splits():
    sc = KeySharedScenario("consistent_hashing", "4.0")
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    keys = [f"customer-{i}" for i in range(1, 9)]
    own = {s.key: s.consumer_id for s in sc.select_keys(keys, record=False)}
    assert len(set(own.values())) > 1
    (entry,) = sc.route_batch(keys, "DEFAULT")
    assert entry.consumer_id == own[keys[0]] and entry.keys == tuple(keys) and entry.sequence_id == 0
    assert "FIRST message's key" in sc.log[-1].explain()
    batch = ["a", "b", "a", "c", "b"]
    entries = sc.route_batch(batch, "KEY_BASED", first_sequence_id=10)
    assert [(e.keys, e.sequence_id) for e in entries] == [(("a", "a"), 12), (("c",), 13), (("b", "b"), 14)]
    for e in entries:
        assert e.consumer_id == sc.selector.select_key(e.keys[0]).id


def test_keyless_entries_hash_none_key_in_3x_and_producer_sequence_in_4x():
    for version, expected in (("3.0", b"NONE_KEY"), ("4.0", b"producer-1-7")):
        sc = KeySharedScenario("auto_split", version)
        sc.add("c1")
        (entry,) = sc.route_batch([None, "x"], first_sequence_id=7)
        assert entry.sticky_key == expected


# -- determinism, time travel, scheduling -------------------------------------------------------


def run_mixed(version: str = "4.0") -> KeySharedScenario:
    sc = KeySharedScenario("consistent_hashing", version, points=8)
    sc.add("c1")
    sc.add("c2", at=50)
    sc.add("c3", at=120)
    sc.remove("c1", at=200)
    sc.run_until_idle()
    sc.select_keys(["key1", "key2"])
    return sc


def test_same_scenario_same_digest():
    assert run_mixed().log.digest() == run_mixed().log.digest()
    assert run_mixed().log.digest() != run_mixed("3.0").log.digest()


def test_stepping_back_reproduces_earlier_snapshots():
    sc = KeySharedScenario("auto_split")
    seen = []
    for op in (lambda: sc.add("c1"), lambda: sc.add("c2"), lambda: sc.add("c3"), lambda: sc.remove("c2")):
        op()
        seen.append((len(sc.timeline) - 1, sc.snapshot()))
    for index, snap in reversed(seen):
        assert sc.timeline[index].snapshot == snap
    assert sc.timeline[seen[1][0]].snapshot != sc.timeline[seen[2][0]].snapshot
    assert snapshot_assignments(sc.timeline[seen[0][0]].snapshot) == [(0, 65536, 1)]


def test_scheduled_joins_and_leaves_fire_in_time_order():
    sc = KeySharedScenario("auto_split")
    sc.add("late", at=300)
    sc.add("early", at=100)
    sc.remove("early", at=400)
    sc.add("middle", at=200)
    assert len(sc.log) == 0
    sc.advance(150)
    assert [c.name for c in sc.consumers] == ["early"]
    assert sc.consumers[0].id == 1  # ids follow the order joins run, not the order they were scheduled
    sc.run_until_idle()
    added = sc.log.of_kind("consumer_added")
    assert [(e.name, e.time, e.consumer) for e in added] == [("early", 100, 1), ("middle", 200, 2), ("late", 300, 3)]
    removed = sc.log.of_kind("consumer_removed")
    assert [(e.name, e.time) for e in removed] == [("early", 400)]
    times = [e.time for e in sc.log]
    assert times == sorted(times)


def test_timeline_find_and_kinds():
    sc = run_mixed()
    tl = sc.timeline
    assert tl.kinds()[0] == "consumer_added"
    i = tl.find("consumer_removed")
    assert tl[i].event.name == "c1"
    assert tl.find("consumer_added", start=len(tl) - 1, direction=-1) is not None
    assert tl[-1].index == len(tl) - 1
    with pytest.raises(IndexError):
        tl[len(tl)]


def test_with_selector_drives_an_existing_selector():
    selector = make_selector("auto_split", "3.0")
    sc = KeySharedScenario.with_selector(selector)
    sc.add("c1")
    assert sc.version == "3.0" and selector.consumers[0].name == "c1"


# -- bad input ------------------------------------------------------------------------------------


def test_bad_input_fails_clearly():
    sc = KeySharedScenario("auto_split")
    with pytest.raises(ValueError, match="sticky selector only"):
        sc.add("c1", ranges=[(0, 1)])
    with pytest.raises(ValueError, match="no attached consumer 'ghost'"):
        sc.remove("ghost")
    sc.advance(10)
    with pytest.raises(ValueError, match="at= must be"):
        sc.add("c1", at=5)
    with pytest.raises(ValueError, match="non-empty string"):
        sc.add("")
    with pytest.raises(TypeError, match="list of keys"):
        sc.select_keys("key1")
    with pytest.raises(ValueError, match="batcher must be"):
        sc.route_batch(["a"], "PER_KEY")
    with pytest.raises(ValueError, match="unknown selector kind"):
        KeySharedScenario("round_robin")
    with pytest.raises(ValueError, match="two ints"):
        KeySharedScenario("sticky").add("c1", ranges=[(0, "9")])
