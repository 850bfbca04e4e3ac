"""aiload: measured AI-workload power to the load a utility meter sees.

The public API (names are the contract, see ``docs/``):

- :func:`read_trace` and :class:`Trace` — read measurement files (``aiload.traces``);
- :func:`resample` — interval means at any resolution, energy conserved;
- :mod:`aiload.profiles` — the bundled per-node profile library and scaling fits;
- :func:`facility` (also the package :mod:`aiload.facility`, which is callable),
  :func:`read_facility`, :class:`FacilityLoad` and the specifications :class:`FacilitySpec`,
  :class:`FleetSpec`, :class:`JobStreamSpec`, :class:`InferenceSpec`, :class:`OverheadSpec` —
  the facility model; with a power limit, :class:`FlexibilitySpec` and its levers
  (:class:`BatteryLever`, :class:`InferenceLever`, :class:`PowerCapLever`,
  :class:`DeferralLever`) and the closed-loop :class:`FacilityState`;
- :mod:`aiload.metrics` — grid-facing figures and plots;
- :mod:`aiload.measure` — the NVML/RAPL recorder.

Submodules load on first use, so ``import aiload`` stays light and changes nothing global.
"""

from __future__ import annotations

import importlib
from typing import Any

from aiload._version import __version__

__all__ = [
    "__version__",
    "read_trace",
    "Trace",
    "resample",
    "profiles",
    "facility",
    "read_facility",
    "FacilityLoad",
    "FacilitySpec",
    "FleetSpec",
    "JobStreamSpec",
    "InferenceSpec",
    "OverheadSpec",
    "FlexibilitySpec",
    "BatteryLever",
    "InferenceLever",
    "PowerCapLever",
    "DeferralLever",
    "FacilityState",
    "metrics",
    "measure",
]

_LAZY = {
    "read_trace": ("aiload.traces", "read_trace"),
    "Trace": ("aiload.traces", "Trace"),
    "resample": ("aiload.resampling", "resample"),
    # the package itself: it is callable (``aiload.facility(...)``) and holds its names
    # (``aiload.facility.read_facility``) whichever was imported first
    "facility": ("aiload.facility", None),
    "read_facility": ("aiload.facility", "read_facility"),
    "FacilityLoad": ("aiload.facility", "FacilityLoad"),
    "FacilitySpec": ("aiload.facility", "FacilitySpec"),
    "FleetSpec": ("aiload.facility", "FleetSpec"),
    "JobStreamSpec": ("aiload.facility", "JobStreamSpec"),
    "InferenceSpec": ("aiload.facility", "InferenceSpec"),
    "OverheadSpec": ("aiload.facility", "OverheadSpec"),
    "FlexibilitySpec": ("aiload.facility", "FlexibilitySpec"),
    "BatteryLever": ("aiload.facility", "BatteryLever"),
    "InferenceLever": ("aiload.facility", "InferenceLever"),
    "PowerCapLever": ("aiload.facility", "PowerCapLever"),
    "DeferralLever": ("aiload.facility", "DeferralLever"),
    "FacilityState": ("aiload.facility", "FacilityState"),
    "profiles": ("aiload.profiles", None),
    "metrics": ("aiload.metrics", None),
    "measure": ("aiload.measure", None),
}


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'aiload' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
