"""Conformance of `pulsarlab.managed_ledger.rangeset` with Pulsar's `OpenLongPairRangeSet` recordings (golden README §6)."""

from __future__ import annotations

from typing import Any, Callable

from pulsarlab.conformance import expect
from pulsarlab.errors import PulsarError
from pulsarlab.managed_ledger.rangeset import OpenLongPairRangeSet


def _or_error(call: Callable[[], Any]) -> Any:
    """The value, or the recorded ``{"error", "message"}`` form of a Java exception."""
    try:
        return call()
    except PulsarError as exc:
        return {"error": exc.java_class, "message": exc.message}


def _in_recorded_shape(outcome: Any, recorded: Any) -> Any:
    """An operation's error in the keys the line records it with (``error``/``class``, ``message``, ...)."""
    if not isinstance(outcome, dict) or not isinstance(recorded, dict):
        return outcome
    values = {
        "error": outcome["error"],
        "class": outcome["error"],
        "message": outcome["message"],
        "via": "throw",
        "wrapped_in": None,
    }
    return {key: values.get(key) for key in recorded}


def _as_list(r: tuple | None) -> list | None:
    return None if r is None else list(r)


def check(line: dict) -> None:
    rs = OpenLongPairRangeSet()
    probes = line["probes"]
    queries = line["cardinality_queries"]
    for step in line["steps"]:
        where = f"step {step['i']} {step['op']}{step['args']}"
        op, args = step["op"], step["args"]
        if op == "addOpenClosed":
            outcome = _or_error(lambda: rs.add_open_closed(*args))
        elif op == "removeAtMost":
            outcome = _or_error(lambda: rs.remove_at_most(*args))
        elif op == "clear":
            outcome = _or_error(rs.clear)
        else:
            raise ValueError(f"{where}: unknown op {op!r} (expected addOpenClosed, removeAtMost or clear)")
        expect(f"{where}: error", step.get("error"), _in_recorded_shape(outcome, step.get("error")))
        expect(f"{where}: size", step["size"], rs.size())
        expect(f"{where}: is_empty", step["is_empty"], rs.is_empty())
        expect(f"{where}: ranges", step["ranges"], [list(r) for r in rs])
        expect(f"{where}: first_range", step["first_range"], _or_error(lambda: _as_list(rs.first_range())))
        expect(f"{where}: last_range", step["last_range"], _as_list(rs.last_range()))
        expect(f"{where}: span", step["span"], _as_list(rs.span()))
        if "to_string" in step:
            expect(f"{where}: to_string", step["to_string"], str(rs))
        expect(
            f"{where}: cardinality {queries}",
            step["cardinality"],
            [_or_error(lambda q=q: rs.cardinality(*q)) for q in queries],
        )
        expect(
            f"{where}: contains {probes}", step["contains"], [_or_error(lambda p=p: rs.contains(*p)) for p in probes]
        )
        expect(
            f"{where}: range_containing {probes}",
            step["range_containing"],
            [_or_error(lambda p=p: _as_list(rs.range_containing(*p))) for p in probes],
        )
        if "to_ranges" in step:
            model = {m: {str(k): words for k, words in rs.to_ranges(int(m)).items()} for m in step["to_ranges"]}
            expect(f"{where}: to_ranges", step["to_ranges"], model)
