"""Fixed-interval polling on absolute deadlines, so the sample grid never drifts.

Sleeping ``interval - elapsed`` after each read (as most samplers do) lets every oversleep
push the rest of the grid later; here tick ``k`` is due at ``start + k * interval`` whatever
happened before, and ticks that a slow read overran are skipped (and counted), not squeezed in.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["next_tick", "run_fixed_interval"]


def next_tick(start_ns: int, interval_ns: int, now_ns: int, last_tick: int) -> int:
    """The first tick after ``last_tick`` that is not yet past at ``now_ns``.

    Parameters
    ----------
    start_ns : int
        Time of tick 0 [ns, monotonic clock].
    interval_ns : int
        Sampling interval [ns].
    now_ns : int
        The current time [ns].
    last_tick : int
        The tick just served.

    Returns
    -------
    int
        ``last_tick + 1`` when on time, later when ticks were overrun.

    Examples
    --------
    >>> next_tick(0, 100, 150, 1)   # on time: tick 2 is due at 200
    2
    >>> next_tick(0, 100, 420, 1)   # a slow read ran past ticks 2, 3 and 4
    5
    """
    due = -(-(now_ns - start_ns) // interval_ns)  # ceil: the first tick at or after now
    return max(last_tick + 1, due)


def run_fixed_interval(
    action: Callable[[], None],
    *,
    start_ns: int,
    interval_ns: int,
    clock_ns: Callable[[], int],
    wait_s: Callable[[float], bool],
    first_tick: int = 1,
) -> int:
    """Call ``action`` at ``start + k * interval`` for k = first_tick, ... until ``wait_s`` says stop.

    Parameters
    ----------
    action : callable
        Takes one sample.
    start_ns, interval_ns : int
        The grid [ns, on ``clock_ns``'s clock].
    clock_ns : callable
        Monotonic clock [ns].
    wait_s : callable
        ``wait_s(timeout)`` sleeps up to ``timeout`` [s] and returns True to stop
        (``threading.Event.wait``).
    first_tick : int
        Index of the first tick (1: the first sample one interval after ``start_ns``).

    Returns
    -------
    int
        The number of ticks skipped because a read overran them.
    """
    tick, missed = first_tick, 0
    while True:
        delay_ns = start_ns + tick * interval_ns - clock_ns()
        if wait_s(max(delay_ns, 0) / 1e9):
            return missed
        action()
        following = next_tick(start_ns, interval_ns, clock_ns(), tick)
        missed += following - tick - 1
        tick = following
