"""``size``: least-cost PV, battery, generator (and import limit) for a load series.

Validates every input before a model is built (:mod:`microgrid.prepare`), builds the model of
``docs/formulation.md`` (the LP as arrays, :mod:`microgrid.lp`; the unit-commitment MILP in
Pyomo, :mod:`microgrid.model`), solves it with HiGHS (:mod:`microgrid.solve`), whole or by
decomposition (:mod:`microgrid.decompose`), and returns a frozen :class:`Sizing`. An
infeasible problem is explained (:mod:`microgrid.diagnose`).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from aiload._checks import check_number
from aiload.errors import AiloadError, InputError
from microgrid.complementarity import burned_kw, untangle
from microgrid.decompose import decompose, relative_gap
from microgrid.diagnose import explain_infeasible as _explain_infeasible
from microgrid.diagnose import limits_text as _limits_text
from microgrid.inputs import Battery, Carbon, Costs, Generator, PricedGenerator
from microgrid.lp import Lp, build_lp, generator_specs, to_highs
from microgrid.model import (
    ModelInputs,
    build_model,
    cost_terms_usd,
    kw_per_pu,
    solution_unscaled,
    value_unscaled,
)
from microgrid.prepare import MAX_LOAD_KW, prepare_inputs  # noqa: F401 (re-exported)
from microgrid.solve import SizingInfeasibleError, check_highs_options, solve_highs, solve_model
from microgrid.tiebreak import tie_break

__all__ = ["Sizing", "size", "SolverStoppedError", "prepare_inputs"]


#: the tie-break price on charge and discharge (eq. 23) as a share of the highest energy price
_CYCLING_PENALTY_FRACTION = 1e-4
#: the certified relative gap at which ``method="decompose"`` stops [-]
DECOMPOSITION_TOL = 1e-4
_METHODS = ("auto", "exact", "decompose")
#: the reported cost terms, in this order (0 where a term does not apply)
_TERMS = ("pv_capital", "battery_energy_capital", "battery_power_capital", "generator_capital",
          "import_capacity", "grid_energy", "export_revenue", "fuel", "battery_throughput",
          "demand_charge", "carbon")


class SolverStoppedError(AiloadError):
    """HiGHS stopped (time limit, numerical trouble) without a usable solution."""


@dataclass(frozen=True)
class Sizing:
    """Result of :func:`size`.

    Attributes
    ----------
    pv_kwp, battery_kwh, battery_kw, generator_kw, import_limit_kw : float
        Optimal sizes [kWp, kWh, kW, kW, kW] (the import limit as given, or as chosen).
    annual_cost_usd : Mapping[str, float]
        Annual cost by term [USD/year]; export revenue is negative.
    total_annual_cost_usd : float
        Sum of the terms, the objective [USD/year].
    served_energy_mwh_per_year : float
        Annualised load energy [MWh/year].
    lcoe_usd_per_mwh : float
        Total annual cost per MWh served [USD/MWh].
    emissions_t_per_year : float
        Annualised CO2 of grid import and generation [t/year].
    dispatch : pandas.DataFrame
        On the load's index, interval means [kW]: ``load_kw, pv_kw, pv_curtailed_kw,
        battery_charge_kw, battery_discharge_kw, generator_kw, grid_import_kw,
        grid_export_kw, dump_load_kw``; ``battery_soc_kwh`` is the state of charge at each
        label [kWh]. No step both charges and discharges unless allowed (eq. 24).
    status : str
        Solver status (``"optimal"`` or ``"time_limit"``).
    mip_gap : float
        Relative optimality gap [-].
    build_time_s, solve_time_s : float
        Wall-clock times of model building and of the HiGHS call [s].
    burned_by_cycling_kwh : float
        Energy burned by simultaneous charge and discharge over the horizon [kWh]; 0 unless
        ``allow_simultaneous_charge_discharge=True``.
    generator_kw_by_technology : Mapping[str, float]
        Size of each generator technology [kW] (``generator_kw`` is their sum); the dispatch
        then has a ``generator_<name>_kw`` column for each.
    method : str
        ``"exact"`` (the whole LP or MILP) or ``"decompose"`` (certified within ``mip_gap``,
        ``docs/formulation.md``, "Decomposition"): the method that ran.
    method_reason : str
        Why that method ran (e.g. why the decomposition did not apply), in a sentence.
    tie_breaks : tuple of str
        The tie-break passes that chose the dispatch among the optimal ones, in order
        (``"battery_throughput"``; ``docs/formulation.md``,
        "Tie-breaking"); empty for unit commitment.
    battery_throughput_mwh_per_year : float
        Energy discharged by the battery, annualised [MWh/year].
    battery_cycles_per_year : float
        That throughput in equivalent full cycles of ``battery_kwh`` [1/year] (0 without a
        battery).
    cost_lower_bound_usd : float
        A certified lower bound on the least annual cost [USD/year]: the decomposition's
        master bound, or the exact solve's dual bound (``total * (1 - mip_gap)``).
    """

    pv_kwp: float
    battery_kwh: float
    battery_kw: float
    generator_kw: float
    import_limit_kw: float
    annual_cost_usd: Mapping[str, float]
    total_annual_cost_usd: float
    served_energy_mwh_per_year: float
    lcoe_usd_per_mwh: float
    emissions_t_per_year: float
    dispatch: pd.DataFrame
    status: str
    mip_gap: float
    build_time_s: float
    solve_time_s: float
    burned_by_cycling_kwh: float = 0.0
    generator_kw_by_technology: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({}))
    method: str = "exact"
    method_reason: str = ""
    tie_breaks: tuple = ()
    battery_throughput_mwh_per_year: float = 0.0
    battery_cycles_per_year: float = 0.0
    cost_lower_bound_usd: float = math.nan

    def summary(self) -> dict[str, Any]:
        """Scalar results as a JSON-ready dict (units in the keys)."""
        out = {
            k: getattr(self, k)
            for k in (
                "pv_kwp", "battery_kwh", "battery_kw", "generator_kw", "import_limit_kw",
                "total_annual_cost_usd", "served_energy_mwh_per_year", "lcoe_usd_per_mwh",
                "emissions_t_per_year", "battery_throughput_mwh_per_year",
                "battery_cycles_per_year", "status", "mip_gap", "build_time_s",
                "solve_time_s", "method", "method_reason", "cost_lower_bound_usd",
            )
        }
        if len(self.generator_kw_by_technology) > 1:
            out["generator_kw_by_technology"] = dict(self.generator_kw_by_technology)
        out["annual_cost_usd"] = dict(self.annual_cost_usd)
        return out


def size(
    load_kw: Any,
    *,
    pv_availability: pd.Series | None,
    costs: Costs,
    battery: Battery = Battery(),
    generator: Generator = Generator(),
    import_limit_kw: float | None,
    export_limit_kw: float = 0.0,
    max_pv_kwp: float = math.inf,
    outages: pd.Series | Sequence[tuple[Any, Any]] | None = None,
    carbon: Carbon | None = None,
    ramp_limit_kw_per_h: float | None = None,
    max_dump_load_kw: float = 0.0,
    pv_area_ha: float | None = None,
    pv_kwp_per_ha: float | None = None,
    allow_simultaneous_charge_discharge: bool = False,
    time_limit_s: float | None = None,
    mip_gap: float = 1e-4,
    highs_options: Mapping[str, Any] | None = None,
    extra_generators: Sequence[PricedGenerator] = (),
    generator_name: str = "generator",
    method: str = "auto",
    progress: Callable[[str], object] | None = None,
) -> Sizing:
    """Least-cost sizes and dispatch of PV, battery and generator behind an import limit.

    Parameters
    ----------
    load_kw : pandas.Series or FacilityLoad
        Interval-mean load [kW] on a tz-aware fixed-step index (a FacilityLoad's
        ``power["facility_kw"]`` is used).
    pv_availability : pandas.Series or None
        a_t [kW/kWp] on ``load_kw.index`` (:func:`microgrid.pv_availability` with
        ``index=load_kw.index``); None for no PV.
    costs, battery, generator : Costs, Battery, Generator
        Prices and technology limits.
    import_limit_kw : float or None
        M [kW]; None makes it a decision priced by ``costs.import_capacity_usd_per_kw_year``.
    export_limit_kw : float
        X [kW]; 0 (default) forbids export.
    max_pv_kwp : float
        Upper bound on the PV size [kWp].
    pv_area_ha : float, optional
        A, land available for PV [ha]: the PV size is at most A * ``pv_kwp_per_ha`` too
        (eq. 28); None: no land limit.
    pv_kwp_per_ha : float, optional
        delta, PV power density of the site [kWp/ha]; default
        :func:`microgrid.pv_kwp_per_ha` (420, fixed tilt, Ong et al. 2013).
    outages : boolean Series on the index, or sequence of (start, end), optional
        Steps without grid (no import, no export); the load must still be met.
    carbon : Carbon, optional
        Grid intensity, carbon price and/or annual cap.
    ramp_limit_kw_per_h : float, optional
        R, the largest change per hour of the net flow at the point of interconnection
        (import minus export) between steps [kW/h].
    time_limit_s : float, optional
        HiGHS wall-clock limit [s].
    mip_gap : float
        Relative MIP gap (unit commitment only) [-].
    highs_options : Mapping, optional
        Extra HiGHS options (e.g. ``{"solver": "ipm"}``, or ``{"simplex_strategy": 4}``
        for primal simplex).
    max_dump_load_kw : float
        W̄, the largest power a dump load (load bank) may burn [kW] (eq. 21); 0 (default):
        none, inf: no cap. It costs nothing per kWh (the energy was already paid for);
        it is how the model sheds supply that a ramp limit or a generator's
        minimum load forces, reported as ``dispatch["dump_load_kw"]``.
    allow_simultaneous_charge_discharge : bool
        False (default): no step of the dispatch charges and discharges the battery at
        once (eq. 24); where the least-cost dispatch needs it to burn energy, ``size``
        raises and says how much. True accepts the battery as a dump load; the energy it
        burns is ``Sizing.burned_by_cycling_kwh``.
    extra_generators : sequence of PricedGenerator
        Further generator technologies, each with its own size, prices, emissions and
        run-hour cap (e.g. diesel backup beside gas engines); LP only.
    generator_name : str
        Label of ``generator`` in ``Sizing.generator_kw_by_technology``.
    method : {"auto", "exact", "decompose"}
        ``"auto"`` (default): the fastest method certified for these inputs. That is the
        decomposition wherever it applies: it sizes on the year aggregated into blocks and
        dispatches the full year at those sizes, iterating with Benders cuts until the cost
        is certified within :data:`DECOMPOSITION_TOL` of the optimum (``Sizing.mip_gap``;
        ``docs/formulation.md``, "Decomposition"); elsewhere the whole LP (short horizons,
        prices or outages that change every step, unit commitment, ``highs_options`` given,
        no convergence in 60 rounds or within ``time_limit_s``; the exact LP then gets what is
        left of the limit). ``"decompose"`` is the same rule; ``"exact"`` always solves the
        whole LP. ``Sizing.method`` says which ran and ``Sizing.method_reason`` why. Either
        way the dispatch is then chosen among the optimal ones by least battery throughput
        (charge + discharge) at the same cost, within 1e-9 (``Sizing.tie_breaks``; not when
        ``highs_options`` are given).

    progress : callable, optional
        Called with a short line at each phase of the solve (the decomposition's rounds
        every few, the exact LP, the MIP): ``aiload run``'s progress lines. None: silent.

    Returns
    -------
    Sizing

    Raises
    ------
    aiload.errors.InputError
        Bad input, before the model is built.
    SizingInfeasibleError
        No sizing meets the load under the limits (the message names them), or only one
        that burns energy by charging and discharging at once (when not allowed).
    SolverStoppedError
        HiGHS stopped without a usable solution.

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.date_range("2025-01-01", periods=48, freq="1h", tz="UTC")
    >>> load = pd.Series(1000.0, index=idx)
    >>> costs = Costs(60, 30, 20, 50, import_usd_per_kwh=0.05, fuel_usd_per_kwh=0.10)
    >>> s = size(load, pv_availability=None, costs=costs, import_limit_kw=2000)
    >>> round(s.total_annual_cost_usd)   # 1000 kW * 8760 h * 0.05 USD/kWh
    438000
    """
    highs_options = check_highs_options(highs_options)  # before any work: nothing reaches files
    if method not in _METHODS:
        raise InputError(f"size: method must be one of {list(_METHODS)}, got {method!r}.")
    if not isinstance(allow_simultaneous_charge_discharge, bool):
        raise InputError(
            "size: allow_simultaneous_charge_discharge must be True or False, got "
            f"{allow_simultaneous_charge_discharge!r}."
        )
    data, index = prepare_inputs(
        load_kw,
        pv_availability=pv_availability,
        costs=costs,
        battery=battery,
        generator=generator,
        import_limit_kw=import_limit_kw,
        export_limit_kw=export_limit_kw,
        max_pv_kwp=max_pv_kwp,
        outages=outages,
        carbon=carbon,
        ramp_limit_kw_per_h=ramp_limit_kw_per_h,
        max_dump_load_kw=max_dump_load_kw,
        pv_area_ha=pv_area_ha,
        pv_kwp_per_ha=pv_kwp_per_ha,
        extra_generators=extra_generators,
        generator_name=generator_name,
    )
    check_number(time_limit_s, "size: time_limit_s", gt=0.0, unit="s", optional=True, allow_inf=True)
    check_number(mip_gap, "size: mip_gap", ge=0.0, lt=1.0, hint="A relative gap, e.g. 1e-4.")
    if progress is not None and not callable(progress):
        raise InputError(f"size: progress must be a function of one str (or None), got "
                         f"{progress!r}.")
    solve = {"time_limit_s": time_limit_s, "mip_gap": mip_gap, "highs_options": highs_options,
             "method": method, "progress": progress}
    result, cycling = _size(data, index, solve, export_limit_kw)
    if cycling.any() and not allow_simultaneous_charge_discharge:
        # ties the exact fix-up could not undo, or cycling the optimum needs: a tie-break
        # price on charge and discharge (eq. 23) tells them apart
        eps = _CYCLING_PENALTY_FRACTION * max(float(data.import_usd_per_kwh.max()),
                                              data.costs.fuel_usd_per_kwh, 0.01)
        penalised = ModelInputs(**{**data.__dict__, "cycling_penalty_usd_per_kwh": eps})
        result, cycling = _size(penalised, index, solve, export_limit_kw)
        if cycling.any():
            raise _cycling_error(result, data, index, cycling)
    return result


def _cycling_error(result: Sizing, d: ModelInputs, index: pd.DatetimeIndex,
                   cycling: np.ndarray) -> SizingInfeasibleError:
    burned = burned_kw(result.dispatch, d.battery.round_trip_efficiency)
    steps = np.flatnonzero(cycling)
    worst = int(steps[np.argmax(burned[steps])])
    needed = float((result.dispatch["dump_load_kw"].to_numpy() + burned)[steps].max())
    return SizingInfeasibleError(
        f"size: the least-cost dispatch burns {float(burned[steps].sum() * d.dt_h):.6g} kWh by "
        f"charging and discharging the battery at once in {steps.size} of {len(index)} steps "
        f"(first at {index[steps[0]]}; worst {burned[worst]:.6g} kW at {index[worst]}): the "
        f"limits ({_limits_text(d)}) force more supply than the load, PV curtailment and "
        "storage can take. Allow a dump load (max_dump_load_kw >= "
        f"{math.ceil(needed):d}), export (export_limit_kw; for a minimum load, not a ramp "
        "limit), or relax the ramp limit / generator.min_load_fraction; or accept the battery "
        "as a dump with "
        "allow_simultaneous_charge_discharge=True."
    )


def _size(data: ModelInputs, index: pd.DatetimeIndex, solve: dict,
          export_limit_kw: float) -> tuple[Sizing, np.ndarray]:
    """Build, solve and read back one model; the steps still cycling after :func:`untangle`."""
    solve = dict(solve)
    method = solve.pop("method", "exact")
    progress = solve.pop("progress", None) or (lambda line: None)
    if not data.generator.unit_commitment:
        return _size_lp(data, index, solve, export_limit_kw, method, progress)
    progress(f"MIP with generator unit commitment, {len(index):,} steps (HiGHS)")
    start = time.perf_counter()
    m = build_model(data)
    build_time_s = time.perf_counter() - start
    res = solve_model(m, **solve)
    _check_status(res, data, index, export_limit_kw)
    return _result(m, data, index, res, build_time_s)


def _check_status(res, data: ModelInputs, index, export_limit_kw: float) -> None:
    if res.status in ("infeasible", "infeasible_or_unbounded"):
        raise _explain_infeasible(data, index)
    if res.status == "unbounded":
        raise SizingInfeasibleError(
            "size: the cost can fall without bound: export (export_limit_kw="
            f"{export_limit_kw:g}) is paid more than PV, fuel or grid energy costs. Set a "
            "finite export_limit_kw or an export price below the cost of supply."
        )
    if not res.has_solution:
        raise SolverStoppedError(
            f"size: HiGHS stopped with status {res.status!r} after {res.solve_time_s:.1f} s "
            "without a feasible point; raise time_limit_s or aggregate time "
            "(microgrid.coarsen)."
        )


def _size_lp(data: ModelInputs, index: pd.DatetimeIndex, solve: dict, export_limit_kw: float,
             method: str, progress: Callable[[str], object] = lambda line: None
             ) -> tuple[Sizing, np.ndarray]:
    """The LP through :mod:`microgrid.lp` (direct to HiGHS): whole, or decomposed; then the
    tie-break passes (:mod:`microgrid.tiebreak`) at the chosen sizes."""
    limit = solve["time_limit_s"]
    reason = "method='exact' was asked for"
    if method in ("auto", "decompose"):
        if solve["highs_options"]:
            reason = "highs_options were given (they apply to the whole LP)"
        else:
            start = time.perf_counter()
            dec = decompose(data, tol=DECOMPOSITION_TOL, time_limit_s=limit,
                            progress=progress)
            elapsed = time.perf_counter() - start
            if not isinstance(dec, str):
                t0 = time.perf_counter()
                x, passes = tie_break(dec.highs, dec.lp, dec.x)
                solved = dec.master_time_s + dec.dispatch_time_s + time.perf_counter() - t0
                why = (f"certified within {dec.gap:.1e} of the optimum in {dec.iterations} "
                       f"rounds on {dec.block_steps}-step blocks")
                return _result_lp(dec.lp, x, dec.sizes, data, index, "optimal",
                                  max(dec.gap, 0.0),
                                  elapsed - dec.master_time_s - dec.dispatch_time_s, solved,
                                  "decompose", why, passes, dec.lower_bound_usd)
            reason = f"the decomposition does not apply: {dec}"
            if limit is not None:  # the exact LP gets what is left of the limit
                limit = max(limit - elapsed, 1.0)
    progress(f"exact LP, {len(index):,} steps (HiGHS): {reason}")
    start = time.perf_counter()
    lp = build_lp(data)
    h = to_highs(lp)
    build_time_s = time.perf_counter() - start
    res, x = solve_highs(h, len(index), time_limit_s=limit,
                         highs_options=solve["highs_options"], kw_per_pu=lp.kw_per_pu)
    _check_status(res, data, index, export_limit_kw)
    sizes = lp.size_values(x)
    passes: list[str] = []
    if res.status == "optimal" and not solve["highs_options"]:  # the user's solver settings stay
        t0 = time.perf_counter()
        size_cols = np.array([lp.cols[key] for key in lp.size_keys], dtype=np.int32)
        x, passes = tie_break(h, lp, x, size_cols=size_cols)
        res = dataclasses.replace(res, solve_time_s=res.solve_time_s + time.perf_counter() - t0)
    return _result_lp(lp, x, sizes, data, index, res.status,
                      0.0 if not math.isfinite(res.mip_gap) else res.mip_gap, build_time_s,
                      res.solve_time_s, "exact", reason, passes)


def _result_lp(lp: Lp, x: np.ndarray, sizes: dict, d: ModelInputs, index, status: str,
               gap: float, build_time_s: float, solve_time_s: float, method: str,
               method_reason: str = "", tie_breaks: Sequence[str] = (),
               lower_bound_usd: float | None = None) -> tuple[Sizing, np.ndarray]:
    u = lp.kw_per_pu

    def kw(name: str) -> np.ndarray:
        return x[lp.cols[name]] * u if name in lp.cols else np.zeros(len(index))

    outs = [x[c] * u for c in lp.cols["generator_outs"]]
    specs = generator_specs(d)
    pv_kwp = sizes["pv_size"] * u
    pv_used = kw("pv")
    columns = {
        "load_kw": d.load_kw,
        "pv_kw": pv_used,
        "pv_curtailed_kw": np.clip(d.pv_kw_per_kwp * pv_kwp - pv_used, 0.0, None),
        "battery_charge_kw": kw("charge"),
        "battery_discharge_kw": kw("discharge"),
        "battery_soc_kwh": np.roll(kw("soc"), 1),
        "generator_kw": np.sum(outs, axis=0),
        "grid_import_kw": kw("import"),
        "grid_export_kw": kw("export"),
        "dump_load_kw": kw("dump"),
    }
    if len(specs) > 1:
        columns.update({f"generator_{g.name}_kw": out for g, out in zip(specs, outs, strict=True)})
    dispatch = pd.DataFrame(columns, index=index)
    eta = d.battery.round_trip_efficiency
    dispatch, cycling = untangle(dispatch, eta, d.dump_load_max_kw, 1e-6 * u)
    values = lp.term_values(x, sizes)
    values.pop("cycling_penalty", None)
    terms = {k: values.pop(k, 0.0) for k in _TERMS}
    terms.update(values)  # unserved, dump load (diagnostic prices) where present
    total = float(sum(terms.values()))
    if lower_bound_usd is not None:
        # the certificate of what is returned: the reported cost (after the tie-break, whose
        # slack is 1e-9) against the decomposition's lower bound
        gap = max(0.0, relative_gap(total, float(lower_bound_usd)))
    served_mwh = float(d.load_kw.sum() * d.dt_h * d.annual_factor / 1000.0)
    by_tech = {g.name: sizes[f"generator_size_{j}"] * u for j, g in enumerate(specs)}
    gen_kg = sum(g.emission_kg_per_kwh * float(out.sum()) for g, out in zip(specs, outs, strict=True))
    return Sizing(
        pv_kwp=pv_kwp,
        battery_kwh=sizes["battery_energy"] * u,
        battery_kw=sizes["battery_power"] * u,
        generator_kw=float(sum(by_tech.values())),
        import_limit_kw=(sizes["import_limit"] * u if "import_limit" in sizes
                         else float(d.import_limit_kw)),
        annual_cost_usd=MappingProxyType(terms),
        total_annual_cost_usd=total,
        served_energy_mwh_per_year=served_mwh,
        lcoe_usd_per_mwh=total / served_mwh if served_mwh > 0 else math.nan,
        emissions_t_per_year=float(
            (d.grid_kg_per_kwh @ dispatch["grid_import_kw"].to_numpy() + gen_kg)
            * d.dt_h * d.annual_factor / 1000.0
        ),
        dispatch=dispatch,
        status=status,
        mip_gap=gap,
        build_time_s=build_time_s,
        solve_time_s=solve_time_s,
        burned_by_cycling_kwh=float(burned_kw(dispatch, eta)[cycling].sum() * d.dt_h),
        generator_kw_by_technology=MappingProxyType(by_tech),
        method=method,
        method_reason=method_reason,
        tie_breaks=tuple(tie_breaks),
        cost_lower_bound_usd=(total * (1.0 - gap) if lower_bound_usd is None
                              else float(lower_bound_usd)),
        **_throughput(dispatch, sizes["battery_energy"] * u, d),
    ), cycling


def _throughput(dispatch: pd.DataFrame, battery_kwh: float, d: ModelInputs) -> dict:
    """Annualised battery throughput [MWh/year] and equivalent full cycles [1/year]."""
    mwh = float(dispatch["battery_discharge_kw"].sum() * d.dt_h * d.annual_factor / 1000.0)
    return {"battery_throughput_mwh_per_year": mwh,
            "battery_cycles_per_year": 1000.0 * mwh / battery_kwh if battery_kwh > 0 else 0.0}


def _result(m, d: ModelInputs, index, res, build_time_s: float) -> tuple[Sizing, np.ndarray]:
    pv_kwp = value_unscaled(m, m.pv_size_pu)
    soc_end = solution_unscaled(m, m.soc_puh)
    pv_used = solution_unscaled(m, m.pv_pu)
    dispatch = pd.DataFrame(
        {
            "load_kw": d.load_kw,
            "pv_kw": pv_used,
            "pv_curtailed_kw": np.clip(d.pv_kw_per_kwp * pv_kwp - pv_used, 0.0, None),
            "battery_charge_kw": solution_unscaled(m, m.charge_pu),
            "battery_discharge_kw": solution_unscaled(m, m.discharge_pu),
            "battery_soc_kwh": np.roll(soc_end, 1),
            "generator_kw": solution_unscaled(m, m.generator_out_pu),
            "grid_import_kw": solution_unscaled(m, m.import_pu),
            "grid_export_kw": solution_unscaled(m, m.export_pu),
            "dump_load_kw": (solution_unscaled(m, m.dump_pu) if hasattr(m, "dump_pu")
                             else np.zeros(len(index))),
        },
        index=index,
    )
    # eq. 24: no simultaneous charge and discharge, by the exact, cost-neutral fix-up
    eta = d.battery.round_trip_efficiency
    dispatch, cycling = untangle(dispatch, eta, d.dump_load_max_kw, 1e-6 * kw_per_pu(d))
    terms = cost_terms_usd(m)
    total = terms.pop("total")
    served_mwh = float(d.load_kw.sum() * d.dt_h * d.annual_factor / 1000.0)
    return Sizing(
        pv_kwp=pv_kwp,
        battery_kwh=value_unscaled(m, m.battery_energy_puh),
        battery_kw=value_unscaled(m, m.battery_power_pu),
        generator_kw=value_unscaled(m, m.generator_size_pu),
        import_limit_kw=value_unscaled(m, m.import_limit_pu),
        annual_cost_usd=MappingProxyType(terms),
        total_annual_cost_usd=total,
        served_energy_mwh_per_year=served_mwh,
        lcoe_usd_per_mwh=total / served_mwh if served_mwh > 0 else math.nan,
        emissions_t_per_year=float(
            (d.grid_kg_per_kwh @ dispatch["grid_import_kw"].to_numpy()
             + d.generator.emission_kg_per_kwh * dispatch["generator_kw"].to_numpy().sum())
            * d.dt_h * d.annual_factor / 1000.0
        ),
        dispatch=dispatch,
        status=res.status,
        mip_gap=0.0 if not math.isfinite(res.mip_gap) else res.mip_gap,
        build_time_s=build_time_s,
        solve_time_s=res.solve_time_s,
        burned_by_cycling_kwh=float(burned_kw(dispatch, eta)[cycling].sum() * d.dt_h),
        method_reason="unit commitment is a MILP: solved whole by HiGHS' branch and bound",
        cost_lower_bound_usd=float(res.bound_usd),
        **_throughput(dispatch, value_unscaled(m, m.battery_energy_puh), d),
    ), cycling
