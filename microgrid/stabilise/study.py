"""``stabilise``: size and compare what holds a POI limit, and say which is cheapest.

Each option (:class:`~microgrid.stabilise.smoothing.GpuSmoothing`,
:class:`~microgrid.stabilise.psu.PsuStorage`,
:class:`~microgrid.stabilise.battery.SiteBattery`) sizes its own free parameters (the
smallest that meet every limit) and returns its POI series; a combination runs GPU smoothing
at its ramp limits without a floor (it turns the falls into burned energy) and sizes the
storage on what is left. Costs per year: storage capital and fixed O&M annualised, burned
and lost energy at the energy price.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from aiload.errors import InputError
from aiload.timeseries import validate_power_series
from microgrid.stabilise._option import SERIES_COLUMNS, YEAR_S, Mitigated, Prices
from microgrid.stabilise.battery import SiteBattery
from microgrid.stabilise.limits import PoiLimits, evaluate
from microgrid.stabilise.psu import PsuStorage
from microgrid.stabilise.smoothing import GpuSmoothing

__all__ = ["stabilise", "Stabilisation", "OPTION_COLUMNS", "BALANCE_TOLERANCE"]

#: relative error of the energy balance every option must meet (else a bug: an error)
BALANCE_TOLERANCE = 1e-9
#: columns of :attr:`Stabilisation.options`
OPTION_COLUMNS = [
    "option", "limits_met", "kw", "kwh", "energy_burned_kwh_per_year",
    "energy_withheld_kwh_per_year", "losses_kwh_per_year", "cost_usd_per_year",
    "capital_usd_per_year", "energy_cost_usd_per_year", "equivalent_full_cycles_per_year",
    "ramp_up_mw_per_s", "ramp_down_mw_per_s", "band_amplitude_mw", "band_energy_share",
    "min_power_kw", "balance_error", "parameters", "notes",
]


@dataclass(frozen=True)
class Stabilisation:
    """What :func:`stabilise` returns.

    Attributes
    ----------
    options : pandas.DataFrame
        One row per option (:data:`OPTION_COLUMNS`; ``"none"`` first: the load as it is),
        energies per year [kWh/year], costs [USD/year], sizes [kW, kWh], figures at the POI.
    cheapest : str or None
        The cheapest option that meets every limit (None: none does).
    limits : PoiLimits
    meta : dict
        Step, span, prices and their source, wall time.
    """

    options: pd.DataFrame
    cheapest: str | None
    limits: PoiLimits
    meta: dict
    _runs: dict = dataclasses.field(repr=False, default_factory=dict)
    _index: pd.Index | None = dataclasses.field(repr=False, default=None)

    def series(self, option: str) -> pd.DataFrame:
        """The mitigated series of ``option`` on the load's index: ``load_kw``, ``poi_kw``,
        ``burned_kw``, ``withheld_kw``, ``storage_kw`` (> 0 discharge), ``losses_kw`` [kW],
        ``soc_kwh`` [kWh]."""
        if option not in self._runs:
            raise InputError(f"Stabilisation.series: no option {option!r}; expected one of "
                             f"{sorted(self._runs)}.")
        cols = self._runs[option].columns
        return pd.DataFrame({c: cols[c] for c in SERIES_COLUMNS}, index=self._index)


def _combine(name: str, smooth: Mitigated, store: Mitigated) -> Mitigated:
    cols = dict(store.columns)
    cols |= {"load_kw": smooth.columns["load_kw"], "burned_kw": smooth.columns["burned_kw"],
             "withheld_kw": smooth.columns["withheld_kw"]}
    params = {f"smoothing.{k}": v for k, v in smooth.parameters.items()}
    params |= {f"storage.{k}": v for k, v in store.parameters.items()}
    m = Mitigated(name, params, cols, store.figures, power_kw=store.power_kw,
                  energy_kwh=store.energy_kwh, notes=smooth.notes + store.notes)
    m.soc_start_kwh = store.soc_start_kwh
    return m


def _row(m: Mitigated, store, prices: Prices, dt_s: float, span_s: float) -> dict:
    c = m.columns
    year = YEAR_S / span_s
    h = dt_s / 3600.0
    burned = float(np.sum(c["burned_kw"])) * h * year
    withheld = float(np.sum(c["withheld_kw"])) * h * year
    lost = float(np.sum(c["losses_kw"])) * h * year
    capital = 0.0
    if store is not None:
        per_kwh, per_kw = store.prices(prices)
        capital = m.energy_kwh * per_kwh + m.power_kw * per_kw
    energy_cost = (burned + lost) * prices.energy_usd_per_kwh
    discharged = float(np.sum(np.maximum(c["storage_kw"], 0.0))) * h * year
    f = m.figures
    return {
        "option": m.option, "limits_met": bool(f["met"]), "kw": m.power_kw, "kwh": m.energy_kwh,
        "energy_burned_kwh_per_year": burned, "energy_withheld_kwh_per_year": withheld,
        "losses_kwh_per_year": lost, "cost_usd_per_year": capital + energy_cost,
        "capital_usd_per_year": capital, "energy_cost_usd_per_year": energy_cost,
        "equivalent_full_cycles_per_year": discharged / m.energy_kwh if m.energy_kwh > 0 else 0.0,
        "ramp_up_mw_per_s": f["ramp_up_mw_per_s"], "ramp_down_mw_per_s": f["ramp_down_mw_per_s"],
        "band_amplitude_mw": f["band_amplitude_mw"], "band_energy_share": f["band_energy_share"],
        "min_power_kw": f["min_power_kw"], "balance_error": m.balance_error(dt_s),
        "parameters": m.parameters, "notes": "; ".join(m.notes),
    }


def stabilise(load_kw: pd.Series, limits: PoiLimits, *, options=None, gpus: int | None = None,
              combinations: bool = True, prices: Prices | None = None) -> Stabilisation:
    """Size GPU smoothing, PSU storage, a site battery and combinations to hold POI limits.

    Parameters
    ----------
    load_kw : pandas.Series
        Facility power at the POI without mitigation, interval means on a fixed step
        (0.1 s resolves the iteration cycle of synchronous training) [kW]; a tz-aware
        DatetimeIndex or a TimedeltaIndex.
    limits : PoiLimits
        What the POI allows.
    options : sequence of option objects, optional
        Default: ``GpuSmoothing(gpus)`` (when ``gpus`` is given), ``PsuStorage(gpus=gpus)``
        and ``SiteBattery()``; each sizes its unset parameters.
    gpus : int, optional
        GPUs of the facility, for the default options.
    combinations : bool
        Add GPU smoothing (ramp limits, no floor) + each storage option.
    prices : Prices, optional
        Default :meth:`Prices.default` (the bundled cost set).

    Returns
    -------
    Stabilisation

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> idx = pd.to_timedelta(np.arange(6000) * 0.1, unit="s")
    >>> load = pd.Series(1000 + 200 * (np.arange(6000) // 20 % 2), index=idx, name="facility_kw")
    >>> res = stabilise(load, PoiLimits(ramp_up_mw_per_s=0.05, ramp_down_mw_per_s=0.05),
    ...                 gpus=1000)
    >>> res.options.set_index("option").loc["none", "limits_met"]
    False
    """
    t0 = time.perf_counter()
    if not isinstance(limits, PoiLimits):
        raise InputError(f"stabilise(limits=): expected a microgrid.PoiLimits, got "
                         f"{type(limits).__name__}.")
    dt_s = validate_power_series(load_kw, "stabilise(load_kw=)", absolute=False)
    values = load_kw.to_numpy(dtype=np.float64).copy()
    span_s = values.size * dt_s
    prices = Prices.default() if prices is None else prices
    if options is None:
        options = ([GpuSmoothing(gpus=gpus)] if gpus is not None else []) + [
            PsuStorage(gpus=gpus), SiteBattery()]
    names = [o.name for o in options]
    if len(set(names)) != len(names):
        raise InputError(f"stabilise(options=): option names repeat: {names}; give each a "
                         "distinct name= .")
    runs: dict[str, Mitigated] = {}
    stores: dict[str, object] = {}
    zeros = np.zeros(values.size)
    runs["none"] = Mitigated("none", {}, {"load_kw": values, "poi_kw": values, "burned_kw": zeros,
                                          "withheld_kw": zeros, "storage_kw": zeros,
                                          "losses_kw": zeros, "soc_kwh": zeros},
                             evaluate(values, dt_s, limits))
    stores["none"] = None
    for opt in options:
        runs[opt.name] = opt.run(values, dt_s, limits, prices)
        stores[opt.name] = None if isinstance(opt, GpuSmoothing) else opt
    if combinations:
        for g in [o for o in options if isinstance(o, GpuSmoothing)]:
            ramps = g.run(values, dt_s, limits, prices, floor_pct=0.0)
            for s in [o for o in options if isinstance(o, (SiteBattery, PsuStorage))]:
                stored = s.run(ramps.columns["poi_kw"], dt_s, limits, prices)
                name = f"{g.name} (ramps) + {s.name}"
                runs[name] = _combine(name, ramps, stored)
                stores[name] = s
    rows = [_row(m, stores[k], prices, dt_s, span_s) for k, m in runs.items()]
    table = pd.DataFrame(rows, columns=OPTION_COLUMNS)
    bad = table[table["balance_error"] > BALANCE_TOLERANCE]
    if len(bad):
        raise RuntimeError(f"stabilise: energy balance off for {list(bad['option'])} "
                           f"({bad['balance_error'].max():.3g} relative): a bug, please report.")
    met = table[table["limits_met"]]
    cheapest = None if met.empty else str(met.loc[met["cost_usd_per_year"].idxmin(), "option"])
    meta = {"dt_s": dt_s, "span_s": span_s, "prices": prices, "price_source": prices.source,
            "wall_s": time.perf_counter() - t0}
    return Stabilisation(table, cheapest, limits, meta, runs, load_kw.index)
