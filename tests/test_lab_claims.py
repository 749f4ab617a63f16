"""What the labs' text states is what their cells print: each test runs the lab's own cells (imports first) and
checks the printed figures against the sentence that states them (issue 13, "Sentences that are wrong").

The cells run in this process, not in a kernel (`tests/test_notebooks.py` runs whole notebooks); figures'
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

LABS = Path(__file__).resolve().parents[1] / "labs"


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


def run_cells(lab: str, *cell_ids: str) -> str:
    """Run the lab's first code cell (its imports) and then the given code cells; return what they print."""
    import plotly.basedatatypes

    first = next(c for c in _notebook(lab)["cells"] if c["cell_type"] == "code")
    sources = ["".join(first["source"])] + ["".join(_cell(lab, cid)["source"]) for cid in cell_ids]
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
    return out.getvalue()


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

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide" / "what-you-may-have-read.md"
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


# lab 10's exercise reads a served run of a real client (tests/test_notebooks.py runs it); checked below on its own
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
