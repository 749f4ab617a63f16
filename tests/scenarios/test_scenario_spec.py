"""The scenario spec (fields, values, grid) and one grid row run in process (determinism, metric definitions)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pulsarlab.scenarios.run import run_row
from pulsarlab.scenarios.spec import GRID_FIELDS, ScenarioSpec, SpecError, load_spec
from pulsarlab.scenarios.sweep_metrics import METRIC_COLUMNS, _select, nearest_rank, position, run_metrics


def one_row(**fields):
    rows = list(load_spec(fields).rows())
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize(
    "data, field, text",
    [
        ({"nack_rat": 0.1}, "nack_rat", "did you mean 'nack_rate'"),
        ({"nack_rate": 1.5}, "nack_rate", "between 0 and 1"),
        ({"nack_rate": True}, "nack_rate", "between 0 and 1"),
        ({"versions": ["4.0", "9.9"]}, "versions", "9.9"),
        ({"versions": []}, "versions", "empty list"),
        ({"seeds": [1, 1]}, "seeds", "twice"),
        ({"seeds": {"count": 0}}, "seeds", "count an int >= 1"),
        ({"subscription_type": "Sharde"}, "subscription_type", "Key_Shared"),
        ({"messages": 0}, "messages", ">= 1"),
        ({"unacked_messages_timeout_ms": 500}, "unacked_messages_timeout_ms", ">= 1000"),
        ({"max_redeliver_count": 0}, "max_redeliver_count", ">= 1 or null"),
        ({"consumer_churn_every_ms": -5}, "consumer_churn_every_ms", ">= 1"),
        ({"chunked_fraction": 0.1, "batching": [False, True]}, "chunked_fraction", "batching off"),
        ({"subscription_type": "Exclusive", "consumers": 2}, "subscription_type", "one consumer"),
        ({"broker_config": {"noSuchSetting": 1}}, "broker_config", "noSuchSetting"),
        ({"broker_config": [1]}, "broker_config", "mapping"),
        ({"name": "a/b"}, "name", "Parquet partition"),
        ({"seeds": {"count": 1001}, "messages": list(range(1, 1001))}, "<grid>", "1,001,000 runs"),
    ],
)
def test_bad_specs_name_the_field(data, field, text):
    with pytest.raises(SpecError) as caught:
        load_spec(data)
    assert caught.value.field == field
    assert text in str(caught.value) and repr(field) in str(caught.value)


def test_the_grid_is_the_product_of_the_lists_in_field_order():
    spec = load_spec(
        {
            "name": "g",
            "versions": ["3.0", "4.0"],
            "seeds": {"start": 5, "count": 3},
            "nack_rate": [0, 0.5],
            "broker_config": {"dispatcherMaxReadBatchSize": 50},
        }
    )
    rows = list(spec.rows())
    assert len(spec) == len(rows) == 12
    assert [r.run for r in rows] == list(range(12))
    assert [(r.version, r.seed, r.nack_rate) for r in rows[:3]] == [("3.0", 5, 0.0), ("3.0", 5, 0.5), ("3.0", 6, 0.0)]
    assert {r.scenario for r in rows} == {"g"} and rows[-1].broker_config == {"dispatcherMaxReadBatchSize": 50}
    assert load_spec(spec.to_dict()) == spec
    assert set(GRID_FIELDS) <= set(spec.to_dict())


def test_specs_load_from_json_and_yaml(tmp_path):
    data = {"name": "files", "versions": ["4.0"], "subscription_type": "Key_Shared", "seeds": [1, 2]}
    (tmp_path / "s.json").write_text(json.dumps(data))
    (tmp_path / "s.yaml").write_text("name: files\nversions: ['4.0']\nsubscription_type: Key_Shared\nseeds: [1, 2]\n")
    assert load_spec(tmp_path / "s.json") == load_spec(str(tmp_path / "s.yaml")) == ScenarioSpec.from_dict(data)
    (tmp_path / "bad.yaml").write_text("nack_rate: [0.1\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_spec(tmp_path / "bad.yaml")
    (tmp_path / "s.txt").write_text("{}")
    with pytest.raises(ValueError, match=r"\.json, \.yaml or \.yml"):
        load_spec(tmp_path / "s.txt")
    with pytest.raises(FileNotFoundError):
        load_spec(tmp_path / "missing.json")
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(SpecError, match="mapping"):
        load_spec(tmp_path / "list.json")


def test_a_row_runs_the_same_every_time_and_seeds_differ():
    row = one_row(
        subscription_type="Key_Shared",
        messages=300,
        keys=20,
        consumers=3,
        nack_rate=0.1,
        consumer_churn_every_ms=100,
        crash_rate=0.01,
        seeds=[7],
    )
    a, b = run_row(row), run_row(row)
    assert a.events.digest() == b.events.digest()
    other = one_row(
        subscription_type="Key_Shared",
        messages=300,
        keys=20,
        consumers=3,
        nack_rate=0.1,
        consumer_churn_every_ms=100,
        crash_rate=0.01,
        seeds=[8],
    )
    assert run_row(other).events.digest() != a.events.digest()


def test_a_quiet_shared_run_delivers_everything_once_in_order():
    result = run_row(one_row(messages=400, keys=1, consumers=1, seeds=[1]))
    m = run_metrics(result.events.columns())
    assert result.settled
    assert set(m) == set(METRIC_COLUMNS)
    assert m["published"] == m["received"] == m["acked"] == 400
    assert m["duplicates"] == m["out_of_order"] == m["redeliveries"] == m["dead_lettered"] == 0
    assert m["md_covered_entries"] == 400 and m["blocked_hash_episodes"] == 0


def test_every_message_nacked_ends_in_the_dead_letter_topic():
    result = run_row(
        one_row(messages=50, nack_rate=1.0, max_redeliver_count=2, seeds=[3], negative_ack_redelivery_delay_ms=100)
    )
    m = run_metrics(result.events.columns())
    assert result.settled
    assert m["dead_lettered"] == 50 and m["acked"] == 0
    # delivered once, then redelivered twice (counts 1 and 2) before the third redelivery goes to the DLQ
    assert m["received"] == 150 and m["duplicates"] == 100 and m["redeliveries"] == 100


def _ranges_brute_force(cols) -> int:
    """Max over the log of the individually-deleted range count, recomputed from scratch after every event."""
    d_seq, _, (d_c, d_l, d_e) = _select(cols, "individually_deleted", "cursor", "ledger", "entry")
    m_seq, _, (m_c, m_l, m_e) = _select(cols, "mark_delete_moved", "cursor", "to_ledger", "to_entry")
    ops = sorted(
        [(s, 0, c, position(ld, e)) for s, c, ld, e in zip(d_seq, d_c, d_l, d_e)]
        + [(s, 1, c, position(ld, e)) for s, c, ld, e in zip(m_seq, m_c, m_l, m_e)]
    )
    held, marks, best = {}, {}, 0
    for _s, op, c, pos in ops:
        s = held.setdefault(c, set())
        if op == 0 and pos > marks.get(c, -1):
            s.add(pos)
        elif op == 1:
            marks[c] = max(marks.get(c, -1), pos)
            s.difference_update({x for x in s if x <= pos})
        count = sum(1 for x in s if (x & 0xFFFFFFFF) == 0 or x - 1 not in s)
        best = max(best, count)
    return best


@pytest.mark.parametrize(
    "fields",
    [
        dict(subscription_type="Shared", nack_rate=0.2, consumers=3, crash_rate=0.01),
        dict(subscription_type="Key_Shared", nack_rate=0.05, consumer_churn_every_ms=150, versions=["3.0"]),
        dict(subscription_type="Shared", partitions=2, nack_rate=0.1, batching=True, batching_max_messages=5),
        dict(subscription_type="Failover", consumers=2, consumer_churn_every_ms=200, crash_rate=0.02),
    ],
)
def test_metric_definitions_hold_on_varied_runs(fields):
    result = run_row(one_row(messages=300, keys=10, seeds=[2], **fields))
    cols = result.events.columns()
    m = run_metrics(cols)
    assert m["max_ack_holes"] == _ranges_brute_force(cols)
    _, _, (msg, key) = _select(cols, "app_received", "msg", "key")
    assert m["duplicates"] == len(msg) - len(set(msg.tolist()))
    seen: dict[int, list[int]] = {}
    late = 0
    for number, k in zip(msg.tolist(), key.tolist()):
        late += any(other > number for other in seen.get(k, ()))
        seen.setdefault(k, []).append(number)
    assert m["out_of_order"] == late
    assert m["published"] == 300 and m["acked"] + m["dead_lettered"] >= len(set(msg.tolist())) - m["crashed"]
    assert m["md_lag_ms_p50"] <= m["md_lag_ms_p90"] <= m["md_lag_ms_p99"] <= m["md_lag_ms_max"]


def test_nearest_rank_percentiles():
    values = np.array([5, 1, 4, 2, 3])
    assert [nearest_rank(values, p) for p in (1, 20, 21, 50, 99, 100)] == [1, 1, 2, 3, 5, 5]
    assert nearest_rank(np.arange(10, dtype=np.int64), 90) == 8
