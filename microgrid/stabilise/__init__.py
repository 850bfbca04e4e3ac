"""Stabilisation at the point of interconnection (POI): what holds a utility's limits on
ramps, band fluctuation and minimum power for a facility series of seconds or less.

:func:`stabilise` sizes and compares GPU power smoothing (:class:`GpuSmoothing`), rack/PSU
storage (:class:`PsuStorage`), a site battery tracking a filtered setpoint
(:class:`SiteBattery`) and combinations against :class:`PoiLimits`; see
``docs/stabilisation.md``.
"""

from __future__ import annotations

from microgrid.stabilise._option import Prices
from microgrid.stabilise.battery import SiteBattery, track_setpoint
from microgrid.stabilise.limits import PoiLimits, evaluate
from microgrid.stabilise.psu import PsuStorage
from microgrid.stabilise.smoothing import GpuSmoothing, smooth
from microgrid.stabilise.study import Stabilisation, stabilise

__all__ = ["stabilise", "Stabilisation", "PoiLimits", "GpuSmoothing", "PsuStorage",
           "SiteBattery", "Prices", "smooth", "track_setpoint", "evaluate"]
