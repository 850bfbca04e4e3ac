"""A site battery whose control tracks a filtered setpoint.

The grid-side setpoint is the load's exponential moving average with time constant ``tau``,
less a slow correction of the stored energy (the losses are bought back from the grid over
``T_r``, instead of draining the store: without it the stored energy drifts down by the
losses and the size grows with the length of the series), followed at no more than the POI's
ramp limits; the battery delivers the difference:

    f_k = f_{k-1} + α (L_k − f_{k-1}),   α = Δt / (τ + Δt)
    g_k = g_{k-1} + clip(f_k − E_{k-1}/T_r − g_{k-1}, −D Δt, U Δt)   (POI power)
    b_k = L_k − g_k                                            (> 0 discharge)

(``E`` the stored energy relative to the start [kWh], ``T_r`` in hours; no correction when
``soc_restore_s`` is None.)

Stored energy falls by ``b Δt / η_d`` on discharge and rises by ``|b| η_c Δt`` on charge;
the difference to ``|b| Δt`` is lost. Every kWh is accounted for:
``Σ g Δt = Σ L Δt + ΔE + Σ losses Δt``. The battery is sized to the run: power the largest
``|b|``, energy the range of the stored energy over the usable share of the capacity; ``τ``
is the smallest that meets the band limit (bisection; the ramp limits hold by construction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aiload.errors import InputError
from microgrid.stabilise._loops import empty, loops
from microgrid.stabilise._option import Mitigated, Prices
from microgrid.stabilise.limits import PoiLimits, evaluate

__all__ = ["SiteBattery", "track_setpoint", "storage_energy", "run_storage"]


def track_setpoint(load_kw: np.ndarray, dt_s: float, *, tau_s: float = 0.0,
                   ramp_up_kw_per_s: float = math.inf,
                   ramp_down_kw_per_s: float = math.inf, soc_restore_s: float | None = None,
                   charge_efficiency: float = 1.0,
                   discharge_efficiency: float = 1.0) -> np.ndarray:
    """POI power of the tracking controller [kW] (module docstring; ``tau_s`` and
    ``soc_restore_s`` [s]; the efficiencies [-] give the stored energy the correction acts on).

    Examples
    --------
    >>> track_setpoint(np.array([0.0, 10.0, 10.0, 10.0]), 1.0, ramp_up_kw_per_s=4.0).tolist()
    [0.0, 4.0, 8.0, 10.0]
    """
    if not (tau_s >= 0 and math.isfinite(tau_s)):
        raise InputError(f"track_setpoint(tau_s=): got {tau_s!r}; expected a time >= 0 [s].")
    if soc_restore_s is not None and not (soc_restore_s > 0 and math.isfinite(soc_restore_s)):
        raise InputError(f"track_setpoint(soc_restore_s=): got {soc_restore_s!r}; expected a "
                         "time > 0 [s] or None (no correction).")
    gain = 0.0 if soc_restore_s is None else 3600.0 / soc_restore_s
    out = empty(load_kw.size)
    loops().track(np.ascontiguousarray(load_kw, dtype=np.float64), float(dt_s),
                  float(dt_s / (tau_s + dt_s)), float(ramp_up_kw_per_s),
                  float(ramp_down_kw_per_s), out, gain, float(charge_efficiency),
                  float(discharge_efficiency))
    return out


def storage_energy(storage_kw: np.ndarray, dt_s: float, eta_charge: float,
                   eta_discharge: float) -> tuple[np.ndarray, np.ndarray]:
    """Stored energy after each step, from 0 before the first [kWh], and the losses [kW]."""
    soc, loss = empty(storage_kw.size), empty(storage_kw.size)
    loops().stored(np.ascontiguousarray(storage_kw, dtype=np.float64), dt_s / 3600.0,
                   float(eta_charge), float(eta_discharge), soc, loss)
    return soc, loss


def check_restore(owner: str, value) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not (value > 0 and math.isfinite(value))):
        raise InputError(f"{owner}.soc_restore_s: got {value!r}; expected a time > 0 [s] "
                         "(e.g. 600) or None for no correction of the stored energy.")


def _fraction(owner: str, name: str, value, *, low_open: bool = True) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            (0 < value <= 1) if low_open else (0 <= value <= 1)):
        raise InputError(f"{owner}.{name}: got {value!r}; expected a fraction in (0, 1] "
                         "(0.95, not 95).")


def run_storage(store, load_kw: np.ndarray, dt_s: float, limits: PoiLimits,
                tau_s: float | None = None) -> Mitigated:
    """Size ``store`` (a :class:`SiteBattery` or PSU storage) and simulate it."""
    up = math.inf if limits.ramp_up_mw_per_s is None else limits.ramp_up_mw_per_s * 1e3
    down = math.inf if limits.ramp_down_mw_per_s is None else limits.ramp_down_mw_per_s * 1e3

    def attempt(tau):
        poi = track_setpoint(load_kw, dt_s, tau_s=tau, ramp_up_kw_per_s=up,
                             ramp_down_kw_per_s=down, soc_restore_s=store.soc_restore_s,
                             charge_efficiency=store.charge_efficiency,
                             discharge_efficiency=store.discharge_efficiency)
        return poi, evaluate(poi, dt_s, limits)

    notes = []
    tau = store.tau_s if tau_s is None else tau_s
    if tau is None:
        poi, figures = attempt(0.0)
        tau = 0.0
        if not figures["met"] and limits.has_band:
            hi = store.max_tau_s
            poi_hi, fig_hi = attempt(hi)
            if not fig_hi["met"]:
                poi, figures, tau = poi_hi, fig_hi, hi
                notes.append(f"band limit not met even with tau = {hi:g} s")
            else:
                lo, poi, figures = 0.0, poi_hi, fig_hi
                for _ in range(40):
                    if hi - lo <= max(1e-3 * hi, dt_s / 10):
                        break
                    mid = 0.5 * (lo + hi)
                    p_mid, f_mid = attempt(mid)
                    if f_mid["met"]:
                        hi, poi, figures = mid, p_mid, f_mid
                    else:
                        lo = mid
                tau = hi
    else:
        poi, figures = attempt(tau)
    storage = load_kw - poi
    soc, loss = storage_energy(storage, dt_s, store.charge_efficiency, store.discharge_efficiency)
    low, high = float(min(soc.min(), 0.0)), float(max(soc.max(), 0.0))
    energy = (high - low) / store.usable_fraction
    power = float(np.abs(storage).max())
    reserve = energy * (1.0 - store.usable_fraction) / 2.0
    soc_kwh = soc - low + reserve
    zeros = np.zeros(load_kw.size)
    cols = {"load_kw": load_kw, "poi_kw": poi, "burned_kw": zeros, "withheld_kw": zeros,
            "storage_kw": storage, "losses_kw": loss, "soc_kwh": soc_kwh}
    params = {"tau_s": tau, "soc_restore_s": store.soc_restore_s, "power_kw": power,
              "energy_kwh": energy,
              "round_trip_efficiency": store.charge_efficiency * store.discharge_efficiency}
    params |= store.extra_parameters(power, energy)
    ok, why = store.feasible(power, energy)
    if not ok:
        figures = dict(figures, met=False)
        notes.append(why)
    m = Mitigated(store.name, params, cols, figures, power_kw=power, energy_kwh=energy,
                  capital_usd_per_year=0.0, notes=notes + list(store.notes))
    m.soc_start_kwh = -low + reserve
    return m


@dataclass(frozen=True)
class SiteBattery:
    """A site battery behind the POI with the tracking control (module docstring).

    Parameters
    ----------
    tau_s : float, optional
        Setpoint filter time constant [s]; None: the smallest that meets the band limit.
    charge_efficiency, discharge_efficiency : float
        η_c, η_d [-] (0.95 each: ``microgrid.Battery``'s default, 90 % round trip).
    usable_fraction : float
        Share of the capacity the control may use [-]; 0.8 (assumption: a window kept for
        a fast-cycling duty).
    usd_per_kwh_year, usd_per_kw_year : float, optional
        Annualised cost [USD/kWh/year], [USD/kW/year]; None: :class:`Prices`' battery.
    max_tau_s : float
        Largest time constant the sizing tries [s].
    soc_restore_s : float or None
        Time over which the control buys the stored energy's deficit back from the grid [s]
        (600: an assumption, far below the 0.1 Hz band; None: no correction, the store
        drains by its losses).
    name : str
        Option name.
    """

    tau_s: float | None = None
    charge_efficiency: float = 0.95
    discharge_efficiency: float = 0.95
    usable_fraction: float = 0.8
    usd_per_kwh_year: float | None = None
    usd_per_kw_year: float | None = None
    max_tau_s: float = 3600.0
    soc_restore_s: float | None = 600.0
    name: str = "site battery"

    def __post_init__(self) -> None:
        for n in ("charge_efficiency", "discharge_efficiency", "usable_fraction"):
            _fraction(type(self).__name__, n, getattr(self, n))
        if self.tau_s is not None and not (self.tau_s >= 0 and math.isfinite(self.tau_s)):
            raise InputError(f"{type(self).__name__}.tau_s: got {self.tau_s!r}; expected >= 0 [s] "
                             "or None to size it.")
        check_restore(type(self).__name__, self.soc_restore_s)

    @property
    def notes(self) -> tuple[str, ...]:
        out = [f"assumption: usable share of the capacity {self.usable_fraction:g} "
               "(fast-cycling duty); cycle life not modelled (see equivalent full cycles)"]
        if self.soc_restore_s is not None:
            out.append(f"assumption: losses bought back from the grid over "
                       f"{self.soc_restore_s:g} s")
        return tuple(out)

    def extra_parameters(self, power_kw: float, energy_kwh: float) -> dict:
        return {}

    def feasible(self, power_kw: float, energy_kwh: float) -> tuple[bool, str]:
        return True, ""

    def prices(self, prices: Prices) -> tuple[float, float]:
        """(USD/kWh/year, USD/kW/year) of this storage."""
        return (prices.battery_usd_per_kwh_year if self.usd_per_kwh_year is None
                else self.usd_per_kwh_year,
                prices.battery_usd_per_kw_year if self.usd_per_kw_year is None
                else self.usd_per_kw_year)

    def run(self, load_kw, dt_s, limits, prices, tau_s=None) -> Mitigated:
        return run_storage(self, load_kw, dt_s, limits, tau_s)
