"""``facility(...)``: the facility model's steps, returning a :class:`FacilityLoad`.

Top to bottom: :func:`facility` resolves the spec (:func:`~aiload.facility.presets.resolve_spec`)
and the output grid (:func:`_grid`); per replicate, :func:`_simulate` draws the jobs
(:mod:`~aiload.facility.jobs`), caps the job pool under a power cap
(:func:`_job_capacity_nodes`), schedules the jobs in SimPy
(:mod:`~aiload.facility.engine`), simulates the inference services
(:func:`_simulate_services`), then window by window sums the IT power (jobs, idle nodes,
services, other IT), the losses and the cooling (:mod:`~aiload.facility.overheads`);
:class:`_Collector` keeps or streams the windows and :func:`_jobs_frame` builds the job log.
How the job energy is summed fast (kernel rows, compiled loops, threads, summing behind
SimPy's clock) is behind one interface, :class:`~aiload.facility.jobpower.JobEnergy`.
"""

from __future__ import annotations

import dataclasses
import datetime
import time
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from aiload._checks import check_run_arguments, require_facility_memory
from aiload._version import __version__
from aiload.errors import InputError
from aiload.facility.catalogue import InferenceCurve, default_catalogue
from aiload.facility.engine import schedule_jobs
from aiload.facility.inference import simulate_service
from aiload.facility.io import FacilityLoad, StreamWriter
from aiload.facility.iteration import IterationDynamics, JobDynamics
from aiload.facility.jobpower import JobEnergy
from aiload.facility.jobs import ProfileCache, burn_in_s, draw_jobs
from aiload.facility.overheads import (
    CoolingLag, cooling_kw, drybulb_c, losses_kw, max_it_under_cap_kw,
)
from aiload.facility.presets import resolve_spec
from aiload.facility.spec import FacilitySpec
from aiload.facility.summation import box_seconds_per_bin

__all__ = ["FacilityLoad", "facility", "BAND_PERCENTILES", "STREAM_WINDOW_BINS"]

BAND_PERCENTILES = (0, 10, 25, 50, 75, 90, 100)
#: output intervals summed per window when streaming to Parquet
STREAM_WINDOW_BINS = 1 << 20
MIN_FREQ_S, MAX_FREQ_S = 0.1, 3600.0


def _timestamp(value, what: str) -> pd.Timestamp:
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        # pandas reads a bare number as nanoseconds since 1970
        raise InputError(
            f"{what}: got the bare number {value!r}; expected a tz-aware timestamp such as "
            "'2025-01-06 00:00+00:00' or pandas.Timestamp('2025-01-06', tz='UTC')"
            + (" (or, for end=, a duration with a unit such as '2h' or '7D')." if "end" in what
               else ".")
        )
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
    given_end = end
    if isinstance(end, str) and end.strip().startswith("-"):
        try:
            pd.Timedelta(end)
        except (TypeError, ValueError):
            pass
        else:
            raise InputError(
                f"facility(end=): got the negative duration {end!r}; expected a positive one "
                f"such as {end.strip()[1:]!r} or a tz-aware timestamp after start = {start}."
            )
    if isinstance(end, (datetime.timedelta, np.timedelta64)) or (
        isinstance(end, str) and not any(c in end for c in "-:")
    ):
        end = start + pd.Timedelta(end)
    end = _timestamp(end, "facility(end=)")
    if isinstance(freq, (int, float, np.integer, np.floating)) and not isinstance(freq, bool):
        # pandas reads a bare number as nanoseconds: 60 would be 60 ns, not one minute
        raise InputError(
            f"facility(freq=): got the bare number {freq!r} without a unit; give e.g. "
            f"'{freq:g}s' or '{freq:g}min'."
        )
    try:
        step = pd.Timedelta(freq)
    except (TypeError, ValueError):
        raise InputError(
            f"facility(freq=): cannot read {freq!r} as a fixed step; give e.g. '100ms', '1s', "
            "'1min', '15min' or '1h'."
        ) from None
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
    if horizon_s <= 0:
        raise InputError(
            f"facility(end=): end = {end} is {'equal to' if horizon_s == 0 else 'before'} "
            f"start = {start} (got end={given_end!r}); expected a later end, e.g. a duration "
            "such as '1D' or a tz-aware timestamp after start."
        )
    if abs(n - round(n)) > 1e-6:
        shorter = start + pd.Timedelta(seconds=np.floor(n) * freq_s)
        longer = start + pd.Timedelta(seconds=np.ceil(n) * freq_s)
        raise InputError(
            f"facility(end=): end - start = {horizon_s:g} s is not a whole number of "
            f"freq = {freq!r} ({freq_s:g} s) intervals; give end = {shorter} or {longer}, or a "
            "freq that divides the period."
        )
    fine_s = freq_s if freq_s <= 60 else 60.0
    return start, freq_s, int(round(n)), fine_s


