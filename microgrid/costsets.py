"""Sourced cost sets and generator technologies, read from ``microgrid/data/*.toml``.

The numbers live in the data files with their publication, edition, table and dollar year
(``microgrid/data/cost_sets.toml``, ``microgrid/data/generators.toml``); this module only
reads them, moves them to one dollar year (CPI-U) and annualises capital with the capital
recovery factor. ``docs/microgrid.md`` ("Cost sets") lists the figures and their sources.

Examples
--------
>>> import microgrid as mg
>>> c = mg.costs("atb2024-moderate", year=2025, discount_rate=0.07)
>>> round(c.fuel_usd_per_kwh, 4)             # gas engines: 8,295 Btu/kWh of gas + VOM
0.0416
>>> round(mg.technology("gas_engine").emission_kg_per_kwh, 3)
0.44
"""

from __future__ import annotations

import functools
import math
import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from typing import Any

import numpy as np

from aiload._checks import check_number
from aiload._suggest import suggest
from aiload.errors import InputError
from microgrid.inputs import Costs, Generator, PricedGenerator, capital_recovery_factor

__all__ = [
    "CostSet",
    "GeneratorTechnology",
    "cost_set",
    "cost_set_names",
    "costs",
    "technology",
    "technology_names",
    "pv_kwp_per_ha",
    "priced_generator",
]

_BTU_PER_MMBTU = 1e6


@functools.cache
def _table(filename: str) -> dict[str, Any]:
    with resources.files("microgrid").joinpath("data", filename).open("rb") as fh:
        return tomllib.load(fh)


def _pick(kind: str, name: Any, options: dict[str, Any], how: str) -> Any:
    if not isinstance(name, str) or name not in options:
        hint = suggest(str(name), list(options))
        raise InputError(f"unknown {kind} {name!r}; expected one of {sorted(options)}.{hint} {how}")
    return options[name]


def _cpi_ratio(from_year: int, to_year: int) -> float:
    """USD of ``from_year`` in USD of ``to_year`` (CPI-U annual averages) [-]."""
    if not from_year or from_year == to_year:
        return 1.0
    cpi = {int(k): v for k, v in _table("cost_sets.toml")["cpi_u"]["annual_average"].items()}
    return cpi[to_year] / cpi[from_year]


