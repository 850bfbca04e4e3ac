"""Dynamic studies in ANDES: what the grid feels in the first seconds.

- :func:`simulate` / :class:`DynamicResult` — the facility as a dynamic load at a bus of a
  bundled ANDES case or a user's PSS/E raw + dyr, through an event, with its ride-through rule;
- :class:`RideThrough` — the campus's protection rule as data (UPS transfer, return, ramp);
- :class:`FacilityTrip`, :class:`BusFault`, :class:`LoadStep` — the events;
- :func:`loss_of_load_capacity` — the largest facility a case can lose within a frequency
  limit; :func:`which_faults_trip` — the fault locations that make the facility transfer;
- :func:`load_case`, :func:`to_pandapower` — cases, and their static twin in pandapower;
- :func:`prepare` — ANDES's one-time code generation (``python -m grid.dynamics prepare``).

See docs/dynamics.md for the model, its defaults and their sources.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "simulate", "DynamicResult", "FrequencyLimits", "Verdict", "RideThrough", "Facility",
    "FacilityTrip", "BusFault", "LoadStep", "load_case", "Case", "to_pandapower", "to_ppc",
    "prepare", "is_prepared", "loss_of_load_capacity", "LossOfLoadCapacity",
    "which_faults_trip", "ITIC_VOLTAGE_TIME",
]

_LAZY = {
    "simulate": "grid.dynamics.simulate",
    "DynamicResult": "grid.dynamics.results",
    "FrequencyLimits": "grid.dynamics.results",
    "Verdict": "grid.dynamics.results",
    "RideThrough": "grid.dynamics.ridethrough",
    "ITIC_VOLTAGE_TIME": "grid.dynamics.ridethrough",
    "Facility": "grid.dynamics.load",
    "FacilityTrip": "grid.dynamics.events",
    "BusFault": "grid.dynamics.events",
    "LoadStep": "grid.dynamics.events",
    "load_case": "grid.dynamics.cases",
    "Case": "grid.dynamics.cases",
    "to_pandapower": "grid.dynamics.cases",
    "to_ppc": "grid.dynamics.cases",
    "prepare": "grid.dynamics.cases",
    "is_prepared": "grid.dynamics.cases",
    "loss_of_load_capacity": "grid.dynamics.study",
    "LossOfLoadCapacity": "grid.dynamics.study",
    "which_faults_trip": "grid.dynamics.study",
}


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'grid.dynamics' has no attribute {name!r}; "
                             f"available: {__all__}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


# ``simulate`` names both a submodule and its function: importing the submodule (study.py
# does, so ``from grid.dynamics import loss_of_load_capacity, simulate`` did) binds the
# package attribute to the module. Bound to the function once, here (numpy and pandas only;
# ANDES is imported when a case is loaded).
from grid.dynamics.simulate import simulate  # noqa: E402
