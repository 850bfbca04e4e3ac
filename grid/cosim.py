"""Closed loop between the facility and the network: :func:`cosimulate`.

The facility model (``aiload.facility(..., power_limit_kw=<callable>)``) calls back once at
the start of every control period with its :class:`~aiload.facility.FacilityState`. The
callback built here solves the network for the period that just ended — the facility at
its mean metered power of that period, the existing loads at that period's mean background
multiplier — with pandapower's matrices and lightsim2grid's Newton solver, warm-started
from the previous period (:mod:`grid.engines`), and asks the controller for the limit of
the period about to begin. The facility model never imports :mod:`grid`: the loop lives
here, behind the callable.

The first period has no measurement behind it and runs without a limit; after that, a
change of the facility's demand or of the background inside one period is seen at the
start of the next (the loop's response time is one control period, plus the levers' own).
"""

from __future__ import annotations

import datetime
import logging
import math
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from grid import engines
from grid.attach import attach, attach_all, check_bus, check_power_factor, q_mvar
from grid.cosim_control import (
    LoadingController,
    NetworkState,
    VoltageController,
    parse_branches,
)
from grid.cosim_grid import KeptVoltages, closed_loop_result
from grid.limits import Limits
from grid.powerflow import GridResult, _background_scale, timeseries

if TYPE_CHECKING:
    from grid.cosim_queue import QueueCosimulation

__all__ = ["Cosimulation", "cosimulate", "CONTROLLERS"]

log = logging.getLogger(__name__)

CONTROLLERS = ("voltage", "loading")


@dataclass(frozen=True)
class Cosimulation:
    """Result of :func:`cosimulate`.

    Attributes
    ----------
    load : aiload.facility.FacilityLoad
        The facility run under the loop's limits (``power["limit_kw"]``, ``curtailed_kw``,
        ``flexibility`` per event).
    grid : GridResult
        :func:`grid.timeseries` on the closed-loop ``facility_kw`` (the reference voltages
        and loadings, at the facility's output ``freq``). With Q limits and a control period
        equal to ``freq`` it is built from the loop's own per-period power flows, the same
        ones (:mod:`grid.cosim_grid`).
    open_loop : GridResult or None
        :func:`grid.timeseries` on the facility's open-loop power (``facility_kw +
        curtailed_kw``), for comparison; None when not asked for.
    control : pandas.DataFrame
        One row per control period, indexed by its start: ``facility_kw`` (mean of the
        previous period, as the controller saw it) [kW], ``background`` [-], ``vm_pu`` (the
        facility bus) [pu], ``max_loading_percent`` [%], ``converged``, ``limit_kw`` (what
        the controller set; inf = no limit) [kW].
    controller : str
        ``"voltage"``, ``"loading"`` or the callable's name.
    bus : int
    limits : Limits
    power_factor : float
    control_period_s : float
        The facility's control period [s].
    wall_s : float
        Wall time of the loop (facility and per-period power flows) [s].
    network_s : float
        Of ``wall_s``, the time in the callback: the per-period power flows and the
        controller [s].
    vm_pu : pandas.DataFrame
        Voltage at the facility bus [pu], columns ``closed_loop`` and ``open_loop`` (NaN
        without the open-loop run), on the facility's output index.
    violation_steps, open_loop_violation_steps : int
        Steps with any violation of ``limits`` anywhere in the network (``grid.violations()``),
        closed and open loop (-1 without the open-loop run).
    events : pandas.DataFrame or None
        The facility's event table (``load.flexibility``).
    """

    load: object
    grid: GridResult
    open_loop: GridResult | None
    control: pd.DataFrame
    controller: str
    bus: int
    limits: Limits
    power_factor: float
    control_period_s: float
    wall_s: float
    network_s: float
    vm_pu: pd.DataFrame
    violation_steps: int
    open_loop_violation_steps: int
    events: pd.DataFrame | None = None


