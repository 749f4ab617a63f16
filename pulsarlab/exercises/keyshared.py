"""Checkers for the Key_Shared lab (labs/01-key-shared.ipynb): auto-split ranges and batch routing.

Models no Pulsar class; the right answers come from `KeySharedScenario` (docs/guide/key-shared-selectors.md for
auto-split, docs/guide/producer-batching.md for how a batch entry is routed). Each checker returns a `CheckResult`
that says OK, or what is wrong and which rule the learner missed.
"""

from __future__ import annotations

from typing import Any, Sequence

from pulsarlab.exercises.check import CheckResult, exercise, failed, passed
from pulsarlab.scenarios.key_shared import KeySharedScenario, fmt_range


def _as_range(value: Any) -> tuple[int, int] | None:
    try:
        start, end = value
    except (TypeError, ValueError):
        return None
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)):
        return None
    return start, end


def autosplit_answer(
    joins: Sequence[str], leaves: Sequence[str] = (), version: str = "4.0"
) -> tuple[dict[str, tuple[int, int]], KeySharedScenario]:
    """The range each consumer owns after ``joins`` then ``leaves`` (and the scenario that computed it)."""
    sc = KeySharedScenario("auto_split", version)
    for name in joins:
        sc.add(name)
    for name in leaves:
        sc.remove(name)
    names = {c.id: c.name for c in sc.consumers}
    return {names[cid]: (s, e) for s, e, cid in sc.assignments() if cid is not None}, sc


@exercise(
    todo="write a dict {consumer name: (start, end)} with the hash range each consumer owns after the joins",
    see=(
        'Lab 1, section 3 ("Auto-split hash ranges")',
        "docs/guide/key-shared-selectors.md#auto-split",
    ),
)
def check_autosplit_ranges(
    answer: Any, joins: Sequence[str] = ("c1", "c2", "c3"), leaves: Sequence[str] = (), version: str = "4.0"
) -> CheckResult:
    """Check ``answer`` = ``{"c1": (start, end), ...}``: each consumer's auto-split range after the joins
    (in order) and then the leaves."""
    expected, sc = autosplit_answer(joins, leaves, version)
    if not isinstance(answer, dict):
        return failed([f"answer should be a dict like {{'c1': (start, end), ...}}, not {type(answer).__name__}"])
    problems = []
    for name in answer:
        if name not in expected:
            problems.append(f"{name!r} is not attached at the end; the consumers are {', '.join(expected)}")
    splits = sc.log.of_kind("range_split")
    range_size = sc.snapshot()["range_size"]
    for name, want in expected.items():
        if name not in answer:
            problems.append(f"you gave no range for {name}; it should own {fmt_range(*want)}")
            continue
        got = _as_range(answer[name])
        if got is None:
            problems.append(f"{name}: give a (start, end) pair of ints, not {answer[name]!r}")
            continue
        if got == want:
            continue
        line = f"{name} should own {fmt_range(*want)}; you said {fmt_range(*got)}"
        swapped = next((other for other, r in expected.items() if r == got and other != name), None)
        split = next(
            (e for e in splits if {e.name, e.donor_name} == {name, swapped} or (swapped is None and e.name == name)),
            None,
        )
        if swapped is not None and split is not None:
            line += (
                f": the NEWCOMER takes the LOWER half. When {split.name} joined it took {fmt_range(*split.taken)} "
                f"of {split.donor_name}'s range {fmt_range(*split.donor_range)}, and {split.donor_name} kept the upper half"
            )
        elif want[1] == range_size and got[1] == range_size - 1:
            line += (
                f": the top range ends at rangeSize {range_size}, one past the largest slot {range_size - 1} "
                "(that is how Pulsar reports it)"
            )
        elif abs(got[0] - want[0]) == 1 or abs(got[1] - want[1]) == 1:
            line += ": a consumer owns (previous upper bound, upper bound], so a range starts one after the range below ends"
        elif split is not None:
            line += f" ({split.explain()})"
        else:
            line += " (auto-split: the newcomer always splits the LARGEST range; ties go to the lowest one)"
        problems.append(line)
    if problems:
        return failed(problems, hint="Step through the player above to watch each split.")
    shown = ", ".join(f"{n} {fmt_range(*r)}" for n, r in sorted(expected.items(), key=lambda kv: kv[1]))
    return passed(f"{shown}. Each newcomer took the lower half of the largest range.")


