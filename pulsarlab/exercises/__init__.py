"""Checkers for the lab notebooks' exercises: each computes the right answer with the model and says what is
wrong with the learner's, where to look, or why it is right. The labs ship unsolved (``answer_N = ...``, which a
checker answers with "not answered yet"); the solutions live in `pulsarlab.exercises.solutions`. Models no
Pulsar class."""

from pulsarlab.exercises.check import CheckResult
from pulsarlab.exercises.keyshared import check_autosplit_ranges, check_batch_routing

__all__ = ["CheckResult", "check_autosplit_ranges", "check_batch_routing"]
