"""What every mitigation returns: its size, its figures and its series at the POI."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from aiload.errors import InputError

__all__ = ["Mitigated", "Prices", "SERIES_COLUMNS", "YEAR_S"]

YEAR_S = 365.0 * 86400.0
#: columns of each mitigated series [kW, kWh]
SERIES_COLUMNS = ("load_kw", "poi_kw", "burned_kw", "withheld_kw", "storage_kw", "losses_kw",
                  "soc_kwh")


@dataclass(frozen=True)
class Prices:
    """Prices the options are costed with (USD of the cost set's year).

    Parameters
    ----------
    energy_usd_per_kwh : float
        Price of the energy bought at the POI: what burned and lost energy costs [USD/kWh].
    battery_usd_per_kwh_year, battery_usd_per_kw_year : float
        Annualised capital and fixed O&M of a site battery [USD/kWh/year], [USD/kW/year].
    source : str
        Where the numbers come from.
    """

    energy_usd_per_kwh: float
    battery_usd_per_kwh_year: float
    battery_usd_per_kw_year: float
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("energy_usd_per_kwh", "battery_usd_per_kwh_year", "battery_usd_per_kw_year"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise InputError(f"Prices.{name}: got {v!r}; expected a finite price >= 0.")

    @classmethod
    def default(cls) -> Prices:
        """The bundled cost set's battery and grid-energy prices (``microgrid.costs``)."""
        from microgrid.costsets import cost_set_names, costs  # noqa: PLC0415

        name = cost_set_names()[0]
        c = costs(name, generator=None)
        return cls(float(c.import_usd_per_kwh), c.battery_usd_per_kwh_year,
                   c.battery_usd_per_kw_year,
                   source=f"microgrid.costs({name!r}): NREL ATB 2024 / Cole et al. 2023 "
                          "(battery, 15-year life, 7 % real rate), grid energy of the set")


@dataclass
class Mitigated:
    """One option's outcome.

    ``columns`` holds the series of :data:`SERIES_COLUMNS` as arrays on the load's steps;
    ``parameters`` the sized parameters (units in the names); ``figures`` what
    :func:`~microgrid.stabilise.limits.evaluate` says of ``poi_kw``.
    """

    option: str
    parameters: dict
    columns: dict
    figures: dict
    power_kw: float = 0.0
    energy_kwh: float = 0.0
    capital_usd_per_year: float = 0.0
    notes: list = field(default_factory=list)

    def balance_error(self, dt_s: float) -> float:
        """Relative error of ``Σpoi = Σ(load + burned − withheld + losses)·dt + Δsoc`` [-]."""
        c = self.columns
        h = dt_s / 3600.0
        poi = float(np.sum(c["poi_kw"])) * h
        rhs = (float(np.sum(c["load_kw"])) + float(np.sum(c["burned_kw"]))
               - float(np.sum(c["withheld_kw"])) + float(np.sum(c["losses_kw"]))) * h
        soc = c["soc_kwh"]
        rhs += float(soc[-1] - self.soc_start_kwh) if soc.size else 0.0
        return abs(poi - rhs) / max(abs(poi), 1e-300)

    soc_start_kwh: float = 0.0
