"""The controlled run: a replay of the open-loop run in which levers hold a power limit.

The open-loop run (same draws, same seed) gives the jobs, their starts and the services. The
replay walks the control periods in time order. At each period start it reads the limit,
projects the period's power at the meter from the open-loop series plus what the levers have
changed so far (:class:`~aiload.facility.levers.JobPlans`, the battery, throttled services),
and takes the *largest* output interval of the period (the facility knows its own schedule
for the period ahead). Above the limit it engages levers in the spec's merit order until the
projection fits; with room under the limit (less the release margin) it releases them in the
reverse order. A lever acts only once its response time since the event's start has passed
(rounded up to a control period). Jobs keep their open-loop start unless a lever holds
submissions or their nodes are taken; a job no lever touches keeps its open-loop power bits.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.facility.control import FacilityState, PowerLimit, check_control_period
from aiload.facility.curves import CumulativeEnergy
from aiload.facility.jobs import ProfileCache
from aiload.facility.kernels import placement_grid
from aiload.facility.levers import Battery, JobPlans
from aiload.facility.overheads import CoolingLag, cooling_kw, drybulb_c, losses_kw
from aiload.facility.services_lever import ServiceThrottle

__all__ = ["Replay", "cap_curve"]

#: at most this many lever passes per control period (each re-projects the period)
PASSES = 4


def cap_curve(spec):
    """The power-cap curve of ``spec``'s power-cap lever, seen at the node [-]."""
    return spec.flexibility.power_cap.node_curve(spec.fleet.measured_at)


