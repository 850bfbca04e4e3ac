"""The two step-by-step loops of the stabilisation study (numba when loaded, else Python).

Each loop is written once, in plain Python; :func:`loops` compiles the same source with
numba (no fastmath: no fused multiply-add), so both paths compute the same floats. A day at
0.1 s is 864,000 steps: the compiled loops take milliseconds, the Python ones seconds.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

__all__ = ["Loops", "loops"]


def _smooth(load, dt, floor, up, down, hold_steps, out):
    """GPU power smoothing at the POI [kW]: floor, ramp-up and ramp-down limits, hysteresis.

    ``out[i]`` follows ``max(load[i], floor)``: a rise by at most ``up·dt``; a fall only
    after ``hold_steps`` steps below the last value, then by at most ``down·dt``.
    """
    prev = max(load[0], floor)
    held = 0
    for i in range(load.shape[0]):
        target = max(load[i], floor)
        if target >= prev:
            value = min(target, prev + up * dt)
            held = 0
        elif held < hold_steps:
            value = prev
            held += 1
        else:
            value = max(target, prev - down * dt)
        out[i] = value
        prev = value


def _track(load, dt, alpha, up, down, out, gain=0.0, eta_charge=1.0, eta_discharge=1.0):
    """Grid power of a storage controller [kW]: a ramp-limited track of the load's
    exponential moving average (``alpha = dt / (tau + dt)``; 1: the load itself), less
    ``gain`` [kW/kWh] times the stored energy relative to the start (so the losses are bought
    back from the grid, slowly, instead of draining the store; 0: no such feedback). The
    stored energy follows :func:`_stored` with the same floats."""
    ema = load[0]
    prev = load[0]
    level = 0.0
    dt_h = dt / 3600.0
    for i in range(load.shape[0]):
        ema = ema + alpha * (load[i] - ema)
        step = (ema - gain * level) - prev
        if step > up * dt:
            step = up * dt
        elif step < -down * dt:
            step = -down * dt
        value = prev + step
        out[i] = value
        prev = value
        p = load[i] - value
        if p > 0.0:
            level = level - p / eta_discharge * dt_h
        else:
            level = level + -p * eta_charge * dt_h


def _stored(p_storage, dt_h, eta_charge, eta_discharge, soc, loss):
    """Stored energy [kWh] after each step and the losses [kW] of a storage delivering
    ``p_storage`` [kW] to the bus (> 0 discharge, < 0 charge); ``soc`` starts at 0."""
    level = 0.0
    for i in range(p_storage.shape[0]):
        p = p_storage[i]
        if p > 0.0:
            drawn = p / eta_discharge
            loss[i] = drawn - p
            level = level - drawn * dt_h
        else:
            kept = -p * eta_charge
            loss[i] = -p - kept
            level = level + kept * dt_h
        soc[i] = level


class Loops(NamedTuple):
    smooth: object
    track: object
    stored: object


@functools.cache
def loops() -> Loops:
    """The loops, compiled by numba when it imports (once per process), else plain Python."""
    try:
        import numba  # noqa: PLC0415 - slow to import; a dependency, but keep a fallback
    except ImportError:  # pragma: no cover - numba is a dependency
        return Loops(_smooth, _track, _stored)
    jit = numba.njit(cache=False, nogil=True)
    return Loops(jit(_smooth), jit(_track), jit(_stored))


def python_loops() -> Loops:
    """The uncompiled loops (for the test that both paths give the same bits)."""
    return Loops(_smooth, _track, _stored)


def empty(n: int) -> np.ndarray:
    return np.empty(n, dtype=np.float64)
