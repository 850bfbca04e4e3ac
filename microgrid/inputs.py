"""Configuration of a sizing study: costs, battery, generator and carbon accounting.

Every class is a frozen dataclass validated in ``__post_init__``: a bad value raises
:class:`aiload.errors.InputError` (a ``ValueError``) before any model is built. Money is in US
dollars (``usd``), energy in kWh, power in kW, mass of CO2 in kg or metric tonnes (``t``).
Equation numbers refer to ``docs/formulation.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from numbers import Real

import numpy as np
import pandas as pd

from aiload._checks import check_finite_values, check_number
from aiload.errors import InputError

__all__ = ["Costs", "Battery", "Generator", "PricedGenerator", "Carbon", "capital_recovery_factor"]


def capital_recovery_factor(rate: float, years: float) -> float:
    """Capital recovery factor: the annuity per unit of overnight cost [1/year].

    ``rate * (1 + rate)**years / ((1 + rate)**years - 1)``; ``1 / years`` when ``rate`` is 0.

    Parameters
    ----------
    rate : float
        Real discount rate [1/year], e.g. ``0.07``.
    years : float
        Economic life [year], > 0.

    Examples
    --------
    >>> round(capital_recovery_factor(0.07, 20), 5)
    0.09439
    """
    years = check_number(years, "capital_recovery_factor: years", gt=0.0, unit="year")
    rate = check_number(rate, "capital_recovery_factor: rate", ge=0.0, lt=1.0, unit="1/year",
                        hint="Give the rate as a fraction (0.07 for 7 %/year), not percent.")
    if rate == 0:
        return 1.0 / years
    growth = (1.0 + rate) ** years
    return rate * growth / (growth - 1.0)


#: the largest price taken [USD per kWh or per kW and year]: a million times a dear market's
#: scarcity cap; beyond it a price is a unit or data error and annual sums overflow float64
MAX_PRICE_USD = 1e9


def _check_non_negative(
    obj: object, names: tuple[str, ...], how_to_fix: str, allow_inf: bool = False,
    allow_negative: bool = False, if_negative: str | None = None,
) -> None:
    """Every named field a finite number >= 0 (``+inf`` too when ``allow_inf``: no cap; any
    finite number when ``allow_negative``). ``if_negative`` replaces ``how_to_fix`` in the
    message about a negative value."""
    sign = "" if allow_negative else " non-negative"
    negative_fix = if_negative or how_to_fix
    for name in names:
        value = getattr(obj, name)
        what = f"{type(obj).__name__}.{name}"
        if isinstance(value, pd.Series):
            if not pd.api.types.is_numeric_dtype(value) or pd.api.types.is_bool_dtype(value):
                raise InputError(f"{what}: expected numbers, got a series of {value.dtype}.")
            arr = check_finite_values(value, what, hint=how_to_fix)
            if not allow_negative and (arr < 0).any():
                raise InputError(
                    f"{what}: expected non-negative numbers, got a series with minimum "
                    f"{float(arr.min())!r}. {negative_fix}"
                )
            continue
        if hasattr(value, "__len__") and not isinstance(value, str):
            # an array or a DataFrame: name its type (its repr would flood the message)
            raise InputError(
                f"{what}: expected a number or a pandas Series, got a "
                f"{type(value).__name__}; pass one column as a Series on the load's index. "
                f"{how_to_fix}"
            )
        if (isinstance(value, (bool, np.bool_)) or not isinstance(value, Real)
                or math.isnan(value)):
            raise InputError(f"{what}: expected a{sign} number, got {value!r}. {how_to_fix}")
        if value < 0 and not allow_negative:
            raise InputError(f"{what}: expected a{sign} number, got {value!r}. {negative_fix}")
        if isinstance(value, np.number):  # numpy's numbers are numbers; stored as float
            value = float(value)
            object.__setattr__(obj, name, value)
        if math.isinf(value) and (not allow_inf or value < 0):
            raise InputError(
                f"{what}: expected a finite{sign} number, got {value!r}; an infinite "
                f"price or quantity makes the optimum meaningless. {how_to_fix}"
            )


@dataclass(frozen=True)
class Costs:
    """Annualised capital and operating prices [USD].

    Capital prices are per unit of size and per year (overnight cost times
    :func:`capital_recovery_factor` plus fixed O&M); operating prices are per kWh. Prices may
    be a number or a Series on the load's index (time-of-use tariffs).

    Parameters
    ----------
    pv_usd_per_kwp_year : float
        PV capital recovery + fixed O&M [USD/kWp/year].
    battery_usd_per_kwh_year : float
        Battery energy capacity [USD/kWh/year].
    battery_usd_per_kw_year : float
        Battery power capacity (inverter) [USD/kW/year].
    generator_usd_per_kw_year : float
        Generator capacity [USD/kW/year].
    import_usd_per_kwh : float or pandas.Series
        Energy price of grid import [USD/kWh].
    export_usd_per_kwh : float or pandas.Series
        Price paid for export [USD/kWh]; default 0; negative where exporting costs money
        (the optimum then curtails PV rather than export). Import prices must be >= 0.
    fuel_usd_per_kwh : float
        Fuel and variable O&M per kWh generated [USD/kWh].
    demand_charge_usd_per_kw_month : float
        Charge on the peak import of each calendar month [USD/kW/month].
    import_capacity_usd_per_kw_year : float
        Price of the import limit when it is a decision (``import_limit_kw=None``) [USD/kW/year].
    battery_throughput_usd_per_kwh : float
        Wear price per kWh discharged from the battery (eq. 27) [USD/kWh]; default 0.
    """

    pv_usd_per_kwp_year: float
    battery_usd_per_kwh_year: float
    battery_usd_per_kw_year: float
    generator_usd_per_kw_year: float
    import_usd_per_kwh: float | pd.Series
    export_usd_per_kwh: float | pd.Series = 0.0
    fuel_usd_per_kwh: float = 0.0
    demand_charge_usd_per_kw_month: float = 0.0
    import_capacity_usd_per_kw_year: float = 0.0
    battery_throughput_usd_per_kwh: float = 0.0

    def __post_init__(self) -> None:
        _check_non_negative(
            self, ("import_usd_per_kwh",), "Give the energy price of grid import in USD/kWh.",
            if_negative="Negative import prices (surplus hours on some markets) are not "
            "modelled: at a negative price the optimum earns by drawing more than the site uses "
            "and can only lose that energy by charging and discharging the battery at once, a "
            "dispatch no battery runs. Clip the series at 0 (`prices.clip(lower=0)`): those "
            "hours then cost nothing, slightly more than the market charged.",
        )
        # a negative export price (paying to export) is fine: the optimum curtails PV instead
        _check_non_negative(
            self, ("export_usd_per_kwh",), "Give the price paid for export; negative when "
            "exporting costs money.", allow_negative=True,
        )
        _check_non_negative(
            self,
            tuple(f.name for f in fields(self)
                  if f.name not in ("import_usd_per_kwh", "export_usd_per_kwh")),
            "Costs and prices are non-negative; model revenue with export_usd_per_kwh.",
        )
        for f in fields(self):
            value = getattr(self, f.name)
            largest = float(value.abs().max()) if isinstance(value, pd.Series) else abs(value)
            if largest > MAX_PRICE_USD:
                raise InputError(
                    f"Costs.{f.name}: expected at most {MAX_PRICE_USD:g} (USD per kWh, kW or "
                    f"kW-year) in size, got {largest:g}: no price is this large, it is a unit or "
                    "data error (near 1e308 the year's cost overflows). Forbid an option by its "
                    "limit (e.g. Battery(max_energy_kwh=0)), not by a huge price."
                )


@dataclass(frozen=True)
class Battery:
    """Battery technology limits (its size is a decision).

    Parameters
    ----------
    charge_efficiency : float
        eta_c, share of charging power stored, in (0, 1] [-].
    discharge_efficiency : float
        eta_d, share of stored energy delivered, in (0, 1] [-].
    min_soc_fraction : float
        sigma_min, lowest state of charge as a share of the energy capacity, in [0, 1) [-].
    max_energy_kwh : float
        Upper bound on the energy capacity E_b [kWh]; 0 forbids storage.
    max_power_kw : float
        Upper bound on the power capacity P_b [kW].
    max_c_rate_per_h : float
        rho, the largest power per unit of energy capacity, P_b <= rho * E_b (eq. 20)
        [1/h] (e.g. 4 for a battery of at least 15 minutes); default inf: no link beyond
        eq. 22 (zero energy, zero power).
    max_cycles_per_year : float
        N, the most equivalent full cycles a year, annual discharge <= N * E_b (eq. 26)
        [1/year]: a cycle-limited life (e.g. 365 where the capital's life assumes one
        cycle a day); default inf: no cap.
    """

    charge_efficiency: float = 0.95
    discharge_efficiency: float = 0.95
    min_soc_fraction: float = 0.0
    max_energy_kwh: float = math.inf
    max_power_kw: float = math.inf
    max_c_rate_per_h: float = math.inf
    max_cycles_per_year: float = math.inf

    def __post_init__(self) -> None:
        for name in ("charge_efficiency", "discharge_efficiency"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not (isinstance(value, Real)
                                                           and 0 < value <= 1):
                raise InputError(
                    f"Battery.{name}: expected a fraction in (0, 1], got {value!r}. Give "
                    "efficiencies as fractions (0.95), not percent, and never above 1."
                )
            object.__setattr__(self, name, float(value))  # numpy's numbers stored as float
        soc = self.min_soc_fraction
        if isinstance(soc, bool) or not isinstance(soc, (int, float)) or not 0 <= soc < 1:
            raise InputError(
                f"Battery.min_soc_fraction: expected a fraction in [0, 1), got "
                f"{self.min_soc_fraction!r}."
            )
        _check_non_negative(
            self, ("max_energy_kwh", "max_power_kw"), "Use 0 to forbid storage, inf for no cap.",
            allow_inf=True,
        )
        _check_non_negative(
            self, ("max_c_rate_per_h",), "Give the C-rate in 1/h (4 = a 15-minute battery), "
            "inf for no link.", allow_inf=True,
        )
        _check_non_negative(
            self, ("max_cycles_per_year",), "Give equivalent full cycles per year (365 = one "
            "a day), inf for no cap.", allow_inf=True,
        )

    @property
    def round_trip_efficiency(self) -> float:
        """eta_c * eta_d [-]."""
        return self.charge_efficiency * self.discharge_efficiency


@dataclass(frozen=True)
class Generator:
    """On-site dispatchable generation (its size is a decision).

    With ``unit_size_kw`` and ``min_load_fraction > 0`` the generator is a fleet of identical
    units with on/off commitment: the mixed-integer variant (eq. 17).

    Parameters
    ----------
    max_power_kw : float
        Upper bound on the generator size P_g [kW]; 0 forbids generation.
    emission_kg_per_kwh : float
        CO2 emitted per kWh generated [kg/kWh].
    min_load_fraction : float
        Lowest output of a running unit as a share of its size, in [0, 1) [-].
    unit_size_kw : float or None
        Size of one unit [kW]; needed when ``min_load_fraction > 0``.
    max_run_hours_per_year : float
        H, an air permit's cap on running hours, entered as an energy cap: annual generation
        <= H * P_g (eq. 25) [h/year]; default inf: no cap.
    emergency_only : bool
        True: runs only in grid outages (``outages``), as an engine permitted for emergency
        use may (g_t = 0 outside them, eq. 9); default False.
    """

    max_power_kw: float = math.inf
    emission_kg_per_kwh: float = 0.0
    min_load_fraction: float = 0.0
    unit_size_kw: float | None = None
    max_run_hours_per_year: float = math.inf
    emergency_only: bool = False

    def __post_init__(self) -> None:
        _check_non_negative(
            self,
            ("max_power_kw",),
            "Use max_power_kw=0 to forbid generation, inf for no cap.",
            allow_inf=True,
        )
        _check_non_negative(self, ("emission_kg_per_kwh",), "Give kg of CO2 per kWh [kg/kWh].")
        if isinstance(self.min_load_fraction, (bool, np.bool_)) or not isinstance(
            self.min_load_fraction, Real
        ) or not (0 <= self.min_load_fraction < 1):
            raise InputError(
                f"Generator.min_load_fraction: expected a fraction in [0, 1), got "
                f"{self.min_load_fraction!r}."
            )
        if isinstance(self.min_load_fraction, np.number):  # stored as float
            object.__setattr__(self, "min_load_fraction", float(self.min_load_fraction))
        if self.min_load_fraction > 0 and self.unit_size_kw is None:
            raise InputError(
                "Generator: min_load_fraction > 0 needs unit_size_kw [kW] (the size of one "
                "committed unit), e.g. Generator(min_load_fraction=0.3, unit_size_kw=2000)."
            )
        check_number(self.unit_size_kw, "Generator.unit_size_kw", gt=0.0, unit="kW", optional=True)
        if not isinstance(self.emergency_only, bool):
            raise InputError(
                f"Generator.emergency_only: expected True or False, got {self.emergency_only!r}.")
        hours = self.max_run_hours_per_year
        _check_non_negative(self, ("max_run_hours_per_year",),
                            "Give the permit's running hours a year, inf for no cap.",
                            allow_inf=True)
        if math.isfinite(hours) and hours > 8784:
            raise InputError(
                f"Generator.max_run_hours_per_year: expected at most 8784 h (a leap year), got "
                f"{hours!r}; use inf for no cap."
            )

    @property
    def unit_commitment(self) -> bool:
        """True when the mixed-integer unit-commitment block is used."""
        return self.min_load_fraction > 0


@dataclass(frozen=True)
class PricedGenerator:
    """A further generator technology of a sizing, with its own prices (eq. 9, 25 per
    technology): e.g. diesel backup beside gas engines priced by :class:`Costs`.

    Parameters
    ----------
    name : str
        Label of the technology in results (``Sizing.generator_kw_by_technology``).
    generator : Generator
        Its limits: ``max_power_kw``, ``emission_kg_per_kwh``, ``max_run_hours_per_year``
        (unit commitment is not available for a further technology).
    usd_per_kw_year : float
        Capital recovery + fixed O&M [USD/kW/year].
    fuel_usd_per_kwh : float
        Fuel and variable O&M per kWh generated [USD/kWh].
    """

    name: str
    generator: Generator
    usd_per_kw_year: float
    fuel_usd_per_kwh: float

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InputError(f"PricedGenerator.name: expected a non-empty label, got {self.name!r}.")
        if not isinstance(self.generator, Generator):
            raise InputError(
                f"PricedGenerator.generator: expected a microgrid.Generator, got "
                f"{self.generator!r}; e.g. microgrid.technology('diesel').generator().")
        if self.generator.unit_commitment:
            raise InputError(
                f"PricedGenerator {self.name!r}: unit commitment (min_load_fraction > 0) is "
                "available only for the main generator; give min_load_fraction=0.")
        _check_non_negative(self, ("usd_per_kw_year", "fuel_usd_per_kwh"),
                            "Prices are non-negative.")


@dataclass(frozen=True)
class Carbon:
    """Carbon accounting: grid intensity, a price and/or an annual cap.

    Parameters
    ----------
    grid_kg_per_kwh : float or pandas.Series
        Carbon intensity of grid import [kg/kWh], a number or a Series on the load's index.
    price_usd_per_t : float
        Carbon price [USD/t CO2].
    cap_t_per_year : float or None
        Upper bound on annualised emissions [t CO2/year]; None for no cap.
    """

    grid_kg_per_kwh: float | pd.Series
    price_usd_per_t: float = 0.0
    cap_t_per_year: float | None = None

    def __post_init__(self) -> None:
        _check_non_negative(
            self, ("grid_kg_per_kwh", "price_usd_per_t"), "Carbon figures are non-negative."
        )
        if self.cap_t_per_year is not None:
            _check_non_negative(self, ("cap_t_per_year",), "Use None for no cap.")