def _period_s(value) -> float | None:
    if value is None:
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            seconds = float(value)  # a number is in seconds
        else:
            seconds = pd.Timedelta(value).total_seconds()
    except (ValueError, TypeError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise InputError(f"control_period: expected a positive duration such as '5min' (or a "
                         f"number of seconds, e.g. 300), got {value!r}.")
    return seconds


def _aware_timestamp(value) -> pd.Timestamp | None:
    """``value`` as a tz-aware timestamp; None when it is not one (unreadable, NaT, naive)."""
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    return None if ts is pd.NaT or ts.tz is None else ts


def _horizon(start, end, freq) -> pd.DatetimeIndex:
    """The facility's output index (the same rule as ``aiload.facility``)."""
    start_ts = _aware_timestamp(start)
    if start_ts is None:
        raise InputError(f"start: expected a tz-aware timestamp, got {start!r}; e.g. "
                         "pd.Timestamp('2025-01-01', tz='UTC').")
    try:  # a bare number would be nanoseconds to pandas: refused, as aiload.facility does
        step = None if isinstance(freq, (int, float, np.number)) else pd.Timedelta(freq)
    except (ValueError, TypeError):
        step = None
    if step is None or step is pd.NaT or not step > pd.Timedelta(0):
        raise InputError(f"freq: expected an interval such as '5min' or '1h' (a fixed, "
                         f"positive duration), got {freq!r}.")
    end_ts = None
    # a duration as aiload.facility reads one: a timedelta, or text without '-' or ':'
    # ('-1D' is a negative duration, refused below as an empty run)
    if isinstance(end, (datetime.timedelta, np.timedelta64)) or (
            isinstance(end, str) and (not any(c in end for c in "-:")
                                      or end.strip().startswith("-"))):
        try:
            end_ts = start_ts + pd.Timedelta(end)
        except (ValueError, TypeError):
            end_ts = None
    if end_ts is None:
        end_ts = _aware_timestamp(end)
        if end_ts is None:
            raise InputError(f"end: expected a tz-aware timestamp or a duration such as '1D', "
                             f"got {end!r}.")
        end_ts = end_ts.tz_convert(start_ts.tz)  # the same instant in start's zone
    try:
        index = pd.date_range(start_ts, end_ts, freq=freq, inclusive="left")
    except (ValueError, TypeError):
        raise InputError(f"freq: expected an interval such as '5min' or '1h', got {freq!r}."
                         ) from None
    if len(index) == 0:
        raise InputError(f"end: expected a time after start ({start_ts}), got {end!r} (the run "
                         f"would be empty); give a later end or a duration such as '1D'.")
    return index


def _controller(controller, limits: Limits, branches, net: pp.pandapowerNet):
    if branches is not None and not (isinstance(controller, str) and controller == "loading"):
        raise InputError(f"branches: only controller='loading' watches branches, got "
                         f"controller={controller!r} with branches={branches!r}; drop branches "
                         "or use controller='loading'.")
    if callable(controller) and not isinstance(controller, str):
        return controller, getattr(controller, "name", getattr(controller, "__name__",
                                                               type(controller).__name__))
    if controller == "voltage":
        return VoltageController(limits.vm_min_pu), "voltage"
    if controller == "loading":
        lines, trafos, trafo3ws = parse_branches(branches, net.line.index, net.trafo.index,
                                                 net.trafo3w.index)
        return LoadingController(limits.loading_max_percent, lines, trafos,
                                 trafo3w_pos=trafo3ws), "loading"
    raise InputError(f"controller: expected one of {CONTROLLERS} or a callable "
                     f"(time, network_state, facility_state) -> kW, got {controller!r}.")


def _branch_rows(model: engines.Model, rows: np.ndarray, table, kind: str):
    """Pre-sliced ``Yf``/``Yt`` rows and the factors [%/pu] of :func:`engines._branch_loading`."""
    live = np.flatnonzero(rows >= 0)
    r = rows[live]
    cf = model.base_mva / (np.sqrt(3) * model.f_kv[r])
    ct = model.base_mva / (np.sqrt(3) * model.t_kv[r])
    if kind == "line":
        i_max = (table.max_i_ka * table.df * table.parallel).to_numpy()[live]
        ff, ft = cf / i_max * 100.0, ct / i_max * 100.0
    else:
        rating = (table.sn_mva * table.parallel * table.df).to_numpy()[live]
        ff = cf * table.vn_hv_kv.to_numpy()[live] * np.sqrt(3) / rating * 100.0
        ft = ct * table.vn_lv_kv.to_numpy()[live] * np.sqrt(3) / rating * 100.0
    return live, model.yf[r].tocsr(), model.yt[r].tocsr(), ff, ft, table.in_service.to_numpy()


class _Flows(dict):
    """Bus voltages and branch loadings of one solution, each computed when first read."""

    def __init__(self, owner: _Network, v: np.ndarray) -> None:
        super().__init__()
        self.owner, self.v = owner, v

    def __missing__(self, key: str) -> np.ndarray:
        o = self.owner
        if key == "vm_pu":
            out = np.full(len(o.model.bus_row), np.nan)
            out[o.bus_ok] = np.abs(self.v[o.model.bus_row[o.bus_ok]])
        elif key in ("line_loading_percent", "trafo_loading_percent"):
            live, yf, yt, ff, ft, in_service = o.branches[key]
            out = np.full(len(in_service), np.nan)
            out[live] = np.fmax(np.abs(yf @ self.v) * ff, np.abs(yt @ self.v) * ft)
            out[~in_service] = 0.0
        elif key == "trafo3w_loading_percent":
            out = engines._trafo3w_loading(o.model, self.v[None, :])[0]
        else:
            raise KeyError(key)
        self[key] = out
        return out


class _Network:
    """The prepared model, solved one period at a time with a warm start."""

    def __init__(self, net, bus: int, pf: float, enforce_q_lims,
                 held_buses: tuple[int, ...] = ()) -> None:
        if held_buses:  # a queue's facilities before this one (grid.cosim_queue)
            work, load_index = attach_all(net, (bus, *held_buses), power_factor=pf)
        else:
            work, load_index = attach(net, bus, power_factor=pf)
        m = self.model = engines.prepare(work, load_index, enforce_q_lims)
        self.pf = pf
        #: the held facilities' power this period [MW] (set by the loop before each solve)
        self.held_mw = np.zeros(len(held_buses))
        self.v = m.v0.copy()
        self.weights = np.zeros(len(m.v0))
        self.bus_ok = m.bus_row >= 0
        self.branches = {
            "line_loading_percent": _branch_rows(m, m.line_row, work.line, "line"),
            "trafo_loading_percent": _branch_rows(m, m.trafo_row, work.trafo, "trafo"),
        }
        self.solver = None
        if not m.fast_reason:
            from lightsim2grid.algorithm import NRSing_KLU

            self.solver = NRSing_KLU()

    def solve(self, p_mw: float, scale: float, keep: bool) -> dict | None:
        m = self.model
        p = np.array([p_mw])
        q = q_mvar(p, self.pf)
        s = np.array([scale])
        if self.solver is None:
            if self.held_mw.size:
                p = np.r_[p, self.held_mw][None, :]
                q = q_mvar(p, self.pf)
            v, ok = engines.solve_runpp(m, p, q, s)
            v_k = v[0] if ok[0] else None
        else:
            sbus = m.sbus0 - (scale - 1.0) * m.sload
            if m.facility_rows[0] >= 0:
                sbus[m.facility_rows[0]] -= (p[0] + 1j * q[0]) / m.base_mva
            for row, h in zip(m.facility_rows[1:], self.held_mw):
                if row >= 0:
                    sbus[row] -= (h + 1j * float(q_mvar(np.array([h]), self.pf)[0])) \
                        / m.base_mva
            if m.enforce_q_lims and m.pv.size:
                from grid.qlims import newton_q_limited

                v_k = newton_q_limited(self.solver, m, self.v, sbus, self.weights)
            else:
                self.solver.solve(m.ybus, self.v, sbus, m.ref, self.weights, m.pv, m.pq,
                                  engines.MAX_ITERATION, engines.TOLERANCE_MVA)
                v_k = np.array(self.solver.get_V(), copy=True) if self.solver.converged() \
                    else None
        if v_k is None:
            if keep:
                self.v = m.v0.copy()  # a failed period must not poison the next warm start
            return None
        if keep:
            self.v = v_k
        return _Flows(self, v_k)


def cosimulate(
    net: pp.pandapowerNet,
    spec_or_preset,
    *,
    bus: int | None = None,
    start,
    end,
    freq: str = "5min",
    control_period=None,
    controller="voltage",
    limits: Limits | None = None,
    power_factor: float = 0.99,
    background: pd.Series | None = None,
    seed: int = 0,
    branches: list[str] | None = None,
    enforce_q_lims: bool | None = None,
    open_loop: bool = True,
    progress: bool = False,
    _held: dict[int, pd.Series] | None = None,
    **facility_overrides,
) -> Cosimulation | QueueCosimulation:
    """Run the facility and the network together, the controller closing the loop.

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified.
    spec_or_preset : FacilitySpec or str
        The facility, as for ``aiload.facility``. Or a mapping bus -> FacilitySpec or
        preset (an interconnection queue, in queue order): the loops close in queue order,
        each with those before it at their closed-loop power (:mod:`grid.cosim_queue`);
        ``seed`` is then each facility's ``SeedSequence([seed, k])`` or a mapping bus ->
        seed, and the result a :class:`grid.cosim_queue.QueueCosimulation`.
    bus : int
        Index of the connection bus in ``net.bus`` (one facility; omitted with a mapping).
    start, end, freq, seed
        The facility run (``end`` may be a duration such as ``"7D"``); ``freq`` is also the
        step of the reported :class:`GridResult`.
    control_period : str, optional
        Control period (``"5min"``); it replaces ``flexibility.control_period_s`` of the
        spec and must be a whole multiple or divisor of ``freq``. Default: the spec's.
    controller : {"voltage", "loading"} or callable
        ``"voltage"``: :class:`~grid.cosim_control.VoltageController` on
        ``limits.vm_min_pu`` at ``bus``; ``"loading"``:
        :class:`~grid.cosim_control.LoadingController` on ``branches`` at
        ``limits.loading_max_percent``; or any ``f(time, network_state, facility_state) ->
        kW`` (NaN or inf = no limit), called once per period after the first.
    limits : Limits, optional
        Default ``Limits()``.
    power_factor : float
        Lagging power factor of the facility [-].
    background : pandas.Series, optional
        Multipliers of every existing load [-] on the facility's output index (as
        :func:`grid.timeseries`); the controller sees each period's mean.
    branches : list of str, optional
        ``"line N"`` / ``"trafo N"`` watched by ``"loading"``; default every branch.
    enforce_q_lims : bool, optional
        Generator Q limits, as in :func:`grid.timeseries`.
    open_loop : bool
        Also run :func:`grid.timeseries` on the open-loop facility power.
    progress : bool
        Show the facility run's progress bar (the loop runs inside it); default off.
    _held : dict, optional
        Internal (:mod:`grid.cosim_queue`): the queue's facilities before this one, bus ->
        their closed-loop power [MW] on the run's index, held at each period's mean.
    **facility_overrides
        Preset parameters or FacilitySpec fields (e.g. ``utilization=0.8``,
        ``flexibility=FlexibilitySpec(...)``).

    Returns
    -------
    Cosimulation

    Examples
    --------
    ``colocation-10mw`` on feeder 2 of CIGRE MV (line 10 carries it): the open loop loads the
    line to ~240 %; the loop holds it after the first control period.

    >>> import pandas as pd, grid
    >>> start = pd.Timestamp("2025-01-06", tz="UTC")
    >>> idx = pd.date_range(start, periods=96, freq="15min")
    >>> res = grid.cosimulate(grid.networks.load("cigre_mv"), "colocation-10mw", bus=14,
    ...                       start=start, end="1D", freq="15min", controller="loading",
    ...                       branches=["line 10"], limits=grid.Limits(vm_min_pu=0.9),
    ...                       background=pd.Series(0.7, idx))
    >>> res.open_loop_violation_steps > 50, res.violation_steps <= 1
    (True, True)
    """
    if isinstance(spec_or_preset, Mapping):
        from grid.cosim_queue import cosimulate_queue

        if bus is not None:
            raise InputError(f"got both bus={bus!r} and a mapping of facilities; a queue names "
                             "each facility's bus as its key: omit bus=.")
        if _held:
            raise InputError("_held is internal to a queue's loop; pass the mapping alone.")
        return cosimulate_queue(
            net, spec_or_preset, seed=seed, power_factor=power_factor, background=background,
            limits=limits, enforce_q_lims=enforce_q_lims, open_loop=open_loop,
            cosimulate=cosimulate, start=start, end=end, freq=freq,
            control_period=control_period, controller=controller, branches=branches,
            progress=progress, **facility_overrides)
    bus = check_bus(net, bus)
    pf = check_power_factor(power_factor)
    limits = limits if limits is not None else Limits()
    if not isinstance(limits, Limits):
        raise InputError(f"limits: expected a grid.Limits, got {type(limits).__name__}.")
    if not isinstance(open_loop, (bool, np.bool_)):
        raise InputError(f"open_loop: expected True or False, got {open_loop!r}.")
    period_s = _period_s(control_period)
    index = _horizon(start, end, freq)
    scale = _background_scale(background, index)
    ctrl, ctrl_name = _controller(controller, limits, branches, net)
    held = dict(_held or {})
    network = _Network(net, bus, pf, enforce_q_lims, tuple(held))
    held_csum = [np.r_[0.0, np.cumsum(h.to_numpy(dtype=np.float64))] for h in held.values()]
    # with Q limits grid.timeseries solves each step with the loop's own Newton: keep them
    kept = KeptVoltages(network.model, index, network.solver is not None
                        and network.model.enforce_q_lims and not held)
    times = index.as_unit("ns").asi8
    csum = np.r_[0.0, np.cumsum(scale)]
    buses, lines, trafos = net.bus.index, net.line.index, net.trafo.index
    k_bus = buses.get_loc(bus)
    rows: list[tuple] = []
    seen = {"period_s": period_s, "network_s": 0.0}

    def period_scale(t: pd.Timestamp, length_s: float, values=scale, sums=csum) -> float:
        i1 = int(np.searchsorted(times, t.value, side="left"))
        i0 = int(np.searchsorted(times, t.value - int(length_s * 1e9), side="left"))
        if i1 <= i0:  # a period shorter than a step: the step that holds it
            return float(values[max(i1 - 1, 0)])
        if i1 - i0 == 1:  # one step: its own value (a cumsum difference is 1e-11 off)
            return float(values[i0])
        return float((sums[i1] - sums[i0]) / (i1 - i0))

    def limit(t: pd.Timestamp, state) -> float:
        t0 = _time.perf_counter()
        try:
            return _limit(t, state)
        finally:
            seen["network_s"] += _time.perf_counter() - t0

    def _limit(t: pd.Timestamp, state) -> float:
        p_kw = float(state.facility_kw)
        seen["period_s"] = float(state.period_s)
        if not math.isfinite(p_kw):
            rows.append((t, p_kw, math.nan, math.nan, math.nan, False, math.inf))
            return math.inf
        s = period_scale(t, float(state.period_s))
        for j, (h, h_sum) in enumerate(zip(held.values(), held_csum)):
            # those before it in the queue, at their mean power of the same period [MW]
            network.held_mw[j] = period_scale(t, float(state.period_s), h.to_numpy(), h_sum)
        flows = network.solve(p_kw / 1e3, s, keep=True)
        kept.keep(t.value, float(state.period_s), p_kw / 1e3, s,
                  None if flows is None else flows.v)
        nan_b, nan_l, nan_t = (np.full(len(x), np.nan) for x in (buses, lines, trafos))
        view = NetworkState(
            time=t, facility_mw=p_kw / 1e3, background=s, converged=flows is not None,
            bus=bus, vm_pu=nan_b if flows is None else flows["vm_pu"],
            line_loading_percent=nan_l if flows is None else flows["line_loading_percent"],
            trafo_loading_percent=nan_t if flows is None else flows["trafo_loading_percent"],
            buses=buses, lines=lines, trafos=trafos,
            _solve=lambda p, s=s: network.solve(p, s, keep=False),
            trafo3w_loading_percent=np.full(len(net.trafo3w), np.nan) if flows is None
            else flows["trafo3w_loading_percent"], trafo3ws=net.trafo3w.index)
        try:
            value = ctrl(t, view, state)
        except InputError:
            raise
        except Exception as err:
            raise InputError(f"controller {ctrl_name!r} at {t} raised {type(err).__name__}: "
                             f"{err}; expected f(time, network_state, facility_state) -> kW."
                             ) from err
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise InputError(f"controller {ctrl_name!r} at {t}: expected a number of kW (NaN or "
                             f"inf for no limit), got {value!r} ({type(value).__name__}).")
        value = float(value)
        loads = np.r_[view.line_loading_percent, view.trafo_loading_percent,
                      view.trafo3w_loading_percent]
        top = float(np.nanmax(loads)) if loads.size and not np.isnan(loads).all() else math.nan
        rows.append((t, p_kw, s, float(view.vm_pu[k_bus]), top, view.converged,
                     math.inf if math.isnan(value) else value))
        return value

    t0 = _time.perf_counter()
    load = _facility_call(spec_or_preset, start=start, end=end, freq=freq, seed=seed,
                          period_s=period_s, limit=limit, overrides=facility_overrides,
                          progress=progress)
    wall = _time.perf_counter() - t0
    power = load.power
    if not power.index.equals(index):
        raise InputError(f"the facility's output index ({len(power)} steps from "
                         f"{power.index[0]}) differs from start/end/freq's ({len(index)} "
                         "steps); report this as a bug.")
    control = pd.DataFrame(rows, columns=["time", "facility_kw", "background", "vm_pu",
                                          "max_loading_percent", "converged", "limit_kw"]
                           ).set_index("time")
    if held:  # this facility and those before it in the queue, in the loop's order
        mine = (power["facility_kw"] / 1e3).rename("facility_mw")
        result = timeseries(net, {bus: mine, **held}, power_factor=pf,
                            background=background, limits=limits,
                            enforce_q_lims=enforce_q_lims)
    elif kept.steps:
        result, reused = closed_loop_result(net, network, kept, power["facility_kw"],
                                            bus=bus, pf=pf, scale=scale, limits=limits)
        log.info("grid.cosimulate: %d of %d steps' power flows taken from the loop",
                 reused, len(index))
    else:
        result = timeseries(net, power["facility_kw"], bus=bus, power_factor=pf,
                            background=background, limits=limits,
                            enforce_q_lims=enforce_q_lims)
    before = None
    if open_loop and "curtailed_kw" in power.columns:
        demand = (power["facility_kw"] + power["curtailed_kw"]).rename("facility_kw")
        wanted = {bus: (demand / 1e3).rename("facility_mw"), **held} if held else demand
        before = timeseries(net, wanted, bus=None if held else bus, power_factor=pf,
                            background=background, limits=limits,
                            enforce_q_lims=enforce_q_lims)
    state_period = math.nan if seen["period_s"] is None else float(seen["period_s"])
    vm = pd.DataFrame({"closed_loop": result.vm_pu[bus],
                       "open_loop": before.vm_pu[bus] if before is not None else np.nan})
    events = getattr(load, "flexibility", None)
    return Cosimulation(
        load=load, grid=result, open_loop=before, control=control, controller=str(ctrl_name),
        bus=bus, limits=limits, power_factor=pf, control_period_s=state_period, wall_s=wall,
        network_s=seen["network_s"], vm_pu=vm, violation_steps=_violation_steps(result),
        open_loop_violation_steps=-1 if before is None else _violation_steps(before),
        events=events if isinstance(events, pd.DataFrame) else None)


def _violation_steps(result: GridResult) -> int:
    """Steps with at least one violation of the result's limits."""
    table = result.violations()
    return int(table["time"].nunique()) if len(table) else 0


#: aiload.facility keywords the loop sets itself: a facility override may not set them
_LOOP_OWNS = {
    "power_limit_kw": "the controller sets the limit; give controller= (a callable for your own)",
    "replicates": "the loop runs one replicate; call cosimulate once per seed",
    "stream_to": "the loop keeps its run in memory",
}


def _facility_call(spec_or_preset, *, start, end, freq, seed, period_s, limit, overrides,
                   progress=False):
    """``aiload.facility`` with the loop's limit (and the control period, when given)."""
    import dataclasses

    import aiload
    from aiload.facility.presets import resolve_spec

    clash = sorted(set(overrides) & set(_LOOP_OWNS))
    if clash:
        raise InputError(
            "cosimulate: " + "; ".join(f"{k}= cannot be set here ({_LOOP_OWNS[k]})" for k in clash)
            + ". The other keywords are passed to aiload.facility as preset parameters or "
            "FacilitySpec fields.")
    overrides = dict(overrides)
    if period_s is not None:
        flex = overrides.get("flexibility")
        if flex is None:
            flex = resolve_spec(spec_or_preset, {k: v for k, v in overrides.items()}).flexibility
        overrides["flexibility"] = dataclasses.replace(flex, control_period_s=period_s)
    return aiload.facility(spec_or_preset, start=start, end=end, freq=freq, seed=seed,
                           progress=bool(progress), power_limit_kw=limit, **overrides)
