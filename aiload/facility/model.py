"""``facility(...)``: run the facility model and return a :class:`FacilityLoad`."""

from __future__ import annotations

import dataclasses
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from aiload._version import __version__
from aiload.errors import InputError
from aiload.facility.catalogue import InferenceCurve, default_catalogue
from aiload.facility.engine import schedule_jobs
from aiload.facility.inference import simulate_service
from aiload.facility.jobs import ProfileCache, draw_jobs
from aiload.facility.overheads import cooling_kw, design_overhead_factor, drybulb_c, losses_kw
from aiload.facility.presets import resolve_spec
from aiload.facility.spec import FacilitySpec
from aiload.facility.summation import (
    CumulativeEnergy,
    KernelCache,
    RunSums,
    box_seconds_per_bin,
    numba_loaded,
    plan_jobs_energy,
)

__all__ = ["FacilityLoad", "facility", "BAND_PERCENTILES", "STREAM_WINDOW_BINS"]

BAND_PERCENTILES = (0, 10, 25, 50, 75, 90, 100)
#: output intervals summed per window when streaming to Parquet
STREAM_WINDOW_BINS = 1 << 20
MIN_FREQ_S, MAX_FREQ_S = 0.1, 3600.0


@dataclass(frozen=True)
class FacilityLoad:
    """Result of :func:`facility`.

    Attributes
    ----------
    power : pandas.DataFrame or None
        Tz-aware fixed-step interval means: ``it_kw``, ``losses_kw``, ``cooling_kw``,
        ``facility_kw`` (= their sum) [kW], ``busy_nodes`` [-] and, where they apply,
        ``queued_jobs`` [-], ``requests_per_s``, ``served_requests_per_s`` [requests/s].
        None when the series was streamed to Parquet (read it with ``read_facility``).
    jobs : pandas.DataFrame
        Event log, one row per job: ``arrival``, ``start``, ``end`` (tz-aware; NaT if not
        started by the end), ``nodes``, ``workload``, ``stream``, ``replicate``,
        ``queue_wait_s`` [s].
    meta : dict
        Spec, seed, frequency, profile sources, aiload version, event counts, unserved requests.
    bands : pandas.DataFrame or None
        With ``replicates > 1``: percentiles of ``facility_kw`` across replicates per interval,
        columns ``p0 … p100`` [kW].
    scaling : pandas.DataFrame or None
        Inference replica change points (``time``, ``replicas``, ``service``).
    """

    power: pd.DataFrame | None
    jobs: pd.DataFrame
    meta: dict = field(default_factory=dict)
    bands: pd.DataFrame | None = None
    scaling: pd.DataFrame | None = None

    def to_parquet(self, path) -> None:
        """Write ``power`` (and ``jobs`` next to it) atomically; see :mod:`aiload.facility.io`."""
        from aiload.facility.io import write_facility  # noqa: PLC0415

        write_facility(self, path)


def _timestamp(value, what: str) -> pd.Timestamp:
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what}: cannot read {value!r} as a timestamp ({exc}).") from None
    if stamp.tz is None:
        raise InputError(
            f"{what}: {value!r} has no time zone (naive). aiload needs tz-aware time; give e.g. "
            f"pandas.Timestamp({str(stamp)!r}, tz='UTC') or '{stamp.isoformat()}+00:00'."
        )
    return stamp


def _grid(start, end, freq) -> tuple[pd.Timestamp, float, int, float]:
    start = _timestamp(start, "facility(start=)")
    if isinstance(end, (pd.Timedelta, np.timedelta64)) or (
        isinstance(end, str) and not any(c in end for c in "-:")
    ):
        end = start + pd.Timedelta(end)
    end = _timestamp(end, "facility(end=)")
    try:
        step = pd.Timedelta(freq)
    except (TypeError, ValueError):
        raise InputError(f"facility(freq=): cannot read {freq!r}; give e.g. '1min' or '1s'.") from None
    freq_s = step.total_seconds()
    if not MIN_FREQ_S <= freq_s <= MAX_FREQ_S:
        raise InputError(f"facility(freq=): expected 100ms .. 1h, got {freq!r} ({freq_s} s).")
    ms = int(round(freq_s * 1000))
    if (ms < 60_000 and 60_000 % ms) or (ms > 60_000 and ms % 60_000):
        raise InputError(
            f"facility(freq=): {freq!r} must divide one minute or be whole minutes, e.g. "
            "'100ms', '1s', '15s', '1min', '15min', '1h'."
        )
    horizon_s = (end - start).total_seconds()
    n = horizon_s / freq_s
    if horizon_s <= 0 or abs(n - round(n)) > 1e-6:
        raise InputError(
            f"facility: end - start = {horizon_s} s must be positive and a whole number of "
            f"freq = {freq_s} s intervals."
        )
    fine_s = freq_s if freq_s <= 60 else 60.0
    return start, freq_s, int(round(n)), fine_s


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