def batch_answer(
    keys: Sequence[str | None],
    consumers: Sequence[str] = ("c1", "c2", "c3"),
    kind: str = "consistent_hashing",
    version: str = "4.0",
    producer_name: str = "producer-1",
    **selector_kwargs: Any,
) -> tuple[str | None, dict[str | None, str | None], KeySharedScenario]:
    """Who gets the default batch entry, who gets each KEY_BASED sub-batch (and the scenario used)."""
    sc = KeySharedScenario(kind, version, **selector_kwargs)
    for name in consumers:
        sc.add(name)
    default = sc.route_batch(keys, "DEFAULT", producer_name=producer_name, record=False)[0]
    key_based = sc.route_batch(keys, "KEY_BASED", producer_name=producer_name, record=False)
    return default.consumer_name, {e.keys[0]: e.consumer_name for e in key_based}, sc


@exercise(
    todo='write {"default": the consumer of the whole batch entry, "key_based": {key: consumer, ...}}',
    see=(
        'Lab 1, section 7 ("Batching: the first key decides")',
        "docs/guide/producer-batching.md#default-batching",
        "docs/guide/producer-batching.md#key-based-batching",
    ),
)
def check_batch_routing(
    answer: Any,
    keys: Sequence[str],
    consumers: Sequence[str] = ("c1", "c2", "c3"),
    kind: str = "consistent_hashing",
    version: str = "4.0",
    **selector_kwargs: Any,
) -> CheckResult:
    """Check ``answer`` = ``{"default": "cX", "key_based": {key: "cY", ...}}`` for one batch of ``keys``
    sent by one producer to a Key_Shared subscription with ``consumers``."""
    if not isinstance(answer, dict) or set(answer) != {"default", "key_based"}:
        return failed(['answer should be a dict {"default": "c?", "key_based": {key: "c?", ...}}'])
    default, per_key, sc = batch_answer(keys, consumers, kind, version, **selector_kwargs)
    own = {k: s.consumer_name for k, s in zip(keys, sc.select_keys(list(keys), record=False))}
    first = keys[0]
    problems = []
    got_default = answer["default"]
    if isinstance(got_default, (list, tuple, set, dict)):
        problems.append(
            f"a default batch is ONE entry, so it goes to exactly one consumer ({default}), not {got_default!r}"
        )
    elif got_default != default:
        line = f"the default batch goes to {default}; you said {got_default!r}"
        others = [k for k in keys[1:] if own[k] == got_default]
        if others:
            line += (
                f": {got_default} is where {others[0]!r} would go on its own, but the whole entry carries only "
                f"the FIRST message's key {first!r}, which selects {default}"
            )
        else:
            line += f": the whole entry is routed by its FIRST message's key {first!r}, which selects {default}"
        problems.append(line)
    got_keys = answer["key_based"]
    if not isinstance(got_keys, dict):
        problems.append(f"key_based should map each key to a consumer name, not {type(got_keys).__name__}")
    else:
        for k, want in per_key.items():
            if k not in got_keys:
                problems.append(f"key_based: you gave no consumer for {k!r}; its sub-batch goes to {want}")
            elif got_keys[k] != want:
                line = f"key_based: {k!r} goes to {want}; you said {got_keys[k]!r}"
                if got_keys[k] == default and want != default:
                    line += ": with KEY_BASED batching every key has its own sub-batch, routed by that key"
                problems.append(line)
        for k in got_keys:
            if k not in per_key:
                problems.append(f"key_based: {k!r} is not one of the batch's keys {sorted(set(keys))}")
    if problems:
        return failed(problems, hint="Use scenario.select_keys([...]) to see where each key goes on its own.")
    return passed(
        f"the default entry follows its first key {first!r} to {default}; KEY_BASED sends "
        + ", ".join(f"{k!r} to {c}" for k, c in per_key.items())
        + "."
    )


__all__ = ["autosplit_answer", "batch_answer", "check_autosplit_ranges", "check_batch_routing"]