def _job_capacity_nodes(spec: FacilitySpec) -> int:
    """Nodes the batch jobs may hold at once: the job pool, less what a power cap forbids.

    Under a cap the IT power may reach :func:`max_it_under_cap_kw` (meter power at the cap in
    the worst weather, part-load losses included). It is spent at the rack input on what no
    job changes — every pool node idle, the serving nodes at nameplate, fixed IT — and on
    the step from idle to nameplate (and other IT) of each busy job node.
    """
    fleet, capacity = spec.fleet, spec.pool_nodes
    cap_kw = spec.overheads.power_cap_kw
    if cap_kw is not None:
        it_max_w = max_it_under_cap_kw(cap_kw, fleet.it_rated_kw, spec.overheads) * 1e3
        serving = sum(s.nodes for s in spec.inference)
        floor_w = (fleet.node_input_w(spec.pool_nodes * fleet.idle_w
                                      + serving * fleet.nameplate_w, fleet.nodes)
                   + serving * fleet.other_it_w_per_busy_node + fleet.fixed_it_kw * 1e3)
        per_node = (fleet.node_input_w(fleet.nameplate_w - fleet.idle_w, 0)
                    + fleet.other_it_w_per_busy_node)
        capacity = min(capacity, int((it_max_w - floor_w) // per_node))
        largest = max((s.max_nodes for s in spec.streams), default=0)
        if floor_w > it_max_w or capacity < largest:
            raise InputError(
                f"OverheadSpec.power_cap_kw = {cap_kw:g} kW leaves room for {max(capacity, 0)} "
                f"busy job nodes, fewer than the largest job ({largest}): the facility's IT "
                f"with every job node idle and the serving nodes at nameplate is "
                f"{floor_w / 1e3:,.0f} kW of the {it_max_w / 1e3:,.0f} kW the cap allows in the "
                f"worst weather (losses and cooling on top). Raise the cap, or use "
                "aiload.facility(..., power_limit_kw=...) for a limit the levers meet as they can."
            )
    return capacity


def _simulate_services(spec: FacilitySpec, catalogue, start, fine_s, n_fine, rng) -> list:
    """Each inference service's demand, replicas and power at the fine step."""
    services = []
    for svc in spec.inference:
        curve = catalogue.inference_curve(svc.model, svc.curve_hardware or spec.fleet.hardware,
                                          svc.latency_target_s)
        k = svc.curve_nodes_per_node
        if k != 1.0:
            base = curve
            curve = InferenceCurve(
                power_w=lambda rate, b=base, k=k: k * b.power_w(np.asarray(rate) / k),
                capacity_per_s=k * base.capacity_per_s, source=f"{base.source} x{k:g} per node",
            )
        services.append(simulate_service(svc, curve, spec.fleet.idle_w, start, fine_s, n_fine,
                                         rng))
    return services


def _service_means(services, w0, w1, per, fine_s, unserved: float
                   ) -> tuple[dict[str, np.ndarray], float]:
    """The services' interval means over output intervals ``w0 … w1 − 1``, and ``unserved``
    plus the requests beyond capacity in them [requests]."""
    sums = {key: np.zeros(w1 - w0) for key in ("power_w", "replicas", "requests_per_s",
                                               "served_per_s", "unserved_per_s",
                                               "queued_requests")}
    for res in services:
        # this window's fine steps only: a streamed run never holds the whole series
        part = res.window(w0 * per, w1 * per)
        for key, total in sums.items():
            total += part[key].reshape(-1, per).mean(axis=1)
        unserved += float((part["unserved_per_s"] * fine_s).sum())
    return sums, unserved


def _simulate(spec: FacilitySpec, start, freq_s, n_bins, fine_s, rng, bar, windows,
              dynamics=None) -> dict:
    """One replicate: draw the jobs, schedule them, simulate the services, then sum window by
    window (IT, idle, losses, cooling) and hand each window's columns to ``windows``."""
    catalogue = spec.catalogue or default_catalogue()
    fleet = spec.fleet
    horizon_s = n_bins * freq_s
    cache = ProfileCache(catalogue, fleet.hardware)
    # generated streams start before `start` (a burn-in that is not output): the run begins
    # in the state the facility would be in at `start`
    burn_s = burn_in_s(spec.streams)
    jobs, rates = draw_jobs(spec.streams, spec.pool_nodes, horizon_s, start, cache, rng,
                            burn_in_s=burn_s)
    bar.update(1)
    capacity = _job_capacity_nodes(spec)
    # the job energy may be summed in a second thread while SimPy runs; leaving the block
    # always ends that thread
    with JobEnergy(jobs, cache, freq_s, n_bins, streaming=windows.streaming) as energy:
        sched = schedule_jobs(jobs.arrival_s, jobs.nodes, jobs.duration_s, capacity, horizon_s,
                              backfill=spec.backfill, checkpoints_s=energy.checkpoints_s,
                              on_checkpoint=energy.on_checkpoint,
                              origin_s=-burn_s if len(jobs) else 0.0)
        energy.scheduled(sched.start_s)
        bar.update(1)
        services = _simulate_services(spec, catalogue, start, fine_s,
                                      int(round(horizon_s / fine_s)), rng)
        bar.update(1)
        # sub-second job dynamics (opt-in; drawn last, so a run without them is unchanged)
        dyn = None if dynamics is None else JobDynamics(
            dynamics, jobs, sched.start_s, cache, fleet, freq_s, n_bins, rng)
        idx_started = np.flatnonzero(np.isfinite(sched.start_s))
        run_s = sched.start_s[idx_started]
        run_nodes = jobs.nodes[idx_started].astype(float)
        run_end_s = run_s + jobs.duration_s[idx_started]
        per = int(round(freq_s / fine_s))
        unserved = 0.0  # requests beyond capacity, summed window by window [requests]
        rated_kw = fleet.it_rated_kw
        step = STREAM_WINDOW_BINS if windows.streaming else n_bins
        # cooling lags IT and weather; its state goes from one streamed window to the next
        lag = CoolingLag(spec.overheads.cooling_lag_s, freq_s)
        for w0 in range(0, n_bins, step):
            w1 = min(n_bins, w0 + step)
            t0 = w0 * freq_s
            busy = box_seconds_per_bin(run_s - t0, np.minimum(run_end_s, horizon_s) - t0,
                                       run_nodes, step_s=freq_s, n_bins=w1 - w0) / freq_s
            queued_s = box_seconds_per_bin(jobs.arrival_s - t0,
                                           np.minimum(sched.start_s, horizon_s) - t0, 1.0,
                                           step_s=freq_s, n_bins=w1 - w0)
            job_w = energy.window(w0, w1) / freq_s
            if dyn is not None:
                job_w = job_w + dyn.window(w0, w1)
            idle_w = (spec.pool_nodes - busy) * fleet.idle_w
            svc, unserved = _service_means(services, w0, w1, per, fine_s, unserved)
            replicas = svc["replicas"]
            # at the profiles' boundary (GPU + CPU for NLR profiles), then the rack input
            profile_w = job_w + idle_w + svc["power_w"]
            it_kw = fleet.it_kw(profile_w, busy + replicas)
            loss = losses_kw(it_kw, rated_kw, spec.overheads)
            temp = None
            if spec.overheads.cooling != "pue":
                edges = np.arange(w1 - w0 + 1, dtype=np.float64) * freq_s  # from window start
                stamps = start + pd.to_timedelta(t0 + edges, unit="s")
                temp = drybulb_c(spec.overheads.weather, pd.DatetimeIndex(stamps))
            cool, econ = cooling_kw(it_kw, loss, spec.overheads, temp)
            cool = lag(cool)
            cols: dict[str, np.ndarray] = {} if fleet.measured_at != "component" else {
                "component_kw": profile_w / 1e3}
            cols |= {
                "it_kw": it_kw, "losses_kw": loss, "cooling_kw": cool,
                "facility_kw": it_kw + loss + cool, "busy_nodes": busy + replicas,
            }
            if spec.streams:
                cols["queued_jobs"] = queued_s / freq_s
            if services:
                cols["requests_per_s"] = svc["requests_per_s"]
                cols["served_requests_per_s"] = svc["served_per_s"]
                cols["unserved_requests_per_s"] = svc["unserved_per_s"]
                cols["queued_requests"] = svc["queued_requests"]
            if temp is not None:
                cols["drybulb_c"] = temp
                windows.economiser_s += float(econ.sum() * freq_s)
            windows(w0, w1, cols)
            bar.update(1)
    # the log holds the jobs of the output: arrived in it, or running or queued at `start`
    logged = (jobs.arrival_s >= 0.0) | ~(sched.start_s + jobs.duration_s <= 0.0)
    return {
        "jobs": jobs.take(logged), "start_s": sched.start_s[logged], "burn_in_s": burn_s,
        "events": sched.events
        + sum(r.events for r in services), "rates_per_h": rates, "services": services,
        "sources": cache.sources(), "serving_nodes": sum(s.nodes for s in spec.inference),
        "capacity_nodes": capacity, "unserved_requests": unserved,
        "dynamics": None if dyn is None else dyn.meta(),
    }


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
             power_limit_kw=None, dynamics=None, **overrides: Any) -> FacilityLoad:
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
    power_limit_kw : float, pandas.Series or callable, optional
        Allowed facility power at the meter [kW]: a number, a tz-aware Series (each value held
        until the next; NaN or inf: no limit) or ``limit(time, state) -> kW`` called once per
        control period (:class:`~aiload.facility.control.FacilityState`). The levers of
        ``spec.flexibility`` hold it (docs/flexibility.md, "Levers inside the facility");
        ``power`` gains ``limit_kw``, ``curtailed_kw`` (and ``battery_kw``) and
        ``flexibility`` the events. None (default): the open-loop run, unchanged.
    dynamics : IterationDynamics, optional
        Sub-second power of large synchronous training jobs: iteration cycles, checkpoint
        stalls, failures and restarts, start/stop ramps
        (:mod:`aiload.facility.iteration`; docs/stabilisation.md). None (default): off, the
        output unchanged bit for bit; ``meta["dynamics"]`` gives the parameters, their sources
        and the failures drawn.
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
    flexibility = overrides.pop("flexibility", None) if isinstance(spec_or_preset, str) else None
    spec = resolve_spec(spec_or_preset, overrides)
    if flexibility is not None:
        spec = dataclasses.replace(spec, flexibility=flexibility)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 1:
        raise InputError(f"facility(replicates=): expected an integer >= 1, got {replicates!r}.")
    check_run_arguments("facility", seed=seed, start=start, end=end, freq=freq)
    start, freq_s, n_bins, fine_s = _grid(start, end, freq)
    if dynamics is not None and not isinstance(dynamics, IterationDynamics):
        raise InputError(f"facility(dynamics=): expected an aiload.facility.IterationDynamics "
                         f"or None, got {type(dynamics).__name__}.")
    if dynamics is not None and power_limit_kw is not None:
        raise InputError("facility(): dynamics= and power_limit_kw= together are not supported "
                         "yet (the levers act on the open-loop job power); run one or the other.")
    if power_limit_kw is not None:
        from aiload.facility.flexout import check_limit_run  # noqa: PLC0415

        check_limit_run(spec, power_limit_kw, start, freq_s, n_bins, replicates, stream_to)
    require_facility_memory(n_bins, 6 + 2 * len(spec.inference), replicates, stream_to is not None,
                            f"facility({spec.name!r}, freq={freq!r}, {n_bins:,} intervals)")
    t_wall = time.perf_counter()
    children = np.random.SeedSequence(seed).spawn(replicates)
    windows_per_run = 1 if stream_to is None else -(-n_bins // STREAM_WINDOW_BINS)
    bar = tqdm(total=replicates * (3 + windows_per_run), disable=not progress,
               desc=f"facility {spec.name}", unit="step")
    writer = None
    if stream_to is not None:
        writer = StreamWriter(stream_to)
    runs, frames = [], []
    try:
        for r, child in enumerate(children):
            collector = _Collector(start, freq_s, n_bins, writer if r == 0 else None)
            out = _simulate(spec, start, freq_s, n_bins, fine_s, np.random.default_rng(child),
                            bar, collector, dynamics)
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
        "burn_in_s": first["burn_in_s"],
        "capacity_nodes": first["capacity_nodes"],
        "unserved_requests": first["unserved_requests"],
        "economiser_h": first["economiser_h"] if spec.overheads.cooling != "pue" else None,
        "wall_s": time.perf_counter() - t_wall,
    }
    if dynamics is not None:
        meta["dynamics"] = first["dynamics"]
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
    if power_limit_kw is not None:
        from aiload.facility.flexout import controlled  # noqa: PLC0415

        _warn_limit_units(power_limit_kw, float(frames[0]["facility_kw"].max()))

        return controlled(spec, start, freq_s, n_bins, frames[0], first,
                          _jobs_frame(start, first), meta, scaling, power_limit_kw, t_wall)
    return FacilityLoad(frames[0], _jobs_frame(start, first), meta, bands, scaling)


def _warn_limit_units(limit: Any, open_loop_peak_kw: float) -> None:
    """The unit-slip rule (:func:`aiload._checks.warn_unit_slip`) on a power limit: a limit
    ~1,000x below the facility's own open-loop peak was most likely given in MW (issue 26:
    ``power_limit_kw=0.63`` for an 840 kW facility)."""
    from aiload._checks import warn_unit_slip  # noqa: PLC0415

    if isinstance(limit, pd.Series):
        values = pd.to_numeric(limit, errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values) & (values > 0)]
        if not values.size:
            return
        value, what = float(values.min()), "facility(power_limit_kw=<Series>), its lowest limit"
    elif callable(limit):
        return
    else:
        value, what = limit, "facility(power_limit_kw=)"
    warn_unit_slip(value, what, reference=open_loop_peak_kw,
                   reference_what="the facility's open-loop peak", unit="kW",
                   too_large=False, stacklevel=4)
