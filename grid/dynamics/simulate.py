"""Run one dynamic study in ANDES: the facilities at their buses, the events, the rule.

ANDES integrates the network and machines (implicit trapezoid, fixed step ``dt_s``); before
each step aiload's hook (ANDES's ``TDS.callpert``) sets each facility's power from its series,
its trips and steps, and its ride-through rule applied to the voltage and frequency of the
last solved step. One ANDES run, no restarts: the hook is the only overhead.
"""

from __future__ import annotations

import contextlib
import io
import math
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from grid.dynamics.cases import Case, load_case, quiet_andes
from grid.dynamics.events import BusFault, Event, FacilityTrip, LoadStep
from grid.dynamics.load import DEFAULT_POWER_FACTOR, Facility
from grid.dynamics.results import DynamicResult
from grid.dynamics.ridethrough import RideThrough, RuleState

__all__ = ["simulate", "DEFAULT_DT_S"]

#: integration step (*assumption*: one cycle at 60 Hz; ride-through timers resolve to it)
DEFAULT_DT_S = 1.0 / 60.0
_DISPATCH = ("share", "slack")


def _events(event: Event | Iterable[Event] | None) -> tuple:
    if event is None:
        return ()
    if isinstance(event, (FacilityTrip, BusFault, LoadStep)):
        return (event,)
    out = tuple(event)
    for e in out:
        if not isinstance(e, (FacilityTrip, BusFault, LoadStep)):
            raise ValueError(f"event {e!r} is not a FacilityTrip, BusFault or LoadStep")
    return out


def _facilities(facility_bus, load_kw, facilities, ride_through, power_factor) -> tuple:
    if facilities is not None:
        if facility_bus is not None or load_kw is not None:
            raise ValueError("give either facilities=[Facility(...), ...] or facility_bus= "
                             "and load_kw=, not both")
        facs = tuple(facilities)
        if ride_through is not None:
            facs = tuple(f if f.ride_through is not None else
                         Facility(f.bus, f.load_kw, f.power_factor, ride_through, f.v_brk_pu,
                                  f.name) for f in facs)
    else:
        if facility_bus is None or load_kw is None:
            raise ValueError("simulate needs the facility: facility_bus= and load_kw= (kW, "
                             "or an aiload power series in kW), or facilities=[...]")
        facs = (Facility(facility_bus, load_kw, power_factor, ride_through),)
    names = [f.name for f in facs]
    if len(set(names)) != len(names):
        raise ValueError(f"facility names {names} are not unique; name them "
                         f"(Facility(..., name='campus-a'))")
    return facs


def _dispatch_overrides(case: Case, added_mw: float, how: str) -> dict:
    if how == "slack" or added_mw == 0.0:
        return {}
    # the added load is shared by all generators in proportion to their rating (*assumption*);
    # the slack machine takes its share and the change in losses
    pv = case.records.get("PV", ())
    slack = case.records.get("Slack", ())
    sn = [float(r.get("Sn", 100.0)) for r in pv if r.get("u", 1) == 1]
    sn_total = sum(sn) + sum(float(r.get("Sn", 100.0)) for r in slack if r.get("u", 1) == 1)
    out = {}
    for r in pv:
        if r.get("u", 1) != 1:
            continue
        share = float(r.get("Sn", 100.0)) / sn_total
        out[("PV", r["idx"])] = {"p0": float(r.get("p0", 0.0)) + share * added_mw / case.mva}
    return out


