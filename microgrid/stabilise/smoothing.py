"""GPU power smoothing (NVIDIA Blackwell / GB300 NVL72): a power floor, ramp-rate limits and a
ramp-down hysteresis in the GPU's firmware.

NVML exposes, per GPU and profile, the floor as a percentage of the total module power
(``PERCENT_TMP_FLOOR``, 0-100 %), the ramp-up and ramp-down rates [W/s] and the ramp-down
hysteresis [ms] (NVML API reference, "Power Smoothing Information",
https://docs.nvidia.com/deploy/nvml-api/group__nvmlPowerSmoothing.html). When the work
drops, the GPU keeps drawing power (it *burns* energy) and lets it fall only after the
hysteresis, at the ramp-down rate, never below the floor; when the work rises, its power
may rise only at the ramp-up rate (the GPU is held back: energy *withheld*, work delayed).

Assumptions of this model (labelled in the option's notes):

- every fluctuation of the POI series is GPU power of the smoothed fleet, moved to the POI by
  ``poi_per_gpu`` (losses and cooling per W of GPU power; default 1.0);
- the ``gpus`` act as one (a synchronous job's GPUs move in phase), so per-GPU rates add up;
- withheld energy is work done later: counted, not costed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aiload.errors import InputError
from microgrid.stabilise._loops import empty, loops
from microgrid.stabilise._option import Mitigated, Prices, YEAR_S
from microgrid.stabilise.limits import PoiLimits, evaluate

__all__ = ["GpuSmoothing", "smooth", "H100_IDLE_W"]

#: idle power of an H100 SXM GPU [W]: 74-76 W measured in the NLR WattAMeter example log
#: (docs/profiles.md; /work/shared/data wattameter-example-logs)
H100_IDLE_W = 75.0


def smooth(load_kw: np.ndarray, dt_s: float, *, floor_kw: float = 0.0,
           ramp_up_kw_per_s: float = math.inf, ramp_down_kw_per_s: float = math.inf,
           hysteresis_s: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Power at the POI with smoothing, and the energy burned and withheld per step.

    Parameters
    ----------
    load_kw : numpy.ndarray
        Interval-mean power without smoothing [kW].
    dt_s : float
        Step [s].
    floor_kw : float
        Lowest power the smoothing holds [kW].
    ramp_up_kw_per_s, ramp_down_kw_per_s : float
        Largest rise / fall per second [kW/s].
    hysteresis_s : float
        Time the power is held after the load falls below it, before it ramps down [s]
        (rounded to whole steps).

    Returns
    -------
    poi_kw, burned_kw, withheld_kw : numpy.ndarray
        The smoothed power, ``max(poi - load, 0)`` and ``max(load - poi, 0)`` [kW].

    Examples
    --------
    >>> p, burned, _ = smooth(np.array([10.0, 0.0, 0.0, 0.0]), 1.0, ramp_down_kw_per_s=4.0)
    >>> p.tolist(), burned.tolist()
    ([10.0, 6.0, 2.0, 0.0], [0.0, 6.0, 2.0, 0.0])
    """
    out = empty(load_kw.size)
    loops().smooth(np.ascontiguousarray(load_kw, dtype=np.float64), float(dt_s), float(floor_kw),
                   float(ramp_up_kw_per_s), float(ramp_down_kw_per_s),
                   int(round(hysteresis_s / dt_s)), out)
    diff = out - load_kw
    return out, np.maximum(diff, 0.0), np.maximum(-diff, 0.0)


