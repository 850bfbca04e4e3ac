"""Exact summation of job power onto an output grid, in energy per bin.

Each job contributes ``nodes × p(t − start)`` where ``p`` is its per-node profile; with ``E`` the
profile's cumulative energy (piecewise linear, so exact between its samples) the job's energy in
bin ``[t_k, t_{k+1})`` is ``nodes·(E(t_{k+1} − s) − E(t_k − s))``.

:func:`jobs_energy_per_bin_j` (and its one-curve form :func:`job_energy_per_bin_j`) first
rounds each start to the placement grid ``r = f / ceil(f / 0.1 s)`` (0.1 s for every output
step ``f`` that is a multiple of 0.1 s: 0.1 s is aiload's finest output step and the sampling
interval of the measured profiles). A start then lies at ``m·f + b·r`` and all jobs of a
profile curve in slot ``b`` share one kernel ``kern_b[k] = E((k+1)·f − b·r) − E(k·f − b·r)``:
evaluated exactly, once per slot that occurs, and added at bin ``m`` times the job's nodes.
The shift (≤ r/2 = 0.05 s, against job start-ups of minutes) is physically immaterial; every
job's energy is exact and its shape is integrated exactly from the placed start, and runs at
1 s and at 1 min place jobs identically, so the 1-s series summed to minutes equals the 1-min
run to float rounding. The slice adds run in one compiled loop when numba is importable
(optional) and in batched numpy otherwise; both add the same products in the same order, so
they agree bit for bit. The jobs are added curve by curve, each curve's jobs in input order;
threads split the output bins.

The facility model uses :class:`RunSums` where numba is loaded: the live-job filter, the
placement, the kernel lookup and the adds of a whole window in one compiled loop over kernel
rows kept in a :class:`KernelCache` (same jobs, order and bits as the planned adds of
:func:`plan_jobs_energy`). Busy and queued series are per-bin box integrals,
:func:`box_seconds_per_bin`.

:func:`job_energy_at_edges` evaluates the cumulative energy at every bin edge inside every job
at the exact starts: ~10x slower at fine steps, kept as the reference the tests compare with.
Sums are float64.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from aiload.facility._compiled import numba_loops as _numba_loops
from aiload.profiles._profile import Profile

__all__ = ["CumulativeEnergy", "job_energy_per_bin_j", "jobs_energy_per_bin_j", "plan_jobs_energy",
           "Placement", "KernelCache", "RunSums",
           "job_energy_at_edges", "ramp_at_edges",
           "box_seconds_per_bin",
           "placement_grid", "PLACEMENT_STEP_S", "POINTS_PER_CHUNK", "AUTO_NUMBA_MIN_POINTS",
           "AUTO_NUMBA_MIN_BATCHED_VALUES", "numba_available", "numba_loaded"]

#: finest placement of job starts [s]: aiload's finest output step and the sampling interval
#: of the measured profiles
PLACEMENT_STEP_S = 0.1
#: runs of at least this many equal-length jobs are added as one 2-D block by the numpy path
_BLOCK_MIN_JOBS = 16
#: jobs with at least this many bins are added one slice at a time by the numpy path
_SLICE_MIN_VALUES = 1024

#: interior edge evaluations per vectorised chunk (bounds temporary memory to ~0.5 GB)
POINTS_PER_CHUNK = 8_000_000
#: below this many interior evaluations ``method="auto"`` stays with numpy: importing numba
#: and compiling the loop (1–3 s, once per process) costs more than it saves
AUTO_NUMBA_MIN_POINTS = 2_000_000
#: :func:`job_energy_per_bin_j` with ``method="auto"`` imports and compiles numba (~1 s, once
#: per process) for a call that adds at least this many values in batches (short jobs; see
#: :func:`_place_numpy`), the work where numpy is several times slower than the compiled loop
AUTO_NUMBA_MIN_BATCHED_VALUES = 10_000_000


@dataclass(frozen=True)
class CumulativeEnergy:
    """Cumulative per-node energy of one profile replicate, repeated to ``duration_s``.

    Attributes
    ----------
    knots_s : ndarray
        Profile interval edges ``0, Δ, 2Δ, …, L`` [s].
    energy_j : ndarray
        Cumulative energy at the knots [J].
    duration_s : float
        Job length [s]; beyond ``L`` the profile repeats cyclically.
    """

    knots_s: np.ndarray
    energy_j: np.ndarray
    duration_s: float

    @classmethod
    def from_profile(cls, profile: Profile, replicate: int, duration_s: float | None = None):
        power = np.asarray(profile.power_w.to_numpy(dtype=np.float64)[:, replicate])
        energy = np.concatenate(([0.0], np.cumsum(power * profile.step_s)))
        knots = np.arange(len(energy), dtype=np.float64) * profile.step_s
        return cls(knots, energy, float(duration_s or profile.duration_s))

    @property
    def total_j(self) -> float:
        """Energy of one node over the whole job [J]."""
        return float(self(np.array([self.duration_s]))[0])

    def __call__(self, tau_s: np.ndarray) -> np.ndarray:
        """Cumulative energy at elapsed times ``tau_s`` (0 before 0, held after ``duration_s``) [J]."""
        # knots are uniform, so the interval is found by division, not a binary search
        step = self.knots_s[1]
        period = self.knots_s[-1]
        e = self.energy_j
        last = len(e) - 2
        tau = np.clip(tau_s, 0.0, self.duration_s)  # 0 before the start, held after the end
        if self.duration_s > period:
            cycles = np.floor(tau / period)
            pos = (tau - cycles * period) / step
            k = np.minimum(pos.astype(np.int64), last)
            return cycles * e[-1] + e[k] + (pos - k) * (e[k + 1] - e[k])
        pos = tau / step
        k = np.minimum(pos.astype(np.int64), last)
        slope = self.slope_j
        return e[k] + (pos - k) * slope[k]

    @property
    def slope_j(self) -> np.ndarray:
        """Energy per profile interval [J] (cached)."""
        cached = self.__dict__.get("_slope")
        if cached is None:
            cached = np.diff(self.energy_j)
            object.__setattr__(self, "_slope", cached)
        return cached


def _interior_numba():
    """The compiled interior loop of :func:`job_energy_at_edges`, or None without numba."""
    loops = _numba_loops()
    return None if loops is None else loops.interior


def _place_numba():
    """The compiled slice-add loop of :func:`job_energy_per_bin_j`, or None without numba."""
    loops = _numba_loops()
    return None if loops is None else loops.place


def numba_available() -> bool:
    """True when the compiled summation loops are used (numba importable)."""
    return _numba_loops() is not None


def numba_loaded() -> bool:
    """True when the compiled loops are already built in this process (no import, no compile).

    Their slice adds release the GIL, so the model may then sum profile groups in threads.
    """
    return bool(_numba_loops.cache_info().currsize) and _numba_loops() is not None


def job_energy_at_edges(
    edges_s: np.ndarray, start_s: np.ndarray, nodes: np.ndarray, curve: CumulativeEnergy,
    *, method: str = "auto",
) -> np.ndarray:
    """Cumulative energy of jobs sharing one profile curve at every edge [J].

    Parameters
    ----------
    edges_s : ndarray
        Uniformly spaced, increasing bin edges [s].
    start_s, nodes : ndarray
        Start time [s] and node count [-] of each job.
    curve : CumulativeEnergy
    method : {"auto", "numba", "numpy"}
        Interior evaluation: compiled loop or chunked numpy. ``"auto"`` uses the compiled
        loop when numba is importable and the call has at least
        :data:`AUTO_NUMBA_MIN_POINTS` interior evaluations. Both evaluate the same formula;
        sums differ only by float rounding order.

    Returns
    -------
    ndarray of float64, shape ``edges_s.shape``
        ``Σ_j nodes_j·E(edge − s_j)`` [J]; its ``diff`` is the energy per bin.
    """
    if method not in ("auto", "numba", "numpy"):
        raise ValueError(f"method: expected 'auto', 'numba' or 'numpy', got {method!r}.")
    n_edges = len(edges_s)
    out = np.zeros(n_edges, dtype=np.float64)
    if len(start_s) == 0:
        return out
    step = edges_s[1] - edges_s[0] if n_edges > 1 else 1.0
    end_s = start_s + curve.duration_s
    first = np.searchsorted(edges_s, start_s, side="right")  # first edge strictly inside
    last = np.searchsorted(edges_s, end_s, side="left")  # first edge at/after the end
    small = int(np.clip(last - first, 0, None).sum()) < AUTO_NUMBA_MIN_POINTS
    kernel = None if method == "numpy" or (method == "auto" and small) else _interior_numba()
    if kernel is None and method == "numba":
        raise ImportError("job_energy_at_edges(method='numba'): numba is not installed.")
    if kernel is not None:
        # the constant tail starts at each job's first edge at/after its end
        tail = np.bincount(last, weights=nodes * curve.total_j, minlength=n_edges + 1)
        inner = np.zeros(n_edges, dtype=np.float64)
        lead_s = edges_s[0] + first * step - start_s
        kernel(inner, first.astype(np.int64), last.astype(np.int64), lead_s,
               np.asarray(nodes, dtype=np.float64), float(step), curve.energy_j,
               float(curve.knots_s[1]), float(curve.knots_s[-1]), float(curve.duration_s))
        return np.cumsum(tail[:n_edges]) + inner
    width = int(np.max(last - first, initial=0))
    # every job is evaluated at `width` edges from its first one; edges past its end return the
    # job's total energy (the curve holds it), and the constant tail starts right after them
    tail = np.zeros(n_edges + width + 1, dtype=np.float64)
    np.add.at(tail, first + width, nodes * curve.total_j)
    out += np.cumsum(tail[:n_edges])
    if width == 0:
        return out
    rows = max(1, POINTS_PER_CHUNK // width)
    offsets = np.arange(width)
    offsets_s = offsets * step
    inner = np.zeros(n_edges + width, dtype=np.float64)
    for j0 in range(0, len(first), rows):
        j1 = min(len(first), j0 + rows)
        f = first[j0:j1]
        lead_s = edges_s[0] + f * step - start_s[j0:j1]  # first interior edge − start
        energy = curve(lead_s[:, None] + offsets_s) * nodes[j0:j1, None]
        inner += np.bincount((f[:, None] + offsets).ravel(), weights=energy.ravel(),
                             minlength=n_edges + width)[: n_edges + width]
    return out + inner[:n_edges]


def ramp_at_edges(
    edges_s: np.ndarray, start_s: np.ndarray, end_s: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """``Σ_j w_j·(min(t, e_j) − s_j)⁺`` at every edge: integral of boxcar counts [unit·s].

    With ``weight`` = nodes its ``diff`` is the busy node-seconds per bin; with weight 1 on
    ``[arrival, start)`` the queued job-seconds. Exact for any placement of the boxes.
    """
    n = len(edges_s)
    weight = np.broadcast_to(np.asarray(weight, dtype=np.float64), np.shape(start_s))
    at = np.concatenate((np.searchsorted(edges_s, start_s, side="left"),
                         np.searchsorted(edges_s, end_s, side="left")))
    # bincount adds in input order, as np.add.at did (same sums), several times faster
    slope = np.bincount(at, weights=np.concatenate((weight, -weight)), minlength=n + 1)
    offset = np.bincount(at, weights=np.concatenate((-weight * start_s, weight * end_s)),
                         minlength=n + 1)
    return np.cumsum(slope[:-1]) * edges_s + np.cumsum(offset[:-1])


def box_seconds_per_bin(
    start_s: np.ndarray, end_s: np.ndarray, weight: np.ndarray, *, step_s: float, n_bins: int,
) -> np.ndarray:
    """``Σ_j w_j·|[k·f, (k+1)·f) ∩ [s_j, e_j)|`` for every bin ``k < n_bins`` [unit·s].

    The per-bin form of :func:`ramp_at_edges` on the edges ``k·f`` (busy node-seconds with
    ``weight`` = nodes, queued job-seconds with weight 1), computed without the cumulative
    ramp: bins a box covers whole get ``w·f`` from a running count of the boxes open there,
    its first and last bin get their parts. No large cumulative sums cancel, and each box
    adds exactly ``w·(e − s)`` over the bins (clipped to ``[0, n_bins·f)``) however floor
    rounding places its ends. Boxes with ``e <= s`` add nothing.
    """
    out = np.zeros(n_bins, dtype=np.float64)
    span_s = n_bins * step_s
    s = np.clip(np.asarray(start_s, dtype=np.float64), 0.0, span_s)
    e = np.clip(np.asarray(end_s, dtype=np.float64), 0.0, span_s)
    w = np.broadcast_to(np.asarray(weight, dtype=np.float64), s.shape)
    keep = e > s
    if not keep.all():
        s, e, w = s[keep], e[keep], w[keep]
    if len(s) == 0 or n_bins == 0:
        return out
    ks = np.minimum((s / step_s).astype(np.int64), n_bins - 1)
    ke = np.minimum((e / step_s).astype(np.int64), n_bins)
    ke = np.maximum(ke, ks)  # float rounding never puts an end before its start's bin
    one = ke == ks
    at = np.concatenate((ks + 1, ke))
    # whole bins ks+1 … ke−1: +w from ks+1, −w from ke (a running count of open boxes)
    w_whole = np.where(one, 0.0, w)
    count = np.bincount(at, weights=np.concatenate((w_whole, -w_whole)), minlength=n_bins + 2)
    np.cumsum(count[:n_bins], out=out)
    out *= step_s
    first = np.where(one, e - s, (ks + 1) * step_s - s)  # the start bin's part
    last = np.where(one, 0.0, e - ke * step_s)  # the end bin's part (0 when ke == n_bins)
    at[:len(ks)] = ks
    out += np.bincount(at, weights=np.concatenate((w * first, w * last)),
                       minlength=n_bins + 1)[:n_bins]
    return out


def placement_grid(step_s: float) -> tuple[float, int]:
    """Grid on which :func:`job_energy_per_bin_j` places job starts, for output step ``step_s``.

    Parameters
    ----------
    step_s : float
        Output step ``f`` [s].

    Returns
    -------
    placement_s : float
        ``r = f / q`` [s], with ``q = ceil(f / PLACEMENT_STEP_S)``: 0.1 s for every output
        step that is a multiple of 0.1 s, so runs at 1 s and at 1 min place jobs identically.
    per_bin : int
        ``q``, placement slots per output bin [-].
    """
    if not np.isfinite(step_s) or step_s <= 0:
        raise ValueError(f"step_s: expected a positive number of seconds, got {step_s!r}.")
    # round away float noise such as 0.3 / 0.1 = 2.9999999999999996 before the ceiling
    per_bin = max(1, int(np.ceil(round(step_s / PLACEMENT_STEP_S, 9))))
    return step_s / per_bin, per_bin


def job_energy_per_bin_j(
    start_s: np.ndarray, nodes: np.ndarray, curve: CumulativeEnergy, *, step_s: float,
    n_bins: int, first_bin: int = 0, method: str = "auto", threads: int = 1,
) -> np.ndarray:
    """Energy of jobs sharing one profile curve in each output bin [J], starts on the grid.

    :func:`jobs_energy_per_bin_j` for one curve (see there); jobs are added in input order.
    """
    return jobs_energy_per_bin_j(start_s, nodes, np.zeros(len(np.atleast_1d(start_s)), np.int64),
                                 [curve], step_s=step_s, n_bins=n_bins, first_bin=first_bin,
                                 method=method, threads=threads)


def jobs_energy_per_bin_j(
    start_s: np.ndarray, nodes: np.ndarray, curve_index: np.ndarray,
    curves: Sequence[CumulativeEnergy], *, step_s: float, n_bins: int, first_bin: int = 0,
    method: str = "auto", threads: int = 1, kernels: KernelCache | None = None,
) -> np.ndarray:
    """Energy of jobs of several profile curves in each output bin [J], starts on the grid.

    Each start is rounded to the nearest multiple of ``r`` (:func:`placement_grid`), i.e.
    ``m·f + b·r`` with bin ``m`` and slot ``b < q``. All jobs of one curve in slot ``b`` then
    share one kernel, ``kern_b[k] = E((k+1)·f − b·r) − E(k·f − b·r)`` (``E`` clipped at 0 and
    at the job's end, as :class:`CumulativeEnergy` does), evaluated exactly for the (curve,
    slot) pairs that occur, and ``nodes_j·kern_{b_j}`` is added at bin ``m_j``. Energy is
    summed per bin (no cumulative tails), in float64, adding the jobs in order of curve and
    then in input order, whatever the method and the number of threads.

    Parameters
    ----------
    start_s : ndarray
        Start time of each job [s], on the clock where bin ``i`` of the whole run covers
        ``[i·step_s, (i+1)·step_s)``.
    nodes : ndarray
        Node count of each job [-] (the kernel's weight).
    curve_index : ndarray of int
        Each job's profile curve: an index into ``curves``.
    curves : sequence of CumulativeEnergy
        Per-node cumulative energy of each profile curve [J].
    step_s : float
        Output step ``f`` [s].
    n_bins : int
        Bins returned [-].
    first_bin : int
        Index of the first bin returned (a streaming window's offset) [-]. Energy outside
        bins ``first_bin … first_bin + n_bins − 1`` is not added.
    method : {"auto", "numba", "numpy"}
        Slice adds in one compiled loop or in chunked numpy; both add the same products in the
        same order, so their results are identical. ``"auto"`` uses the compiled loop when
        numba is already loaded, or is importable and the call adds at least
        :data:`AUTO_NUMBA_MIN_BATCHED_VALUES` values in batches.
    threads : int
        Threads of the compiled loop, each adding every job to its own range of bins (same
        order per bin, so the same bits); the numpy path uses one.
    kernels : KernelCache, optional
        Kernel rows kept across calls of one run (windows, time slices): built for the same
        ``curves`` and ``step_s``. Same result as without.

    Returns
    -------
    ndarray of float64, shape ``(n_bins,)``
        Energy per bin [J]; divide by ``step_s`` for the mean power [W].
    """
    out = np.zeros(n_bins, dtype=np.float64)
    return plan_jobs_energy(start_s, nodes, curve_index, curves, step_s=step_s, n_bins=n_bins,
                            first_bin=first_bin, method=method,
                            kernels=kernels).add_to(out, threads)


@dataclass(frozen=True)
class Placement:
    """The slice adds planned by :func:`plan_jobs_energy`; :meth:`add_to` performs them.

    Attributes
    ----------
    n_bins : int
        Length of the output the adds are for [-].
    compiled : bool
        Whether the compiled loop performs them (else numpy, same bits).
    chunks : iterable
        ``(table, offset, length, pos, weight)`` per chunk: ``out[pos_j + i] += weight_j ·
        table[offset_j + i]`` for ``i < length_j``. Read once.
    """

    n_bins: int
    compiled: bool
    chunks: Iterable

    def add_to(self, out: np.ndarray, threads: int = 1) -> np.ndarray:
        """Add the planned energy into ``out`` (float64, contiguous, ``n_bins`` long) [J].

        The compiled adds release the GIL: a placement planned in one thread can be added
        in another while the first goes on (the facility model overlaps it with SimPy).
        """
        if out.shape != (self.n_bins,) or out.dtype != np.float64:
            raise ValueError(f"out: expected float64 of shape ({self.n_bins},), got "
                             f"{out.dtype} of shape {out.shape}.")
        place = _place_numba() if self.compiled else None
        for table, offset, length, pos, weight in self.chunks:
            if place is None:
                _place_numpy(out, table, offset, length, pos, weight)
            else:
                _place_compiled(place, out, table, offset, length, pos, weight, threads)
        return out


def plan_jobs_energy(
    start_s: np.ndarray, nodes: np.ndarray, curve_index: np.ndarray,
    curves: Sequence[CumulativeEnergy], *, step_s: float, n_bins: int, first_bin: int = 0,
    method: str = "auto", kernels: KernelCache | None = None,
) -> Placement:
    """Plan the slice adds of :func:`jobs_energy_per_bin_j` (same parameters) without doing them.

    With ``kernels`` the kernel tables are built here (missing rows only); without, chunk by
    chunk as the adds are performed.
    """
    if method not in ("auto", "numba", "numpy"):
        raise ValueError(f"method: expected 'auto', 'numba' or 'numpy', got {method!r}.")
    start_s = np.asarray(start_s, dtype=np.float64)
    nodes = np.asarray(nodes, dtype=np.float64)
    curve_index = np.asarray(curve_index, dtype=np.int64)
    if len(start_s) == 0 or n_bins == 0:
        return Placement(n_bins, False, ())
    if curve_index.shape != start_s.shape or curve_index.min() < 0 or \
            curve_index.max() >= len(curves):
        raise ValueError(f"curve_index: expected one index into the {len(curves)} curves per "
                         f"job, got {curve_index!r}.")
    if kernels is not None and (len(kernels.curves) != len(curves) or any(
            a is not b for a, b in zip(kernels.curves, curves)) or kernels.step_s != step_s):
        raise ValueError("kernels: a KernelCache built for other curves or another step_s; "
                         "build one per run with KernelCache(curves, step_s).")
    if np.any(curve_index[1:] < curve_index[:-1]):  # curve by curve, input order within
        order = np.argsort(curve_index, kind="stable")
        start_s, nodes, curve_index = start_s[order], nodes[order], curve_index[order]
    placement_s, per_bin = placement_grid(step_s)
    bin_start, slot = np.divmod(np.rint(start_s / placement_s).astype(np.int64), per_bin)
    m = bin_start - first_bin  # start bin within the window
    # the job covers [b·r, b·r + D) from the start of bin m, and b·r < f
    widths = _kernel_widths(curves, step_s)
    k0 = np.maximum(-m, 0)
    k1 = np.minimum(widths[curve_index], n_bins - m)
    live = np.flatnonzero(k1 > k0)
    if len(live) == 0:
        return Placement(n_bins, False, ())
    m, k0, k1, nodes = m[live], k0[live], k1[live], nodes[live]
    key = curve_index[live] * per_bin + slot[live]  # the (curve, slot) pair
    batched = int(np.minimum(k1 - k0, _SLICE_MIN_VALUES).sum())
    place = None
    if method == "numba" or (method == "auto" and (
            _numba_loops.cache_info().currsize or batched >= AUTO_NUMBA_MIN_BATCHED_VALUES)):
        place = _place_numba()
        if place is None and method == "numba":
            raise ImportError("job_energy_per_bin_j(method='numba'): numba is not installed.")
    table_method = "numpy" if place is None else "numba"
    if kernels is not None:
        offset = kernels.offsets(key, table_method) + k0
        return Placement(n_bins, place is not None,
                         [(kernels.table, offset, k1 - k0, m + k0, nodes)])
    return Placement(n_bins, place is not None,
                     _chunks(curves, step_s, m, key, k0, k1, nodes, table_method))


class RunSums:
    """The job energy of one run, window by window, in one compiled loop per window.

    For runs whose every kernel row fits a :class:`KernelCache` (:meth:`fits`) with numba
    loaded: all rows are built once, and :meth:`add` gives, for any window and any starts
    decided so far, exactly the figures of :func:`jobs_energy_per_bin_j` with the live-job
    filter of the facility model (``start < t1 + f`` and ``start + D > t0 − f``): the same
    jobs, kernels and adds in the same order. The loop holds the GIL only to start and return,
    so a window can be summed in one thread while another runs SimPy.
    """

    def __init__(self, duration_s: np.ndarray, nodes: np.ndarray, curve_index: np.ndarray,
                 kernels: KernelCache) -> None:
        loops = _numba_loops()
        if loops is None:
            raise ImportError("RunSums needs numba; use jobs_energy_per_bin_j without it.")
        self._place_run = loops.place_run
        self.duration_s = np.ascontiguousarray(duration_s, dtype=np.float64)
        self.nodes = np.ascontiguousarray(nodes, dtype=np.float64)
        self.curve = np.ascontiguousarray(curve_index, dtype=np.int64)
        self.order = np.argsort(self.curve, kind="stable").astype(np.int64)
        self.kernels = kernels
        self.widths = _kernel_widths(kernels.curves, kernels.step_s)
        self.offsets = self.table = None

    def prepare(self, start_s: np.ndarray | None = None) -> RunSums:
        """Build the kernel rows, once: every slot's row of the curves used, or with
        ``start_s`` (final starts) only the rows those starts need. The first :meth:`add`
        prepares with its own starts if this was not called."""
        if self.offsets is not None:
            return self
        if start_s is None:
            self.offsets = self.kernels.dense_offsets(self.curve, "numba")
        else:
            s = np.asarray(start_s, dtype=np.float64)
            ok = np.isfinite(s)
            per_bin = self.kernels._per_bin
            slot = np.rint(s[ok] / self.kernels._placement_s).astype(np.int64) % per_bin
            keys = np.unique(self.curve[ok] * per_bin + slot)
            dense = np.full((len(self.kernels.curves), per_bin), -1, dtype=np.int64)
            if len(keys):
                dense.reshape(-1)[keys] = self.kernels.offsets(keys, "numba")
            self.offsets = dense
        self.table = self.kernels.table
        return self

    @staticmethod
    def fits(curves: Sequence[CumulativeEnergy], step_s: float, curve_index: np.ndarray,
             max_values: int, *, all_slots: bool = True) -> bool:
        """Whether the kernel rows fit in ``max_values`` floats: every slot's row of the curves
        used (``all_slots``, for sums before the starts are final), or the most rows the jobs
        can need (one per job and slot: :meth:`KernelCache.bound_values`)."""
        if not all_slots:
            return KernelCache.bound_values(curves, step_s, curve_index) <= max_values
        used = np.unique(np.asarray(curve_index, dtype=np.int64))
        per_bin = placement_grid(step_s)[1]
        return int(((_kernel_widths(curves, step_s)[used] + 1) * per_bin).sum()) <= max_values

    def add(self, out: np.ndarray, start_s: np.ndarray, first_bin: int, *,
            threads: int = 1) -> np.ndarray:
        """Add the energy of bins ``first_bin …`` (``len(out)`` of them) into ``out`` [J].

        ``start_s``: every job's start so far (``inf`` where not started). With ``threads``
        > 1 each thread adds every job to its own range of bins (same bits).
        """
        if out.dtype != np.float64 or out.ndim != 1 or not out.flags.c_contiguous:
            raise ValueError(f"out: expected a contiguous 1-D float64 array, got {out.dtype} "
                             f"of shape {out.shape}.")
        self.prepare(start_s)
        step = self.kernels.step_s
        n = len(out)
        t0, t1 = first_bin * step, (first_bin + n) * step
        args = (int(first_bin), t0 - step, t1 + step,
                np.ascontiguousarray(start_s, dtype=np.float64), self.duration_s, self.nodes,
                self.curve, self.order, self.table, self.offsets, self.widths,
                float(self.kernels._placement_s), int(self.kernels._per_bin))
        if threads < 2 or n < 2 * threads:
            self._place_run(out, 0, n, *args)
            return out
        cuts = np.linspace(0, n, threads + 1).astype(np.int64).tolist()
        with ThreadPoolExecutor(threads) as pool:
            done = [pool.submit(self._place_run, out, lo, hi, *args)
                    for lo, hi in zip(cuts[:-1], cuts[1:])]
            for fut in done:
                fut.result()
        return out


def _chunks(curves, step_s, m, key, k0, k1, nodes, method):
    """The slice adds chunk by chunk, each chunk's kernel table built when it is reached."""
    placement_s, per_bin = placement_grid(step_s)
    rows = _kernel_rows(m, key, k0, k1)
    for row_slice, job_idx in _row_chunks(rows):
        row_key, row_lo, row_hi = (a[row_slice] for a in rows[:3])
        table, row_first = _curves_table(curves, step_s, placement_s, per_bin, row_key,
                                         row_lo, row_hi, method)
        row = rows[3][job_idx] - row_slice.start
        yield (table, row_first[row] + k0[job_idx] - row_lo[row], k1[job_idx] - k0[job_idx],
               m[job_idx] + k0[job_idx], nodes[job_idx])


def _kernel_widths(curves, step_s) -> np.ndarray:
    """Bins a job of each curve can touch once placed: ``ceil(D / f) + 1`` [-]."""
    return np.array([int(np.ceil(c.duration_s / step_s)) + 1 for c in curves], np.int64)


class KernelCache:
    """Whole per-bin kernels of profile curves at one output step, built once and kept.

    Row ``(curve c, slot b)`` holds ``kern_b[k]`` for every ``k < ceil(D_c / f) + 1``, the
    same floats :func:`jobs_energy_per_bin_j` evaluates without a cache. The windows of a
    streamed run and the time slices of the facility model then share the rows instead of
    rebuilding them: a job that started in an earlier window reads its row from ``k0``.
    Memory: at most :meth:`bound_values` floats.

    Rows are only added, never changed; a growing table is a new array, so a placement
    planned earlier keeps reading the array it was planned with.
    """

    def __init__(self, curves: Sequence[CumulativeEnergy], step_s: float) -> None:
        self.curves = tuple(curves)
        self.step_s = float(step_s)
        self._placement_s, self._per_bin = placement_grid(step_s)
        self._widths = _kernel_widths(self.curves, step_s)
        self._buf = np.empty(0, dtype=np.float64)
        self._size = 0
        self._keys = np.empty(0, dtype=np.int64)  # sorted
        self._first = np.empty(0, dtype=np.int64)

    @staticmethod
    def bound_values(curves: Sequence[CumulativeEnergy], step_s: float,
                     curve_index: np.ndarray) -> int:
        """Most floats a cache can hold for jobs of these curves: ``Σ_c (width_c + 1)·min(q, n_c)``
        (a row takes its kernel and one separating value)."""
        per_bin = placement_grid(step_s)[1]
        jobs = np.bincount(np.asarray(curve_index, dtype=np.int64), minlength=len(curves))
        return int(((_kernel_widths(curves, step_s) + 1) * np.minimum(jobs, per_bin)).sum())

    @property
    def table(self) -> np.ndarray:
        """All rows, flat (read-only use)."""
        return self._buf[:self._size]

    def dense_offsets(self, curves_used: np.ndarray, method: str = "auto") -> np.ndarray:
        """Build every slot's row of the curves used; offsets as an array ``[curve, slot]``.

        Rows of curves not used are ``-1`` (never read).
        """
        curves_used = np.unique(np.asarray(curves_used, dtype=np.int64))
        keys = (curves_used[:, None] * self._per_bin + np.arange(self._per_bin)).ravel()
        dense = np.full((len(self.curves), self._per_bin), -1, dtype=np.int64)
        if len(keys):
            dense.reshape(-1)[keys] = self.offsets(keys, method)
        return dense

    def offsets(self, key: np.ndarray, method: str = "auto") -> np.ndarray:
        """Where row ``key = curve·q + slot`` starts in :attr:`table`, building missing rows."""
        uniq = np.unique(key)
        at = np.searchsorted(self._keys, uniq)
        known = (at < len(self._keys)) & (self._keys[np.minimum(at, len(self._keys) - 1)] == uniq) \
            if len(self._keys) else np.zeros(len(uniq), dtype=bool)
        if not known.all():
            self._add(uniq[~known], method)
        return self._first[np.searchsorted(self._keys, key)]

    def _add(self, keys: np.ndarray, method: str) -> None:
        curve, slot = np.divmod(keys, self._per_bin)
        n_edges = self._widths[curve] + 1
        first = np.concatenate(([0], np.cumsum(n_edges)[:-1]))
        total = int(n_edges.sum())
        if self._size + total > len(self._buf):
            grown = np.empty(max(self._size + total, 2 * len(self._buf)), dtype=np.float64)
            grown[:self._size] = self._buf[:self._size]
            self._buf = grown
        # edge energies straight into the table, then differences in place: row i's kernel
        # at first[i] … first[i] + width − 1 (the last edge's slot is free for the next row)
        energy = self._buf[self._size:self._size + total]
        cut = (np.flatnonzero(np.diff(curve)) + 1).tolist()
        for a, b in zip([0] + cut, cut + [len(keys)]):
            stop = first[b] if b < len(first) else total
            _kernel_energy(energy[first[a]:stop], self.curves[int(curve[a])], self.step_s,
                           self._placement_s, slot[a:b], np.zeros(b - a, dtype=np.int64),
                           n_edges[a:b], method)
        loops = _numba_loops() if _numba_loops.cache_info().currsize else None
        if loops is not None and method != "numpy":
            loops.diff_in_place(energy)
        else:
            energy[:-1] = energy[1:] - energy[:-1]
        need = self._size + total - 1
        all_keys = np.concatenate((self._keys, keys))
        all_first = np.concatenate((self._first, self._size + first))
        order = np.argsort(all_keys, kind="stable")
        self._keys, self._first = all_keys[order], all_first[order]
        self._size = need


#: the compiled slice adds use threads only from this many values on (a thread costs ~0.1 ms)
_THREAD_MIN_VALUES = 1_000_000


def _place_compiled(place, out, table, offset, length, pos, weight, threads):
    """The compiled slice adds over all bins, split into ``threads`` ranges of bins."""
    n = len(out)
    if threads < 2 or n < 2 * threads or int(length.sum()) < _THREAD_MIN_VALUES:
        place(out, table, offset, length, pos, weight, 0, n)
        return
    cuts = np.linspace(0, n, threads + 1).astype(np.int64).tolist()
    with ThreadPoolExecutor(threads) as pool:
        done = [pool.submit(place, out, table, offset, length, pos, weight, lo, hi)
                for lo, hi in zip(cuts[:-1], cuts[1:])]
        for fut in done:
            fut.result()


def _curves_table(curves, step_s, placement_s, per_bin, row_key, row_lo, row_hi, method):
    """Energy per bin of each row's kernel for rows of several curves, flat.

    ``row_key = curve·q + slot``; row ``i``, bin ``k`` at ``first[i] + k − lo``. Each run of
    rows of one curve is evaluated into its part of one array of edge energies; their
    differences across two rows (or two runs) are never read.
    """
    n_edges = row_hi - row_lo + 1
    first = np.concatenate(([0], np.cumsum(n_edges)[:-1]))
    energy = np.empty(int(n_edges.sum()), dtype=np.float64)
    row_curve = row_key // per_bin
    cut = (np.flatnonzero(np.diff(row_curve)) + 1).tolist()
    for a, b in zip([0] + cut, cut + [len(row_key)]):
        stop = first[b] if b < len(first) else len(energy)
        _kernel_energy(energy[first[a]:stop], curves[int(row_curve[a])], step_s, placement_s,
                       row_key[a:b] % per_bin, row_lo[a:b], n_edges[a:b], method)
    return energy[1:] - energy[:-1], first


def _kernel_rows(m, slot, k0, k1):
    """Kernel rows to evaluate: ``(slot, lo, hi, row of each job)``, sorted by row.

    ``slot`` is any integer key of a kernel (here ``curve·q + slot``). Jobs that start in the
    window share their key's row, ``k = 0 … max(k1)``, in key order; a job that
    started before it (``m < 0``) gets a row of its own holding just the part it needs, so a
    long job seen through many streaming windows costs its own length, not the kernel's
    length in every window.
    """
    inside = m >= 0
    slots, shared = np.unique(slot[inside], return_inverse=True)
    hi = np.zeros(len(slots), dtype=np.int64)
    np.maximum.at(hi, shared, k1[inside])
    before = np.flatnonzero(~inside)
    row_of_job = np.empty(len(m), dtype=np.int64)
    row_of_job[inside] = shared
    row_of_job[before] = len(slots) + np.arange(len(before))
    row_slot = np.concatenate((slots, slot[before]))
    row_lo = np.concatenate((np.zeros(len(slots), dtype=np.int64), k0[before]))
    row_hi = np.concatenate((hi, k1[before]))
    return row_slot, row_lo, row_hi, row_of_job


def _row_chunks(rows):
    """Consecutive rows of at most ~POINTS_PER_CHUNK values, and their jobs in input order."""
    row_slot, row_lo, row_hi, row_of_job = rows
    ends = np.cumsum(row_hi - row_lo + 1)
    order = np.argsort(row_of_job, kind="stable")
    job_rows = row_of_job[order]
    r0 = 0
    while r0 < len(row_slot):
        base = ends[r0 - 1] if r0 else 0
        r1 = max(r0 + 1, int(np.searchsorted(ends, base + POINTS_PER_CHUNK, side="right")))
        j0, j1 = np.searchsorted(job_rows, [r0, r1])
        # jobs of one chunk in input order: the numba and numpy paths add them in that order
        yield slice(r0, r1), np.sort(order[j0:j1])
        r0 = r1


def _kernel_energy(out, curve, step_s, placement_s, row_slot, row_lo, n_edges, method):
    """Cumulative energy at the edges ``τ = k·f − b·r``, ``k = lo … lo + n − 1``, row by row.

    On either path the same floats: the compiled loop (once numba is loaded, unless
    ``method="numpy"``) repeats the operations of :class:`CumulativeEnergy` one edge at a time.
    """
    loops = _numba_loops() if _numba_loops.cache_info().currsize else None
    if loops is not None and method != "numpy":
        loops.edges_energy(out, curve.energy_j, float(curve.knots_s[1]), float(curve.knots_s[-1]),
                 float(curve.duration_s), float(step_s), float(placement_s),
                 np.ascontiguousarray(row_slot, dtype=np.int64),
                 np.ascontiguousarray(row_lo, dtype=np.int64),
                 np.ascontiguousarray(n_edges, dtype=np.int64))
        return
    first = np.concatenate(([0], np.cumsum(n_edges)[:-1]))
    row = np.repeat(np.arange(len(n_edges)), n_edges)
    k = (np.arange(len(out)) - first[row] + row_lo[row]).astype(np.float64)
    out[:] = curve(np.maximum(k * step_s - row_slot[row] * placement_s, 0.0))


def _place_numpy(out, table, offset, length, pos, weight):
    """``out[pos_j + i] += weight_j·table[offset_j + i]`` for ``i < length_j``, job by job.

    The same products added in the same order as the compiled loop (``np.add.at`` adds
    unbuffered, in index order), so both paths give identical sums. A job of at least
    :data:`_SLICE_MIN_VALUES` values is one slice add (the call overhead is then a few percent);
    shorter jobs are batched: runs of equal length as 2-D blocks, the rest through
    ``np.repeat``, in pieces of ~POINTS_PER_CHUNK values to bound memory.
    """
    long_job = length >= _SLICE_MIN_VALUES
    cut = np.flatnonzero(np.diff(long_job)) + 1
    for a, b in zip(np.concatenate(([0], cut)).tolist(),
                    np.concatenate((cut, [len(length)])).tolist()):
        if not long_job[a]:
            _place_short(out, table, offset, length, pos, weight, a, b)
            continue
        for o, n, p, w in zip(offset[a:b].tolist(), length[a:b].tolist(), pos[a:b].tolist(),
                              weight[a:b].tolist()):
            out[p:p + n] += w * table[o:o + n]


def _place_short(out, table, offset, length, pos, weight, a, b):
    """:func:`_place_numpy` for jobs ``a … b − 1``, batched."""
    cut = a + np.flatnonzero(np.diff(length[a:b])) + 1
    mixed = None  # first job of pending short runs
    for r0, r1 in zip(np.concatenate(([a], cut)).tolist(), np.concatenate((cut, [b])).tolist()):
        if r1 - r0 < _BLOCK_MIN_JOBS:
            mixed = r0 if mixed is None else mixed
            continue
        if mixed is not None:
            _place_ragged(out, table, offset, length, pos, weight, mixed, r0)
            mixed = None
        n = int(length[r0])
        span = np.arange(n)
        rows = sliding_window_view(table, n)  # row o = table[o:o + n], no copy
        step = max(1, POINTS_PER_CHUNK // n)
        for j0 in range(r0, r1, step):
            j1 = min(r1, j0 + step)
            values = rows[offset[j0:j1]]
            values *= weight[j0:j1, None]
            # a flat index: np.add.at is several times slower with a 2-D one
            np.add.at(out, (pos[j0:j1, None] + span).ravel(), values.ravel())
    if mixed is not None:
        _place_ragged(out, table, offset, length, pos, weight, mixed, b)


def _place_ragged(out, table, offset, length, pos, weight, a, b):
    """:func:`_place_numpy` for jobs ``a … b − 1`` of any lengths."""
    ends = np.cumsum(length[a:b])
    j0 = 0
    while j0 < b - a:
        base = ends[j0 - 1] if j0 else 0
        j1 = max(j0 + 1, int(np.searchsorted(ends, base + POINTS_PER_CHUNK, side="right")))
        n = length[a + j0:a + j1]
        job = np.repeat(np.arange(a + j0, a + j1), n)
        i = np.arange(int(n.sum())) - np.repeat(ends[j0:j1] - n - base, n)
        np.add.at(out, pos[job] + i, weight[job] * table[offset[job] + i])
        j0 = j1