def simulate(case: str | Case, facility_bus: Any = None, load_kw: float | pd.Series | None = None,
             *, event: Event | Sequence[Event] | None = None,
             ride_through: RideThrough | None = None,
             facilities: Sequence[Facility] | None = None, t_end_s: float = 20.0,
             dt_s: float = DEFAULT_DT_S, power_factor: float = DEFAULT_POWER_FACTOR,
             dispatch: str = "share", keep_events: bool = False) -> DynamicResult:
    """Simulate the facility (or facilities) at their buses through ``event``.

    Parameters
    ----------
    case
        A bundled case name (``"ieee14"``, ``"ieee39"``, ...), a case file, or a
        :class:`~grid.dynamics.cases.Case` from :func:`~grid.dynamics.cases.load_case`.
    facility_bus, load_kw
        One facility: ANDES bus id and constant power [kW] or a power series [kW].
    event
        A :class:`FacilityTrip`, :class:`BusFault`, :class:`LoadStep`, or a list of them;
        ``None``: the facility's own series is the only disturbance.
    ride_through
        The protection rule of the facility (facilities without their own); ``None``: none.
    facilities
        Several :class:`Facility` instead of ``facility_bus`` / ``load_kw``.
    t_end_s, dt_s
        Simulated time and fixed integration step [s].
    power_factor
        Lagging power factor of the one facility given by ``facility_bus`` [-].
    dispatch
        ``"share"``: the facility's initial power is added to all generators' set points in
        proportion to their rating; ``"slack"``: the slack machine takes it all.
    keep_events
        Keep the events stored in the case itself (ANDES ``Toggle``/``Fault``/``Alter``).

    Returns
    -------
    DynamicResult

    Examples
    --------
    >>> from grid.dynamics import simulate, FacilityTrip
    >>> r = simulate("ieee14", facility_bus=9, load_kw=20_000, event=FacilityTrip(t_s=1.0),
    ...              t_end_s=5.0, dt_s=1/30)
    >>> round(r.mw_lost(), 1)
    20.0
    """
    c = load_case(case)
    facs = _facilities(facility_bus, load_kw, facilities, ride_through, power_factor)
    events = _events(event)
    if dispatch not in _DISPATCH:
        raise ValueError(f"dispatch={dispatch!r}; expected one of {_DISPATCH}")
    if not (t_end_s > 0 and 0 < dt_s <= t_end_s):
        raise ValueError(f"t_end_s={t_end_s}, dt_s={dt_s}: need 0 < dt_s <= t_end_s")
    buses = set(c.buses)
    line_ids = {r["idx"] for r in c.records.get("Line", ())}
    for f in facs:
        if f.bus not in buses:
            raise ValueError(f"facility bus {f.bus!r} is not in case {c.name!r}; its buses "
                             f"are {sorted(buses, key=str)}")
    for e in events:
        if isinstance(e, BusFault):
            if e.bus not in buses:
                raise ValueError(f"fault bus {e.bus!r} is not in case {c.name!r}; its buses "
                                 f"are {sorted(buses, key=str)}")
            if e.trip_line is not None and e.trip_line not in line_ids:
                raise ValueError(f"trip_line {e.trip_line!r} is not a line of {c.name!r}; "
                                 f"lines: {sorted(line_ids, key=str)}")
        elif e.facility is not None and not 0 <= e.facility < len(facs):
            raise ValueError(f"{type(e).__name__}.facility={e.facility} but the study has "
                             f"{len(facs)} facilities (index 0..{len(facs) - 1})")

    schedules = [f.schedule(dt_s) for f in facs]
    p0_mw = [float(s[1][0]) for s in schedules]
    sb, fn = c.mva, c.freq_hz
    adds: list[tuple[str, dict]] = []
    for i, f in enumerate(facs):
        adds.append(("PQ", {"idx": f"AIL_PQ_{i}", "name": f.name, "bus": f.bus,
                            "Vn": c.bus_kv(f.bus), "p0": p0_mw[i] / sb,
                            "q0": p0_mw[i] * f.q_per_p / sb}))
        adds.append(("ZIP", {"idx": f"AIL_ZIP_{i}", "pq": f"AIL_PQ_{i}", "kpp": 0.0,
                             "kpi": 100.0, "kpz": 0.0, "kqp": 0.0, "kqi": 100.0, "kqz": 0.0}))
        adds.append(("BusFreq", {"idx": f"AIL_BF_{i}", "bus": f.bus, "fn": fn}))
    for k, e in enumerate(events):
        if isinstance(e, BusFault):
            tc = e.t_s + e.duration_s(fn)
            adds.append(("Fault", {"idx": f"AIL_F_{k}", "bus": e.bus, "tf": e.t_s, "tc": tc,
                                   "xf": e.x_pu, "rf": e.r_pu}))
            if e.trip_line is not None:
                adds.append(("Toggle", {"idx": f"AIL_T_{k}", "model": "Line",
                                        "dev": e.trip_line, "t": tc}))
        else:
            # a no-op Alter makes ANDES step exactly to the event time (and 1e-4 s after it),
            # as it does for its own Toggle; the hook then acts on the steps after t_s
            fi = 0 if e.facility is None else e.facility
            adds.append(("Alter", {"idx": f"AIL_A_{k}", "model": "ZIP", "dev": f"AIL_ZIP_{fi}",
                                   "src": "kpp", "t": e.t_s, "method": "+", "amount": 0.0}))
    overrides = _dispatch_overrides(c, sum(p0_mw), dispatch)
    ss = c.system(tuple(adds), overrides=overrides, keep_events=keep_events)

    with quiet_andes():
        ss.PFlow.run()
    if not ss.PFlow.converged:
        raise ValueError(f"ANDES's power flow of {c.name!r} with {sum(p0_mw):.1f} MW of "
                         f"facility load at bus(es) {[f.bus for f in facs]} did not converge; "
                         f"the network cannot carry that load there (try a smaller load or "
                         f"dispatch='slack'/'share')")
    tds = ss.TDS
    tds.config.tf = float(t_end_s)
    tds.config.tstep = float(dt_s)
    tds.config.no_tqdm = 1
    tds.config.fixt = 1
    tds.config.shrinkt = 1

    states = [RuleState(f.ride_through) for f in facs]
    trips = [(e.t_s, e.share, e.facility) for e in events if isinstance(e, FacilityTrip)]
    steps = [(e.t_s, e.delta_kw / 1e3, e.facility) for e in events if isinstance(e, LoadStep)]
    n = len(facs)
    rec_t: list[float] = []
    rec_coef: list[np.ndarray] = []
    rec_sched: list[np.ndarray] = []
    rec_online: list[np.ndarray] = []
    addr: dict[str, Any] = {}
    last_coef = np.full(n, np.nan)
    log: list[tuple[float, str, str]] = []

    def hook(t, system):
        t = float(t)
        if not addr:  # addresses are final once ANDES has initialised the run
            addr["v"] = np.array([system.Bus.v.a[system.Bus.idx2uid(f.bus)] for f in facs])
            addr["f"] = np.array([system.BusFreq.f.a[system.BusFreq.idx2uid(f"AIL_BF_{i}")]
                                  for i in range(n)])
            addr["zip"] = np.array([system.ZIP.idx2uid(f"AIL_ZIP_{i}") for i in range(n)])
        y = system.dae.y
        v = y[addr["v"]]
        f_hz = y[addr["f"]] * fn
        t_meas = max(0.0, t - float(tds.h)) if t > 0 else 0.0
        coef_p = np.empty(n)
        coef_q = np.empty(n)
        sched = np.empty(n)
        online = np.empty(n)
        for i, fac in enumerate(facs):
            ts_, ps_ = schedules[i]
            # the step ending at t integrates the interval it spans: the one holding t - ε
            j = int(np.searchsorted(ts_, t - 1e-9, side="right")) - 1
            p = float(ps_[max(j, 0)])
            for (te, dp, fi) in steps:
                if (fi is None or fi == i) and t > te + 1e-9:
                    p += dp
            p = max(p, 0.0)
            before = states[i].log[-1] if states[i].log else None
            on = states[i].update(t_meas, float(v[i]), float(f_hz[i])) if t > 0 else 1.0
            if states[i].log and states[i].log[-1] is not before:
                log.append((states[i].log[-1][0], fac.name, states[i].log[-1][1]))
            for (te, share, fi) in trips:
                if (fi is None or fi == i) and t > te + 1e-9:
                    on = on * (1.0 - share)
            sched[i], online[i] = p, on
            vv = max(float(v[i]), fac.v_brk_pu)
            coef_p[i] = p * on / sb / vv
            coef_q[i] = p * on * fac.q_per_p / sb / vv
        zi = addr["zip"]
        system.ZIP.pi0.v[zi] = coef_p
        system.ZIP.qi0.v[zi] = coef_q
        change = np.abs(coef_p - last_coef) > 0.02 * np.maximum(np.abs(last_coef), 1e-6)
        if t > 0 and np.any(change):
            tds.custom_event = True  # refresh the Jacobian after a large change
        last_coef[:] = coef_p
        while rec_t and rec_t[-1] >= t - 1e-12:  # a retried step replaces its record
            rec_t.pop(); rec_coef.pop(); rec_sched.pop(); rec_online.pop()
        rec_t.append(t)
        rec_coef.append(coef_p.copy())
        rec_sched.append(sched)
        rec_online.append(online)

    tds.callpert = hook
    printed = io.StringIO()
    with quiet_andes(), contextlib.redirect_stdout(printed):  # ANDES prints its init report
        ok = bool(tds.run(no_summary=True))
    if not tds.initialized or tds.test_ok is False:
        raise ValueError(
            f"ANDES could not initialise the dynamic models of {c.name!r} at this operating "
            f"point ({sum(p0_mw):.1f} MW of facility load at bus(es) "
            f"{[f.bus for f in facs]}, dispatch={dispatch!r}): a governor, exciter or load "
            f"limit is violated in the initial state; try a smaller load or another "
            f"dispatch (ANDES's own diagnosis: andes -v 10 run CASE -r tds --init)")
    message = "" if ok else (tds.err_msg or f"stopped at t={float(ss.dae.t):.3f} s")
    ts = ss.dae.ts
    t = np.asarray(ts.t, dtype=float)
    yv = np.asarray(ts.y)
    xv = np.asarray(ts.x)

    # centre-of-inertia frequency from the machines' speeds (M on the system base)
    speeds, weights, cols = [], [], []
    for mdl in ss.models.values():
        if mdl.n and getattr(mdl, "group", None) == "SynGen":
            online_m = mdl.u.v.astype(bool)
            speeds.append(xv[:, mdl.omega.a][:, online_m])
            weights.append(mdl.M.v[online_m])
            cols += [str(i) for i, u in zip(mdl.idx.v, online_m) if u]
    w = np.concatenate(weights)
    om = np.concatenate(speeds, axis=1)
    freq = pd.DataFrame(om * fn, index=pd.Index(t, name="t_s"), columns=cols)
    freq.insert(0, "coi", (om @ w) / w.sum() * fn)
    volt = pd.DataFrame(yv[:, ss.Bus.v.a], index=freq.index, columns=list(ss.Bus.idx.v))

    rt = np.asarray(rec_t)
    k = np.clip(np.searchsorted(rt, t + 1e-12, side="right") - 1, 0, len(rt) - 1)
    coef = np.asarray(rec_coef)[k]
    names = [f.name for f in facs]
    vfac = yv[:, addr["v"]]
    fac_mw = pd.DataFrame(coef * vfac * sb, index=freq.index, columns=names)
    sched_mw = pd.DataFrame(np.asarray(rec_sched)[k], index=freq.index, columns=names)
    online_df = pd.DataFrame(np.asarray(rec_online)[k], index=freq.index, columns=names)
    ffac = pd.DataFrame(yv[:, addr["f"]] * fn, index=freq.index, columns=names)
    t_event = min((e.t_s for e in events), default=0.0)
    return DynamicResult(
        case=c.name, f_nominal_hz=fn, frequency_hz=freq, voltage_pu=volt, facility_mw=fac_mw,
        online=online_df, facility_frequency_hz=ffac, facilities=facs, events=events,
        log=tuple(log), completed=ok, message=message, t_event_s=t_event,
        scheduled_mw=sched_mw,
        meta={"dt_s": dt_s, "t_end_s": t_end_s, "dispatch": dispatch, "andes_steps": len(t),
              "source": c.source})
