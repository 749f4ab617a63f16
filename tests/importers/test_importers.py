"""The broker-JSON importer (`pulsarlab.importers`): lenient parsing, typed stats, range strings, diagnosis.

Expected findings of the sample files are the ones their construction puts in them (data/broker-json/README.md);
the code computes them, the tests check rule names, subjects and numbers that are facts of the input.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pulsarlab.importers import (
    AckRange,
    Finding,
    Limits,
    PartitionedTopicInternalStats,
    PersistentTopicInternalStats,
    RangeFormatError,
    Severity,
    StatsFormatError,
    TopicStats,
    diagnose,
    format_findings,
    format_ranges,
    infer_line,
    load,
    load_stats,
    load_stats_internal,
    parse_ranges,
    ranges_from_set,
    ranges_to_set,
    read,
    read_stats,
    read_stats_internal,
)
from pulsarlab.importers.lenient_json import JsonSource, loads
from pulsarlab.managed_ledger.position import Position
from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet
from pulsarlab.protocol.subscription import ConsumerType, KeySharedMode

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "broker-json"


def rules(findings: list[Finding]) -> set[tuple[str, str]]:
    return {(f.rule, f.subject) for f in findings}


def one(findings: list[Finding], rule: str) -> Finding:
    matching = [f for f in findings if f.rule == rule]
    assert len(matching) == 1, [str(f) for f in findings]
    return matching[0]


# ---------------------------------------------------------------------------------------------
# lenient_json


def test_lenient_json_accepts_what_pasted_broker_output_carries():
    text = '\ufeff{\n\u00a0\u00a0"a" : [ 1, 2, ],\n  "idm" : "[(3:5..3:9],\n(4:-1..4:2]]",\n  "r" : NaN,\n}'
    value = loads(text)
    assert value["a"] == [1, 2]
    assert value["idm"] == "[(3:5..3:9],\n(4:-1..4:2]]"
    assert math.isnan(value["r"])


def test_lenient_json_keeps_commas_inside_strings():
    assert loads('{"s": "a, ]", "t": ",}"}') == {"s": "a, ]", "t": ",}"}


def test_duplicate_keys_keep_the_last_value_like_jackson():
    assert loads('{"a": 1, "a": 2}') == {"a": 2}


@pytest.mark.parametrize(
    "text, line, column, words",
    [
        ('{\n  "a" : 1,\n  // my note\n  "b" : 2\n}', 3, 3, "comments are not JSON"),
        ("{\n  'a' : 1\n}", 2, 3, "double quotes"),
        ('{\n  "a" : {\n    "b" : 1', 3, 12, "cut off"),
        ('{"a" : "never closed', 1, 8, "never ends"),
        ("$ pulsar-admin topics stats t\n{}", 1, 1, "shell prompt"),
        ('{"a" : 1}\n{"b" : 2}', 2, 1, "second value"),
        ("{\n  \u201ca\u201d : 1\n}", 2, 3, "typographic quote"),
        ('{\n  "a" : [ 1, 2, ... ]\n}', 2, 17, "ellipsis"),
    ],
)
def test_malformed_json_names_file_line_column_and_what_was_expected(text, line, column, words):
    with pytest.raises(StatsFormatError) as info:
        loads(text, source="pasted.json")
    e = info.value
    assert (e.source, e.line, e.column) == ("pasted.json", line, column)
    assert str(e).startswith(f"pasted.json, line {line}, column {column}: expected") or "never ends" in str(e)
    assert words in str(e)


def test_empty_text_fails_saying_so():
    with pytest.raises(StatsFormatError, match="the text is empty"):
        loads(" \n\u00a0", source="x.json")


def test_files_in_utf16_with_bom_are_read(tmp_path):
    path = tmp_path / "stats.json"
    path.write_bytes('{"subscriptions": {"s": {"type": "Shared"}}}'.encode("utf-16"))
    assert load_stats(path).subscriptions["s"].type is ConsumerType.Shared


def test_files_that_are_not_text_fail_naming_the_byte(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(StatsFormatError) as info:
        load(path)
    assert str(path) in str(info.value) and "byte offset 7" in str(info.value)


def test_locate_finds_the_last_duplicate_and_list_items():
    src = JsonSource("x", '{"a": 1,\n "l": [0, {"b": 2}],\n "a": {"c": 3}}')
    assert src.locate((("field", "a"), ("field", "c"))) == (3, 13)
    assert src.locate((("field", "l"), ("index", 1), ("field", "b"))) == (2, 17)
    assert src.locate((("field", "missing"),)) is None


# ---------------------------------------------------------------------------------------------
# the individuallyDeletedMessages string (§7.2)


def test_parse_reference_strings():
    assert parse_ranges("[]") == []
    assert parse_ranges("[(0:5..0:75],(0:97..0:105]]") == [
        AckRange.of(Position(0, 5), Position(0, 75)),
        AckRange(0, 97, 0, 105),
    ]
    ranges = parse_ranges("[(3:5..3:9],(4:-1..4:2]]")
    assert [r.entry_count() for r in ranges] == [4, 3]
    assert ranges[1].first == Position(4, 0)


def test_parse_accepts_two_dot_leader_guava_separator_and_wrapped_lines():
    plain = parse_ranges("[(3:5..3:9],(4:-1..4:2]]")
    assert parse_ranges("[(3:5\u20253:9], (4:-1\u20254:2]]") == plain
    assert parse_ranges(" [ (3:5..3:\n9] ,\n (4:-1 .. 4:2] ] ") == plain


def test_cross_ledger_ranges_of_the_guava_set_are_read():
    (r,) = parse_ranges("[(2:10..4:10]]")
    assert not r.single_ledger and r.entry_count() is None
    assert str(ranges_to_set([r])) == "[(4:-1..4:10]]"  # the open set keeps only the upper ledger (§7.2)


@pytest.mark.parametrize(
    "text, words",
    [
        ("(3:5..3:9]", "expected '['"),
        ("[(3:5..3:9]", "ends early"),
        ("[(3:5..3:9],(4:-1..4", "ends early"),
        ("[(3:9..3:5]]", "is empty"),
        ("[(3:5..3:9],(3:7..3:12]]", "overlaps"),
        ("[(3:5..3:9],\u2026]", "ellipsis"),
        ("[(3:5...3:9]]", "expected a range"),
        ("[(3:5..3:9]] x", "end of the string"),
    ],
)
def test_malformed_range_strings_fail_with_the_offset(text, words):
    with pytest.raises(RangeFormatError) as info:
        parse_ranges(text)
    assert words in str(info.value)
    assert 0 <= info.value.offset <= len(text)


acks = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 40)), max_size=60)


@settings(max_examples=200, deadline=None)
@given(acks)
def test_range_strings_round_trip_with_open_long_pair_range_set(positions):
    rs = OpenLongPairRangeSet()
    for ledger, entry in positions:
        rs.ack(ledger, entry)
    text = str(rs)
    parsed = parse_ranges(text)
    assert format_ranges(parsed) == text
    assert str(ranges_to_set(parsed)) == text
    assert parsed == ranges_from_set(rs)
    guava = rs.to_string(separator=", ")
    assert parse_ranges(guava) == parsed and format_ranges(parsed, ", ") == guava
    assert parse_ranges(text.replace("..", "\u2025")) == parsed
    assert len(parsed) == rs.size()


# ---------------------------------------------------------------------------------------------
# typed stats


def test_missing_fields_take_pulsars_defaults_and_unknown_fields_are_kept():
    stats = read_stats(
        {
            "subscriptions": {"s": {"consumers": [{"consumerName": "c", "futureField": [1]}], "x": 1}},
            "publishers": [],
            "brandNewTopicField": {"k": "v"},
        }
    )
    sub = stats.subscriptions["s"]
    c = sub.consumers[0]
    assert (sub.type, sub.msg_backlog, sub.is_durable) == (None, 0, True)
    assert sub.blocked_subscription_on_unacked_msgs is False
    assert (c.available_permits, c.unacked_messages, c.blocked_consumer_on_unacked_msgs) == (0, 0, False)
    assert c.hash_ranges is None
    assert c.extra == {"futureField": [1]} and sub.extra == {"x": 1}
    assert stats.extra == {"publishers": [], "brandNewTopicField": {"k": "v"}}
    assert c.present == frozenset({"consumerName", "futureField"})


def test_nulls_are_missing_and_jackson_number_forms_are_accepted():
    sub = read_stats({"subscriptions": {"s": {"msgBacklog": 5.0, "msgRateOut": "NaN", "activeConsumerName": None}}})
    s = sub.subscriptions["s"]
    assert s.msg_backlog == 5 and math.isnan(s.msg_rate_out) and s.active_consumer_name is None


STATS_INTERNAL_BAD = """{
  "ledgers" : [ ],
  "cursors" : {
    "my-sub" : {
      "markDeletePosition" : 42,
      "readPosition" : "3:5"
    }
  }
}"""


def test_a_field_of_the_wrong_type_fails_naming_the_json_path_and_line():
    with pytest.raises(StatsFormatError) as info:
        read_stats_internal(STATS_INTERNAL_BAD, source="internal.json")
    assert str(info.value) == (
        'internal.json, line 5, column 30: cursors["my-sub"].markDeletePosition: expected "ledger:entry", got 42'
    )


@pytest.mark.parametrize(
    "doc, path, expected",
    [
        (
            {"subscriptions": {"s": {"type": "KeyShared"}}},
            'subscriptions["s"].type',
            'one of "Exclusive", "Shared", "Failover", "Key_Shared"',
        ),
        (
            {"subscriptions": {"s": {"consumers": [{"keyHashRanges": ["[0, 9]", "0-9"]}]}}},
            'subscriptions["s"].consumers[0].keyHashRanges[1]',
            '"[start, end]"',
        ),
        (
            {"subscriptions": {"s": {"consumers": [{"keyHashRangeArrays": [[9, 1]]}]}}},
            'subscriptions["s"].consumers[0].keyHashRangeArrays[0]',
            "start <= end",
        ),
        (
            {"subscriptions": {"s": {"consumers": [{"availablePermits": True}]}}},
            'subscriptions["s"].consumers[0].availablePermits',
            "an integer",
        ),
        (
            {"subscriptions": {"s": {"consumers": [{"unackedMessages": 2.5}]}}},
            'subscriptions["s"].consumers[0].unackedMessages',
            "an integer",
        ),
        (
            {"subscriptions": {"s": {"consumersAfterMarkDeletePosition": {"c2": "3"}}}},
            'subscriptions["s"].consumersAfterMarkDeletePosition["c2"]',
            '"ledger:entry"',
        ),
        ({"subscriptions": {"s": {"consumers": {"c": {}}}}}, 'subscriptions["s"].consumers', "a list"),
        ({"subscriptions": []}, "subscriptions", "an object"),
    ],
)
def test_stats_type_errors_name_the_path(doc, path, expected):
    text = json.dumps(doc, indent=2)
    with pytest.raises(StatsFormatError) as info:
        read_stats(text, source="stats.json")
    assert info.value.path == path
    assert f"expected {expected}" in str(info.value)
    assert info.value.line is not None


def test_malformed_individually_deleted_messages_fails_naming_the_cursor():
    doc = {"cursors": {"sub": {"markDeletePosition": "3:4", "individuallyDeletedMessages": "[(3:5..3:9],(3:"}}}
    with pytest.raises(StatsFormatError) as info:
        read_stats_internal(doc, source="internal.json")
    assert info.value.path == 'cursors["sub"].individuallyDeletedMessages'
    assert "ends early" in str(info.value)


def test_stats_and_stats_internal_are_told_apart():
    with pytest.raises(StatsFormatError, match="looks like `topics stats` output"):
        load_stats_internal(SAMPLES / "shared-healthy.stats.json")
    with pytest.raises(StatsFormatError, match="looks like `topics stats-internal` output"):
        load_stats(SAMPLES / "shared-healthy.stats-internal.json")
    assert isinstance(load(SAMPLES / "shared-healthy.stats.json"), TopicStats)
    assert isinstance(load(SAMPLES / "shared-healthy.stats-internal.json"), PersistentTopicInternalStats)


def test_partitioned_stats_internal_is_read_per_partition():
    doc = {
        "metadata": {"partitions": 2},
        "partitions": {
            "persistent://t/n/x-partition-0": {"ledgers": [], "cursors": {}},
            "persistent://t/n/x-partition-1": {"ledgers": [], "cursors": {"s": {"markDeletePosition": "5:-1"}}},
        },
    }
    internal = read(doc)
    assert isinstance(internal, PartitionedTopicInternalStats)
    assert internal.metadata == {"partitions": 2}
    assert internal.partitions["persistent://t/n/x-partition-1"].cursors["s"].mark_delete_position == Position(5, -1)


# ---------------------------------------------------------------------------------------------
# the sample files


EXPECTED = {
    "shared-healthy": set(),
    "key-shared-4x-draining": {
        ("draining-hashes", 'consumer "fulfilment-a" of subscription "fulfilment"'),
        ("messages-in-replay", 'subscription "fulfilment"'),
    },
    "key-shared-3x-recently-joined": {
        ("ack-holes", 'subscription "scan-indexer"'),
        ("mark-delete-stuck", 'subscription "scan-indexer"'),
        ("messages-in-replay", 'subscription "scan-indexer"'),
        ("recently-joined-consumer", 'consumer "indexer-3" of subscription "scan-indexer"'),
    },
    "ack-holes": {
        ("ack-holes", 'subscription "settlement-writer"'),
        ("mark-delete-stuck", 'subscription "settlement-writer"'),
    },
    "shared-blocked-consumer": {
        ("unacked-ranges-over-persist-limit", 'subscription "email-sender"'),
        ("mark-delete-stuck", 'subscription "email-sender"'),
        ("no-permits-with-backlog", 'subscription "email-sender"'),
        ("messages-in-replay", 'subscription "email-sender"'),
        ("consumer-blocked-on-unacked", 'consumer "sender-0" of subscription "email-sender"'),
        ("subscription-blocked-on-unacked", 'subscription "email-audit"'),
    },
    "key-shared-sticky-gap": {
        ("key-hash-range-gap", 'subscription "region-routers"'),
        ("messages-in-replay", 'subscription "region-routers"'),
    },
}


def load_sample(name: str):
    stats_path, internal_path = SAMPLES / f"{name}.stats.json", SAMPLES / f"{name}.stats-internal.json"
    stats = load_stats(stats_path) if stats_path.exists() else None
    internal = load_stats_internal(internal_path) if internal_path.exists() else None
    return stats, internal


def test_every_sample_file_is_described_and_tested():
    files = {p.name for p in SAMPLES.glob("*.json")}
    named = {f"{n}.{kind}.json" for n in EXPECTED for kind in ("stats", "stats-internal")}
    assert files <= named
    readme = (SAMPLES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{f}`" in readme for f in files)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_yields_its_findings(name):
    stats, internal = load_sample(name)
    findings = diagnose(stats, internal)
    assert rules(findings) == EXPECTED[name], format_findings(findings)
    assert [f.severity for f in findings] == sorted((f.severity for f in findings), reverse=True)
    for f in findings:
        assert f.message and f.next_step and f.reference.startswith("docs/guide/")


def test_sample_severities():
    stats, internal = load_sample("shared-blocked-consumer")
    findings = diagnose(stats, internal)
    assert one(findings, "unacked-ranges-over-persist-limit").severity is Severity.CRITICAL
    assert one(findings, "subscription-blocked-on-unacked").severity is Severity.CRITICAL
    assert one(findings, "no-permits-with-backlog").severity is Severity.INFO  # sender-2 still has permits
    stats, internal = load_sample("key-shared-4x-draining")
    assert one(diagnose(stats, internal), "draining-hashes").severity is Severity.WARNING


def test_web_ui_copy_with_two_dot_leaders_and_trailing_commas():
    text = (SAMPLES / "ack-holes.stats-internal.json").read_text(encoding="utf-8")
    assert "\u2025" in text and re.search(r",\s*[}\]]", text)  # the sample carries both quirks
    internal = load_stats_internal(SAMPLES / "ack-holes.stats-internal.json")
    cursor = internal.cursors["settlement-writer"]
    assert cursor.individually_deleted_messages == (
        "[(2371:5\u20252371:9],(2371:11\u20252371:4999],(2398:-1\u20252398:2]]"
    )
    assert str(cursor.range_set()) == cursor.individually_deleted_messages.replace("\u2025", "..")
    assert cursor.range_set().size() == cursor.total_non_contiguous_deleted_messages_range


def test_ack_holes_numbers_of_the_sample():
    f = one(diagnose(*load_sample("ack-holes")), "ack-holes")
    assert "mark-delete 2371:4 stuck behind a hole at 2371:5" in f.message
    assert "4 entries acked right after it" in f.message
    n = f.numbers
    # (2371:5..2371:9] + (2371:11..2371:4999] + (2398:-1..2398:2]; ledger 2371 holds 5000 entries, so
    # 2371:4999 and 2398:0 touch: two holes, 2371:5 and 2371:10..11
    assert (n["first_hole"], n["acked_after_first_hole"], n["ranges"]) == ("2371:5", 4, 3)
    assert (n["acked_after_mark_delete"], n["holes"], n["unacked_in_holes"]) == (4 + 4988 + 3, 2, 1 + 2)
    assert f.severity is Severity.WARNING


def test_recently_joined_numbers_of_the_sample():
    f = one(diagnose(*load_sample("key-shared-3x-recently-joined")), "recently-joined-consumer")
    n = f.numbers
    assert (n["join_position"], n["mark_delete"], n["entries_between"]) == ("1203:40", "1203:3", 37)
    assert f.severity is Severity.WARNING  # the mark-delete is held by the hole at 1203:4


def test_draining_numbers_of_the_sample():
    stats, _ = load_sample("key-shared-4x-draining")
    f = one(diagnose(stats), "draining-hashes")
    c = stats.subscriptions["fulfilment"].consumer("fulfilment-a")
    assert f.numbers["draining"] == 5 and f.numbers["unacked"] == 10
    assert f.numbers["blocked_attempts"] == sum(d.blocked_attempts for d in c.draining_hashes)
    assert f.numbers["top_hash"] == max(c.draining_hashes, key=lambda d: d.blocked_attempts).hash
    assert "now fulfilment-b's" in f.message  # the hashes moved into fulfilment-b's keyHashRangeArrays


def test_sample_versions_are_inferred_from_their_fields():
    assert infer_line(load_sample("key-shared-4x-draining")[0]) == "4.x"
    assert infer_line(load_sample("key-shared-3x-recently-joined")[0]) == "3.x"
    stats, _ = load_sample("key-shared-3x-recently-joined")
    c = stats.subscriptions["scan-indexer"].consumers[0]
    assert c.key_hash_ranges is not None and c.key_hash_range_arrays is None and c.hash_ranges == c.key_hash_ranges
    assert "lastAckedTime" in c.extra and "filterProcessedMsgCount" in stats.subscriptions["scan-indexer"].extra


def test_sticky_gap_numbers_of_the_sample():
    f = one(diagnose(load_sample("key-shared-sticky-gap")[0]), "key-hash-range-gap")
    assert "[24576, 32767], [49152, 65535]" in f.message
    assert f.numbers["uncovered_hashes"] == (32767 - 24576 + 1) + (65535 - 49152 + 1)
    sub = load_sample("key-shared-sticky-gap")[0].subscriptions["region-routers"]
    assert sub.key_shared_mode is KeySharedMode.Sticky


# ---------------------------------------------------------------------------------------------
# rules on small constructed inputs


def internal_doc(md: str, idm: str, *, ledgers=((3, 0),), current=20, read_position=None, total=None, added=20):
    cursor = {
        "markDeletePosition": md,
        "readPosition": read_position or f"{ledgers[-1][0]}:{current}",
        "individuallyDeletedMessages": idm,
    }
    if total is not None:
        cursor["totalNonContiguousDeletedMessagesRange"] = total
    return {
        "entriesAddedCounter": added,
        "currentLedgerEntries": current,
        "ledgers": [{"ledgerId": lid, "entries": n} for lid, n in ledgers],
        "cursors": {"sub": cursor},
    }


def test_a_range_at_or_before_the_mark_delete_is_reported():
    findings = diagnose(internal=read_stats_internal(internal_doc("3:10", "[(3:5..3:12]]")))
    assert one(findings, "mark-delete-behind-acked-range").severity is Severity.CRITICAL
    assert "ack-holes" not in {f.rule for f in findings}


def test_a_range_touching_the_mark_delete_across_a_ledger_boundary_is_reported():
    doc = internal_doc("3:9", "[(4:-1..4:2]]", ledgers=((3, 10), (4, 0)), current=5)
    assert one(diagnose(internal=read_stats_internal(doc)), "mark-delete-behind-acked-range")
    # with a gap in ledger 3 it is an ordinary hole at 3:9's next entry
    doc = internal_doc("3:8", "[(4:-1..4:2]]", ledgers=((3, 10), (4, 0)), current=5)
    f = one(diagnose(internal=read_stats_internal(doc)), "ack-holes")
    assert f.numbers["first_hole"] == "3:9" and f.numbers["unacked_in_first_hole"] == 1
    doc = internal_doc("3:9", "[(4:0..4:2]]", ledgers=((3, 10), (4, 0)), current=5)
    assert one(diagnose(internal=read_stats_internal(doc)), "ack-holes").numbers["first_hole"] == "4:0"


def test_read_position_in_a_deleted_ledger():
    doc = internal_doc("7:-1", "[]", ledgers=((9, 0),), read_position="7:0")
    f = one(diagnose(internal=read_stats_internal(doc)), "read-position-in-deleted-ledger")
    assert f.numbers["first_ledger"] == 9


def test_range_count_mismatch_hints_at_a_cut_copy():
    doc = internal_doc("3:4", "[(3:5..3:9]]", total=40)
    f = one(diagnose(internal=read_stats_internal(doc)), "range-count-mismatch")
    assert (f.numbers["printed_ranges"], f.numbers["total_ranges"]) == (1, 40)


def ranges_text(n: int) -> str:
    rs = OpenLongPairRangeSet()
    for i in range(n):
        rs.ack(3, 2 * i + 1)  # every odd entry: n separate ranges
    return str(rs)


def test_persist_limit_keeps_limit_plus_one_ranges():
    limit_plus_one = read_stats_internal(internal_doc("3:-1", ranges_text(10001), current=20003))
    assert "unacked-ranges-over-persist-limit" not in {f.rule for f in diagnose(internal=limit_plus_one)}
    over = read_stats_internal(internal_doc("3:-1", ranges_text(10002), current=20005))
    f = one(diagnose(internal=over), "unacked-ranges-over-persist-limit")
    assert (f.numbers["ranges"], f.numbers["persisted"], f.numbers["lost"]) == (10002, 10001, 1)
    small = Limits.from_broker_config({"managedLedgerMaxUnackedRangesToPersist": 3, "unrelated": "x"})
    f = one(
        diagnose(internal=read_stats_internal(internal_doc("3:-1", ranges_text(6))), limits=small),
        "unacked-ranges-over-persist-limit",
    )
    assert (f.numbers["persisted"], f.numbers["lost"]) == (4, 2)


def test_mark_delete_stuck_between_two_snapshots():
    before = read_stats_internal(internal_doc("3:4", "[(3:5..3:9]]", added=20))
    after = read_stats_internal(internal_doc("3:4", "[(3:5..3:19]]", added=35, current=35))
    f = one(diagnose(internal=after, previous_internal=before), "mark-delete-stuck")
    assert f.numbers["entries_added"] == 15 and f.numbers["mark_delete"] == "3:4"
    moved = read_stats_internal(internal_doc("3:9", "[]", added=35, current=35))
    assert "mark-delete-stuck" not in {f.rule for f in diagnose(internal=moved, previous_internal=before)}


def sub_doc(**fields):
    base = {"type": "Shared", "msgBacklog": 100, "consumers": []}
    base.update(fields)
    return {"subscriptions": {"sub": base}}


def test_mark_delete_stuck_from_stats_timestamps_and_backlog_growth():
    busy = [consumer("a")]
    t = 10**6
    stale = read_stats(sub_doc(lastAckedTimestamp=t, lastMarkDeleteAdvancedTimestamp=t - 60_000, consumers=busy))
    assert one(diagnose(stale), "mark-delete-stuck").numbers["mark_delete_stale_ms"] == 60_000
    fresh = read_stats(sub_doc(lastAckedTimestamp=t, lastMarkDeleteAdvancedTimestamp=t - 59_999, consumers=busy))
    assert diagnose(fresh) == []
    earlier = read_stats(sub_doc(msgBacklog=50, lastMarkDeleteAdvancedTimestamp=500))
    later = read_stats(sub_doc(msgBacklog=80, lastMarkDeleteAdvancedTimestamp=500))
    assert one(diagnose(later, previous_stats=earlier), "mark-delete-stuck").numbers["backlog_growth"] == 30


def consumer(name, **fields):
    return {"consumerName": name, "availablePermits": 500, **fields}


def test_no_permits_is_a_warning_only_when_nothing_flows():
    stalled = read_stats(sub_doc(consumers=[consumer("a", availablePermits=0), consumer("b", availablePermits=0)]))
    assert one(diagnose(stalled), "no-permits-with-backlog").severity is Severity.WARNING
    busy = read_stats(sub_doc(msgRateOut=40.0, consumers=[consumer("a", availablePermits=0, msgRateOut=40.0)]))
    assert one(diagnose(busy), "no-permits-with-backlog").severity is Severity.INFO


def test_failover_looks_at_the_active_consumer_only():
    standby_starved = sub_doc(
        type="Failover", activeConsumerName="a", consumers=[consumer("a"), consumer("b", availablePermits=0)]
    )
    assert diagnose(read_stats(standby_starved)) == []
    active_starved = sub_doc(
        type="Failover", activeConsumerName="b", consumers=[consumer("a"), consumer("b", availablePermits=0)]
    )
    assert one(diagnose(read_stats(active_starved)), "no-permits-with-backlog").numbers["consumers"] == 1


def test_blocked_consumer_below_the_default_limit_says_the_limit_is_lower():
    blocked = consumer("a", availablePermits=0, unackedMessages=1000, blockedConsumerOnUnackedMsgs=True)
    doc = sub_doc(consumers=[blocked])
    f = one(diagnose(read_stats(doc)), "consumer-blocked-on-unacked")
    assert "set lower" in f.message and f.numbers["unacked"] == 1000
    assert "no-permits-with-backlog" not in {x.rule for x in diagnose(read_stats(doc))}


def test_no_consumers_with_backlog():
    assert one(diagnose(read_stats(sub_doc())), "no-consumers").numbers["msg_backlog"] == 100


def test_overlapping_ranges_of_consumers_sharing_a_name():
    doc = sub_doc(
        type="Key_Shared",
        keySharedMode="AUTO_SPLIT",
        msgBacklog=0,
        consumers=[
            consumer("w", keyHashRanges=["[0, 100]", "[201, 300]"]),
            consumer("w", keyHashRanges=["[0, 100]", "[201, 300]"]),
            consumer("v", keyHashRanges=["[101, 200]"]),
        ],
    )
    f = one(diagnose(read_stats(doc)), "key-hash-range-overlap")
    assert f.numbers["overlaps"] == 2 and f.numbers["first_overlap"] == "[0, 100]"
    assert "apache/pulsar#16654" in f.message
    assert "key-hash-range-gap" not in {x.rule for x in diagnose(read_stats(doc))}  # AUTO_SPLIT: no gap check


def test_key_shared_look_ahead_limit_in_4x():
    consumers = [consumer("a", drainingHashesCount=0), consumer("b", drainingHashesCount=0)]
    at_limit = read_stats(sub_doc(type="Key_Shared", msgInReplay=4000, consumers=consumers))
    f = one(diagnose(at_limit), "messages-in-replay")
    assert (f.severity, f.numbers["look_ahead_limit"]) == (Severity.WARNING, 4000)
    below = read_stats(sub_doc(type="Key_Shared", msgInReplay=3999, consumers=consumers))
    assert one(diagnose(below), "messages-in-replay").severity is Severity.INFO
    assert one(diagnose(at_limit, line="3.x"), "messages-in-replay").numbers["look_ahead_limit"] is None


def test_look_ahead_limit_terms():
    assert Limits().look_ahead_limit(3) == 6000
    assert Limits().look_ahead_limit(20) == 20000
    assert Limits(look_ahead_per_consumer=0).look_ahead_limit(3) == 20000
    assert Limits(look_ahead_per_consumer=0, look_ahead_per_subscription=0).look_ahead_limit(3) == 150000


def test_partitions_are_diagnosed_separately():
    internal = read(
        {
            "metadata": {"partitions": 2},
            "partitions": {
                "x-partition-0": internal_doc("3:4", "[]"),
                "x-partition-1": internal_doc("3:4", "[(3:5..3:9]]"),
            },
        }
    )
    findings = diagnose(internal=internal)
    assert [(f.topic, f.rule) for f in findings] == [("x-partition-1", "ack-holes")]
    assert str(findings[0]).startswith('INFO     [x-partition-1] subscription "sub" · ack-holes:')


def test_diagnose_needs_something_to_read():
    with pytest.raises(ValueError):
        diagnose()
    assert format_findings([]).startswith("No findings")


# ---------------------------------------------------------------------------------------------
# the lab's own admin output reads like a broker's


def lab_scenario(version: str):
    """c1 takes 12 keyed messages and acks every other one; c2 joins in between (so the cursor has holes)."""
    import pulsarlab as pl

    lab = pl.Lab(version=version, seed=1, broker_config={"managedLedgerMaxEntriesPerLedger": 5})
    client = lab.client()
    producer = client.create_producer("orders")
    c1 = client.subscribe("orders", "sub", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c1")
    for i in range(12):
        producer.send(f"m{i}".encode(), partition_key=f"k{i % 4}")
    lab.run_until_idle()
    client.subscribe("orders", "sub", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c2")
    for i in range(12):
        producer.send(f"n{i}".encode(), partition_key=f"k{i % 4}")
    lab.run_until_idle()
    received = []
    while True:
        try:
            received.append(c1.receive(timeout_millis=0))
        except pl.Timeout:
            break
    for msg in received[1::2]:
        c1.acknowledge(msg)
    lab.advance(200)
    lab.run_until_idle()
    return lab


@pytest.mark.parametrize("version", ["3.0", "4.0"])
def test_the_labs_own_stats_are_read_and_diagnosed(version):
    lab = lab_scenario(version)
    raw_stats, raw_internal = lab.admin.topics.stats("orders"), lab.admin.topics.stats_internal("orders")
    stats, internal = read(raw_stats), read(raw_internal)
    assert isinstance(stats, TopicStats) and isinstance(internal, PersistentTopicInternalStats)
    sub, raw_sub = stats.subscriptions["sub"], raw_stats["subscriptions"]["sub"]
    assert (sub.type, sub.msg_backlog, sub.unacked_messages) == (
        ConsumerType.KeyShared,
        raw_sub["msgBacklog"],
        raw_sub["unackedMessages"],
    )
    assert [c.consumer_name for c in sub.consumers] == [c["consumerName"] for c in raw_sub["consumers"]]
    cursor = internal.cursors["sub"]
    assert str(cursor.range_set()) == raw_internal["cursors"]["sub"]["individuallyDeletedMessages"]
    assert len(cursor.ack_ranges) == raw_internal["cursors"]["sub"]["totalNonContiguousDeletedMessagesRange"] > 0
    assert infer_line(stats) == ("4.x" if version == "4.0" else "3.x")
    findings = diagnose(stats, internal)
    found = rules(findings)
    assert ("ack-holes", 'subscription "sub"') in found  # the first message is never acked
    inconsistent = {"key-hash-range-overlap", "mark-delete-behind-acked-range", "range-count-mismatch"}
    assert not {r for r, _ in found} & inconsistent
    if version == "3.0":  # c2 joined while c1 held unacked messages: the classic dispatcher gates it
        assert ("recently-joined-consumer", 'consumer "c2" of subscription "sub"') in found


def test_imported_key_hash_ranges_feed_the_hash_range_view():
    from pulsarlab.scenarios.key_shared import snapshot_assignments
    from pulsarlab_widgets.views.hash_range import hash_range_view

    stats, _ = load_sample("key-shared-sticky-gap")
    sub = stats.subscriptions["region-routers"]
    snapshot = sub.key_shared_snapshot(infer_line(stats))
    unowned = [(s, e) for s, e, owner in snapshot_assignments(snapshot) if owner is None]
    gap = one(diagnose(stats), "key-hash-range-gap")
    assert unowned == [(24576, 32767), (49152, 65535)] and gap.numbers["gaps"] == len(unowned)
    assert len(hash_range_view(snapshot).data) >= len(sub.consumers)
    stats4, _ = load_sample("key-shared-4x-draining")
    snapshot4 = stats4.subscriptions["fulfilment"].key_shared_snapshot("4.x")
    assert snapshot4["key_hash_range"] == (1, 65535)
    assert all(owner is not None for *_, owner in snapshot_assignments(snapshot4))  # consistent hashing covers all


def test_pip_282_join_positions_are_read():
    doc = sub_doc(
        type="Key_Shared",
        consumersAfterMarkDeletePosition={"c2": "5:7"},
        consumers=[
            consumer("c1", lastSentPositionWhenJoining="3:0"),
            consumer("c2", lastSentPositionWhenJoining="5:7"),
        ],
    )
    stats = read_stats(doc)
    assert stats.subscriptions["sub"].consumer("c2").join_position == Position(5, 7)
    f = one(diagnose(stats), "recently-joined-consumer")
    assert "the last sent position was 5:7" in f.message and f.severity is Severity.INFO
