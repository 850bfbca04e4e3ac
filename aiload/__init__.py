"""aiload: measured AI-workload power to the load a utility meter sees.

The public API (names are the contract, see ``docs/``):

- :func:`read_trace` and :class:`Trace` — read measurement files (``aiload.traces``);
- :func:`resample` — interval means at any resolution, energy conserved;
- :mod:`aiload.profiles` — the bundled per-node profile library and scaling fits;
- :func:`facility`, :class:`FacilitySpec`, :class:`FacilityLoad` — the facility model;
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
    "FacilitySpec",
    "FacilityLoad",
    "metrics",
    "measure",
]

_LAZY = {
    "read_trace": ("aiload.traces", "read_trace"),
    "Trace": ("aiload.traces", "Trace"),
    "resample": ("aiload.resampling", "resample"),
    "facility": ("aiload.facility", "facility"),
    "FacilitySpec": ("aiload.facility", "FacilitySpec"),
    "FacilityLoad": ("aiload.facility", "FacilityLoad"),
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
