"""What the labs' text states is what their cells print: each test runs the lab's own cells (imports first) and
checks the printed figures against the sentence that states them (issue 13, "Sentences that are wrong").

The cells run in this process, not in a kernel (`tests/labs/test_notebooks.py` runs whole notebooks); figures'
``show()`` is a no-op here. Where a cell needs Spark, the test computes the same figure with the model function
the Spark job runs (`distribution_metrics`, `run_tracker_workload`), which the Spark tests hold equal.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from exercise_support import where_to_look

import pulsarlab as pl
from pulsarlab.exercises.check import NOT_ANSWERED
from pulsarlab.exercises.solutions import SOLUTIONS

LABS = Path(__file__).resolve().parents[2] / "labs"


def _notebook(lab: str) -> dict:
    (path,) = LABS.glob(f"{lab}-*.ipynb")
    return json.loads(path.read_text())


def _cell(lab: str, cell_id: str) -> dict:
    for cell in _notebook(lab)["cells"]:
        if cell["id"] == cell_id:
            return cell
    raise KeyError(f"lab {lab} has no cell {cell_id}")


def markdown(lab: str, cell_id: str) -> str:
    """The text of a markdown cell, with line breaks joined to spaces."""
    return " ".join("".join(_cell(lab, cell_id)["source"]).split())


def _execute(lab: str, sources: list[str]) -> tuple[str, dict]:
    """Run code sources in one namespace from the labs folder, figures' show() a no-op; return what they print
    and the namespace."""
    import plotly.basedatatypes

    namespace: dict = {"__name__": f"lab_{lab}"}
    out = io.StringIO()
    cwd = os.getcwd()
    show = plotly.basedatatypes.BaseFigure.show
    try:
        os.chdir(LABS)
        plotly.basedatatypes.BaseFigure.show = lambda *args, **kwargs: None
        with contextlib.redirect_stdout(out):
            for source in sources:
                exec(compile(source, f"<lab {lab}>", "exec"), namespace)
    finally:
        plotly.basedatatypes.BaseFigure.show = show
        os.chdir(cwd)
    return out.getvalue(), namespace


def run_cells(lab: str, *cell_ids: str) -> str:
    """Run the lab's first code cell (its imports) and then the given code cells; return what they print."""
    first = next(c for c in _notebook(lab)["cells"] if c["cell_type"] == "code")
    sources = ["".join(first["source"])] + ["".join(_cell(lab, cid)["source"]) for cid in cell_ids]
    return _execute(lab, sources)[0]


# --- lab 01: the ring's imbalance -----------------------------------------------------------------------------


def test_lab01_ring_imbalance_figures_are_the_tables():
    from pulsarlab.scenarios.distribution import distribution_metrics, sequential_keys

    source = "".join(_cell("01", "c693d819")["source"])
    assert "key_distribution(spark, 200_000" in source and "consumer_counts=(2, 3, 5, 8)" in source
    keys = sequential_keys(0, 200_000)  # the keys the Spark job generates for n_keys=200_000
    above = {
        n: round((distribution_metrics(keys, "consistent_hashing", n, "4.0")["imbalance"] - 1) * 100, 1)
        for n in (2, 3, 5, 8)
    }
    text = markdown("01", "0f29d280")
    stated = re.search(r"([\d.]+) % above at 2 consumers, ([\d.]+) % at 3 and at 8, ([\d.]+) % at 5", text).groups()
    assert [float(x) for x in stated] == [above[2], above[3], above[5]] and above[3] == above[8]
    assert "within 20 % of even" in text and max(above.values()) < 20


# --- lab 02: is_active before the first notice ------------------------------------------------------------------


def test_lab02_is_active_is_none_until_the_first_notice():
    printed = run_cells("02", "lab02-05")
    assert "told at t=0 ms?  None None" in printed
    assert re.search(r"told at t=1000 ms\? (True False|False True)", printed)
    assert "It is `None` until the first `ACTIVE_CONSUMER_CHANGE`" in markdown("02", "lab02-04")


# --- lab 03: numberOfEntriesSinceFirstNotAckedMessage, batch-index acks on 4.1 ----------------------------------


def test_lab03_entries_since_first_not_acked_is_one_more_than_the_entries_read():
    printed = run_cells("03", "927dbbcc")
    cursor = json.loads(printed)["cursors"]["audit"]
    stated = int(
        re.search(r"here (\d+) entries after `3:0` were read, so it says (\d+)", markdown("03", "c170a42b"))[2]
    )
    assert cursor["markDeletePosition"] == "3:0" and cursor["readPosition"] == "4:3"
    read_after_mark_delete = 5  # 3:1, 3:2, 4:0, 4:1, 4:2 (three entries per ledger)
    assert cursor["numberOfEntriesSinceFirstNotAckedMessage"] == stated == read_after_mark_delete + 1


def test_lab03_python_client_keeps_batch_index_acks_off_on_41():
    printed = run_cells("03", "7605f030")
    whole = "['order-0', 'order-1', 'order-2', 'order-3', 'order-4']"
    assert f"Pulsar 4.0, Python client default: c2 receives {whole}" in printed
    assert f"Pulsar 4.1, Python client default: c2 receives {whole}" in printed
    assert "Pulsar 4.1, batch_index_ack_enabled=True: c2 receives ['order-2', 'order-4']" in printed
    assert pl.get_profile("4.1").batch_index_ack_enabled is False  # the Python client's default


# --- lab 04: close() flushes the grouping tracker, a crash does not ---------------------------------------------


def test_lab04_close_flushes_grouped_acks_and_a_crash_loses_them():
    lines = run_cells("04", "teach-04-close-vs-crash").splitlines()
    assert re.fullmatch(r"c\d closes with 3 acks in its tracker; c\d then gets \['m3', 'm4', 'm5'\]", lines[0])
    assert re.fullmatch(
        r"c\d crashes with 3 acks in its tracker; c\d then gets \['m0', 'm1', 'm2', 'm3', 'm4', 'm5'\]", lines[1]
    )
    assert "including acks still waiting" not in markdown("04", "8addaa4f")


# --- lab 07: #20750 counts, ORIGIN_MESSAGE_IDY_TIME -------------------------------------------------------------


