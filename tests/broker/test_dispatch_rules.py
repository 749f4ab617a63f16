"""Shared round robin, Failover active consumer and Shared batch size against reference §4, §5 and the golden vectors."""

from __future__ import annotations

import copy

import pytest
from golden_files import golden_lines
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.broker.dispatch.entries_per_turn import avg_batch_size_per_msg, batch_entries, java_div
from pulsarlab.broker.dispatch.failover import (
    FailoverConsumerList,
    java_string_order,
    ring_index,
    topic_hash,
)
from pulsarlab.broker.dispatch.round_robin import DispatchConsumer, SharedConsumerList, is_consumer_available
from pulsarlab.conformance import Mismatch
from pulsarlab.conformance.dispatch import check_batch_size, check_failover, check_next_consumer, profile_for_label
from pulsarlab.errors import ServerMetadataException
from pulsarlab.profiles import SharedDispatcherForm, get_profile

# ---------------------------------------------------------------------------------------------
# Shared round robin (reference §5.1)


def consumer(cid: int, priority: int, permits: int, blocked: bool = False, cnx_active: bool = True) -> DispatchConsumer:
    return DispatchConsumer(
        id=cid, name=f"c{cid}", priority=priority, available_permits=permits, blocked=blocked, cnx_active=cnx_active
    )


def take(dispatcher: SharedConsumerList, n: int) -> list[int | None]:
    """n calls of getNextConsumer, each taking one permit from the chosen consumer (as the Pulsar test does)."""
    out: list[int | None] = []
    for _ in range(n):
        c = dispatcher.next_consumer()
        out.append(None if c is None else c.id)
        if c is not None:
            c.available_permits -= 1
    return out


def shared(*consumers: DispatchConsumer, profile: str = "4.0") -> SharedConsumerList:
    dispatcher = SharedConsumerList(profile)
    for c in consumers:
        dispatcher.add(c)
    return dispatcher


@pytest.mark.parametrize("profile", ["3.0", "4.0"])
def test_multiple_dispatcher_get_next_consumer_with_different_priority_level(profile):
    d = shared(
        consumer(1, 0, 2),
        consumer(2, 0, 2),
        consumer(3, 0, 2),
        consumer(4, 1, 2),
        consumer(5, 1, 1),
        consumer(6, 1, 2),
        consumer(7, 2, 1),
        consumer(8, 2, 1),
        consumer(9, 2, 1),
        profile=profile,
    )
    assert take(d, 13) == [1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 6, 7, 8]
    d.add(consumer(10, 0, 2))
    assert [c.id for c in d.consumers] == [1, 2, 3, 10, 4, 5, 6, 7, 8, 9]
    assert take(d, 3) == [10, 10, 9]


def test_few_blocked_consumer_same_priority():
    d = shared(
        consumer(1, 0, 2),
        consumer(2, 0, 2),
        consumer(3, 0, 2),
        consumer(4, 0, 2),
        consumer(5, 0, 1, blocked=True),
        consumer(6, 0, 2, blocked=True),
    )
    assert take(d, 9) == [1, 2, 3, 4, 1, 2, 3, 4, None]


def test_few_blocked_consumer_different_priority():
    d = shared(
        consumer(1, 0, 2),
        consumer(2, 0, 2),
        consumer(3, 0, 2),
        consumer(4, 0, 2),
        consumer(5, 0, 1, blocked=True),
        consumer(6, 0, 2, blocked=True),
        consumer(7, 1, 2),
        consumer(8, 1, 10, blocked=True),
        consumer(9, 1, 2),
        consumer(10, 2, 2),
        consumer(11, 2, 10, blocked=True),
        consumer(12, 2, 2),
    )
    assert take(d, 14) == [1, 2, 3, 4, 1, 2, 3, 4, 7, 9, 7, 9, 10, 12]
    d.add(consumer(13, 0, 2))
    d.add(consumer(14, 0, 2, blocked=True))
    assert take(d, 5) == [13, 13, 10, 12, None]


def test_few_blocked_consumer_different_priority2():
    d = shared(
        consumer(1, 0, 2, blocked=True),
        consumer(2, 0, 2, blocked=True),
        consumer(3, 0, 2, blocked=True),
        consumer(4, 1, 2),
        consumer(5, 1, 1),
        consumer(6, 2, 1),
        consumer(7, 2, 2, blocked=True),
    )
    assert take(d, 5) == [4, 5, 4, 6, None]


def test_javadoc_example():
    d = shared(consumer(1, 0, 2), consumer(2, 0, 1), consumer(3, 0, 1), consumer(4, 1, 2), consumer(5, 1, 1))
    assert take(d, 8) == [1, 2, 3, 1, 4, 5, 4, None]


