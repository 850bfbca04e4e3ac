"""The size search shared by one facility's hosting capacity and a queue's."""

from __future__ import annotations

from aiload.errors import InputError

__all__ = ["bisect_capacity"]


def bisect_capacity(check, *, p_max: float, tolerance: float, too_much: str):
    """The largest size with no violation, by doubling from 1 then bisection.

    ``check(size)`` returns None (no violation) or the worst violation; returns (size, the
    violation just above it). ``too_much``: the error when ``p_max`` shows no violation.
    """
    lo, hi = 0.0, 1.0
    worst = check(hi)
    while worst is None:
        lo, hi = hi, min(2 * hi, p_max)
        if lo >= p_max:
            raise InputError(too_much)
        worst = check(hi)
    while hi - lo > tolerance:
        mid = 0.5 * (lo + hi)
        found = check(mid)
        if found is None:
            lo = mid
        else:
            hi, worst = mid, found
    return lo, worst