@dataclass(frozen=True)
class GeneratorTechnology:
    """A named generator technology from ``microgrid/data/generators.toml``.

    Attributes
    ----------
    name, description, fuel : str
        Key, what it is, and its fuel (a key of a cost set's fuel table).
    capex_usd_per_kw : float
        Overnight capital [USD/kW] in USD of ``dollar_year``.
    fixed_om_usd_per_kw_year : float
        Fixed O&M [USD/kW/year].
    variable_om_usd_per_mwh : float
        Variable O&M [USD/MWh].
    heat_rate_btu_per_kwh : float
        Full-load heat rate, higher heating value [Btu/kWh].
    kg_co2_per_mmbtu : float
        CO2 of the fuel [kg/MMBtu].
    life_years : float
        Economic life for annualisation [year].
    unit_size_kw : float
        Size of one unit of the reference plant [kW].
    min_load_fraction : float
        Lowest stable output of a running unit [-]; used only with unit commitment.
    max_run_hours_per_year : float
        Permit cap on running hours [h/year]; inf: none.
    dollar_year : int
        Dollar year of the money figures.
    citation : str
        The publication the figures come from.
    emergency_only : bool
        Permitted as an emergency engine: runs only in grid outages (``Generator``).
    """

    name: str
    description: str
    fuel: str
    capex_usd_per_kw: float
    fixed_om_usd_per_kw_year: float
    variable_om_usd_per_mwh: float
    heat_rate_btu_per_kwh: float
    kg_co2_per_mmbtu: float
    life_years: float
    unit_size_kw: float
    min_load_fraction: float
    max_run_hours_per_year: float
    dollar_year: int
    citation: str
    emergency_only: bool = False

    @property
    def emission_kg_per_kwh(self) -> float:
        """CO2 per kWh generated at full-load heat rate [kg/kWh]."""
        return self.heat_rate_btu_per_kwh / _BTU_PER_MMBTU * self.kg_co2_per_mmbtu

    def fuel_usd_per_kwh(self, fuel_usd_per_mmbtu: float) -> float:
        """Fuel at full-load heat rate plus variable O&M [USD/kWh] (same dollar year)."""
        fuel_usd_per_mmbtu = check_number(fuel_usd_per_mmbtu, "fuel_usd_per_mmbtu", ge=0.0,
                                          unit="USD/MMBtu", hint="Natural gas is near 3.5.")
        return (self.heat_rate_btu_per_kwh / _BTU_PER_MMBTU * fuel_usd_per_mmbtu
                + self.variable_om_usd_per_mwh / 1000.0)

    def generator(self, *, unit_commitment: bool = False, **overrides: Any) -> Generator:
        """A :class:`Generator` with this technology's emissions and run-hour cap.

        The LP leaves the minimum load out (``docs/formulation.md``, "Minimum load in the
        LP"); ``unit_commitment=True`` keeps it, with integer units of ``unit_size_kw``
        (eq. 17, a MILP: slow on a year). ``overrides`` replace single fields.
        """
        if not isinstance(unit_commitment, (bool, np.bool_)):
            raise InputError(f"unit_commitment: expected True or False, got {unit_commitment!r}.")
        kwargs: dict[str, Any] = {
            "emission_kg_per_kwh": self.emission_kg_per_kwh,
            "max_run_hours_per_year": self.max_run_hours_per_year,
            "emergency_only": self.emergency_only,
        }
        if unit_commitment:
            kwargs.update(min_load_fraction=self.min_load_fraction,
                          unit_size_kw=self.unit_size_kw)
        kwargs.update(overrides)
        try:
            return Generator(**kwargs)
        except TypeError as exc:
            raise InputError(f"technology {self.name!r}: {exc}; see microgrid.Generator.") from None


def technology_names() -> tuple[str, ...]:
    """The bundled generator technologies."""
    return tuple(_table("generators.toml")["technologies"])


def technology(name: str) -> GeneratorTechnology:
    """A bundled generator technology by name (``technology_names()``)."""
    data = _table("generators.toml")
    raw = _pick("generator technology", name, data["technologies"],
                "See microgrid/data/generators.toml.")
    src = data["sources"][raw["source"]]
    return GeneratorTechnology(
        name=name,
        description=raw["description"],
        fuel=raw["fuel"],
        capex_usd_per_kw=raw["capex_usd_per_kw"],
        fixed_om_usd_per_kw_year=raw["fixed_om_usd_per_kw_year"],
        variable_om_usd_per_mwh=raw["variable_om_usd_per_mwh"],
        heat_rate_btu_per_kwh=raw["heat_rate_btu_per_kwh"],
        kg_co2_per_mmbtu=data["fuels"][raw["fuel"]]["kg_co2_per_mmbtu"],
        life_years=raw["life_years"],
        unit_size_kw=raw["unit_size_kw"],
        min_load_fraction=raw["min_load_fraction"],
        max_run_hours_per_year=raw.get("max_run_hours_per_year", math.inf),
        emergency_only=raw.get("emergency_only", False),
        dollar_year=src["dollar_year"],
        citation=src["citation"],
    )


