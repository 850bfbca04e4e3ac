"""What the levers change, as differences against the open-loop run on the control grid.

:class:`JobPlans` holds the plan of every job a lever has touched (capped, paused, delayed)
as pieces — a *run* from progress ``p0`` at speed ``s`` drawing ``r`` times the profile power
at its progress (energy ``r/s`` times the uncapped per unit of work, from the job's
:class:`~aiload.facility.curves.CumulativeEnergy`), or a *box* of constant per-node power (a
checkpoint being written, a restart) — and adds each piece's power and busy nodes minus the
open-loop run's into difference arrays on the grid. A job no lever touches keeps its open-loop
bits. :class:`Battery` is the battery's state of charge.
"""

from __future__ import annotations

import math

import numpy as np

from aiload.facility.curves import CumulativeEnergy

__all__ = ["JobPlans", "Battery"]

RUN, BOX = 0, 1


class JobPlans:
    """Plans of the jobs levers have changed, and their power against the open loop.

    Parameters
    ----------
    durations_s, nodes, ol_start_s, placed_start_s : ndarray
        Each job's run time [s], nodes [-], open-loop start [s from ``start``; inf if never]
        and that start as the open-loop summation placed it [s].
    curve_of : callable
        ``curve_of(job) -> CumulativeEnergy`` per node [J].
    step_s : float
        Grid step ``h`` [s].
    n_steps : int
        Steps of the horizon [-].

    Attributes
    ----------
    d_job_w, d_busy : ndarray
        Jobs' power [W] and busy nodes [-] minus the open-loop run's, per step (means).
    cap_saved_w : ndarray
        Power the caps save: uncapped-equivalent minus capped power of capped runs [W].
    overhead_node_s : float
        Node-seconds spent writing checkpoints and restarting [node·s].
    """

    def __init__(self, durations_s, nodes, ol_start_s, placed_start_s, curve_of, step_s: float,
                 n_steps: int) -> None:
        self.dur = np.asarray(durations_s, dtype=np.float64)
        self.nodes = np.asarray(nodes, dtype=np.float64)
        self.ol_start = np.asarray(ol_start_s, dtype=np.float64)
        self.placed = np.asarray(placed_start_s, dtype=np.float64)
        self.curve_of = curve_of
        self.h, self.n = float(step_s), int(n_steps)
        self.horizon_s = self.h * self.n
        self.d_job_w = np.zeros(self.n)
        self.d_busy = np.zeros(self.n)
        self.cap_saved_w = np.zeros(self.n)
        self.plans: dict[int, list[list]] = {}
        self.first_touch: dict[int, float] = {}  # job -> when a lever first changed it [s]
        self.overhead_node_s = 0.0

    # -- pieces ------------------------------------------------------------------------------
    def _apply(self, job: int, pc: list, t_from: float, sign: float) -> None:
        kind, t0, stop = pc[0], pc[1], pc[2]
        lo = max(t0, t_from, 0.0)
        if kind == RUN:
            p0, speed, ratio = pc[3], pc[4], pc[5]
            span = (self.dur[job] - p0) / speed
            hi = min(stop, t0 + span, self.horizon_s)
            # the open-loop run's energy starts at the start as the summation placed it
            origin = self.placed[job] if pc[6] else t0
            lo_e = max(origin, t_from, 0.0)
            hi_e = min(stop, origin + span, self.horizon_s)
            first, last = min(lo, lo_e), max(hi, hi_e)
        else:
            hi = min(stop, pc[3], self.horizon_s)
            first, last = lo, hi
        if last <= first:
            return
        h = self.h
        k0 = int(first // h)
        k1 = min(self.n, int(math.ceil(last / h)))
        if k1 <= k0:
            return
        edges = np.arange(k0, k1 + 1, dtype=np.float64) * h
        busy = np.diff(np.clip(edges, lo, max(hi, lo))) / h * self.nodes[job]
        if kind == RUN:
            inside = np.clip(edges, lo_e, max(hi_e, lo_e))
            prog = np.clip(p0 + speed * (inside - origin), p0, self.dur[job])
            energy = np.diff(self.curve_of(job)(prog)) * (self.nodes[job] * ratio / speed)
            power = energy / h
            self.d_job_w[k0:k1] += sign * power
            if ratio < 1.0:
                self.cap_saved_w[k0:k1] += sign * power * (1.0 / ratio - 1.0)
        else:
            self.d_job_w[k0:k1] += sign * busy * pc[4]
        self.d_busy[k0:k1] += sign * busy

    def touched(self, job: int) -> bool:
        return job in self.plans

    def progress_s(self, job: int, t: float) -> float:
        """Work done by ``t`` [s of open-loop run time]."""
        pieces = self.plans.get(job)
        if pieces is None:
            return float(np.clip(t - self.ol_start[job], 0.0, self.dur[job]))
        p = 0.0
        for pc in pieces:
            if pc[0] == RUN and pc[1] <= t:
                p = min(self.dur[job], pc[3] + pc[4] * (min(t, pc[2]) - pc[1]))
        return max(p, 0.0)

    def replan(self, job: int, t: float, pieces: list[list]) -> None:
        """From ``t`` [s] on, the job follows ``pieces`` instead of its plan so far."""
        old = self.plans.get(job)
        if old is None:
            self.first_touch[job] = t
            old = [[RUN, self.ol_start[job], math.inf, 0.0, 1.0, 1.0, True]]
        for pc in old:
            if pc[2] > t:
                self._apply(job, pc, t, -1.0)
                pc[2] = t
        for pc in pieces:
            self._apply(job, pc, t, 1.0)
            if pc[0] == BOX:
                self.overhead_node_s += (min(pc[3], self.horizon_s) - max(pc[1], 0.0)) * \
                    self.nodes[job] * (pc[3] > pc[1])
        self.plans[job] = [pc for pc in old if pc[2] > pc[1]] + pieces

    # -- the plans the levers ask for --------------------------------------------------------
    def run(self, job: int, t: float, speed: float, ratio: float, *, after_s: float = 0.0,
            idle_w: float = 0.0) -> float:
        """Run from ``t`` (after a restart of ``after_s`` at ``idle_w`` per node) at speed
        ``speed`` drawing ``ratio`` times the profile power; returns the planned end [s]."""
        p = self.progress_s(job, t)
        pieces = []
        if after_s > 0:
            pieces.append([BOX, t, math.inf, t + after_s, idle_w, 0.0, False])
        pieces.append([RUN, t + after_s, math.inf, p, speed, ratio, False])
        self.replan(job, t, pieces)
        return t + after_s + (self.dur[job] - p) / speed

    def pause(self, job: int, t: float, checkpoint_s: float, mean_w: float) -> None:
        """Write a checkpoint from ``t`` for ``checkpoint_s`` at ``mean_w`` per node, then
        idle (nodes freed)."""
        pieces = [[BOX, t, math.inf, t + checkpoint_s, mean_w, 0.0, False]] if checkpoint_s else []
        self.replan(job, t, pieces)

    def wait(self, job: int, t: float) -> None:
        """Not started (yet): nothing from ``t`` on."""
        self.replan(job, t, [])

    def end_s(self, job: int) -> float:
        """Planned end [s] (inf if not running to completion)."""
        pieces = self.plans.get(job)
        if pieces is None:
            return self.ol_start[job] + self.dur[job]
        last = pieces[-1] if pieces else None
        if last is None or last[0] != RUN or last[2] != math.inf:
            return math.inf
        return last[1] + (self.dur[job] - last[3]) / last[4]

    def start_s(self, job: int) -> float:
        """First time the job held its nodes [s] (inf if never)."""
        pieces = self.plans.get(job)
        if pieces is None:
            return self.ol_start[job]
        held = [pc[1] for pc in pieces if pc[2] > pc[1]]
        return min(held) if held else math.inf


class Battery:
    """State of charge of a battery behind the meter (see
    :class:`~aiload.facility.flexspec.BatteryLever`)."""

    def __init__(self, lever) -> None:
        self.lever = lever
        self.energy_kwh = lever.soc_initial * lever.energy_kwh
        self.lo_kwh = lever.soc_min * lever.energy_kwh
        self.hi_kwh = lever.soc_max * lever.energy_kwh

    @property
    def soc(self) -> float:
        return self.energy_kwh / self.lever.energy_kwh

    def max_discharge_kw(self, period_s: float) -> float:
        return max(0.0, min(self.lever.power_kw, (self.energy_kwh - self.lo_kwh) * 3600.0
                            / period_s))

    def max_charge_kw(self, period_s: float) -> float:
        room = (self.hi_kwh - self.energy_kwh) / self.lever.round_trip_efficiency
        return max(0.0, min(self.lever.power_kw, room * 3600.0 / period_s))

    def step(self, battery_kw: float, period_s: float) -> None:
        """Discharge (> 0) or charge (< 0) at ``battery_kw`` [kW] for ``period_s``."""
        if battery_kw >= 0:
            self.energy_kwh -= battery_kw * period_s / 3600.0
        else:
            self.energy_kwh -= battery_kw * period_s / 3600.0 * self.lever.round_trip_efficiency
        self.energy_kwh = min(max(self.energy_kwh, self.lo_kwh), self.hi_kwh)
