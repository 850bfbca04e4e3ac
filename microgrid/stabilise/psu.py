"""Rack / PSU energy storage: capacitors or cells in the racks' power shelves.

NVIDIA's GB300 NVL72 power shelves store energy to ride through the GPUs' load steps and,
with the GPUs' power smoothing, cut the peak grid demand by up to 30 % (NVIDIA, "How New
GB300 NVL72 Features Provide Steady Power for AI", technical blog, 2025). Its control is
modelled as the site battery's (:mod:`microgrid.stabilise.battery`: a ramp-limited track of
a filtered setpoint) with storage of seconds, near-lossless conversion and a cost per kWh of
fast storage. No capacity or price is published: the defaults below are **assumptions**,
labelled as such in the option's notes; give your own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from aiload.errors import InputError
from microgrid.stabilise._option import Mitigated, Prices
from microgrid.stabilise.battery import _fraction, check_restore, run_storage
from microgrid.stabilise.limits import PoiLimits

__all__ = ["PsuStorage", "PSU_CAPITAL_USD_PER_KWH", "PSU_LIFE_YEARS"]

#: capital of fast (capacitor-class) storage in a power shelf [USD/kWh] -- an assumption of
#: the order of supercapacitor module prices, not a published GB300 figure
PSU_CAPITAL_USD_PER_KWH = 10_000.0
#: life of the rack storage [year] -- an assumption (a server refresh)
PSU_LIFE_YEARS = 6.0


def _crf(rate: float, years: float) -> float:
    return rate * (1 + rate) ** years / ((1 + rate) ** years - 1) if rate else 1 / years


@dataclass(frozen=True)
class PsuStorage:
    """Storage in the racks' power supplies.

    Parameters
    ----------
    gpus : int, optional
        GPUs whose racks hold the storage [-]: with ``max_wh_per_gpu`` it caps the energy.
    max_wh_per_gpu : float, optional
        Most energy the power shelves can hold per GPU [Wh]; None: no cap (an assumption to
        replace with the hardware's figure).
    tau_s : float, optional
        Setpoint filter time constant [s]; None: sized (at most ``max_tau_s``).
    charge_efficiency, discharge_efficiency : float
        [-]; 0.98 each (assumption: capacitor-class storage).
    usable_fraction : float
        Usable share of the capacity [-] (1.0, assumption).
    usd_per_kwh_year : float, optional
        Annualised cost [USD/kWh/year]; None: :data:`PSU_CAPITAL_USD_PER_KWH` over
        :data:`PSU_LIFE_YEARS` at 7 % (assumption).
    usd_per_kw_year : float
        Annualised cost of the power [USD/kW/year]; 0 (assumption: the PSU is there anyway).
    max_tau_s : float
        Largest time constant tried [s] (60: storage of seconds).
    soc_restore_s : float or None
        Time over which the losses are bought back from the grid [s] (600, assumption; see
        :class:`~microgrid.stabilise.battery.SiteBattery`).
    """

    gpus: int | None = None
    max_wh_per_gpu: float | None = None
    tau_s: float | None = None
    charge_efficiency: float = 0.98
    discharge_efficiency: float = 0.98
    usable_fraction: float = 1.0
    usd_per_kwh_year: float | None = None
    usd_per_kw_year: float = 0.0
    max_tau_s: float = 60.0
    soc_restore_s: float | None = 600.0
    name: str = "psu storage"

    def __post_init__(self) -> None:
        for n in ("charge_efficiency", "discharge_efficiency", "usable_fraction"):
            _fraction("PsuStorage", n, getattr(self, n))
        if (self.max_wh_per_gpu is None) != (self.gpus is None) and self.max_wh_per_gpu is not None:
            raise InputError("PsuStorage: max_wh_per_gpu needs gpus (the GPUs whose racks hold "
                             f"the storage); got gpus={self.gpus!r}.")
        if not (self.max_tau_s > 0 and math.isfinite(self.max_tau_s)):
            raise InputError(f"PsuStorage.max_tau_s: got {self.max_tau_s!r}; expected > 0 [s].")
        check_restore("PsuStorage", self.soc_restore_s)

    @property
    def notes(self) -> tuple[str, ...]:
        out = ["assumption: PSU storage price "
               f"{PSU_CAPITAL_USD_PER_KWH:,.0f} USD/kWh over {PSU_LIFE_YEARS:g} years"
               if self.usd_per_kwh_year is None else "",
               "assumption: 98 % charge and discharge efficiency"]
        if self.soc_restore_s is not None:
            out.append(f"assumption: losses bought back from the grid over "
                       f"{self.soc_restore_s:g} s")
        if self.max_wh_per_gpu is None:
            out.append("assumption: no cap on the energy per GPU")
        return tuple(n for n in out if n)

    def extra_parameters(self, power_kw: float, energy_kwh: float) -> dict:
        return {} if self.gpus is None else {"wh_per_gpu": energy_kwh * 1e3 / self.gpus}

    def feasible(self, power_kw: float, energy_kwh: float) -> tuple[bool, str]:
        if self.max_wh_per_gpu is None:
            return True, ""
        need = energy_kwh * 1e3 / self.gpus
        if need > self.max_wh_per_gpu:
            return False, (f"needs {need:.3g} Wh per GPU, more than the {self.max_wh_per_gpu:g} "
                           "Wh the power shelves hold")
        return True, ""

    def prices(self, prices: Prices) -> tuple[float, float]:
        per_kwh = (PSU_CAPITAL_USD_PER_KWH * _crf(0.07, PSU_LIFE_YEARS)
                   if self.usd_per_kwh_year is None else self.usd_per_kwh_year)
        return per_kwh, self.usd_per_kw_year

    def run(self, load_kw, dt_s, limits: PoiLimits, prices: Prices, tau_s=None) -> Mitigated:
        return run_storage(self, load_kw, dt_s, limits, tau_s)