def test_lab07_20750_counts_are_the_ones_the_text_explains():
    printed = run_cells("07", "lab07-26")
    text = markdown("07", "lab07-25")
    assert re.search(
        r"4\.0 +still in the ack-timeout tracker after 10 nacks:  0; deliveries before the ack: 10", printed
    )
    assert re.search(
        r"3\.0\.3 +still in the ack-timeout tracker after 10 nacks: 10; deliveries before the ack: 20", printed
    )
    assert re.search(r"4\.0 with the bug +still in .*: 10; deliveries before the ack: 30", printed)
    assert "job-1 came back at t=3000 (count 1)\n" in printed
    assert "job-1 came back at t=2000 (count 1), t=4000 (count 3)\n" in printed
    assert "job-1 came back at t=2000 (count 1), t=3000 (count 2), t=4000 (count 3)\n" in printed
    assert "10 deliveries" in text and "30 in all" in text and "20 in all" in text


def test_lab07_printed_retry_properties_include_the_legacy_key():
    printed = run_cells("07", "lab07-22")
    dlq = eval(printed.split("DLQ: ", 1)[1].splitlines()[0])  # the printed dict
    assert dlq["ORIGIN_MESSAGE_IDY_TIME"] == dlq["ORIGIN_MESSAGE_ID"]
    assert "`ORIGIN_MESSAGE_IDY_TIME`, a misspelt legacy key" in markdown("07", "lab07-21")


# --- lab 08: expiry after 1-2 minutes, an evicted message with the ack timeout off ------------------------------


def test_lab08_incomplete_message_expires_between_one_and_two_minutes():
    printed = run_cells("08", "c48d362a")
    expired_at = int(re.search(r"t = (\d+): consumer reader expired incomplete flaky-0", printed)[1])
    assert 60_000 < expired_at <= 120_000 + 25
    assert "1 to 2 minutes after its first chunk" in markdown("08", "842ce97d")
    assert "1 to 2 minutes" in markdown("08", "6e83594f")


def test_lab08_evicted_message_stays_unacknowledged_without_ack_timeout():
    printed = run_cells("08", "teach-08-evicted-no-ack-timeout-code")
    assert "t = 300100: markDeletePosition 3:-1" in printed
    assert "after redeliver_unacknowledged_messages(): ['3:0:-1;3:6:-1']" in printed
    assert "the ack timeout (`unacked_messages_timeout_ms`) is **off by default**" in markdown("08", "842ce97d")


# --- lab 09: Failover 0 ms, 4.1's early release, bytes per message ----------------------------------------------


def test_lab09_failover_receives_at_once_only_after_its_first_read_delay():
    printed = run_cells("09", "e75c736b")
    assert "Failover   receives it at t = 2000 ms" in printed  # sent at t = 2000
    assert "sent 2 s after they subscribed" in markdown("09", "5d9c86cb")
    assert "reaches the Failover consumer at t = 1000" in markdown("09", "5d9c86cb")
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    failover = client.subscribe("jobs", "sub", consumer_type=pl.ConsumerType.Failover)
    client.create_producer("jobs").send(b"job", deliver_after=timedelta(seconds=30))
    assert failover.receive(timeout_millis=5000) is not None and lab.now() == 1000


def test_lab09_41_releases_early_and_the_recheck_uses_the_same_cutoff():
    printed = run_cells("09", "2b6d1e3c")
    assert "(1024, 'after 1500 ms')" in printed and "(2048, 'after 3000 ms')" in printed
    text = markdown("09", "696cb586")
    assert "`after 1500 ms` arrives at t = 1024 and `after 3000 ms` at t = 2048" in text


def test_lab09_bytes_per_held_message_are_the_tables():
    from pulsarlab.scenarios.delayed_workload import run_tracker_workload

    source = "".join(_cell("09", "68901597")["source"])
    assert 'entries_per_ledger=2_000, broker_config={"delayedDeliveryMinIndexCountPerBucket": 2_000}' in source
    per_message = {}
    for n in (1_000, 5_000, 20_000):
        for spread in (600_000, 86_400_000):
            row = run_tracker_workload(
                "in-memory",
                n,
                spread,
                0,
                entries_per_ledger=2_000,
                broker_config={"delayedDeliveryMinIndexCountPerBucket": 2_000},
            ).as_dict()
            per_message[n] = round(row["memory_bytes"] / n)
            assert 24 < row["memory_bytes"] / n <= 36
    section_3, section_6 = markdown("09", "59b4594d"), markdown("09", "f960be53")
    assert f"{per_message[1_000]} at 1,000 and 5,000 messages, {per_message[20_000]} at 20,000" in section_3
    assert f"{per_message[1_000]} bytes per message at 1,000 and 5,000 messages, {per_message[20_000]} at 20,000" in (
        section_6
    )
    assert per_message[1_000] == per_message[5_000]


@pytest.mark.parametrize("lab", ["10"])
def test_lab10_names_the_right_pips(lab):
    text = markdown(lab, "7b821adb")
    assert "hashing (PIP-119" in text and "consistent hashing (PIP-379)" not in text


# --- "What you may have read" boxes ---------------------------------------------------------------------------

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "what-you-may-have-read.md"
BOX = "> **What you may have read:**"
# the beliefs issue 13 names, and the lab whose box bridges each
BELIEF_LABS = {
    "01": {"autosplit-figure", "ring-points-1-100"},
    "02": {"flow-more-than-half"},
    "03": {"ack-sets-for-chunks"},
    "04": {"failover-first-connected"},
    "07": {"redelivery-tracker-replay-set", "rlq-dlq-names"},
    "08": {"chunk-count-formula"},
    "09": {"cursor-property-format"},
}


def _boxes(lab: str) -> list[tuple[str, dict]]:
    """(anchor, the code cell after the box) for every box of a lab."""
    cells = _notebook(lab)["cells"]
    out = []
    for i, cell in enumerate(cells):
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and text.startswith(BOX):
            (anchor,) = re.findall(r"what-you-may-have-read\.md#belief-([a-z0-9-]+)\)", text)
            out.append((anchor, cells[i + 1]))
    return out


@pytest.mark.parametrize("lab", sorted(BELIEF_LABS))
def test_belief_boxes_link_to_the_guide_and_show_the_model(lab):
    anchors = set(re.findall(r'<a id="belief-([a-z0-9-]+)"></a>', GUIDE.read_text()))
    boxes = _boxes(lab)
    assert BELIEF_LABS[lab] <= {a for a, _ in boxes}
    for anchor, code in boxes:
        assert anchor in anchors, f"lab {lab} links to a missing anchor belief-{anchor}"
        assert code["cell_type"] == "code", f"the box on {anchor} in lab {lab} has no cell that shows the model"