class Replay:
    """State of the controlled run; :meth:`run` walks the control periods."""

    def __init__(self, spec, start: pd.Timestamp, freq_s: float, n_bins: int,
                 frame: pd.DataFrame, out: dict, limit) -> None:
        self.spec, self.flex, self.start = spec, spec.flexibility, start
        fleet, ov = spec.fleet, spec.overheads
        self.period_s = float(self.flex.control_period_s)
        self.m, self.q = check_control_period(self.period_s, freq_s)
        self.h = freq_s / self.q
        self.n = n_bins * self.q
        self.n_periods = -(-self.n // self.m)
        self.limit = PowerLimit(limit, start, self.period_s, self.n_periods)
        up = (lambda a: np.repeat(np.asarray(a, dtype=np.float64), self.q))
        self.it_ol = up(frame["it_kw"])
        self.fac_ol = up(frame["facility_kw"])
        busy = up(frame["busy_nodes"])
        self.temp = None
        if ov.cooling != "pue":
            edges = start + pd.to_timedelta(np.arange(self.n + 1) * self.h, unit="s")
            self.temp = drybulb_c(ov.weather, pd.DatetimeIndex(edges))
        self.c_p = 1e-3 if fleet.measured_at == "node-ac" else \
            (1.0 + fleet.rest_of_node_fraction) * (1.0 + fleet.psu_loss_fraction) * 1e-3
        self.c_b = fleet.other_it_w_per_busy_node * 1e-3
        self.idle_w = float(fleet.idle_w)
        self.rated_kw = fleet.it_rated_kw
        # the cooling lag's state at step ``lag_at`` (the first step not yet final) [kW]
        self.lag_s, self.lag_kw, self.lag_at = ov.cooling_lag_s, None, 0
        self.last = (math.nan, math.nan, math.nan)
        self.services = ServiceThrottle(spec, out["services"], freq_s, self.h, self.n,
                                        self.flex.inference, self.idle_w)
        jobs_busy = busy - self.services.replicas_ol
        if "component_kw" in frame:
            profile_w = up(frame["component_kw"]) * 1e3
        else:
            profile_w = (self.it_ol - fleet.fixed_it_kw) * 1e3 - busy * fleet.other_it_w_per_busy_node
        self.jobs_w_ol = profile_w - self.services.power_ol - (spec.pool_nodes - jobs_busy) * self.idle_w
        self.jobs_busy_ol = jobs_busy
        self.capacity = out["capacity_nodes"]
        self._jobs(spec, out, freq_s)
        self.battery = Battery(self.flex.battery) if self.flex.battery is not None else None
        self.battery_kw = np.zeros(self.n_periods)
        self.curve = cap_curve(spec)
        lowest = self.flex.power_cap.min_power_fraction or self.curve.min_power_fraction
        self.r_min = max(float(lowest), float(self.curve.min_power_fraction))
        self.r = 1.0
        self.order = self.flex.merit_order
        self.paused: dict[int, float] = {}  # job -> time its checkpoint is written
        self.pause_w: dict[int, float] = {}  # job -> power its pause saves [W]
        self.pause_saved_w = np.zeros(self.n)  # power the pauses save, per step [W]
        self.waiting: deque[int] = deque()
        self.limits = np.full(self.n_periods, np.inf)
        self.events: list[dict] = []
        self.event: dict | None = None
        self.calls = 0

    # -- jobs --------------------------------------------------------------------------------
    def _jobs(self, spec, out, freq_s) -> None:
        jobs, start_s = out["jobs"], out["start_s"]
        self.jobs = jobs
        cache = ProfileCache(spec.catalogue or _default_catalogue(), spec.fleet.hardware)
        curves: dict[tuple, CumulativeEnergy] = {}
        keys = list(zip(jobs.model, jobs.profile_nodes, jobs.replicate, jobs.duration_s))

        def curve_of(j: int) -> CumulativeEnergy:
            key = keys[j]
            if key not in curves:
                curves[key] = CumulativeEnergy.from_profile(cache.get(key[0], int(key[1])),
                                                            int(key[2]), float(key[3]))
            return curves[key]

        self.curve_of = curve_of
        placement_s, _ = placement_grid(freq_s)
        placed = np.rint(np.where(np.isfinite(start_s), start_s, 0.0) / placement_s) * placement_s
        self.plans = JobPlans(jobs.duration_s, jobs.nodes, start_s, placed, curve_of, self.h,
                              self.n)
        deferrable = self.flex.deferrable_streams
        names = set(s.name for s in spec.streams)
        if deferrable is not None:
            unknown = [s for s in deferrable if s not in names]
            if unknown:
                raise InputError(f"FlexibilitySpec.deferrable_streams: unknown stream(s) "
                                 f"{unknown}; the spec has {sorted(names)}.")
        self.deferrable = np.isin(jobs.stream, list(names if deferrable is None else deferrable))
        ok = np.isfinite(start_s)
        self.by_start = np.flatnonzero(ok)[np.argsort(start_s[ok], kind="stable")]
        self.start_sorted = start_s[self.by_start]
        self.ol_end = np.where(ok, start_s + jobs.duration_s, -np.inf)
        self.ptr = int(np.searchsorted(self.start_sorted, 0.0, side="left"))
        self.smallest_job_nodes = float(jobs.nodes.min()) if len(jobs) else 0.0
        self.longest_s = float(jobs.duration_s.max()) if len(jobs) else 0.0
        self.mean_w: dict[int, float] = {}  # per node [W], filled when first asked for
        self._speeds: dict[float, float] = {}
        self.running_touched: set[int] = set()

    def _mean_w(self, j: int) -> float:
        """Mean profile power of job ``j`` per node [W]."""
        got = self.mean_w.get(j)
        if got is None:
            c = self.curve_of(j)
            got = self.mean_w[j] = float(c.energy_j[-1] / c.knots_s[-1]) \
                if c.duration_s == c.knots_s[-1] else c.total_j / c.duration_s
        return got

    def running(self, t: float) -> list[int]:
        """Jobs running at ``t`` (progress going on, not in a checkpoint or restart)."""
        # only jobs started within the longest duration before ``t`` can still run
        lo = int(np.searchsorted(self.start_sorted, t - self.longest_s, side="left"))
        untouched = self.by_start[lo: np.searchsorted(self.start_sorted, t, side="right")]
        untouched = untouched[self.ol_end[untouched] > t]
        out = [int(j) for j in untouched if not self.plans.touched(int(j))]
        done = []
        for j in self.running_touched:
            last = self.plans.plans[j][-1]
            if self.plans.end_s(j) <= t:
                done.append(j)
            elif last[0] == 0 and last[1] <= t:
                out.append(j)
        self.running_touched.difference_update(done)
        return out

    def speed(self, r: float) -> float:
        """Relative throughput at node power fraction ``r`` [-]."""
        got = self._speeds.get(r)
        if got is None:
            got = self._speeds[r] = 1.0 if r >= 1.0 else float(self.curve.throughput(r))
        return got

    def start_job(self, j: int, t0: float, t_cut: float, after_s: float = 0.0) -> None:
        """Run job ``j`` from ``t0`` at the current cap (plans change from ``t_cut``)."""
        p = self.plans.progress_s(j, t_cut)
        pieces = []
        if after_s > 0:
            pieces.append([1, t0, math.inf, t0 + after_s, self.idle_w, 0.0, False])
        pieces.append([0, t0 + after_s, math.inf, p, self.speed(self.r), self.r, False])
        self.plans.replan(j, t_cut, pieces)
        self.running_touched.add(j)

    # -- projection --------------------------------------------------------------------------
    def it_kw(self, a: int, b: int) -> np.ndarray:
        """IT power of steps ``a … b − 1`` with the plans so far [kW]."""
        pl, sv = self.plans, self.services
        pl.flush()
        return self.it_ol[a:b] + self.c_p * (pl.d_job_w[a:b] - self.idle_w * pl.d_busy[a:b]
                                             + sv.d_w[a:b]) \
            + self.c_b * (pl.d_busy[a:b] + sv.d_busy[a:b])

    def meter_kw(self, it: np.ndarray, a: int, b: int) -> np.ndarray:
        """Facility power at IT power ``it`` over steps ``a … b − 1``, battery excluded [kW].

        With a cooling lag, the cooling follows its steady state from the lag's state at the
        first step not yet final (the steps between it and ``a`` with the plans as they
        stand); before that step, the steady state."""
        ov = self.spec.overheads
        loss = losses_kw(it, self.rated_kw, ov)
        cool, _ = cooling_kw(it, loss, ov, None if self.temp is None else self.temp[a:b])
        if self.lag_s > 0 and a >= self.lag_at:
            if a > self.lag_at:
                it0 = self.it_kw(self.lag_at, a)
                loss0 = losses_kw(it0, self.rated_kw, ov)
                cool0, _ = cooling_kw(it0, loss0, ov, None if self.temp is None
                                      else self.temp[self.lag_at:a])
                cool = np.concatenate([cool0, cool])
            lag = CoolingLag(self.lag_s, self.h)
            lag.state_kw = self.lag_kw
            cool = lag(cool)[a - self.lag_at:]
        return it + loss + cool

    def advance(self, a: int, b: int) -> None:
        """Steps ``a … b − 1`` are final: carry the cooling lag over them and keep their
        means for the next :class:`FacilityState`."""
        if self.lag_s == 0 and self.limit.func is None:
            return  # neither a lag state nor a closed-loop state to keep
        it = self.it_kw(a, b)
        fac = self.meter_kw(it, a, b)
        loss = losses_kw(it, self.rated_kw, self.spec.overheads)
        self.last = (float(fac.mean()), float(it.mean()), float((fac - it - loss).mean()))
        if self.lag_s > 0:
            ov = self.spec.overheads
            cool, _ = cooling_kw(it, loss, ov, None if self.temp is None else self.temp[a:b])
            lag = CoolingLag(self.lag_s, self.h)
            lag.state_kw = self.lag_kw
            lag(cool)
            self.lag_kw, self.lag_at = lag.state_kw, b

    def project(self, a: int, b: int) -> np.ndarray:
        """Facility power of steps ``a … b − 1`` with the plans so far, battery excluded [kW]."""
        return self.meter_kw(self.it_kw(a, b), a, b)

    def gain(self, a: int, b: int) -> float:
        """Meter kW per W at the profiles' boundary over these steps (largest; losses and
        cooling included) [kW/W]."""
        it = self.it_kw(a, b)
        return float(np.max(self.meter_kw(it + 1.0, a, b) - self.meter_kw(it, a, b))) * self.c_p

    def state(self, k: int) -> FacilityState:
        time = self.start + pd.Timedelta(seconds=k * self.period_s)
        if k == 0:
            nan = math.nan
            return FacilityState(time, self.period_s, nan, nan, math.inf, nan, nan,
                                 None if self.battery is None else self.battery.soc,
                                 len(self.paused), self.r)
        a, b = (k - 1) * self.m, min(self.n, k * self.m)
        fac, it, cool = self.last
        return FacilityState(
            time, self.period_s, fac - float(self.battery_kw[k - 1]),
            float(self.fac_ol[a:b].mean()), float(self.limits[k - 1]), it, cool,
            None if self.battery is None else self.battery.soc, len(self.paused), self.r)


def _default_catalogue():
    from aiload.facility.catalogue import default_catalogue  # noqa: PLC0415

    return default_catalogue()
