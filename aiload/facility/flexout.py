"""The controlled run's outputs: the power table with ``limit_kw``, ``curtailed_kw`` and
``battery_kw``, the updated job log, the events table and the totals.

IT power is the open-loop IT plus what the levers changed, through the fleet's own chain
(rest of node, PSU, other IT per busy node); losses and cooling are recomputed from the final
IT series with the open-loop path's functions (:func:`~aiload.facility.overheads.losses_kw`,
:func:`~aiload.facility.overheads.cooling_kw`, :class:`~aiload.facility.overheads.CoolingLag`),
so an interval nothing changed keeps its open-loop bits (until a cooling lag carries a change
into it).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from aiload.facility.overheads import CoolingLag, cooling_kw, losses_kw

__all__ = ["EVENT_COLUMNS", "assemble", "check_flexibility"]

EVENT_COLUMNS = ["start", "end", "target_kw", "excess_kw", "battery_kw", "inference_kw",
                 "power_cap_kw", "deferral_kw", "response_s", "deferred_node_h",
                 "job_delay_h", "queued_requests", "unserved_requests", "battery_soc_min",
                 "shortfall_kw"]


def _down(values: np.ndarray, q: int, how: str = "mean") -> np.ndarray:
    if q == 1:
        return values
    blocks = values.reshape(-1, q)
    return blocks.min(axis=1) if how == "min" else blocks.mean(axis=1)


def _power(rep, frame: pd.DataFrame, freq_s: float) -> tuple[pd.DataFrame, np.ndarray]:
    q, pl, sv, ov = rep.q, rep.plans, rep.services, rep.spec.overheads
    pl.flush()
    d_p = _down(pl.d_job_w - rep.idle_w * pl.d_busy + sv.d_w, q)
    d_b = _down(pl.d_busy + sv.d_busy, q)
    bat = _down(np.repeat(rep.battery_kw, rep.m)[: rep.n], q)
    limit = _down(np.repeat(rep.limits, rep.m)[: rep.n], q, "min")
    power = frame.copy()
    changed = (d_p != 0) | (d_b != 0)
    if changed.any() or (bat != 0).any():
        it = frame["it_kw"].to_numpy()
        it_new = np.where(changed, it + (rep.c_p * d_p + rep.c_b * d_b), it)
        loss = losses_kw(it_new, rep.rated_kw, ov)
        temp = frame["drybulb_c"].to_numpy() if "drybulb_c" in frame else None
        cool, _ = cooling_kw(it_new, loss, ov, temp)
        cool = CoolingLag(ov.cooling_lag_s, freq_s)(cool)
        power["it_kw"], power["losses_kw"], power["cooling_kw"] = it_new, loss, cool
        power["facility_kw"] = it_new + loss + cool - bat
        if "component_kw" in frame:
            comp = frame["component_kw"].to_numpy()
            power["component_kw"] = np.where(changed, comp + d_p / 1e3, comp)
        busy = frame["busy_nodes"].to_numpy()
        power["busy_nodes"] = np.where(changed, busy + d_b, busy)
        if sv.items:
            extra = _down(sv.unserved_requests / rep.h, q)
            power["unserved_requests_per_s"] = frame["unserved_requests_per_s"] + extra
            power["served_requests_per_s"] = frame["served_requests_per_s"] - extra
    power["limit_kw"] = limit
    power["curtailed_kw"] = frame["facility_kw"].to_numpy() - power["facility_kw"].to_numpy()
    if rep.battery is not None:
        power["battery_kw"] = bat
    return power, bat


def _deficit_node_s(rep, t: float, jobs: list[int]) -> float:
    """Work behind the open-loop run at ``t``, summed over ``jobs`` [node·s]."""
    pl = rep.plans
    return sum(float(pl.nodes[j]) * (min(max(t - float(pl.ol_start[j]), 0.0), float(pl.dur[j]))
                                     - pl.progress_s(j, t)) for j in jobs)


def _events(rep, power: pd.DataFrame, start: pd.Timestamp, freq_s: float) -> pd.DataFrame:
    events = list(rep.events)
    if rep.event is not None:
        events.append({**rep.event, "k1": rep.n_periods})
    touched = np.fromiter(rep.plans.plans, dtype=np.int64, count=len(rep.plans.plans))
    first = np.array([rep.plans.first_touch[j] for j in touched])
    last = np.array([max(rep.plans.end_s(j), rep.plans.ol_start[j] + rep.plans.dur[j])
                     for j in touched])
    fac = power["facility_kw"].to_numpy()
    curtailed = power["curtailed_kw"].to_numpy()
    limit = power["limit_kw"].to_numpy()
    bat_h = np.repeat(rep.battery_kw, rep.m)[: rep.n]
    rows = []
    for ev in events:
        s0, s1 = ev["k0"] * rep.m, min(rep.n, ev["k1"] * rep.m)
        if s1 <= s0:
            continue
        t0, t1 = s0 * rep.h, s1 * rep.h
        i0, i1 = s0 // rep.q, -(-s1 // rep.q)
        g = rep.gain(s0, s1)
        cap_kw = float(np.mean(rep.plans.cap_saved_w[s0:s1])) * g
        inf_kw = float(np.mean(-rep.services.d_w[s0:s1])) * g
        bat_kw = float(np.mean(np.maximum(bat_h[s0:s1], 0.0)))
        total = float(np.mean(curtailed[i0:i1]))
        # the jobs' share of the cut (what is not battery or inference) goes to the caps and
        # the pauses in proportion to their direct savings (a capped job's uncapped-
        # equivalent power, a paused job's power above idle); what a changed schedule adds
        # or saves beyond them (jobs running on, displaced starts) is shared the same way
        jobs_kw = total - bat_kw - inf_kw
        pause_kw = float(np.mean(rep.pause_saved_w[s0:s1])) * g
        if cap_kw + pause_kw > 0:
            defer_kw = jobs_kw * pause_kw / (cap_kw + pause_kw)
            cap_kw = jobs_kw - defer_kw
        elif "inference" in ev["levers"]:
            defer_kw, cap_kw, inf_kw = 0.0, 0.0, inf_kw + jobs_kw
        else:
            defer_kw, cap_kw = jobs_kw, 0.0  # starts held or moved
        respond = max((rep.flex.response_s(lv) + (rep.flex.deferral.checkpoint_s
                                                  if lv == "deferral" else 0.0)
                       for lv in ev["levers"]), default=0.0)
        respond = math.ceil(respond / rep.period_s - 1e-9) * rep.period_s
        i_resp = min(i1, -(-int(round((t0 + respond) / freq_s * 1e6)) // 1_000_000))
        over = fac[i_resp:i1] - limit[i_resp:i1]
        # a job's work differs from the open loop's only from its first change to its end
        live = touched[(first < t1) & (last > t0)].tolist()
        first_touch = touched[(first >= t0) & (first < t1)].tolist()
        delays = [rep.plans.end_s(j) - (rep.plans.ol_start[j] + rep.plans.dur[j])
                  for j in first_touch]
        ol_peak = rep.fac_ol[s0:s1]
        lim_h = np.repeat(rep.limits, rep.m)[s0:s1]
        rows.append({
            "start": start + pd.Timedelta(seconds=t0), "end": start + pd.Timedelta(seconds=t1),
            "target_kw": float(np.min(rep.limits[ev["k0"]:ev["k1"]])),
            "excess_kw": float(np.max(ol_peak - lim_h)),
            "battery_kw": bat_kw, "inference_kw": inf_kw, "power_cap_kw": cap_kw,
            "deferral_kw": defer_kw, "response_s": float(respond),
            "deferred_node_h": (_deficit_node_s(rep, t1, live)
                                - _deficit_node_s(rep, t0, live)) / 3600.0,
            "job_delay_h": float(sum(d for d in delays if math.isfinite(d))) / 3600.0,
            "queued_requests": float(rep.services.queued_requests[s0:s1].sum()),
            "unserved_requests": float(rep.services.unserved_requests[s0:s1].sum()),
            "battery_soc_min": float(ev["soc_min"]) if math.isfinite(ev.get("soc_min", math.inf))
            else math.nan,
            "shortfall_kw": float(max(0.0, over.max())) if len(over) else 0.0,
        })
    return pd.DataFrame(rows, columns=EVENT_COLUMNS)


def _jobs(rep, jobs: pd.DataFrame, start: pd.Timestamp) -> pd.DataFrame:
    jobs = jobs.copy()
    pl = rep.plans
    delay = np.zeros(len(jobs))
    if pl.plans:
        idx = np.fromiter(pl.plans, dtype=np.int64)
        new_start = np.array([pl.start_s(j) for j in idx])
        new_end = np.array([pl.end_s(j) for j in idx])
        delay[idx] = new_end - (pl.ol_start[idx] + pl.dur[idx])
        origin_ns = start.as_unit("ns").value

        def stamp(seconds):
            finite = np.isfinite(seconds)
            ns = np.round(np.where(finite, seconds, 0.0) * 1e9).astype(np.int64)
            values = np.where(finite, (origin_ns + ns).view("datetime64[ns]"),
                              np.datetime64("NaT"))
            return pd.DatetimeIndex(values).tz_localize("UTC").tz_convert(start.tz)

        new_starts, new_ends = pl.ol_start.copy(), pl.ol_start + pl.dur
        new_starts[idx], new_ends[idx] = new_start, new_end
        jobs["start"], jobs["end"] = stamp(new_starts), stamp(new_ends)
        jobs["queue_wait_s"] = (jobs["start"] - jobs["arrival"]).dt.total_seconds()
    jobs["delay_s"] = delay
    return jobs


def assemble(rep, frame: pd.DataFrame, jobs: pd.DataFrame, start: pd.Timestamp,
             freq_s: float) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict]:
    """The controlled run's power table, job log, events table and totals."""
    power, _ = _power(rep, frame, freq_s)
    events = _events(rep, power, start, freq_s)
    pl = rep.plans
    horizon_s = rep.n * rep.h
    ok = np.isfinite(pl.ol_start)
    s, d = pl.ol_start[ok], pl.dur[ok]
    work_ol = float(np.sum(pl.nodes[ok] * (np.clip(horizon_s - s, 0.0, d)
                                           - np.clip(-s, 0.0, d)))) / 3600.0
    shifted = _deficit_node_s(rep, horizon_s, list(pl.plans)) / 3600.0
    curtailed = power["curtailed_kw"].to_numpy()
    to_mwh = freq_s / 3600.0 / 1e3
    totals = {
        "events": len(events), "control_period_s": rep.period_s, "limit": rep.limit.kind,
        "limit_calls": rep.calls, "merit_order": list(rep.order),
        "work_open_loop_node_h": work_ol, "work_node_h": work_ol - shifted,
        "work_shifted_node_h": shifted,
        "checkpoint_overhead_node_h": pl.overhead_node_s / 3600.0,
        "energy_curtailed_mwh": float(np.sum(np.maximum(curtailed, 0.0))) * to_mwh,
        "energy_made_up_mwh": float(np.sum(np.maximum(-curtailed, 0.0))) * to_mwh,
        "jobs_changed": len(pl.plans), "jobs_waiting_at_end": len(rep.waiting),
        "jobs_paused_at_end": len(rep.paused),
        "power_cap_curve": rep.curve.name, "power_cap_source": rep.curve.source,
        "power_cap_min_fraction": rep.r_min,
        "response_s": {lv: rep.flex.response_s(lv) for lv in rep.order
                       if getattr(rep.flex, lv) is not None},
        "inference_capacity_per_s": [it["c"] for it in rep.services.items],
        "lever_sources": {lv: getattr(rep.flex, lv).source for lv in rep.order
                          if getattr(rep.flex, lv) is not None},
    }
    return power, _jobs(rep, jobs, start), events, totals