def test_belief_cells_show_what_the_boxes_say():
    autosplit, points = run_cells("01", "belief-01-autosplit-figure-code", "belief-01-ring-points-code").split("\n", 1)
    assert [name for name in re.findall(r"\('(c\d)'", autosplit)] == ["c3", "c2", "c4", "c1"]
    assert "'c1\\x000\\x000' ... 'c1\\x000\\x0099'" in points  # 3.0.7+ / 4.0: points 0..99
    flows = run_cells("02", "belief-02-flow-half-code")
    assert "receiver_queue_size=1000: FLOW(500) goes out on receive() number 500" in flows
    assert "receiver_queue_size=   1: FLOW(1) goes out on receive() number 1" in flows
    acks = run_cells("03", "belief-03-ack-sets-code")
    assert "batch-index acks (entry: ack set): {'3:0': '101'}" in acks
    assert "whole-entry acks of ['3:1:-1', '3:2:-1', '3:3:-1']" in acks
    actives = re.findall(r"active (c\d)", run_cells("04", "belief-04-first-connected-code"))
    assert len(actives) == 6 and len(set(actives)) == 1  # the same consumer whatever the order of connection
    names = run_cells("07", "belief-07-topic-names-code")
    assert "['orders', 'orders-shipping-DLQ', 'orders-shipping-RETRY']" in names
    assert "replay set (MessageRedeliveryController): ['3:0'] - msgInReplay 1" in run_cells(
        "07", "belief-07-replay-set-code"
    )
    chunks = run_cells("08", "belief-08-chunk-count-code")
    assert chunks.count("-> 2 chunks") == 2
    assert "4.1 subscriptionKeySharedUseConsistentHashing = True" in run_cells("01", "belief-01-autosplit-default-code")
    assert (
        "4.1: broker acknowledgmentAtBatchIndexLevelEnabled = True, client batch_index_ack_enabled default = False"
        in (run_cells("03", "belief-03-partial-batch-code"))
    )
    nack = run_cells("07", "belief-07-nack-delay-code")
    late = [int(x) for x in re.search(r"3\.0: redelivered \[([-\d, ]+)\]", nack)[1].split(",")]
    early = [int(x) for x in re.search(r"4\.0: redelivered \[([-\d, ]+)\]", nack)[1].split(",")]
    assert all(0 <= d <= 1000 // 3 for d in late) and all(-255 <= d <= 0 for d in early) and min(early) < 0
    dlq = run_cells("07", "belief-07-dlq-ack-timeout-code")
    assert "2.10: ack timeout 30000 ms" in dlq and "3.0: no ack timeout" in dlq
    assert "InMemoryDelayedDeliveryTrackerFactory" in run_cells("09", "belief-09-bucket-default-code")
    assert "Exclusive redelivery counts [0, 0, 0, 0, 0]; dead-lettered: 0" in run_cells(
        "07", "belief-07-dlq-every-type-code"
    )
    assert "$ConsumerBusyException" in run_cells("02", "belief-02-exclusive-error-code")
    mod = run_cells("04", "e64fc808", "abe36617", "belief-04-mod-index-code")
    assert len(re.findall(r"-> (\w); the broker says \1\n", mod)) == 4
    assert "chunks a consumer had to discard (a message split over consumers would need that): 0" in run_cells(
        "08", "c0b0522c", "belief-08-chunks-shared-code"
    )
    props = run_cells("09", "c4bd28e0", "belief-09-cursor-property-code")
    assert "(stored: False)" not in props and "#pulsar.internal.delayed.bucket_3_6': ledgers 3..6" in props
    assert "bucket keys in stats-internal: []" in props


# --- lab 09 §4: the bucket walkthrough shows what it describes ---------------------------------------------------


def test_lab09_bucket_walkthrough_has_segments_in_storage_loads_and_a_merge():
    printed = run_cells("09", "c4bd28e0", "ffa350fe")
    sealed = re.findall(r"sealed: (\d+) indexes in (\d+) segment\(s\)", printed)
    assert len(sealed) >= 3 and all(int(segments) >= 2 for _, segments in sealed)  # several segments per bucket
    assert re.search(r"3 adjacent buckets merged into \[3, 6\]", printed)  # delayedDeliveryMaxNumBuckets=2
    loads = re.findall(r"t = +(\d+): .* loaded segment (\d)/(\d)", printed)
    assert loads and all(int(t) > 0 for t, _, _ in loads)  # held only in storage until then
    assert "deleted (all indexes delivered)" in printed
    text = markdown("09", "971dc723")
    assert "`delayedDeliveryMaxNumBuckets=2`" in text and "held **only in storage**" in text
    source = "".join(_cell("09", "ffa350fe")["source"])
    assert "jump to segment_loaded" in source


# --- the exercises on mechanisms (pulsarlab.exercises.mechanisms): shipped unsolved, solved by solutions ---------


def _answer_cell(stem: str, name: str) -> dict:
    (path,) = LABS.glob(f"{stem}.ipynb")
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    (cell,) = [c for c in cells if re.search(rf"^{name} = ", "".join(c["source"]), re.M)]
    return cell


def _check(stem: str, name: str, answer_source: str | None) -> Any:
    """Run the lab's imports and the answer cell (its answer line replaced unless None); return the checker's result."""
    import plotly.basedatatypes

    lab = stem.split("-")[0]
    source = "".join(_answer_cell(stem, name)["source"])
    if answer_source is not None:
        source = re.sub(rf"^{name} = .*$", f"{name} = {answer_source}", source, count=1, flags=re.M)
    *body, last = source.rstrip().split("\n")
    first = next(c for c in _notebook(lab)["cells"] if c["cell_type"] == "code")
    namespace: dict = {"__name__": f"lab_{lab}"}
    show = plotly.basedatatypes.BaseFigure.show
    cwd = os.getcwd()
    try:
        os.chdir(LABS)
        plotly.basedatatypes.BaseFigure.show = lambda *args, **kwargs: None
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile("".join(first["source"]), "<imports>", "exec"), namespace)
            if "bucket_conf" in last:
                exec(compile("".join(_cell(lab, "c4bd28e0")["source"]), "<bucket_conf>", "exec"), namespace)
            exec(compile("\n".join(body), "<answer cell>", "exec"), namespace)
            return eval(compile(last, "<checker>", "eval"), namespace)
    finally:
        plotly.basedatatypes.BaseFigure.show = show
        os.chdir(cwd)


