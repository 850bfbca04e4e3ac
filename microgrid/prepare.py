"""Validate the inputs of :func:`microgrid.size` and turn them into ``ModelInputs``.

Every check runs before a model is built: a bad value raises
:class:`aiload.errors.InputError` that says what was received and how to fix it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from aiload._checks import check_number, warn_unit_slip
from aiload.errors import InputError, InputWarning
from aiload.timeseries import validate_power_series
from microgrid.costsets import pv_kwp_per_ha as pv_kwp_per_ha_default
from microgrid.inputs import Battery, Carbon, Costs, Generator, PricedGenerator
from microgrid.model import ModelInputs
from microgrid.pv import check_availability

__all__ = ["prepare_inputs", "MAX_LOAD_KW"]

#: a load above this is taken for a unit error, not a site: 1 TW [kW]
MAX_LOAD_KW = 1e9


def _as_load(load_kw: Any) -> pd.Series:
    power = getattr(load_kw, "power", None)
    if isinstance(power, pd.DataFrame):
        if "facility_kw" not in power.columns:
            raise InputError(
                "size: the FacilityLoad's power has no 'facility_kw' column; got "
                f"{list(power.columns)}."
            )
        return power["facility_kw"]
    if isinstance(load_kw, pd.Series):
        name = str(load_kw.name or "").lower()
        for suffix, to_kw in (("_mw", "* 1000"), ("_gw", "* 1e6"), ("_w", "/ 1000")):
            if name.endswith(suffix):
                raise InputError(
                    f"load_kw: the series is named {load_kw.name!r}, a power in "
                    f"{suffix[1:].upper()}; microgrid.size takes kW. Convert it, "
                    f"e.g. (series {to_kw}).rename('facility_kw')."
                )
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
                f"{outages.dtype} on {len(outages)} labels"
                f"{f' from {outages.index[0]}' if len(outages) else ''} (load_kw: "
                f"{len(index)} from {index[0]}); reindex it onto load_kw.index first."
            )
        return outages.to_numpy()
    if isinstance(outages, (str, bytes, pd.DataFrame)) or not hasattr(outages, "__iter__"):
        raise InputError(
            "size: outages must be a boolean Series on load_kw.index or a list of (start, end) "
            f"pairs of tz-aware timestamps, got {type(outages).__name__} {outages!r}.")
    mask = np.zeros(len(index), dtype=bool)
    step = index[1] - index[0] if len(index) > 1 else pd.Timedelta(index.freq)
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
        hit = (index >= start) & (index < end)
        if not hit.any():
            # a window in another year or zone is dropped; say so (a shortened run of a
            # scenario with a fixed outage list is legitimate, so not an error)
            warnings.warn(
                f"size: outage ({start}, {end}) covers no step of load_kw ({index[0]} to "
                f"{index[-1] + step}) and is left out; check its year and time zone if it "
                "should apply.", InputWarning, stacklevel=4)
        mask |= hit
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
        if (isinstance(value, (bool, np.bool_)) or not isinstance(value, Real)
                or math.isnan(value) or value < 0):
            raise InputError(f"size: {name} must be a number >= 0 [kW], got {value!r}.")
    for name, value, instead in (
        ("import_limit_kw", import_limit_kw, "None to size the import capacity"),
        ("ramp_limit_kw_per_h", ramp_limit_kw_per_h, "None for no ramp limit"),
    ):
        if value is not None and math.isinf(value):
            raise InputError(f"size: {name}=inf is not a limit; give a finite value [kW] or {instead}.")
    if (isinstance(max_dump_load_kw, (bool, np.bool_)) or not isinstance(max_dump_load_kw, Real)
            or math.isnan(max_dump_load_kw) or max_dump_load_kw < 0):
        raise InputError(
            f"size: max_dump_load_kw must be a number >= 0 [kW] (0: no dump load, inf: no "
            f"cap), got {max_dump_load_kw!r}."
        )
    peak_text = "the load's peak (load_kw.max())"
    for name, value, unit in (
        ("import_limit_kw", import_limit_kw, "kW"),
        ("export_limit_kw", export_limit_kw, "kW"),
        ("max_pv_kwp", max_pv_kwp, "kW"),
        ("generator.max_power_kw", generator.max_power_kw, "kW"),
        ("battery.max_power_kw", battery.max_power_kw, "kW"),
    ):
        # one rule everywhere (aiload._checks.warn_unit_slip): a limit ~1,000x below the
        # load is most likely MW typed as kW (issue 26: import_limit_kw=60 for a 100 MW campus)
        warn_unit_slip(value, f"size: {name}", reference=peak_kw, reference_what=peak_text,
                       unit=unit, too_large=False, stacklevel=4)
    max_pv_kwp = _land_limit_kwp(max_pv_kwp, pv_area_ha, pv_kwp_per_ha)
    if not isinstance(generator_name, str) or not generator_name.strip():
        raise InputError(f"size: generator_name must be a non-empty label, got {generator_name!r}.")
    extra = _check_extra_generators(extra_generators, generator, generator_name)
    if carbon is not None and not isinstance(carbon, Carbon):
        raise InputError(f"size: carbon must be a microgrid.Carbon or None, got {carbon!r}.")
    _warn_price_units(costs)
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
    _check_no_wash_trade(data, index)
    return data, index


def _check_no_wash_trade(d: ModelInputs, index: pd.DatetimeIndex) -> None:
    """Refuse export paid more than import costs (energy, plus carbon where priced) in a step
    with export allowed: the LP would import and export at once, a trade through the meter
    that no meter allows (it nets the two flows); the exact fix needs a binary per step."""
    if d.export_limit_kw <= 0:
        return
    cost = d.import_usd_per_kwh + d.carbon_price_usd_per_t * d.grid_kg_per_kwh / 1000.0
    bad = np.flatnonzero((d.export_usd_per_kwh > cost) & ~d.outage)
    if len(bad):
        k = bad[0]
        carbon = " with its carbon price" if d.carbon_price_usd_per_t > 0 else ""
        raise InputError(
            f"size: export is paid more than import costs in {len(bad)} of {len(index)} steps "
            f"(first {index[k]}: {d.export_usd_per_kwh[k]:g} against {cost[k]:g} USD/kWh"
            f"{carbon}); the optimum would buy from the grid and sell it back at once, which a "
            "meter cannot do (it nets the flows). Give an export price at most the import price "
            "in every step, e.g. np.minimum(export, import) (exports in those steps are then "
            "valued at the import price, below what they would earn), or export_limit_kw=0."
        )


#: an energy price above this is taken for USD/MWh given as USD/kWh [USD/kWh]: scarcity caps
#: of wholesale markets are a few USD/kWh, a median of them never
MAX_MEDIAN_USD_PER_KWH = 5.0


def _warn_price_units(costs: Costs) -> None:
    """Warn about an energy price whose median looks like USD/MWh (1000x the USD/kWh)."""
    for name in ("import_usd_per_kwh", "export_usd_per_kwh", "fuel_usd_per_kwh",
                 "battery_throughput_usd_per_kwh"):
        value = getattr(costs, name)
        median = float(value.median()) if isinstance(value, pd.Series) else float(value)
        if median > MAX_MEDIAN_USD_PER_KWH:
            warnings.warn(
                f"size: costs.{name} has a median of {median:g} USD/kWh, above "
                f"{MAX_MEDIAN_USD_PER_KWH:g}; is it in USD/MWh? Divide by 1000 for USD/kWh.",
                InputWarning, stacklevel=4)


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
