"""The size searches shared by one facility's studies and a queue's: one size
(:func:`bisect_capacity`, hosting capacity) and many at once (:func:`bisect_many`, the
flexible interconnection's headroom per step or background level)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from aiload.errors import InputError

__all__ = ["bisect_capacity", "bisect_many"]


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


def bisect_many(violated: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
                start_mw: np.ndarray, *, p_max_mw: float, tolerance_mw: float,
                too_much: str) -> tuple[np.ndarray, np.ndarray]:
    """The largest size with no violation for each of ``len(start_mw)`` searches at once:
    each upper end doubled from ``start_mw`` until it breaks a limit, then bisection.

    ``violated(sizes_mw, rows)`` returns, for the searches ``rows`` at ``sizes_mw``, a
    boolean array (a limit broken) and the name of what broke; one engine call serves every
    open search. Returns the sizes [MW] and the violation just above each. ``too_much``: the
    error when an upper end passes ``p_max_mw`` without a violation.
    """
    lo = np.zeros(len(start_mw))
    hi = np.array(start_mw, dtype=float)
    label = np.full(len(start_mw), "", dtype=object)
    open_ = np.arange(len(start_mw))  # searches whose upper end does not yet break a limit
    while open_.size:
        if (hi[open_] > p_max_mw).any():
            raise InputError(too_much)
        broken, names = violated(hi[open_], open_)
        label[open_[broken]] = names[broken]
        lo[open_[~broken]] = hi[open_[~broken]]
        hi[open_[~broken]] *= 2.0
        open_ = open_[~broken]
    while True:
        rows = np.flatnonzero(hi - lo > tolerance_mw)
        if rows.size == 0:
            break
        mid = 0.5 * (lo[rows] + hi[rows])
        broken, names = violated(mid, rows)
        hi[rows[broken]] = mid[broken]
        label[rows[broken]] = names[broken]
        lo[rows[~broken]] = mid[~broken]
    return lo, label