@dataclass(frozen=True)
class CostSet:
    """A bundled cost set: its raw table, dollar year, years and citations.

    Attributes
    ----------
    name, description : str
    dollar_year : int
        Dollar year every figure of :func:`costs` is expressed in.
    years : tuple of int
        Cost years the set has figures for.
    citations : dict
        Source key -> citation, of every source the set uses.
    table : dict
        The set's table as read from ``cost_sets.toml``.
    """

    name: str
    description: str
    dollar_year: int
    years: tuple[int, ...]
    citations: dict[str, str]
    table: dict[str, Any]

    def check_year(self, year: int | None) -> int:
        """``year`` if the set has it (None: the first) [year]; otherwise an InputError."""
        if year is None:
            return self.years[0]
        if isinstance(year, (bool, np.bool_)) or not isinstance(year, (int, np.integer)):
            raise InputError(
                f"cost set {self.name!r}: year must be an int such as {self.years[0]} (or None "
                f"for the first), got {year!r} ({type(year).__name__})."
            )
        if year not in self.years:
            raise InputError(
                f"cost set {self.name!r} has no figures for year {year!r}; expected one of "
                f"{list(self.years)} (no interpolation). Pick one of them or add the year "
                "to microgrid/data/cost_sets.toml with its source."
            )
        return int(year)

    def carbon_price_usd_per_t(self, year: int | None = None) -> float:
        """The set's carbon price for ``year`` in USD of ``dollar_year`` [USD/t CO2]."""
        carbon = self.table["carbon"]
        value = carbon["price_usd_per_t"][str(self.check_year(year))]
        return value * self._ratio(carbon["source"])

    def figures(self, year: int | None = None,
                technologies: tuple[str, ...] = ()) -> list[dict[str, str]]:
        """The figures a sizing takes from this set, each with its source and how it was
        entered (``transcribed``, ``approximate``, ``derived``; see ``cost_sets.toml``).

        Parameters
        ----------
        year : int, optional
            Cost year (``check_year``).
        technologies : tuple of str
            Generator technologies priced by the set (``technology_names()``).

        Returns
        -------
        list of dict
            ``part``, ``figure`` (with units, in the source's dollars), ``entry``,
            ``source`` (the citation).
        """
        y = str(self.check_year(year))
        t, data = self.table, _table("cost_sets.toml")
        cite = {k: v["citation"] for k, v in data["sources"].items()}
        pv, bat, fuel = t["pv"], t["battery"], t["fuel"]
        rows = [
            ("PV", f"{pv['capex_usd_per_kwdc'][y]:,.0f} USD/kWdc + "
                   f"{pv['fixed_om_usd_per_kwdc_year'][y]:g} USD/kWdc-yr, {pv['life_years']} y",
             pv["entry"], pv["source"]),
            ("battery", f"{bat['energy_capex_usd_per_kwh'][y]:g} USD/kWh + "
                        f"{bat['power_capex_usd_per_kw'][y]:g} USD/kW, O&M "
                        f"{bat['fixed_om_fraction_per_year']:.1%}/yr, {bat['life_years']} y",
             bat["entry"], bat["source"]),
            ("grid energy", f"{t['grid']['import_usd_per_kwh']:g} USD/kWh", t["grid"]["entry"],
             t["grid"]["source"]),
        ]
        gens = _table("generators.toml")
        for name in technologies:
            raw = gens["technologies"][name]
            rows.append((f"generator: {name}",
                         f"{raw['capex_usd_per_kw']:,.0f} USD/kW + "
                         f"{raw['fixed_om_usd_per_kw_year']:g} USD/kW-yr + "
                         f"{raw['variable_om_usd_per_mwh']:g} USD/MWh, "
                         f"{raw['heat_rate_btu_per_kwh']:,.0f} Btu/kWh, {raw['life_years']} y",
                         raw["entry"], raw["source"]))
            if "max_run_hours_per_year" in raw:
                rows.append((f"run-hour cap: {name}", f"{raw['max_run_hours_per_year']:g} h/yr",
                             "transcribed", raw["max_run_hours_source"]))
            f = raw["fuel"]
            rows.append((f"fuel: {f}", f"{fuel[f + '_usd_per_mmbtu']:g} USD/MMBtu",
                         fuel[f + "_entry"], fuel[f + "_source"]))
            rows.append((f"CO2 of {f}", f"{gens['fuels'][f]['kg_co2_per_mmbtu']:g} kg/MMBtu",
                         gens["fuels"][f]["entry"], gens["fuels"][f]["source"]))
        carbon, land = t["carbon"], data["land"]["pv_fixed_tilt"]
        rows += [
            ("carbon price", f"{carbon['price_usd_per_t'][y]:g} USD/t CO2", carbon["entry"],
             carbon["source"]),
            ("PV land density", f"{land['kwdc_per_ha']:g} kWdc/ha", land["entry"],
             land["source"]),
            ("dollar-year conversion", "CPI-U annual averages", data["cpi_u"]["entry"],
             data["cpi_u"]["source"]),
        ]
        all_cites = {**cite, **{k: v["citation"] for k, v in gens["sources"].items()}}
        seen: set = set()
        unique = [r for r in rows if not (r[0] in seen or seen.add(r[0]))]
        return [{"part": p, "figure": v, "entry": e, "source": all_cites[src]}
                for p, v, e, src in unique]

    def _ratio(self, source: str) -> float:
        sources = _table("cost_sets.toml")["sources"]
        return _cpi_ratio(sources[source]["dollar_year"], self.dollar_year)


