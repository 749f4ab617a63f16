"""Checkers for the acks lab (labs/03-acks-and-the-cursor.ipynb): the cursor's range set, batch redelivery,
and when grouped acks reach the broker.

Models no Pulsar class; every right answer is computed by running the lab's model (docs/guide/acknowledgements.md
for the client's grouping tracker and batch-index acks, docs/guide/cursor.md for `ManagedCursorImpl.asyncDelete`
and the range set). Each checker returns a `CheckResult` that says OK, or what is wrong and which rule was missed.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.lab import Lab
from pulsarlab.protocol.subscription import ConsumerType

_RANGE = re.compile(r"\((-?\d+):(-?\d+)\s*(?:\.\.|\u2025)\s*(-?\d+):(-?\d+)\]")


# ---------------------------------------------------------------------------------------------
# Exercise: mark-delete position and individuallyDeletedMessages after individual acks


def ack_ranges_answer(
    acks: Sequence[int], messages: int = 9, max_entries_per_ledger: int = 3, version: str = "4.0"
) -> tuple[str, str, list[str]]:
    """``(markDeletePosition, individuallyDeletedMessages, message ids)`` after acking ``acks`` in order.

    One Exclusive consumer receives ``messages`` unbatched messages and acknowledges the given indexes
    one by one, each sent at once (``lab_ack_group_time_ms=0``).
    """
    lab = Lab(version=version, broker_config={"managedLedgerMaxEntriesPerLedger": max_entries_per_ledger})
    client = lab.client()
    consumer = client.subscribe("acks", "sub", consumer_name="c1", lab_ack_group_time_ms=0)
    producer = client.create_producer("acks")
    ids = [producer.send(f"m{i}".encode()) for i in range(messages)]
    received = [consumer.receive(0) for _ in range(messages)]
    for i in acks:
        consumer.acknowledge(received[i])
    cursor = lab.admin.topics.stats_internal("acks")["cursors"]["sub"]
    positions = [f"{m.ledger}:{m.entry}" for m in ids]
    return cursor["markDeletePosition"], cursor["individuallyDeletedMessages"], positions


def _parse(text: str) -> list[tuple[int, int, int, int]] | None:
    if not isinstance(text, str) or not text.startswith("[") or not text.endswith("]"):
        return None
    inner = text[1:-1]
    found = [tuple(int(x) for x in m.groups()) for m in _RANGE.finditer(inner)]
    rest = _RANGE.sub("", inner).replace(",", "").strip()
    return found if not rest else None  # type: ignore[return-value]


def _entries(ranges: list[tuple[int, int, int, int]], ledger_sizes: dict[int, int]) -> set[tuple[int, int]]:
    out = set()
    for lk, lv, uk, uv in ranges:
        for led in sorted(ledger_sizes):
            if lk <= led <= uk:
                start = lv + 1 if led == lk else 0
                end = uv if led == uk else ledger_sizes[led] - 1
                out.update((led, e) for e in range(start, end + 1))
    return out


def _range_set_hints(got: Any, want_text: str, md: str, ledger_sizes: dict[int, int]) -> str:
    """Which rules of the printed range set a wrong answer breaks (empty when none is recognised)."""
    parsed = _parse(got) if isinstance(got, str) else None
    if parsed is None:
        return "write it as stats-internal prints it: '[' + ranges joined by ',' + ']', each range (L:a..L:b]"
    want = _parse(want_text) or []
    hints = []
    if ", " in got:
        hints.append("the default OpenLongPairRangeSet joins ranges with ',' and no space (', ' is the Guava fallback)")
    if any(lk != uk for lk, _lv, uk, _uv in parsed):
        hints.append(
            "a range never crosses a ledger; an acked run that starts at entry 0 of ledger L prints as (L:-1..L:b]"
        )
    mdl, mde = (int(x) for x in md.split(":"))
    if any(p <= (mdl, mde) for p in _entries(parsed, ledger_sizes)):
        hints.append(f"entries at or before the mark-delete position {md} are no longer in the set (removeAtMost)")
    if any(r not in want and (r[0], r[1] - 1, r[2], r[3]) in want for r in parsed):
        hints.append(
            "each range is open-closed: (L:a..L:b] holds entries a+1 .. b, so its lower bound is the entry "
            "BEFORE the first acknowledged one"
        )
    return "; ".join(hints)


@exercise(
    todo='write {"markDeletePosition": "L:E", "individuallyDeletedMessages": "[...]"} as stats-internal prints them',
    see=(
        'Lab 3, section 3 ("The range set, holes, and a ledger boundary")',
        "docs/guide/cursor.md#mark-delete",
        "docs/guide/cursor.md#individually-deleted-messages",
    ),
)
def check_ack_ranges(
    answer: Any, acks: Sequence[int], messages: int = 9, max_entries_per_ledger: int = 3, version: str = "4.0"
) -> CheckResult:
    """Check ``answer`` = ``{"markDeletePosition": "L:E", "individuallyDeletedMessages": "[...]"}`` after
    an Exclusive consumer acknowledges message indexes ``acks`` (in order) of ``messages`` messages stored
    ``max_entries_per_ledger`` to a ledger."""
    keys = {"markDeletePosition", "individuallyDeletedMessages"}
    if not isinstance(answer, dict) or set(answer) != keys:
        return failed(['answer should be a dict {"markDeletePosition": "L:E", "individuallyDeletedMessages": "[...]"}'])
    md, idm, positions = ack_ranges_answer(acks, messages, max_entries_per_ledger, version)
    ledger_sizes: dict[int, int] = {}
    for p in positions:
        led = int(p.split(":")[0])
        ledger_sizes[led] = ledger_sizes.get(led, 0) + 1
    acked = {tuple(int(x) for x in positions[i].split(":")) for i in acks}
    problems = []
    got_md = str(answer["markDeletePosition"]).strip()
    if got_md != md:
        line = f"the mark-delete position is {md}; you said {got_md!r}"
        want_l, want_e = (int(x) for x in md.split(":"))
        first_unacked = next((p for p in positions if tuple(int(x) for x in p.split(":")) not in acked), None)
        try:
            got_l, got_e = (int(x) for x in got_md.split(":"))
        except ValueError:
            got_l = got_e = None
        if got_e == -1 and got_l is not None and got_l > want_l:
            line += (
                f": {got_md} and {md} name the same gap, but the cursor keeps the last acknowledged entry, "
                f"{md}, as its mark-delete position"
            )
        elif got_l is not None and (got_l, got_e) > (want_l, want_e) and first_unacked is not None:
            line += (
                f": it never passes an unacknowledged entry, and {first_unacked} is not acknowledged "
                "(a hole: everything acked after it waits in individuallyDeletedMessages)"
            )
        elif got_l is not None and got_l < want_l:
            line += (
                f": when the last entry of ledger {got_l} is acked the mark-delete position jumps over the "
                f"ledger boundary, onto ledger {want_l} (asyncDelete extends it across ledgers, testSingleDelete)"
            )
        elif got_l == want_l and got_e is not None and got_e == want_e - 1:
            line += ": the mark-delete position is the LAST acknowledged entry of the contiguous run, not the next one"
        problems.append(line)
    got_idm = answer["individuallyDeletedMessages"]
    if got_idm != idm:
        why = _range_set_hints(got_idm, idm, md, ledger_sizes)
        problems.append(f"individuallyDeletedMessages is {idm}; you said {got_idm!r}" + (f": {why}" if why else ""))
    if problems:
        return failed(problems, hint="Step through the cursor view to watch each ack land.")
    return passed(
        f"mark-delete {md}, individuallyDeletedMessages {idm}: the mark-delete position is the last entry of the "
        "acknowledged run from the start, and every acknowledged range after the first hole waits in the range set."
    )


# ---------------------------------------------------------------------------------------------
# Exercise: what is redelivered after a partly acknowledged batch


def batch_redelivery_answer(
    acked: Sequence[int], batch_size: int = 5, version: str = "4.0", batch_index_ack_enabled: bool = True
) -> list[int]:
    """The batch indexes a second consumer receives after the first acked ``acked`` of one batch and left.

    Both consumers subscribe with ``batch_index_ack_enabled`` (the exercise turns it on, as a 4.1 Java client
    has it by default; the Python client's default is off)."""
    lab = Lab(version=version)
    client = lab.client()
    options = {"batch_index_ack_enabled": batch_index_ack_enabled}
    first = client.subscribe("batches", "sub", consumer_type=ConsumerType.Shared, consumer_name="c1", **options)
    producer = client.create_producer("batches", batching_enabled=True, batching_max_messages=batch_size)
    for i in range(batch_size):
        producer.send_async(f"m{i}".encode(), None)
    lab.run_until_idle()
    got = [first.receive(0) for _ in range(batch_size)]
    for i in acked:
        first.acknowledge(got[i])
    lab.advance(100)
    first.close()
    second = client.subscribe("batches", "sub", consumer_type=ConsumerType.Shared, consumer_name="c2", **options)
    out = []
    while second.receiver_queue:
        out.append(second.receive(0).message_id().batch_index)
    return out


@exercise(
    todo='write {"4.0": [batch indexes that come back], "4.1": [...]}',
    see=(
        'Lab 3, section 4 ("Batches: what comes back after a partial ack")',
        "docs/guide/acknowledgements.md#batch-index-acks",
    ),
)
def check_batch_redelivery(
    answer: Any, acked: Sequence[int] = (0, 1, 3), batch_size: int = 5, versions: Sequence[str] = ("4.0", "4.1")
) -> CheckResult:
    """Check ``answer`` = ``{"4.0": [batch indexes], "4.1": [...]}``: which messages of one batch of
    ``batch_size`` come back to a new consumer after the first one acknowledged ``acked`` and closed."""
    if not isinstance(answer, dict) or set(answer) != set(versions):
        return failed(
            [f"answer should be a dict with one list of batch indexes per version: { {v: [] for v in versions} }"]
        )
    problems = []
    unacked = [i for i in range(batch_size) if i not in set(acked)]
    for version in versions:
        want = batch_redelivery_answer(acked, batch_size, version)
        got = answer[version]
        if not isinstance(got, (list, tuple)) or any(isinstance(i, bool) or not isinstance(i, int) for i in got):
            problems.append(f"{version}: give a list of batch indexes (ints), not {got!r}")
            continue
        if sorted(got) == sorted(want):
            continue
        line = f"{version} redelivers {want}; you said {sorted(got)}"
        if len(want) == batch_size and sorted(got) == unacked:
            line += (
                ": the broker's acknowledgmentAtBatchIndexLevelEnabled is false in 3.x and 4.0, so it ignores the "
                "ack set the client sends and knows only the whole entry - all of it comes back"
            )
        elif sorted(want) == unacked and sorted(got) == list(range(batch_size)):
            line += (
                ": 4.1 turns the broker's batch-index acks on by default (PIP-391): with batch_index_ack_enabled=True "
                "the client sends the batch's ack set, the broker keeps it in batchDeletedIndexes and sends it with "
                "the entry, and the client drops the acked indexes - only the unacked messages come back"
            )
        problems.append(line)
    if problems:
        return failed(problems, hint="Compare the batch dots in the two cursor views above.")
    return passed(
        f"after acking {list(acked)} of a batch of {batch_size}: "
        + "; ".join(f"{v} redelivers {batch_redelivery_answer(acked, batch_size, v)}" for v in versions)
        + "."
    )


# ---------------------------------------------------------------------------------------------
# Exercise: when grouped acks reach the broker


def ack_flush_answer(
    acks_at: Sequence[int], group_time_ms: int = 100, max_group_size: int = 1000, version: str = "4.0"
) -> list[int]:
    """The virtual time at which the broker applies each ack (a consumer created at t=0 acks message i
    at ``acks_at[i]``, times ascending)."""
    lab = Lab(version=version)
    client = lab.client()
    consumer = client.subscribe(
        "grouping",
        "sub",
        consumer_name="c1",
        lab_ack_group_time_ms=group_time_ms,
        lab_max_ack_group_size=max_group_size,
    )
    producer = client.create_producer("grouping")
    for i in range(len(acks_at)):
        producer.send(f"m{i}".encode())
    msgs = [consumer.receive(0) for _ in acks_at]
    for msg, at in zip(msgs, acks_at):
        if at < lab.now():
            raise ValueError(f"ack times must ascend from {lab.now()}: got {list(acks_at)}")
        lab.run_until(at)
        consumer.acknowledge(msg)
    lab.run_until_idle()
    applied: dict[tuple[int, int], int] = {}
    for e in lab.events.of_kind("individually_deleted", "mark_delete_moved"):
        if e.kind == "individually_deleted":
            applied.setdefault((e.ledger, e.entry), e.time)
        else:
            for msg in msgs:
                mid = msg.message_id()
                if (e.from_ledger, e.from_entry) < (mid.ledger, mid.entry) <= (e.to_ledger, e.to_entry):
                    applied.setdefault((mid.ledger, mid.entry), e.time)
    return [applied[(m.message_id().ledger, m.message_id().entry)] for m in msgs]


@exercise(
    todo="write the list of times (ms) at which the broker applies each ack, one per ack",
    see=(
        'Lab 3, section 2 ("The grouping tracker")',
        "docs/guide/acknowledgements.md#ack-grouping",
    ),
)
def check_ack_flush_times(
    answer: Any, acks_at: Sequence[int] = (130, 140, 150, 320), group_time_ms: int = 100, max_group_size: int = 3
) -> CheckResult:
    """Check ``answer`` = the list of virtual times at which the broker applies each of the acks made at
    ``acks_at`` by a consumer subscribed at t = 0."""
    want = ack_flush_answer(acks_at, group_time_ms, max_group_size)
    if not isinstance(answer, (list, tuple)) or len(answer) != len(want):
        return failed([f"answer should be a list of {len(want)} times in ms, one per ack"])
    problems = []
    for k, (at, w, g) in enumerate(zip(acks_at, want, answer)):
        if g == w:
            continue
        line = f"the ack made at t = {at} reaches the broker at t = {w}; you said {g!r}"
        if w % group_time_ms and w in acks_at:
            line += (
                f": at t = {w} the tracker held {max_group_size} acks, and reaching lab_max_ack_group_size "
                f"({max_group_size}) flushes them all at once"
            )
        elif g == at + group_time_ms:
            line += (
                f": the flush is a fixed-delay task that runs every {group_time_ms} ms from the consumer's "
                f"creation (t = 0, {group_time_ms}, {2 * group_time_ms}, ...), not {group_time_ms} ms after each ack"
            )
        elif g == at:
            line += f": acks wait in the grouping tracker until the next {group_time_ms} ms tick"
        problems.append(line)
    if problems:
        return failed(problems, hint="Look for the acks_flushed events: lab.events.of_kind('acks_flushed').")
    return passed(
        f"the broker applies the acks at {want}: the tracker flushes every {group_time_ms} ms from the consumer's "
        f"creation, and at once when it holds lab_max_ack_group_size ({max_group_size}) acks."
    )


__all__ = [
    "ack_flush_answer",
    "ack_ranges_answer",
    "batch_redelivery_answer",
    "check_ack_flush_times",
    "check_ack_ranges",
    "check_batch_redelivery",
]
