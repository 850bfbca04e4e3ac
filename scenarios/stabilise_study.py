"""``[stabilise]`` in a run: check it against the facility before computing, run
``microgrid.stabilise`` on the facility series, and say what summary.json and the output
files hold.

The study runs on ``facility_kw`` at the facility's own step (no averaging: a 0.1 s step
resolves the iteration cycle a 1 min step hides); the ramp window must be a whole number of
that step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from aiload.errors import InputError

__all__ = ["StabilisePlan", "prepare_stabilise", "run_stabilise", "summary_of", "series_of",
           "facility_gpus"]


@dataclass(frozen=True)
class StabilisePlan:
    """What the study needs, built before the facility runs."""

    limits: Any
    options: list
    combinations: bool
    prices: Any
    gpus: int


def facility_gpus(facility) -> int:
    """GPUs of the facility section's fleet: nodes x GPUs per node [-]."""
    from aiload.facility.iteration import gpus_per_node  # noqa: PLC0415
    from aiload.facility.presets import resolve_spec  # noqa: PLC0415

    overrides = dict(facility.overrides) if facility.preset is not None else {}
    if facility.preset is not None and facility.utilization is not None:
        overrides["utilization"] = facility.utilization
    spec = resolve_spec(facility.to_spec(), overrides)
    given = facility.iteration.gpus_per_node if facility.iteration is not None else None
    try:
        per_node = gpus_per_node(spec.fleet.hardware, given)
    except InputError:
        raise InputError(f"[stabilise] gpus: cannot read the GPUs per node from the hardware "
                         f"name {spec.fleet.hardware!r}; set gpus = ... in [stabilise]") from None
    return spec.fleet.nodes * per_node


def prepare_stabilise(scenario) -> StabilisePlan:
    """Check ``[stabilise]`` against ``[facility]`` and build its objects (no computing)."""
    from microgrid.stabilise import Prices  # noqa: PLC0415

    section = scenario.stabilise
    step_s = pd.Timedelta(pd.tseries.frequencies.to_offset(scenario.facility.freq)).total_seconds()
    k = section.ramp_window_s / step_s
    if k < 1 - 1e-9 or abs(k - round(k)) > 1e-9 * max(k, 1.0):
        raise InputError(
            f"stabilise.ramp_window_s = {section.ramp_window_s:g} s is not a whole number of "
            f"facility.freq = {scenario.facility.freq!r} ({step_s:g} s): the ramp is measured "
            f"between interval means; set ramp_window_s to a multiple of {step_s:g} s or make "
            "facility.freq finer (0.1 s resolves the iteration cycle)")
    horizon_s = (pd.Timestamp(scenario.facility.end)
                 - pd.Timestamp(scenario.facility.start)).total_seconds()
    if horizon_s <= section.ramp_window_s:
        raise InputError(f"stabilise: the facility horizon ({horizon_s:g} s) is not longer than "
                         f"ramp_window_s = {section.ramp_window_s:g} s; extend facility.end")
    gpus = section.gpus if section.gpus is not None else facility_gpus(scenario.facility)
    prices = Prices.default()
    if section.energy_usd_per_kwh is not None:
        prices = Prices(section.energy_usd_per_kwh, prices.battery_usd_per_kwh_year,
                        prices.battery_usd_per_kw_year,
                        source=f"energy {section.energy_usd_per_kwh:g} USD/kWh from [stabilise]; "
                               f"battery: {prices.source}")
    return StabilisePlan(section.to_limits(), section.to_options(gpus), section.combinations,
                         prices, gpus)


def run_stabilise(plan: StabilisePlan, facility_kw: pd.Series):
    """``microgrid.stabilise`` of ``facility_kw`` [kW] with the plan -> ``Stabilisation``."""
    from microgrid.stabilise import stabilise  # noqa: PLC0415

    return stabilise(facility_kw, plan.limits, options=plan.options,
                     combinations=plan.combinations, prices=plan.prices)


def chosen_option(result) -> str:
    """The option whose series the report and the files show: the cheapest that meets every
    limit, else the cheapest of the others ("none" when there are none)."""
    if result.cheapest is not None:
        return result.cheapest
    table = result.options[result.options["option"] != "none"]
    if table.empty:
        return "none"
    return str(table.sort_values("cost_usd_per_year").iloc[0]["option"])


def summary_of(plan: StabilisePlan, result) -> dict[str, Any]:
    """summary.json ``stabilise``: the limits, the options table (one record per option),
    the cheapest that meets every limit, the option shown, GPUs, prices and wall time."""
    records = result.options.drop(columns=["parameters"]).to_dict(orient="records")
    for rec, params in zip(records, result.options["parameters"]):
        rec["parameters"] = dict(params)
    lim = result.limits
    return {
        "limits": {"ramp_up_mw_per_s": lim.ramp_up_mw_per_s,
                   "ramp_down_mw_per_s": lim.ramp_down_mw_per_s,
                   "ramp_window_s": lim.ramp_window_s, "band_hz": list(lim.band_hz),
                   "band_amplitude_mw": lim.band_amplitude_mw,
                   "band_energy_share": lim.band_energy_share,
                   "min_power_kw": lim.min_power_kw},
        "options": records,
        "cheapest": result.cheapest,
        "shown": chosen_option(result),
        "gpus": plan.gpus,
        "step_s": result.meta["dt_s"],
        "span_s": result.meta["span_s"],
        "price_source": result.meta["price_source"],
        "energy_usd_per_kwh": result.meta["prices"].energy_usd_per_kwh,
        "wall_s": result.meta["wall_s"],
    }


def series_of(result) -> pd.DataFrame:
    """The shown option's series (``microgrid_stabilise_series.parquet``): load, POI,
    burned, withheld, storage and losses [kW], stored energy [kWh]."""
    return result.series(chosen_option(result))