def test_round_robin_index_is_the_index_after_the_last_served_and_wraps_at_the_call():
    d = shared(consumer(1, 0, 5), consumer(2, 0, 5))
    assert d.round_robin_index == 0
    take(d, 2)
    assert d.round_robin_index == 2  # not reset until the next call
    assert take(d, 1) == [1] and d.round_robin_index == 1


def test_nothing_available_keeps_the_reset_index():
    d = shared(consumer(1, 0, 1), consumer(2, 0, 1))
    assert take(d, 2) == [1, 2] and d.round_robin_index == 2
    assert take(d, 1) == [None]
    assert d.round_robin_index == 0


def test_empty_list_has_no_next_consumer():
    assert SharedConsumerList("3.0").next_consumer() is None


def test_inactive_connection_is_skipped_only_on_branch_4_0():
    inactive = dict(cnx_active=False)
    on_3_0 = shared(consumer(1, 0, 3, **inactive), consumer(2, 0, 3), profile="3.0")
    on_4_0 = shared(consumer(1, 0, 3, **inactive), consumer(2, 0, 3), profile="4.0")
    classic = shared(
        consumer(1, 0, 3, **inactive),
        consumer(2, 0, 3),
        profile=get_profile("4.0").replace(shared_dispatcher=SharedDispatcherForm.V3),
    )
    assert take(on_3_0, 3) == [1, 2, 1]
    assert take(classic, 3) == [1, 2, 1]
    assert take(on_4_0, 3) == [2, 2, 2]


@pytest.mark.parametrize(
    "permits, blocked, expected", [(1, False, True), (0, False, False), (-3, False, False), (5, True, False)]
)
def test_availability_needs_permits_and_no_block(permits, blocked, expected):
    c = consumer(1, 0, permits, blocked=blocked)
    assert is_consumer_available(c, SharedDispatcherForm.V3) is expected
    assert is_consumer_available(c, SharedDispatcherForm.V4) is expected


def test_add_sorts_stably_only_when_the_newcomer_outranks_the_last():
    d = shared(consumer(1, 1, 1), consumer(2, 2, 1), consumer(3, 1, 1))
    assert [c.id for c in d.consumers] == [1, 3, 2]
    d.add(consumer(4, 0, 1))
    d.add(consumer(5, 1, 1))
    assert [c.id for c in d.consumers] == [4, 1, 3, 5, 2]


def test_duplicate_registration_stays_in_the_list_after_one_remove():
    c1, c2 = consumer(1, 0, 10), consumer(2, 0, 10)
    d = shared(c1, c2)
    d.add(c1)
    assert [c.id for c in d.consumers] == [1, 2, 1] and d.set_size == 2
    d.remove(c1)
    assert [c.id for c in d.consumers] == [2, 1] and d.set_size == 1 and c1 not in d
    assert 1 in take(d, 2)  # still selected although no longer in the consumer set
    d.remove(DispatchConsumer(id=1))  # the removeIf path: every occurrence goes
    assert [c.id for c in d.consumers] == [2] and d.set_size == 1


def test_remove_does_not_move_the_round_robin_index():
    d = shared(consumer(1, 0, 9), consumer(2, 0, 9), consumer(3, 0, 9))
    take(d, 2)
    d.remove(d.consumers[0])
    assert d.round_robin_index == 2
    # [2, 3] with rr = 2: the index wraps to 0, so 2 is served again and 3 waits a turn
    assert take(d, 2) == [2, 3]


def test_remove_of_an_unknown_consumer_is_a_no_op():
    d = shared(consumer(1, 0, 1))
    d.remove(DispatchConsumer(id=1000))
    assert [c.id for c in d.consumers] == [1]


def test_unknown_profile_is_rejected():
    with pytest.raises(ValueError, match="unknown Pulsar version profile"):
        SharedConsumerList("9.9")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(-1, 3), st.booleans(), st.booleans()), min_size=1, max_size=12),
    st.integers(1, 40),
)
def test_next_consumer_prefers_higher_priority_and_only_returns_available(specs, calls):
    d = SharedConsumerList("4.0")
    for i, (priority, permits, blocked, active) in enumerate(specs):
        d.add(consumer(i, priority, permits, blocked=blocked, cnx_active=active))
    assert [c.priority for c in d.consumers] == sorted(c.priority for c in d.consumers)
    for _ in range(calls):
        available = [c for c in d.consumers if d.is_available(c)]
        chosen = d.next_consumer()
        if not available:
            assert chosen is None
            continue
        assert chosen in available
        assert chosen.priority == min(c.priority for c in available)
        chosen.available_permits -= 1


# ---------------------------------------------------------------------------------------------
# Failover active consumer (reference §4)