def cost_set_names() -> tuple[str, ...]:
    """The bundled cost sets."""
    return tuple(_table("cost_sets.toml")["sets"])


def cost_set(name: str) -> CostSet:
    """A bundled cost set by name (``cost_set_names()``)."""
    data = _table("cost_sets.toml")
    raw = _pick("cost set", name, data["sets"], "See microgrid/data/cost_sets.toml.")
    used = {part["source"] for part in raw.values() if isinstance(part, dict) and "source" in part}
    used |= {v for part in raw.values() if isinstance(part, dict)
             for k, v in part.items() if k.endswith("_source")}
    used |= {"bls_cpi_u", "ong2013"}
    return CostSet(
        name=name,
        description=raw["description"],
        dollar_year=raw["dollar_year"],
        years=tuple(raw["years"]),
        citations={k: data["sources"][k]["citation"] for k in sorted(used)},
        table=raw,
    )


def costs(
    name: str,
    *,
    year: int | None = None,
    discount_rate: float = 0.07,
    generator: str | None = "gas_engine",
    **overrides: float,
) -> Costs:
    """Annualised :class:`Costs` from a bundled, cited cost set.

    Capital is annualised as overnight cost x ``capital_recovery_factor(discount_rate,
    life)`` plus fixed O&M; every figure is moved to the set's dollar year with CPI-U.

    Parameters
    ----------
    name : str
        A cost set (``cost_set_names()``), e.g. ``"atb2024-moderate"``.
    year : int, optional
        Cost year (one of the set's ``years``); default the first [year].
    discount_rate : float
        Real discount rate of the capital recovery factor [1/year].
    generator : str or None
        Generator technology priced as ``generator_usd_per_kw_year`` and
        ``fuel_usd_per_kwh`` (``technology_names()``); None: both 0 (forbid generation
        with ``Generator(max_power_kw=0)``).
    **overrides : float
        Single :class:`Costs` fields that replace the set's value, e.g.
        ``demand_charge_usd_per_kw_month=12``.

    Returns
    -------
    Costs
    """
    cs = cost_set(name)
    year_key = str(cs.check_year(year))
    rate = check_number(discount_rate, "costs: discount_rate", ge=0.0, lt=1.0, unit="1/year",
                        hint="Give a real rate as a fraction, e.g. 0.07.")
    known = {f.name for f in fields(Costs)}
    for key in overrides:
        if key not in known:
            raise InputError(
                f"costs: {key!r} is not a field of microgrid.Costs; expected one of "
                f"{sorted(known)}.{suggest(key, sorted(known))}"
            )
    t = cs.table
    pv, bat = t["pv"], t["battery"]
    crf_pv = capital_recovery_factor(rate, pv["life_years"])
    crf_b = capital_recovery_factor(rate, bat["life_years"])
    r_pv, r_b = cs._ratio(pv["source"]), cs._ratio(bat["source"])
    om = bat["fixed_om_fraction_per_year"]
    e_capex = bat["energy_capex_usd_per_kwh"][year_key]
    p_capex = bat["power_capex_usd_per_kw"][year_key]
    values: dict[str, float] = {
        "pv_usd_per_kwp_year": r_pv * (pv["capex_usd_per_kwdc"][year_key] * crf_pv
                                       + pv["fixed_om_usd_per_kwdc_year"][year_key]),
        "battery_usd_per_kwh_year": r_b * e_capex * (crf_b + om),
        "battery_usd_per_kw_year": r_b * p_capex * (crf_b + om),
        "battery_throughput_usd_per_kwh": r_b * bat["throughput_usd_per_kwh"],
        "import_usd_per_kwh": t["grid"]["import_usd_per_kwh"] * cs._ratio(t["grid"]["source"]),
        "generator_usd_per_kw_year": 0.0,
        "fuel_usd_per_kwh": 0.0,
    }
    if generator is not None:
        values["generator_usd_per_kw_year"], values["fuel_usd_per_kwh"] = _generator_prices(
            cs, generator, rate)
    values.update(overrides)
    return Costs(**values)


