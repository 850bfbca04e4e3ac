"""The energy of the batch jobs per output interval: the model's speed machinery.

:class:`JobEnergy` is the one interface the facility model uses. It takes the drawn jobs,
hands SimPy a checkpoint callback, takes the final starts and gives the energy of the jobs per
output interval [J], window by window::

    with JobEnergy(jobs, cache, freq_s, n_bins, streaming=False) as energy:
        sched = schedule_jobs(..., checkpoints_s=energy.checkpoints_s,
                              on_checkpoint=energy.on_checkpoint)
        energy.scheduled(sched.start_s)
        job_j = energy.window(w0, w1)

Behind it: one cumulative-energy curve per (model, nodes, replicate, duration), kernel rows
kept across windows (:class:`~aiload.facility.kernels.KernelCache`), the fused compiled loop
(:class:`~aiload.facility.kernels.RunSums`) when numba is loaded, the planned adds of
:func:`~aiload.facility.summation.plan_jobs_energy` otherwise, threads that split the output
intervals, and -- for fine steps and long jobs -- summing *behind SimPy's clock* in a second
thread. Whatever the path, the bits are the same.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from aiload.facility.summation import (
    CumulativeEnergy,
    KernelCache,
    RunSums,
    numba_loaded,
    plan_jobs_energy,
)

if TYPE_CHECKING:
    from aiload.facility.jobs import ProfileCache

__all__ = ["JobEnergy", "OVERLAP_SLICES", "OVERLAP_MIN_BINS", "OVERLAP_MIN_BINS_PER_JOB",
           "KERNEL_CACHE_MAX_VALUES", "SUM_THREADS"]

#: the in-memory output is summed in this many slices, each as soon as SimPy's clock has
#: passed it: with numba loaded, two threads, kernel rows kept, at least OVERLAP_MIN_BINS
#: output intervals and jobs of OVERLAP_MIN_BINS_PER_JOB intervals on average. Below that the
#: adds are too few to hide the checkpoints' cost (measured: a year at 1 min ran slower)
OVERLAP_SLICES = 8
OVERLAP_MIN_BINS = 1 << 17  # ~1.5 days at 1 s: a 1-day run was slower, a 3-day one faster
OVERLAP_MIN_BINS_PER_JOB = 1000
#: kernel rows kept across windows and slices (floats; ~128 MiB): above it they are rebuilt
#: per window, as the rows a window needs
KERNEL_CACHE_MAX_VALUES = 1 << 24
#: threads that add job profiles at once (the compiled slice adds release the GIL; each
#: thread adds every job to its own range of output intervals, so the bits do not change)
SUM_THREADS = min(2, os.cpu_count() or 1)




def _group_rows(*columns: np.ndarray) -> dict[tuple, np.ndarray]:
    """Row positions of each distinct key tuple, keys in sorted order.

    Same result as ``DataFrame.groupby(sort=True).indices`` over millions of rows, at a
    fraction of the cost: each column is factorised once and the codes combined into one
    integer key.
    """
    codes, uniques = zip(*(pd.factorize(c, sort=True) for c in columns))
    if len(codes[0]) == 0:
        return {}
    key = np.ravel_multi_index(codes, tuple(len(u) for u in uniques))
    order = np.argsort(key, kind="stable")
    distinct, first = np.unique(key[order], return_index=True)
    groups = {}
    for k, rows in zip(distinct, np.split(order, first[1:])):
        parts = np.unravel_index(k, tuple(len(u) for u in uniques))
        groups[tuple(u[i].item() if hasattr(u[i], "item") else u[i]
                     for u, i in zip(uniques, parts))] = rows
    return groups


class JobEnergy:
    """The energy of the batch jobs per output interval: curves, kernels and sums.

    One cumulative-energy curve per (model, nodes, replicate, duration); the jobs are added
    curve by curve (curves in sorted key order), each curve's jobs in job order, whatever the
    path (numpy, planned compiled adds, the fused :class:`RunSums` loop), the thread count or
    the windows: the bits are the same. Where the adds are many (fine steps, long jobs, numba
    loaded, output kept in memory) they are summed *behind SimPy's clock*: the output is cut
    into :data:`OVERLAP_SLICES` slices and, once the clock has passed a slice and one interval
    of margin, every job touching it has started, so a second thread sums it (the compiled
    adds release the GIL) while SimPy goes on. :meth:`close` (or leaving a ``with`` block)
    always ends that thread.
    """

    def __init__(self, jobs, cache: ProfileCache, freq_s: float, n_bins: int, *,
                 streaming: bool) -> None:
        self.jobs, self.freq_s, self.n_bins = jobs, freq_s, n_bins
        groups = _group_rows(jobs.model, jobs.profile_nodes, jobs.replicate, jobs.duration_s)
        self.curves = [CumulativeEnergy.from_profile(cache.get(key[0], key[1]), key[2], key[3])
                       for key in groups]
        self.curve_of = np.empty(len(jobs), dtype=np.int64)
        for g, rows in enumerate(groups.values()):
            self.curve_of[rows] = g
        self.nodes = jobs.nodes.astype(float)
        # at 1 min the checkpoints cost more than they hide: only fine steps and long jobs
        overlap = (not streaming and SUM_THREADS >= 2 and n_bins >= OVERLAP_MIN_BINS
                   and len(jobs) > 0
                   and jobs.duration_s.mean() >= OVERLAP_MIN_BINS_PER_JOB * freq_s)
        self.kernels = self.run_sums = None
        if self.curves and numba_loaded() and RunSums.fits(
                self.curves, freq_s, self.curve_of, KERNEL_CACHE_MAX_VALUES, all_slots=overlap):
            # each window in one compiled loop; behind the clock every slot's kernel row is
            # built up front, after SimPy only the rows the starts need
            self.run_sums = RunSums(jobs.duration_s, self.nodes, self.curve_of,
                                    KernelCache(self.curves, freq_s))
        elif self.curves and KernelCache.bound_values(
                self.curves, freq_s, self.curve_of) <= KERNEL_CACHE_MAX_VALUES:
            self.kernels = KernelCache(self.curves, freq_s)
        self.slices: list[tuple[int, int]] = []
        self.behind: list = []  # futures of the second thread (kernel rows, slices)
        self.pool = self.all_j = self.start_s = None
        self._submitted = 0  # slices handed to the second thread
        if overlap and self.run_sums is not None:
            cuts = np.linspace(0, n_bins, OVERLAP_SLICES + 1).astype(np.int64).tolist()
            self.slices = list(zip(cuts[:-1], cuts[1:]))
            self.all_j = np.zeros(n_bins)
            self.pool = ThreadPoolExecutor(1)
            # the kernel rows are built in the second thread while SimPy starts
            self.behind.append(self.pool.submit(self.run_sums.prepare))
            self._decided_s = np.full(len(jobs), np.inf)
            self._settled = 0  # jobs before this one had all started at the last checkpoint

    @property
    def checkpoints_s(self) -> list[float]:
        """When SimPy should call :meth:`on_checkpoint`: past each slice but the last [s]."""
        return [(w1 + 2) * self.freq_s for _, w1 in self.slices[:-1]]

    @property
    def on_checkpoint(self):
        """The callback for :func:`schedule_jobs` (None when nothing is summed behind)."""
        return self._checkpoint if self.slices else None

    def _checkpoint(self, now_s: float, starts: list) -> None:
        # copy only what may have changed: from the first job not started last time up to
        # the last arrival so far (starts, once set, never change)
        arrived = int(np.searchsorted(self.jobs.arrival_s, now_s, side="right"))
        if arrived > self._settled:
            part = np.asarray(starts[self._settled:arrived], dtype=np.float64)
            self._decided_s[self._settled:arrived] = part
            waiting = np.flatnonzero(np.isinf(part))
            self._settled += int(waiting[0]) if len(waiting) else len(part)
        while (self._submitted < len(self.slices) - 1
               and (self.slices[self._submitted][1] + 2) * self.freq_s <= now_s):
            w0, w1 = self.slices[self._submitted]
            self._submitted += 1
            # a copy: the next checkpoint writes into `_decided_s` while this slice is summed
            self.behind.append(self.pool.submit(self._add, self._decided_s.copy(), w0, w1,
                                                self.all_j[w0:w1], 1))

    def scheduled(self, start_s: np.ndarray) -> None:
        """The final starts: the slices not summed yet go to the second thread (summed while
        the caller works out the other series; awaited by :meth:`window`)."""
        self.start_s = start_s
        for w0, w1 in self.slices[self._submitted:]:
            self.behind.append(self.pool.submit(self._add, start_s, w0, w1, self.all_j[w0:w1],
                                                1))

    def window(self, w0: int, w1: int) -> np.ndarray:
        """Energy of the jobs in output intervals ``w0 … w1 − 1`` [J]."""
        if self.all_j is not None:
            for done in self.behind:
                done.result()  # raises what the second thread raised
            return self.all_j[w0:w1]
        return self._add(self.start_s, w0, w1, np.zeros(w1 - w0), SUM_THREADS)

    def close(self) -> None:
        """End the second thread (if any); pending slices are cancelled."""
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> JobEnergy:
        return self

    def __exit__(self, *exc) -> None:
        self.close()  # whatever happened, nothing is left running

    def _add(self, start_s: np.ndarray, w0: int, w1: int, out: np.ndarray,
             threads: int) -> np.ndarray:
        """Add the job energy of intervals ``w0 … w1 − 1`` from the starts decided so far."""
        if self.run_sums is not None:
            return self.run_sums.add(out, start_s, w0, threads=threads)
        freq_s, jobs = self.freq_s, self.jobs
        t0, t1 = w0 * freq_s, w1 * freq_s
        # placement moves a start by <= 0.05 s: one interval of margin keeps every job that
        # overlaps the window once placed; jobs not started (inf) drop out, and so do the jobs
        # that arrive after it (they cannot have started before); the same filter as RunSums
        hi = int(np.searchsorted(jobs.arrival_s, t1 + freq_s, side="left"))
        s = start_s[:hi]
        live = np.flatnonzero((s < t1 + freq_s) & (s + jobs.duration_s[:hi] > t0 - freq_s))
        return plan_jobs_energy(start_s[live], self.nodes[live], self.curve_of[live],
                                self.curves, step_s=freq_s, n_bins=w1 - w0, first_bin=w0,
                                kernels=self.kernels).add_to(out, threads)