def fc(cid: int, name: str, priority: int = 0) -> DispatchConsumer:
    return DispatchConsumer(id=cid, name=name, priority=priority)


def test_add_remove_consumer_on_partition_4():
    d = FailoverConsumerList("persistent://part-perf/global/perf.t1/ptopic", 4)
    cons1, cons2, cons0 = fc(1, "Cons1"), fc(2, "Cons2"), fc(0, "Cons0")
    pick = d.add(cons1)
    assert d.active is cons1 and pick.changed and pick.notifications == [(cons1, cons1)]
    pick = d.add(cons1)
    assert d.active is cons1 and not pick.changed and pick.notifications == [(cons1, cons1)]
    pick = d.add(cons2)  # 4 % 3 = 1 in [Cons1, Cons1, Cons2]
    assert d.active is cons1 and not pick.changed and pick.notifications == [(cons2, cons1)]
    pick = d.add(cons0)  # 4 % 4 = 0
    assert d.active is cons0 and pick.changed
    assert [(n.id, a.id) for n, a in pick.notifications] == [(0, 0), (1, 0), (1, 0), (2, 0)]
    assert d.remove(cons2).changed and d.active is cons1
    pick = d.remove(cons0)
    assert d.active is cons1 and not pick.changed and pick.notifications == []
    with pytest.raises(ServerMetadataException, match="^Consumer was not connected$") as info:
        d.remove(cons0)
    assert info.value.java_class.endswith("BrokerServiceException$ServerMetadataException")
    assert [c.id for c in d.consumers] == [1, 1]


def test_my_topic_ring_example():
    d = FailoverConsumerList("persistent://public/default/my-topic")
    c1, c2, c3 = fc(1, "c1"), fc(2, "c2"), fc(3, "c3")
    d.add(c1)
    d.add(c2)
    assert d.active is c1
    assert d.add(c3).changed and d.active is c3


def test_partition_3_example_sorts_by_priority_then_name():
    d = FailoverConsumerList("persistent://public/default/t-partition-3", 3)
    a, b, c = fc(1, "a", 1), fc(2, "b", 0), fc(3, "c", 0)
    for x in (a, b, c):
        d.add(x)
    assert [x.name for x in d.consumers] == ["b", "c", "a"]
    assert d.active is c  # 3 % 2 = 1 among the two priority-0 consumers


def test_consistent_hashing_flag_uses_the_ring_on_partitioned_topics():
    topic = "persistent://public/default/my-topic"
    flagged = FailoverConsumerList(topic, 0, consistent_hashing=True)
    plain = FailoverConsumerList(topic, 0)
    for d in (flagged, plain):
        for i in (1, 2, 3):
            d.add(fc(i, f"c{i}"))
    assert flagged.active.name == "c3"  # the ring depends on the topic name only
    assert plain.active.name == "c1"  # 0 % 3


def test_removing_the_last_consumer_clears_the_active_one_without_notifications():
    d = FailoverConsumerList("t", 0)
    c = fc(1, "only")
    d.add(c)
    pick = d.remove(c)
    assert d.active is None and not pick.changed and pick.notifications == []


def test_same_named_consumers_the_last_in_sorted_order_owns_shared_points():
    topic = "persistent://public/default/shared-names"
    assert ring_index(["x", "x"], topic_hash(topic)) == 1
    assert ring_index(["x"], topic_hash(topic)) == 0


def test_topic_hash_is_masked_murmur3_of_the_name():
    assert topic_hash("persistent://public/default/my-topic") == 825144864  # golden reference-my-topic


def test_names_compare_as_java_utf16_code_units():
    names = ["\uffff", "\U0001f600", "a"]
    assert sorted(names, key=java_string_order) == ["a", "\U0001f600", "\uffff"]
    assert sorted(names) == ["a", "\uffff", "\U0001f600"]  # Python's code-point order differs


@pytest.mark.parametrize("partition", [-2, 1.5, "3"])
def test_bad_partition_index_is_rejected(partition):
    with pytest.raises(ValueError, match="partition_index"):
        FailoverConsumerList("t", partition)


# ---------------------------------------------------------------------------------------------
# Shared batch size (reference §5.2, golden README-dispatch §3)


def v4(remaining, permits=200, **kw):
    return batch_entries(
        "4.0", remaining_messages=remaining, available_permits=permits, avg_batch_size_per_msg=kw.pop("avg", 5), **kw
    )


def v3(remaining, permits=200, **kw):
    return batch_entries(
        "3.0", remaining_messages=remaining, available_permits=permits, avg_batch_size_per_msg=kw.pop("avg", 5), **kw
    )


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def test_max_round_robin_batch_size_smallest_on_4x():
    assert [v4(i) for i in range(1, 200)] == [min(ceil_div(i, 5), 20) for i in range(1, 200)]