# lab 10's exercise reads a served run of a real client (tests/labs/test_notebooks.py runs it); checked below on its own
TEACH_EXERCISES = [
    (stem, name)
    for stem, answers in sorted(SOLUTIONS.items())
    if not stem.startswith("10-")
    for name in answers
    if "exercises.mechanisms" in "".join(_answer_cell(stem, name)["source"])
]


def test_labs_01_to_09_each_have_an_exercise_on_mechanisms():
    assert [stem[:2] for stem, _ in TEACH_EXERCISES] == [f"{n:02d}" for n in range(1, 10)], TEACH_EXERCISES


@pytest.mark.parametrize(("stem", "name"), TEACH_EXERCISES)
def test_new_exercise_ships_unsolved_and_the_solution_passes(stem, name):
    source = "".join(_answer_cell(stem, name)["source"])
    assert re.search(rf"^{name} = \.\.\.$", source, re.M), f"{stem} {name} must ship as `{name} = ...`"
    unsolved = _check(stem, name, None)
    assert not unsolved and not unsolved.answered and str(unsolved).startswith(f"{NOT_ANSWERED}: write "), str(unsolved)
    solved = _check(stem, name, repr(SOLUTIONS[stem][name].value))
    assert solved and str(solved).startswith("OK"), str(solved)


@pytest.mark.parametrize(("stem", "name"), TEACH_EXERCISES)
def test_new_exercise_says_what_is_wrong(stem, name):
    right = SOLUTIONS[stem][name].value
    if isinstance(right, dict):
        key = sorted(right)[0]
        wrong = {**right, key: "nonsense"}
    else:
        wrong = right + 1 if isinstance(right, int) else "nonsense"
    result = _check(stem, name, repr(wrong))
    assert not result and str(result).startswith("Not yet"), str(result)
    assert "nonsense" in str(result) or str(wrong) in str(result)
    where_to_look(result, int(stem[:2]))


def test_lab04_docs_examples_with_two_and_nine_partitions():
    printed = run_cells("04", "teach-04-two-and-nine-code")
    assert "2 partitions, consumers ['A', 'B', 'C', 'D']: active per partition ['A', 'B']" in printed
    assert "A and B leave: active per partition ['C', 'D']" in printed
    assert "active per partition ['A', 'B', 'C', 'A', 'B', 'C', 'A', 'B', 'C']" in printed
    text = markdown("04", "teach-04-two-and-nine")
    assert "P0 → C, P1 → D" in text and "P0, P3, P6 → A; P1, P4, P7 → B; P2, P5, P8 → C" in text


def test_lab10_exercise_ships_unsolved_and_checks_the_served_runs_figures():
    from pulsarlab.exercises.mechanisms import check_app_outcome

    assert re.search(r"^answer_1 = \.\.\.$", "".join(_answer_cell("10-watch-your-app", "answer_1")["source"]), re.M)
    stats = {"msgInCounter": 60, "subscriptions": {"workers": {"msgBacklog": 0}}}
    reasons = {"crasher": "disconnected", "steady": "closed", "nacker": "closed"}
    assert str(check_app_outcome(..., stats, reasons)).startswith(f"{NOT_ANSWERED}: write ")
    right = SOLUTIONS["10-watch-your-app"]["answer_1"].value
    assert check_app_outcome(right, stats, reasons)
    wrong = check_app_outcome({**right, "crasher_closed": "closed"}, stats, reasons)
    assert not wrong and "CLOSE_CONSUMER" in str(wrong)
    assert "What happened, from the event log" in where_to_look(wrong, 10)
    busy = {"msgInCounter": 60, "subscriptions": {"workers": {"msgBacklog": 3}}}
    assert not check_app_outcome(right, busy, reasons)


# --- issue 22, "Every sentence true": each sentence below states a figure, position, count or text of the model's
# output; the test runs the cell (or the model function the sentence names) and compares -----------------------

GUIDE_DIR = Path(__file__).resolve().parents[2] / "docs" / "guide"
README = Path(__file__).resolve().parents[2] / "README.md"
SPARK_CELL = re.compile(r"get_session|key_distribution\(spark|delayed_sweep\(spark|sweep\(spark")


