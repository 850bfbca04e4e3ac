"""Sub-second power of large synchronous training jobs: iteration cycles, checkpoint stalls,
failures and restarts, start and stop ramps (opt-in: ``aiload.facility(..., dynamics=...)``).

A synchronous job's GPUs compute, then wait for the collective communication, in lockstep:
its power moves as one between a compute level and a communication level once per
iteration (Choukse et al. 2025, arXiv:2508.14318: synchronous training's swings lie at
0.2-3 Hz). A checkpoint stalls the whole job; an unexpected failure drops it to idle within
about a second and it restarts after a delay (Meta's Llama 3 report, Dubey et al. 2024,
arXiv:2407.21783: 419 unexpected interruptions in 54 days on 16,384 GPUs).

The model multiplies each dynamic job's power above idle, as the facility model sums it from
its profile, by a shape ``h(τ)``: piecewise linear between breakpoints and, over every whole
iteration, of mean 1 (so the profile's energy is kept while the job runs)::

    P_job(t) = n·P_idle + A(t)·h(t),   A = profile power − n·P_idle  (≥ 0)

``h`` is the iteration cycle (a ramp of ``transition_s`` from the communication level
``lo`` to the compute level ``hi``, ``hi`` for the rest of ``compute_share`` of the step, a
ramp down, ``lo`` for the rest; ``hi·c + lo·(1 − c) = 1`` with ``lo = comm_ratio·hi``),
``checkpoint_ratio`` during a checkpoint, 0 (idle) from ``drop_s`` after a failure until the
restart, and ramps from 0 at the start and to 0 at the end. Interval means of ``h`` are
exact (the integral of a piecewise-linear function). Where the job holds its nodes the
schedule is unchanged: failures and checkpoints cost work and energy, not time (an
assumption; the job log does not move).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

import numpy as np

from aiload.errors import InputError
from aiload.facility.curves import CumulativeEnergy

__all__ = ["IterationDynamics", "JobDynamics", "LLAMA3_FAILURES_PER_GPU_H", "SOURCES"]

#: unexpected interruptions per GPU-hour: 419 in 54 days on 16,384 H100 GPUs (Llama 3 report,
#: Dubey et al. 2024, arXiv:2407.21783, section 3.3.4) = 419 / (54 x 24 x 16,384)
LLAMA3_FAILURES_PER_GPU_H = 419.0 / (54.0 * 24.0 * 16384.0)

#: where each default comes from ("assumption" where nothing measured or published fixes it)
SOURCES = {
    "step_time_s": "assumption: 2 s, inside the 0.2-3 Hz band Choukse et al. 2025 "
                   "(arXiv:2508.14318) report for synchronous training; no trace in the "
                   "project resolves a large job's iteration (MLPerf logs are 2 s)",
    "compute_share": "assumption: 0.75 of the step computing",
    "comm_ratio": "assumption: power above idle while communicating 0.5 x that of compute",
    "transition_s": "assumption: 0.1 s between compute and communication levels",
    "checkpoint_interval_s": "assumption: a checkpoint every 30 min (None: off)",
    "checkpoint_s": "assumption: 30 s stall per checkpoint",
    "checkpoint_ratio": "assumption: power above idle during a checkpoint 0.2 x that of training",
    "failures_per_gpu_h": "Llama 3 report (Dubey et al. 2024, arXiv:2407.21783): 419 unexpected "
                          "interruptions in 54 days on 16,384 GPUs = 1.97e-5 per GPU-hour",
    "drop_s": "issue 28 / Llama 3 report ('instant' fluctuations): to idle within about 1 s",
    "restart_s": "assumption: 180 s from failure to restart (Llama 3 reports > 90 % effective "
                 "training time; at its failure rate a 65,536-GPU job fails ~31 times a day)",
    "start_ramp_s": "measured: WattAMeter 0.1 s log of a 4xH100 node, idle to full load "
                    "10-90 % in about 1 s (tests/data/wattameter-example-logs; NVML averages "
                    "over ~1 s, so the true rise may be faster)",
    "stop_ramp_s": "assumption: as the start ramp",
    "min_nodes": "assumption: jobs of 256 nodes or more are synchronous and large enough to "
                 "matter; smaller jobs keep their profile",
}


def _positive(name: str, value, *, zero: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not (value >= 0 if zero else value > 0):
        raise InputError(f"IterationDynamics.{name}: got {value!r}; expected a finite number "
                         f"{'>= 0' if zero else '> 0'}.")


@dataclass(frozen=True)
class IterationDynamics:
    """Parameters of the sub-second model; each default's source is in :data:`SOURCES`.

    Parameters
    ----------
    step_time_s : float
        Iteration period [s].
    compute_share : float
        Share of the period at the compute level, in (0, 1) [-].
    comm_ratio : float
        Power above idle while communicating over that while computing, in [0, 1] [-].
    transition_s : float
        Ramp between the two levels [s].
    checkpoint_interval_s : float or None
        Time between checkpoints from the job's start [s]; None: no checkpoint stalls.
    checkpoint_s : float
        Length of a checkpoint stall [s].
    checkpoint_ratio : float
        Power above idle during a stall over the training power above idle [-].
    failures_per_gpu_h : float
        Unexpected failures per GPU-hour of running time [1/h].
    drop_s : float
        Fall to idle after a failure [s].
    restart_s : float
        Time from a failure to the restart [s].
    start_ramp_s, stop_ramp_s : float
        Ramp from idle at a (re)start / to idle at the end [s].
    min_nodes : int
        Jobs of at least this many nodes get the dynamics [-].
    gpus_per_node : int, optional
        GPUs per node (failure rate per GPU); None: the ``N`` of a hardware name ``NxGPU``.
    """

    step_time_s: float = 2.0
    compute_share: float = 0.75
    comm_ratio: float = 0.5
    transition_s: float = 0.1
    checkpoint_interval_s: float | None = 1800.0
    checkpoint_s: float = 30.0
    checkpoint_ratio: float = 0.2
    failures_per_gpu_h: float = LLAMA3_FAILURES_PER_GPU_H
    drop_s: float = 1.0
    restart_s: float = 180.0
    start_ramp_s: float = 1.0
    stop_ramp_s: float = 1.0
    min_nodes: int = 256
    gpus_per_node: int | None = None

    def __post_init__(self) -> None:
        for name in ("step_time_s", "drop_s", "start_ramp_s", "stop_ramp_s", "checkpoint_s"):
            _positive(name, getattr(self, name))
        for name in ("transition_s", "failures_per_gpu_h", "restart_s"):
            _positive(name, getattr(self, name), zero=True)
        if not 0 < self.compute_share < 1:
            raise InputError(f"IterationDynamics.compute_share: got {self.compute_share!r}; "
                             "expected a share in (0, 1), e.g. 0.75.")
        for name in ("comm_ratio", "checkpoint_ratio"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 <= v <= 1):
                raise InputError(f"IterationDynamics.{name}: got {v!r}; expected a ratio in [0, 1].")
        c, t = self.compute_share, self.step_time_s
        if 2 * self.transition_s > min(c, 1 - c) * t * 2 or self.transition_s >= min(c, 1 - c) * t:
            raise InputError(
                f"IterationDynamics.transition_s = {self.transition_s:g} s does not fit the "
                f"{t:g} s step: each level lasts compute_share x step = {c * t:g} s and "
                f"{(1 - c) * t:g} s; expected transition_s below both.")
        if self.checkpoint_interval_s is not None:
            _positive("checkpoint_interval_s", self.checkpoint_interval_s)
            if self.checkpoint_interval_s <= self.checkpoint_s + 2 * self.transition_s:
                raise InputError("IterationDynamics.checkpoint_interval_s must exceed "
                                 f"checkpoint_s + 2 x transition_s; got "
                                 f"{self.checkpoint_interval_s!r}.")
        if isinstance(self.min_nodes, bool) or not isinstance(self.min_nodes, int) or self.min_nodes < 1:
            raise InputError(f"IterationDynamics.min_nodes: got {self.min_nodes!r}; expected an "
                             "integer >= 1.")

    @property
    def levels(self) -> tuple[float, float]:
        """(compute, communication) level of ``h`` [-], of mean 1 over a step."""
        c, r = self.compute_share, self.comm_ratio
        hi = 1.0 / (c + (1.0 - c) * r)
        return hi, r * hi

    def meta(self) -> dict:
        """Parameters with their sources (for ``FacilityLoad.meta['dynamics']``)."""
        return {"parameters": asdict(self), "sources": dict(SOURCES)}


def gpus_per_node(hardware: str, given: int | None) -> int:
    if given is not None:
        return int(given)
    m = re.match(r"^(\d+)x", hardware)
    if m is None:
        raise InputError(f"IterationDynamics.gpus_per_node: cannot read it from the hardware "
                         f"name {hardware!r}; give gpus_per_node=.")
    return int(m.group(1))


class _Shape:
    """A piecewise-linear ``h`` from breakpoints; 0 outside them; exact integrals."""

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        order = np.argsort(x, kind="stable")
        self.x, self.y = x[order], y[order]
        dx = np.diff(self.x)
        self.cum = np.concatenate(([0.0], np.cumsum(0.5 * (self.y[1:] + self.y[:-1]) * dx)))
        with np.errstate(divide="ignore", invalid="ignore"):
            self.slope = np.where(dx > 0, np.diff(self.y) / np.where(dx > 0, dx, 1.0), 0.0)

    def integral(self, t: np.ndarray) -> np.ndarray:
        """∫ h from the first breakpoint to ``t`` [s]."""
        x = self.x
        tt = np.clip(t, x[0], x[-1])
        i = np.clip(np.searchsorted(x, tt, side="right") - 1, 0, x.size - 2)
        d = tt - x[i]
        return self.cum[i] + self.y[i] * d + 0.5 * self.slope[i] * d * d


def _cycle_points(d: IterationDynamics, a: float, b: float, lo_t: float, hi_t: float):
    """Breakpoints of the iteration cycle on ``[a, b)`` (phase 0 at ``a``), kept near
    ``[lo_t, hi_t]`` (the output horizon)."""
    T, tr, c = d.step_time_s, d.transition_s, d.compute_share
    hi, lo = d.levels
    a0, b0 = max(a, lo_t - T), min(b, hi_t + T)
    if b0 <= a0:
        return np.empty(0), np.empty(0)
    k0 = math.floor((a0 - a) / T)
    k1 = math.ceil((b0 - a) / T)
    k = np.arange(k0, k1 + 1, dtype=np.float64)
    offs = np.array([0.0, tr, c * T, c * T + tr])
    vals = np.array([lo, hi, hi, lo])
    x = (a + k[:, None] * T + offs[None, :]).ravel()
    y = np.broadcast_to(vals, (k.size, 4)).ravel()
    keep = (x > a) & (x < b)
    return x[keep], y[keep]


def _cycle_value(d: IterationDynamics, a: float, t: float) -> float:
    T, tr, c = d.step_time_s, d.transition_s, d.compute_share
    hi, lo = d.levels
    p = (t - a) % T
    if p < tr:
        return lo + (hi - lo) * p / tr
    if p < c * T:
        return hi
    if p < c * T + tr:
        return hi - (hi - lo) * (p - c * T) / tr
    return lo


class JobDynamics:
    """The dynamic jobs of one run and their power change per output interval [W]."""

    def __init__(self, d: IterationDynamics, jobs, start_s: np.ndarray, cache, fleet,
                 freq_s: float, n_bins: int, rng: np.random.Generator) -> None:
        self.d, self.freq_s, self.n_bins = d, freq_s, n_bins
        self.idle_w = fleet.idle_w
        horizon = n_bins * freq_s
        g = gpus_per_node(fleet.hardware, d.gpus_per_node)
        rows = np.flatnonzero(np.isfinite(start_s) & (jobs.nodes >= d.min_nodes)
                              & (start_s < horizon) & (start_s + jobs.duration_s > 0))
        self.jobs = []
        self.failures: list[dict] = []
        self.checkpoints = 0
        for j in rows:
            s, e = float(start_s[j]), float(start_s[j] + jobs.duration_s[j])
            curve = CumulativeEnergy.from_profile(cache.get(jobs.model[j], jobs.profile_nodes[j]),
                                                  int(jobs.replicate[j]), float(jobs.duration_s[j]))
            shape = self._shape(s, e, int(jobs.nodes[j]) * g, horizon, rng, int(j))
            self.jobs.append((s, e, float(jobs.nodes[j]), curve, shape))

    def _shape(self, s, e, gpus, horizon, rng, j) -> _Shape:
        d = self.d
        lo_t, hi_t = 0.0, horizon
        # failures over the running time that can reach the output (a Poisson process)
        rate_per_s = d.failures_per_gpu_h * gpus / 3600.0
        down = []  # (failure, restart) times
        t = max(s + d.start_ramp_s, lo_t - (d.drop_s + d.restart_s + d.start_ramp_s))
        stop = min(e - d.stop_ramp_s, hi_t)
        while rate_per_s > 0:
            t += rng.exponential(1.0 / rate_per_s)
            if t >= stop:
                break
            back = t + max(d.restart_s, d.drop_s)
            if back + d.start_ramp_s >= e - d.stop_ramp_s:
                # no restart before the job's end: idle to the end of its allocation
                down.append((t, math.inf))
                self.failures.append({"job": j, "failure_s": t, "restart_s": None})
                break
            down.append((t, back))
            self.failures.append({"job": j, "failure_s": t, "restart_s": back})
            t = back + d.start_ramp_s
        # running segments between (re)starts, failures, checkpoints and the end
        events = [(s, "start")]
        for f, r in down:
            events += [(f, "fail")] + ([(r, "start")] if math.isfinite(r) else [])
        if d.checkpoint_interval_s is not None:
            first = math.ceil((max(s, lo_t - d.checkpoint_interval_s) - s) / d.checkpoint_interval_s)
            n_first = max(first, 1)
            last = math.floor((min(e, hi_t + d.checkpoint_interval_s) - s) / d.checkpoint_interval_s)
            for k in range(n_first, last + 1):
                tc = s + k * d.checkpoint_interval_s
                span = (tc, tc + d.checkpoint_s + 2 * d.transition_s)
                if span[1] >= e - d.stop_ramp_s or any(span[0] < r + d.start_ramp_s and span[1] > f
                                                       for f, r in down):
                    continue
                events.append((tc, "ckpt"))
                if lo_t <= tc < hi_t:
                    self.checkpoints += 1
        events.sort()
        xs, ys = [], []
        run_from = None  # phase origin of the running cycle
        for (t0, kind), nxt in zip(events, events[1:] + [(e - d.stop_ramp_s, "end")]):
            t1 = nxt[0]
            if kind == "start":
                a = t0 + d.start_ramp_s
                xs.append(np.array([t0, a])); ys.append(np.array([0.0, d.levels[1]]))
                run_from = a
                seg_end = t1
            elif kind == "ckpt":
                v = _cycle_value(d, run_from, t0)
                xs.append(np.array([t0, t0 + d.transition_s, t0 + d.transition_s + d.checkpoint_s])); ys.append(
                    np.array([v, d.checkpoint_ratio, d.checkpoint_ratio]))
                a = t0 + 2 * d.transition_s + d.checkpoint_s
                xs.append(np.array([a])); ys.append(np.array([d.levels[1]]))
                run_from = a
                seg_end = t1
            else:  # fail: from the cycle's value to idle in drop_s, idle until the restart
                v = _cycle_value(d, run_from, t0)
                xs.append(np.array([t0, t0 + d.drop_s])); ys.append(np.array([v, 0.0]))
                run_from = None
                continue
            cx, cy = _cycle_points(d, run_from, seg_end, lo_t, hi_t)
            xs.append(cx); ys.append(cy)
            if nxt[1] == "end":
                v = _cycle_value(d, run_from, t1)
                xs.append(np.array([t1, e])); ys.append(np.array([v, 0.0]))
            # before a failure or a checkpoint, that event adds its own breakpoint at t1
        return _Shape(np.concatenate(xs), np.concatenate(ys))

    def window(self, w0: int, w1: int) -> np.ndarray:
        """Change of the jobs' power in output intervals ``w0 … w1 − 1`` [W] (profile
        boundary, like the job power it is added to)."""
        dt = self.freq_s
        out = np.zeros(w1 - w0)
        edges = np.arange(w0, w1 + 1, dtype=np.float64) * dt
        for s, e, nodes, curve, shape in self.jobs:
            if e <= edges[0] or s >= edges[-1]:
                continue
            lo = max(int(np.searchsorted(edges, s, side="right")) - 1, 0)
            hi = min(int(np.searchsorted(edges, e, side="left")), edges.size - 1)
            ed = edges[lo:hi + 1]
            busy = np.clip(np.minimum(e, ed[1:]) - np.maximum(s, ed[:-1]), 0.0, dt)
            above = nodes * np.diff(curve(ed - s)) - nodes * self.idle_w * busy  # [J]
            above = np.maximum(above, 0.0)
            h = np.diff(shape.integral(ed))  # ∫ h over each interval [s]
            with np.errstate(divide="ignore", invalid="ignore"):
                change = np.where(busy > 0, above * (h / np.where(busy > 0, busy, 1.0) - 1.0), 0.0)
            out[lo:hi] += change / dt
        return out

    def meta(self) -> dict:
        m = self.d.meta()
        m |= {"jobs": len(self.jobs), "failures": list(self.failures),
              "checkpoints_in_output": self.checkpoints}
        return m
