"""The redelivery lab's checkers: right answers (derived here from the reference's rules) pass, wrong ones fail
with the rule that was missed."""

from __future__ import annotations

import math

import pytest
from exercise_support import unanswered, where_to_look

from pulsarlab.exercises.redelivery import (
    check_ack_timeout_redelivery,
    check_dead_letter_deliveries,
    check_nack_redelivery_times,
)


def ring_redelivery(ack_timeout: int, tick: int, received_at: int) -> int:
    """Reference §8.1: ticks every min(tick, timeout) from the consumer's creation; a message joins the newest of
    ceil(timeout/tick) + 1 sets, and the tick that pops it is the (sets)th after it joined."""
    step = min(tick, ack_timeout)
    first_tick = (received_at // step + 1) * step
    return first_tick + math.ceil(ack_timeout / step) * step


def nack_times(nack_at, delay, version):
    """Reference §8.2 / golden README-dispatch §5 on a millisecond wheel: 3.x checks deadlines every delay/3 from
    the first nack, strictly after each; 4.x arms at the first nack + delay, then goes bucket to bucket."""
    if version == "3.0":
        interval = -(-delay // 3)
        out = []
        for at in nack_at:
            run = nack_at[0] + interval
            while not at + delay < run:
                run += interval
            out.append(run)
        return out
    out = [nack_at[0] + delay]
    for at in nack_at[1:]:
        out.append(max((at + delay) & ~255, out[0]))
    return out


@pytest.mark.parametrize("ack_timeout, tick, received_at", [(3000, 2000, 500), (1000, 1000, 0), (5000, 300, 1234)])
def test_ack_timeout_checker(ack_timeout, tick, received_at):
    right = ring_redelivery(ack_timeout, tick, received_at)
    assert check_ack_timeout_redelivery(right, ack_timeout, tick, received_at)
    naive = check_ack_timeout_redelivery(received_at + ack_timeout, ack_timeout, tick, received_at)
    assert not naive and "ring" in naive.message
    assert not check_ack_timeout_redelivery("soon", ack_timeout, tick, received_at)


def test_nack_checker():
    right = {v: nack_times((0, 200), 1000, v) for v in ("3.0", "4.0")}
    assert right["4.0"][1] < 1200  # the second nack comes back early, in its bucket
    assert check_nack_redelivery_times(right)
    wrong = check_nack_redelivery_times({"3.0": [1000, 1200], "4.0": [1000, 1200]})
    assert not wrong and "delay/3" in wrong.message and "bucket" in wrong.message
    assert not check_nack_redelivery_times({"3.0": [1, 2]})
    assert not check_nack_redelivery_times({"3.0": [1], "4.0": "x"})


def test_dead_letter_checker():
    assert check_dead_letter_deliveries(list(range(4)), max_redeliver_count=3)  # seen maxRedeliverCount + 1 times
    short = check_dead_letter_deliveries([0, 1, 2], max_redeliver_count=3)
    assert not short and "maxRedeliverCount + 1" in short.message
    assert not check_dead_letter_deliveries([1, 2, 3, 4], max_redeliver_count=3)
    assert not check_dead_letter_deliveries("four", max_redeliver_count=3)


@pytest.mark.parametrize(
    "check",
    [check_ack_timeout_redelivery, check_nack_redelivery_times, check_dead_letter_deliveries],
    ids=lambda c: c.__name__,
)
def test_shipped_answer_is_not_answered_yet(check):
    assert unanswered(check(...)).endswith(check.todo)


def test_ellipsis_is_not_mistaken_for_a_time():
    """``...`` is neither an int nor a list: before the unanswered rule it read as a malformed answer."""
    result = check_ack_timeout_redelivery(...)
    assert "answer should be" not in result.message and not result.answered


def test_wrong_redelivery_answers_point_to_the_lab_section_and_the_guide():
    where = where_to_look(check_ack_timeout_redelivery(3500), 7)
    assert "docs/guide/redelivery.md#ack-timeout" in where
    where = where_to_look(check_dead_letter_deliveries([0, 1, 2]), 7)
    assert "retry-and-dead-letters.md#dead-letter-topic" in where