class _JobEnergy:
    """The energy of the batch jobs per output interval: curves, kernels and sums.

    One cumulative-energy curve per (model, nodes, replicate, duration); the jobs are added
    curve by curve (curves in sorted key order), each curve's jobs in job order, whatever the
    path (numpy, planned compiled adds, the fused :class:`RunSums` loop), the thread count or
    the windows: the bits are the same. Where the adds are many (fine steps, long jobs, numba
    loaded, output kept in memory) they are summed *behind SimPy's clock*: the output is cut
    into :data:`OVERLAP_SLICES` slices and, once the clock has passed a slice and one interval
    of margin, every job touching it has started, so a second thread sums it (the compiled
    adds release the GIL) while SimPy goes on. :meth:`close` always ends that thread.
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
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

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


def _simulate(spec: FacilitySpec, start, freq_s, n_bins, fine_s, rng, bar, windows) -> dict:
    """One replicate; yields per-window column dicts through ``windows`` callback."""
    closers: list = []  # e.g. the second thread of a run summed behind SimPy
    try:
        return _simulate_run(spec, start, freq_s, n_bins, fine_s, rng, bar, windows, closers)
    finally:
        for close in closers:  # whatever happened, nothing is left running
            close()


def _simulate_run(spec, start, freq_s, n_bins, fine_s, rng, bar, windows, closers) -> dict:
    catalogue = spec.catalogue or default_catalogue()
    fleet = spec.fleet
    horizon_s = n_bins * freq_s
    cache = ProfileCache(catalogue, fleet.hardware)
    jobs, rates = draw_jobs(spec.streams, spec.pool_nodes, horizon_s, start, cache, rng)
    bar.update(1)
    capacity = spec.pool_nodes
    if spec.overheads.power_cap_kw is not None:
        budget_w = spec.overheads.power_cap_kw * 1e3 / design_overhead_factor(spec.overheads)
        budget_w -= sum(s.nodes for s in spec.inference) * fleet.nameplate_w
        budget_w -= fleet.other_it_base_kw * 1e3
        per_node = fleet.nameplate_w + fleet.other_it_w_per_busy_node
        capacity = min(capacity, int(budget_w // per_node))
        if spec.streams and capacity < max(s.max_nodes for s in spec.streams):
            raise InputError(
                f"OverheadSpec.power_cap_kw = {spec.overheads.power_cap_kw} kW leaves room for "
                f"{max(capacity, 0)} busy nodes, fewer than the largest job; raise the cap."
            )
    energy = _JobEnergy(jobs, cache, freq_s, n_bins, streaming=windows.streaming)
    closers.append(energy.close)
    sched = schedule_jobs(jobs.arrival_s, jobs.nodes, jobs.duration_s, capacity, horizon_s,
                          backfill=spec.backfill, checkpoints_s=energy.checkpoints_s,
                          on_checkpoint=energy.on_checkpoint)
    energy.scheduled(sched.start_s)
    bar.update(1)
    started = np.isfinite(sched.start_s)
    services = []
    n_fine = int(round(horizon_s / fine_s))
    for svc in spec.inference:
        curve = catalogue.inference_curve(svc.model, svc.curve_hardware or fleet.hardware,
                                          svc.latency_target_s)
        k = svc.curve_nodes_per_node
        if k != 1.0:
            base = curve
            curve = InferenceCurve(
                power_w=lambda rate, b=base, k=k: k * b.power_w(np.asarray(rate) / k),
                capacity_per_s=k * base.capacity_per_s, source=f"{base.source} x{k:g} per node",
            )
        services.append(simulate_service(svc, curve, fleet.idle_w, start, fine_s, n_fine, rng))
    bar.update(1)
    idx_started = np.flatnonzero(started)
    run_s = sched.start_s[idx_started]
    run_nodes = energy.nodes[idx_started]
    run_end_s = run_s + jobs.duration_s[idx_started]
    per = int(round(freq_s / fine_s))
    unserved = 0.0  # requests beyond capacity, summed window by window [requests]
    serving_nodes = sum(s.nodes for s in spec.inference)
    rated_kw = fleet.nodes * fleet.nameplate_w / 1e3 + fleet.other_it_base_kw
    for w0 in range(0, n_bins, STREAM_WINDOW_BINS if windows.streaming else n_bins):
        w1 = min(n_bins, w0 + (STREAM_WINDOW_BINS if windows.streaming else n_bins))
        t0 = w0 * freq_s
        busy = box_seconds_per_bin(run_s - t0, np.minimum(run_end_s, horizon_s) - t0,
                                   run_nodes, step_s=freq_s, n_bins=w1 - w0) / freq_s
        queued_s = box_seconds_per_bin(jobs.arrival_s - t0,
                                       np.minimum(sched.start_s, horizon_s) - t0, 1.0,
                                       step_s=freq_s, n_bins=w1 - w0)
        job_j = energy.window(w0, w1)
        job_w = job_j / freq_s
        idle_w = (spec.pool_nodes - busy) * fleet.idle_w
        cols: dict[str, np.ndarray] = {}
        svc_w = np.zeros(w1 - w0)
        replicas = np.zeros(w1 - w0)
        if services:
            req = np.zeros(w1 - w0)
            served = np.zeros(w1 - w0)
            for res in services:
                # this window's fine steps only: a streamed run never holds the whole series
                part = res.window(w0 * per, w1 * per)
                svc_w += part["power_w"].reshape(-1, per).mean(axis=1)
                replicas += part["replicas"].reshape(-1, per).mean(axis=1)
                req += part["requests_per_s"].reshape(-1, per).mean(axis=1)
                served += part["served_per_s"].reshape(-1, per).mean(axis=1)
                unserved += float(((part["requests_per_s"] - part["served_per_s"]) * fine_s).sum())
        other_w = busy * fleet.other_it_w_per_busy_node + replicas * fleet.other_it_w_per_busy_node
        it_kw = (job_w + idle_w + svc_w + other_w) / 1e3 + fleet.other_it_base_kw
        loss = losses_kw(it_kw, rated_kw, spec.overheads)
        temp = None
        if spec.overheads.cooling == "drybulb":
            edges = np.arange(w1 - w0 + 1, dtype=np.float64) * freq_s  # from the window start
            stamps = start + pd.to_timedelta(t0 + edges, unit="s")
            temp = drybulb_c(spec.overheads.weather, pd.DatetimeIndex(stamps))
        cool, econ = cooling_kw(it_kw, loss, spec.overheads, temp)
        cols["it_kw"] = it_kw
        cols["losses_kw"] = loss
        cols["cooling_kw"] = cool
        cols["facility_kw"] = it_kw + loss + cool
        cols["busy_nodes"] = busy + replicas
        if spec.streams:
            cols["queued_jobs"] = queued_s / freq_s
        if services:
            cols["requests_per_s"] = req
            cols["served_requests_per_s"] = served
        if temp is not None:
            cols["drybulb_c"] = temp
            windows.economiser_s += float(econ.sum() * freq_s)
        windows(w0, w1, cols)
        bar.update(1)
    return {
        "jobs": jobs, "start_s": sched.start_s, "events": sched.events
        + sum(r.events for r in services), "rates_per_h": rates, "services": services,
        "sources": cache.sources(), "serving_nodes": serving_nodes, "capacity_nodes": capacity,
        "unserved_requests": unserved,
    }


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


class _Collector:
    """Receives window columns: keeps them in memory or appends them to a Parquet writer."""

    def __init__(self, index_start, freq_s, n_bins, writer=None) -> None:
        self.parts: list[dict] = []
        self.writer = writer
        self.streaming = writer is not None
        self.economiser_s = 0.0
        self.index_start, self.freq_s, self.n_bins = index_start, freq_s, n_bins

    def index(self, w0: int, w1: int) -> pd.DatetimeIndex:
        offset = pd.Timedelta(seconds=self.freq_s)
        return pd.date_range(self.index_start + w0 * offset, periods=w1 - w0, freq=offset, name="time")

    def __call__(self, w0: int, w1: int, cols: dict) -> None:
        if self.writer is not None:
            self.writer.write(pd.DataFrame(cols, index=self.index(w0, w1)))
        else:
            self.parts.append(cols)

    def frame(self) -> pd.DataFrame:
        if len(self.parts) == 1:
            cols = self.parts[0]
        else:
            cols = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]}
        # the columns are fresh arrays owned by the frame: kept as they are, not copied into
        # one block (a copy of the whole series)
        return pd.DataFrame(cols, index=self.index(0, self.n_bins), copy=False)


def _jobs_frame(start: pd.Timestamp, out: dict) -> pd.DataFrame:
    jobs = out["jobs"]
    start_s = out["start_s"]
    ok = np.isfinite(start_s)
    origin_ns = start.as_unit("ns").value

    def to_time(seconds: np.ndarray) -> pd.DatetimeIndex:
        # integer nanoseconds: much faster than to_timedelta on floats; NaT where not started
        finite = np.isfinite(seconds)
        ns = np.round(np.where(finite, seconds, 0.0) * 1e9).astype(np.int64)
        values = (origin_ns + ns).view("datetime64[ns]")
        values = np.where(finite, values, np.datetime64("NaT"))
        return pd.DatetimeIndex(values).tz_localize("UTC").tz_convert(start.tz)

    return pd.DataFrame({
        "arrival": to_time(jobs.arrival_s),
        "start": to_time(start_s),
        "end": to_time(start_s + jobs.duration_s),
        # narrow integers and categoricals: the log of a campus year has millions of rows
        "nodes": jobs.nodes.astype(np.int32),
        "workload": pd.Categorical(jobs.model),
        "stream": pd.Categorical(jobs.stream),
        "replicate": jobs.replicate.astype(np.int16),
        "queue_wait_s": np.where(ok, start_s - jobs.arrival_s, np.nan),
    })


def facility(spec_or_preset: FacilitySpec | str, *, start, end, freq="1min", seed: int = 0,
             replicates: int = 1, progress: bool = True, stream_to=None,
             **overrides: Any) -> FacilityLoad:
    """Simulate a facility and return its power at the meter.

    Parameters
    ----------
    spec_or_preset : FacilitySpec or str
        A specification or a preset name (``"colocation-10mw"``, ``"inference-1mw"``,
        ``"campus-100mw"``).
    start, end : tz-aware timestamp (``end`` may also be a duration such as ``"7D"``)
        Simulated period; ``end − start`` must be a whole number of ``freq``.
    freq : str
        Output interval, ``"100ms"`` … ``"1h"``.
    seed : int
        Seed of all random draws; the same seed gives the same output bit for bit.
    replicates : int
        Independent replicates; the first is returned in ``power``, percentiles of
        ``facility_kw`` across all of them in ``bands``.
    progress : bool
        Show a progress bar.
    stream_to : path, optional
        Write the series window by window to this Parquet file instead of keeping it in memory
        (``power`` is then None; read it back with :func:`aiload.facility.read_facility`).
    **overrides
        Preset parameters (e.g. ``utilization=0.8``) or FacilitySpec fields.

    Returns
    -------
    FacilityLoad

    Examples
    --------
    >>> import aiload
    >>> load = aiload.facility("inference-1mw", start="2025-01-06 00:00+00:00", end="1D",
    ...                        freq="15min", utilization=0.5, progress=False)
    >>> float(load.power["facility_kw"].max()) < 1500
    True
    """
    spec = resolve_spec(spec_or_preset, overrides)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise InputError(f"facility(replicates=): expected an integer >= 1, got {replicates!r}.")
    start, freq_s, n_bins, fine_s = _grid(start, end, freq)
    t_wall = time.perf_counter()
    children = np.random.SeedSequence(seed).spawn(replicates)
    windows_per_run = 1 if stream_to is None else -(-n_bins // STREAM_WINDOW_BINS)
    bar = tqdm(total=replicates * (3 + windows_per_run), disable=not progress,
               desc=f"facility {spec.name}", unit="step")
    writer = None
    if stream_to is not None:
        from aiload.facility.io import StreamWriter  # noqa: PLC0415

        writer = StreamWriter(stream_to)
    runs, frames = [], []
    try:
        for r, child in enumerate(children):
            collector = _Collector(start, freq_s, n_bins, writer if r == 0 else None)
            out = _simulate(spec, start, freq_s, n_bins, fine_s, np.random.default_rng(child),
                            bar, collector)
            out["economiser_h"] = collector.economiser_s / 3600.0
            runs.append(out)
            frames.append(None if collector.streaming else collector.frame())
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    finally:
        bar.close()
    first = runs[0]
    meta = {
        "kind": "facility",
        "spec": spec,
        "preset": spec_or_preset if isinstance(spec_or_preset, str) else None,
        "overrides": dict(overrides),
        "seed": seed,
        "replicates": replicates,
        "freq_s": freq_s,
        "start": start,
        "aiload_version": __version__,
        "profile_sources": first["sources"],
        "events": first["events"],
        "arrival_rate_per_h": first["rates_per_h"],
        "capacity_nodes": first["capacity_nodes"],
        "unserved_requests": first["unserved_requests"],
        "economiser_h": first["economiser_h"] if spec.overheads.cooling == "drybulb" else None,
        "wall_s": time.perf_counter() - t_wall,
    }
    if writer is not None:
        writer.close(meta)
    bands = None
    if replicates > 1 and frames[0] is not None:
        stack = np.vstack([f["facility_kw"].to_numpy() for f in frames])
        bands = pd.DataFrame(
            {f"p{p}": np.percentile(stack, p, axis=0) for p in BAND_PERCENTILES},
            index=frames[0].index,
        )
    scaling = None
    if first["services"]:
        scaling = pd.concat([s.scaling for s in first["services"]], ignore_index=True)
    return FacilityLoad(frames[0], _jobs_frame(start, first), meta, bands, scaling)


def spec_summary(spec: FacilitySpec) -> dict:
    """A JSON-friendly description of a spec (for file metadata)."""

    def plain(value):
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                    if f.name != "catalogue"}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (str, int, float, bool)) or value is None:
            return value
        return repr(value)[:200]

    return plain(spec)
