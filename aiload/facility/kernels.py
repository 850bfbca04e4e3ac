"""Kernel tables of the facility summation: where job starts are placed, the exact per-bin
kernels of each profile curve and start slot, and the compiled per-window sums.

A start is rounded to the placement grid ``r = f / ceil(f / 0.1 s)`` (:func:`placement_grid`)
and lies at ``m·f + b·r``; all jobs of one curve in slot ``b`` share the kernel
``kern_b[k] = E((k+1)·f − b·r) − E(k·f − b·r)``. :class:`KernelCache` keeps such rows across
the windows of one run; :class:`RunSums` sums a whole window from them in one compiled loop.
:mod:`aiload.facility.summation` builds on this module (and re-exports its public names).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from aiload.facility._compiled import numba_loops as _numba_loops
from aiload.facility.curves import POINTS_PER_CHUNK, CumulativeEnergy

__all__ = ["PLACEMENT_STEP_S", "POINTS_PER_CHUNK", "placement_grid", "KernelCache", "RunSums"]

#: finest placement of job starts [s]: aiload's finest output step and the sampling interval
#: of the measured profiles
PLACEMENT_STEP_S = 0.1


def placement_grid(step_s: float) -> tuple[float, int]:
    """Grid on which the summation places job starts, for output step ``step_s``.

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


class RunSums:
    """The job energy of one run, window by window, in one compiled loop per window.

    For runs whose every kernel row fits a :class:`KernelCache` (:meth:`fits`) with numba
    loaded: all rows are built once, and :meth:`add` gives, for any window and any starts
    decided so far, exactly the figures of :func:`summation.jobs_energy_per_bin_j` with the live-job
    filter of the facility model (``start < t1 + f`` and ``start + D > t0 − f``): the same
    jobs, kernels and adds in the same order. The loop holds the GIL only to start and return,
    so a window can be summed in one thread while another runs SimPy.
    """

    def __init__(self, duration_s: np.ndarray, nodes: np.ndarray, curve_index: np.ndarray,
                 kernels: KernelCache) -> None:
        loops = _numba_loops()
        if loops is None:
            raise ImportError("RunSums needs numba (pip install numba, or the 'fast' extra); "
                              "without it use summation.jobs_energy_per_bin_j.")
        self._place_run = loops.place_run
        self.duration_s = np.ascontiguousarray(duration_s, dtype=np.float64)
        self.nodes = np.ascontiguousarray(nodes, dtype=np.float64)
        self.curve = np.ascontiguousarray(curve_index, dtype=np.int64)
        # the compiled loop reads these without bounds checks: shapes and indices are checked
        # here, once
        n = len(self.curve)
        if self.curve.ndim != 1 or self.duration_s.shape != (n,) or self.nodes.shape != (n,):
            raise ValueError(f"RunSums: expected duration_s, nodes and curve_index of one length "
                             f"each (one value per job), got shapes {self.duration_s.shape}, "
                             f"{self.nodes.shape} and {self.curve.shape}.")
        if n and (self.curve.min() < 0 or self.curve.max() >= len(kernels.curves)):
            raise ValueError(f"RunSums: curve_index must index the {len(kernels.curves)} curves "
                             f"of the KernelCache, got values {self.curve.min()} … "
                             f"{self.curve.max()}.")
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
        if start_s is not None:
            start_s = self._starts(start_s)
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
        _check_out(out)
        start_s = self._starts(start_s)
        self.prepare(start_s)
        step = self.kernels.step_s
        n = len(out)
        t0, t1 = first_bin * step, (first_bin + n) * step
        args = (int(first_bin), t0 - step, t1 + step, start_s, self.duration_s, self.nodes,
                self.curve, self.order, self.table, self.offsets, self.widths,
                float(self.kernels._placement_s), int(self.kernels._per_bin))
        split_bins(lambda lo, hi: self._place_run(out, lo, hi, *args), n,
                   threads if n >= 2 * threads else 1)
        return out

    def _starts(self, start_s: np.ndarray) -> np.ndarray:
        start_s = np.ascontiguousarray(start_s, dtype=np.float64)
        if start_s.shape != self.curve.shape:
            raise ValueError(f"start_s: expected one start per job ({len(self.curve)}, inf where "
                             f"not started), got shape {start_s.shape}.")
        return start_s


def _check_out(out: np.ndarray) -> None:
    """The compiled adds write into ``out`` directly: it must be contiguous 1-D float64."""
    if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.ndim != 1 \
            or not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError(f"out: expected a writeable, contiguous 1-D float64 array, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} of shape "
                         f"{getattr(out, 'shape', None)}; pass e.g. np.zeros(n_bins).")


def split_bins(add, n_bins: int, threads: int) -> None:
    """Call ``add(lo, hi)`` over ``[0, n_bins)`` in ``threads`` contiguous ranges at once.

    The compiled adds release the GIL; each range gets every job in the same order, so the
    result does not depend on the number of threads.
    """
    if threads < 2:
        add(0, n_bins)
        return
    cuts = np.linspace(0, n_bins, threads + 1).astype(np.int64).tolist()
    with ThreadPoolExecutor(threads) as pool:
        done = [pool.submit(add, lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:])]
        for fut in done:
            fut.result()


def _kernel_widths(curves, step_s) -> np.ndarray:
    """Bins a job of each curve can touch once placed: ``ceil(D / f) + 1`` [-]."""
    return np.array([int(np.ceil(c.duration_s / step_s)) + 1 for c in curves], np.int64)


class KernelCache:
    """Whole per-bin kernels of profile curves at one output step, built once and kept.

    Row ``(curve c, slot b)`` holds ``kern_b[k]`` for every ``k < ceil(D_c / f) + 1``, the
    same floats :func:`summation.jobs_energy_per_bin_j` evaluates without a cache. The windows of a
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
    ``method="numpy"``) repeats the operations of :class:`curves.CumulativeEnergy` one edge
    at a time.
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
