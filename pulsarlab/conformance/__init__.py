"""Replays Pulsar's golden-vector recordings against the model (``pulsarlab conformance``).

Models no Pulsar class. Each recorded line names its Java ``algorithm``; a checker module per
algorithm replays the line's inputs on the model chosen from the line's ``version`` and raises
`Mismatch` at the first difference.
"""

from __future__ import annotations

import gzip
import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

# algorithm (as recorded) -> "module:function" of its checker
CHECKERS: dict[str, str] = {
    "Murmur3_32Hash": "pulsarlab.conformance.murmur3:check",
    "HashRangeAutoSplitStickyKeyConsumerSelector": "pulsarlab.conformance.autosplit:check",
    "ConsistentHashingStickyKeyConsumerSelector": "pulsarlab.conformance.consistent_hashing:check",
    "HashRangeExclusiveStickyKeyConsumerSelector": "pulsarlab.conformance.sticky:check",
    "ConsumerHashAssignmentsSnapshot": "pulsarlab.conformance.snapshot:check",
    "ConsumerHashAssignmentsSnapshot.mergeOverlappingRanges": "pulsarlab.conformance.snapshot:check",
    "OpenLongPairRangeSet": "pulsarlab.conformance.rangeset:check",
    "AbstractDispatcherMultipleConsumers.getNextConsumer": "pulsarlab.conformance.dispatch:check_next_consumer",
    "AbstractDispatcherSingleActiveConsumer.pickAndScheduleActiveConsumer": "pulsarlab.conformance.dispatch:check_failover",
    "PersistentDispatcherMultipleConsumers.trySendMessagesToConsumers:batch-size": (
        "pulsarlab.conformance.dispatch:check_batch_size"
    ),
    "UnAckedMessageTracker": "pulsarlab.conformance.trackers:check_unacked",
    "NegativeAcksTracker": "pulsarlab.conformance.trackers:check_negative_acks",
    "InMemoryDelayedDeliveryTracker": "pulsarlab.conformance.delayed:check_in_memory",
}


class Mismatch(Exception):
    """The model disagreed with a recording: where, what was expected and what the model gave."""

    def __init__(self, where: str, expected: Any, actual: Any) -> None:
        super().__init__(where)
        self.where = where
        self.expected = expected
        self.actual = actual

    def describe(self) -> str:
        return f"{self.where}\n    expected: {_short(self.expected)}\n    model:    {_short(self.actual)}"


def _short(value: Any, limit: int = 600) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def expect(where: str, expected: Any, actual: Any) -> None:
    """Raise Mismatch unless equal (lists and tuples compare alike)."""
    if _norm(expected) != _norm(actual):
        raise Mismatch(where, expected, actual)


def version_labels(line: dict) -> list[str]:
    """The labels of a line's comma-separated ``version`` field: the line holds for each of them."""
    labels = [label.strip() for label in str(line.get("version", "")).split(",") if label.strip()]
    if not labels:
        raise ValueError("line has no version label")
    return labels


def compare_fields(where: str, step: dict, observed: dict[str, Any], inputs: set[str]) -> None:
    """Every recorded field of a step that is not one of its ``inputs`` must equal the model's."""
    for key, recorded in step.items():
        if key in inputs:
            continue
        if key not in observed:
            expect(f"{where}: field {key!r}", recorded, "<not modelled>")
        expect(f"{where}: {key}", recorded, observed[key])


def _norm(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _norm(x) for k, x in v.items()}
    return v


class UnknownAlgorithm(Exception):
    pass


def checker_for(algorithm: str) -> Callable[[dict], None]:
    target = CHECKERS.get(algorithm)
    if target is None:
        raise UnknownAlgorithm(f"no model checker for algorithm {algorithm!r}; known: {', '.join(sorted(CHECKERS))}")
    module, _, func = target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise UnknownAlgorithm(f"algorithm {algorithm!r} is not modelled yet ({exc})") from None
    return getattr(mod, func)


@dataclass
class FileResult:
    path: str
    total: int = 0
    matched: int = 0
    first_mismatch: str | None = None

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.matched == self.total

    def summary(self) -> str:
        name = Path(self.path).name.removesuffix(".gz")
        return f"{name}: conformance: {self.matched}/{self.total} scenarios match"


def iter_lines(path: str | Path) -> Iterator[tuple[int, dict]]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, 1):
            if not text.strip():
                continue
            try:
                yield lineno, json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg} at column {exc.colno})") from None


def run_file(path: str | Path) -> FileResult:
    """Replay every line of one golden file."""
    result = FileResult(str(path))
    for lineno, line in iter_lines(path):
        result.total += 1
        label = f"{Path(path).name}:{lineno} scenario={line.get('scenario', line.get('index'))!r} version={line.get('version')!r}"
        try:
            algorithm = line["algorithm"]
        except KeyError:
            raise ValueError(f"{path}:{lineno}: line has no 'algorithm' field") from None
        try:
            checker_for(algorithm)(line)
        except Mismatch as mm:
            if result.first_mismatch is None:
                result.first_mismatch = f"{label}\n  at {mm.describe()}"
            continue
        except UnknownAlgorithm:
            raise
        except Exception as exc:  # a crash is a mismatch too, reported with its cause
            if result.first_mismatch is None:
                result.first_mismatch = f"{label}\n  model raised {type(exc).__name__}: {exc}"
            continue
        result.matched += 1
    return result
