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

The facility model (through :class:`~aiload.facility.jobpower.JobEnergy`) uses
:class:`RunSums` where numba is loaded: the live-job filter, the placement, the kernel lookup
and the adds of a whole window in one compiled loop over kernel rows kept in a
:class:`KernelCache` (same jobs, order and bits as the planned adds of
:func:`plan_jobs_energy`). Sums are float64.

Where the pieces live: ``E`` is :class:`~aiload.facility.curves.CumulativeEnergy` (with the
exact-edge reference sum :func:`~aiload.facility.curves.job_energy_at_edges`); the kernel
tables, :class:`KernelCache` and :class:`RunSums` are in :mod:`aiload.facility.kernels`; busy
and queued series are box integrals, :func:`~aiload.facility.boxes.box_seconds_per_bin`;
this module plans and performs the slice adds. It re-exports the public names of all of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from aiload.facility._compiled import numba_loops as _numba_loops
from aiload.facility.boxes import box_seconds_per_bin, ramp_at_edges
from aiload.facility.curves import (
    AUTO_NUMBA_MIN_POINTS,
    POINTS_PER_CHUNK,
    CumulativeEnergy,
    job_energy_at_edges,
)
from aiload.facility.kernels import (
    PLACEMENT_STEP_S,
    KernelCache,
    RunSums,
    _curves_table,
    _kernel_rows,
    _kernel_widths,
    _check_out,
    _row_chunks,
    placement_grid,
    split_bins,
)

__all__ = ["CumulativeEnergy", "job_energy_per_bin_j", "jobs_energy_per_bin_j", "plan_jobs_energy",
           "Placement", "KernelCache", "RunSums",
           "job_energy_at_edges", "ramp_at_edges",
           "box_seconds_per_bin",
           "placement_grid", "PLACEMENT_STEP_S", "POINTS_PER_CHUNK", "AUTO_NUMBA_MIN_POINTS",
           "AUTO_NUMBA_MIN_BATCHED_VALUES", "numba_available", "numba_loaded"]

#: runs of at least this many equal-length jobs are added as one 2-D block by the numpy path
_BLOCK_MIN_JOBS = 16
#: jobs with at least this many bins are added one slice at a time by the numpy path
_SLICE_MIN_VALUES = 1024

#: :func:`job_energy_per_bin_j` with ``method="auto"`` imports and compiles numba (~1 s, once
#: per process) for a call that adds at least this many values in batches (short jobs; see
#: :func:`_place_numpy`), the work where numpy is several times slower than the compiled loop
AUTO_NUMBA_MIN_BATCHED_VALUES = 10_000_000


def _place_numba():
    """The compiled slice-add loop of :func:`job_energy_per_bin_j`, or None without numba."""
    loops = _numba_loops()
    return None if loops is None else loops.place


def numba_available() -> bool:
    """True when the compiled summation loops are used (numba importable)."""
    return _numba_loops() is not None


def numba_loaded() -> bool:
    """True when the compiled loops are already built in this process (no import, no compile).

    Their adds release the GIL, so the model may then sum in threads (and behind SimPy).
    """
    return bool(_numba_loops.cache_info().currsize) and _numba_loops() is not None


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
        _check_out(out)
        if out.shape != (self.n_bins,):
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
    if start_s.ndim != 1 or nodes.shape != start_s.shape or curve_index.shape != start_s.shape:
        raise ValueError(f"start_s, nodes, curve_index: expected 1-D arrays of one length (one "
                         f"value per job), got shapes {start_s.shape}, {nodes.shape} and "
                         f"{curve_index.shape}.")
    if curve_index.min() < 0 or curve_index.max() >= len(curves):
        raise ValueError(f"curve_index: expected one index into the {len(curves)} curves per "
                         f"job, got values {curve_index.min()} … {curve_index.max()}.")
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


#: the compiled slice adds use threads only from this many values on (a thread costs ~0.1 ms)
_THREAD_MIN_VALUES = 1_000_000


def _place_compiled(place, out, table, offset, length, pos, weight, threads):
    """The compiled slice adds over all bins, split into ``threads`` ranges of bins."""
    n = len(out)
    if n < 2 * threads or int(length.sum()) < _THREAD_MIN_VALUES:
        threads = 1
    split_bins(lambda lo, hi: place(out, table, offset, length, pos, weight, lo, hi), n,
               threads)


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
