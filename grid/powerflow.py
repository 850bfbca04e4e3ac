"""Time-series power flow of a network with a facility load at one bus, or a queue of them."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandapower as pp
import pandas as pd

from aiload.errors import InputError
from grid import batch, engines
from grid.attach import attach_all, check_power_factor, q_mvar
from grid.limits import Limits
from grid.queue import Facilities, facilities

__all__ = ["GridResult", "timeseries", "ENGINES"]

log = logging.getLogger(__name__)

ENGINES = ("auto", "lightsim2grid", "newton", "runpp")
CHUNK_STEPS = 50_000


@dataclass(frozen=True)
class GridResult:
    """Results of :func:`timeseries`, all on the facility series' index.

    Attributes
    ----------
    vm_pu : pandas.DataFrame
        Bus voltage magnitude [pu], time x ``net.bus`` index (NaN for out-of-service buses
        and for steps that did not converge).
    line_loading_percent : pandas.DataFrame
        Line loading [%] of the rated current (``max_i_ka * df * parallel``), time x line.
    trafo_loading_percent : pandas.DataFrame
        Transformer loading [%] of the rated current, time x trafo.
    ext_grid_p_mw : pandas.Series
        Active power drawn from the external grid (slack) [MW], per step.
    converged : pandas.Series
        Whether the power flow converged at each step (bool).
    facility_mw : pandas.Series
        The facility's active power used at each step [MW]; for a queue, all facilities'
        together.
    bus : int or None
        The facility's bus; None for a queue (see ``buses``).
    engine : str
        The engine that produced the results (``"lightsim2grid"``, ``"newton"``, ``"runpp"``;
        ``"newton_qlims"`` / ``"runpp_qlims"`` when generator Q limits were enforced).
    engine_reason : str
        Why that engine was used (the fallback reason under ``engine="auto"``).
    limits : Limits
        The limits used by :meth:`violations` when none are given.
    enforce_q_lims : bool
        Whether generator reactive-power limits were enforced (PV -> PQ switching).
    trafo3w_loading_percent : pandas.DataFrame
        3-winding transformer loading [%], time x trafo3w: the largest of the three
        windings' loadings, each against its own rating (``res_trafo3w.loading_percent``).
    facilities_mw : pandas.DataFrame
        Each facility's own active power per step [MW], time x bus (columns in queue
        order; one column for one facility).
    buses : tuple of int
        The facilities' buses, in queue order.
    """

    vm_pu: pd.DataFrame
    line_loading_percent: pd.DataFrame
    trafo_loading_percent: pd.DataFrame
    ext_grid_p_mw: pd.Series
    converged: pd.Series
    facility_mw: pd.Series
    bus: int | None
    engine: str
    engine_reason: str = ""
    limits: Limits = field(default_factory=Limits)
    enforce_q_lims: bool = False
    trafo3w_loading_percent: pd.DataFrame = field(default_factory=pd.DataFrame)
    facilities_mw: pd.DataFrame = field(default_factory=pd.DataFrame)
    buses: tuple[int, ...] = ()

    @property
    def failed_steps(self) -> pd.DatetimeIndex:
        """Labels of the steps whose power flow did not converge."""
        return self.converged.index[~self.converged.to_numpy()]

    def violations(self, limits: Limits | None = None) -> pd.DataFrame:
        """Every limit violation as a table.

        Parameters
        ----------
        limits : Limits, optional
            Voltage band [pu] and loading limit [%]; default: the limits given to
            :func:`timeseries` (or ``Limits()``).

        Returns
        -------
        pandas.DataFrame
            Columns ``time``, ``element`` (e.g. ``"bus 5"``, ``"line 3"``, ``"trafo 0"``,
            ``"trafo3w 0"``, ``"power flow"``), ``quantity`` (``vm_pu``, ``loading_percent``, ``converged``),
            ``value``, ``limit``; sorted by time. A non-converged step appears as one row
            with quantity ``converged`` (value 0, limit 1).
        """
        lim = limits if limits is not None else self.limits
        parts = []

        def collect(frame: pd.DataFrame, kind: str, quantity: str, mask: pd.DataFrame,
                    limit: float) -> None:
            stacked = frame.where(mask).stack()
            if len(stacked):
                times, elements = zip(*stacked.index, strict=True)
                parts.append(pd.DataFrame({
                    "time": times, "element": [f"{kind} {e}" for e in elements],
                    "quantity": quantity, "value": stacked.to_numpy(), "limit": limit,
                }))

        collect(self.vm_pu, "bus", "vm_pu", self.vm_pu < lim.vm_min_pu, lim.vm_min_pu)
        collect(self.vm_pu, "bus", "vm_pu", self.vm_pu > lim.vm_max_pu, lim.vm_max_pu)
        for frame, kind in ((self.line_loading_percent, "line"),
                            (self.trafo_loading_percent, "trafo"),
                            (self.trafo3w_loading_percent, "trafo3w")):
            collect(frame, kind, "loading_percent", frame > lim.loading_max_percent,
                    lim.loading_max_percent)
        failed = self.failed_steps
        if len(failed):
            parts.append(pd.DataFrame({"time": failed, "element": "power flow",
                                       "quantity": "converged", "value": 0.0, "limit": 1.0}))
        if not parts:
            return pd.DataFrame({"time": pd.Series([], dtype=self.vm_pu.index.dtype),
                                 "element": pd.Series([], dtype=object),
                                 "quantity": pd.Series([], dtype=object),
                                 "value": pd.Series([], dtype=float),
                                 "limit": pd.Series([], dtype=float)})
        out = pd.concat(parts, ignore_index=True)
        return out.sort_values(["time", "element"], kind="stable").reset_index(drop=True)

    def violation_summary(self, limits: Limits | None = None, *,
                          tz: object = None) -> pd.DataFrame:
        """The limit violations counted per bus and per branch: how long, how bad, when.

        Parameters
        ----------
        limits : Limits, optional
            Voltage band [pu] and loading limit [%]; default: the limits given to
            :func:`timeseries` (or ``Limits()``).
        tz : str or tzinfo, optional
            Time zone of ``worst_time`` (the site's clock, e.g. ``"America/Chicago"``);
            default: the result's own index zone.

        Returns
        -------
        pandas.DataFrame
            One row per element and kind of violation, most hours first; columns
            ``element`` (``"bus 5"``, ``"line 3"``, ``"trafo 0"``, ``"trafo3w 0"``, or
            ``"power flow"`` for steps that did not converge), ``kind`` (``"bus"``,
            ``"line"``, ``"trafo"``, ``"trafo3w"``, ``"network"``), ``quantity``
            (``"undervoltage"``, ``"overvoltage"``, ``"overloading"``, ``"not converged"``),
            ``limit`` (the bound that was crossed, [pu] or [%]), ``unit`` (``"pu"``, ``"%"``),
            ``steps`` (number of steps outside the limit), ``hours`` (those steps' duration
            [h]), ``worst`` (the lowest voltage, highest voltage or highest loading outside
            the limit; NaN for non-converged steps) and ``worst_time`` (the interval-start
            label of the worst step, tz-aware; the first failed step for ``"not converged"``).
            Empty (same columns) when every step is within the limits.

        Examples
        --------
        >>> import pandas as pd, grid
        >>> net = grid.networks.load("cigre_mv")
        >>> idx = pd.date_range("2024-01-01", periods=3, freq="h", tz="UTC")
        >>> res = grid.timeseries(net, pd.Series([1.0, 2.0, 1.5], idx), bus=5)
        >>> row = res.violation_summary().query("element == 'trafo 0'").iloc[0]
        >>> row.quantity, int(row.steps), float(row.hours)
        ('overloading', 3, 3.0)
        """
        lim = limits if limits is not None else self.limits
        if not isinstance(lim, Limits):
            raise InputError(f"limits: expected a grid.Limits (e.g. grid.Limits(vm_min_pu=0.94)) "
                             f"or None, got {type(lim).__name__}.")
        index = self.vm_pu.index
        step_h = _step_hours(index)
        times = index if tz is None else index.tz_convert(tz)
        rows: list[dict] = []

        def count(frame: pd.DataFrame, kind: str, quantity: str, unit: str, limit: float,
                  low: bool) -> None:
            values = frame.to_numpy(dtype=np.float64)
            if values.size == 0:
                return
            with np.errstate(invalid="ignore"):
                outside = values < limit if low else values > limit
            steps = outside.sum(axis=0)
            for j in np.flatnonzero(steps):
                column = np.where(outside[:, j], values[:, j], np.nan)
                k = int(np.nanargmin(column) if low else np.nanargmax(column))
                rows.append({"element": f"{kind} {frame.columns[j]}", "kind": kind,
                             "quantity": quantity, "limit": float(limit), "unit": unit,
                             "steps": int(steps[j]), "hours": float(steps[j]) * step_h,
                             "worst": float(values[k, j]), "worst_time": times[k]})

        count(self.vm_pu, "bus", "undervoltage", "pu", lim.vm_min_pu, True)
        count(self.vm_pu, "bus", "overvoltage", "pu", lim.vm_max_pu, False)
        for frame, kind in ((self.line_loading_percent, "line"),
                            (self.trafo_loading_percent, "trafo"),
                            (self.trafo3w_loading_percent, "trafo3w")):
            count(frame, kind, "overloading", "%", lim.loading_max_percent, False)
        failed = ~self.converged.to_numpy(dtype=bool)
        if failed.any():
            rows.append({"element": "power flow", "kind": "network", "quantity": "not converged",
                         "limit": np.nan, "unit": "", "steps": int(failed.sum()),
                         "hours": float(failed.sum()) * step_h, "worst": np.nan,
                         "worst_time": times[int(np.flatnonzero(failed)[0])]})
        columns = ["element", "kind", "quantity", "limit", "unit", "steps", "hours", "worst",
                   "worst_time"]
        if not rows:
            return pd.DataFrame({
                **{c: pd.Series([], dtype=object) for c in ("element", "kind", "quantity")},
                "limit": pd.Series([], dtype=float), "unit": pd.Series([], dtype=object),
                "steps": pd.Series([], dtype=int), "hours": pd.Series([], dtype=float),
                "worst": pd.Series([], dtype=float),
                "worst_time": pd.Series([], dtype=times.dtype)})
        out = pd.DataFrame(rows, columns=columns)
        return out.sort_values("hours", ascending=False, kind="stable").reset_index(drop=True)

    def facility_summary(self, limits: Limits | None = None) -> pd.DataFrame:
        """Each facility of the study and the voltage at its own bus.

        Parameters
        ----------
        limits : Limits, optional
            Voltage band [pu]; default: the limits given to :func:`timeseries`.

        Returns
        -------
        pandas.DataFrame
            One row per facility in queue order, index ``bus``: ``peak_mw`` and
            ``mean_mw`` [MW], ``energy_mwh`` [MWh] of its own series, ``min_vm_pu`` and
            ``max_vm_pu`` at its bus [pu], ``undervoltage_hours`` and
            ``overvoltage_hours`` [h] (steps at its bus outside the band times the step),
            ``min_vm_time`` (the step of ``min_vm_pu``). The network-wide picture per
            element is :meth:`violation_summary`.
        """
        lim = limits if limits is not None else self.limits
        if not isinstance(lim, Limits):
            raise InputError(f"limits: expected a grid.Limits (e.g. grid.Limits(vm_min_pu=0.94)) "
                             f"or None, got {type(lim).__name__}.")
        step_h = _step_hours(self.vm_pu.index)
        rows = []
        for b in self.facilities_mw.columns:
            p = self.facilities_mw[b].to_numpy(dtype=np.float64)
            vm = self.vm_pu[b].to_numpy(dtype=np.float64)
            solved = np.isfinite(vm)
            rows.append({
                "bus": int(b), "peak_mw": float(p.max()), "mean_mw": float(p.mean()),
                "energy_mwh": float(p.sum()) * step_h,
                "min_vm_pu": float(vm[solved].min()) if solved.any() else np.nan,
                "max_vm_pu": float(vm[solved].max()) if solved.any() else np.nan,
                "undervoltage_hours": float((vm[solved] < lim.vm_min_pu).sum()) * step_h,
                "overvoltage_hours": float((vm[solved] > lim.vm_max_pu).sum()) * step_h,
                "min_vm_time": (self.vm_pu.index[int(np.nanargmin(vm))] if solved.any()
                                else pd.NaT)})
        return pd.DataFrame(rows).set_index("bus")


def _step_hours(index: pd.DatetimeIndex) -> float:
    """The duration of one step of ``index`` [h]: its ``freq``, else its (regular) spacing."""
    if index.freq is not None:
        return pd.Timedelta(index.freq).total_seconds() / 3600.0
    if len(index) > 1:
        return float(np.median(np.diff(index.asi8))) / 3.6e12
    return float("nan")


def _background_scale(background: pd.Series | None, index: pd.DatetimeIndex) -> np.ndarray:
    if background is None:
        return np.ones(len(index))
    if not isinstance(background, pd.Series):
        raise InputError(
            f"background: expected a pandas Series of multipliers [-] of the existing loads on "
            f"the facility series' index, got {type(background).__name__}."
        )
    if not background.index.equals(index):
        raise InputError(
            f"background: its index ({len(background)} labels, from "
            f"{background.index[0] if len(background) else None}) differs from the facility "
            f"series' ({len(index)} labels, from {index[0]}); align it first, e.g. "
            "background.reindex(load_mw.index)."
        )
    return background_values(background)


def background_values(background: pd.Series) -> np.ndarray:
    """The multipliers [-] of a background Series as float64, each finite and >= 0.

    The message names how many are bad, the first and its label.
    """
    if (not pd.api.types.is_numeric_dtype(background.dtype)
            or pd.api.types.is_bool_dtype(background.dtype)):
        raise InputError(
            f"background: expected numeric multipliers [-] of the existing loads (e.g. 0.8), "
            f"got dtype {background.dtype}; convert it, e.g. background.astype(float)."
        )
    values = background.to_numpy(dtype=np.float64, na_value=np.nan)  # pd.NA as NaN
    bad = np.flatnonzero(~np.isfinite(values) | (values < 0))
    if bad.size:
        raise InputError(
            f"background: multipliers must be finite and non-negative; got {bad.size} that "
            f"are not, first {float(values[bad[0]])!r} at {background.index[bad[0]]}. Fill or "
            "correct them first (aiload never fills silently)."
        )
    return values


def solve(model: engines.Model, p_mw: np.ndarray, q: np.ndarray, scale: np.ndarray,
          engine: str) -> tuple[dict[str, np.ndarray], np.ndarray, str, str]:
    """Run ``engine`` on a prepared model; return (flows, converged, engine used, reason).

    Long series are solved in chunks of ``CHUNK_STEPS``: the complex voltages and injections
    of a whole year at 1 min would need several GB at once.
    """
    if len(p_mw) <= CHUNK_STEPS:
        return _solve_chunk(model, p_mw, q, scale, engine)
    parts, used, reasons = [], set(), []
    for start in range(0, len(p_mw), CHUNK_STEPS):
        part = slice(start, start + CHUNK_STEPS)
        parts.append(_solve_chunk(model, p_mw[part], q[part], scale[part], engine))
        used.add(parts[-1][2])
        if parts[-1][3] and parts[-1][3] not in reasons:
            reasons.append(parts[-1][3])
    flows = {key: np.concatenate([part[0][key] for part in parts]) for key in parts[0][0]}
    converged = np.concatenate([part[1] for part in parts])
    return flows, converged, "+".join(sorted(used)), "; ".join(reasons)


def _solve_chunk(model: engines.Model, p_mw: np.ndarray, q: np.ndarray, scale: np.ndarray,
                 engine: str) -> tuple[dict[str, np.ndarray], np.ndarray, str, str]:
    if engine not in ENGINES:
        raise InputError(f"engine: expected one of {ENGINES}, got {engine!r}.")
    reason = ""
    used = engine
    if model.enforce_q_lims and engine in ("auto", "lightsim2grid"):
        # TimeSeriesCPP cannot switch a generator's bus from PV to PQ at its Q limit
        if engine == "lightsim2grid":
            raise InputError("engine='lightsim2grid' cannot enforce generator Q limits; use "
                             "engine='auto' (Newton with PV->PQ switching) or "
                             "enforce_q_lims=False.")
        reason = "newton used: generator Q limits enforced (PV->PQ switching)"
        used = "newton"
    if engine in ("auto", "lightsim2grid", "newton") and model.fast_reason:
        if engine != "auto":
            raise InputError(f"engine={engine!r} cannot run this network: {model.fast_reason}; "
                             "use engine='runpp' (or 'auto' to fall back).")
        reason = f"runpp used: {model.fast_reason}"
        log.info("grid.timeseries: %s", reason)
        used = "runpp"
    result = None
    if used in ("auto", "lightsim2grid"):
        out = batch.solve_lightsim2grid(model, p_mw, q, scale)
        if isinstance(out, str):
            if used == "lightsim2grid":
                raise InputError(f"engine='lightsim2grid' cannot be trusted here: {out}; "
                                 "use engine='auto' or 'newton'.")
            reason = f"newton used: {out}"
            log.info("grid.timeseries: %s", reason)
            used = "newton"
        else:
            result, used = out, "lightsim2grid"
    if used in ("auto", "newton"):
        used = "newton"
        result = engines.solve_newton(model, p_mw, q, scale)
    if used == "runpp":
        result = engines.solve_runpp(model, p_mw, q, scale)
    v, converged = result
    if model.enforce_q_lims:
        used = f"{used}_qlims"
    return engines.flows(model, v, p_mw, q, scale), converged, used, reason


def timeseries(
    net: pp.pandapowerNet,
    load_mw: pd.Series | object,
    *,
    bus: int | None = None,
    power_factor: float = 0.99,
    background: pd.Series | None = None,
    engine: str = "auto",
    limits: Limits | None = None,
    enforce_q_lims: bool | None = None,
) -> GridResult:
    """Power flow of every step of a facility series attached at ``bus`` (or of a queue).

    Parameters
    ----------
    net : pandapower.pandapowerNet
        The network; never modified (a copy receives the facility loads).
    load_mw : pandas.Series, FacilityLoad or Mapping
        Interval-mean facility power on a tz-aware, fixed-step index [MW]. A Series named
        ``*_kw`` or a ``FacilityLoad`` (``power["facility_kw"]``) is in [kW] and converted
        here. Or a mapping bus -> such a series: the interconnection queue, each facility
        with its own index and zone, aligned on one UTC axis (same step, common span:
        :func:`grid.queue.align`); ``bus`` is then omitted. One facility is the queue's
        special case: ``{5: s}`` gives the same numbers as ``s, bus=5``.
    bus : int, optional
        Index of the connection bus in ``net.bus`` (one facility).
    power_factor : float
        Lagging power factor of the facility [-], in (0, 1]; ``q = p * tan(acos(pf))``.
    background : pandas.Series, optional
        Multipliers [-] of every existing load's p and q per step (same index as the
        facility series; for a queue, the UTC axis of ``result.facilities_mw``); default 1
        (the loads as in ``net``).
    engine : {"auto", "lightsim2grid", "newton", "runpp"}
        ``"auto"`` tries lightsim2grid's batch solver, keeps it only where it agrees with
        pandapower's own matrices to 1e-6 pu, else uses ``"newton"`` (exact, fast), else
        ``"runpp"``; the reason is logged and stored in ``GridResult.engine_reason``.
    limits : Limits, optional
        Default limits of :meth:`GridResult.violations`.
    enforce_q_lims : bool, optional
        Enforce generators' reactive-power limits (PV -> PQ switching, as
        ``pandapower.runpp(enforce_q_lims=True)``). None (default): on for networks with
        voltage-controlling generators that have Q limits (case118, case300, MATPOWER
        cases), off otherwise (:mod:`grid.qlims`). The batch engine cannot enforce them, so
        ``"auto"`` then uses ``"newton"`` with the switching loop.

    Returns
    -------
    GridResult
        Voltages [pu], loadings [%], slack power [MW] and convergence per step. A step
        that does not converge is NaN and flagged in ``converged`` (and listed by
        ``violations``); the run continues.

    Raises
    ------
    aiload.errors.InputError
        Before any power flow: a missing bus, a power factor outside (0, 1], a series with
        gaps, NaN or a naive index, an unknown engine; or when the network does not
        converge even without the facility.

    Examples
    --------
    >>> import pandas as pd, grid
    >>> net = grid.networks.load("cigre_mv")
    >>> idx = pd.date_range("2024-01-01", periods=3, freq="h", tz="UTC")
    >>> res = grid.timeseries(net, pd.Series([1.0, 2.0, 1.5], idx), bus=5)
    >>> bool(res.converged.all())
    True
    """
    queue = facilities(load_mw, bus, net=net)
    pf = check_power_factor(power_factor)
    if engine not in ENGINES:
        raise InputError(f"engine: expected one of {ENGINES}, got {engine!r}.")
    if limits is not None and not isinstance(limits, Limits):
        raise InputError(f"limits: expected a grid.Limits (e.g. grid.Limits(vm_min_pu=0.94)) "
                         f"or None, got {type(limits).__name__}.")
    scale = _background_scale(background, queue.p_mw.index)
    work, load_index = attach_all(net, queue.buses, power_factor=pf)
    model = engines.prepare(work, load_index, enforce_q_lims)
    p = queue.p_mw.to_numpy(dtype=np.float64)
    out, converged, used, reason = solve(model, p, q_mvar(p, pf), scale, engine)
    return assemble(net, queue.total_mw, out, converged, queue.buses[0] if queue.single
                    else None, used, reason, model, limits, queue)


def assemble(net, series: pd.Series, out: dict[str, np.ndarray], converged: np.ndarray,
             bus: int | None, engine: str, reason: str, model: engines.Model,
             limits: Limits | None, queue: Facilities | None = None) -> GridResult:
    """A :class:`GridResult` from the solved steps' quantities (``out``: arrays from
    :func:`grid.engines.flows`, in step order); warns about steps that did not converge.

    ``series``: all facilities' power [MW]; ``queue``: each one's (default: ``series`` as
    the one facility at ``bus``)."""
    idx = series.index
    if queue is None:
        queue = Facilities(series.to_frame(name=int(bus)).rename_axis(columns="bus"), True)
    n_bad = int((~converged).sum())
    if n_bad:
        # no step at all solving is the mark of a kW series read as MW
        hint = ("; the series is read as MW (peak %.6g MW): name it '*_kw' if it is in kW"
                % float(series.max()) if n_bad == len(idx) else "")
        log.warning("grid.timeseries: %d of %d steps did not converge (first at %s)%s",
                    n_bad, len(idx), idx[~converged][0], hint)
    return GridResult(
        vm_pu=pd.DataFrame(out["vm_pu"], index=idx, columns=net.bus.index.copy()),
        line_loading_percent=pd.DataFrame(out["line_loading_percent"], index=idx,
                                          columns=net.line.index.copy()),
        trafo_loading_percent=pd.DataFrame(out["trafo_loading_percent"], index=idx,
                                           columns=net.trafo.index.copy()),
        ext_grid_p_mw=pd.Series(out["ext_grid_p_mw"], index=idx, name="ext_grid_p_mw"),
        converged=pd.Series(converged, index=idx, name="converged"),
        facility_mw=series,
        bus=None if bus is None else int(bus),
        engine=engine,
        engine_reason="; ".join(x for x in (reason, model.q_lims_note) if x),
        limits=limits if limits is not None else Limits(),
        enforce_q_lims=model.enforce_q_lims,
        trafo3w_loading_percent=pd.DataFrame(
            out.get("trafo3w_loading_percent", np.zeros((len(idx), 0))), index=idx,
            columns=net.trafo3w.index.copy()),
        facilities_mw=queue.p_mw,
        buses=queue.buses,
    )
