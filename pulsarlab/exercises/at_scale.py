"""Checkers for the exercise of lab 11 (at scale): reading one run of the Spark sweep and the mechanism behind it.

Models no Pulsar class: the right answer is computed by running the same grid row of the lab's spec in process
(`pulsarlab.scenarios.run.run_row`, `pulsarlab.scenarios.sweep_metrics.run_metrics`), so the checker needs no
Spark and follows the lab's scale knobs (``SEEDS``, ``MESSAGES``). A run is deterministic: the in-process run and
the Spark task of the same row leave the same event log.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any, Mapping

from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.scenarios.run import ACK, run_row
from pulsarlab.scenarios.spec import GridRow, ScenarioSpec, load_spec
from pulsarlab.scenarios.sweep_metrics import field_index, run_metrics

ANSWER_SHAPE = '{"dead_lettered": <int>, "deliveries_each": <int>}'


def grid_row(spec: Mapping[str, Any] | ScenarioSpec, **fields: Any) -> GridRow:
    """The one row of ``spec``'s grid whose fields have the given values (e.g. ``nack_rate=0.5, seed=0``)."""
    rows = [row for row in load_spec(spec).rows() if all(getattr(row, k) == v for k, v in fields.items())]
    if len(rows) != 1:
        raise ValueError(f"{len(rows)} rows of the spec have {fields}; name exactly one (add seed=..., version=...)")
    return rows[0]


@functools.lru_cache(maxsize=8)
def dead_letter_answer(row: GridRow) -> dict[str, int]:
    """``dead_lettered`` (the run's metric) and how many times the application received each dead-lettered message,
    from the run's own log: a message the application never acknowledged is one the client dead-lettered."""
    result = run_row(row)
    cols = result.events.columns()
    kind = cols.kind == cols.code("app_received")
    msgs = cols.fields[field_index("app_received", "msg")][kind]
    actions = cols.fields[field_index("app_received", "action")][kind]
    deliveries = Counter(msgs.tolist())
    acked = set(msgs[actions == ACK].tolist())
    never_acked = [m for m in deliveries if m not in acked]
    dead_lettered = run_metrics(cols)["dead_lettered"]
    if not result.settled or len(never_acked) != dead_lettered:
        raise AssertionError(
            f"run {row.run}: {len(never_acked)} messages never acknowledged, {dead_lettered} dead-lettered"
        )
    each = {deliveries[m] for m in never_acked}
    if len(each) != 1:
        raise ValueError(
            f"run {row.run}: dead-lettered messages were received {sorted(each)} times; "
            "ask about a run with dead letters (nack_rate > 0 and a max_redeliver_count)"
        )
    return {"dead_lettered": dead_lettered, "deliveries_each": each.pop()}


@exercise(
    todo=f"write {ANSWER_SHAPE}",
    see=(
        'Lab 11, section 3 ("Dead letters vs nack rate")',
        "docs/guide/retry-and-dead-letters.md#dead-letter-topic",
        "docs/guide/redelivery.md#redelivery-count",
    ),
)
def check_dead_letters(answer: Any, spec: Mapping[str, Any] | ScenarioSpec, **fields: Any) -> CheckResult:
    """``{"dead_lettered": int, "deliveries_each": int}`` for the run of ``spec`` whose grid fields are ``fields``
    (e.g. ``nack_rate=0.5, max_redeliver_count=1, seed=0``)."""
    row = grid_row(spec, **fields)
    want = dead_letter_answer(row)
    if not isinstance(answer, dict) or set(answer) != set(want):
        return failed([f"answer should be {ANSWER_SHAPE}"])
    where = ", ".join(f"{k} == {v!r}" for k, v in fields.items())
    problems = []
    if answer["dead_lettered"] != want["dead_lettered"]:
        expected = row.messages * row.nack_rate ** (row.max_redeliver_count + 1)
        hint = (
            f"{answer['dead_lettered']!r} is what messages x nack_rate ** (max_redeliver_count + 1) = {expected:g} "
            "predicts on average; this run's own draws decided: read its dead_lettered column"
            if isinstance(answer["dead_lettered"], (int, float)) and round(answer["dead_lettered"]) == round(expected)
            else "read the dead_lettered column of that run's row in `d`, not the table's mean over seeds"
        )
        problems.append(f"dead_lettered: {want['dead_lettered']}, you said {answer['dead_lettered']!r} - {hint}")
    if answer["deliveries_each"] != want["deliveries_each"]:
        hint = (
            "max_redeliver_count counts REdeliveries; the first delivery (redelivery count 0) comes on top"
            if answer["deliveries_each"] == row.max_redeliver_count
            else "the message is delivered with redelivery count 0, 1, ... up to max_redeliver_count, nacked each "
            "time; the redelivery after that is written to the DLQ instead"
        )
        problems.append(f"deliveries_each: {want['deliveries_each']}, you said {answer['deliveries_each']!r} - {hint}")
    if problems:
        return failed(problems, f"The run is the row of `d` with {where}.")
    return passed(
        f"{want['dead_lettered']} dead letters; each was received {want['deliveries_each']} times "
        f"(max_redeliver_count + 1) and nacked every time, so about nack_rate ** {want['deliveries_each']} of the "
        "messages end in the DLQ."
    )


__all__ = ["check_dead_letters", "dead_letter_answer", "grid_row"]
