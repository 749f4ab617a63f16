"""The exercise of lab 11: the checker answers ``...`` with "not answered yet", rejects wrong answers naming the
mistake and where to look, and accepts the answer it computes by running the sweep's grid row in process."""

from __future__ import annotations

import pytest
from exercise_support import rejected, unanswered, where_to_look

from pulsarlab.exercises.at_scale import check_dead_letters, dead_letter_answer, grid_row
from pulsarlab.exercises.solutions import SOLUTIONS
from pulsarlab.scenarios.run import run_row
from pulsarlab.scenarios.sweep_metrics import run_metrics

# lab 11's dlq spec with fewer seeds (the checked row, seed 0, is the same run whatever the seed count)
DLQ = {
    "name": "dlq",
    "versions": ["4.0"],
    "subscription_type": "Shared",
    "seeds": {"count": 2},
    "messages": 300,
    "nack_rate": [0.0, 0.1, 0.2, 0.3, 0.5],
    "max_redeliver_count": [1, 3],
    "negative_ack_redelivery_delay_ms": 100,
}
ROW = {"nack_rate": 0.5, "max_redeliver_count": 1, "seed": 0}


def test_unanswered_says_what_to_write() -> None:
    message = unanswered(check_dead_letters(..., DLQ, **ROW))
    assert '"dead_lettered"' in message and '"deliveries_each"' in message


def test_answer_is_the_runs_metric_and_max_redeliver_count_plus_one() -> None:
    row = grid_row(DLQ, **ROW)
    want = dead_letter_answer(row)
    assert want["dead_lettered"] == run_metrics(run_row(row).events.columns())["dead_lettered"] > 0
    assert want["deliveries_each"] == 2
    assert dead_letter_answer(grid_row(DLQ, nack_rate=0.5, max_redeliver_count=3, seed=0))["deliveries_each"] == 4


def test_right_answer_passes_and_says_why() -> None:
    want = dead_letter_answer(grid_row(DLQ, **ROW))
    result = check_dead_letters(dict(want), DLQ, **ROW)
    assert result.ok and result.message.startswith("OK: ")
    assert f"{want['dead_lettered']} dead letters" in result.message and "max_redeliver_count + 1" in result.message


def test_the_shipped_solution_is_what_the_checker_computes() -> None:
    assert check_dead_letters(SOLUTIONS["11-at-scale"]["answer_1"].value, DLQ, **ROW).ok


def test_off_by_one_deliveries_and_the_average_count_are_named() -> None:
    want = dead_letter_answer(grid_row(DLQ, **ROW))
    predicted = round(300 * 0.5**2)
    assert predicted != want["dead_lettered"]
    result = check_dead_letters({"dead_lettered": predicted, "deliveries_each": 1}, DLQ, **ROW)
    rejected(
        result,
        "2 problems",
        f"dead_lettered: {want['dead_lettered']}, you said {predicted}",
        "predicts on average",
        "deliveries_each: 2, you said 1",
        "the first delivery (redelivery count 0) comes on top",
        "nack_rate == 0.5, max_redeliver_count == 1, seed == 0",
    )
    assert "section 3" in where_to_look(result, 11)


def test_other_wrong_answers_point_to_the_row_and_the_rule() -> None:
    want = dead_letter_answer(grid_row(DLQ, **ROW))
    rejected(
        check_dead_letters({"dead_lettered": want["dead_lettered"] + 1, "deliveries_each": 2}, DLQ, **ROW),
        "1 problem.",
        "read the dead_lettered column of that run's row in `d`",
    )
    rejected(
        check_dead_letters({"dead_lettered": want["dead_lettered"], "deliveries_each": 3}, DLQ, **ROW),
        "deliveries_each: 2, you said 3",
        "written to the DLQ instead",
    )


@pytest.mark.parametrize("answer", [66, {"dead_lettered": 66}, {"dead_lettered": 66, "deliveries": 2}])
def test_an_answer_of_the_wrong_shape_says_the_shape(answer) -> None:
    rejected(check_dead_letters(answer, DLQ, **ROW), '{"dead_lettered": <int>, "deliveries_each": <int>}')


def test_the_row_must_be_one_row_of_the_spec() -> None:
    with pytest.raises(ValueError, match="2 rows of the spec"):
        grid_row(DLQ, nack_rate=0.5, max_redeliver_count=1)
    with pytest.raises(ValueError, match="0 rows of the spec"):
        grid_row(DLQ, nack_rate=0.4, max_redeliver_count=1, seed=0)
    with pytest.raises(ValueError, match="ask about a run with dead letters"):
        dead_letter_answer(grid_row(DLQ, nack_rate=0.0, max_redeliver_count=1, seed=0))