def run_through(lab: str, last: str) -> tuple[str, dict]:
    """Run the lab's code cells in order up to and including ``last`` (exercise answer cells and Spark cells
    skipped); return what they printed and their namespace."""
    sources = []
    for cell in _notebook(lab)["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and not re.search(r"^answer_\d+ = \.\.\.$", text, re.M):
            if not SPARK_CELL.search(text):
                sources.append(text)
        if cell["id"] == last:
            return _execute(lab, sources)
    raise KeyError(f"lab {lab} has no cell {last}")


def guide(page: str) -> str:
    """A guide page with line breaks joined to spaces."""
    return " ".join((GUIDE_DIR / page).read_text(encoding="utf-8").split())


def test_lab04_a_join_changes_the_active_consumer_only_between_the_topic_hash_and_the_owners_point():
    from bisect import bisect_left

    from pulsarlab.broker.dispatch.failover import ring_index, ring_points, topic_hash

    text = markdown("04", "6060f25c")
    assert "lands between the topic's hash and the current owner's point" in text and "just before" not in text
    h = topic_hash("persistent://public/default/my-topic")
    names = ["c1", "c2", "c3"]
    points = sorted(p for name in names for p in ring_points(name))
    owner_point = points[bisect_left(points, h) % len(points)]
    changed = 0
    for n in range(300):
        newcomer = f"joiner-{n}"
        before, after = names[ring_index(names, h)], (names + [newcomer])[ring_index(names + [newcomer], h)]
        between = [
            p
            for p in ring_points(newcomer)
            if (h <= p < owner_point if h <= owner_point else (p >= h or p < owner_point))
        ]
        assert (after != before) == bool(between), newcomer
        changed += after != before
    assert changed > 0
    # "over many topics ... 1 join in 4 when 3 consumers are there"
    assert "1 join in 4 when 3 consumers are there: most joins leave the active consumer alone" in text
    joins = [(t, n) for t in range(300) for n in range(10)]
    moved = 0
    for t, n in joins:
        topic = topic_hash(f"persistent://public/default/topic-{t}")
        with_newcomer = names + [f"joiner-{n}"]
        moved += with_newcomer[ring_index(with_newcomer, topic)] != names[ring_index(names, topic)]
    assert abs(moved / len(joins) - 1 / 4) < 0.03, moved / len(joins)
    assert "owns the first point at or after it" in markdown("04", "teach-04-ring-view")


def test_lab11_30_releases_a_joined_consumer_at_the_mark_delete_position():
    text = markdown("11", "71cdc963")
    assert "**mark-delete position** passes the read position at which the new consumer joined" in text
    assert "read position passes" not in text
    printed, _ = run_through("05", "lab05-20")
    released = printed.strip().splitlines()[-1]
    stated = re.fullmatch(r"mark-delete (\S+) \| consumersAfterMarkDeletePosition \{\} \| c2 holds \[(.+)\]", released)
    assert stated, released  # c2 is released only once the mark-delete position passed its join position
    assert "until the mark-delete position moves past it" in markdown("05", "lab05-04")


def test_lab02_only_a_join_that_changes_the_active_consumer_waits():
    printed = run_cells("02", "lab02-05")
    active = re.search(r"active: (\w)", printed)[1]
    other = "a" if active == "b" else "b"
    assert "told at t=0 ms?  None None" in printed
    told = dict(zip("ab", re.search(r"told at t=1000 ms\? (\w+) (\w+)", printed).groups()))
    text = markdown("02", "lab02-04")
    assert f"`b`'s join moves the ring to `{active}`" in text
    assert f"at t = 1000 `{active}` is told `{told[active]}` and `{other}` `{told[other]}`" in text
    assert told[active] == "True" and told[other] == "False"
    assert "even to the very first consumers" not in text
    # "a join that leaves it alone is told at once (`False`, lab 4 §4 shows one)"
    assert "a join that leaves it alone is told at once (`False`, lab 4 §4 shows one)" in text
    lab04 = run_cells("04", "092ae592", "06e6f3c2")
    assert re.search(r"t = +0 +consumer c2 told it is active = False", lab04)
    assert _section_of("04", "06e6f3c2") == 4


def _section_of(lab: str, cell_id: str) -> int:
    """The number of the ``## k.`` section a cell is in."""
    section = 0
    for cell in _notebook(lab)["cells"]:
        heading = re.search(r"^## (\d+)\.", "".join(cell["source"]), re.M) if cell["cell_type"] == "markdown" else None
        if heading:
            section = int(heading[1])
        if cell["id"] == cell_id:
            return section
    raise KeyError(cell_id)


def test_lab09_bytes_per_held_message_say_from_when_the_range_holds():
    from pulsarlab.broker.delayed.jvm_memory import bytes_capacity

    text = markdown("09", "59b4594d")
    first, first_bytes, shown_bytes, shown_messages, doubled_to, from_n, low, high = (
        int(x)
        for x in re.search(
            r"starts at (\d+) entries \((\d+) bytes, however few are held: the fixed-delay cell below shows (\d+) "
            r"bytes for (\d+) messages\), doubles up to (\d+) entries and then grows by 50 % at a time, so from "
            r"(\d+) held messages on the bytes per held message lie between (\d+) and (\d+)",
            text,
        ).groups()
    )
    assert bytes_capacity(1) == bytes_capacity(first) == first_bytes == first * 24 < bytes_capacity(first + 1)
    assert bytes_capacity(doubled_to) == 2 * bytes_capacity(doubled_to // 2) and bytes_capacity(doubled_to + 1) == (
        bytes_capacity(doubled_to) * 3 // 2
    )
    ratios = {n: bytes_capacity(n) / n for n in range(1, 200_000)}
    assert all(low <= r <= high for n, r in ratios.items() if n >= from_n) and ratios[from_n - 1] > high
    stats = eval(run_cells("09", "ca313a99").splitlines()[0])
    assert (stats["delayedMessageIndexSizeInBytes"], stats["msgDelayed"]) == (shown_bytes, shown_messages)


def test_lab05_30_text_names_the_messages_that_were_acknowledged():
    printed, _ = run_through("05", "lab05-18")
    acked = eval(re.search(r"3\.0: c1 acknowledged (\[[^]]*\])", printed)[1])
    before_join = [f"m{i}" for i in range(8)]  # m8.. arrived after c2 joined (the table above says so)
    assert "after c2 joined" in printed and re.search(r"\n7 +m7 .* before c2 joined", printed)
    text = markdown("05", "lab05-19")
    waiting = re.search(r"(`m\d+`(?:(?:, | and )`m\d+`)*) wait in `individuallyDeletedMessages`", text)[1]
    unacked = re.search(r"but (`m\d+`(?:(?:, | and )`m\d+`)*) \(other keys\) are still unacknowledged", text)[1]
    assert re.findall(r"m\d+", waiting) == [m for m in acked if m != "m0"]
    assert re.findall(r"m\d+", unacked) == [m for m in before_join if m not in acked]


def test_lab06_the_ack_that_takes_10_to_9_unblocks_and_every_text_agrees():
    _, ns = run_through("06", "lab06-27")
    rows = ns["rows"]
    limit = ns["lab"].config["maxUnackedMessagesPerConsumer"]
    unblocked = next(i for i, row in enumerate(rows) if not row["blockedConsumerOnUnackedMsgs"])
    still, after = rows[unblocked - 1]["unackedMessages"], rows[unblocked]["unackedMessages"]
    assert (still, after) == (limit // 2, limit // 2 - 1) and rows[unblocked - 1]["blockedConsumerOnUnackedMsgs"]
    text = markdown("06", "lab06-26")
    assert f"at half the limit ({limit // 2} of {limit})" in text
    assert f"still blocked at {still} and unblocked at {after}: the ack that takes {still} to {after}" in text
    assert f"(the `consumer_blocked` event names the {still} it checked)" in text
    event = [e for e in ns["lab"].events.of_kind("consumer_blocked") if not e.blocked][-1]
    assert f"= False ({still} unacked when checked" in event.explain()
    flow = guide("flow-control.md")
    assert "checks `unacked <= max / 2` *before* that ack is subtracted" in flow
    assert "the ack that takes the count from 10 to 9 unblocks (stats then show 9)" in flow and limit == 20
    assert "unblocks once its count, after the ack, is **below** half" in flow


def test_guide_quoted_message_texts_are_the_models():
    """A quoted text the guide gives as what Pulsar prints (it ends with "." or "...") is in the model's code."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (LABS.parent / "pulsarlab").rglob("*.py"))
    quotes = [
        (page.name, q)
        for page in sorted(GUIDE_DIR.glob("*.md"))
        for q in re.findall(r'"([A-Z][^"]{8,}?(?:\.|\.\.\.|…))"', guide(page.name))
    ]
    assert len(quotes) >= 7
    for page, quote in quotes:
        core = quote.rstrip(".…").strip()
        assert core in source, f"{page} quotes {quote!r}, which the model never says"


def test_guide_counts_three_changes_of_the_ring_point_key():
    rows = re.findall(
        r"^\| [^|]*\|[^|]*\|[^|]*\|[^|]*\| `(LEGACY|V3_COUNTERS|V3_IDENTITY|V4)` \|$",
        (GUIDE_DIR / "key-shared-selectors.md").read_text(encoding="utf-8"),
        re.M,
    )
    assert rows == ["LEGACY", "V3_COUNTERS", "V3_IDENTITY", "V4"]
    words = {2: "two", 3: "three", 4: "four"}
    assert f"changed {words[len(rows) - 1]} times ({words[len(rows)]} generations)" in guide("key-shared-selectors.md")
    assert f"**The ring's point keys** changed {words[len(rows) - 1]} times" in markdown("01", "962d3ce3")


def test_lab01_keyless_batch_sequence_id_names_the_client():
    from pulsarlab.client.batching import BatchMessageContainer  # noqa: F401  (the client the lab models)

    for cell_id in ("0bb49740", "teach-01-keyless-key-based"):
        text = markdown("01", cell_id)
        assert "Python (C++) client" in text and "highest" in text, cell_id
    from pulsarlab.exercises.mechanisms import check_keyless_key_based

    hint = str(check_keyless_key_based({"entries": 3, "keyless_consumer": "nonsense"}, ["customer-2", None]))
    assert "Python (C++) client" in hint and "Java key-based sub-batch carries its highest" in hint
    # the model's KEY_BASED entry carries its first message's sequence id: the route the lab prints
    printed = run_cells("01", "teach-01-keyless-key-based-code")
    from pulsarlab.hashing import sticky_key
    from pulsarlab.scenarios.key_shared import KeySharedScenario

    sc = KeySharedScenario("consistent_hashing", "4.0")
    for name in ("c1", "c2", "c3"):
        sc.add(name)
    (keyless,) = sc.select_keys(
        # the keyless sub-batch's first message is the batch's second (sequence id 10 + 1)
        [sticky_key(pl.get_profile("4.0"), producer_name="producer-1", sequence_id=11).decode()],
        record=False,
    )
    assert f"4.0 KEY_BASED entry [None, None] -> {keyless.consumer_name}" in printed


def test_readme_counts_and_version_statements():
    text = " ".join(README.read_text(encoding="utf-8").split())
    words = {2: "Two", 3: "Three", 4: "Four"}
    assert f"{words[len(SOLUTIONS['01-key-shared'])]} exercises are checked by the model" in text
    assert len(list(LABS.glob("[0-9][0-9]-*.ipynb"))) == 11 and "`make site` exports every lab" in text
    assert "(all eleven;" in text and "all ten" not in text
    assert "on 4.1 the broker and the Java client turn them on, the Python client keeps them off" in text
    profile = pl.get_profile("4.1")
    assert profile.broker_config()["acknowledgmentAtBatchIndexLevelEnabled"] and not profile.batch_index_ack_enabled


def test_guide_mark_delete_example_is_lab03s_run():
    printed = run_cells("03", "719c69d1")
    after = dict(re.findall(r"ack (p\d):  markDeletePosition (\S+)", printed))
    text = guide("cursor.md")
    stated = re.search(
        r"ack p4 → position stays at `(\S+)` \(the entry before p1\); ack p1 → `(\S+)`; ack p3 → `(\S+)`; "
        r"ack p2 → \*\*`(\S+)`\*\* \(p4: it jumps over the boundary\); ack p5 → `(\S+)`",
        text,
    ).groups()
    assert list(stated) == [after["p4"], after["p1"], after["p3"], after["p2"], after["p5"]]
    assert "p0" not in text


def test_evicted_chunked_message_acks_only_the_chunks_received():
    printed, _ = run_through("08", "575d73e7")
    dropped = re.search(r"dropped incomplete (\S+) \((\d+) chunk\(s\), queue full\); its chunks were acked", printed)
    uuid, received = dropped[1], int(dropped[2])
    later = re.findall(rf"discarded chunk (\d+) of {re.escape(uuid)} at \S+ \(unknown_uuid\); it was tracked", printed)
    assert received == 1 and later == ["1", "2"]
    chunk_guide = guide("chunked-messages.md")
    assert "the chunks received so far are acked, and its later chunks are discarded on arrival" in chunk_guide
    assert f"shows {received} chunk acked, chunks {later[0]} and {later[1]} tracked" in chunk_guide
    assert "gone for good" not in chunk_guide
    remember = markdown(
        "08", next(c["id"] for c in _notebook("08")["cells"] if "What to remember" in "".join(c["source"]))
    )
    assert "the chunks received so far are acked" in remember and "later chunks are discarded" in remember
    assert "the chunks it received so far are acknowledged" in markdown("08", "842ce97d")


def test_lab03_read_position_past_the_closed_ledger_is_explained_and_shown():
    printed = run_cells("03", "927dbbcc", "teach-03-read-position-code")
    line = re.search(r"lastConfirmedEntry (\S+) \| readPosition (\S+) \| ledgers \(id, entries\) (\[.*\])", printed)
    lce, read, ledgers = line[1], line[2], eval(line[3])
    moved = re.search(r"p7 stored at (\S+), received p7; readPosition now (\S+)", printed)
    text = markdown("03", "teach-03-read-position")
    assert f"**Why `readPosition` is `{read}`.** After reading `{lce}`" in text
    assert f"`lastConfirmedEntry` is still `{lce}`" in text
    assert f"When `p7` is written at `{moved[1]}`" in text and f"the read position becomes `{moved[2]}`" in text
    ledger, entry = (int(x) for x in lce.split(":"))
    assert read == f"{ledger}:{entry + 1}" and ledgers[-1] == (ledger + 1, 0) and moved[1] == f"{ledger + 1}:0"
    assert "The `readPosition` `4:3`" in markdown("03", "c170a42b") and read == "4:3"


def _lab_sections(text: str, lab: str | None = None) -> set[tuple[str, int]]:
    """(lab, section) pairs of "NN §k", "§k-§m" and ", §k" references (a bare §k belongs to the last lab named)."""
    found = set()
    for m in re.finditer(r"(?:(?<!\d)(\d\d) )?§(\d+)(?:-§(\d+))?", text):
        lab = m[1] or lab
        if lab is not None:
            found |= {(lab, k) for k in range(int(m[2]), int(m[3] or m[2]) + 1)}
    return found


def _anchor_lab_lines(page: str, anchor: str) -> str:
    """The "* Lab:" bullet (with its continuation lines) of a guide section."""
    text = (GUIDE_DIR / page).read_text(encoding="utf-8")
    start = text.index(f'<a id="{anchor}"></a>')
    end = text.find('<a id="', start + 1)
    found = re.findall(r"^\* Lab:.*(?:\n  .*)*", text[start : end if end > 0 else len(text)], re.M)
    return " ".join(found)


def test_guide_index_cites_the_sections_its_pages_cite():
    rows = re.findall(
        r"^\| (.+?) \| \[([a-z0-9-]+\.md)#([a-z0-9-]+)\]\([^)]*\) \| (.+?) \|$",
        (GUIDE_DIR / "README.md").read_text(encoding="utf-8"),
        re.M,
    )
    assert len(rows) >= 50
    checked = 0
    for name, page, anchor, labs in rows:
        cited = _lab_sections(_anchor_lab_lines(page, anchor))
        if cited:
            checked += 1
            assert _lab_sections(labs) <= cited, f"index row {name!r} says {labs}; {page}#{anchor} says {cited}"
    assert checked >= 40


def test_lab02_shows_entries_per_round_robin_turn_30_vs_40():
    from pulsarlab.broker.dispatch.entries_per_turn import batch_entries

    printed = run_cells("02", "teach-02-entries-per-turn-code")
    per_version = {}
    for version, first, turns in re.findall(
        r"(\d\.\d): the formula gives (\d+) entries for the first turn; "
        r"turns \(consumer:entries\) (\[.*\])",
        printed,
    ):
        sizes = [int(t.split(":")[1]) for t in eval(turns)]
        assert (
            sizes[0]
            == int(first)
            == batch_entries(version, remaining_messages=400, available_permits=1000, avg_batch_size_per_msg=10)
        )
        assert sum(sizes) == 40
        per_version[version] = int(first)
    text = markdown("02", "teach-02-entries-per-turn")
    assert f"that is {per_version['3.0']} entries a turn on 3.0 and {per_version['4.0']} on 4.0" in text
    assert _section_of("02", "teach-02-entries-per-turn-code") == 3
    page = guide("subscription-types.md")
    assert f"go {per_version['3.0']} entries a turn on 3.0, {per_version['4.0']} on 4.0" in page
    assert "(and 4.0 classic)" not in page and "`subscriptionSharedUseClassicPersistentImplementation=true`" in page
    assert "| Ack receipts | [acknowledgements.md#ack-receipts](acknowledgements.md#ack-receipts) | 03 §4 |" in (
        (GUIDE_DIR / "README.md").read_text(encoding="utf-8")
    )
    assert _section_of("03", "teach-03-command-ack") == 4 and "ack receipt" in markdown("03", "teach-03-command-ack")


def test_lab01_40_reduction_counts_the_values_that_occur():
    printed = run_cells("01", "6dd26c63", "08fc895e")
    occurring = {
        (int(a), int(b)): int(n.replace(",", ""))
        for a, b, n in re.findall(r"4\.0 range \[(\d+), (\d+)\]: ([\d,]+) values occur", printed)
    }
    assert occurring == {(0, 65535): 65535, (1, 65535): 65535}
    text = markdown("01", "bef6b58a")
    assert f"where slot 0 never occurs (its keys get 1), so {occurring[(0, 65535)]:,} values occur" in text
    assert f"`[1, 65535]` (`h % 65535 + 1`, {occurring[(1, 65535)]:,} values)" in text and "65,536" not in text
    remember = markdown("01", "4376c386")
    assert f"where 0 becomes 1: {occurring[(0, 65535)]:,} values occur either way" in remember
    assert "65,536" not in remember


def test_cli_hash_labels_and_profiles_list_every_difference(capsys):
    from pulsarlab.cli import main
    from pulsarlab.hashing import murmur3_32, murmur3_32_raw, reduce_hash
    from pulsarlab.profiles import PROFILES

    main(["hash", "Order-3459134"])
    line = capsys.readouterr().out.strip()
    key = "Order-3459134"
    m = murmur3_32(key)
    assert line == (
        f"'{key}': murmur3 {murmur3_32_raw(key) & 0xFFFFFFFF}, sign bit cleared {m} (Murmur3_32Hash.makeHash); "
        f"3.x: auto-split/sticky slot {m % 65536}, consistent hashing {m}; "
        f"4.x: auto-split/sticky {reduce_hash(m, 0, 65535)}, consistent hashing {reduce_hash(m, 1, 65535)}"
    )
    assert f"murmur3 {murmur3_32_raw(key) & 0xFFFFFFFF:,}".replace(",", "") in markdown("01", "6dd26c63") or (
        "murmur3 {unsigned:,}" in "".join(_cell("01", "6dd26c63")["source"])
    )  # lab 01 calls the unsigned raw value murmur3, as the CLI now does
    main(["profiles"])
    lines = capsys.readouterr().out.splitlines()
    differing = {
        name
        for name in {f for p in PROFILES.values() for f in vars(p)} | set(pl.get_profile().broker_config())
        if name not in ("name", "broker_defaults")
        and len(
            {repr(getattr(p, name, None) if hasattr(p, name) else p.broker_config()[name]) for p in PROFILES.values()}
        )
        > 1
    }
    assert {
        "shared_dispatcher",
        "negative_ack_tracker",
        "delayed_tracker",
        "acknowledgmentAtBatchIndexLevelEnabled",
    } <= (differing)
    for line in lines:
        shown = set(re.findall(r"(?:^|, |: )(\w+)=", line))
        assert differing | {"key_shared_ordering"} == shown, line
    assert "key_shared_ordering=draining hashes (PIP-379)" in lines[[p for p in PROFILES].index("4.0")]


def test_dead_letter_copy_properties_are_listed_in_full():
    printed = run_cells("07", "lab07-17")
    last = printed.strip().splitlines()[-1]
    props = eval(last[last.index("{") :])
    system = sorted(k for k in props if k.isupper())
    assert system == ["ORIGIN_MESSAGE_ID", "ORIGIN_MESSAGE_IDY_TIME", "REAL_SUBSCRIPTION", "REAL_TOPIC"]
    dlq_guide = guide("retry-and-dead-letters.md")
    dlq_section = dlq_guide[dlq_guide.index("## Dead-letter topic") : dlq_guide.index("## Retry topic")]
    lab_text = markdown("07", "lab07-16")
    remember = markdown("07", "lab07-29")
    for text in (dlq_section, lab_text, remember):
        for key in system:
            assert f"`{key}`" in text, (key, text[:80])


def test_range_conflict_texts_have_one_format():
    printed = run_cells("01", "f1e19554")
    lab_client = pl.Lab().client()
    sticky = pl.ConsumerKeySharedPolicy(key_shared_mode=pl.KeySharedMode.Sticky, sticky_ranges=[(0, 100)])
    lab_client.subscribe(
        "t", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c1", key_shared_policy=sticky
    )
    with pytest.raises(Exception, match="Range conflict") as error:
        lab_client.subscribe(
            "t", "s", consumer_type=pl.ConsumerType.KeyShared, consumer_name="c2", key_shared_policy=sticky
        )
    shape = (
        r"Range conflict with consumer Consumer\{subscription=PersistentSubscription\{topic=persistent://public/"
        r"default/[\w-]+, name=[\w-]+\}, consumerId=\d+, consumerName=c\d, address=/127\.0\.0\.1:6650\}"
    )
    assert re.search(shape, printed) and re.search(shape, str(error.value))


def test_exercises_are_numbered_in_the_order_they_appear():
    for path in sorted(LABS.glob("[0-9][0-9]-*.ipynb")):
        headings, answers = [], []
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            text = "".join(cell["source"])
            headings += [int(n) for n in re.findall(r"^### Exercise (\d+)", text, re.M)]
            answers += [int(n) for n in re.findall(r"^answer_(\d+) = \.\.\.$", text, re.M)]
        assert headings == list(range(1, len(headings) + 1)), (path.name, headings)
        assert answers == headings or path.stem.startswith("10-"), (path.name, answers)
        if path.stem in SOLUTIONS:
            assert sorted(SOLUTIONS[path.stem]) == [f"answer_{n}" for n in answers], path.name


def test_exercise_references_name_the_section_the_exercise_is_in():
    """ "(§k, exercise N)" in the learning goals and "NN §k ..., exercise N" in the guide point to where it is."""
    where = {}
    for path in sorted(LABS.glob("[0-9][0-9]-*.ipynb")):
        section = 0
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            text = "".join(cell["source"])
            if heading := re.search(r"^## (\d+)\.", text, re.M):
                section = int(heading[1])
            for n in re.findall(r"^### Exercise (\d+)", text, re.M):
                where[(path.name[:2], int(n))] = section
    goals = (LABS.parent / "docs" / "learning-goals.md").read_text(encoding="utf-8")
    checked = 0
    for lab, block in re.findall(r"^## Lab (\d\d) — .*?\n(.*?)(?=^## |\Z)", goals, re.M | re.S):
        for refs, ex in re.findall(r"\(([^()]*?)exercises? (\d+(?: and \d+)?)", " ".join(block.split())):
            sections = {k for _, k in _lab_sections(refs, lab)}
            if not sections:  # lab 10 names its parts ("stats sections"), not numbered sections
                continue
            for n in re.findall(r"\d+", ex):
                checked += 1
                assert where[(lab, int(n))] in sections, f"learning goals: lab {lab} exercise {n} is not in {refs}"
    for page in sorted(GUIDE_DIR.glob("*.md")):
        for line in re.findall(r"(?:Lab:|Shown in:\*\*) (.*exercises? \d+.*)", page.read_text(encoding="utf-8")):
            lab = re.search(r"(\d\d) §", line)[1]
            refs = {k for _, k in _lab_sections(line.split("exercise")[0], lab)}
            for n in re.findall(r"\d+", line.split("exercise", 1)[1].split(";")[0].split(".")[0]):
                checked += 1
                assert where[(lab, int(n))] in refs, f"{page.name}: lab {lab} exercise {n} is not in {line}"
    assert checked >= 30


def test_lab09_clear_backlog_deletes_the_buckets_it_shows():
    printed = run_cells("09", "c4bd28e0", "teach-09-skip-all-code")
    before = re.search(
        r"before skip_all_messages: snapshot ledgers (\[.*?\]), cursor properties (\[.*?\]), "
        r"msgDelayed (\d+)",
        printed,
    )
    after = re.search(
        r"after skip_all_messages: snapshot ledgers \[\], cursor properties \[\], msgDelayed 0, "
        r"msgBacklog 0",
        printed,
    )
    deleted = re.findall(r"bucket \[\d+, \d+\] deleted \(cleared\); snapshot ledger (\d+)", printed)
    assert after and sorted(int(x) for x in deleted) == eval(before[1]) and len(eval(before[2])) == len(deleted) == 2
    text = markdown("09", "teach-09-skip-all")
    assert "ten\nmessages".replace("\n", " ") in text and "(two sealed buckets, two in the mutable bucket)" in text
    assert int(before[3]) == 10 == 4 * len(deleted) + 2
    assert _section_of("09", "teach-09-skip-all-code") == 4


def test_lab09_due_delayed_message_arrives_after_later_messages_of_its_key():
    printed = run_cells("09", "teach-09-key-order-code")
    arrived = eval(re.search(r"key order-7 arrives as (\[.*\])", printed)[1])
    assert [name for _, name in arrived] == ["m1", "m2", "d0"]
    assert "joins the replay set without a sticky hash" in printed
    times = dict((name, t) for t, name in arrived)
    text = markdown("09", "teach-09-key-order")
    assert f"the consumer gets `m1` and `m2` at t = {times['m1']} and `d0` at t = {times['d0']}" in text
    assert times["m1"] == times["m2"]


def test_lab02_partition_consumer_flow_is_the_per_partition_queue():
    printed = run_cells("02", "teach-02-partition-flow-code")
    rows = {
        int(p): (int(n), eval(f), int(q))
        for p, n, f, q in re.findall(
            r"(\d+) partitions: (\d+) FLOWs of (\[\d+\]) permits; min\(1000, 50000 // \d+\) = (\d+)", printed
        )
    }
    assert rows == {10: (10, [1000], 1000), 100: (100, [500], 500)}
    text = markdown("02", "teach-02-partition-flow")
    assert (
        f"a consumer of 100 partitions sends FLOW({rows[100][2]}) on each partition, one of 10 partitions "
        f"FLOW({rows[10][2]})" in text
    )
    assert "`min(receiver_queue_size, max_total_receiver_queue_size_across_partitions (50000) / partitions)`" in (
        guide("flow-control.md")
    )
