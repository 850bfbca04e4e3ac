"""``size``: least-cost PV, battery, generator (and import limit) for a load series.

Validates every input before a model is built, builds the model of ``docs/formulation.md``
(:mod:`microgrid.model`), solves it with HiGHS (:mod:`microgrid.solve`) and returns a frozen
:class:`Sizing`. An infeasible problem is explained: the binding inputs are named and the
steps where the load cannot be met are found by re-solving with priced unserved energy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from aiload._checks import check_number
from aiload.errors import AiloadError, InputError
from aiload.timeseries import validate_power_series
from microgrid.complementarity import burned_kw, untangle
from microgrid.costsets import pv_kwp_per_ha as pv_kwp_per_ha_default
from microgrid.decompose import decompose
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
from microgrid.pv import check_availability
from microgrid.solve import SizingInfeasibleError, check_highs_options, solve_highs, solve_model

__all__ = ["Sizing", "size", "SolverStoppedError", "prepare_inputs"]

#: a load above this is taken for a unit error, not a site: 1 TW [kW]
MAX_LOAD_KW = 1e9

_DIAGNOSTIC_USD_PER_KWH = 1000.0
#: the tie-break price on charge and discharge (eq. 23) as a share of the highest energy price
_CYCLING_PENALTY_FRACTION = 1e-4
#: the certified relative gap at which ``method="decompose"`` stops [-]
DECOMPOSITION_TOL = 1e-4
_METHODS = ("exact", "decompose")
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
        ``docs/formulation.md``, "Decomposition").
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

    def summary(self) -> dict[str, Any]:
        """Scalar results as a JSON-ready dict (units in the keys)."""
        out = {
            k: getattr(self, k)
            for k in (
                "pv_kwp", "battery_kwh", "battery_kw", "generator_kw", "import_limit_kw",
                "total_annual_cost_usd", "served_energy_mwh_per_year", "lcoe_usd_per_mwh",
                "emissions_t_per_year", "status", "mip_gap", "build_time_s", "solve_time_s",
                "method",
            )
        }
        if len(self.generator_kw_by_technology) > 1:
            out["generator_kw_by_technology"] = dict(self.generator_kw_by_technology)
        out["annual_cost_usd"] = dict(self.annual_cost_usd)
        return out


def _as_load(load_kw: Any) -> pd.Series:
    power = getattr(load_kw, "power", None)
    if isinstance(power, pd.DataFrame):
        if "facility_kw" not in power.columns:
            raise InputError(
                "size: the FacilityLoad's power has no 'facility_kw' column; got "
                f"{list(power.columns)}."
            )
        return power["facility_kw"]
    return load_kw


def _on_index(value: float | pd.Series, index: pd.DatetimeIndex, what: str) -> np.ndarray:
    if isinstance(value, pd.Series):
        if not value.index.equals(index):
            raise InputError(
                f"size: {what} is a Series on another index ({len(value)} labels from "
                f"{value.index[0] if len(value) else '-'}) than load_kw ({len(index)} labels "
                f"from {index[0]}); reindex it onto load_kw.index (interval means) first."
            )
        return value.to_numpy(dtype=float)
    return np.full(len(index), float(value))


def _outage_mask(outages: Any, index: pd.DatetimeIndex) -> np.ndarray:
    if outages is None:
        return np.zeros(len(index), dtype=bool)
    if isinstance(outages, pd.Series):
        if not outages.index.equals(index) or outages.dtype != bool:
            raise InputError(
                "size: outages as a Series must be boolean and on load_kw.index; got dtype "
                f"{outages.dtype} on {len(outages)} labels."
            )
        return outages.to_numpy()
    mask = np.zeros(len(index), dtype=bool)
    for window in outages:
        try:
            start, end = (pd.Timestamp(x) for x in window)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"size: each outage must be a (start, end) pair of timestamps, got {window!r}."
            ) from exc
        if start.tz is None or end.tz is None or not end > start:
            raise InputError(
                f"size: outage {window!r} needs tz-aware start < end, e.g. "
                "(pd.Timestamp('2025-07-01 14:00', tz='UTC'), pd.Timestamp('2025-07-01 18:00', "
                "tz='UTC'))."
            )
        mask |= (index >= start) & (index < end)
    return mask


def _months(index: pd.DatetimeIndex) -> tuple[np.ndarray, np.ndarray]:
    periods = index.tz_localize(None).to_period("M")
    codes, uniques = pd.factorize(periods, sort=True)
    step_h = (index[1] - index[0]).total_seconds() / 3600 if len(index) > 1 else 1.0
    covered_h = np.bincount(codes, minlength=len(uniques)) * step_h
    month_h = np.array([p.days_in_month * 24.0 for p in uniques])
    share = covered_h / month_h
    # eq. 12: each month's charge weighted by the share of it covered, scaled to 12 months
    return codes, share * 12.0 / share.sum()


def prepare_inputs(
    load_kw: Any,
    *,
    pv_availability: pd.Series | None,
    costs: Costs,
    battery: Battery,
    generator: Generator,
    import_limit_kw: float | None,
    export_limit_kw: float = 0.0,
    max_pv_kwp: float = math.inf,
    outages: Any = None,
    carbon: Carbon | None = None,
    ramp_limit_kw_per_h: float | None = None,
    max_dump_load_kw: float = 0.0,
    pv_area_ha: float | None = None,
    pv_kwp_per_ha: float | None = None,
    extra_generators: Sequence[PricedGenerator] = (),
    generator_name: str = "generator",
) -> tuple[ModelInputs, pd.DatetimeIndex]:
    """Validate the inputs of :func:`size` and turn them into :class:`ModelInputs`."""
    load = _as_load(load_kw)
    step_s = validate_power_series(load, "load_kw")
    peak_kw = float(load.max())
    if peak_kw > MAX_LOAD_KW:
        raise InputError(
            f"load_kw: peaks at {peak_kw:.4g} kW, above {MAX_LOAD_KW:.0e} kW (1 TW), which no "
            "site draws; expected kW — was the series given in W (divide by 1000)?"
        )
    index = load.index
    for obj, cls, name in (
        (costs, Costs, "costs"), (battery, Battery, "battery"), (generator, Generator, "generator")
    ):
        if not isinstance(obj, cls):
            raise InputError(f"size: {name} must be a microgrid.{cls.__name__}, got {obj!r}.")
    if pv_availability is None:
        avail = np.zeros(len(index))
        max_pv_kwp = 0.0
    else:
        if not isinstance(pv_availability, pd.Series) or not pv_availability.index.equals(index):
            raise InputError(
                "size: pv_availability is on another index than load_kw (expected "
                f"{len(index)} labels from {index[0]} every {step_s:g} s); build it with "
                "microgrid.pv_availability(..., index=load_kw.index)."
            )
        validate_power_series(pv_availability, "pv_availability")
        check_availability(pv_availability)  # > 1.1 kW/kWp is a unit error
        avail = pv_availability.to_numpy(dtype=float)
    for name, value, allow_none in (
        ("import_limit_kw", import_limit_kw, True),
        ("export_limit_kw", export_limit_kw, False),
        ("max_pv_kwp", max_pv_kwp, False),
        ("ramp_limit_kw_per_h", ramp_limit_kw_per_h, True),
    ):
        if value is None and allow_none:
            continue
        if not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
            raise InputError(f"size: {name} must be a number >= 0 [kW], got {value!r}.")
    for name, value, instead in (
        ("import_limit_kw", import_limit_kw, "None to size the import capacity"),
        ("ramp_limit_kw_per_h", ramp_limit_kw_per_h, "None for no ramp limit"),
    ):
        if value is not None and math.isinf(value):
            raise InputError(f"size: {name}=inf is not a limit; give a finite value [kW] or {instead}.")
    if (isinstance(max_dump_load_kw, bool) or not isinstance(max_dump_load_kw, (int, float))
            or math.isnan(max_dump_load_kw) or max_dump_load_kw < 0):
        raise InputError(
            f"size: max_dump_load_kw must be a number >= 0 [kW] (0: no dump load, inf: no "
            f"cap), got {max_dump_load_kw!r}."
        )
    max_pv_kwp = _land_limit_kwp(max_pv_kwp, pv_area_ha, pv_kwp_per_ha)
    if not isinstance(generator_name, str) or not generator_name.strip():
        raise InputError(f"size: generator_name must be a non-empty label, got {generator_name!r}.")
    extra = _check_extra_generators(extra_generators, generator, generator_name)
    if carbon is not None and not isinstance(carbon, Carbon):
        raise InputError(f"size: carbon must be a microgrid.Carbon or None, got {carbon!r}.")
    month, month_weight = _months(index)
    dt_h = step_s / 3600.0
    data = ModelInputs(
        load_kw=load.to_numpy(dtype=float),
        pv_kw_per_kwp=avail,
        import_usd_per_kwh=_on_index(costs.import_usd_per_kwh, index, "costs.import_usd_per_kwh"),
        export_usd_per_kwh=_on_index(costs.export_usd_per_kwh, index, "costs.export_usd_per_kwh"),
        grid_kg_per_kwh=_on_index(
            carbon.grid_kg_per_kwh if carbon else 0.0, index, "carbon.grid_kg_per_kwh"
        ),
        outage=_outage_mask(outages, index),
        month=month,
        month_weight=month_weight,
        dt_h=dt_h,
        annual_factor=8760.0 / (len(index) * dt_h),
        costs=costs,
        battery=battery,
        generator=generator,
        import_limit_kw=None if import_limit_kw is None else float(import_limit_kw),
        export_limit_kw=float(export_limit_kw),
        max_pv_kwp=float(max_pv_kwp),
        ramp_limit_kw_per_h=ramp_limit_kw_per_h,
        carbon_price_usd_per_t=carbon.price_usd_per_t if carbon else 0.0,
        carbon_cap_t_per_year=carbon.cap_t_per_year if carbon else None,
        dump_load_max_kw=float(max_dump_load_kw),
        generators=extra,
        generator_name=generator_name,
    )
    return data, index


def _check_extra_generators(extra: Any, generator: Generator,
                            main: str) -> tuple[PricedGenerator, ...]:
    """The further generator technologies as a tuple, each a PricedGenerator, names unique."""
    if extra is None:
        return ()
    if isinstance(extra, PricedGenerator) or not isinstance(extra, Sequence):
        raise InputError(
            "size: extra_generators must be a sequence of microgrid.PricedGenerator, got "
            f"{extra!r}; wrap a single one in a list.")
    extra = tuple(extra)
    for g in extra:
        if not isinstance(g, PricedGenerator):
            raise InputError(
                f"size: extra_generators holds {g!r}; expected microgrid.PricedGenerator "
                "(e.g. microgrid.priced_generator('atb2024-moderate', 'diesel')).")
    names = [g.name for g in extra]
    if len(set(names)) < len(names) or main in names:
        raise InputError(
            f"size: extra_generators need unique names other than the main generator's "
            f"({main!r}), got {names}.")
    if extra and generator.unit_commitment:
        raise InputError(
            "size: unit commitment (generator.min_load_fraction > 0) takes one generator "
            f"technology; got {len(extra)} further one(s) in extra_generators. Drop them or "
            "set min_load_fraction=0 (the LP).")
    return extra


def _land_limit_kwp(max_pv_kwp: float, area_ha: float | None,
                    density_kwp_per_ha: float | None) -> float:
    """P̄_pv = min(max_pv_kwp, A * delta), the land limit of eq. 28 [kWp]."""
    if density_kwp_per_ha is not None:
        check_number(density_kwp_per_ha, "size: pv_kwp_per_ha", gt=0.0, unit="kWp/ha",
                     hint="Give the plant's power density per hectare of site, e.g. 420.")
    if area_ha is None:
        return max_pv_kwp
    area = check_number(area_ha, "size: pv_area_ha", ge=0.0, unit="ha",
                        hint="Give the land available for PV in hectares, or None for no limit.")
    density = pv_kwp_per_ha_default() if density_kwp_per_ha is None else density_kwp_per_ha
    return min(max_pv_kwp, area * float(density))


def _limits_text(d: ModelInputs) -> str:
    limit = "chosen by the model" if d.import_limit_kw is None else f"{d.import_limit_kw:g} kW"
    parts = [
        f"import_limit_kw={limit}",
        f"generator.max_power_kw={d.generator.max_power_kw:g}",
        f"battery.max_energy_kwh={d.battery.max_energy_kwh:g}",
        f"battery.max_power_kw={d.battery.max_power_kw:g}",
        f"max_pv_kwp={d.max_pv_kwp:g}",
        f"max_dump_load_kw={d.dump_load_max_kw:g}",
    ]
    if math.isfinite(d.generator.max_run_hours_per_year):
        parts.append(f"generator.max_run_hours_per_year={d.generator.max_run_hours_per_year:g}")
    if math.isfinite(d.battery.max_cycles_per_year):
        parts.append(f"battery.max_cycles_per_year={d.battery.max_cycles_per_year:g}")
    if d.outage.any():
        parts.append(f"{int(d.outage.sum())} outage step(s)")
    if d.ramp_limit_kw_per_h is not None:
        parts.append(f"ramp_limit_kw_per_h={d.ramp_limit_kw_per_h:g}")
    if d.carbon_cap_t_per_year is not None:
        parts.append(f"carbon.cap_t_per_year={d.carbon_cap_t_per_year:g}")
    return ", ".join(parts)


def _relaxed_flows(d: ModelInputs) -> tuple[dict[str, np.ndarray], bool]:
    """Dump load and unserved energy [kW] of the diagnostic model (LP: ``microgrid.lp``, with
    every generator technology; MILP: the Pyomo model), and whether it has a solution."""
    if not d.generator.unit_commitment:
        lp = build_lp(d)
        res, x = solve_highs(to_highs(lp), len(d.load_kw), time_limit_s=60,
                             kw_per_pu=lp.kw_per_pu)
        if not res.has_solution:
            return {}, False
        return {k: x[lp.cols[k]] * lp.kw_per_pu for k in ("dump", "unserved")
                if k in lp.cols}, True
    m = build_model(d)
    res = solve_model(m, time_limit_s=60)
    if not res.has_solution:
        return {}, False
    out = {"dump": solution_unscaled(m, m.dump_pu)}
    if hasattr(m, "unserved_pu"):
        out["unserved"] = solution_unscaled(m, m.unserved_pu)
    return out, True


def _explain_infeasible(d: ModelInputs, index: pd.DatetimeIndex) -> SizingInfeasibleError:
    # first: is it only supply the limits force but nothing takes (a priced dump load)?
    head = f"size: no sizing can serve load_kw under the given limits ({_limits_text(d)})."
    tol = 1e-6 * max(1.0, float(d.load_kw.max()))
    dumping = {"dump_load_max_kw": math.inf, "dump_usd_per_kwh": _DIAGNOSTIC_USD_PER_KWH}
    flows, has_solution = _relaxed_flows(ModelInputs(**{**d.__dict__, **dumping}))
    short = np.zeros(0, dtype=int)
    if not has_solution:  # then with priced unserved energy too
        flows, has_solution = _relaxed_flows(ModelInputs(**{
            **d.__dict__, **dumping, "unserved_usd_per_kwh": _DIAGNOSTIC_USD_PER_KWH}))
        if not has_solution:
            return SizingInfeasibleError(head + " Relax one of these limits.")
        unserved = flows["unserved"]
        short = np.flatnonzero(unserved > tol)
    excess = np.maximum(flows["dump"] - d.dump_load_max_kw, 0.0)
    over = np.flatnonzero(excess > tol)
    if short.size == 0 and over.size:
        worst = int(over[np.argmax(excess[over])])
        return SizingInfeasibleError(
            f"{head} The limits force more supply than the load takes in {over.size} of "
            f"{len(index)} steps (first at {index[over[0]]}; worst {excess[worst]:.6g} kW at "
            f"{index[worst]}; {float(excess.sum() * d.dt_h):.6g} kWh in all), e.g. import "
            "that may not fall as fast as the load (ramp limit) or a generator's minimum "
            "load. Allow a dump load (max_dump_load_kw >= "
            f"{math.ceil(float(excess.max())):d}), export (export_limit_kw), storage, or relax "
            "the ramp limit / generator.min_load_fraction."
        )
    if short.size == 0:
        return SizingInfeasibleError(head + " Relax one of these limits.")
    energy_kwh = float(unserved.sum() * d.dt_h)
    worst = int(short[np.argmax(unserved[short])])
    return SizingInfeasibleError(
        f"{head} Even at the largest allowed sizes the load is short in {short.size} of "
        f"{len(index)} steps (first at {index[short[0]]}; worst {unserved[worst]:.6g} kW at "
        f"{index[worst]} against a load of {d.load_kw[worst]:.6g} kW; {energy_kwh:.6g} kWh in "
        "all). Raise the import limit or generator.max_power_kw, allow storage "
        "(battery.max_energy_kwh / max_power_kw) or remove outage steps / the ramp or carbon "
        "limit."
    )


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
    method: str = "exact",
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
        R, the largest change of import between steps per hour [kW/h].
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
        it is how the model sheds supply that an import ramp limit or a generator's
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
    method : {"exact", "decompose"}
        ``"exact"`` (default) solves the whole LP. ``"decompose"`` sizes on the year
        aggregated into blocks and dispatches the full year at those sizes, iterating with
        Benders cuts until the cost is certified within :data:`DECOMPOSITION_TOL` of the
        optimum (``Sizing.mip_gap``; ``docs/formulation.md``, "Decomposition"); it falls back
        to the exact LP where it does not apply (short horizons, prices or outages that
        change within a block, unit commitment).

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
    solve = {"time_limit_s": time_limit_s, "mip_gap": mip_gap, "highs_options": highs_options,
             "method": method}
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
        f"{math.ceil(needed):d}), export (export_limit_kw), or relax the ramp "
        "limit / generator.min_load_fraction; or accept the battery as a dump with "
        "allow_simultaneous_charge_discharge=True."
    )


def _size(data: ModelInputs, index: pd.DatetimeIndex, solve: dict,
          export_limit_kw: float) -> tuple[Sizing, np.ndarray]:
    """Build, solve and read back one model; the steps still cycling after :func:`untangle`."""
    solve = dict(solve)
    method = solve.pop("method", "exact")
    if not data.generator.unit_commitment:
        return _size_lp(data, index, solve, export_limit_kw, method)
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
             method: str) -> tuple[Sizing, np.ndarray]:
    """The LP through :mod:`microgrid.lp` (direct to HiGHS): whole, or decomposed."""
    if method == "decompose" and not solve["highs_options"]:
        start = time.perf_counter()
        dec = decompose(data, tol=DECOMPOSITION_TOL, time_limit_s=solve["time_limit_s"])
        if dec is not None:
            elapsed = time.perf_counter() - start
            solved = dec.master_time_s + dec.dispatch_time_s
            return _result_lp(dec.lp, dec.x, dec.sizes, data, index, "optimal", dec.gap,
                              elapsed - solved, solved, "decompose")
    start = time.perf_counter()
    lp = build_lp(data)
    h = to_highs(lp)
    build_time_s = time.perf_counter() - start
    res, x = solve_highs(h, len(index), time_limit_s=solve["time_limit_s"],
                         highs_options=solve["highs_options"], kw_per_pu=lp.kw_per_pu)
    _check_status(res, data, index, export_limit_kw)
    return _result_lp(lp, x, lp.size_values(x), data, index, res.status,
                      0.0 if not math.isfinite(res.mip_gap) else res.mip_gap, build_time_s,
                      res.solve_time_s, "exact")


def _result_lp(lp: Lp, x: np.ndarray, sizes: dict, d: ModelInputs, index, status: str,
               gap: float, build_time_s: float, solve_time_s: float,
               method: str) -> tuple[Sizing, np.ndarray]:
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
    ), cycling


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
    ), cycling