def test_message_range_and_smallest_queue_size_on_4x():
    assert [v4(i, 75) for i in range(1, 200)] == [ceil_div(min(i, 75), 5) for i in range(1, 200)]
    assert v4(199, 75) == 15


def test_unacked_messages_limitation_on_4x():
    assert max(v4(i, 75, max_unacked=500, unacked=480) for i in range(1, 200)) == 4


def test_3x_caps_messages_and_floors():
    assert [v3(i) for i in range(1, 200)] == [max(min(i, 20) // 5, 1) for i in range(1, 200)]
    assert v3(199, 75) == 4 and v3(12) == 2 and v4(12) == 3


def test_not_writable_counts_as_one_permit_and_negative_permits_still_give_one():
    assert v4(100, 200, writable=False) == 1 and v3(100, 200, writable=False, avg=1) == 1
    assert v4(100, -7) == 1 and v3(100, -7) == 1


def test_max_unacked_zero_means_unlimited():
    assert v4(100, 100, max_unacked=0, unacked=10**6) == 20
    assert v4(100, 100, max_unacked=1, unacked=10**6) == 1


def test_java_int_division_truncates_toward_zero():
    assert java_div(-7, 2) == -3 and java_div(7, -2) == -3 and java_div(7, 2) == 3


def test_avg_batch_size_per_msg():
    assert avg_batch_size_per_msg(155, 63) == 2  # golden random-000
    assert avg_batch_size_per_msg(0, 0) == 1 and avg_batch_size_per_msg(3, 10) == 1
    with pytest.raises(ValueError, match="entries must not be 0"):
        avg_batch_size_per_msg(5, 0)


@pytest.mark.parametrize(
    "bad, error",
    [
        ({"avg_batch_size_per_msg": 0}, ValueError),
        ({"available_permits": 1.5}, TypeError),
        ({"remaining_messages": 2**31}, ValueError),
        ({"writable": 1}, TypeError),
    ],
)
def test_batch_entries_rejects_bad_input(bad, error):
    args = dict(remaining_messages=10, available_permits=10, avg_batch_size_per_msg=1)
    args.update(bad)
    with pytest.raises(error):
        batch_entries("4.0", **args)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(-50, 500),
    st.integers(-50, 500),
    st.integers(1, 40),
    st.integers(0, 600),
    st.integers(0, 600),
    st.integers(1, 50),
    st.booleans(),
)
def test_batch_is_at_least_one_and_respects_the_caps(remaining, permits, avg, max_unacked, unacked, cap, writable):
    kw = dict(
        remaining_messages=remaining,
        available_permits=permits,
        avg_batch_size_per_msg=avg,
        writable=writable,
        max_unacked=max_unacked,
        unacked=unacked,
        max_round_robin_batch_size=cap,
    )
    new, old = batch_entries("4.0", **kw), batch_entries("3.0", **kw)
    assert 1 <= new <= max(cap, 1)
    assert 1 <= old <= max(cap // avg, 1)
    assert old <= new


# ---------------------------------------------------------------------------------------------
# Version labels and the golden replays themselves


def test_version_labels_map_to_profiles():
    assert profile_for_label("branch-3.0").shared_dispatcher is SharedDispatcherForm.V3
    assert profile_for_label("branch-4.0").shared_dispatcher is SharedDispatcherForm.V4
    classic = profile_for_label("branch-4.0-classic")
    assert classic.shared_dispatcher is SharedDispatcherForm.V3 and classic.name == "4.0"
    with pytest.raises(ValueError, match="unknown version label"):
        profile_for_label("branch-2.11")


def test_next_consumer_replay_is_checked_under_every_listed_label():
    line = next(l for l in golden_lines("shared_next_consumer.jsonl") if l["version"] == "branch-4.0")
    check_next_consumer(line)
    as_3_0 = dict(line, version="branch-3.0")  # the same line cannot hold for 3.0: it records a 4.0-only difference
    with pytest.raises(Mismatch):
        check_next_consumer(as_3_0)


def test_failover_replay_notices_a_changed_notification():
    line = golden_lines("failover_active_consumer.jsonl")[0]
    check_failover(line)
    broken = copy.deepcopy(line)
    broken["steps"][2]["notifications"] = []
    with pytest.raises(Mismatch, match="notifications"):
        check_failover(broken)


def test_batch_size_replay_checks_each_label():
    line = next(l for l in golden_lines("shared_batch_size.jsonl") if l["version"] == "branch-4.0")
    check_batch_size(line)
    with pytest.raises(Mismatch, match="batch_entries"):
        check_batch_size(dict(line, version="branch-4.0,branch-3.0"))
