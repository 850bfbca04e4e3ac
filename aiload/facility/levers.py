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

from aiload.facility.curves import CumulativeEnergy, job_energy_at_edges

__all__ = ["JobPlans", "Battery"]

RUN, BOX = 0, 1
#: pending runs of one curve added one by one below this count, else in one batch
FLUSH_ONE_BY_ONE = 8


def _energy_at(curve: CumulativeEnergy, tau: np.ndarray) -> np.ndarray:
    """``curve(tau)`` for ``0 <= tau <= duration`` [J]: the same arithmetic as
    :meth:`CumulativeEnergy.__call__` without its clip (a no-op here), for short arrays."""
    step = curve.knots_s[1]
    period = curve.knots_s[-1]
    e = curve.energy_j
    last = len(e) - 2
    if curve.duration_s > period:
        cycles = np.floor(tau / period)
        pos = (tau - cycles * period) / step
        k = pos.astype(np.int64)
        np.minimum(k, last, out=k)
        return cycles * e[-1] + e[k] + (pos - k) * (e[k + 1] - e[k])
    pos = tau / step
    k = pos.astype(np.int64)
    np.minimum(k, last, out=k)
    return e[k] + (pos - k) * curve.slope_j[k]


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
        # whole uncapped runs whose energy is added later, many at once (:meth:`flush`):
        # (curve, start [s], signed nodes)
        self.pending: list[tuple] = []

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
        nodes = float(self.nodes[job])
        if kind == RUN and p0 == 0.0 and speed == 1.0 and ratio == 1.0 and stop == math.inf \
                and t_from <= origin and origin >= 0.0:
            # a whole run at full speed (a start moved): its energy goes with the batch
            self.pending.append((self.curve_of(job), origin, sign * nodes))
        elif kind == RUN:
            edges = np.arange(k0, k1 + 1, dtype=np.float64) * h
            prog = np.maximum(edges, lo_e)
            np.minimum(prog, max(hi_e, lo_e), out=prog)
            prog -= origin
            prog *= speed
            prog += p0
            np.minimum(prog, self.dur[job], out=prog)
            np.maximum(prog, p0, out=prog)
            energy = _energy_at(self.curve_of(job), prog)
            power = (energy[1:] - energy[:-1]) * (nodes * ratio / speed / h)
            self.d_job_w[k0:k1] += sign * power
            if ratio < 1.0:
                self.cap_saved_w[k0:k1] += sign * power * (1.0 / ratio - 1.0)
        else:
            self._box(self.d_job_w, lo, hi, sign * nodes * pc[4])
        self._box(self.d_busy, lo, hi, sign * nodes)

    def _box(self, out: np.ndarray, lo: float, hi: float, value: float) -> None:
        """Add ``value`` over ``[lo, hi)`` to the step means ``out`` (partial steps pro rata)."""
        if hi <= lo:
            return
        h = self.h
        k0 = int(lo // h)
        k1 = min(self.n, int(math.ceil(hi / h)))
        if k1 <= k0:
            return
        if k1 - k0 == 1:
            out[k0] += value * (hi - lo) / h
            return
        out[k0:k1] += value
        out[k0] -= value * (lo - k0 * h) / h
        if hi < k1 * h:
            out[k1 - 1] -= value * (k1 * h - hi) / h

    def flush(self) -> None:
        """Add the energy of the pending whole runs to ``d_job_w`` (curve by curve, over the
        span of their runs only)."""
        if not self.pending:
            return
        groups: dict[int, list] = {}
        for curve, start, weight in self.pending:
            groups.setdefault(id(curve), [curve, [], []])
            groups[id(curve)][1].append(start)
            groups[id(curve)][2].append(weight)
        self.pending = []
        h = self.h
        for curve, starts, weights in groups.values():
            if len(starts) <= FLUSH_ONE_BY_ONE:
                for start, weight in zip(starts, weights):
                    self._add_run(curve, start, weight)
                continue
            starts = np.asarray(starts)
            k0 = int(starts.min() // h)
            k1 = min(self.n, int(math.ceil((starts.max() + curve.duration_s) / h)))
            if k1 <= k0:
                continue
            edges = np.arange(k0, k1 + 1, dtype=np.float64) * h
            cum = job_energy_at_edges(edges, starts, np.asarray(weights), curve)
            self.d_job_w[k0:k1] += (cum[1:] - cum[:-1]) / h

    def _add_run(self, curve: CumulativeEnergy, start: float, weight: float) -> None:
        """One whole run's energy from ``start`` [s], times ``weight`` [nodes]."""
        h = self.h
        k0 = int(start // h)
        k1 = min(self.n, int(math.ceil((start + curve.duration_s) / h)))
        if k1 <= k0:
            return
        tau = np.arange(k0, k1 + 1, dtype=np.float64) * h
        tau -= start
        np.maximum(tau, 0.0, out=tau)
        np.minimum(tau, curve.duration_s, out=tau)
        energy = _energy_at(curve, tau)
        self.d_job_w[k0:k1] += (energy[1:] - energy[:-1]) * (weight / h)

    def touched(self, job: int) -> bool:
        return job in self.plans

    def progress_s(self, job: int, t: float) -> float:
        """Work done by ``t`` [s of open-loop run time]."""
        pieces = self.plans.get(job)
        if pieces is None:
            return min(max(t - float(self.ol_start[job]), 0.0), float(self.dur[job]))
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

    def replan_many(self, jobs, t: float, pieces_of) -> None:
        """:meth:`replan` for every job in ``jobs`` (``pieces_of(job, progress)`` gives its
        new pieces), the runs' energy summed curve by curve in one pass (a new cap level
        re-plans every running job)."""
        runs: dict[int, list] = {}
        for job in jobs:
            old = self.plans.get(job)
            if old is None:
                self.first_touch[job] = t
                old = [[RUN, self.ol_start[job], math.inf, 0.0, 1.0, 1.0, True]]
            pieces = pieces_of(job, self.progress_s(job, t) if job in self.plans else
                               min(max(t - float(self.ol_start[job]), 0.0), float(self.dur[job])))
            for sign, group in ((-1.0, [pc for pc in old if pc[2] > t]), (1.0, pieces)):
                for pc in group:
                    if pc[0] == RUN:
                        self._collect(runs, job, list(pc), t, sign)
                    else:
                        self._apply(job, pc, t, sign)
                        if sign > 0:
                            self.overhead_node_s += (min(pc[3], self.horizon_s)
                                                     - max(pc[1], 0.0)) * self.nodes[job]
            for pc in old:
                if pc[2] > t:
                    pc[2] = t
            self.plans[job] = [pc for pc in old if pc[2] > pc[1]] + pieces
        for curve, rows in runs.values():
            self._add_rows(curve, rows)

    def _collect(self, runs: dict, job: int, pc: list, t_from: float, sign: float) -> None:
        """Busy nodes of a run piece now; its energy row kept for :meth:`_add_rows`."""
        t0, stop, p0, speed, ratio = pc[1], pc[2], pc[3], pc[4], pc[5]
        span = (self.dur[job] - p0) / speed
        lo = max(t0, t_from, 0.0)
        hi = min(stop, t0 + span, self.horizon_s)
        origin = self.placed[job] if pc[6] else t0
        lo_e = max(origin, t_from, 0.0)
        hi_e = max(min(stop, origin + span, self.horizon_s), lo_e)
        nodes = float(self.nodes[job])
        self._box(self.d_busy, lo, hi, sign * nodes)
        k0 = int(min(lo, lo_e) // self.h)
        k1 = min(self.n, int(math.ceil(max(hi, hi_e) / self.h)))
        if k1 <= k0 or hi_e <= lo_e:
            return
        curve = self.curve_of(job)
        runs.setdefault(id(curve), (curve, []))[1].append(
            (k0, k1, lo_e, hi_e, origin, p0, speed, float(self.dur[job]),
             sign * nodes * ratio / speed / self.h, ratio))

    def _add_rows(self, curve: CumulativeEnergy, rows: list) -> None:
        """The energy of many run pieces of one curve, as one padded array."""
        k0, k1, lo_e, hi_e, origin, p0, speed, dur, scale, ratio = (
            np.array(col) for col in zip(*rows))
        width = int((k1 - k0).max())
        cols = np.arange(width + 1)
        edges = (k0[:, None] + cols) * self.h
        prog = np.minimum(np.maximum(edges, lo_e[:, None]), hi_e[:, None])
        prog = p0[:, None] + speed[:, None] * (prog - origin[:, None])
        prog = np.maximum(np.minimum(prog, dur[:, None]), p0[:, None])
        energy = _energy_at(curve, prog.ravel()).reshape(prog.shape)
        power = (energy[:, 1:] - energy[:, :-1]) * scale[:, None]
        valid = cols[:-1] < (k1 - k0)[:, None]
        index = (k0[:, None] + cols[:-1])[valid]
        base = int(k0.min())
        span = int(k1.max()) - base
        self.d_job_w[base:base + span] += np.bincount(index - base, weights=power[valid],
                                                      minlength=span)
        capped = ratio < 1.0
        if capped.any():
            saved = power * np.where(capped, 1.0 / ratio - 1.0, 0.0)[:, None]
            self.cap_saved_w[base:base + span] += np.bincount(
                index - base, weights=saved[valid], minlength=span)

    # -- the plans the levers ask for --------------------------------------------------------
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