@dataclass(frozen=True)
class GpuSmoothing:
    """GPU power smoothing of a fleet; unset parameters are sized to the limits.

    Parameters
    ----------
    gpus : int
        Smoothed GPUs [-].
    tmp_w : float
        Total module power the floor percentage refers to [W] (700 W: H100 SXM TDP; a GB300
        module is larger).
    floor_pct : float, optional
        Power floor [% of ``tmp_w``]; None: the lowest that meets the band and minimum-power
        limits (bisection).
    ramp_up_w_per_s, ramp_down_w_per_s : float, optional
        Per-GPU ramp rates [W/s]; None: the POI ramp limits shared by the GPUs.
    hysteresis_s : float
        Ramp-down hysteresis [s].
    poi_per_gpu : float
        POI power per W of GPU power (distribution losses, cooling) [-]; an assumption.
    other_kw : float, optional
        POI power not drawn by the smoothed GPUs [kW]; None: the series' minimum less the
        GPUs at :data:`H100_IDLE_W` (an estimate).
    name : str
        Option name in the table.
    """

    gpus: int
    tmp_w: float = 700.0
    floor_pct: float | None = None
    ramp_up_w_per_s: float | None = None
    ramp_down_w_per_s: float | None = None
    hysteresis_s: float = 0.0
    poi_per_gpu: float = 1.0
    other_kw: float | None = None
    name: str = "gpu smoothing"

    def __post_init__(self) -> None:
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, (int, np.integer)) or self.gpus < 1:
            raise InputError(f"GpuSmoothing.gpus: got {self.gpus!r}; expected a whole number >= 1 "
                             "(e.g. 65,536 for the campus's GPT-3 job).")
        for name in ("tmp_w", "poi_per_gpu"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise InputError(f"GpuSmoothing.{name}: got {v!r}; expected a finite number > 0.")
        for name in ("ramp_up_w_per_s", "ramp_down_w_per_s", "other_kw"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float)) and v >= 0):
                raise InputError(f"GpuSmoothing.{name}: got {v!r}; expected a number >= 0 or None.")
        if self.floor_pct is not None and not 0 <= self.floor_pct <= 100:
            raise InputError(f"GpuSmoothing.floor_pct: got {self.floor_pct!r}; expected 0-100 "
                             "[% of tmp_w] (NVML PERCENT_TMP_FLOOR) or None to size it.")
        if not (isinstance(self.hysteresis_s, (int, float)) and 0 <= self.hysteresis_s < math.inf):
            raise InputError(f"GpuSmoothing.hysteresis_s: got {self.hysteresis_s!r}; expected a "
                             "time >= 0 [s] (NVML's hysteresis is in ms: divide by 1000).")

    @property
    def kw_per_w(self) -> float:
        """POI kW per W of every smoothed GPU together [kW/W]."""
        return self.gpus * self.poi_per_gpu / 1e3

    def _other_kw(self, load_kw: np.ndarray) -> float:
        if self.other_kw is not None:
            return float(self.other_kw)
        return max(float(load_kw.min()) - H100_IDLE_W * self.kw_per_w, 0.0)

    def run(self, load_kw: np.ndarray, dt_s: float, limits: PoiLimits, prices: Prices,
            floor_pct: float | None = None) -> Mitigated:
        """Size (where unset) and simulate the smoothing; see :func:`smooth`."""
        k = self.kw_per_w
        up_w = self.ramp_up_w_per_s
        if up_w is None:
            up_w = math.inf if limits.ramp_up_mw_per_s is None else limits.ramp_up_mw_per_s * 1e3 / k
        down_w = self.ramp_down_w_per_s
        if down_w is None:
            down_w = (math.inf if limits.ramp_down_mw_per_s is None
                      else limits.ramp_down_mw_per_s * 1e3 / k)
        other = self._other_kw(load_kw)
        full_kw = self.tmp_w * k

        def attempt(pct: float):
            floor = other + pct / 100.0 * full_kw
            poi, burned, withheld = smooth(load_kw, dt_s, floor_kw=floor, ramp_up_kw_per_s=up_w * k,
                                           ramp_down_kw_per_s=down_w * k,
                                           hysteresis_s=self.hysteresis_s)
            return poi, burned, withheld, evaluate(poi, dt_s, limits)

        pct = self.floor_pct if floor_pct is None else floor_pct
        notes = ["assumption: every fluctuation is smoothed GPU power; "
                 f"POI/GPU power {self.poi_per_gpu:g}; withheld energy is delayed work, not costed"]
        if self.other_kw is None:
            notes.append(f"assumption: non-GPU power {other:,.0f} kW (series minimum less "
                         f"{self.gpus:,} GPUs at {H100_IDLE_W:g} W idle)")
        if pct is None:
            # the lowest floor that meets the limits: below the series' minimum a floor does
            # nothing; bisection on the percentage between that and 100 %
            lo = max(0.0, (float(load_kw.min()) - other) / full_kw * 100.0)
            if limits.min_power_kw is not None:
                lo = max(lo, (limits.min_power_kw - other) / full_kw * 100.0)
            lo = min(lo, 100.0)
            res = attempt(lo)
            if res[3]["met"]:
                pct = lo
            else:
                hi_res = attempt(100.0)
                if not hi_res[3]["met"]:
                    pct, res = 100.0, hi_res
                    notes.append("not met even at a 100 % floor")
                else:
                    hi = 100.0
                    res = hi_res
                    for _ in range(40):
                        if hi - lo <= 1e-3:
                            break
                        mid = 0.5 * (lo + hi)
                        trial = attempt(mid)
                        if trial[3]["met"]:
                            hi, res = mid, trial
                        else:
                            lo = mid
                    pct = hi
        else:
            res = attempt(pct)
        poi, burned, withheld, figures = res
        zeros = np.zeros(load_kw.size)
        cols = {"load_kw": load_kw, "poi_kw": poi, "burned_kw": burned, "withheld_kw": withheld,
                "storage_kw": zeros, "losses_kw": zeros, "soc_kwh": zeros}
        params = {"floor_pct_of_tmp": pct, "floor_kw": other + pct / 100.0 * full_kw,
                  "ramp_up_w_per_s_per_gpu": up_w, "ramp_down_w_per_s_per_gpu": down_w,
                  "hysteresis_s": self.hysteresis_s, "gpus": self.gpus, "tmp_w": self.tmp_w}
        return Mitigated(self.name, params, cols, figures, notes=notes)


def annual(kwh: float, span_s: float) -> float:
    """Energy over the series scaled to a year [kWh/year]."""
    return kwh * YEAR_S / span_s
