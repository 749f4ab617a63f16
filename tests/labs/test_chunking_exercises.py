"""The checkers of lab 08 (chunked messages): each accepts the right answer and rejects the typical wrong ones
with a message that names the mistake."""

from __future__ import annotations

import pytest
from exercise_support import rejected, unanswered, where_to_look

from pulsarlab.exercises import chunking as ch


def test_too_big_answer_counts_the_metadata_of_the_python_client():
    # producer name "uploader" (1 + 1 + 8 bytes), sequence id 0 and publish time 0 (2 bytes each)
    assert ch.too_big_answer(1024, "uploader") == {"exception": "MessageTooBig", "largest_payload": 1024 - 14}
    assert ch.check_too_big({"exception": "MessageTooBig", "largest_payload": 1010}).ok


def test_too_big_rejects_the_java_exception_and_the_payload_only_limit():
    rejected(
        ch.check_too_big({"exception": "InvalidMessageException", "largest_payload": 1024}),
        "the Java client's exception",
        "metadata + payload",
        "takes 14 bytes",
    )
    rejected(ch.check_too_big({"exception": "MessageTooBig"}), "answer should be a dict")


def test_chunk_counts_are_payload_over_chunk_size_rounded_up():
    sizes = (1010, 1011, 3030, 3031, 10_000)
    assert ch.chunk_counts_answer(sizes) == [1, 2, 3, 4, 10]  # chunk size 1024 - 14 = 1010
    assert ch.check_chunk_counts([1, 2, 3, 4, 10], payload_sizes=sizes).ok


def test_chunk_counts_name_the_metadata_and_the_rounding():
    rejected(
        ch.check_chunk_counts([1, 1, 3, 3, 10]),
        "1011 bytes go out as 2 chunk(s); you said 1",
        "1024 - 14 = 1010",
        "3031 bytes go out as 4",
    )
    rejected(ch.check_chunk_counts([1, 2, 3, 3, 10]), "round up: ceil(3031 / 1010)")
    rejected(ch.check_chunk_counts([1, 2]), "a list of 5 chunk counts")


def test_message_ids_print_first_semicolon_last():
    want = ["3:0:-1;3:2:-1", "3:3:-1", "3:4:-1;3:5:-1"]
    assert ch.message_ids_answer((3000, 100, 2000)) == want
    assert ch.check_message_ids(want).ok


@pytest.mark.parametrize(
    "answer, needle",
    [
        (["3:2:-1", "3:3:-1", "3:4:-1;3:5:-1"], "equals its last chunk's id but prints the first chunk's id too"),
        (["3:0:-1", "3:3:-1", "3:4:-1;3:5:-1"], "compares equal to the LAST chunk's id"),
        (["3:0:-1;3:2:-1", "3:3:-1;3:3:-1", "3:4:-1;3:5:-1"], "gets a plain id"),
        (["3:0:-1;3:2:-1", "3:3", "3:4:-1;3:5:-1"], "ledger:entry:partition"),
    ],
)
def test_message_ids_reject_the_typical_mistakes(answer, needle):
    rejected(ch.check_message_ids(answer), needle)


def test_pending_map_evicts_the_oldest_message():
    assert ch.pending_map_answer(3, 2, True) == {"received": ["p1-0", "p2-0"], "evicted": ["p0-0"]}
    assert ch.pending_map_answer(3, 3, True) == {"received": ["p0-0", "p1-0", "p2-0"], "evicted": []}
    assert ch.check_pending_map({"received": ["p1-0", "p2-0"], "evicted": ["p0-0"]}).ok


def test_pending_map_rejects_evicting_the_newest_and_delivering_an_evicted_message():
    rejected(
        ch.check_pending_map({"received": ["p0-0", "p1-0"], "evicted": ["p2-0"]}), "OLDEST pending message is removed"
    )
    rejected(
        ch.check_pending_map({"received": ["p0-0", "p1-0", "p2-0"], "evicted": ["p0-0"]}), "never delivered in part"
    )
    rejected(
        ch.check_pending_map({"received": ["p0-0", "p1-0", "p2-0"], "evicted": ["p0-0"]}, max_pending=3),
        "fit in max_pending_chunked_message=3",
    )
    rejected(ch.check_pending_map({"received": "p1-0", "evicted": []}), "give a list of uuids")


def test_shared_pins_each_message_to_one_consumer():
    want = ch.shared_answer()
    assert sorted(want) == ["p0-0", "p0-1", "p1-0", "p1-1"] and set(want.values()) == {"c1", "c2"}
    assert ch.check_shared(dict(want)).ok
    swapped = {u: ("c2" if c == "c1" else "c1") for u, c in want.items()}
    rejected(ch.check_shared(swapped), "SharedConsumerAssignor pins the message")
    rejected(ch.check_shared({"x-0": "c1"}), "no consumer given for", "are not uuids of this run")


def test_batching_and_chunking_is_the_python_clients_value_error():
    want = ch.batching_and_chunking_answer()
    assert want == {
        "exception": "ValueError",
        "message": "Batching and chunking of messages can't be enabled together.",
    }
    assert ch.check_batching_and_chunking(dict(want)).ok
    rejected(
        ch.check_batching_and_chunking(
            {
                "exception": "IllegalArgumentException",
                "message": "Batching and chunking of messages can't be enabled together",
            }
        ),
        "Java client's ProducerBuilder",
        "ends with a full stop",
    )
    rejected(ch.check_batching_and_chunking("ValueError"), "answer should be a dict")


@pytest.mark.parametrize(
    "check",
    [
        ch.check_too_big,
        ch.check_chunk_counts,
        ch.check_message_ids,
        ch.check_pending_map,
        ch.check_shared,
        ch.check_batching_and_chunking,
    ],
    ids=lambda c: c.__name__,
)
def test_shipped_answer_is_not_answered_yet(check):
    assert unanswered(check(...)).endswith(check.todo)


def test_wrong_chunk_answers_point_to_the_lab_section_and_the_guide():
    where = where_to_look(ch.check_chunk_counts([1, 1, 3, 3, 10]), 8)
    assert 'section 2 ("A chunking producer")' in where
    assert "docs/guide/chunked-messages.md#chunk-count" in where
    where = where_to_look(ch.check_shared({"p0-0": "c2"}), 8)
    assert "chunked-messages.md#chunks-on-shared" in where


def test_right_chunk_answers_say_why():
    result = ch.check_pending_map({"received": ["p1-0", "p2-0"], "evicted": ["p0-0"]})
    assert result.ok and "evicts the OLDEST pending message" in result.message