def check_limit_run(spec, limit, start: pd.Timestamp, freq_s: float, n_bins: int,
                    replicates: int, stream_to) -> None:
    """Refuse, before the simulation, what a limited run cannot do (InputError)."""
    from aiload.errors import InputError  # noqa: PLC0415
    from aiload.facility.control import PowerLimit, check_control_period  # noqa: PLC0415

    if replicates != 1 or stream_to is not None:
        raise InputError(
            f"facility(power_limit_kw=...): a limited run is one replicate kept in memory; got "
            f"replicates={replicates!r}, stream_to={stream_to!r}. Run replicates=1 without "
            "stream_to (call facility once per seed for several)."
        )
    m, q = check_control_period(float(spec.flexibility.control_period_s), freq_s)
    n_periods = -(-n_bins * q // m)
    from aiload._checks import require_memory  # noqa: PLC0415

    # the replay's arrays on the control grid: open-loop series, the levers' differences
    require_memory(
        (16 + 6 * len(spec.inference)) * 8.0 * n_bins * q,
        f"facility(power_limit_kw=..., {n_bins * q:,} control steps)",
        "Use a coarser freq or a control period of at least freq, or a shorter run.")
    PowerLimit(limit, start, spec.flexibility.control_period_s, n_periods)
    check_flexibility(spec)


def check_flexibility(spec) -> None:
    """Refuse ``spec.flexibility`` settings the spec cannot use (InputError): deferrable
    streams it does not have, a cap below its power-cap curve."""
    from aiload.errors import InputError  # noqa: PLC0415
    from aiload.facility.replay import cap_curve  # noqa: PLC0415

    deferrable = spec.flexibility.deferrable_streams
    names = {s.name for s in spec.streams}
    unknown = [s for s in deferrable or () if s not in names]
    if unknown:
        raise InputError(f"FlexibilitySpec.deferrable_streams: unknown stream(s) "
                         f"{unknown}; the spec has {sorted(names)}.")
    curve = cap_curve(spec)
    lowest = spec.flexibility.power_cap.min_power_fraction
    if lowest is not None and lowest < curve.min_power_fraction:
        raise InputError(
            f"PowerCapLever.min_power_fraction = {lowest:g} is below the lowest cap the "
            f"{curve.name!r} curve covers ({curve.min_power_fraction:g}); give at least that."
        )


def controlled(spec, start, freq_s, n_bins, frame, out, jobs, meta, scaling, limit, t_wall):
    """Replay the open-loop run under ``limit`` and return the controlled FacilityLoad."""
    import time  # noqa: PLC0415

    from aiload.facility.controller import run  # noqa: PLC0415
    from aiload.facility.io import FacilityLoad  # noqa: PLC0415
    from aiload.facility.replay import Replay  # noqa: PLC0415

    t0 = time.perf_counter()
    rep = Replay(spec, start, freq_s, n_bins, frame, out, limit)
    run(rep)
    power, jobs, events, totals = assemble(rep, frame, jobs, start, freq_s)
    totals["control_wall_s"] = time.perf_counter() - t0
    meta = {**meta, "flexibility": totals, "wall_s": time.perf_counter() - t_wall}
    return FacilityLoad(power, jobs, meta, None, scaling, flexibility=events)
