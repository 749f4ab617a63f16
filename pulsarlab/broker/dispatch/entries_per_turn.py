"""How many entries the Shared dispatcher gives one consumer per round-robin turn.

Models the per-consumer batch lines of `PersistentDispatcherMultipleConsumers.trySendMessagesToConsumers`:
the 3.x formula (also 4.x `...Classic`) and 4.x `getMaxEntriesInThisBatch` (#23231), plus the
`avgBatchSizePerMsg` line (docs/guide/subscription-types.md#entries-per-turn, golden README-dispatch §3). Pure
functions with Java int
arithmetic (division truncates toward zero, sums wrap at 32 bits).
"""

from __future__ import annotations

from pulsarlab.profiles import Profile, SharedDispatcherForm, get_profile

DEFAULT_MAX_ROUND_ROBIN_BATCH_SIZE = 20  # dispatcherMaxRoundRobinBatchSize


def _jint(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def java_div(a: int, b: int) -> int:
    """Java ``int`` division: truncates toward zero."""
    q = abs(a) // abs(b)
    return _jint(q if (a >= 0) == (b > 0) else -q)


def _check_int(name: str, value: object) -> int:
    if type(value) is not int:
        raise TypeError(f"{name} must be an int, not {type(value).__name__} ({value!r})")
    if not -(2**31) <= value <= 2**31 - 1:
        raise ValueError(f"{name}={value} does not fit a Java int")
    return value


def avg_batch_size_per_msg(total_messages: int, entries: int) -> int:
    """``totalMessages > 0 ? max(totalMessages / entries, 1) : 1`` over one read."""
    _check_int("total_messages", total_messages)
    _check_int("entries", entries)
    if total_messages <= 0:
        return 1
    if entries == 0:
        raise ValueError("entries must not be 0 when total_messages > 0 (Java divides by it)")
    return max(java_div(total_messages, entries), 1)


def batch_entries(
    form: SharedDispatcherForm | Profile | str | None,
    *,
    remaining_messages: int,
    available_permits: int,
    avg_batch_size_per_msg: int,
    writable: bool = True,
    max_unacked: int = 0,
    unacked: int = 0,
    max_round_robin_batch_size: int = DEFAULT_MAX_ROUND_ROBIN_BATCH_SIZE,
) -> int:
    """Entries for one consumer this turn, by the dispatcher form (V3: 3.x and 4.x classic; V4: 4.x).

    ``available_permits`` is the consumer's permits (may be negative); a consumer that is not writable
    counts as 1 permit. ``max_unacked`` 0 means unlimited.
    """
    if not isinstance(form, SharedDispatcherForm):
        form = get_profile(form).shared_dispatcher
    for name, value in (
        ("remaining_messages", remaining_messages),
        ("available_permits", available_permits),
        ("avg_batch_size_per_msg", avg_batch_size_per_msg),
        ("max_unacked", max_unacked),
        ("unacked", unacked),
        ("max_round_robin_batch_size", max_round_robin_batch_size),
    ):
        _check_int(name, value)
    if not isinstance(writable, bool):
        raise TypeError(f"writable must be a bool, not {type(writable).__name__} ({writable!r})")
    if avg_batch_size_per_msg < 1:
        raise ValueError(f"avg_batch_size_per_msg must be >= 1, not {avg_batch_size_per_msg}")
    permits = available_permits if writable else 1
    if form is SharedDispatcherForm.V3:
        return classic_batch_entries(
            remaining_messages, max_unacked, unacked, avg_batch_size_per_msg, permits, max_round_robin_batch_size
        )
    return get_max_entries_in_this_batch(
        remaining_messages, max_unacked, unacked, avg_batch_size_per_msg, permits, max_round_robin_batch_size
    )


def classic_batch_entries(
    remaining_messages: int,
    max_unacked: int,
    unacked: int,
    avg_batch_size_per_msg: int,
    available_permits: int,
    max_round_robin_batch_size: int,
) -> int:
    """3.x / 4.x classic: ``max(min(remaining, permits, maxUnacked-unacked, M) / avg, 1)``; M caps messages."""
    permits = available_permits
    if max_unacked > 0:
        permits = min(permits, max(_jint(max_unacked - unacked), 0))
    messages = min(remaining_messages, permits, max_round_robin_batch_size)
    return max(java_div(messages, avg_batch_size_per_msg), 1)


def get_max_entries_in_this_batch(
    remaining_messages: int,
    max_unacked: int,
    unacked: int,
    avg_batch_size_per_msg: int,
    available_permits: int,
    max_round_robin_batch_size: int,
) -> int:
    """4.x `getMaxEntriesInThisBatch`: ``max(min(M, ceil(min(remaining, permits, maxUnacked-unacked) / avg)), 1)``.

    The division rounds up (for non-negative counts) and M caps entries, not messages.
    """
    messages = min(remaining_messages, available_permits)
    if max_unacked > 0:
        messages = min(messages, max(_jint(max_unacked - unacked), 0))
    entries = java_div(_jint(messages + avg_batch_size_per_msg - 1), avg_batch_size_per_msg)
    return max(min(max_round_robin_batch_size, entries), 1)