def _generator_prices(cs: CostSet, name: str, rate: float) -> tuple[float, float]:
    """(capital recovery + fixed O&M [USD/kW/year], fuel + variable O&M [USD/kWh]) of the
    technology ``name`` in the set's dollars."""
    tech = technology(name)
    fuel = cs.table["fuel"]
    if f"{tech.fuel}_usd_per_mmbtu" not in fuel:
        raise InputError(f"cost set {cs.name!r} has no price for fuel {tech.fuel!r}.")
    price = fuel[f"{tech.fuel}_usd_per_mmbtu"] * cs._ratio(fuel[f"{tech.fuel}_source"])
    r_g = _cpi_ratio(tech.dollar_year, cs.dollar_year)
    capital = r_g * (tech.capex_usd_per_kw * capital_recovery_factor(rate, tech.life_years)
                     + tech.fixed_om_usd_per_kw_year)
    # fuel is already in the set's dollars; variable O&M moves from the technology's
    return capital, (tech.heat_rate_btu_per_kwh / _BTU_PER_MMBTU * price
                     + r_g * tech.variable_om_usd_per_mwh / 1000.0)


def priced_generator(
    name: str,
    technology_name: str,
    *,
    year: int | None = None,
    discount_rate: float = 0.07,
    **overrides: Any,
) -> PricedGenerator:
    """A further generator technology priced by a cost set, for ``size(extra_generators=...)``.

    Parameters
    ----------
    name : str
        A cost set (``cost_set_names()``); it prices the fuel.
    technology_name : str
        A technology (``technology_names()``), e.g. ``"diesel"``.
    year, discount_rate
        As in :func:`costs` (``year`` is checked against the set).
    **overrides
        :class:`Generator` fields, e.g. ``max_power_kw=20_000`` or
        ``max_run_hours_per_year=50``.

    Examples
    --------
    >>> import microgrid as mg
    >>> g = mg.priced_generator("atb2024-moderate", "diesel")
    >>> g.name, g.generator.max_run_hours_per_year
    ('diesel', 100.0)
    """
    cs = cost_set(name)
    cs.check_year(year)
    rate = check_number(discount_rate, "priced_generator: discount_rate", ge=0.0, lt=1.0,
                        unit="1/year", hint="Give a real rate as a fraction, e.g. 0.07.")
    capital, fuel = _generator_prices(cs, technology_name, rate)
    return PricedGenerator(technology_name, technology(technology_name).generator(**overrides),
                           capital, fuel)


def pv_kwp_per_ha() -> float:
    """Documented PV power density of fixed-tilt plants, total site area [kWdc/ha].

    From ``cost_sets.toml`` ``[land.pv_fixed_tilt]``: Ong et al. (2013), NREL/TP-6A20-56290.
    """
    return float(_table("cost_sets.toml")["land"]["pv_fixed_tilt"]["kwdc_per_ha"])
