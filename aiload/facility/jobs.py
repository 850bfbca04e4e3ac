"""Batch job arrivals: a log-Gaussian Cox process fitted to a real cluster
(:mod:`aiload.facility.arrivals`), Poisson with a cosine daily/weekly modulation (thinning), or
replay of a list.

Only numbers are produced here (arrival times, sizes, workloads); *when* jobs start is
decided by the SimPy engine. Generated streams start :func:`burn_in_s` before ``start``
(negative arrival times): the engine runs through that burn-in so that the output begins in
the state the facility would be in at ``start``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.facility.arrivals import cox_arrival_times_s, local_week_s
from aiload.facility.spec import JobStreamSpec, suggest
from aiload.profiles._profile import Profile

__all__ = ["JobTable", "rate_modulation", "arrival_times_s", "draw_jobs", "ProfileCache",
           "BURN_IN_S", "burn_in_s"]

#: default burn-in of a generated stream [s]; see docs/validation.md ("Steady-state start")
BURN_IN_S = 4 * 86400.0


def burn_in_s(streams) -> float:
    """Simulated time before ``start`` for these streams: the longest burn-in of the generated
    ones (:data:`BURN_IN_S` unless a stream sets ``burn_in_s``); 0 with replays only [s]."""
    return max((BURN_IN_S if s.burn_in_s is None else float(s.burn_in_s)
                for s in streams if s.arrivals is None), default=0.0)


class ProfileCache:
    """Fetch and memoise ``(model, nodes) -> Profile`` from a catalogue, with clear errors."""

    def __init__(self, catalogue, hardware: str) -> None:
        self.catalogue = catalogue
        self.hardware = hardware
        self._cache: dict[tuple[str, int], Profile] = {}
        self._known: list[str] | None = None

    def check_model(self, model: str) -> None:
        if self._known is None:
            self._known = list(self.catalogue.models(self.hardware))
        if not self._known:
            from aiload.profiles import catalog  # noqa: PLC0415 - facility -> profiles

            bundled = sorted(set(catalog()["hardware"]))
            raise InputError(
                f"Unknown hardware {self.hardware!r}: the catalogue has no workload for it; "
                f"expected a hardware it knows (the bundled profiles have {bundled}). Check "
                f"FleetSpec.hardware.{suggest(self.hardware, bundled)}"
            )
        if model not in self._known:
            raise InputError(
                f"Unknown workload {model!r} for hardware {self.hardware!r}; the catalogue has "
                f"{self._known}.{suggest(model, self._known)}"
            )

    def get(self, model: str, nodes: int) -> Profile:
        key = (model, int(nodes))
        if key not in self._cache:
            self.check_model(model)
            self._cache[key] = self.catalogue.job_profile(model, self.hardware, int(nodes))
        return self._cache[key]

    def sources(self) -> dict[str, str]:
        """``"model@nodes" -> "name (source, measured|synthesised)"`` for the metadata."""
        return {
            f"{m}@{n}": f"{p.name} ({p.source}; {'measured' if p.measured else 'synthesised'})"
            for (m, n), p in sorted(self._cache.items())
        }


@dataclass(frozen=True)
class JobTable:
    """Jobs of all streams, sorted by arrival (arrays of equal length).

    Attributes
    ----------
    arrival_s : ndarray of float64
        Arrival time from the simulation start [s].
    nodes : ndarray of int64
        Nodes of the job [-].
    duration_s : ndarray of float64
        Run time [s].
    model : ndarray of object
        Workload (model) name.
    stream : ndarray of object
        Stream name.
    replicate : ndarray of int64
        Profile replicate column the job runs.
    profile_nodes : ndarray of int64
        Node count of the profile the job runs (usually ``nodes``).
    """

    arrival_s: np.ndarray
    nodes: np.ndarray
    duration_s: np.ndarray
    model: np.ndarray
    stream: np.ndarray
    replicate: np.ndarray
    profile_nodes: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)

    def take(self, rows: np.ndarray) -> JobTable:
        """The jobs at ``rows`` (indices or a boolean mask), in that order."""
        return JobTable(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))


def rate_modulation(t_s: np.ndarray, start: pd.Timestamp, stream: JobStreamSpec) -> np.ndarray:
    """Relative arrival rate (mean 1 over a week) at times ``t_s`` after ``start`` [-].

    Each instant's own local time of day and day of week in ``start``'s time zone,
    daylight-saving changes during the run included (:func:`~aiload.facility.arrivals.
    local_week_s`).
    """
    week_s = local_week_s(t_s, start)
    hour = (week_s % 86400.0) / 3600.0
    daily = 1.0 + stream.daily_amplitude * np.cos(2 * np.pi * (hour - stream.peak_hour) / 24.0)
    a_w = stream.weekly_amplitude
    weekday = 7.0 / (7.0 - 2.0 * a_w)
    weekly = np.where(week_s >= 5 * 86400.0, weekday * (1.0 - a_w), weekday)
    return daily * weekly


def arrival_times_s(
    stream: JobStreamSpec, rate_per_s: float, horizon_s: float, start: pd.Timestamp,
    rng: np.random.Generator,
) -> np.ndarray:
    """Poisson arrivals of mean rate ``rate_per_s`` [1/s] thinned by :func:`rate_modulation`."""
    peak = (1.0 + stream.daily_amplitude) * 7.0 / (7.0 - 2.0 * stream.weekly_amplitude)
    n = rng.poisson(rate_per_s * peak * horizon_s)
    t = np.sort(rng.uniform(0.0, horizon_s, size=n))
    keep = rng.uniform(0.0, peak, size=n) < rate_modulation(t, start, stream)
    return t[keep]


def _replay_s(stream: JobStreamSpec, start: pd.Timestamp, horizon_s: float) -> np.ndarray:
    values = list(stream.arrivals)
    if values and isinstance(values[0], (pd.Timestamp, np.datetime64, str)):
        stamps = pd.DatetimeIndex(pd.to_datetime(values))
        if stamps.tz is None:
            raise InputError(
                f"{stream.name}.arrivals: the timestamps are naive; give tz-aware ones, e.g. "
                "pandas.to_datetime(times).tz_localize('UTC')."
            )
        t = (stamps - start).total_seconds().to_numpy()
    else:
        t = np.asarray(values, dtype=float)
    if np.any(t < 0):
        raise InputError(f"{stream.name}.arrivals: {int((t < 0).sum())} arrival(s) before start.")
    return np.sort(t[t < horizon_s])


def draw_jobs(
    streams: tuple[JobStreamSpec, ...], pool_nodes: int, horizon_s: float, start: pd.Timestamp,
    profiles: ProfileCache, rng: np.random.Generator, *, burn_in_s: float = 0.0,
) -> tuple[JobTable, dict[str, float]]:
    """Draw every stream's jobs; return the table and each stream's mean rate [jobs/h].

    Generated streams draw from ``-burn_in_s`` [s] (arrivals before ``start`` are negative);
    replayed ones keep their times.
    """
    parts, rates = [], {}
    for stream in streams:
        models = [m for m, _ in stream.workloads]
        p_model = np.array([w for _, w in stream.workloads])
        sizes = np.array([n for n, _ in stream.node_counts])
        p_size = np.array([w for _, w in stream.node_counts])
        durations = {}
        for m in models:
            for n in sizes:
                prof = profiles.get(m, stream.profile_nodes or int(n))
                durations[(m, int(n))] = stream.duration_s or prof.duration_s
        if stream.arrivals is not None:
            t = _replay_s(stream, start, horizon_s)
            rates[stream.name] = len(t) / horizon_s * 3600.0
        else:
            if stream.utilization is not None:
                # λ = u·N / E[nodes·duration]: Little's law on node-time
                node_s = sum(
                    pm * ps * n * durations[(m, int(n))]
                    for m, pm in zip(models, p_model) for n, ps in zip(sizes, p_size)
                )
                rate = stream.utilization * pool_nodes / node_s
            else:
                rate = stream.rate_per_h / 3600.0
            rates[stream.name] = rate * 3600.0
            if stream.arrival_process is not None:
                # the intensity's mean over the output is exactly the requested one
                # ... and the run starts at a typical moment of it (CoxArrivals.typical_start)
                t = cox_arrival_times_s(stream.arrival_process, rate, -burn_in_s, horizon_s,
                                        start, rng, mean_over_s=(0.0, horizon_s),
                                        run_start_s=0.0)
            else:
                origin = start - pd.Timedelta(seconds=burn_in_s)
                t = arrival_times_s(stream, rate, horizon_s + burn_in_s, origin, rng) - burn_in_s
        k = len(t)
        mi = rng.choice(len(models), size=k, p=p_model)
        ni = rng.choice(len(sizes), size=k, p=p_size)
        model = np.array(models, dtype=object)[mi]
        nodes = sizes[ni].astype(np.int64)
        dur_table = np.array([[durations[(m, int(n))] for n in sizes] for m in models])
        rep_table = np.array([[profiles.get(m, stream.profile_nodes or int(n)).replicates
                                for n in sizes] for m in models])
        dur = dur_table[mi, ni].astype(float)
        reps = rep_table[mi, ni]
        replicate = np.floor(rng.uniform(size=k) * reps).astype(np.int64)
        pnodes = np.full(k, stream.profile_nodes, dtype=np.int64) if stream.profile_nodes else nodes
        parts.append((t, nodes, dur, model, np.full(k, stream.name, dtype=object), replicate,
                      pnodes))
    if len(parts) == 1:
        return JobTable(*parts[0]), rates  # one stream: its arrivals are already sorted
    cols = [np.concatenate([p[i] for p in parts]) if parts else np.array([]) for i in range(7)]
    order = np.argsort(cols[0], kind="stable")
    table = JobTable(*(c[order] for c in cols))
    return table, rates
